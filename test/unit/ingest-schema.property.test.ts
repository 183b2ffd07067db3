import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeRecords, type Rejection } from '../../services/ingest/record.normalizer.js';
import { validator } from '../../services/shared/schemas.js';

/**
 * Properties of the ingest record schema and normalizer (issue 7, hostile input): whatever a client
 * sends, `normalizeRecords` never throws; each record is either accepted (and then a valid stored
 * record) or rejected alone with a VALIDATION_ERROR naming the failing fields. The criteria parser
 * has its own properties in criteria.test.ts.
 */

const BUCKET = 'bkt_PropertyTestBucket000000000';
const NOW = new Date('2026-01-02T03:04:05.678Z');
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function validRecord(): Record<string, unknown> {
  return {
    environmentSid: 'prod01',
    contextSid: 'ctx-1',
    direction: 'in',
    createdAt: '2026-01-02T03:04:00.000Z',
    request: {
      host: 'api.example.com',
      method: 'POST',
      path: '/users/7/orders',
      port: 443,
      url: 'https://api.example.com/users/7/orders?page=1',
      queryString: { page: '1' },
      headers: { 'content-type': 'application/json', 'x-n': 7, 'x-b': true },
      body: '{"password":"secret"}',
      contentType: 'application/json',
      size: 21,
    },
    response: {
      statusCode: 201,
      headers: { 'content-type': 'application/json' },
      size: 11,
      body: { ok: true },
      contentType: 'application/json',
    },
    timings: { duration: 12.5, phases: { dns: 1, tcp: 2 } },
    traces: ['t1'],
    firewall: { blocked: false },
  };
}

/** Every path to a value inside `v` (object keys and array indexes), the root included. */
function pathsOf(v: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...pathsOf(x, [...prefix, i])));
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) out.push(...pathsOf(x, [...prefix, k]));
  return out;
}

type Mutation =
  { kind: 'set'; value: unknown } | { kind: 'delete' } | { kind: 'extra'; key: string; value: unknown };

/** `record` with one mutation applied at `path` (a copy; the root itself may be replaced). */
function mutate(record: unknown, path: (string | number)[], m: Mutation): unknown {
  const copy = structuredClone(record);
  if (path.length === 0) {
    if (m.kind === 'set') return m.value;
    if (m.kind === 'extra' && copy && typeof copy === 'object')
      (copy as Record<string, unknown>)[m.key] = m.value;
    return m.kind === 'delete' ? undefined : copy;
  }
  let parent = copy as Record<string | number, unknown>;
  for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (m.kind === 'set') parent[last] = m.value;
  else if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else {
    const target = parent[last];
    if (target && typeof target === 'object' && !Array.isArray(target))
      (target as Record<string, unknown>)[m.key] = m.value;
    else parent[last] = { [m.key]: m.value };
  }
  return copy;
}

const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    'a\u0000b',
    '\ud800',
    "' OR '1'='1",
    '../../etc/passwd',
    'x'.repeat(70_000),
    '',
    'req_short',
    '2026-13-45T99:99:99Z',
    '9999-12-31T23:59:59.999Z',
  ),
);
const hostileValue = fc.oneof(
  fc.jsonValue(),
  hostileString,
  fc.constantFrom(-1, 0, 1e308, -1e308, 2 ** 53 + 1, 1.5, Number.MAX_SAFE_INTEGER),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
);
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  hostileValue.map((value) => ({ kind: 'set' as const, value })),
  fc.constant({ kind: 'delete' as const }),
  fc
    .tuple(
      fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'sid', 'bucketSid')),
      hostileValue,
    )
    .map(([key, value]) => ({ kind: 'extra' as const, key, value })),
);

function expectWellFormed(input: unknown[], out: ReturnType<typeof normalizeRecords>): void {
  expect(out.accepted.length + out.rejected.length).toBe(input.length);
  const indexes = out.rejected.map((r) => r.index);
  expect(new Set(indexes).size).toBe(indexes.length);
  for (const r of out.rejected) expectRejection(r, input.length);
  for (const a of out.accepted) {
    expect(a.sid).toMatch(/^req_[A-Za-z0-9]{27}$/);
    expect(a.bucketSid).toBe(BUCKET);
    expect(typeof a.receivedAt).toBe('string');
    expect(typeof a.createdAt).toBe('string');
    expect(a.request).toBeTypeOf('object');
  }
}

function expectRejection(r: Rejection, length: number): void {
  expect(Number.isInteger(r.index) && r.index >= 0 && r.index < length).toBe(true);
  expect(r.error.code).toBe('VALIDATION_ERROR');
  expect(r.error.message).toBeTypeOf('string');
  expect(r.error.message.length).toBeGreaterThan(0);
  // Details name each failing field: at least one entry, each with a message.
  const entries = Object.entries(r.error.details);
  expect(entries.length).toBeGreaterThan(0);
  for (const [, msg] of entries) expect(msg).toBeTypeOf('string');
}

