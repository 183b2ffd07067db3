import { describe, expect, it } from 'vitest';
import { ingest, listAllRequests, makeRecord, newAccount, waitFor, api } from '../helpers/client.js';

describe('end to end: ingest -> Kafka -> processor -> ClickHouse -> API', () => {
  it('stores 10,000 records sent in batches and reads every one back intact', async () => {
    const acct = await newAccount();
    const total = 10_000;
    const batch = 1000;
    const sent = new Map<string, Record<string, unknown>>();
    const t0 = Date.now();
    const sends = [];
    for (let i = 0; i < total / batch; i++) {
      const records = Array.from({ length: batch }, (_, j) => {
        const n = i * batch + j;
        const r = makeRecord({
          contextSid: `ctx-${n}`,
          response: { statusCode: n % 17 === 0 ? 500 : 200, body: `{"n":${n}}`, headers: {}, size: 9 },
          timings: { duration: n % 100 },
        });
        return r;
      });
      sends.push(
        ingest(acct.bucketSid, acct.apiToken, records).then((res) => {
          expect(res.status).toBe(202);
          expect(res.body.accepted).toBe(batch);
          expect(res.body.rejected).toEqual([]);
          records.forEach((r) => sent.set(r.contextSid as string, r));
        }),
      );
    }
    await Promise.all(sends);
    const acked = Date.now();
    const countStored = async () => {
      const res = await api(acct.apiToken).get<{ hasMore: boolean; records: unknown[] }>(
        `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests?limit=100&page=100`,
      );
      return res.body.records.length === 100 && !res.body.hasMore;
    };
    await waitFor(countStored, { timeoutMs: 60_000, what: 'all 10,000 records stored' });
    const stored = Date.now();
    const all = await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid);
    expect(all).toHaveLength(total);
    const sids = new Set(all.map((r) => r.sid));
    expect(sids.size).toBe(total);
    for (const r of all) {
      const original = sent.get(r.contextSid as string);
      expect(original, `record ${String(r.contextSid)} was sent`).toBeDefined();
      expect(r.sid).toMatch(/^req_[A-Za-z0-9]{27}$/);
      expect(r.bucketSid).toBe(acct.bucketSid);
      expect(r.environmentSid).toBe('prod01');
      expect(r.direction).toBe('in');
      expect(r.createdAt).toBe(original!.createdAt);
      expect(r.request).toMatchObject(original!.request as object);
      expect((r.response as { statusCode: number }).statusCode).toBe(
        (original!.response as { statusCode: number }).statusCode,
      );
      expect((r.response as { body: string }).body).toBe((original!.response as { body: string }).body);
      expect((r.timings as { duration: number }).duration).toBe(
        (original!.timings as { duration: number }).duration,
      );
      expect(r.firewall).toEqual({ blocked: false });
    }
    const rate = Math.round(total / ((stored - t0) / 1000));
    console.log(
      `e2e: ${total} records acked in ${acked - t0} ms, all stored after ${stored - t0} ms (${rate} records/s)`,
    );
  });
});
