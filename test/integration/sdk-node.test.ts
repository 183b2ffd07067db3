import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';
import Router from '@koa/router';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { Tapline, type TaplineOptions } from '../../sdk/node/src/index.js';
import {
  api,
  ingest,
  makeRecord,
  newAccount,
  testEnv,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';

// The Node.js SDK (sdk/node, docs/sdk.md) against the real stack: frameworks driven with real
// HTTP, records read back through the requests API; outages and the wire checked through a
// local proxy in front of the ingest listener.

type Stored = {
  sid: string;
  direction: string;
  endpoint: string | null;
  environmentSid: string | null;
  request: {
    method: string;
    path: string;
    host: string | null;
    url: string;
    queryString: Record<string, unknown> | null;
    headers: Record<string, unknown> | null;
    body: unknown;
    size?: number | null;
  };
  response: {
    statusCode: number;
    headers: Record<string, unknown> | null;
    body: unknown;
    size?: number | null;
  } | null;
  timings: { duration: number; phases?: Record<string, number | null> } | null;
  tags: { key: string; value: string }[];
};

async function storedRecords(a: TestAccount): Promise<Stored[]> {
  const out: Stored[] = [];
  for (let page = 1; page < 50; page++) {
    const res = await api(a.apiToken).get<{ hasMore: boolean; records: Stored[] }>(
      `/v1/accounts/${a.accountSid}/buckets/${a.bucketSid}/requests?limit=100&page=${page}`,
    );
    expect(res.status, res.text).toBe(200);
    out.push(...res.body.records);
    if (!res.body.hasMore) break;
  }
  return out;
}

async function waitStored(a: TestAccount, n: number, timeoutMs = 30_000): Promise<Stored[]> {
  return waitFor(
    async () => {
      const r = await storedRecords(a);
      return r.length >= n ? r : undefined;
    },
    { timeoutMs, intervalMs: 300, what: `${n} stored records` },
  );
}

/**
 * An HTTP proxy in front of the ingest listener on a fixed port: records every body it forwards
 * (gunzipped), can be stopped and started, and can forward a call but cut the connection before
 * the answer (`dropAnswers`), so the SDK re-sends a batch the ingest already accepted.
 */
class IngestProxy {
  bodies: string[] = [];
  forwarded = 0;
  dropAnswers = 0;
  /** answers given instead of forwarding, first to last (status and Retry-After) */
  answers: { status: number; retryAfter?: string }[] = [];
  /** when each call arrived (ms) */
  arrivals: number[] = [];
  private server: http.Server | undefined;
  private sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    for (const sock of this.sockets) sock.destroy();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.arrivals.push(Date.now());
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const scripted = this.answers.shift();
    if (scripted) {
      const h: Record<string, string> = { 'content-type': 'application/json' };
      if (scripted.retryAfter) h['retry-after'] = scripted.retryAfter;
      res.writeHead(scripted.status, h);
      res.end('{"success":false,"error":{"code":"UNAVAILABLE","message":"busy","details":{}}}');
      return;
    }
    const text = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw).toString() : raw.toString();
    this.bodies.push(text);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
    const answer = await fetch(this.target + req.url, {
      method: req.method,
      headers,
      body: raw.length ? raw : undefined,
    });
    const body = Buffer.from(await answer.arrayBuffer());
    this.forwarded++;
    if (this.dropAnswers > 0) {
      this.dropAnswers--;
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    res.end(body);
  }
}

const SDK_SOURCE = fileURLToPath(new URL('../../sdk/node/src/index.ts', import.meta.url));

/**
 * A host process of its own (node + tsx) with the SDK and the process events it handles: it
 * serves `/x/<n>`, prints `{"port"}` once the SDK has its settings, and with `exitAfter` closes
 * its server after that many calls so the event loop empties (`beforeExit`).
 */
