import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  api,
  ingest,
  listAllRequests,
  makeRecord,
  newAccount,
  testEnv,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { mcpToken } from '../helpers/scoped-token.js';

/**
 * The read-only MCP tools (docs/events-mcp.md) through the official SDK client over Streamable
 * HTTP against the real stack: the same numbers as /v1, the token's environment and buckets only,
 * bad input as tool errors naming the field, outputs within the size cap.
 */

type Rec = Record<string, unknown>;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString();
const tag = () => randomBytes(4).toString('hex');

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'tapline-tools-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${testEnv().apiUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  open.push(client);
  return client;
}

interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
}

async function call(client: Client, name: string, args: Rec = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** A successful call's JSON. */
async function ok<T = Rec>(client: Client, name: string, args: Rec = {}): Promise<T> {
  const res = await call(client, name, args);
  expect(res.isError, `${name}: ${res.content[0]?.text}`).toBeFalsy();
  expect(res.content[0]?.type).toBe('text');
  expect(res.content[0]!.text.length).toBeLessThanOrEqual(20_000);
  return JSON.parse(res.content[0]!.text) as T;
}

/** A failed call's text (`{error, details}`). */
async function fails(client: Client, name: string, args: Rec): Promise<string> {
  const res = await call(client, name, args);
  expect(res.isError, `${name} ${JSON.stringify(args)} should fail: ${res.content[0]?.text}`).toBe(true);
  return res.content[0]!.text;
}

function rec(ts: number, o: { path: string; duration: number; status?: number; env?: string }): Rec {
  return makeRecord({
    environmentSid: o.env ?? 'prod01',
    createdAt: iso(ts),
    request: { host: 'shop.example.com', method: 'GET', path: o.path, size: 10 },
    response: { statusCode: o.status ?? 200, size: 100 },
    timings: { duration: o.duration },
  });
}

async function ingestAll(acct: TestAccount, bucketSid: string, records: Rec[]): Promise<void> {
  for (let i = 0; i < records.length; i += 500) {
    const res = await ingest(bucketSid, acct.apiToken, records.slice(i, i + 500));
    expect(res.status, res.text).toBe(202);
    expect(res.body.rejected).toEqual([]);
  }
}

const metricsPath = (acct: TestAccount, p: string) => `/v1/accounts/${acct.accountSid}/metrics${p}`;

async function untilCounted(acct: TestAccount, query: string, total: number): Promise<void> {
  await waitFor(
    async () =>
      (await api(acct.apiToken).get<{ totalRequests: number }>(metricsPath(acct, `/summary?${query}`))).body
        .totalRequests === total,
    { timeoutMs: 40_000, what: `${total} requests in the metrics` },
  );
}

async function restEvent(acct: TestAccount, body: Rec): Promise<string> {
  const res = await api(acct.apiToken).post<{ sid: string }>(`/v1/accounts/${acct.accountSid}/events`, body);
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

describe('MCP read-only tools: investigating a slow endpoint after a deployment', () => {
  it('compare_periods names the endpoint that got slower; the numbers equal /v1; bad input names the field', async () => {
    const acct = await newAccount();
    // Two hours of traffic ending over an hour ago, a deployment marker in the middle.
    const T0 = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
    const M = T0 + HOUR;
    const records: Rec[] = [];
    for (let i = 0; i < 20; i++) {
      const before = T0 + 5 * MINUTE + i * 2 * MINUTE;
      const after = M + 5 * MINUTE + i * 2 * MINUTE;
      records.push(rec(before, { path: '/checkout', duration: 30 + i }));
      records.push(rec(after, { path: '/checkout', duration: 600 + i * 5 }));
      records.push(rec(before, { path: '/catalog', duration: 20 + i }));
      records.push(rec(after, { path: '/catalog', duration: 22 + i }));
      // /cart: a quarter errors in both periods, the same latency.
      records.push(rec(before, { path: '/cart', duration: 40, status: i % 4 === 0 ? 503 : 200 }));
      records.push(rec(after, { path: '/cart', duration: 41, status: i % 4 === 0 ? 503 : 200 }));
      // Another environment: much slower after the marker, and invisible to a prod01 token.
      records.push(rec(after, { path: '/staging-only', duration: 5000, env: 'stag01' }));
    }
    await ingestAll(acct, acct.bucketSid, records);
    const deploy = await restEvent(acct, {
      type: 'deployment',
      name: 'Deploy v42',
      environmentSids: ['prod01'],
      startedAt: iso(M),
    });
    const range = `startDate=${iso(T0)}&endDate=${iso(T0 + 2 * HOUR)}`;
    await untilCounted(acct, `${range}&environmentSid=prod01`, 120);
    await untilCounted(acct, `${range}&environmentSid=stag01`, 20);

    const client = await connect((await mcpToken(acct, 'prod01')).token);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        'compare_periods',
        'create_event',
        'get_endpoint_performance',
        'get_errors',
        'get_metrics_summary',
        'get_release_impact',
        'get_request',
        'get_slo_status',
        'get_timeseries',
        'get_consumer',
        'list_buckets',
        'list_consumers',
        'list_events',
        'list_slos',
        'list_workflow_executions',
        'list_workflows',
        'search_requests',
      ].sort(),
    );
    for (const t of tools) expect(t.inputSchema.type).toBe('object');

    // "Why is checkout slow since the deploy?"
    type Compare = {
      event: { sid: string } | null;
      before: { startDate: string; totals: { requests: number } };
      after: { startDate: string; totals: { requests: number; p95ResponseTime: number } };
      endpoints: {
        endpoint: string;
        before: { requests: number; p95ResponseTime: number } | null;
        after: { requests: number; p95ResponseTime: number } | null;
        change: { p95ResponseTimeMs: number | null };
      }[];
    };
    const cmp = await ok<Compare>(client, 'compare_periods', { eventSid: deploy, windowMinutes: 60 });
    expect(cmp.event?.sid).toBe(deploy);
    expect(cmp.before.startDate).toBe(iso(T0));
    expect(cmp.after.startDate).toBe(iso(M));
    expect(cmp.before.totals.requests).toBe(60);
    expect(cmp.after.totals.requests).toBe(60);
    expect(cmp.endpoints[0]!.endpoint).toBe('/checkout');
    expect(cmp.endpoints[0]!.before!.p95ResponseTime).toBeLessThan(60);
    expect(cmp.endpoints[0]!.after!.p95ResponseTime).toBeGreaterThan(600);
    expect(cmp.endpoints[0]!.change.p95ResponseTimeMs).toBeGreaterThan(500);
    expect(cmp.endpoints.map((e) => e.endpoint).sort()).toEqual(['/cart', '/catalog', '/checkout']);
    // The same periods given as dates rank the same way.
    const byDates = await ok<Compare>(client, 'compare_periods', {
      beforeStartDate: iso(T0),
      beforeEndDate: iso(M - 1),
      afterStartDate: iso(M),
      afterEndDate: iso(M + HOUR - 1),
      limit: 1,
    });
    expect(byDates.endpoints.map((e) => e.endpoint)).toEqual(['/checkout']);
    expect(byDates).toMatchObject({ truncated: { field: 'endpoints', shown: 1, total: 3, reason: 'limit' } });

    // get_endpoint_performance equals GET /v1/.../metrics/performance for the same range.
    const start = iso(T0);
    const end = iso(T0 + 2 * HOUR);
    const rest = await api(acct.apiToken).get<{ metrics: Rec[] }>(
      metricsPath(acct, `/performance?startDate=${start}&endDate=${end}&environmentSid=prod01&limit=20`),
    );
    expect(rest.status).toBe(200);
    const perf = await ok<{ metrics: Rec[]; truncated: unknown; startDate: string }>(
      client,
      'get_endpoint_performance',
      { startDate: start, endDate: end },
    );
    expect(perf.metrics).toEqual(rest.body.metrics);
    expect(perf.metrics).toHaveLength(3);
    expect(perf.truncated).toBe(false);
    const byP95 = await ok<{ metrics: { group: string }[] }>(client, 'get_endpoint_performance', {
      startDate: start,
      endDate: end,
      sortBy: 'p95ResponseTime',
      limit: 1,
    });
    expect(byP95.metrics.map((m) => m.group)).toEqual(['/checkout']);
    const byStatus = await ok<{ metrics: { group: string; requestCount: number }[] }>(
      client,
      'get_endpoint_performance',
      { startDate: start, endDate: end, groupBy: 'status' },
    );
    expect(byStatus.metrics).toEqual([
      expect.objectContaining({ group: '200', requestCount: 110 }),
      expect.objectContaining({ group: '503', requestCount: 10 }),
    ]);

    const summary = await ok<{
      current: { requests: number; errors: number; p95ResponseTime: number };
      byBucket: { bucketSid: string; requests: number }[];
    }>(client, 'get_metrics_summary', { startDate: start, endDate: end });
    expect(summary.current.requests).toBe(120);
    expect(summary.current.errors).toBe(10);
    expect(summary.byBucket).toEqual([expect.objectContaining({ bucketSid: acct.bucketSid, requests: 120 })]);

    const errors = await ok<{ totalErrors: number; errorsByEndpoint: Rec[] }>(client, 'get_errors', {
      startDate: start,
      endDate: end,
    });
    expect(errors.totalErrors).toBe(10);
    expect(errors.errorsByEndpoint).toEqual([
      expect.objectContaining({ endpoint: '/cart', errorCount: 10, mostCommonErrors: [503] }),
    ]);

    const series = await ok<{ interval: string; columns: string[]; points: unknown[][]; events: Rec[] }>(
      client,
      'get_timeseries',
      { startDate: start, endDate: end },
    );
    expect(series.interval).toBe('minute');
    expect(series.points.length).toBe(121);
    expect(series.columns.slice(0, 3)).toEqual(['start', 'requests', 'errors']);
    expect(series.points.reduce((a, p) => a + (p[1] as number), 0)).toBe(120);
    expect(series.events.map((e) => e.sid)).toEqual([deploy]);
    const daily = await ok<{ interval: string; points: unknown[][] }>(client, 'get_timeseries', {
      startDate: iso(T0 - 30 * 24 * HOUR),
      endDate: end,
    });
    expect(daily.interval).toBe('day');

    const buckets = await ok<{ buckets: Rec[] }>(client, 'list_buckets');
    expect(buckets.buckets).toEqual([
      expect.objectContaining({
        sid: acct.bucketSid,
        appIsConnected: true,
        lastTrafficAt: iso(M + 5 * MINUTE + 38 * MINUTE),
      }),
    ]);

    // Bad input: a tool error naming the field, never a protocol or HTTP failure.
    const named = async (name: string, args: Rec, field: string) =>
      expect(await fails(client, name, args)).toContain(field);
    await named('get_endpoint_performance', { limit: 0 }, 'limit');
    await named('get_endpoint_performance', { sortBy: 'slowest' }, 'sortBy');
    await named('get_endpoint_performance', { groupBy: 'environment' }, 'groupBy');
    await named('get_metrics_summary', { startDate: 'yesterday' }, 'startDate');
    await named('get_metrics_summary', { startDate: end, endDate: start }, 'startDate');
    await named('get_metrics_summary', { verbose: true }, 'verbose');
    await named('get_errors', { statusCode: 99 }, 'statusCode');
    await named(
      'get_timeseries',
      { interval: 'minute', startDate: iso(T0 - 24 * HOUR), endDate: end },
      'interval',
    );
    await named('search_requests', { limit: 51 }, 'limit');
    await named('search_requests', { q: 'colour:red' }, 'q');
    await named('get_request', {}, 'requestSid');
    await named('get_request', { requestSid: 'nope' }, 'requestSid');
    await named('compare_periods', {}, 'beforeStartDate');
    await named('compare_periods', { eventSid: 'evt_unknown' }, 'eventSid');
    await named('list_workflow_executions', { status: 'exploded' }, 'status');
    await named('list_workflows', { limit: 'ten' }, 'limit');
  });
});

