import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../sdk/node/src/circuit.js';
import { BoundedQueue } from '../../sdk/node/src/queue.js';
import { bodyAllowed, BodySink, DEFAULT_BODY_TYPES, headersFromPairs } from '../../sdk/node/src/capture.js';
import { resolveOptions } from '../../sdk/node/src/options.js';
import { estimateSize } from '../../sdk/node/src/record-size.js';
import {
  compileExclusion,
  compileRedaction,
  excludedBy,
  redactRecord,
  sampleRateOf,
  type CompiledExclusion,
  type CompiledRedaction,
} from '../../sdk/node/src/rules.js';
import { newRecordSid } from '../../sdk/node/src/sid.js';
import { backoffMs, classify, retryAfterMs } from '../../sdk/node/src/transport.js';
import type { CapturedRecord } from '../../sdk/node/src/types.js';

function record(over: Partial<CapturedRecord> = {}): CapturedRecord {
  return {
    sid: newRecordSid(),
    direction: 'in',
    createdAt: new Date(0).toISOString(),
    request: {
      host: 'api.test',
      method: 'POST',
      path: '/login',
      port: 443,
      url: 'https://api.test/login?token=abc&page=2',
      queryString: { token: 'abc', page: '2' },
      headers: { authorization: 'Bearer secret-token', 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'ann', password: 'hunter2', nested: { card: '4111-1111' } }),
      contentType: 'application/json',
      size: 60,
    },
    response: {
      statusCode: 200,
      headers: { 'set-cookie': 'sid=xyz' },
      body: { password: 'echo', ok: true },
      contentType: 'application/json',
      size: 20,
    },
    timings: { duration: 1 },
    tags: [],
    ...over,
  };
}

const rules = (...r: Parameters<typeof compileRedaction>[0][]) =>
  r.map((x) => compileRedaction(x)).filter((x): x is CompiledRedaction => x !== null);

describe('sdk: bounded queue', () => {
  const obj = (n: number) => ({ record: n });

  it('drops the oldest records past the byte bound and counts them', () => {
    const q = new BoundedQueue<number>(100);
    for (let i = 0; i < 10; i++) q.push(obj(i), 30);
    expect(q.length).toBe(3);
    expect(q.bytes).toBe(90);
    expect(q.dropped).toBe(7);
    expect(q.shift()).toEqual({ item: { record: 7 }, size: 30 });
  });

  it('keeps FIFO order over many pushes and shifts, across ring growth and wrap-around', () => {
    const q = new BoundedQueue<number>(1e9);
    for (let i = 0; i < 5000; i++) q.push(obj(i), 1);
    const out: number[] = [];
    for (let i = 0; i < 3000; i++) out.push(q.shift()!.item.record!);
    for (let i = 5000; i < 9000; i++) q.push(obj(i), 1);
    while (q.length) out.push(q.shift()!.item.record!);
    expect(out).toEqual(Array.from({ length: 9000 }, (_, i) => i));
    expect(q.bytes).toBe(0);
  });

  it('a lower bound (a batch in flight) trims at once', () => {
    const q = new BoundedQueue<number>(100);
    for (let i = 0; i < 3; i++) q.push(obj(i), 30);
    q.setMaxBytes(40);
    expect(q.length).toBe(1);
    expect(q.dropped).toBe(2);
  });

  it('gives back lines as slab, offset, length and rules version, in order with objects', () => {
    const q = new BoundedQueue<number>(1e9);
    const a = Buffer.from('{"a":1}{"b":2}');
    const b = Buffer.from('{"c":3}');
    q.push({ record: 0 }, 10);
    q.push({ slab: a, off: 0, len: 7, version: 1 }, 71);
    q.push({ slab: a, off: 7, len: 7, version: 2 }, 71);
    q.push({ slab: b, off: 0, len: 7, version: 2 }, 71);
    const text = (x: { item: { slab?: Buffer; off?: number; len?: number } }) =>
      x.item.slab!.subarray(x.item.off, x.item.off! + x.item.len!).toString();
    expect(q.shift()).toEqual({ item: { record: 0 }, size: 10 });
    const first = q.shift()!;
    expect([text(first), first.item.version, first.size]).toEqual(['{"a":1}', 1, 71]);
    expect(first.item.slab).toBe(a);
    expect(text(q.shift()!)).toBe('{"b":2}');
    const last = q.shift()!;
    expect([text(last), last.item.version]).toEqual(['{"c":3}', 2]);
    expect(last.item.slab).toBe(b);
    expect(q.shift()).toBeUndefined();
  });

  it('holds each slab once and releases it when the queue moves past its lines', () => {
    const q = new BoundedQueue<number>(1e9);
    const slabs = [Buffer.alloc(16), Buffer.alloc(16), Buffer.alloc(16)];
    for (const slab of slabs) for (let off = 0; off < 16; off += 4) q.push({ slab, off, len: 4 }, 1);
    const held = () => (q as unknown as { slabs: Buffer[] }).slabs;
    expect(held()).toEqual(slabs);
    for (let k = 0; k < 5; k++) q.shift();
    expect(held()).toHaveLength(2);
    expect(held()[0]).toBe(slabs[1]);
    while (q.length) q.shift();
    expect(held()).toHaveLength(0);
    // The same slab pushed again after the queue emptied is held anew.
    q.push({ slab: slabs[2], off: 0, len: 4 }, 1);
    expect(q.shift()!.item.slab).toBe(slabs[2]);
  });

  it('keeps no object per queued line: the lines of a full batch leave only typed arrays', () => {
    const q = new BoundedQueue<number>(1e9);
    const slab = Buffer.alloc(4096);
    for (let off = 0; off < 4000; off += 8) q.push({ slab, off, len: 8, version: 3 }, 72);
    const objects = (q as unknown as { objects: unknown[] }).objects;
    expect(objects.filter((x) => x !== undefined)).toHaveLength(0);
    expect((q as unknown as { slabs: Buffer[] }).slabs).toHaveLength(1);
    q.clear();
    expect([q.length, q.bytes]).toEqual([0, 0]);
  });
});

