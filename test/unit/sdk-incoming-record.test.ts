import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { Tapline } from '../../sdk/node/src/index.js';

/**
 * An incoming request's record is made one of two ways: written straight as its JSON line while
 * no client rule reads whole records, or built as an object (then redacted and serialised) when
 * one does. Both must send the same text. Two SDK instances capture the same requests, one
 * without rules (the line) and one with a criteria exclusion that matches none of them (the
 * object); a real local HTTP server stands in for the ingest and the settings endpoint.
 */

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** Settings per bucket: `bkt_object` has a criteria exclusion, so its records are built as objects. */
const SETTINGS: Record<string, Record<string, unknown>> = {
  bkt_line: { redactAt: 'client', redactionRules: [], exclusionRules: [], settings: {} },
  bkt_object: {
    redactAt: 'client',
    redactionRules: [],
    exclusionRules: [],
    exclusionCriteria: [{ sid: 'xcl_none', criteria: 'method:DELETE' }],
    settings: {},
  },
};

async function ingest() {
  const raw = new Map<string, string[]>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bucket = /\/v1\/buckets\/([^/]+)\//.exec(req.url ?? '')?.[1] ?? '';
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        res.end(JSON.stringify(SETTINGS[bucket] ?? {}));
        return;
      }
      const text = gunzipSync(Buffer.concat(chunks)).toString('utf8');
      raw.set(bucket, [...(raw.get(bucket) ?? []), text]);
      res.statusCode = 202;
      res.end(JSON.stringify({ rejected: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(r)));
  /** The records a bucket received, each as its JSON text in the order of its fields. */
  const records = (bucket: string) =>
    (raw.get(bucket) ?? []).flatMap((t) => (JSON.parse(t) as { records: Record<string, unknown>[] }).records);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, records };
}

/**
 * An app behind the SDK's Koa adapter (a route template and a parsed body from the framework) that
 * names the consumer and answers with headers from both setHeader and writeHead.
 */
async function app(tapline: Tapline) {
  const middleware = tapline.koa();
  const server = http.createServer((req, res) => {
    const ctx = { req, res, _matchedRoute: '/orders/:id', request: { body: { parsed: true } } };
    void middleware(ctx, async () => {
      tapline.identify(req, { id: 'cus_42', name: 'Acme', group: 'pro' });
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('x-set', ['a', 'b']);
        if (req.url?.startsWith('/chunked')) {
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
          res.write('part one, ');
          res.end('part two');
          return;
        }
        res.writeHead(201, { 'content-type': 'application/json', 'x-head': 'h' });
        res.end(JSON.stringify({ echoed: Buffer.concat(chunks).toString('utf8'), ok: true }));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(r)));
  return (server.address() as AddressInfo).port;
}

/** A record's text without what differs per call (sid, time, timings), the app's port written as 0. */
function comparable(record: Record<string, unknown>, port: number): string {
  const { sid, createdAt, timings, ...rest } = record;
  expect([typeof sid, typeof createdAt, typeof timings]).toEqual(['string', 'string', 'object']);
  return JSON.stringify(rest).replaceAll(String(port), '0');
}

describe('sdk: an incoming record written as a line and built as an object', () => {
  it('sends the same fields in the same order with the same values', async () => {
    const sink = await ingest();
    const sdks = ['bkt_line', 'bkt_object'].map(
      (bucketSid) =>
        new Tapline({
          endpoint: sink.url,
          bucketSid,
          token: 't',
          handleProcessEvents: false,
          captureOutgoing: false,
          flushIntervalMs: 600_000,
          tags: { team: 'core' },
        }),
    );
    for (const t of sdks) closers.push(() => t.shutdown(1000));
    for (const t of sdks) while (!t.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 10));
    expect(sdks.map((t) => t.stats().exclusionCriteria)).toEqual([0, 1]);
    const ports = await Promise.all(sdks.map((t) => app(t)));

    for (const port of ports) {
      const base = `http://127.0.0.1:${port}`;
      const post = await fetch(`${base}/orders/17?x=1&y=a%20b&x=2#frag`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-custom': 'v', cookie: 'k=v' },
        body: JSON.stringify({ item: 'ä', n: 2 }),
      });
      expect(post.status).toBe(201);
      await post.text();
      const chunked = await fetch(`${base}/chunked`);
      expect(await chunked.text()).toBe('part one, part two');
    }
    for (const t of sdks) expect(await t.flush(10_000)).toBe(true);

    const line = sink.records('bkt_line').map((r) => comparable(r, ports[0]!));
    const object = sink.records('bkt_object').map((r) => comparable(r, ports[1]!));
    expect(line).toHaveLength(2);
    expect(line).toEqual(object);
    // The fields the two ways make by hand, checked once on the line's side.
    const [posted, streamed] = line.map((s) => JSON.parse(s) as Record<string, Record<string, unknown>>);
    expect(posted).toMatchObject({
      direction: 'in',
      request: {
        host: '127.0.0.1',
        method: 'POST',
        path: '/orders/17',
        port: 0,
        url: 'http://127.0.0.1:0/orders/17?x=1&y=a%20b&x=2',
        queryString: { x: ['1', '2'], y: 'a b' },
        contentType: 'application/json',
        body: '{"item":"ä","n":2}',
      },
      response: {
        statusCode: 201,
        headers: { 'x-set': ['a', 'b'], 'x-head': 'h' },
        contentType: 'application/json',
      },
      tags: [
        { key: 'team', value: 'core' },
        { key: 'sdk', value: expect.stringMatching(/^tapline-node\//) as unknown },
      ],
      endpoint: '/orders/:id',
      consumer: { id: 'cus_42', name: 'Acme', group: 'pro' },
    });
    expect(posted!.request!.headers).toMatchObject({ 'x-custom': 'v', cookie: 'k=v' });
    expect(posted!.request!.size).toBe(Buffer.byteLength('{"item":"ä","n":2}'));
    expect(streamed!.response).toMatchObject({ statusCode: 200, size: 18, body: 'part one, part two' });
  });
});
