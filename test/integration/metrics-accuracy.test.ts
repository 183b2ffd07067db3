import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, ingest, newAccount, waitFor, type TestAccount } from '../helpers/client.js';

/**
 * Accuracy of every metrics endpoint against figures computed exactly from the ingested set:
 * 100,000 records through the whole pipeline (ingest -> Kafka -> processor -> ClickHouse ->
 * materialized views), long-tailed durations, several buckets, environments, methods, endpoints
 * and status codes, fixed timestamps over 4 hours in the past. Counts, bytes and error rates must
 * be exact; p50/p95/p99 within 1% of quantileExact's answer.
 */

const N = 100_000;
const BATCH = 1000;
const PARALLEL = 4;
const HOUR = 3600_000;

/** mulberry32: a small seeded PRNG, so the set is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(r: number, table: readonly (readonly [T, number])[]): T {
  let acc = 0;
  for (const [v, w] of table) {
    acc += w;
    if (r < acc) return v;
  }
  return table[table.length - 1]![0];
}

interface Rec {
  bucket: number;
  env: string;
  method: string;
  endpoint: string;
  status: number;
  duration: number | null;
  bytes: number;
  blocked: boolean;
  ts: number;
}

const ENDPOINTS = [
  ['/api/users/{id}', 20],
  ['/api/orders/{id}', 35],
  ['/api/products/{id}', 50],
  ['/api/search/{id}', 80],
  ['/api/reports/{id}', 120],
  ['/api/exports/{id}', 200],
] as const;
const METHODS = [
  ['GET', 0.5],
  ['POST', 0.25],
  ['PUT', 0.15],
  ['DELETE', 0.1],
] as const;
const STATUSES = [
  [200, 0.6],
  [201, 0.1],
  [404, 0.1],
  [500, 0.1],
  [503, 0.1],
] as const;
const ENVS = [
  ['prod01', 0.5],
  ['stag01', 0.3],
  ['dev001', 0.2],
] as const;
const BUCKET_SHARES = [
  [0, 0.5],
  [1, 0.3],
  [2, 0.2],
] as const;

function generate(base: number): Rec[] {
  const rand = prng(20261122);
  const out: Rec[] = [];
  for (let i = 0; i < N; i++) {
    const e = Math.floor(rand() * ENDPOINTS.length);
    const [endpoint, median] = ENDPOINTS[e]!;
    // Log-normal (sigma 0.9) around the endpoint's median: a skewed, long-tailed mixture.
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    const duration = rand() < 0.005 ? null : Math.round(median * Math.exp(0.9 * z) * 1000) / 1000;
    out.push({
      bucket: pick(rand(), BUCKET_SHARES),
      env: pick(rand(), ENVS),
      method: pick(rand(), METHODS),
      endpoint,
      status: pick(rand(), STATUSES),
      duration,
      bytes: 100 + Math.floor(rand() * 900) + 1000 + Math.floor(rand() * 9000),
      blocked: rand() < 0.02,
      ts: base + Math.floor(rand() * 4 * HOUR),
    });
  }
  return out;
}

function toIngest(r: Rec, i: number): Record<string, unknown> {
  const reqSize = 100 + (i % 900);
  return {
    environmentSid: r.env,
    createdAt: new Date(r.ts).toISOString(),
    request: {
      host: 'api.example.com',
      method: r.method,
      path: r.endpoint.replace('{id}', String(1000 + (i % 5000))),
      size: reqSize,
    },
    response: { statusCode: r.status, size: r.bytes - reqSize },
    ...(r.duration === null ? {} : { timings: { duration: r.duration } }),
    ...(r.blocked ? { firewall: { blocked: true } } : {}),
  };
}

/** quantileExact's definition: the element at index floor(level * n) of the sorted values. */
function exactQuantile(sorted: number[], level: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(level * sorted.length))]!;
}

interface Expected {
  requests: number;
  errors: number;
  blocked: number;
  bytes: number;
  durSum: number;
  durations: number[];
}