describe('ingest record schema (property-based)', () => {
  const storedValid = validator('ingestRecord');

  it('accepts the valid record and fills the server-owned fields', () => {
    const out = normalizeRecords(
      [validRecord(), { request: { url: 'http://h.test:8080/a/b?x=1&x=2' } }],
      BUCKET,
      NOW,
    );
    expect(out.rejected).toEqual([]);
    expect(out.accepted).toHaveLength(2);
    const second = out.accepted[1]!;
    expect(second.receivedAt).toBe(NOW.toISOString());
    expect(second.createdAt).toBe(NOW.toISOString());
    expect(second.request).toMatchObject({
      host: 'h.test',
      path: '/a/b',
      port: 8080,
      queryString: { x: ['1', '2'] },
    });
    expect(second).toMatchObject({ direction: 'in', environmentSid: null, firewall: { blocked: false } });
    expect(second.receivedAt).toMatch(ISO_MS);
  });

  it('never throws on arbitrary JSON values, and answers for each one', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue({ maxDepth: 6 }), { maxLength: 20 }), (values) => {
        const input = structuredClone(values) as unknown[];
        const out = normalizeRecords(input, BUCKET, NOW);
        expectWellFormed(values as unknown[], out);
      }),
      { numRuns: 300 },
    );
  }, 60_000);

  it('never throws on arbitrary objects shaped like records', () => {
    const recordish = fc.record(
      {
        request: fc.oneof(
          fc.dictionary(
            fc.constantFrom(
              'host',
              'method',
              'path',
              'port',
              'url',
              'queryString',
              'headers',
              'body',
              'size',
              'zz',
            ),
            hostileValue,
          ),
          hostileValue,
        ),
        response: hostileValue,
        timings: hostileValue,
        createdAt: hostileValue,
        sid: hostileValue,
        bucketSid: hostileValue,
        environmentSid: hostileValue,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(recordish, { maxLength: 10 }), (values) => {
        const out = normalizeRecords(structuredClone(values), BUCKET, NOW);
        expectWellFormed(values, out);
      }),
      { numRuns: 400 },
    );
  }, 60_000);

  it('a mutated valid record is either accepted as a valid stored record, or rejected alone with details', () => {
    const base = validRecord();
    const paths = pathsOf(base);
    fc.assert(
      fc.property(fc.constantFrom(...paths), mutation, (path, m) => {
        const mutated = mutate(base, path, m);
        const input = mutated === undefined ? [] : [mutated];
        const out = normalizeRecords(structuredClone(input), BUCKET, NOW);
        expectWellFormed(input, out);
        if (out.accepted.length) {
          // What is accepted is a complete, valid record: feeding it back is accepted unchanged.
          const again = structuredClone(out.accepted[0]!);
          expect(storedValid(again)).toBe(true);
          const twice = normalizeRecords([again], BUCKET, NOW);
          expect(twice.rejected).toEqual([]);
          expect(twice.accepted[0]).toEqual(out.accepted[0]);
        }
      }),
      { numRuns: 1000 },
    );
  }, 60_000);

  it('a bad record rejects only itself: a batch answers like each record alone', () => {
    const base = validRecord();
    const paths = pathsOf(base);
    const item = fc.oneof(
      fc.constant(base),
      fc.tuple(fc.constantFrom(...paths), mutation).map(([p, m]) => mutate(base, p, m) ?? null),
    );
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 8 }), (batch) => {
        const alone = batch.map(
          (r) => normalizeRecords([structuredClone(r)], BUCKET, NOW).accepted.length === 1,
        );
        const out = normalizeRecords(structuredClone(batch), BUCKET, NOW);
        expect(out.accepted).toHaveLength(alone.filter(Boolean).length);
        expect(out.rejected.map((r) => r.index)).toEqual(alone.flatMap((ok, i) => (ok ? [] : [i])));
      }),
      { numRuns: 200 },
    );
  }, 60_000);

  it('rejects wrong types in the fields a client must get right, naming the field', () => {
    const cases: [string, (string | number)[], unknown][] = [
      ['request', ['request'], 'GET /'],
      ['request.port', ['request', 'port'], 'https'],
      ['request.method', ['request', 'method'], 'GET /x'],
      ['response.statusCode', ['response', 'statusCode'], 42],
      ['timings.duration', ['timings', 'duration'], 'slow'],
      ['environmentSid', ['environmentSid'], 'PROD-1!'],
      ['createdAt', ['createdAt'], 'yesterday'],
      ['sid', ['sid'], "req_' OR 1=1"],
    ];
    for (const [field, path, value] of cases) {
      const out = normalizeRecords([mutate(validRecord(), path, { kind: 'set', value })], BUCKET, NOW);
      expect(out.accepted, field).toHaveLength(0);
      expect(Object.keys(out.rejected[0]!.error.details).join(' '), field).toContain(field);
    }
    const missing = normalizeRecords([mutate(validRecord(), ['request'], { kind: 'delete' })], BUCKET, NOW);
    expect(missing.rejected[0]!.error.details).toHaveProperty('request');
    const other = normalizeRecords([{ ...validRecord(), bucketSid: 'bkt_other' }], BUCKET, NOW);
    expect(other.rejected[0]!.error.details).toHaveProperty('bucketSid');
  });
});
