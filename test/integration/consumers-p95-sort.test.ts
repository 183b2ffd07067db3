import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor, type TestAccount } from '../helpers/client.js';

/**
 * The consumers list sorted by p95 (docs/consumers.md) merges the duration histograms of a few
 * candidates picked by a bound of the p95 (from the count, sum, smallest and largest duration of
 * each consumer), growing the candidates until no other consumer can reach the page. Every page here must equal
 * the one the per-consumer figures give: the consumers' own figures (read through the list sorted
 * by requests, whose percentiles are merged per consumer on its page) sorted by p95, then id.
 *
 * The set makes the bound order differ from the p95 order: "spiky" consumers (stag01) have a large
 * upper bound (~520 ms: two calls at or above the p95 share the sum) and a small p95, so with every
 * environment the first candidates by bound are the spiky ones and the candidates must grow; in prod01 alone the first candidates suffice. Consumers
 * without a duration (p95 null) sort first ascending and last descending.
 */

interface Summary {
  id: string;
  name: string | null;
  group: string | null;
  requestCount: number;
  errorCount: number;
  errorRate: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  firstSeenAt: string | null;
  lastSeenAt: string | null;
}
interface ListAnswer {
  hasMore: boolean;
  records: Summary[];
}

const list = (a: TestAccount, query: string) =>
  api(a.apiToken).get<ListAnswer>(`/v1/accounts/${a.accountSid}/consumers?${query}`);

/** quantileExact's definition: the element at index floor(level * n) of the sorted values. */
function exactQuantile(values: number[], level: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(level * sorted.length))]!;
}

describe('consumers list sorted by p95', () => {
  it('every page equals the per-consumer figures sorted by p95, whichever candidates the bounds pick', async () => {
    const a = await newAccount({ plan: 'enterprise', rateLimit: 100_000 });
    const ctx = `p95-${randomBytes(4).toString('hex')}`;
    const records: Record<string, unknown>[] = [];
    const durations = new Map<string, number[]>();
    const add = (id: string, env: string, duration: number | null, name?: string) => {
      if (duration !== null) durations.set(id, [...(durations.get(id) ?? []), duration]);
      records.push(
        makeRecord({
          contextSid: `${ctx}-${records.length}`,
          environmentSid: env,
          consumer: name ? { id, name, group: 'named' } : { id },
          timings: { duration },
        }),
      );
    };
    // 150 single-call consumers: p95 = their one duration, 300 to 449 ms.
    for (let i = 0; i < 150; i++)
      add(`cus_s${String(i).padStart(3, '0')}`, 'prod01', 300 + i, i % 10 ? undefined : `Single ${i}`);
    // 150 three-call consumers: p95 = the largest of 20 + i, 21 + i, 22 + i ms.
    for (let i = 0; i < 150; i++)
      for (const d of [20, 21, 22]) add(`cus_t${String(i).padStart(3, '0')}`, 'prod01', d + i);
    // 100 spiky consumers in stag01: 39 calls of 5 to 7 ms and one of 1000 + i ms; p95 (the 39th
    // of 40) is small, the largest duration (the bound descending) is large.
    for (let i = 0; i < 100; i++) {
      for (let k = 0; k < 39; k++) add(`cus_x${String(i).padStart(3, '0')}`, 'stag01', 5 + (k % 3));
      add(`cus_x${String(i).padStart(3, '0')}`, 'stag01', 1000 + i);
    }
    // 3 consumers without a duration: p95 null.
    for (let i = 0; i < 3; i++) add(`cus_n${i}`, 'prod01', null);
    for (let i = 0; i < records.length; i += 1000) {
      const res = await ingest(a.bucketSid, a.apiToken, records.slice(i, i + 1000));
      expect(res.status, res.text).toBe(202);
      expect(res.body.accepted).toBe(Math.min(1000, records.length - i));
    }

    /** Every consumer of the list (sorted by requests, pages of 100), by id. */
    const everyone = async (env?: string): Promise<Map<string, Summary>> => {
      const out = new Map<string, Summary>();
      for (let page = 1; ; page++) {
        const res = await list(
          a,
          `sort=requests&limit=100&page=${page}${env ? `&environmentSid=${env}` : ''}`,
        );
        expect(res.status, res.text).toBe(200);
        for (const r of res.body.records) out.set(r.id, r);
        if (!res.body.hasMore) return out;
      }
    };
    const all = await waitFor(
      async () => {
        const m = await everyone();
        return [...m.values()].reduce((n, r) => n + r.requestCount, 0) === records.length ? m : undefined;
      },
      { timeoutMs: 60_000, what: `the consumers list to hold ${records.length} requests` },
    );
    expect(all.size).toBe(403);
    // The per-consumer figures are the exact ones (within the percentile bound).
    for (const [id, values] of durations) {
      const p95 = all.get(id)!.p95!;
      const exact = exactQuantile(values, 0.95);
      expect(Math.abs(p95 - exact) / exact, `${id} p95 ${p95} vs ${exact}`).toBeLessThanOrEqual(0.0069);
    }
    expect(all.get('cus_n0')).toMatchObject({ requestCount: 1, p50: null, p95: null, p99: null });
    expect(all.get('cus_s010')).toMatchObject({ name: 'Single 10', group: 'named', p95: 310 });

    const expected = (m: Map<string, Summary>, order: 'asc' | 'desc') =>
      [...m.values()].sort((x, y) => {
        const d = (x.p95 ?? -1) - (y.p95 ?? -1);
        return d !== 0 ? (order === 'asc' ? d : -d) : x.id < y.id ? -1 : 1;
      });
    const prod = await everyone('prod01');
    expect(prod.size).toBe(303);
    const cases: { env?: string; order: 'asc' | 'desc'; limit: number; page: number }[] = [
      // every environment, descending: the first candidates by bound are the 100 spiky consumers,
      // whose p95 is small; the candidates grow until the single-call ones are in.
      { order: 'desc', limit: 5, page: 1 },
      { order: 'desc', limit: 10, page: 3 },
      { order: 'desc', limit: 100, page: 4 },
      // prod01 descending: the 100 candidates with the largest durations hold the page.
      { env: 'prod01', order: 'desc', limit: 5, page: 1 },
      { env: 'prod01', order: 'desc', limit: 25, page: 2 },
      // ascending: consumers without a duration first, then the smallest p95.
      { order: 'asc', limit: 5, page: 1 },
      { env: 'prod01', order: 'asc', limit: 25, page: 1 },
      { order: 'asc', limit: 100, page: 2 },
    ];
    for (const c of cases) {
      const what = `${c.env ?? 'all'} ${c.order} limit ${c.limit} page ${c.page}`;
      const sorted = expected(c.env ? prod : all, c.order);
      const res = await list(
        a,
        `sort=p95&order=${c.order}&limit=${c.limit}&page=${c.page}${c.env ? `&environmentSid=${c.env}` : ''}`,
      );
      expect(res.status, res.text).toBe(200);
      const from = (c.page - 1) * c.limit;
      expect(res.body.records.length, what).toBeGreaterThan(0);
      expect(res.body.records, what).toEqual(sorted.slice(from, from + c.limit));
      expect(res.body.hasMore, what).toBe(sorted.length > from + c.limit);
    }
  });
});