function stats(recs: Rec[]): Expected {
  const e: Expected = { requests: 0, errors: 0, blocked: 0, bytes: 0, durSum: 0, durations: [] };
  for (const r of recs) {
    e.requests++;
    if (r.status >= 400) e.errors++;
    if (r.blocked) e.blocked++;
    e.bytes += r.bytes;
    if (r.duration !== null) {
      e.durSum += r.duration;
      e.durations.push(r.duration);
    }
  }
  e.durations.sort((a, b) => a - b);
  return e;
}

const avg = (e: Expected) => (e.durations.length ? e.durSum / e.durations.length : 0);

function groupBy<K>(recs: Rec[], key: (r: Rec) => K): Map<K, Rec[]> {
  const m = new Map<K, Rec[]>();
  for (const r of recs) {
    const k = key(r);
    const list = m.get(k);
    if (list) list.push(r);
    else m.set(k, [r]);
  }
  return m;
}

/** The largest relative percentile error seen, printed at the end for the record. */
const worst = { rel: 0, what: '' };

function expectPercentiles(got: { p50: number; p95: number; p99: number }, e: Expected, what: string): void {
  for (const [level, value] of [
    [0.5, got.p50],
    [0.95, got.p95],
    [0.99, got.p99],
  ] as const) {
    const exact = exactQuantile(e.durations, level);
    const rel = Math.abs(value - exact) / exact;
    if (rel > worst.rel) Object.assign(worst, { rel, what: `${what} p${level * 100}` });
    expect(rel, `${what} p${level * 100}: ${value} vs exact ${exact}`).toBeLessThanOrEqual(0.01);
  }
}