describe('MCP read-only tools: requests', () => {
  it('get_request shows a redacted header as redacted and cuts bodies; search_requests stays within the output cap', async () => {
    const acct = await newAccount();
    const rdc = await api(acct.apiToken).post<{ sid: string }>(`/v1/accounts/${acct.accountSid}/redactions`, {
      name: 'auth header',
      fieldPath: '$.request.headers.authorization',
      redactionType: 'mask',
      redactAt: 'server',
    });
    expect(rdc.status, rdc.text).toBe(201);
    const secret = 'Bearer sk_live_SECRET42';
    const bigBody = JSON.stringify({ items: 'x'.repeat(50_000) });
    const probe = (ctx: string) =>
      makeRecord({
        contextSid: ctx,
        request: {
          method: 'POST',
          path: '/pay',
          headers: { Authorization: secret, 'content-type': 'application/json' },
          body: bigBody,
          contentType: 'application/json',
        },
        response: { statusCode: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' },
      });
    // The rule reaches the processor within moments (NOTIFY): re-ingest until a stored probe shows it.
    const stored = await waitFor(
      async () => {
        const ctx = `probe-${tag()}`;
        await ingestAll(acct, acct.bucketSid, [probe(ctx)]);
        const found = await waitFor(
          async () =>
            (await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid)).find(
              (r) => r.contextSid === ctx,
            ),
          { timeoutMs: 20_000, what: 'probe stored' },
        );
        const headers = (found.request as { headers: Rec }).headers;
        return Object.values(headers).some((v) => v === secret) ? undefined : found;
      },
      { timeoutMs: 40_000, intervalMs: 200, what: 'the redaction rule applied' },
    );

    const client = await connect((await mcpToken(acct, 'prod01')).token);
    type Got = {
      sid: string;
      request: { headers: Rec; body: string; bodyLength: number; bodyTruncated: boolean };
      response: { body: string; bodyLength: number; bodyTruncated: boolean };
      redactedValues: string[];
    };
    const got = await ok<Got>(client, 'get_request', { requestSid: stored.sid });
    expect(got.sid).toBe(stored.sid);
    const auth = Object.entries(got.request.headers).find(([k]) => k.toLowerCase() === 'authorization');
    expect(auth).toBeDefined();
    expect(auth![1]).not.toContain('SECRET');
    expect(auth![1]).toMatch(/^[*\s_]+$/);
    expect(got.redactedValues.map((p) => p.toLowerCase())).toContain('request.headers.authorization');
    expect(got.request.body).toHaveLength(2000);
    expect(got.request.bodyLength).toBe(bigBody.length);
    expect(got.request.bodyTruncated).toBe(true);
    expect(got.response).toMatchObject({ body: '{"ok":true}', bodyLength: 11, bodyTruncated: false });
    const small = await ok<Got>(client, 'get_request', { requestSid: stored.sid, maxBodyChars: 100 });
    expect(small.request.body).toBe(bigBody.slice(0, 100));
    expect(small.request.bodyLength).toBe(bigBody.length);

    // 50 hits with long paths are more than 20 KB: the list is cut, saying how to get the rest.
    const now = Date.now();
    const long = Array.from({ length: 50 }, (_, i) =>
      makeRecord({
        createdAt: iso(now - 60_000 + i * 100),
        request: {
          method: 'GET',
          path: `/long/${'segment-'.repeat(120)}${String.fromCharCode(97 + (i % 26))}`,
        },
        response: { statusCode: 200 },
        timings: { duration: 5 },
      }),
    );
    await ingestAll(acct, acct.bucketSid, long);
    await waitFor(
      async () =>
        (await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid, 'path=/long/*')).length === 50,
      { timeoutMs: 30_000, what: '50 long requests stored' },
    );
    type Search = {
      hits: Rec[];
      truncated: { reason: string; shown: number; howToGetMore: string } | false;
      nextCursor: string | null;
      nextEndDate: string | null;
    };
    const res = await call(client, 'search_requests', { q: 'path:/long/*', limit: 50 });
    expect(res.isError).toBeFalsy();
    expect(res.content[0]!.text.length).toBeLessThanOrEqual(20_000);
    const cut = JSON.parse(res.content[0]!.text) as Search;
    expect(cut.hits.length).toBeGreaterThan(5);
    expect(cut.hits.length).toBeLessThan(50);
    expect(cut.truncated).toMatchObject({ reason: 'size', shown: cut.hits.length });
    expect((cut.truncated as { howToGetMore: string }).howToGetMore).toContain(`cursor=${cut.nextCursor}`);
    // Newest first, compact, no bodies; the next call continues where the cut list ended.
    const times = cut.hits.map((h) => h.createdAt as string);
    expect([...times].sort().reverse()).toEqual(times);
    expect(Object.keys(cut.hits[0]!).sort()).toEqual(
      ['bucketSid', 'createdAt', 'durationMs', 'endpoint', 'method', 'path', 'sid', 'status'].sort(),
    );
    const rest = await ok<Search>(client, 'search_requests', {
      q: 'path:/long/*',
      limit: 50,
      endDate: cut.nextEndDate!,
    });
    const seen = new Set([...cut.hits, ...rest.hits].map((h) => h.sid));
    expect(rest.hits.every((h) => !cut.hits.some((c) => c.sid === h.sid))).toBe(true);
    expect(seen.size).toBeGreaterThan(cut.hits.length);

    const pay = await ok<Search>(client, 'search_requests', {
      q: 'method:POST path:/pay status:2xx',
      limit: 50,
    });
    expect(pay.hits.map((h) => h.sid)).toContain(stored.sid);
    expect(pay.hits.every((h) => h.method === 'POST' && h.path === '/pay')).toBe(true);
    expect(pay.truncated).toBe(false);
    expect(JSON.stringify(pay)).not.toContain('xxxxxxxx');

    // Another environment's token sees none of it.
    const staging = await connect((await mcpToken(acct, 'stag01')).token);
    expect((await ok<Search>(staging, 'search_requests', { limit: 50 })).hits).toEqual([]);
    expect(await fails(staging, 'get_request', { requestSid: stored.sid })).toContain(stored.sid);
    // With nothing to see, every tool still answers (zeros and empty lists).
    const empty = await ok<{ current: { requests: number }; topEndpoints: unknown[] }>(
      staging,
      'get_metrics_summary',
    );
    expect(empty.current.requests).toBe(0);
    expect(empty.topEndpoints).toEqual([]);
    expect((await ok<{ metrics: unknown[] }>(staging, 'get_endpoint_performance')).metrics).toEqual([]);
    expect((await ok<{ totalErrors: number }>(staging, 'get_errors')).totalErrors).toBe(0);
    expect((await ok<{ points: unknown[][] }>(staging, 'get_timeseries')).points.length).toBe(25);
    expect((await ok<{ workflows: unknown[] }>(staging, 'list_workflows')).workflows).toEqual([]);
    expect((await ok<{ executions: unknown[] }>(staging, 'list_workflow_executions')).executions).toEqual([]);
    expect((await ok<{ buckets: Rec[] }>(staging, 'list_buckets')).buckets).toEqual([
      expect.objectContaining({ sid: acct.bucketSid, lastTrafficAt: null }),
    ]);
  });
});

