import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { loadDescriptor } from '../../services/ingest/otlp/generate-descriptor.js';
import {
  decodeExportResponse,
  decodeStatus,
  encodeExportRequest,
} from '../../services/ingest/otlp/otlp.codec.js';
import OTLP_TRACE_DESCRIPTOR from '../../schemas/otlp/trace.descriptor.json' with { type: 'json' };
import { listAllRequests, newAccount, testEnv, waitFor, type TestAccount } from '../helpers/client.js';
import { scopedToken } from '../helpers/scoped-token.js';
import { freePort, startService } from '../helpers/service-process.js';

type Rec = Record<string, unknown> & {
  direction: string;
  endpoint: string | null;
  environmentSid: string | null;
  request: Record<string, unknown> & { path: string; method: string; url: string; host: string };
  response: { statusCode: number | null } | null;
  timings: { duration: number; start: number; end: number } | null;
  tags: { key: string; value: string }[];
};

const tracesUrl = () => `${testEnv().ingestUrl}/v1/traces`;
const tagOf = (r: Rec, key: string) => r.tags.find((t) => t.key === key)?.value;

async function post(
  body: Buffer | string,
  headers: Record<string, string>,
): Promise<{ status: number; type: string; bytes: Buffer; headers: Headers }> {
  const res = await fetch(tracesUrl(), { method: 'POST', headers, body });
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    bytes: Buffer.from(await res.arrayBuffer()),
    headers: res.headers,
  };
}

/** Stored requests of the account's bucket once `n` are there. */
async function stored(acct: TestAccount, n: number): Promise<Rec[]> {
  return waitFor(
    async () => {
      const all = (await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid)) as Rec[];
      return all.length >= n ? all : undefined;
    },
    { timeoutMs: 40_000, what: `${n} stored requests` },
  );
}

// ---------------------------------------------------------------------------------------------
// The instrumented app (test/fixtures/otel-app.ts) in a child process.

interface App {
  port: number;
  proc: ChildProcess;
  flush(): Promise<{ exports: { code: number; error?: string; spans: number }[]; warnings: string[] }>;
}
const apps: ChildProcess[] = [];

async function startApp(env: Record<string, string>): Promise<App> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(process.cwd(), 'test', 'fixtures', 'otel-app.ts')],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  apps.push(proc);
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`otel-app did not start: ${stderr}`)), 30_000);
    proc.once('exit', (code) => reject(new Error(`otel-app exited ${code}: ${stderr}`)));
    readline.createInterface({ input: proc.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
    });
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    port,
    proc,
    flush: async () => (await (await fetch(`${base}/__flush`, { method: 'POST' })).json()) as never,
  };
}

afterAll(() => {
  for (const p of apps) if (p.exitCode === null) p.kill('SIGKILL');
});

/** Drives the app with real HTTP: two user pages, each calling /inventory of the app. */
async function drive(app: App): Promise<void> {
  for (const id of ['7', 'missing']) {
    const res = await fetch(`http://127.0.0.1:${app.port}/users/${id}?fields=name`, {
      headers: { 'user-agent': 'otlp-test' },
    });
    expect(res.status).toBe(200);
    await res.text();
  }
}