describe('metrics accuracy over 100,000 records ingested through the pipeline', () => {
  let acct: TestAccount;
  let buckets: string[];
  let recs: Rec[];
  let base: number;
  let range: string;
  const get = <T>(p: string) => api(acct.apiToken).get<T>(`/v1/accounts/${acct.accountSid}/metrics${p}`);
  /** `/summary?q`'s request, error and byte totals equal those of `records`; their stats. */
  const expectTotals = async (q: string, records: Rec[]) => {
    const s = await get<{ totalRequests: number; totalErrors: number; totalDataTransferred: number }>(
      `/summary?${q}`,
    );
    const e = stats(records);
    expect([s.body.totalRequests, s.body.totalErrors, s.body.totalDataTransferred]).toEqual([
      e.requests,
      e.errors,
      e.bytes,
    ]);
    return e;
  };

  beforeAll(async () => {
    acct = await newAccount();
    buckets = [acct.bucketSid];
    for (const name of ['accuracy-b', 'accuracy-c']) {
      const res = await api(acct.apiToken).post<{ sid: string }>(`/v1/accounts/${acct.accountSid}/buckets`, {
        name,
      });
      buckets.push(res.body.sid);
    }
    // Four whole hours ending at least an hour ago, so the set is complete and hour-aligned.
    base = Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR;
    range = `startDate=${new Date(base).toISOString()}&endDate=${new Date(base + 4 * HOUR - 1).toISOString()}`;
    recs = generate(base);
    const batches: { bucket: string; records: Record<string, unknown>[] }[] = [];
    for (let b = 0; b < buckets.length; b++) {
      const mine = recs.map((r, i) => [r, i] as const).filter(([r]) => r.bucket === b);
      for (let i = 0; i < mine.length; i += BATCH) {
        batches.push({
          bucket: buckets[b]!,
          records: mine.slice(i, i + BATCH).map(([r, k]) => toIngest(r, k)),
        });
      }
    }
    let next = 0;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next < batches.length) {
          const batch = batches[next++]!;
          const res = await ingest(batch.bucket, acct.apiToken, batch.records);
          if (res.status !== 202 || res.body.accepted !== batch.records.length)
            throw new Error(`ingest failed: ${res.status} ${res.text.slice(0, 300)}`);
        }
      }),
    );
    await waitFor(
      async () => {
        const s = await get<{ totalRequests: number }>(`/summary?${range}`);
        return s.body.totalRequests === N;
      },
      { timeoutMs: 80_000, intervalMs: 500, what: `${N} records in the metrics` },
    );
  }, 120_000);

  afterAll(() => {
    console.log(`worst percentile error: ${(100 * worst.rel).toFixed(3)}% (${worst.what})`);
  });

  it('summary: totals, bytes, methods, status classes and top endpoints exactly', async () => {
    for (const [label, filter, subset] of [
      ['account', '', recs],
      ...buckets.map(
        (b, i) => [`bucket ${i}`, `&bucketSid=${b}`, recs.filter((r) => r.bucket === i)] as const,
      ),
      ['environment stag01', '&environmentSid=stag01', recs.filter((r) => r.env === 'stag01')],
    ] as const) {
      const res = await get<{
        totalRequests: number;
        totalErrors: number;
        totalBlocked: number;
        averageResponseTime: number;
        totalDataTransferred: number;
        requestsByMethod: Record<string, number>;
        requestsByStatus: Record<string, number>;
        topEndpoints: { path: string; count: number; averageResponseTime: number }[];
      }>(`/summary?${range}${filter}`);
      expect(res.status, label).toBe(200);
      const e = stats(subset);
      expect(res.body.totalRequests, label).toBe(e.requests);
      expect(res.body.totalErrors, label).toBe(e.errors);
      expect(res.body.totalBlocked, label).toBe(e.blocked);
      expect(res.body.totalDataTransferred, label).toBe(e.bytes);
      expect(res.body.averageResponseTime, label).toBeCloseTo(avg(e), 2);
      const byMethod = Object.fromEntries(
        [...groupBy(subset, (r) => r.method)].map(([k, v]) => [k, v.length]),
      );
      expect(res.body.requestsByMethod, label).toEqual(byMethod);
      const byClass = Object.fromEntries(
        [...groupBy(subset, (r) => `${Math.floor(r.status / 100)}xx`)].map(([k, v]) => [k, v.length]),
      );
      expect(res.body.requestsByStatus, label).toEqual(byClass);
      const top = [...groupBy(subset, (r) => r.endpoint)]
        .map(([path, v]) => ({ path, count: v.length, avg: avg(stats(v)) }))
        .sort((a, b) => b.count - a.count || (a.path < b.path ? -1 : 1));
      expect(
        res.body.topEndpoints.map((x) => [x.path, x.count]),
        label,
      ).toEqual(top.map((x) => [x.path, x.count]));
      for (const [i, t] of res.body.topEndpoints.entries())
        expect(t.averageResponseTime, `${label} ${t.path}`).toBeCloseTo(top[i]!.avg, 2);
    }
  });

  it('throughput: every hour and minute interval exact, empty intervals zero', async () => {
    const res = await get<{
      interval: string;
      data: { timestamp: string; requestCount: number; errorCount: number; averageResponseTime: number }[];
    }>(`/throughput?interval=hour&${range}`);
    expect(res.status).toBe(200);
    expect(res.body.interval).toBe('hour');
    expect(res.body.data).toHaveLength(4);
    const byHour = groupBy(recs, (r) => Math.floor(r.ts / HOUR) * HOUR);
    for (const point of res.body.data) {
      const e = stats(byHour.get(Date.parse(point.timestamp)) ?? []);
      expect(point.requestCount, point.timestamp).toBe(e.requests);
      expect(point.errorCount, point.timestamp).toBe(e.errors);
      expect(point.averageResponseTime, point.timestamp).toBeCloseTo(avg(e), 2);
    }
    // Minute interval over the first 90 minutes (plus an empty hour before): every minute present.
    const start = base - HOUR;
    const minute = await get<{ data: { timestamp: string; requestCount: number; errorCount: number }[] }>(
      `/throughput?interval=minute&startDate=${new Date(start).toISOString()}&endDate=${new Date(base + 90 * 60_000 - 1).toISOString()}`,
    );
    expect(minute.status).toBe(200);
    expect(minute.body.data).toHaveLength(150);
    const byMinute = groupBy(recs, (r) => Math.floor(r.ts / 60_000) * 60_000);
    for (const [i, point] of minute.body.data.entries()) {
      expect(Date.parse(point.timestamp)).toBe(start + i * 60_000);
      const e = stats(byMinute.get(Date.parse(point.timestamp)) ?? []);
      expect([point.requestCount, point.errorCount], point.timestamp).toEqual([e.requests, e.errors]);
    }
    expect(minute.body.data.slice(0, 60).every((p) => p.requestCount === 0)).toBe(true);
  });

  it('performance: counts, error rates, averages exact and p50/p95/p99 within 1% for every groupBy', async () => {
    const keys: Record<string, (r: Rec) => string> = {
      endpoint: (r) => r.endpoint,
      method: (r) => r.method,
      status: (r) => String(r.status),
      environment: (r) => r.env,
    };
    for (const [groupByName, key] of Object.entries(keys)) {
      const res = await get<{
        groupBy: string;
        metrics: {
          group: string;
          requestCount: number;
          errorRate: number;
          averageResponseTime: number;
          p50ResponseTime: number;
          p95ResponseTime: number;
          p99ResponseTime: number;
        }[];
      }>(`/performance?groupBy=${groupByName}&${range}`);
      expect(res.status, groupByName).toBe(200);
      expect(res.body.groupBy).toBe(groupByName);
      const groups = groupBy(recs, key);
      expect(res.body.metrics.map((m) => m.group).sort()).toEqual([...groups.keys()].sort());
      for (const m of res.body.metrics) {
        const e = stats(groups.get(m.group)!);
        const what = `${groupByName}=${m.group}`;
        expect(m.requestCount, what).toBe(e.requests);
        expect(m.errorRate, what).toBeCloseTo((100 * e.errors) / e.requests, 9);
        expect(m.averageResponseTime, what).toBeCloseTo(avg(e), 2);
        expectPercentiles(
          { p50: m.p50ResponseTime, p95: m.p95ResponseTime, p99: m.p99ResponseTime },
          e,
          what,
        );
      }
      // Sorted by request count, largest first.
      const counts = res.body.metrics.map((m) => m.requestCount);
      expect(counts).toEqual([...counts].sort((a, b) => b - a));
    }
  });

  it('errors: totals, rate, by status and by endpoint with most common errors, with and without statusCode', async () => {
    for (const statusCode of [undefined, 503]) {
      const res = await get<{
        totalErrors: number;
        errorRate: number;
        errorsByStatus: Record<string, number>;
        errorsByEndpoint: {
          endpoint: string;
          errorCount: number;
          errorRate: number;
          mostCommonErrors: number[];
        }[];
      }>(`/errors?${range}${statusCode ? `&statusCode=${statusCode}` : ''}`);
      expect(res.status).toBe(200);
      const isCounted = (r: Rec) => r.status >= 400 && (statusCode === undefined || r.status === statusCode);
      const errors = recs.filter(isCounted);
      expect(res.body.totalErrors).toBe(errors.length);
      expect(res.body.errorRate).toBeCloseTo((100 * errors.length) / recs.length, 9);
      expect(res.body.errorsByStatus).toEqual(
        Object.fromEntries([...groupBy(errors, (r) => String(r.status))].map(([k, v]) => [k, v.length])),
      );
      const all = groupBy(recs, (r) => r.endpoint);
      const expected = [...groupBy(errors, (r) => r.endpoint)]
        .map(([endpoint, v]) => ({
          endpoint,
          errorCount: v.length,
          errorRate: (100 * v.length) / all.get(endpoint)!.length,
          mostCommonErrors: [...groupBy(v, (r) => r.status)]
            .sort((a, b) => b[1].length - a[1].length || a[0] - b[0])
            .map(([s]) => s),
        }))
        .sort((a, b) => b.errorCount - a.errorCount || (a.endpoint < b.endpoint ? -1 : 1));
      expect(res.body.errorsByEndpoint.map((x) => [x.endpoint, x.errorCount, x.mostCommonErrors])).toEqual(
        expected.map((x) => [x.endpoint, x.errorCount, x.mostCommonErrors]),
      );
      for (const [i, x] of res.body.errorsByEndpoint.entries())
        expect(x.errorRate).toBeCloseTo(expected[i]!.errorRate, 9);
    }
  });

  it('an unaligned range (edge minutes, 10-minute and hour blocks) is exact too', async () => {
    const from = base + 37 * 60_000 + 12_345;
    const to = base + 3 * HOUR + 12 * 60_000 + 5_000;
    // Minute resolution: the minute containing startDate through the minute containing endDate.
    const lo = Math.floor(from / 60_000) * 60_000;
    const hi = Math.floor(to / 60_000) * 60_000 + 60_000;
    const subset = recs.filter((r) => r.ts >= lo && r.ts < hi);
    const q = `startDate=${new Date(from).toISOString()}&endDate=${new Date(to).toISOString()}`;
    const e = await expectTotals(q, subset);
    const rt = await get<{
      summary: { requests: number; average: number; percentiles: Record<string, { value: number }> };
    }>(`/shapeA/responseTime?interval=hour&${q}`);
    expect(rt.body.summary.requests).toBe(e.requests);
    expect(rt.body.summary.average).toBeCloseTo(avg(e), 2);
    expectPercentiles(
      {
        p50: rt.body.summary.percentiles['50']!.value,
        p95: rt.body.summary.percentiles['95']!.value,
        p99: rt.body.summary.percentiles['99']!.value,
      },
      e,
      'unaligned range',
    );
    const perf = await get<{ metrics: { group: string; requestCount: number }[] }>(
      `/performance?groupBy=method&${q}`,
    );
    const byMethod = groupBy(subset, (r) => r.method);
    for (const m of perf.body.metrics) expect(m.requestCount, m.group).toBe(byMethod.get(m.group)!.length);
  });

  it('a range holding whole 6-hour blocks (level 360 of the rollup) is exact too', async () => {
    // From 12 hours before the set to 6 hours after it (the end may lie in the future): under a
    // day, so no day block, and the 6-hour block ending at or after the set's end lies inside the
    // range and holds part of the set, which is then read from 6-hour rows.
    const q = `startDate=${new Date(base - 12 * HOUR).toISOString()}&endDate=${new Date(base + 10 * HOUR - 1).toISOString()}`;
    const all = await expectTotals(q, recs);
    const keys: Record<string, (r: Rec) => string> = {
      endpoint: (r) => r.endpoint,
      method: (r) => r.method,
      status: (r) => String(r.status),
      environment: (r) => r.env,
    };
    for (const [groupByName, key] of Object.entries(keys)) {
      const res = await get<{
        metrics: {
          group: string;
          requestCount: number;
          averageResponseTime: number;
          p50ResponseTime: number;
          p95ResponseTime: number;
          p99ResponseTime: number;
        }[];
      }>(`/performance?groupBy=${groupByName}&${q}`);
      expect(res.status, groupByName).toBe(200);
      const groups = groupBy(recs, key);
      expect(res.body.metrics.map((m) => m.group).sort()).toEqual([...groups.keys()].sort());
      for (const m of res.body.metrics) {
        const e = stats(groups.get(m.group)!);
        const what = `6-hour blocks, ${groupByName}=${m.group}`;
        expect(m.requestCount, what).toBe(e.requests);
        expect(m.averageResponseTime, what).toBeCloseTo(avg(e), 2);
        expectPercentiles(
          { p50: m.p50ResponseTime, p95: m.p95ResponseTime, p99: m.p99ResponseTime },
          e,
          what,
        );
      }
    }
    const rt = await get<{
      summary: { requests: number; percentiles: Record<string, { value: number }> };
    }>(`/shapeA/responseTime?interval=day&${q}`);
    expect(rt.body.summary.requests).toBe(all.requests);
    expectPercentiles(
      {
        p50: rt.body.summary.percentiles['50']!.value,
        p95: rt.body.summary.percentiles['95']!.value,
        p99: rt.body.summary.percentiles['99']!.value,
      },
      all,
      '6-hour blocks, shapeA/responseTime',
    );
  });

  it('Shape A: summary against the previous period, throughput periods by class, response-time percentiles', async () => {
    const summary = await get<{
      requests: {
        current: { amount: number };
        previous: { amount: number };
        change: { amount: number | null };
      };
      errors: { current: { amount: number } };
      blocked: { current: { amount: number } };
      responseTime: { current: { amount: number; units: string }; change: { units: string } };
    }>(`/shapeA/summary?${range}`);
    expect(summary.status).toBe(200);
    const e = stats(recs);
    expect(summary.body.requests.current.amount).toBe(N);
    expect(summary.body.requests.previous.amount).toBe(0);
    expect(summary.body.requests.change.amount).toBeNull();
    expect(summary.body.errors.current.amount).toBe(e.errors);
    expect(summary.body.blocked.current.amount).toBe(e.blocked);
    expect(summary.body.responseTime.current.amount).toBeCloseTo(avg(e), 2);
    expect(summary.body.responseTime.current.units).toBe('milliseconds');

    const tp = await get<{
      summary: { total: { count: number }; httpStatus: Record<string, { count: number }> };
      periods: {
        startTime: string;
        total: { count: number; average: number };
        httpStatus: Record<string, { count: number }>;
      }[];
    }>(`/shapeA/throughput?interval=hour&${range}`);
    expect(tp.status).toBe(200);
    expect(tp.body.summary.total.count).toBe(N);
    const byHour = groupBy(recs, (r) => Math.floor(r.ts / HOUR) * HOUR);
    for (const p of tp.body.periods) {
      const hour = byHour.get(Date.parse(p.startTime)) ?? [];
      expect(p.total.count).toBe(hour.length);
      expect(p.total.average).toBeCloseTo(hour.length / 60, 9);
      for (const cls of [2, 4, 5])
        expect(p.httpStatus[String(cls * 100)]!.count).toBe(
          hour.filter((r) => Math.floor(r.status / 100) === cls).length,
        );
    }

    const rt = await get<{
      summary: {
        requests: number;
        percentiles: Record<string, { value: number; maximum: number; minimum: number }>;
      };
      periods: {
        startTime: string;
        requests: number;
        minimum: number;
        maximum: number;
        percentiles: Record<string, { value: number }>;
      }[];
    }>(`/shapeA/responseTime?interval=hour&${range}`);
    expect(rt.status).toBe(200);
    expect(rt.body.periods).toHaveLength(4);
    for (const p of rt.body.periods) {
      const he = stats(byHour.get(Date.parse(p.startTime)) ?? []);
      expect(p.requests).toBe(he.requests);
      expect(p.minimum).toBeCloseTo(he.durations[0]!, 3);
      expect(p.maximum).toBeCloseTo(he.durations[he.durations.length - 1]!, 3);
      expectPercentiles(
        { p50: p.percentiles['50']!.value, p95: p.percentiles['95']!.value, p99: p.percentiles['99']!.value },
        he,
        `hour ${p.startTime}`,
      );
    }
    expectPercentiles(
      {
        p50: rt.body.summary.percentiles['50']!.value,
        p95: rt.body.summary.percentiles['95']!.value,
        p99: rt.body.summary.percentiles['99']!.value,
      },
      e,
      'whole range',
    );
    const p95s = rt.body.periods.map((p) => p.percentiles['95']!.value);
    expect(rt.body.summary.percentiles['95']!.maximum).toBe(Math.max(...p95s));
    expect(rt.body.summary.percentiles['95']!.minimum).toBe(Math.min(...p95s));
  });
});
