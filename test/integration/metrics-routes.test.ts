import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor } from '../helpers/client.js';

interface Row {
  group: string;
  method?: string;
  endpoint?: string;
  requestCount: number;
  errorRate: number;
  p50ResponseTime: number;
  bytes: number;
  averageBytes: number;
  throughput?: number[];
  histogram?: { from: number; to: number; count: number }[];
}
type Performance = { interval?: string; metrics: Row[] };

const MIN = 60_000;

/**
 * The endpoints table's figures: rows per HTTP method and endpoint template (`groupBy=route`),
 * request plus response sizes, requests per interval for a sparkline (`interval`) and the merged
 * duration histogram in coarse bins (`histogram=true`).
 */
describe('performance per method and endpoint, with sizes, a series and a histogram', () => {
  it('answers one row per method and endpoint with its own figures', async () => {
    const acct = await newAccount();
    // Minute-aligned times 5 and 3 minutes before the current minute: the series' buckets are known.
    const minute = Math.floor(Date.now() / MIN) * MIN;
    const at5 = new Date(minute - 5 * MIN + 10_000).toISOString();
    const at3 = new Date(minute - 3 * MIN + 10_000).toISOString();
    const rec = (method: string, path: string, status: number, duration: number, createdAt: string) =>
      makeRecord({
        createdAt,
        request: { method, path, host: 'api.example.com', size: 100 },
        response: { statusCode: status, size: 1000 },
        timings: { duration },
      });
    const res = await ingest(acct.bucketSid, acct.apiToken, [
      rec('GET', '/orders', 200, 10, at5),
      rec('GET', '/orders', 200, 10, at3),
      rec('GET', '/orders', 500, 800, at3),
      rec('POST', '/orders', 201, 100, at5),
      rec('GET', '/coupons/XMAS24', 404, 5, at3),
    ]);
    expect(res.status).toBe(202);
    const a = api(acct.apiToken);
    const start = new Date(minute - 10 * MIN).toISOString();
    const end = new Date(minute).toISOString();
    const base = `/v1/accounts/${acct.accountSid}/metrics/performance?bucketSid=${acct.bucketSid}&startDate=${start}&endDate=${end}`;
    const perf = async (extra: string) => {
      const r = await a.get<Performance>(`${base}&${extra}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    await waitFor(
      async () => (await perf('groupBy=route')).metrics.reduce((s, m) => s + m.requestCount, 0) === 5,
      { what: 'five stored requests' },
    );

    const routes = await perf('groupBy=route&interval=minute&histogram=true');
    expect(routes.interval).toBe('minute');
    const by = Object.fromEntries(routes.metrics.map((m) => [m.group, m]));
    expect(Object.keys(by).sort()).toEqual(['GET /coupons/XMAS24', 'GET /orders', 'POST /orders']);
    const get = by['GET /orders']!;
    expect(get.method).toBe('GET');
    expect(get.endpoint).toBe('/orders');
    expect(get.requestCount).toBe(3);
    expect(get.errorRate).toBeCloseTo(100 / 3, 5);
    expect(by['POST /orders']!.requestCount).toBe(1);
    expect(by['POST /orders']!.p50ResponseTime).toBeCloseTo(100, 0);
    // Request plus response sizes: 1,100 bytes a request.
    expect(get.bytes).toBe(3300);
    expect(get.averageBytes).toBe(1100);
    // One count per minute of the range (10 minutes and the current one); the requests fall
    // into the minutes 5 and 3 before the current one.
    expect(get.throughput).toHaveLength(11);
    expect(get.throughput![5]).toBe(1);
    expect(get.throughput![7]).toBe(2);
    expect(get.throughput!.reduce((s, v) => s + v, 0)).toBe(3);
    expect(by['POST /orders']!.throughput![5]).toBe(1);
    // The histogram holds every duration once, each in the bin that spans it.
    const hist = get.histogram!;
    expect(hist.reduce((s, b) => s + b.count, 0)).toBe(3);
    const binOf = (ms: number) => hist.find((b) => b.from <= ms && ms < b.to)!;
    expect(binOf(10).count).toBe(2);
    expect(binOf(800).count).toBe(1);
    // Bins are contiguous from the first duration to the last, empty ones between included.
    for (let i = 1; i < hist.length; i++) expect(hist[i]!.from).toBe(hist[i - 1]!.to);
    expect(hist.filter((b) => b.count === 0).length).toBeGreaterThan(0);

    // Without the options: no series, no histogram; sizes are there for every grouping.
    const plain = await perf('groupBy=endpoint');
    const orders = plain.metrics.find((m) => m.group === '/orders')!;
    expect(orders.requestCount).toBe(4);
    expect(orders.bytes).toBe(4400);
    expect(orders.throughput).toBeUndefined();
    expect(orders.histogram).toBeUndefined();
    expect(orders.method).toBeUndefined();
    // Narrowed to one endpoint and method, the series over hours from the rollups still adds up.
    const hourly = await perf('groupBy=endpoint&endpoint=/orders&method=GET&interval=hour&histogram=true');
    expect(hourly.metrics).toHaveLength(1);
    expect(hourly.metrics[0]!.throughput!.reduce((s, v) => s + v, 0)).toBe(3);
    expect(hourly.metrics[0]!.histogram!.reduce((s, b) => s + b.count, 0)).toBe(3);
    const status = await perf('groupBy=status&interval=minute');
    expect(status.metrics.find((m) => m.group === '500')!.throughput![7]).toBe(1);

    const bad = await a.get<{ success: boolean; error: { code: string } }>(`${base}&interval=fortnight`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
  });
});
