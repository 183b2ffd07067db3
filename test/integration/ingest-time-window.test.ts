import { describe, expect, it } from 'vitest';
import { ingest, makeRecord, newAccount } from '../helpers/client.js';
import { TEST_RETENTION_DAYS } from '../helpers/stack-mode.js';

/**
 * Issue 14 point 13: a record whose `createdAt` lies outside [now − RETENTION_DAYS, now + 1 day]
 * is refused on its own (like any invalid record), so a client cannot make ClickHouse create a
 * partition per far-away month, nor store rows the retention would drop at once. The others of
 * the batch are kept.
 */
const DAY = 86_400_000;

describe('ingest createdAt window', () => {
  it('rejects records older than the retention or more than a day ahead, one by one', async () => {
    const acct = await newAccount();
    const now = Date.now();
    const records = [
      makeRecord({ createdAt: new Date(now - 1000).toISOString() }),
      makeRecord({ createdAt: new Date(now - (TEST_RETENTION_DAYS + 1) * DAY).toISOString() }),
      makeRecord({ createdAt: new Date(now + 2 * DAY).toISOString() }),
      makeRecord({ createdAt: new Date(now + 12 * 3_600_000).toISOString() }),
      makeRecord({ createdAt: '1970-01-01T00:00:00Z' }),
      makeRecord({ createdAt: '9999-12-31T23:59:59Z' }),
      makeRecord({ createdAt: new Date(now - (TEST_RETENTION_DAYS - 1) * DAY).toISOString() }),
    ];
    const res = await ingest(acct.bucketSid, acct.apiToken, records);
    expect(res.status, res.text).toBe(202);
    expect(res.body.accepted).toBe(3);
    expect(res.body.rejected.map((r) => r.index)).toEqual([1, 2, 4, 5]);
    for (const r of res.body.rejected) {
      expect(r.error.code).toBe('VALIDATION_ERROR');
      expect(Object.keys((r.error as { details?: Record<string, unknown> }).details ?? {})).toContain(
        'createdAt',
      );
    }
  });

  it('a batch of only far-away records is answered like other all-invalid batches', async () => {
    const acct = await newAccount();
    const res = await ingest(acct.bucketSid, acct.apiToken, [
      makeRecord({ createdAt: '2001-01-01T00:00:00Z' }),
    ]);
    expect(res.status).toBeLessThan(500);
    expect(res.body.accepted ?? 0).toBe(0);
  });
});