describe('sdk: client redactions', () => {
  it('redacts body fields, headers and query parameters (URL too)', () => {
    const r = record();
    redactRecord(
      r,
      rules(
        { field: '$.request.body.password', action: 'replace', replacement: '[pw]' },
        { field: '$..card', action: 'mask' },
        { field: '$.request.headers.Authorization', action: 'remove' },
        { field: '$.request.queryString.token', action: 'hash' },
        { field: '$.response.body.password', action: 'remove' },
      ),
      '',
    );
    const body = JSON.parse(r.request.body as string) as Record<string, unknown>;
    expect(body.password).toBe('[pw]');
    expect((body.nested as { card: string }).card).toBe('****-****');
    expect(r.request.headers.authorization).toBeUndefined();
    expect(r.request.queryString.token).toMatch(/^[0-9a-f]{64}$/);
    expect(r.request.url).not.toContain('abc');
    expect(r.request.url).toContain('page=2');
    expect(r.response!.body).toEqual({ ok: true });
    expect(JSON.stringify(r)).not.toContain('hunter2');
    expect(JSON.stringify(r)).not.toContain('secret-token');
  });

  it('a path without a record part applies to both bodies', () => {
    const r = record();
    redactRecord(r, rules({ field: '$.password', action: 'mask' }), '');
    expect(JSON.parse(r.request.body as string).password).toBe('*******');
    expect((r.response!.body as { password: string }).password).toBe('****');
  });

  it('honours environments and skips rules it cannot parse', () => {
    expect(compileRedaction({ field: '$.a[?(@.x)]', action: 'mask' })).toBeNull();
    expect(compileRedaction({ field: '$.request.method', action: 'mask' })).toBeNull();
    expect(compileRedaction({ field: '$.x', action: 'explode' as 'mask' })).toBeNull();
    const r = record();
    redactRecord(r, rules({ field: '$..password', action: 'remove', environments: ['prod01'] }), 'stag01');
    expect(r.request.body).toContain('hunter2');
    redactRecord(r, rules({ field: '$..password', action: 'remove', environments: ['prod01'] }), 'prod01');
    expect(r.request.body).not.toContain('hunter2');
    // An SDK without an environment may be any environment's: every rule applies.
    const none = record();
    redactRecord(none, rules({ field: '$..password', action: 'remove', environments: ['prod01'] }), '');
    expect(none.request.body).not.toContain('hunter2');
  });
});

describe("sdk: field paths are the server parser's", () => {
  it('skips a rule whose path the API refuses, and compiles the ones it accepts as the server does', () => {
    // The API refuses these (leading zero, an index above 1,000,000, a control character in a
    // quoted key, a header path with two names); the SDK compiles rules with the same parser.
    for (const field of ['$.a[01]', '$.a[1000001]', "$['a\u0001b']", '$.request.headers.cookie.session'])
      expect([field, compileRedaction({ field, action: 'mask' })]).toEqual([field, null]);
    const header = compileRedaction({ field: '$.request.headers.X-Api-Key', action: 'remove' });
    expect(header && { roots: header.roots, segments: header.segments }).toEqual({
      roots: ['request.headers'],
      segments: [{ type: 'key', name: 'x-api-key' }],
    });
    const both = compileRedaction({ field: '$..card', action: 'mask' });
    expect(both && { roots: both.roots, segments: both.segments }).toEqual({
      roots: ['request.body', 'response.body'],
      segments: [{ type: 'recursive', name: 'card' }],
    });
  });
});