describe('MCP read-only tools: scope', () => {
  it('a token limited to one bucket sees nothing of another: every tool, every list', async () => {
    const acct = await newAccount();
    const b1 = acct.bucketSid;
    const b2 = (
      await api(acct.apiToken).post<{ sid: string }>(`/v1/accounts/${acct.accountSid}/buckets`, {
        name: 'b2',
      })
    ).body.sid;
    const workflow = async (bucketSid: string, name: string, path: string) => {
      const res = await api(acct.apiToken).post<{ sid: string }>(
        `/v1/accounts/${acct.accountSid}/environments/prod01/buckets/${bucketSid}/workflows`,
        {
          name,
          trigger: { type: 'request', conditions: [{ path }] },
          // Nothing listens on port 9: the execution is recorded, its delivery fails.
          actions: [{ type: 'webhook', config: { url: 'http://127.0.0.1:9/hook', body: { m: 'x' } } }],
        },
      );
      expect(res.status, res.text).toBe(201);
      return res.body.sid;
    };
    const w1 = await workflow(b1, 'b1 alert', '/b1-only*');
    const w2 = await workflow(b2, 'b2 alert', '/b2-only*');
    const e2 = await restEvent(acct, { type: 'deployment', name: 'b2 deploy', bucketSids: [b2] });

    // Traffic in both buckets, until both workflows have fired (they load within moments).
    const client = await connect((await mcpToken(acct, 'prod01', [b1])).token);
    const all = await connect((await mcpToken(acct, 'prod01')).token);
    type Execs = { executions: { workflowSid: string; workflowName: string; triggerType: string }[] };
    await waitFor(
      async () => {
        const now = Date.now();
        await ingestAll(acct, b1, [rec(now - 1000, { path: '/b1-only', duration: 10 })]);
        await ingestAll(acct, b2, [rec(now - 1000, { path: '/b2-only', duration: 10 })]);
        const seen = await waitFor(
          async () => {
            const execs = (await ok<Execs>(all, 'list_workflow_executions', { limit: 50 })).executions;
            return execs.length > 0 ? execs : undefined;
          },
          { timeoutMs: 10_000, what: 'an execution' },
        ).catch(() => []);
        const fired = new Set(seen.map((e) => e.workflowSid));
        return fired.has(w1) && fired.has(w2);
      },
      { timeoutMs: 50_000, intervalMs: 500, what: 'both workflows fired' },
    );
    await waitFor(
      async () =>
        (await listAllRequests(acct.apiToken, acct.accountSid, b2)).length > 0 &&
        (await listAllRequests(acct.apiToken, acct.accountSid, b1)).length > 0,
      { what: 'requests stored in both buckets' },
    );
    const b2Request = (await listAllRequests(acct.apiToken, acct.accountSid, b2))[0]!;

    // Whatever a tool lists, it lists b1 only.
    const buckets = await ok<{ buckets: { sid: string }[] }>(client, 'list_buckets');
    expect(buckets.buckets.map((b) => b.sid)).toEqual([b1]);
    const allBuckets = await ok<{ buckets: { sid: string }[] }>(all, 'list_buckets');
    expect(allBuckets.buckets.map((b) => b.sid).sort()).toEqual([b1, b2].sort());

    const perf = await ok<{ metrics: { group: string }[] }>(client, 'get_endpoint_performance');
    expect(perf.metrics.map((m) => m.group)).toEqual(['/b1-only']);
    const perfAll = await ok<{ metrics: { group: string }[] }>(all, 'get_endpoint_performance');
    expect(perfAll.metrics.map((m) => m.group).sort()).toEqual(['/b1-only', '/b2-only']);
    const summary = await ok<{ topEndpoints: { path: string }[]; byBucket: { bucketSid: string }[] }>(
      client,
      'get_metrics_summary',
    );
    expect(summary.topEndpoints.map((e) => e.path)).toEqual(['/b1-only']);
    expect(summary.byBucket.map((b) => b.bucketSid)).toEqual([b1]);
    const series = await ok<{ events: { sid: string }[] }>(client, 'get_timeseries');
    expect(series.events.map((e) => e.sid)).not.toContain(e2);
    const seriesAll = await ok<{ events: { sid: string }[] }>(all, 'get_timeseries');
    expect(seriesAll.events.map((e) => e.sid)).toContain(e2);
    const hits = await ok<{ hits: { bucketSid: string; path: string }[] }>(client, 'search_requests', {
      limit: 50,
    });
    expect(hits.hits.length).toBeGreaterThan(0);
    expect(hits.hits.every((h) => h.bucketSid === b1 && h.path === '/b1-only')).toBe(true);
    const workflows = await ok<{ workflows: { sid: string; actions: Rec[] }[] }>(client, 'list_workflows');
    expect(workflows.workflows.map((w) => w.sid)).toEqual([w1]);
    expect(workflows.workflows[0]!.actions).toEqual([{ type: 'webhook', order: 0 }]);
    const execs = await ok<Execs>(client, 'list_workflow_executions', { limit: 50 });
    expect(execs.executions.length).toBeGreaterThan(0);
    expect(execs.executions.every((e) => e.workflowSid === w1 && e.workflowName === 'b1 alert')).toBe(true);
    expect((await ok<Execs>(client, 'list_workflow_executions', { workflowSid: w2 })).executions).toEqual([]);

    // Naming the other bucket is a tool error naming it, in every tool that takes a bucket.
    for (const [name, extra] of [
      ['get_metrics_summary', {}],
      ['get_endpoint_performance', {}],
      ['get_errors', {}],
      ['get_timeseries', {}],
      ['search_requests', {}],
      ['get_request', { requestSid: b2Request.sid }],
      ['compare_periods', { eventSid: e2 }],
      ['list_workflows', {}],
      ['list_workflow_executions', {}],
      ['list_events', {}],
    ] as [string, Rec][])
      expect(await fails(client, name, { ...extra, bucketSid: b2 }), name).toContain(b2);
    // Without the bucket named: the other bucket's request and event do not exist for this token.
    expect(await fails(client, 'get_request', { requestSid: b2Request.sid })).toContain(b2Request.sid);
    expect(await fails(client, 'compare_periods', { eventSid: e2 })).toContain(e2);
    // The same request through the all-bucket token.
    expect((await ok<{ sid: string }>(all, 'get_request', { requestSid: b2Request.sid })).sid).toBe(
      b2Request.sid,
    );
    // Another account's bucket is not a bucket of this account, whatever the token covers.
    const other = await newAccount();
    expect(await fails(all, 'get_endpoint_performance', { bucketSid: other.bucketSid })).toContain(
      other.bucketSid,
    );
    expect(await fails(all, 'search_requests', { bucketSid: other.bucketSid })).toContain(other.bucketSid);
  });
});

