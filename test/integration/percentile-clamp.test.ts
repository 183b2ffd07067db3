import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor, type TestAccount } from '../helpers/client.js';

/**
 * Percentiles are picked from a log-grid histogram, so a value read back is within 0.69% of what
 * was sent, not equal to it (42 ms reads back as 42.224). Each picked percentile is clamped into
 * the observed min/max of its group: a constant duration answers exactly that duration, on the
 * rollup path (whole hours) and on the minute path (edge minutes) alike, in every endpoint that
 * reports percentiles.
 */

const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

function rec(ts: number, method: string, duration: number) {
  return makeRecord({
    createdAt: iso(ts),
    request: { host: 'api.example.com', method, path: `/constant/${method.toLowerCase()}`, size: 10 },
    response: { statusCode: 200, size: 100 },
    timings: { duration },
  });
}

type Pct = Record<string, { value: number; maximum?: number; minimum?: number }>;

function metrics(acct: TestAccount) {
  return <T = Record<string, unknown>>(p: string) =>
    api(acct.apiToken).get<T>(`/v1/accounts/${acct.accountSid}/metrics${p}`);
}

describe('percentiles of a constant duration', () => {
  it('answer exactly the duration that was sent (clamped into the group min/max)', async () => {
    const acct = await newAccount();
    // Whole hours in the past (rollup rows) plus a few minutes at the range edges (minute rows).
    const T = Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR;
    const records: unknown[] = [];
    for (let i = 0; i < 60; i++) records.push(rec(T + i * 3 * 60_000, 'GET', 42));
    for (let i = 0; i < 40; i++) records.push(rec(T + 5 * 60_000 + i * 4 * 60_000, 'POST', 7.3));
    records.push(rec(T + 3 * HOUR + 2 * 60_000, 'GET', 42));
    const res = await ingest(acct.bucketSid, acct.apiToken, records);
    expect(res.status).toBe(202);
    expect(res.body.accepted).toBe(records.length);

    const m = metrics(acct);
    const q = `startDate=${iso(T)}&endDate=${iso(T + 3 * HOUR + 5 * 60_000)}`;
    await waitFor(
      async () => (await m<{ totalRequests: number }>(`/summary?${q}`)).body.totalRequests === records.length,
      { timeoutMs: 60_000, what: 'every record in the metrics' },
    );

    const perf = await m<{
      metrics: { group: string; p50ResponseTime: number; p95ResponseTime: number; p99ResponseTime: number }[];
    }>(`/performance?groupBy=method&${q}`);
    expect(perf.status).toBe(200);
    const byMethod = Object.fromEntries(perf.body.metrics.map((g) => [g.group, g]));
    for (const [method, d] of [
      ['GET', 42],
      ['POST', 7.3],
    ] as const) {
      expect(byMethod[method]).toMatchObject({ p50ResponseTime: d, p95ResponseTime: d, p99ResponseTime: d });
    }

    // Filtered to one method: the GET records only, every percentile of every period is 42.
    const rt = await m<{ summary: { percentiles: Pct }; periods: { requests: number; percentiles: Pct }[] }>(
      `/shapeA/responseTime?interval=hour&method=GET&${q}`,
    );
    expect(rt.status).toBe(200);
    for (const l of ['50', '95', '99']) {
      expect(rt.body.summary.percentiles[l]!.value).toBe(42);
      for (const p of rt.body.periods.filter((x) => x.requests > 0)) expect(p.percentiles[l]!.value).toBe(42);
    }

    // Mixed group (GET 42, POST 7.3): the clamp only bounds values picked from the histogram,
    // so p99 stays the grid value of 42 ms (within 0.69%), never above the max.
    const all = await m<{ summary: { percentiles: Pct } }>(`/shapeA/responseTime?interval=hour&${q}`);
    const p99 = all.body.summary.percentiles['99']!.value;
    expect(p99).toBeLessThanOrEqual(42);
    expect(p99).toBeGreaterThan(42 * 0.996);
    expect(all.body.summary.percentiles['50']!.value).toBeGreaterThanOrEqual(7.3);
  });
});