describe('sdk: exclusions and sampling', () => {
  const xs = [
    compileExclusion({ path: '/health*', method: '*', statusCode: null }),
    compileExclusion({ path: '*', method: 'OPTIONS', statusCode: 204, environments: ['prod01'] }),
  ].filter((x): x is CompiledExclusion => x !== null);

  it('matches path patterns, method, status and environment', () => {
    expect(excludedBy(xs, 'GET', '/healthz?x=1', 200, '')).toBeDefined();
    expect(excludedBy(xs, 'GET', '/users', 200, '')).toBeUndefined();
    expect(excludedBy(xs, 'options', '/users', 204, 'prod01')).toBeDefined();
    expect(excludedBy(xs, 'OPTIONS', '/users', 204, 'stag01')).toBeUndefined();
    expect(excludedBy(xs, 'OPTIONS', '/users', 200, 'prod01')).toBeUndefined();
  });

  it('per-endpoint rates (METHOD template, template, path) times the bucket rate', () => {
    const s = { 'GET /users/:id': 0.5, '/health': 0, '/raw': 0.25 };
    expect(sampleRateOf(s, 1, 'get', '/users/:id', '/users/1')).toBe(0.5);
    expect(sampleRateOf(s, 0.5, 'POST', '/users/:id', '/users/1')).toBe(0.5);
    expect(sampleRateOf(s, 1, 'GET', '/health', '/health')).toBe(0);
    expect(sampleRateOf(s, 1, 'GET', null, '/raw')).toBe(0.25);
    expect(sampleRateOf(undefined, 7, 'GET', null, '/x')).toBe(1);
  });
});

describe('sdk: delivery policy', () => {
  it('classifies answers: 2xx ok, 408/429/5xx retry, other 4xx drop', () => {
    expect(classify(202)).toBe('ok');
    for (const s of [408, 429, 500, 502, 503]) expect(classify(s)).toBe('retry');
    for (const s of [400, 401, 403, 404, 413]) expect(classify(s)).toBe('drop');
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });

  it('backs off exponentially with full jitter under a cap', () => {
    expect(backoffMs(0, 500, 30_000, () => 1)).toBe(500);
    expect(backoffMs(3, 500, 30_000, () => 1)).toBe(4000);
    expect(backoffMs(20, 500, 30_000, () => 1)).toBe(30_000);
    expect(backoffMs(3, 500, 30_000, () => 0)).toBe(0);
  });

  it('opens the circuit after the threshold, half-opens after the wait, re-opens longer', () => {
    const c = new CircuitBreaker(3, 1000, 8000);
    expect(c.failure(0)).toBe(false);
    expect(c.failure(0)).toBe(false);
    expect(c.failure(0)).toBe(true);
    expect(c.waitMs(500)).toBe(500);
    expect(c.waitMs(1000)).toBe(0);
    expect(c.state).toBe('half-open');
    expect(c.failure(1000)).toBe(true);
    expect(c.waitMs(1000)).toBe(2000);
    c.waitMs(3000);
    c.success();
    expect(c.state).toBe('closed');
    expect(c.waitMs(3000)).toBe(0);
  });
});

describe('sdk: capture helpers', () => {
  it('makes server-format sids, all different', () => {
    const sids = new Set(Array.from({ length: 10_000 }, () => newRecordSid()));
    expect(sids.size).toBe(10_000);
    for (const s of [...sids].slice(0, 100)) expect(s).toMatch(/^req_[A-Za-z0-9]{27}$/);
  });

  it('keeps bodies up to the limit and counts the rest', () => {
    const s = new BodySink(5);
    s.add('abc');
    s.add(Buffer.from('defgh'));
    expect(s.text()).toBe('abcde');
    expect(s.total).toBe(8);
    expect(s.truncated).toBe(true);
  });

  it('body content types and undici header pairs', () => {
    expect(bodyAllowed('application/json; charset=utf-8', DEFAULT_BODY_TYPES)).toBe(true);
    expect(bodyAllowed('application/vnd.api+json', DEFAULT_BODY_TYPES)).toBe(true);
    expect(bodyAllowed('image/png', DEFAULT_BODY_TYPES)).toBe(false);
    expect(bodyAllowed(null, DEFAULT_BODY_TYPES)).toBe(false);
    expect(
      headersFromPairs(
        [Buffer.from('Set-Cookie'), Buffer.from('a'), 'set-cookie', 'b', 'X', '1'],
        new Set(['x']),
      ),
    ).toEqual({
      'set-cookie': ['a', 'b'],
    });
  });

  it('options: bad values fall back, a non-sid environment becomes a tag', () => {
    const o = resolveOptions({
      endpoint: 'not a url',
      bucketSid: 'b',
      token: 't',
      environment: 'Production',
      batchSize: 5000,
      flushIntervalMs: Number.NaN,
    });
    expect(o.endpoint.href).toBe('http://127.0.0.1:8081/');
    expect(o.environment).toBeNull();
    expect(o.tags).toContainEqual({ key: 'environment', value: 'Production' });
    expect(o.batchSize).toBe(1000);
    expect(o.flushIntervalMs).toBe(1000);
  });

  it('estimates at least the JSON size of a typical record', () => {
    const r = record();
    expect(estimateSize(r)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(r)));
  });
});