describe('MCP metrics tools: errorRate', () => {
  it('is the /v1 metrics’ value as it is (unrounded) in every tool that answers one', async () => {
    const acct = await newAccount();
    // One whole past hour, one endpoint, 1 error in 3 calls: 100 / 3 has no short decimal form.
    const T0 = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
    const records = [200, 200, 500].map((status, i) =>
      rec(T0 + (10 + i) * MINUTE, { path: '/thirds', duration: 20, status }),
    );
    await ingestAll(acct, acct.bucketSid, records);
    const start = iso(T0);
    const end = iso(T0 + HOUR);
    const range = `startDate=${start}&endDate=${end}&environmentSid=prod01`;
    await untilCounted(acct, range, 3);
    const third = 100 / 3;

    const restPerf = await api(acct.apiToken).get<{ metrics: { errorRate: number }[] }>(
      metricsPath(acct, `/performance?${range}`),
    );
    const restErrors = await api(acct.apiToken).get<{ errorRate: number }>(
      metricsPath(acct, `/errors?${range}`),
    );
    expect([restPerf.body.metrics[0]?.errorRate, restErrors.body.errorRate]).toEqual([third, third]);

    const client = await connect((await mcpToken(acct, 'prod01')).token);
    const args = { startDate: start, endDate: end };
    const summary = await ok<{ current: { errorRate: number }; byBucket: { errorRate: number }[] }>(
      client,
      'get_metrics_summary',
      args,
    );
    const errors = await ok<{ errorRate: number; errorsByEndpoint: { errorRate: number }[] }>(
      client,
      'get_errors',
      args,
    );
    const perf = await ok<{ metrics: { errorRate: number }[] }>(client, 'get_endpoint_performance', args);
    const cmp = await ok<{ endpoints: { after: { errorRate: number } | null }[] }>(
      client,
      'compare_periods',
      {
        beforeStartDate: iso(T0 - HOUR),
        beforeEndDate: iso(T0 - 1),
        afterStartDate: start,
        afterEndDate: iso(T0 + HOUR - 1),
      },
    );
    expect({
      summary: summary.current.errorRate,
      summaryBucket: summary.byBucket[0]?.errorRate,
      errors: errors.errorRate,
      errorsEndpoint: errors.errorsByEndpoint[0]?.errorRate,
      performance: perf.metrics[0]?.errorRate,
      compare: cmp.endpoints[0]?.after?.errorRate,
    }).toEqual({
      summary: third,
      summaryBucket: third,
      errors: third,
      errorsEndpoint: third,
      performance: third,
      compare: third,
    });
  }, 120_000);
});
