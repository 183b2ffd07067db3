import { createRequire, Module } from 'node:module';
import { crc32c } from '@node-rs/crc32';

/**
 * Two per-byte costs of kafkajs' producer, found in the benchmark's CPU profile of the ingest
 * process (bench/README.md) and removed here, before kafkajs loads (services/shared/kafka.ts
 * imports this module first):
 *
 * 1. CRC-32C of every record batch, computed in JavaScript one table lookup per byte. @node-rs/crc32 computes the same checksum natively (SSE4.2 / ARM CRC
 *    instructions). kafkajs takes the function from one module (`protocol/recordBatch/crc32C`):
 *    the native one is put in Node's module cache under that module's path. kafkajs does not
 *    verify checksums when it consumes; the broker verifies what is produced.
 * 2. kafkajs' Encoder grows its buffer by doubling into `Buffer.alloc`, which zero-fills memory
 *    that is overwritten at once (`FastBuffer` in the profile). The same
 *    growth with `Buffer.allocUnsafe`: every byte up to `offset` is copied or written before the
 *    encoder exposes it (`buffer` is `buf.slice(0, offset)`), so no uninitialised byte is read.
 *
 * NOTE: both depend on kafkajs 2.x's file layout (pinned in package.json); `kafkajsTuned()` says
 * what took, and the unit test checks it, so an upgrade that moves the files fails a test instead
 * of silently losing the speed.
 */
const require = createRequire(import.meta.url);

export const kafkaCrc32C = (buffer: Buffer): number => crc32c(buffer) >>> 0;

interface EncoderLike {
  buf: Buffer;
  offset: number;
}

function ensureAvailable(this: EncoderLike, length: number): void {
  if (this.offset + length <= this.buf.length) return;
  let size = 1;
  while (size < this.offset + length) size *= 2;
  const next = Buffer.allocUnsafe(size);
  this.buf.copy(next, 0, 0, this.offset);
  this.buf = next;
}

const tuned = { nativeCrc: false, encoderGrowth: false };

try {
  const path = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');
  if (!require.cache[path]) {
    const m = new Module(path);
    m.filename = path;
    m.loaded = true;
    m.exports = kafkaCrc32C;
    require.cache[path] = m;
  }
  tuned.nativeCrc = require(path) === kafkaCrc32C;
} catch {
  tuned.nativeCrc = false;
}

try {
  const Encoder = require('kafkajs/src/protocol/encoder.js') as { prototype: { ensureAvailable?: unknown } };
  if (typeof Encoder.prototype.ensureAvailable === 'function') {
    Encoder.prototype.ensureAvailable = ensureAvailable;
    tuned.encoderGrowth = true;
  }
} catch {
  tuned.encoderGrowth = false;
}

/** What took: the native CRC-32C and the encoder's growth without zero-filling. */
export function kafkajsTuned(): { nativeCrc: boolean; encoderGrowth: boolean } {
  return { ...tuned };
}