function hostProcess(a: TestAccount, exitAfter: number) {
  const code = `
    import http from 'node:http';
    import { Tapline } from ${JSON.stringify(SDK_SOURCE)};
    const t = new Tapline({ endpoint: ${JSON.stringify(testEnv().ingestUrl)}, settingsEndpoint: ${JSON.stringify(testEnv().apiUrl)},
      bucketSid: ${JSON.stringify(a.bucketSid)}, token: ${JSON.stringify(a.apiToken)}, flushIntervalMs: 600000, captureOutgoing: false });
    let n = 0;
    const server = http.createServer(t.httpHandler((req, res) => {
      res.end('ok');
      if (++n === ${exitAfter}) { server.close(); server.closeAllConnections(); }
    }));
    server.listen(0, '127.0.0.1', async () => {
      while (!t.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 20));
      console.log(JSON.stringify({ port: server.address().port }));
    });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const port = new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => reject(new Error(`host exited before listening: ${out}`)));
  });
  cleanups.push(async () => child.kill('SIGKILL'));
  return { child, port, exited };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function sdk(a: TestAccount, over: Partial<TaplineOptions> = {}): Tapline {
  const t = new Tapline({
    endpoint: testEnv().ingestUrl,
    settingsEndpoint: testEnv().apiUrl,
    bucketSid: a.bucketSid,
    token: a.apiToken,
    environment: 'prod01',
    tags: { service: 'sdk-test' },
    handleProcessEvents: false,
    captureOutgoing: false,
    flushIntervalMs: 200,
    retryBaseMs: 50,
    retryMaxMs: 500,
    circuitOpenMs: 300,
    circuitMaxOpenMs: 1000,
    requestTimeoutMs: 5000,
    ...over,
  });
  cleanups.push(() => t.shutdown(2000));
  return t;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function byPath(records: Stored[], method: string, path: string): Stored {
  const r = records.find(
    (x) => x.request.method === method && x.request.path === path && x.direction === 'in',
  );
  expect(r, `${method} ${path} stored`).toBeDefined();
  return r!;
}

async function settled(t: Tapline): Promise<void> {
  await waitFor(() => t.stats().settingsLoaded, { what: 'SDK settings' });
}

describe('Node.js SDK against the real stack', () => {
  it('Express: every call lands with its fields and route template', async () => {
    const a = await newAccount();
    // A logger that throws and a sampled-out route: neither may reach the host.
    const throwing = () => {
      throw new Error('logger down');
    };
    const t = sdk(a, {
      sampling: { 'GET /skip/:id': 0 },
      debug: true,
      logger: { debug: throwing, warn: throwing },
    });
    const app = express();
    app.use(t.express());
    app.use(express.json());
    app.get('/skip/:id', (_req, res) => res.send('skipped'));
    app.get('/users/:id', (req, res) => {
      res.setHeader('x-served-by', 'express');
      res.json({ id: req.params.id });
    });
    app.post('/orders', (req, res) => res.status(201).json({ created: true, items: req.body.items }));
    const v2 = express.Router();
    v2.get('/items/:itemId/parts/:partId', (_req, res) => res.type('text/plain').send('part'));
    app.use('/api/v2', v2);
    const base = await listen(http.createServer(app));
    await settled(t);

    expect(
      (await fetch(`${base}/users/42?expand=orders&x=1`, { headers: { 'x-trace': 'abc' } })).status,
    ).toBe(200);
    const post = await fetch(`${base}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items: [1, 2] }),
    });
    expect(post.status).toBe(201);
    expect((await fetch(`${base}/api/v2/items/7/parts/9`)).status).toBe(200);
    expect((await fetch(`${base}/nowhere`)).status).toBe(404);
    expect((await fetch(`${base}/skip/1`)).status).toBe(200);
    expect(await t.flush(10_000)).toBe(true);

    const stored = await waitStored(a, 4);
    expect(stored).toHaveLength(4);
    const get = byPath(stored, 'GET', '/users/42');
    expect(get.endpoint).toBe('/users/:id');
    expect(get.direction).toBe('in');
    expect(get.environmentSid).toBe('prod01');
    expect(get.request.host).toBe('127.0.0.1');
    expect(get.request.url).toBe(`${base}/users/42?expand=orders&x=1`);
    expect(get.request.queryString).toEqual({ expand: 'orders', x: '1' });
    expect(get.request.headers?.['x-trace']).toBe('abc');
    expect(get.response?.statusCode).toBe(200);
    expect(get.response?.headers?.['x-served-by']).toBe('express');
    expect(JSON.parse(get.response?.body as string)).toEqual({ id: '42' });
    expect(get.timings?.duration).toBeGreaterThan(0);
    expect(get.tags).toEqual(
      expect.arrayContaining([
        { key: 'service', value: 'sdk-test' },
        { key: 'sdk', value: 'tapline-node/0.1.0' },
      ]),
    );
    expect(get.sid).toMatch(/^req_[A-Za-z0-9]{27}$/);
    const order = byPath(stored, 'POST', '/orders');
    expect(order.endpoint).toBe('/orders');
    expect(order.response?.statusCode).toBe(201);
    expect(JSON.parse(order.request.body as string)).toEqual({ items: [1, 2] });
    expect(byPath(stored, 'GET', '/api/v2/items/7/parts/9').endpoint).toBe(
      '/api/v2/items/:itemId/parts/:partId',
    );
    const missing = byPath(stored, 'GET', '/nowhere');
    expect(missing.response?.statusCode).toBe(404);
    // No framework route: the processor derives the template from the path.
    expect(missing.endpoint).toBe('/nowhere');
    expect(t.stats()).toMatchObject({
      captured: 4,
      skipped: 1,
      sent: 4,
      dropped: 0,
      rejected: 0,
      internalErrors: 0,
    });
    expect(stored.some((r) => r.request.path === '/skip/1')).toBe(false);
  });

  it('Fastify and Koa: templates, bodies and statuses', async () => {
    const a = await newAccount();
    const t = sdk(a);
    const fastify = Fastify();
    await fastify.register(t.fastify);
    fastify.get('/items/:id', async (req) => ({ item: (req.params as { id: string }).id }));
    fastify.post('/login', async (_req, reply) => reply.code(401).send({ error: 'nope' }));
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    cleanups.push(() => fastify.close());
    const fBase = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`;

    const koa = new Koa();
    const router = new Router();
    router.get('/orders/:orderId', (ctx) => {
      ctx.body = { order: ctx.params.orderId };
    });
    koa.use(t.koa());
    koa.use(router.routes());
    const kBase = await listen(http.createServer(koa.callback()));
    await settled(t);

    expect((await fetch(`${fBase}/items/5`)).status).toBe(200);
    const login = await fetch(`${fBase}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'ann' }),
    });
    expect(login.status).toBe(401);
    expect((await fetch(`${kBase}/orders/77?full=1`)).status).toBe(200);
    expect(await t.flush(10_000)).toBe(true);

    const stored = await waitStored(a, 3);
    expect(stored).toHaveLength(3);
    const item = byPath(stored, 'GET', '/items/5');
    expect(item.endpoint).toBe('/items/:id');
    expect(JSON.parse(item.response?.body as string)).toEqual({ item: '5' });
    expect(String(item.response?.headers?.['content-type'])).toContain('application/json');
    const l = byPath(stored, 'POST', '/login');
    expect(l.endpoint).toBe('/login');
    expect(l.response?.statusCode).toBe(401);
    expect(JSON.parse(l.request.body as string)).toEqual({ user: 'ann' });
    const order = byPath(stored, 'GET', '/orders/77');
    expect(order.endpoint).toBe('/orders/:orderId');
    expect(order.request.queryString).toEqual({ full: '1' });
    expect(JSON.parse(order.response?.body as string)).toEqual({ order: '77' });
  });

  it('plain node:http and outgoing fetch / node:http calls (diagnostics channels)', async () => {
    const a = await newAccount();
    const upstream = await listen(
      http.createServer((req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ upstream: req.url }));
      }),
    );
    const t = sdk(a, { captureOutgoing: true });
    const server = http.createServer(
      t.httpHandler((req, res) => {
        void (async () => {
          const viaFetch = await (await fetch(`${upstream}/from-fetch?n=1`)).json();
          const viaHttp = await new Promise<string>((resolve) =>
            http.get(`${upstream}/from-http`, (r) => {
              let s = '';
              r.setEncoding('utf8');
              r.on('data', (c: string) => (s += c));
              r.on('end', () => resolve(s));
            }),
          );
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ viaFetch, viaHttp: JSON.parse(viaHttp), path: req.url }));
        })();
      }),
    );
    const base = await listen(server);
    await settled(t);
    const answer = await new Promise<number>((resolve) =>
      http.get(`${base}/plain/1`, (r) => {
        r.resume();
        r.on('end', () => resolve(r.statusCode ?? 0));
      }),
    );
    expect(answer).toBe(200);
    expect(await t.flush(10_000)).toBe(true);
    await t.shutdown(2000);

    // in: /plain/1; out: the test's own call to /plain/1, /from-fetch, /from-http
    const stored = await waitStored(a, 4);
    const plain = byPath(stored, 'GET', '/plain/1');
    // No framework route: the processor's template of the path.
    expect(plain.endpoint).toBe('/plain/{id}');
    expect(JSON.parse(plain.response?.body as string).viaFetch).toEqual({ upstream: '/from-fetch?n=1' });
    const outs = stored.filter((r) => r.direction === 'out');
    const fetched = outs.find((r) => r.request.path === '/from-fetch');
    expect(fetched?.request.url).toBe(`${upstream}/from-fetch?n=1`);
    expect(fetched?.request.queryString).toEqual({ n: '1' });
    expect(fetched?.response?.statusCode).toBe(200);
    expect(fetched?.timings?.phases?.firstByte).toBeGreaterThan(0);
    const viaHttp = outs.find((r) => r.request.path === '/from-http');
    expect(viaHttp?.response?.statusCode).toBe(200);
    expect(JSON.parse(viaHttp?.response?.body as string)).toEqual({ upstream: '/from-http' });
    // The SDK's own calls (settings, ingest) are never captured.
    expect(outs.filter((r) => r.request.path.includes('/v1/buckets/'))).toEqual([]);
  });

  // The channel that lets the SDK see a node:http request's body as it is written
  // (http.client.request.created) exists from Node 22.12 / 23.2 on; Node 20 lacks it.
  const [nodeMajor, nodeMinor] = process.versions.node.split('.').map(Number) as [number, number];
  const hasCreatedChannel = nodeMajor > 22 || (nodeMajor === 22 && nodeMinor >= 12);

  it('sizes of bodies that are not captured: the bytes sent, with or without content-length', async () => {
    const a = await newAccount();
    const png = Buffer.alloc(300, 7);
    const upstream = await listen(
      http.createServer((_req, res) => {
        // Chunked, a content type whose body is not captured: no content-length on the wire.
        res.setHeader('content-type', 'image/png');
        res.write(png.subarray(0, 100));
        res.end(png.subarray(100));
      }),
    );
    const t = sdk(a, { captureOutgoing: true });
    const server = http.createServer(
      t.httpHandler((req, res) => {
        if (req.url === '/teapot') {
          // One chunk, no content type: Node adds content-length (6) itself.
          res.statusCode = 418;
          res.end('teapot');
          return;
        }
        if (req.url === '/upload') {
          let n = 0;
          req.on('data', (c: Buffer) => (n += c.length));
          req.on('end', () => res.end(String(n)));
          return;
        }
        http.get(`${upstream}/image`, (r) => {
          r.resume();
          r.on('end', () => {
            res.setHeader('content-type', 'application/octet-stream');
            res.write(Buffer.alloc(50));
            res.end(Buffer.alloc(70));
          });
        });
      }),
    );
    const base = await listen(server);
    await settled(t);

    expect((await fetch(`${base}/teapot`)).status).toBe(418);
    expect(await (await fetch(`${base}/proxy`)).arrayBuffer()).toHaveProperty('byteLength', 120);
    // A streamed (chunked) request body of a type that is not captured.
    const upload = await new Promise<string>((resolve, reject) => {
      const r = http.request(
        `${base}/upload`,
        { method: 'POST', headers: { 'content-type': 'application/octet-stream' } },
        (res) => {
          let s = '';
          res.on('data', (c: Buffer) => (s += c.toString()));
          res.on('end', () => resolve(s));
        },
      );
      r.on('error', reject);
      r.write(Buffer.alloc(40));
      r.end(Buffer.alloc(25));
    });
    expect(upload).toBe('65');
    // fetch streams its body inside undici: the SDK cannot see it, so its size is unknown.
    const put = await fetch(`${base}/teapot`, {
      method: 'PUT',
      headers: { 'content-type': 'text/plain' },
      body: 'hello-fetch',
    });
    expect(put.status).toBe(418);
    await put.arrayBuffer();
    expect(await t.flush(10_000)).toBe(true);

    // in: GET and PUT /teapot, /proxy, /upload; out (the SDK sees every call of this process):
    // the test's fetches of /teapot (GET, PUT) and /proxy, its node:http /upload, the server's
    // node:http /image.
    const stored = await waitStored(a, 9);
    const teapot = byPath(stored, 'GET', '/teapot');
    expect(teapot.response?.statusCode).toBe(418);
    expect(teapot.response?.size).toBe(6);
    expect(teapot.response?.body ?? null).toBeNull();
    const proxied = byPath(stored, 'GET', '/proxy');
    expect(proxied.response?.size).toBe(120);
    expect(proxied.response?.body ?? null).toBeNull();
    const up = byPath(stored, 'POST', '/upload');
    expect(up.request.size).toBe(65);
    expect(up.request.body ?? null).toBeNull();
    const image = stored.find((r) => r.direction === 'out' && r.request.path === '/image');
    expect(image?.response?.statusCode).toBe(200);
    expect(image?.response?.size).toBe(300);
    expect(image?.response?.body ?? null).toBeNull();
    expect(byPath(stored, 'PUT', '/teapot').request.size).toBe(11);
    const putOut = stored.find((r) => r.direction === 'out' && r.request.method === 'PUT');
    expect(putOut?.response?.statusCode).toBe(418);
    expect(putOut?.request.size).toBeNull();
    // The test's chunked node:http upload: counted where Node publishes the request before its
    // body is written, unknown (null) on Node 20.
    const uploadOut = stored.find((r) => r.direction === 'out' && r.request.path === '/upload');
    expect(uploadOut?.request.size).toBe(hasCreatedChannel ? 65 : null);
  });

  // On every runtime: bodies and sizes where Node publishes the request before its body is
  // written, and on Node 20 the documented limit (docs/sdk.md): no body, size unknown (null).
  it(
    hasCreatedChannel
      ? 'outgoing node:http request bodies are captured with their size'
      : 'outgoing node:http request bodies: not captured on Node 20, size null (documented limit)',
    async () => {
      const a = await newAccount();
      const upstream = await listen(
        http.createServer((req, res) => {
          req.resume();
          req.on('end', () => res.end('ok'));
        }),
      );
      const t = sdk(a, { captureOutgoing: true });
      await settled(t);
      const send = (path: string, headers: Record<string, string>, chunks: (string | Buffer)[]) =>
        new Promise<void>((resolve, reject) => {
          const r = http.request(`${upstream}${path}`, { method: 'POST', headers }, (res) => {
            res.resume();
            res.on('end', () => resolve());
          });
          r.on('error', reject);
          // A header set after the request was made still decides the capture.
          r.setHeader('x-late', '1');
          for (const c of chunks.slice(0, -1)) r.write(c);
          r.end(chunks[chunks.length - 1]);
        });
      await send('/json', { 'content-type': 'application/json' }, ['{"order":', Buffer.from('42}')]);
      await send('/binary', { 'content-type': 'application/octet-stream' }, [
        Buffer.alloc(30),
        Buffer.alloc(12),
      ]);
      expect(await t.flush(10_000)).toBe(true);

      const stored = await waitStored(a, 2);
      const out = (p: string) => stored.find((r) => r.direction === 'out' && r.request.path === p);
      expect(out('/json')?.request.headers?.['x-late']).toBe('1');
      expect(out('/binary')?.request.body ?? null).toBeNull();
      if (hasCreatedChannel) {
        expect(out('/json')?.request.body).toBe('{"order":42}');
        expect(out('/json')?.request.size).toBe(12);
        expect(out('/binary')?.request.size).toBe(42);
      } else {
        expect(out('/json')?.request.body ?? null).toBeNull();
        expect(out('/json')?.request.size).toBeNull();
        expect(out('/binary')?.request.size).toBeNull();
      }
    },
  );

  it('ingest unreachable: the host keeps answering, the queue stays bounded, queued records arrive once', async () => {
    const a = await newAccount();
    const proxy = new IngestProxy(testEnv().ingestUrl);
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const maxQueueBytes = 64 * 1024;
    const t = sdk(a, { endpoint: proxy.url, maxQueueBytes, batchSize: 50 });
    const app = express();
    app.use(t.express());
    app.get('/users/:id', (req, res) => res.json({ id: req.params.id }));
    const base = await listen(http.createServer(app));
    await settled(t);
    await proxy.stop();

    const total = 300;
    let maxQueued = 0;
    const started = Date.now();
    for (let i = 0; i < total; i++) {
      const res = await fetch(`${base}/users/${i}`);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      maxQueued = Math.max(maxQueued, t.stats().queuedBytes);
    }
    // 300 sequential calls with the ingest down take well under the time of one retry storm.
    expect(Date.now() - started).toBeLessThan(15_000);
    const down = t.stats();
    expect(maxQueued).toBeLessThanOrEqual(maxQueueBytes);
    expect(down.dropped).toBeGreaterThan(0);
    expect(down.sent).toBe(0);
    expect(down.captured).toBe(total);
    const queued = down.queuedRecords;
    expect(queued + down.dropped).toBe(total);
    await waitFor(() => t.stats().circuit === 'open' || t.stats().failures >= 3, { what: 'failed attempts' });

    // Back, but the first answer is lost after the ingest accepted the batch: the SDK sends it
    // again with the same sids and the processor stores each record once.
    proxy.dropAnswers = 1;
    await proxy.start();
    expect(await t.flush(30_000)).toBe(true);
    expect(proxy.forwarded).toBeGreaterThan(Math.ceil(queued / 50));

    // A last call after the flush: once it is stored, everything sent before it was processed
    // (one bucket, one partition, in order).
    await (await fetch(`${base}/users/last`)).arrayBuffer();
    expect(await t.flush(10_000)).toBe(true);
    await waitFor(async () => (await storedRecords(a)).some((r) => r.request.path === '/users/last'), {
      timeoutMs: 30_000,
      what: 'the last call',
    });
    const again = (await storedRecords(a)).filter((r) => r.request.path !== '/users/last');
    expect(again).toHaveLength(queued);
    expect(new Set(again.map((r) => r.sid)).size).toBe(queued);
    // The oldest were dropped (the batch waiting for a retry first): what arrived is the newest
    // `queued` calls, each once.
    const ids = again.map((r) => Number(r.request.path.split('/')[2])).sort((x, y) => x - y);
    expect(ids).toEqual(Array.from({ length: queued }, (_, i) => total - queued + i));
    expect(again.every((r) => r.endpoint === '/users/:id')).toBe(true);
  });

  it('429/503: Retry-After is honoured, the circuit opens instead of a retry storm, records arrive once', async () => {
    const a = await newAccount();
    const proxy = new IngestProxy(testEnv().ingestUrl);
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const t = sdk(a, {
      endpoint: proxy.url,
      circuitThreshold: 3,
      circuitOpenMs: 500,
      circuitMaxOpenMs: 500,
      retryBaseMs: 20,
      retryMaxMs: 40,
    });
    const app = express();
    app.use(t.express());
    app.get('/r/:n', (req, res) => res.json({ n: req.params.n }));
    const base = await listen(http.createServer(app));
    await settled(t);

    // 1) a 429 with Retry-After: 1 -> the next attempt comes no sooner than 1 s later.
    proxy.answers.push({ status: 429, retryAfter: '1' });
    await (await fetch(`${base}/r/1`)).arrayBuffer();
    expect(await t.flush(10_000)).toBe(true);
    expect(proxy.arrivals).toHaveLength(2);
    expect(proxy.arrivals[1]! - proxy.arrivals[0]!).toBeGreaterThanOrEqual(950);

    // 2) 503 for 2 s: with 20-40 ms backoff a retry loop would make ~50 attempts; the circuit
    // (3 failures, then one attempt per 500 ms) allows about 3 + 2000/500.
    const before = proxy.arrivals.length;
    proxy.answers.push(...Array.from({ length: 1000 }, () => ({ status: 503 })));
    await (await fetch(`${base}/r/2`)).arrayBuffer();
    await new Promise((r) => setTimeout(r, 2000));
    const attempts = proxy.arrivals.length - before;
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(attempts).toBeLessThanOrEqual(10);
    expect(t.stats().circuit).not.toBe('closed');
    proxy.answers.length = 0;
    expect(await t.flush(10_000)).toBe(true);
    expect(t.stats().circuit).toBe('closed');

    const stored = await waitStored(a, 2);
    expect(stored.map((r) => r.request.path).sort()).toEqual(['/r/1', '/r/2']);
  });

  it('client-side redactions and exclusions never reach the wire', async () => {
    const a = await newAccount();
    const rules = `/v1/accounts/${a.accountSid}`;
    const mk = async (kind: string, body: Record<string, unknown>) => {
      const r = await api(a.apiToken).post(`${rules}/${kind}`, { name: 'r', ...body });
      expect(r.status, r.text).toBe(201);
    };
    await mk('redactions', {
      fieldPath: '$.request.body.password',
      redactionType: 'replace',
      replacementValue: '[pw]',
      redactAt: 'client',
    });
    await mk('redactions', {
      fieldPath: '$.request.headers.authorization',
      redactionType: 'remove',
      redactAt: 'client',
    });
    await mk('redactions', {
      fieldPath: '$.request.queryString.apiKey',
      redactionType: 'mask',
      redactAt: 'client',
    });
    await mk('redactions', { fieldPath: '$..token', redactionType: 'hash', redactAt: 'client' });
    await mk('exclusions', { pathPattern: '/health*', method: '*' });

    const proxy = new IngestProxy(testEnv().ingestUrl);
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const t = sdk(a, { endpoint: proxy.url });
    const app = express();
    app.use(t.express());
    app.use(express.json());
    app.post('/login', (req, res) => res.json({ token: 'TOKEN-OUT-777', user: req.body.user }));
    app.get('/healthz', (_req, res) => res.send('ok'));
    const base = await listen(http.createServer(app));
    await settled(t);

    const res = await fetch(`${base}/login?apiKey=KEY123SECRET&page=2`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer SECRET-BEARER-1' },
      body: JSON.stringify({ user: 'ann', password: 'PASSWORD-SECRET-1' }),
    });
    expect(res.status).toBe(200);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(await t.flush(10_000)).toBe(true);

    const wire = proxy.bodies.join('\n');
    expect(wire).toContain('/login');
    for (const secret of ['PASSWORD-SECRET-1', 'SECRET-BEARER-1', 'KEY123SECRET', 'TOKEN-OUT-777'])
      expect(wire).not.toContain(secret);
    expect(wire).not.toContain('/healthz');
    expect(t.stats().excluded).toBe(1);

    const [stored] = await waitStored(a, 1);
    expect(JSON.parse(stored!.request.body as string)).toEqual({ user: 'ann', password: '[pw]' });
    expect(stored!.request.headers?.authorization).toBeUndefined();
    expect(stored!.request.queryString).toEqual({ apiKey: '************', page: '2' });
    expect(stored!.request.url).not.toContain('KEY123');
    expect(JSON.parse(stored!.response?.body as string).token).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a rule added while records wait is applied before they leave, and no rule twice', async () => {
    const a = await newAccount();
    const rule = async (body: Record<string, unknown>) => {
      const r = await api(a.apiToken).post(`/v1/accounts/${a.accountSid}/redactions`, {
        name: 'r',
        redactAt: 'client',
        ...body,
      });
      expect(r.status, r.text).toBe(201);
    };
    await rule({ fieldPath: '$..token', redactionType: 'hash' });
    const proxy = new IngestProxy(testEnv().ingestUrl);
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const t = sdk(a, { endpoint: proxy.url, settingsRefreshMs: 200 });
    const app = express();
    app.use(t.express());
    app.use(express.json());
    app.post('/login', (_req, res) => res.json({ ok: true }));
    const base = await listen(http.createServer(app));
    await waitFor(() => t.stats().redactionRules === 1, { what: 'the first rule' });
    await proxy.stop();
    const res = await fetch(`${base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 'TOK-1', password: 'LATE-SECRET-9' }),
    });
    expect(res.status).toBe(200);
    await waitFor(() => t.stats().captured === 1, { what: 'the capture' });
    // Queued (already redacted with the first rule) when the second rule appears.
    await rule({ fieldPath: '$.request.body.password', redactionType: 'replace', replacementValue: '[pw]' });
    await waitFor(() => t.stats().redactionRules === 2, { what: 'the second rule' });
    await proxy.start();
    expect(await t.flush(20_000)).toBe(true);
    expect(proxy.bodies.join('\n')).not.toContain('LATE-SECRET-9');
    const [stored] = await waitStored(a, 1);
    const body = JSON.parse(stored!.request.body as string) as { token: string; password: string };
    expect(body.password).toBe('[pw]');
    // Hashed once: the SHA-256 of the value, not of its hash.
    expect(body.token).toBe(createHash('sha256').update('TOK-1').digest('hex'));
  });

  it('the bucket switch: enabled=false stops capture at the next refresh', async () => {
    const a = await newAccount();
    const t = sdk(a, { settingsRefreshMs: 200 });
    const app = express();
    app.use(t.express());
    app.get('/x', (_req, res) => res.send('x'));
    const base = await listen(http.createServer(app));
    await settled(t);
    await fetch(`${base}/x`);
    await waitFor(() => t.stats().captured === 1, { what: 'one capture' });
    const put = await api(a.apiToken).put(`/v1/accounts/${a.accountSid}/buckets/${a.bucketSid}/sdkSettings`, {
      enabled: false,
    });
    expect(put.status, put.text).toBe(200);
    // Wait for a refresh to see the switch: a call after it is not captured.
    await waitFor(
      async () => {
        const before = t.stats().captured;
        await (await fetch(`${base}/x`)).text();
        return t.stats().captured === before;
      },
      { what: 'capture off' },
    );
    const off = t.stats().captured;
    for (let i = 0; i < 5; i++) await (await fetch(`${base}/x`)).text();
    expect(t.stats().captured).toBe(off);
  });

  it('SIGTERM: the host flushes the queue, then exits as it would without the SDK', async () => {
    const a = await newAccount();
    const host = hostProcess(a, 0);
    const port = await host.port;
    for (let i = 0; i < 3; i++) expect((await fetch(`http://127.0.0.1:${port}/x/${i}`)).status).toBe(200);
    // The batch interval is 10 minutes: only the flush on SIGTERM can send these.
    host.child.kill('SIGTERM');
    expect(await host.exited).toEqual({ code: null, signal: 'SIGTERM' });
    const stored = await waitStored(a, 3);
    expect(stored.map((r) => r.request.path).sort()).toEqual(['/x/0', '/x/1', '/x/2']);
  });

  it('beforeExit: a host whose event loop empties flushes before it ends', async () => {
    const a = await newAccount();
    const host = hostProcess(a, 2);
    const port = await host.port;
    for (let i = 0; i < 2; i++) expect((await fetch(`http://127.0.0.1:${port}/x/${i}`)).status).toBe(200);
    expect(await host.exited).toEqual({ code: 0, signal: null });
    const stored = await waitStored(a, 2);
    expect(stored.map((r) => r.request.path).sort()).toEqual(['/x/0', '/x/1']);
  });

  it('processor: a repeated sid is stored once (across calls and within one)', async () => {
    const a = await newAccount();
    const sid = 'req_' + 'A'.repeat(20) + Date.now().toString().slice(-7);
    const rec = makeRecord({ sid, contextSid: 'dup' });
    const other = makeRecord({ contextSid: 'other' });
    expect((await ingest(a.bucketSid, a.apiToken, [rec, other])).status).toBe(202);
    expect((await ingest(a.bucketSid, a.apiToken, [rec])).status).toBe(202);
    expect((await ingest(a.bucketSid, a.apiToken, [rec, rec], { gzip: true })).status).toBe(202);
    const marker = makeRecord({ contextSid: 'marker' });
    expect((await ingest(a.bucketSid, a.apiToken, [marker])).status).toBe(202);
    // The marker went last into the bucket's partition: once it is stored, the repeats were seen.
    const all = await waitFor(
      async () => {
        const r = (await storedRecords(a)) as (Stored & { contextSid?: string })[];
        return r.some((x) => x.contextSid === 'marker') ? r : undefined;
      },
      { timeoutMs: 30_000, what: 'the marker record' },
    );
    expect(all.filter((r) => r.sid === sid)).toHaveLength(1);
    expect(all).toHaveLength(3);

    // Another tenant sending a record with the same sid: a record of its own bucket, stored, and
    // the first tenant's record untouched.
    const b = await newAccount();
    const theirs = makeRecord({ sid, contextSid: 'tenant-b' });
    expect((await ingest(b.bucketSid, b.apiToken, [theirs])).status).toBe(202);
    const bStored = await waitFor(
      async () => {
        const r = (await storedRecords(b)) as (Stored & { contextSid?: string })[];
        return r.length ? r : undefined;
      },
      { timeoutMs: 30_000, what: "the other tenant's record with the same sid" },
    );
    expect(bStored.map((r) => [r.sid, r.contextSid])).toEqual([[sid, 'tenant-b']]);
    const aStill = (await storedRecords(a)) as (Stored & { contextSid?: string })[];
    expect(aStill.filter((r) => r.sid === sid).map((r) => r.contextSid)).toEqual(['dup']);
  });
});
