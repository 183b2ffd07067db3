import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, ingest, newAccount, testEnv, waitFor, type TestAccount } from '../helpers/client.js';
import { mcpToken } from '../helpers/scoped-token.js';

/**
 * Every metrics endpoint agrees with the stored records for every range shape. A known set of
 * records spread over six hours across a 6-hour boundary (so across hour and 10-minute boundaries
 * too) goes through the whole pipeline; random ranges (sub-minute, straddling a 10-minute, hour or
 * 6-hour boundary, or anywhere in the set, with and without `endpoint` / `method`) are then asked
 * of every Shape B and Shape A endpoint and of the MCP `get_errors` and `get_metrics_summary`
 * tools, and their counts and error counts compared with exact counts computed here under the time
 * model of docs/metrics.md (the minute of `startDate` through the minute of `endDate`, inclusive).
 * The rollups cover whole 10-minute, hour and 6-hour blocks and `requests_minute` the edges, so
 * these shapes read each table alone and both together.
 */

const MINUTE = 60_000;
const TEN = 10 * MINUTE;
const HOUR = 60 * MINUTE;
const SIX = 6 * HOUR;
const N = 1500;
const ENDPOINTS = ['/api/users/{id}', '/api/orders/{id}', '/api/health'] as const;
const METHODS = ['GET', 'POST'] as const;
const STATUSES = [200, 201, 404, 500, 503] as const;

type Rec = { ts: number; endpoint: string; method: string; status: number };
type Counts = { requests: number; errors: number };

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

const floorMinute = (ms: number) => Math.floor(ms / MINUTE) * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString();

/** The records whose minute lies in [minute of start, minute of end]. */
function inRange(recs: Rec[], start: number, end: number): Rec[] {
  const a = floorMinute(start);
  const b = floorMinute(end);
  return recs.filter((r) => floorMinute(r.ts) >= a && floorMinute(r.ts) <= b);
}

function counts(recs: Rec[]): Counts {
  return { requests: recs.length, errors: recs.filter((r) => r.status >= 400).length };
}

function countBy(recs: Rec[], key: (r: Rec) => string, errorsOnly = false): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of recs) if (!errorsOnly || r.status >= 400) out[key(r)] = (out[key(r)] ?? 0) + 1;
  return out;
}

type Summary = {
  totalRequests: number;
  totalErrors: number;
  requestsByMethod: Record<string, number>;
  requestsByStatus: Record<string, number>;
  topEndpoints: { path: string; count: number }[];
};
type Errors = {
  totalErrors: number;
  errorsByStatus: Record<string, number>;
  errorsByEndpoint: { endpoint: string; errorCount: number }[];
};
type Throughput = { data: { requestCount: number; errorCount: number }[] };
type Performance = { metrics: { group: string; requestCount: number; errorRate: number }[] };
type ShapeASummary = {
  requests: { current: { amount: number }; previous: { amount: number } };
  errors: { current: { amount: number }; previous: { amount: number } };
};
type ShapeAThroughput = { summary: { total: { count: number } } };
type ShapeAResponseTime = { summary: { requests: number } };

interface Draw {
  start: number;
  end: number;
  endpoint?: string;
  method?: string;
}