/** Every span of `drive` stored with the right fields; one INTERNAL span per page skipped. */
async function expectStoredSpans(acct: TestAccount, app: App, service: string): Promise<Rec[]> {
  // The exporter's batches: flush until all 8 spans (4 HTTP server, 2 client, 2 internal) went.
  const flushed = await waitFor(
    async () => {
      const f = await app.flush();
      return f.exports.reduce((n, e) => n + e.spans, 0) >= 8 ? f : undefined;
    },
    { what: 'the app exported its spans' },
  );
  expect(flushed.exports.every((e) => e.code === 0)).toBe(true);
  // The exporter logs each partial success; together they count the two INTERNAL spans.
  const rejected = flushed.warnings
    .filter((w) => w.includes('Partial Success'))
    .map(
      (w) => JSON.parse(w.slice(w.indexOf('{'))) as { rejectedSpans: number | string; errorMessage: string },
    );
  expect(rejected.reduce((n, p) => n + Number(p.rejectedSpans), 0)).toBe(2);
  for (const p of rejected) expect(p.errorMessage).toMatch(/not HTTP server or client spans/);

  const records = await stored(acct, 6);
  expect(records).toHaveLength(6);
  const servers = records.filter((r) => r.direction === 'in');
  const clients = records.filter((r) => r.direction === 'out');
  expect(servers).toHaveLength(4);
  expect(clients).toHaveLength(2);

  const page = servers.find((r) => r.request.path === '/users/7')!;
  expect(page).toBeDefined();
  expect(page.request.method).toBe('GET');
  expect(page.endpoint).toBe('/users/:id');
  expect(page.response?.statusCode).toBe(200);
  expect(page.request.host).toMatch(/^(localhost|127\.0\.0\.1)$/);
  expect(page.request.url).toMatch(
    new RegExp(`^http://(localhost|127\\.0\\.0\\.1):${app.port}/users/7\\?fields=name$`),
  );
  expect(page.request.queryString).toEqual({ fields: 'name' });
  expect((page.request.headers as Record<string, string>)['user-agent']).toBe('otlp-test');
  expect(page.timings!.duration).toBeGreaterThan(0);
  expect(page.timings!.end - page.timings!.start).toBeCloseTo(page.timings!.duration, 2);
  expect(tagOf(page, 'service.name')).toBe(service);
  expect(tagOf(page, 'otel.trace_id')).toMatch(/^[0-9a-f]{32}$/);
  expect(tagOf(page, 'otel.span_id')).toMatch(/^[0-9a-f]{16}$/);

  // The page's outgoing call: a CLIENT span in the same trace, child of the page's span.
  const call = clients.find(
    (r) => r.request.path === '/inventory' && tagOf(r, 'otel.parent_span_id') === tagOf(page, 'otel.span_id'),
  )!;
  expect(call).toBeDefined();
  expect(tagOf(call, 'otel.trace_id')).toBe(tagOf(page, 'otel.trace_id'));
  expect(call.request.url).toBe(`http://127.0.0.1:${app.port}/inventory?user=7`);
  expect(call.request.host).toBe('127.0.0.1');
  expect(call.response?.statusCode).toBe(200);

  // The called route, answered 404 for the missing user.
  const missing = servers.find(
    (r) => r.request.path === '/inventory' && r.request.url.endsWith('user=missing'),
  )!;
  expect(missing).toBeDefined();
  expect(missing.endpoint).toBe('/inventory');
  expect(missing.response?.statusCode).toBe(404);
  expect(missing.request.queryString).toEqual({ user: 'missing' });
  expect(missing.request.ip).toBe('127.0.0.1');
  return records;
}

