import { describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { rowBinary, toRow } from '../../services/processor/row.mapper.js';
import { endpointTemplate } from '../../services/processor/steps/endpoint.step.js';
import { ingestRecord, rng } from '../bench/records.js';

/**
 * The chunked RowBinary encoding the chDB insert writes its spool file with: the chunks, in order,
 * are the bytes of the whole-block encoding, and none holds much more than the chunk size, so a
 * block's encoding is never in memory whole.
 */
function rows(n: number) {
  const r = rng(7);
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => {
    const rec = {
      ...ingestRecord(r, { environments: ['prod01'], now }),
      sid: `req_chunk_${i}`,
      receivedAt: new Date(now).toISOString(),
      accountSid: 'acc_1',
      bucketSid: 'bkt_1',
    } as unknown as StoredRecord;
    rec.endpoint = endpointTemplate((rec.request as { path: string }).path);
    return toRow(rec, 0, i);
  });
}

describe('RowBinary in chunks', () => {
  it('gives the bytes of the whole block, in chunks near the chunk size', () => {
    const block = rows(2_000);
    const whole = Buffer.from(rowBinary(block));
    expect(whole.length).toBeGreaterThan(200_000);
    const chunks: Buffer[] = [];
    // Each chunk is a view of a reused buffer: copied as the spool file's write copies it.
    rowBinary.toSink(block, (bytes) => chunks.push(Buffer.from(bytes)), 64 * 1024);
    expect(chunks.length).toBeGreaterThan(3);
    expect(Buffer.concat(chunks).equals(whole)).toBe(true);
    // A chunk ends at the first row that takes it past the size: one row more at most.
    for (const c of chunks) expect(c.length).toBeLessThan(64 * 1024 + 16 * 1024);
  });

  it('hands on an empty block as nothing, and a small one in one chunk', () => {
    const chunks: Buffer[] = [];
    rowBinary.toSink([], (bytes) => chunks.push(Buffer.from(bytes)));
    expect(chunks).toEqual([]);
    const one = rows(3);
    rowBinary.toSink(one, (bytes) => chunks.push(Buffer.from(bytes)));
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.equals(Buffer.from(rowBinary(one)))).toBe(true);
  });
});