describe('metrics endpoints agree with the stored records for every range shape', () => {
  let acct: TestAccount;
  let recs: Rec[];
  /** A 6-hour boundary; the set spans [six - 3 h, six + 3 h). */
  let six: number;
  let mcp: Client;

  const get = async <T>(path: string): Promise<T> => {
    const res = await api(acct.apiToken).get<T>(`/v1/accounts/${acct.accountSid}/metrics${path}`);
    expect(res.status, `${path}: ${res.text.slice(0, 300)}`).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    acct = await newAccount();
    // The 6-hour boundary at least 4 hours ago: the whole set lies at least an hour in the past
    // (complete when the test starts) and well inside the retention.
    six = Math.floor((Date.now() - 4 * HOUR) / SIX) * SIX;
    const rand = prng(20261129);
    recs = [];
    for (let i = 0; i < N; i++) {
      // Most records anywhere in the span, some on block boundaries and a millisecond before them.
      const kind = rand();
      let ts: number;
      if (kind < 0.85) ts = six - 3 * HOUR + Math.floor(rand() * SIX);
      else {
        const block = [TEN, HOUR, SIX][Math.floor(rand() * 3)]!;
        const edge = six - 3 * HOUR + Math.ceil((rand() * SIX) / block) * block;
        ts = Math.min(six + 3 * HOUR - 1, edge - (rand() < 0.5 ? 1 : 0));
      }
      recs.push({
        ts,
        endpoint: ENDPOINTS[Math.floor(rand() * ENDPOINTS.length)]!,
        method: METHODS[Math.floor(rand() * METHODS.length)]!,
        status: STATUSES[Math.floor(rand() * STATUSES.length)]!,
      });
    }
    const body = recs.map((r, i) => ({
      environmentSid: 'prod01',
      createdAt: iso(r.ts),
      request: {
        host: 'api.example.com',
        method: r.method,
        path: r.endpoint.replace('{id}', String(1000 + i)),
      },
      response: { statusCode: r.status },
      timings: { duration: 5 + (i % 50) },
    }));
    for (let i = 0; i < body.length; i += 500) {
      const res = await ingest(acct.bucketSid, acct.apiToken, body.slice(i, i + 500));
      expect(res.status, res.text).toBe(202);
      expect(res.body.rejected).toEqual([]);
    }
    const whole = `startDate=${iso(six - 3 * HOUR)}&endDate=${iso(six + 3 * HOUR - 1)}`;
    await waitFor(
      async () =>
        (await get<ShapeAThroughput>(`/shapeA/throughput?interval=hour&${whole}`)).summary.total.count === N,
      { timeoutMs: 60_000, intervalMs: 500, what: `${N} records in the metrics` },
    );
    const { token } = await mcpToken(acct, 'prod01');
    mcp = new Client({ name: 'tapline-ranges-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${testEnv().apiUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await mcp?.close();
  });

  /**
   * A range of one of the shapes, its ends at any millisecond (drawn as offsets: fast-check's
   * integers are 32-bit).
   */
  const rangeArb = (): fc.Arbitrary<{ start: number; end: number }> => {
    const lo = six - 3 * HOUR - 30 * MINUTE;
    const span = 7 * HOUR;
    const at = () => fc.integer({ min: 0, max: span }).map((o) => lo + o);
    const around = (block: number, reach: number) =>
      fc
        .tuple(
          fc.integer({ min: 1, max: Math.floor((6 * HOUR) / block) - 1 }),
          fc.integer({ min: 0, max: reach }),
          fc.integer({ min: 0, max: reach }),
        )
        .map(([k, before, after]) => {
          const edge = six - 3 * HOUR + k * block;
          return { start: edge - before, end: edge + after };
        });
    return fc.oneof(
      // Sub-minute: both ends inside one minute or in two neighbouring minutes.
      fc.tuple(at(), fc.integer({ min: 0, max: 59_999 })).map(([s, len]) => ({ start: s, end: s + len })),
      around(TEN, 15 * MINUTE),
      around(HOUR, 90 * MINUTE),
      fc
        .tuple(fc.integer({ min: 0, max: 4 * HOUR }), fc.integer({ min: 0, max: 4 * HOUR }))
        .map(([before, after]) => ({ start: six - before, end: six + after })),
      fc.tuple(at(), at()).map(([a, b]) => ({ start: Math.min(a, b), end: Math.max(a, b) })),
    );
  };

  /** A range and, or not, an endpoint and a method (built once the set's times are known). */
  const drawArb = (): fc.Arbitrary<Draw> =>
    fc
      .tuple(
        rangeArb(),
        fc.option(fc.constantFrom(...ENDPOINTS), { nil: undefined }),
        fc.option(fc.constantFrom(...METHODS), { nil: undefined }),
      )
      .map(([r, endpoint, method]) => ({ ...r, endpoint, method }));

  const queryOf = (d: Draw) =>
    `startDate=${iso(d.start)}&endDate=${iso(d.end)}` +
    (d.endpoint ? `&endpoint=${encodeURIComponent(d.endpoint)}` : '') +
    (d.method ? `&method=${d.method}` : '');

  const expectedOf = (d: Draw) =>
    inRange(recs, d.start, d.end).filter(
      (r) => (!d.endpoint || r.endpoint === d.endpoint) && (!d.method || r.method === d.method),
    );

  it('summary, errors, throughput, performance and Shape A count exactly what is stored', async () => {
    await fc.assert(
      fc.asyncProperty(drawArb(), fc.constantFrom('minute', 'hour'), async (d, interval) => {
        const q = queryOf(d);
        const want = expectedOf(d);
        const c = counts(want);
        const what = `${q} (${c.requests} requests, ${c.errors} errors)`;

        const s = await get<Summary>(`/summary?${q}`);
        expect([s.totalRequests, s.totalErrors], `summary ${what}`).toEqual([c.requests, c.errors]);
        expect(s.requestsByMethod, `summary by method ${what}`).toEqual(countBy(want, (r) => r.method));
        expect(s.requestsByStatus, `summary by status ${what}`).toEqual(
          countBy(want, (r) => `${Math.floor(r.status / 100)}xx`),
        );
        expect(
          Object.fromEntries(s.topEndpoints.map((e) => [e.path, e.count])),
          `summary endpoints ${what}`,
        ).toEqual(countBy(want, (r) => r.endpoint));

        const e = await get<Errors>(`/errors?${q}`);
        expect(e.totalErrors, `errors ${what}`).toBe(c.errors);
        expect(e.errorsByStatus, `errors by status ${what}`).toEqual(
          countBy(want, (r) => String(r.status), true),
        );
        expect(
          Object.fromEntries(e.errorsByEndpoint.map((x) => [x.endpoint, x.errorCount])),
          `errors by endpoint ${what}`,
        ).toEqual(countBy(want, (r) => r.endpoint, true));

        const t = await get<Throughput>(`/throughput?interval=${interval}&${q}`);
        const sum = (k: 'requestCount' | 'errorCount') => t.data.reduce((acc, p) => acc + p[k], 0);
        expect([sum('requestCount'), sum('errorCount')], `throughput ${interval} ${what}`).toEqual([
          c.requests,
          c.errors,
        ]);

        const p = await get<Performance>(`/performance?groupBy=endpoint&${q}`);
        expect(
          Object.fromEntries(p.metrics.map((m) => [m.group, m.requestCount])),
          `performance ${what}`,
        ).toEqual(countBy(want, (r) => r.endpoint));
        expect(
          p.metrics.reduce((acc, m) => acc + Math.round((m.errorRate * m.requestCount) / 100), 0),
          `performance errors ${what}`,
        ).toBe(c.errors);

        // Route groups need method and endpoint together: whole hours of requests_key_rollup.
        const routes = await get<Performance>(`/performance?groupBy=route&${q}`);
        expect(
          Object.fromEntries(routes.metrics.map((m) => [m.group, m.requestCount])),
          `performance by route ${what}`,
        ).toEqual(countBy(want, (r) => `${r.method} ${r.endpoint}`));

        const a = await get<ShapeASummary>(`/shapeA/summary?${q}`);
        const length = floorMinute(d.end) - floorMinute(d.start) + MINUTE;
        const prev = counts(
          expectedOf({ ...d, start: floorMinute(d.start) - length, end: floorMinute(d.start) - MINUTE }),
        );
        expect(
          [
            a.requests.current.amount,
            a.errors.current.amount,
            a.requests.previous.amount,
            a.errors.previous.amount,
          ],
          `shapeA/summary ${what}, previous ${prev.requests}/${prev.errors}`,
        ).toEqual([c.requests, c.errors, prev.requests, prev.errors]);

        const at = await get<ShapeAThroughput>(`/shapeA/throughput?interval=${interval}&${q}`);
        expect(at.summary.total.count, `shapeA/throughput ${what}`).toBe(c.requests);
        const rt = await get<ShapeAResponseTime>(`/shapeA/responseTime?interval=${interval}&${q}`);
        expect(rt.summary.requests, `shapeA/responseTime ${what}`).toBe(c.requests);
      }),
      { numRuns: 60 },
    );
  }, 90_000);

  it('the MCP get_errors and get_metrics_summary tools count exactly what is stored', async () => {
    const tool = async <T>(name: string, args: Record<string, unknown>): Promise<T> => {
      const res = (await mcp.callTool({ name, arguments: args })) as {
        isError?: boolean;
        content: { text: string }[];
      };
      expect(res.isError, `${name}: ${res.content[0]?.text}`).toBeFalsy();
      return JSON.parse(res.content[0]!.text) as T;
    };
    // Two calls per draw stay within the MCP token's 120 calls a minute.
    await fc.assert(
      fc.asyncProperty(drawArb(), async (d) => {
        const args = {
          startDate: iso(d.start),
          endDate: iso(d.end),
          ...(d.endpoint ? { endpoint: d.endpoint } : {}),
          ...(d.method ? { method: d.method } : {}),
        };
        const c = counts(expectedOf(d));
        const what = `${JSON.stringify(args)} (${c.requests} requests, ${c.errors} errors)`;
        const e = await tool<{ totalErrors: number }>('get_errors', args);
        expect(e.totalErrors, `get_errors ${what}`).toBe(c.errors);
        const s = await tool<{ current: { requests: number; errors: number } }>('get_metrics_summary', args);
        expect([s.current.requests, s.current.errors], `get_metrics_summary ${what}`).toEqual([
          c.requests,
          c.errors,
        ]);
      }),
      { numRuns: 40 },
    );
  }, 90_000);
});
