import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { kafkaCrc32C, kafkajsTuned } from '../../services/shared/kafkajs-tuning.js';
import '../../services/shared/kafka.js';

const require = createRequire(import.meta.url);
// kafkajs' own JavaScript CRC-32C (the inner module, which kafka-crc.ts leaves alone).
const jsCrc = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;

describe('kafkajs tuning: native CRC-32C, encoder growth without zero-fill', () => {
  it('is installed in kafkajs place once services/shared/kafka.ts is loaded', () => {
    expect(kafkajsTuned()).toEqual({ nativeCrc: true, encoderGrowth: true });
    const path = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');
    expect(require(path)).toBe(kafkaCrc32C);
  });

  it('computes the same unsigned checksum as kafkajs on empty, small and large buffers', () => {
    // The RFC 3720 check value of "123456789".
    expect(kafkaCrc32C(Buffer.from('123456789'))).toBe(0xe3069283);
    const sizes = [0, 1, 7, 8, 9, 63, 64, 65, 1000, 4096, 100_003, 1 << 20];
    for (const n of sizes) {
      const b = randomBytes(n);
      expect(kafkaCrc32C(b), `size ${n}`).toBe(jsCrc(b) >>> 0);
    }
  });
});

describe('kafkajs Encoder with the tuned growth', () => {
  it('encodes what it was given, across many buffer growths', () => {
    const Encoder = require('kafkajs/src/protocol/encoder.js') as new () => {
      writeInt32(v: number): unknown;
      writeBytes(b: Buffer): unknown;
      writeString(s: string): unknown;
      buffer: Buffer;
    };
    const e = new Encoder();
    const parts: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      const b = randomBytes(i * 37);
      e.writeInt32(i);
      e.writeBytes(b);
      e.writeString(`s${i}`);
      const head = Buffer.alloc(4);
      head.writeInt32BE(i);
      const len = Buffer.alloc(4);
      len.writeInt32BE(b.length);
      const slen = Buffer.alloc(2);
      slen.writeInt16BE(`s${i}`.length);
      parts.push(head, len, b, slen, Buffer.from(`s${i}`));
    }
    expect(e.buffer.equals(Buffer.concat(parts))).toBe(true);
  });
});