describe('OTLP/HTTP trace ingest (POST /v1/traces)', () => {
  it('the vendored descriptor matches the vendored .proto files', async () => {
    expect(JSON.parse(JSON.stringify(OTLP_TRACE_DESCRIPTOR))).toEqual(await loadDescriptor());
  });

  it('an app with the OpenTelemetry Node SDK and the OTLP proto exporter lands its HTTP spans', async () => {
    const acct = await newAccount();
    const app = await startApp({
      OTEL_APP_ENDPOINT: tracesUrl(),
      OTEL_APP_TOKEN: acct.apiToken,
      OTEL_APP_ENCODING: 'proto',
      OTEL_APP_BUCKET: acct.bucketSid,
      OTEL_APP_BUCKET_VIA: 'header',
      OTEL_APP_SERVICE: 'shop-proto',
      OTEL_APP_ENVIRONMENT: 'staging',
      // The older HTTP semantic conventions (http.method, http.target, net.host.name, ...).
      OTEL_SEMCONV_STABILITY_OPT_IN: '',
    });
    await drive(app);
    const records = await expectStoredSpans(acct, app, 'shop-proto');
    // `staging` is not an environment sid: a tag, no environment.
    expect(
      records.every((r) => r.environmentSid === null && tagOf(r, 'deployment.environment') === 'staging'),
    ).toBe(true);
  });

  it('an app with the OTLP JSON exporter (gzip, bucket as a resource attribute) lands its HTTP spans', async () => {
    const acct = await newAccount();
    const app = await startApp({
      OTEL_APP_ENDPOINT: tracesUrl(),
      OTEL_APP_TOKEN: acct.apiToken,
      OTEL_APP_ENCODING: 'json',
      OTEL_APP_BUCKET: acct.bucketSid,
      OTEL_APP_BUCKET_VIA: 'resource',
      OTEL_APP_GZIP: '1',
      OTEL_APP_SERVICE: 'shop-json',
      OTEL_APP_ENVIRONMENT: 'prod01',
      // The current HTTP semantic conventions (http.request.method, url.path, server.address, ...).
      OTEL_SEMCONV_STABILITY_OPT_IN: 'http',
    });
    await drive(app);
    const records = await expectStoredSpans(acct, app, 'shop-json');
    // An environment sid as deployment.environment.name is the records' environment.
    expect(records.every((r) => r.environmentSid === 'prod01')).toBe(true);
  });

  const now = BigInt(Date.now() - 5_000) * 1_000_000n;
  const attr = (key: string, v: string | number) => ({
    key,
    value: typeof v === 'number' ? { intValue: v } : { stringValue: v },
  });
  /** An export with one current-convention and one older-convention HTTP span and three others. */
  function sampleExport(bucket?: string) {
    const trace = randomBytes(16).toString('hex');
    const span = (kind: number, attributes: ReturnType<typeof attr>[], durNs = 25_500_000n) => ({
      traceId: trace,
      spanId: randomBytes(8).toString('hex'),
      name: 'span',
      kind,
      startTimeUnixNano: String(now),
      endTimeUnixNano: String(now + durNs),
      attributes,
    });
    return {
      resourceSpans: [
        {
          resource: {
            attributes: [
              attr('service.name', 'billing'),
              ...(bucket ? [attr('tapline.bucket', bucket)] : []),
            ],
          },
          scopeSpans: [
            {
              scope: { name: 'manual' },
              spans: [
                span(2, [
                  attr('http.request.method', 'PUT'),
                  attr('url.scheme', 'https'),
                  attr('url.path', '/invoices/17'),
                  attr('url.query', 'draft=1'),
                  attr('server.address', 'billing.example.com'),
                  attr('http.route', '/invoices/{id}'),
                  attr('http.response.status_code', 201),
                  attr('client.address', '203.0.113.9'),
                ]),
                span(3, [
                  attr('http.method', 'post'),
                  attr('http.url', 'https://psp.example.net/v2/charges?idem=abc'),
                  attr('http.status_code', '502'),
                  attr('net.peer.name', 'psp.example.net'),
                ]),
                span(1, [attr('db.system', 'postgresql')]),
                span(2, [attr('rpc.system', 'grpc')]),
                span(4, [attr('messaging.system', 'kafka')]),
              ],
            },
          ],
        },
      ],
    };
  }

  it('maps both attribute conventions and counts other spans as a partial success (protobuf and JSON)', async () => {
    const acct = await newAccount();
    const pb = await post(encodeExportRequest(sampleExport()), {
      authorization: `Bearer ${acct.apiToken}`,
      'content-type': 'application/x-protobuf',
      'x-tapline-bucket': acct.bucketSid,
    });
    expect(pb.status).toBe(200);
    expect(pb.type).toBe('application/x-protobuf');
    const pbAnswer = decodeExportResponse(pb.bytes);
    expect(pbAnswer.partialSuccess?.rejectedSpans).toBe(3);
    expect(pbAnswer.partialSuccess?.errorMessage).toMatch(/^3 spans are not HTTP server or client spans/);

    const js = await post(JSON.stringify(sampleExport(acct.bucketSid)), {
      authorization: `Bearer ${acct.apiToken}`,
      'content-type': 'application/json',
    });
    expect(js.status).toBe(200);
    expect(js.type).toMatch(/^application\/json/);
    expect(JSON.parse(js.bytes.toString())).toEqual({
      // proto3 JSON writes int64 as a string.
      partialSuccess: { rejectedSpans: '3', errorMessage: expect.stringMatching(/not HTTP/) as unknown },
    });

    const records = await stored(acct, 4);
    expect(records).toHaveLength(4);
    const puts = records.filter((r) => r.request.method === 'PUT');
    expect(puts).toHaveLength(2);
    for (const r of puts) {
      expect(r).toMatchObject({
        direction: 'in',
        endpoint: '/invoices/{id}',
        request: {
          url: 'https://billing.example.com/invoices/17?draft=1',
          host: 'billing.example.com',
          path: '/invoices/17',
          port: 443,
          queryString: { draft: '1' },
          ip: '203.0.113.9',
        },
        response: { statusCode: 201 },
      });
      expect(r.timings!.duration).toBeCloseTo(25.5, 3);
      expect(Date.parse(r.createdAt as string)).toBe(Math.floor(Number(now / 1_000_000n)));
      expect(tagOf(r, 'service.name')).toBe('billing');
    }
    const posts = records.filter((r) => r.request.method === 'POST');
    expect(posts).toHaveLength(2);
    for (const r of posts) {
      expect(r).toMatchObject({
        direction: 'out',
        request: {
          url: 'https://psp.example.net/v2/charges?idem=abc',
          host: 'psp.example.net',
          path: '/v2/charges',
        },
        response: { statusCode: 502 },
      });
    }
  });

  it('reads the port of the older http.host (the Host header) into the URL, host and port', async () => {
    const acct = await newAccount();
    const trace = randomBytes(16).toString('hex');
    const span = (hostHeader: string, target: string) => ({
      traceId: trace,
      spanId: randomBytes(8).toString('hex'),
      name: 'GET',
      kind: 2,
      startTimeUnixNano: String(now),
      endTimeUnixNano: String(now + 3_000_000n),
      attributes: [
        attr('http.method', 'GET'),
        attr('http.scheme', 'http'),
        attr('http.host', hostHeader),
        attr('http.target', target),
        attr('http.status_code', 200),
      ],
    });
    const res = await post(
      JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [attr('service.name', 'legacy')] },
            scopeSpans: [
              {
                spans: [
                  span('legacy.example.com:8080', '/old/7?q=1'),
                  span('[2001:db8::5]:9443', '/v6/1'),
                  span('plain.example.com', '/plain'),
                ],
              },
            ],
          },
        ],
      }),
      {
        authorization: `Bearer ${acct.apiToken}`,
        'content-type': 'application/json',
        'x-tapline-bucket': acct.bucketSid,
      },
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.bytes.toString())).toEqual({});

    const records = await stored(acct, 3);
    const byPath = (p: string) => records.find((r) => r.request.path === p)!;
    expect(byPath('/old/7').request).toMatchObject({
      url: 'http://legacy.example.com:8080/old/7?q=1',
      host: 'legacy.example.com',
      port: 8080,
      queryString: { q: '1' },
    });
    expect(byPath('/v6/1').request).toMatchObject({
      url: 'http://[2001:db8::5]:9443/v6/1',
      host: '2001:db8::5',
      port: 9443,
    });
    expect(byPath('/plain').request).toMatchObject({
      url: 'http://plain.example.com/plain',
      host: 'plain.example.com',
    });
  });

  it('accepts a gzip protobuf export and an empty one', async () => {
    const acct = await newAccount();
    const headers = {
      authorization: `Bearer ${acct.apiToken}`,
      'content-type': 'application/x-protobuf',
      'x-tapline-bucket': acct.bucketSid,
    };
    const gz = await post(gzipSync(encodeExportRequest(sampleExport())), {
      ...headers,
      'content-encoding': 'gzip',
    });
    expect(gz.status).toBe(200);
    expect(decodeExportResponse(gz.bytes).partialSuccess?.rejectedSpans).toBe(3);
    const empty = await post(Buffer.alloc(0), headers);
    expect(empty.status).toBe(200);
    expect(decodeExportResponse(empty.bytes).partialSuccess).toBeUndefined();
  });

  it('refuses bad tokens, missing scope, garbage bodies, unknown buckets and other media types', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const body = encodeExportRequest(sampleExport());
    const pbHeaders = (token: string) => ({
      authorization: `Bearer ${token}`,
      'content-type': 'application/x-protobuf',
      'x-tapline-bucket': acct.bucketSid,
    });
    const jsonHeaders = (token: string) => ({ ...pbHeaders(token), 'content-type': 'application/json' });

    // Protobuf requests get a google.rpc.Status in protobuf; JSON ones the error envelope.
    const badPb = await post(body, pbHeaders('at_live_nope'));
    expect(badPb.status).toBe(401);
    expect(badPb.type).toBe('application/x-protobuf');
    expect(decodeStatus(badPb.bytes)).toEqual({
      code: 16,
      message: expect.stringMatching(/^INVALID_TOKEN: /) as unknown,
    });
    const badJson = await post(JSON.stringify(sampleExport()), jsonHeaders('at_live_nope'));
    expect(badJson.status).toBe(401);
    expect(JSON.parse(badJson.bytes.toString())).toMatchObject({
      success: false,
      error: { code: 'INVALID_TOKEN' },
    });
    const noToken = await post(body, { 'content-type': 'application/x-protobuf' });
    expect(noToken.status).toBe(401);

    const readOnly = await scopedToken(acct, ['requests:read']);
    const forbidden = await post(JSON.stringify(sampleExport()), jsonHeaders(readOnly));
    expect(forbidden.status).toBe(403);
    expect(JSON.parse(forbidden.bytes.toString())).toMatchObject({
      success: false,
      error: { code: 'FORBIDDEN' },
    });

    const garbagePb = await post(Buffer.from([0xff, 0xff, 0xff, 0xff]), pbHeaders(acct.apiToken));
    expect(garbagePb.status).toBe(400);
    expect(decodeStatus(garbagePb.bytes).code).toBe(3);
    const garbageJson = await post('{"resourceSpans": [', jsonHeaders(acct.apiToken));
    expect(garbageJson.status).toBe(400);
    expect(JSON.parse(garbageJson.bytes.toString())).toMatchObject({
      success: false,
      error: { code: 'VALIDATION_ERROR' },
    });
    const wrongShape = await post('{"resourceSpans": 5}', jsonHeaders(acct.apiToken));
    expect(wrongShape.status).toBe(400);
    const badId = await post(
      JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'not-hex', kind: 2 }] }] }] }),
      jsonHeaders(acct.apiToken),
    );
    expect(badId.status).toBe(400);

    // Another account's bucket is as unknown as a missing one, in the header or the resource.
    const foreign = await post(body, { ...pbHeaders(acct.apiToken), 'x-tapline-bucket': other.bucketSid });
    expect(foreign.status).toBe(404);
    expect(decodeStatus(foreign.bytes).code).toBe(5);
    const { 'x-tapline-bucket': _unused, ...noBucketHeaders } = jsonHeaders(acct.apiToken);
    const foreignResource = await post(JSON.stringify(sampleExport(other.bucketSid)), noBucketHeaders);
    expect(foreignResource.status).toBe(200);
    expect(JSON.parse(foreignResource.bytes.toString()).partialSuccess).toMatchObject({
      rejectedSpans: '5',
      errorMessage: expect.stringMatching(/which is not found/) as unknown,
    });
    const noBucket = await post(JSON.stringify(sampleExport()), noBucketHeaders);
    expect(noBucket.status).toBe(400);
    expect(JSON.parse(noBucket.bytes.toString())).toMatchObject({
      error: { code: 'VALIDATION_ERROR', message: expect.stringMatching(/X-Tapline-Bucket/) as unknown },
    });

    const text = await post('hello', { ...pbHeaders(acct.apiToken), 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(JSON.parse(text.bytes.toString())).toMatchObject({ error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });

    const wrongMethod = await fetch(tracesUrl());
    expect(wrongMethod.status).toBe(405);
  });

  it('counts exports against the ingest limits per token and per bucket (429, Retry-After)', async () => {
    // A second service (ingest and API roles, nothing consumed) on the run's Kafka and Postgres,
    // with small per-minute limits (docs/security.md "Limits").
    const env = testEnv();
    const dataDir = path.join(env.dataDir, `otlp-limits-${process.pid}`);
    fs.mkdirSync(dataDir, { recursive: true });
    const svc = await startService(
      {
        ROLES: 'ingest,api',
        INGEST_PROCESS: 'inline',
        PORT: String(await freePort()),
        INGEST_PORT: String(await freePort()),
        DATA_DIR: dataDir,
        KAFKA_BROKERS: env.kafkaBrokers.join(','),
        DATABASE_URL: env.databaseUrl,
        INGEST_RATE_LIMIT_TOKEN: '3',
        INGEST_RATE_LIMIT_BUCKET: '5',
      },
      path.join(dataDir, 'service.log'),
    );
    try {
      const acct = await newAccount();
      const send = (token: string, encoding: 'protobuf' | 'json') =>
        fetch(`${svc.ingestUrl}/v1/traces`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json',
            'x-tapline-bucket': acct.bucketSid,
          },
          body:
            encoding === 'protobuf' ? encodeExportRequest(sampleExport()) : JSON.stringify(sampleExport()),
        });
      for (let i = 0; i < 3; i++) expect((await send(acct.apiToken, 'protobuf')).status).toBe(200);
      const pb = await send(acct.apiToken, 'protobuf');
      expect(pb.status).toBe(429);
      expect(Number(pb.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(pb.headers.get('content-type')).toBe('application/x-protobuf');
      expect(decodeStatus(Buffer.from(await pb.arrayBuffer()))).toEqual({
        code: 8,
        message: expect.stringMatching(/^RATE_LIMIT_EXCEEDED: .*per token/) as unknown,
      });
      const js = await send(acct.apiToken, 'json');
      expect(js.status).toBe(429);
      expect(Number(js.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await js.json()).toMatchObject({
        success: false,
        error: { code: 'RATE_LIMIT_EXCEEDED', details: { per: 'token' } },
      });

      // Another token of the account: a window of its own, but the bucket's 5 calls are spent
      // after 2 more (the 3 accepted above count; calls refused per token never reach the bucket).
      const second = await scopedToken(acct, ['requests:write']);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await send(second, 'json')).status);
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await svc.stop();
    }
  }, 240_000);

  it('answers 413 beyond the body limit', async () => {
    const acct = await newAccount();
    const big = { ...sampleExport(), padding: 'x'.repeat(6 * 1024 * 1024) };
    const res = await post(JSON.stringify(big), {
      authorization: `Bearer ${acct.apiToken}`,
      'content-type': 'application/json',
      'x-tapline-bucket': acct.bucketSid,
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.bytes.toString())).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
  });
});
