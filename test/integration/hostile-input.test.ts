import fs from 'node:fs';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  deepArrays,
  endpoints,
  fillPath,
  hostileCases,
  ingestDeepCases,
  SQL_FRAGMENTS,
  type HostileCase,
  type OpenApiDoc,
} from '../fuzz/hostile-variants.js';
import { mapLimit, rawRequest, type RawResponse } from '../fuzz/raw-http.js';
import { seedResources, type SeededAccount } from '../fuzz/seed.js';
import { MAX_JSON_DEPTH } from '../../services/shared/json-depth.js';
import {
  ingest,
  listAllRequests,
  makeRecord,
  newAccount,
  testEnv,
  testPool,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { TEST_RETENTION_DAYS } from '../helpers/stack-mode.js';

/**
 * Issue 7, hostile input. Every operation of the OpenAPI document (so routes added later are
 * covered without touching this file) gets generated hostile variants (test/fuzz/hostile-variants.ts):
 * the answer is a 4xx with the error envelope, never a 5xx, never a stack trace, and stored data is
 * unchanged. Then the ingest listener, which is not in the document, gets the same treatment.
 */

const API_BODY_LIMIT = 1024 * 1024;
const INGEST_BODY_LIMIT = 5 * 1024 * 1024;
const STACK_TRACE =
  /\bat [\w$.<>[\] ]+ \(|\bat (file|node):|\/work\/|node_modules|[\w-]+\.(ts|js|mjs|cjs):\d+/;

interface Sent {
  c: HostileCase;
  r: RawResponse;
}

function isEnvelope(text: string): boolean {
  try {
    const j = JSON.parse(text) as {
      success?: unknown;
      error?: { code?: unknown; message?: unknown; details?: unknown };
    };
    return (
      j.success === false &&
      typeof j.error?.code === 'string' &&
      typeof j.error.message === 'string' &&
      typeof j.error.details === 'object' &&
      j.error.details !== null
    );
  } catch {
    return false;
  }
}

/** What is wrong with one answer, or undefined. */
function problem({ c, r }: Sent): string | undefined {
  const where = `${c.method} ${c.url.slice(0, 160)} [${c.label}] -> ${r.status} ${r.text.slice(0, 200)}`;
  if (r.status >= 500 || r.status < 100) return `server error: ${where}`;
  if (c.expect === 'reject' && (r.status < 400 || r.status >= 500)) return `not refused: ${where}`;
  if (r.status >= 400 && !isEnvelope(r.text)) return `no envelope: ${where}`;
  if (STACK_TRACE.test(r.text)) return `internals in the body: ${where}`;
  return undefined;
}

async function send(base: string, token: string, cases: HostileCase[]): Promise<Sent[]> {
  return mapLimit(cases, 4, async (c) => {
    try {
      const r = await rawRequest(base, {
        method: c.method,
        url: c.url,
        headers: { ...c.headers, authorization: `Bearer ${token}` },
        body: c.body,
      });
      return { c, r };
    } catch (err) {
      // A reset connection counts as a failure: the service must answer, not drop.
      return { c, r: { status: -1, headers: {}, text: String(err) } };
    }
  });
}

/** Row counts of every Postgres table that carries `account_sid`, plus readable request records. */
async function snapshot(acct: SeededAccount): Promise<Record<string, number>> {
  const pool = testPool();
  const tables = await pool.query<{ table_name: string }>(
    `SELECT DISTINCT table_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND column_name = 'account_sid' ORDER BY table_name`,
  );
  const out: Record<string, number> = {};
  for (const { table_name } of tables.rows) {
    const r = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${pg.escapeIdentifier(table_name)} WHERE account_sid = $1`,
      [acct.accountSid],
    );
    out[table_name] = r.rows[0]!.n;
  }
  out['clickhouse:requests'] = (await listAllRequests(acct.token, acct.accountSid, acct.bucketSid)).length;
  return out;
}

/** Every seeded resource is still readable by its owner. */
async function expectSeedIntact(acct: SeededAccount, doc: OpenApiDoc): Promise<void> {
  const gone: string[] = [];
  for (const ep of endpoints(doc)) {
    if (ep.method !== 'GET' || !ep.path.includes('Sid}') || !ep.path.startsWith('/v1/accounts/')) continue;
    const names = [...ep.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    if (!names.every((n) => acct.params[n] !== undefined)) continue;
    if (ep.path.endsWith('/executions') || ep.path.endsWith('/stats')) continue;
    // Members are read by administrators' sessions only (users:read is not an API-token scope).
    if (ep.path.endsWith('/users')) continue;
    const r = await rawRequest(testEnv().apiUrl, {
      method: 'GET',
      url: fillPath(ep.path, acct.params),
      headers: { authorization: `Bearer ${acct.token}` },
    });
    if (r.status !== 200) gone.push(`${ep.path} -> ${r.status}`);
  }
  expect(gone).toEqual([]);
}

let doc: OpenApiDoc;
let attacker: SeededAccount;
let victim: SeededAccount;

async function seeded(): Promise<SeededAccount> {
  const a = await newAccount();
  return seedResources(
    { apiUrl: testEnv().apiUrl, ingestUrl: testEnv().ingestUrl },
    { accountSid: a.accountSid, bucketSid: a.bucketSid, token: a.apiToken },
  );
}

beforeAll(async () => {
  const res = await rawRequest(testEnv().apiUrl, { method: 'GET', url: '/v1/openapi.json' });
  doc = JSON.parse(res.text) as OpenApiDoc;
  [attacker, victim] = await Promise.all([seeded(), seeded()]);
});

function allCases(): HostileCase[] {
  return endpoints(doc).flatMap((ep) =>
    hostileCases(ep, doc, { params: attacker.params, bodyLimit: API_BODY_LIMIT }),
  );
}

describe('hostile input on every API route', () => {
  it('covers every operation of the OpenAPI document', () => {
    const ops = endpoints(doc);
    expect(ops.length).toBeGreaterThanOrEqual(40);
    const cases = allCases();
    const covered = new Set(cases.map((c) => c.endpoint));
    // Operations without parameters or a body (e.g. /v1/authentication/me) get no variants here;
    // the security matrix covers them.
    const missing = ops
      .filter((ep) => ep.path.includes('{') || ep.op.parameters?.length || ep.op.requestBody)
      .map((ep) => `${ep.method} ${ep.path}`)
      .filter((n) => !covered.has(n));
    expect(missing).toEqual([]);
  });

  it('refuses malformed, mistyped, oversized and misaddressed requests with a 4xx envelope and changes nothing', async () => {
    const cases = allCases().filter((c) => c.expect === 'reject');
    expect(cases.length).toBeGreaterThan(1000);
    const [beforeA, beforeV] = [await snapshot(attacker), await snapshot(victim)];
    const sent = await send(testEnv().apiUrl, attacker.token, cases);
    const problems = sent.map(problem).filter(Boolean);
    expect(problems.slice(0, 30)).toEqual([]);
    expect(await snapshot(attacker)).toEqual(beforeA);
    expect(await snapshot(victim)).toEqual(beforeV);
  }, 600_000);

  it('never answers a 5xx to NUL bytes, invalid UTF-8, SQL fragments, traversal and long strings', async () => {
    const cases = allCases().filter((c) => c.expect === 'any');
    expect(cases.length).toBeGreaterThan(1000);
    const beforeA = await snapshot(attacker);
    const beforeV = await snapshot(victim);
    const sent = await send(testEnv().apiUrl, attacker.token, cases);
    const problems = sent.map(problem).filter(Boolean);
    expect(problems.slice(0, 30)).toEqual([]);
    // Some of these are valid input (a bucket may be named "' OR '1'='1"): the attacker's account
    // may gain rows, but loses none, and the other account is untouched.
    const afterA = await snapshot(attacker);
    for (const [table, n] of Object.entries(beforeA)) expect(afterA[table], table).toBeGreaterThanOrEqual(n);
    expect(afterA['clickhouse:requests']).toBe(beforeA['clickhouse:requests']);
    expect(await snapshot(victim)).toEqual(beforeV);
    await expectSeedIntact(attacker, doc);
    await expectSeedIntact(victim, doc);
  }, 600_000);

  it('answers each kind of bad input with the right status, code and field', async () => {
    const a = attacker;
    const base = testEnv().apiUrl;
    const req = (method: string, url: string, body?: string | Buffer, headers: Record<string, string> = {}) =>
      rawRequest(base, {
        method,
        url,
        body,
        headers: {
          authorization: `Bearer ${a.token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
      });
    const buckets = `/v1/accounts/${a.accountSid}/buckets`;
    const json = (r: RawResponse) =>
      JSON.parse(r.text) as { error: { code: string; message: string; details: Record<string, string> } };

    let r = await req('POST', buckets, '{"name": ');
    expect([r.status, json(r).error.code, json(r).error.message]).toEqual([
      400,
      'VALIDATION_ERROR',
      'Body is not valid JSON',
    ]);
    r = await req('POST', buckets, '{"name":"x","__proto__":{"admin":true}}');
    expect([r.status, json(r).error.code, json(r).error.message]).toEqual([
      400,
      'VALIDATION_ERROR',
      'Body contains a forbidden key (__proto__, or constructor.prototype)',
    ]);
    // Clients that send `Content-Type: application/json` on every call: an empty body is no body.
    r = await req('POST', buckets, '');
    expect([r.status, json(r).error.code]).toEqual([400, 'VALIDATION_ERROR']);
    const made = await req('POST', buckets, '{"name":"empty-body delete"}');
    expect(made.status, made.text).toBe(201);
    const madeSid = (JSON.parse(made.text) as { sid: string }).sid;
    r = await req('DELETE', `${buckets}/${madeSid}`, '');
    expect([r.status, JSON.parse(r.text)]).toEqual([200, { sid: madeSid, deleted: true }]);
    // text/plain has a parser in Fastify: the body is then a string, not the object the route needs.
    r = await req('POST', buckets, '{"name":"x"}', { 'content-type': 'text/plain' });
    expect([r.status, json(r).error.code]).toEqual([400, 'VALIDATION_ERROR']);
    r = await req('POST', buckets, '<name>x</name>', { 'content-type': 'application/xml' });
    expect([r.status, json(r).error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    r = await req('POST', buckets, JSON.stringify({ name: 'x'.repeat(API_BODY_LIMIT) }));
    expect([r.status, json(r).error.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    r = await req('POST', buckets, '{}');
    expect(r.status).toBe(400);
    expect(json(r).error.details).toHaveProperty(['body.name']);
    r = await req('POST', buckets, '{"name":"ok","zzExtra":1}');
    expect(r.status).toBe(400);
    expect(json(r).error.details['body.zzExtra']).toBe('is not a known field');
    for (const wrong of ['123', 'true', '["x"]', '{"a":1}', 'null']) {
      r = await req('POST', buckets, `{"name":${wrong}}`);
      expect([wrong, r.status, Object.keys(json(r).error.details)]).toEqual([wrong, 400, ['body.name']]);
    }
    r = await req('POST', buckets, deepArrays(10_000));
    expect(r.status).toBe(400);
    r = await req('POST', buckets, `{"name":${deepArrays(10_000)}}`);
    expect(r.status).toBe(400);

    // NUL in text that reaches Postgres: the store refuses it (SQLSTATE 22021), the API says 400.
    r = await req('POST', buckets, JSON.stringify({ name: 'a\u0000b' }));
    expect([r.status, json(r).error.code]).toEqual([400, 'VALIDATION_ERROR']);
    r = await req(
      'POST',
      `/v1/accounts/${a.accountSid}/events`,
      JSON.stringify({ type: 'custom', name: 'n', metadata: { k: 'v\u0000' } }),
    );
    expect([r.status, json(r).error.code]).toEqual([400, 'VALIDATION_ERROR']);
    r = await req('GET', `${buckets}/bkt_%00`);
    expect([400, 404]).toContain(r.status);
    r = await req('GET', `${buckets}/${a.bucketSid}/requests?path=%2Fa%00b`);
    expect(r.status).toBeLessThan(500);

    // Invalid sids, traversal, undecodable and over-long segments name nothing.
    for (const seg of [
      'bkt_short',
      '..%2F..%2Fetc%2Fpasswd',
      '%2e%2e%2f',
      "'%20OR%20'1'%3D'1",
      'b'.repeat(300),
    ]) {
      r = await req('GET', `${buckets}/${seg}`);
      expect([seg.slice(0, 20), r.status, json(r).error.code]).toEqual([
        seg.slice(0, 20),
        404,
        'RESOURCE_NOT_FOUND',
      ]);
    }
    r = await req('GET', `${buckets}/%C3%28`);
    expect([r.status, json(r).error.code]).toEqual([400, 'VALIDATION_ERROR']);

    // page and limit: negative, zero, too large, not numbers.
    for (const q of [
      'limit=-1',
      'limit=0',
      'limit=101',
      'limit=99999999999999999999',
      'limit=abc',
      'limit=1.5',
      'page=0',
      'page=-5',
      'page=1e400',
      'page=NaN',
    ]) {
      r = await req('GET', `${buckets}?${q}`);
      expect([q, r.status]).toEqual([q, 400]);
      expect(Object.keys(json(r).error.details).join(), q).toMatch(/querystring\.(limit|page)/);
    }
    // page × limit is capped (docs/security.md "Limits"): deep paging is a 400 naming `page`.
    r = await req('GET', `${buckets}?page=1000000&limit=100`);
    expect(r.status).toBe(400);
    expect(json(r).error.code).toBe('VALIDATION_ERROR');
    expect(Object.keys(json(r).error.details)).toEqual(['page']);
    r = await req('GET', `${buckets}?page=100&limit=100`);
    expect([r.status, JSON.parse(r.text)]).toEqual([200, { hasMore: false, records: [] }]);
  }, 120_000);

  it('keeps SQL fragments in search criteria and stream views as data, inside the caller’s bucket', async () => {
    const a = attacker;
    const base = `/v1/accounts/${a.accountSid}/buckets/${a.bucketSid}`;
    const auth = { authorization: `Bearer ${a.token}` };
    const total = (await listAllRequests(a.token, a.accountSid, a.bucketSid)).length;
    expect(total).toBeGreaterThan(0);
    const fragments = [
      ...SQL_FRAGMENTS,
      'path:"\' OR 1=1 --"',
      'path:/x) OR (1=1',
      "method:GET' OR '1'='1",
      'status:500 OR 1=1',
      "tag:a=b'); DROP TABLE requests; --",
      'host:`whoami`',
      "env:prod01' UNION ALL SELECT * FROM system.tables --",
    ];
    for (const q of fragments) {
      const r = await rawRequest(testEnv().apiUrl, {
        method: 'GET',
        url: `${base}/requests?limit=100&q=${encodeURIComponent(q)}`,
        headers: auth,
      });
      expect([q, r.status === 200 || r.status === 400]).toEqual([q, true]);
      if (r.status === 400) expect(isEnvelope(r.text)).toBe(true);
      else {
        const records = (JSON.parse(r.text) as { records: { bucketSid: string }[] }).records;
        expect(records.length).toBeLessThanOrEqual(total);
        for (const rec of records) expect(rec.bucketSid).toBe(a.bucketSid);
      }
      const sv = await rawRequest(testEnv().apiUrl, {
        method: 'POST',
        url: `${base}/streamViews`,
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'sql', criteria: q }),
      });
      expect([q, sv.status === 201 || sv.status === 400]).toEqual([q, true]);
      if (sv.status === 201) {
        const sid = (JSON.parse(sv.text) as { sid: string; criteria: string }).sid;
        const view = await rawRequest(testEnv().apiUrl, {
          method: 'GET',
          url: `${base}/requests?view=${sid}`,
          headers: auth,
        });
        expect(view.status).toBe(200);
        for (const rec of (JSON.parse(view.text) as { records: { bucketSid: string }[] }).records)
          expect(rec.bucketSid).toBe(a.bucketSid);
      }
    }
    // The victim's data is still all there.
    expect((await listAllRequests(victim.token, victim.accountSid, victim.bucketSid)).length).toBeGreaterThan(
      0,
    );
  }, 120_000);

  it('answers headers over 16 KB with 431 in the envelope, on both listeners, and keeps serving', async () => {
    for (const base of [testEnv().apiUrl, testEnv().ingestUrl]) {
      const r = await rawRequest(base, {
        method: 'GET',
        url: `/v1/accounts/${attacker.accountSid}/buckets`,
        headers: { authorization: `Bearer ${attacker.token}`, 'x-padding': 'p'.repeat(20 * 1024) },
      });
      expect(r.status).toBe(431);
      expect(isEnvelope(r.text)).toBe(true);
    }
    const ok = await rawRequest(testEnv().apiUrl, {
      method: 'GET',
      url: `/v1/accounts/${attacker.accountSid}/buckets`,
      headers: { authorization: `Bearer ${attacker.token}` },
    });
    expect(ok.status).toBe(200);
  });
});

describe('hostile input on the ingest listener', () => {
  const ingestUrl = (bucketSid: string) => `/v1/buckets/${bucketSid}/ingest`;
  const post = (acct: SeededAccount, body: string | Buffer, headers: Record<string, string> = {}) =>
    rawRequest(testEnv().ingestUrl, {
      method: 'POST',
      url: ingestUrl(acct.bucketSid),
      body,
      headers: { authorization: `Bearer ${acct.token}`, 'content-type': 'application/json', ...headers },
    });

  it('refuses bodies that are malformed, too deep, too large or a gzip bomb, with the envelope', async () => {
    const a = await seeded();
    const before = await snapshot(a);
    const cases: [string, string | Buffer, number, Record<string, string>?][] = [
      ['malformed', '{"records": [', 400],
      ['not an object', '[]', 400],
      ['records not an array', '{"records": {"a": 1}}', 400],
      ['records missing', '{}', 400],
      ['extra field', '{"records": [], "zz": 1}', 400],
      ['deep arrays', deepArrays(10_000), 400],
      ['raw NUL', '{"records": [\u0000]}', 400],
      [
        'over 5 MB',
        JSON.stringify({
          records: [makeRecord({ request: { path: '/x', body: 'x'.repeat(INGEST_BODY_LIMIT) } })],
        }),
        413,
      ],
      // 50 MB of zeros compress to ~50 KB: the limit applies to the decompressed size.
      ['gzip bomb', gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20)), 413, { 'content-encoding': 'gzip' }],
      ['bad encoding', '{"records": []}', 415, { 'content-encoding': 'br' }],
      ['text/plain', '{"records": []}', 400, { 'content-type': 'text/plain' }],
      ['xml', '<records/>', 415, { 'content-type': 'application/xml' }],
    ];
    const url = ingestUrl(a.bucketSid);
    for (const [label, body, status, headers] of cases) {
      const r = await rawRequest(testEnv().ingestUrl, {
        method: 'POST',
        url,
        body,
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json', ...headers },
      });
      expect([label, r.status, isEnvelope(r.text)]).toEqual([label, status, true]);
      expect(STACK_TRACE.test(r.text)).toBe(false);
    }
    // A deeply nested item is one invalid record: rejected on its own, the call is still a 202.
    const deep = await rawRequest(testEnv().ingestUrl, {
      method: 'POST',
      url,
      body: `{"records": ${deepArrays(10_000)}}`,
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
    });
    expect([deep.status, JSON.parse(deep.text)]).toMatchObject([
      202,
      { accepted: 0, rejected: [{ index: 0 }] },
    ]);
    // Unauthenticated big uploads are refused before the body is read.
    const anon = await rawRequest(testEnv().ingestUrl, {
      method: 'POST',
      url,
      body: 'x'.repeat(4 * 1024 * 1024),
      headers: { 'content-type': 'application/json' },
    });
    expect([anon.status, isEnvelope(anon.text)]).toEqual([401, true]);
    expect(await snapshot(a)).toEqual(before);
  }, 120_000);

  it('stores NUL bytes, invalid UTF-8, SQL fragments and traversal strings in records as data', async () => {
    const a = await seeded();
    const before = (await listAllRequests(a.token, a.accountSid, a.bucketSid)).length;
    const strange = ['a\u0000b', "' OR '1'='1", '../../etc/passwd', '\ud800', 'x'.repeat(60_000), 'ü√🙂'];
    const records = strange.map((s, i) =>
      makeRecord({
        contextSid: `hostile-${i}`,
        request: { method: 'GET', path: `/h/${i}`, host: s.slice(0, 100), headers: { 'x-h': s }, body: s },
      }),
    );
    let r = await post(a, JSON.stringify({ records }));
    expect([r.status, JSON.parse(r.text)]).toEqual([202, { accepted: strange.length, rejected: [] }]);
    // Invalid UTF-8 bytes in the body are read as U+FFFD, not refused with a 5xx.
    const bytes = Buffer.concat([
      Buffer.from(`{"records":[{"contextSid":"bad-utf8","request":{"method":"GET","path":"/u","body":"`),
      Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]),
      Buffer.from('"}}]}'),
    ]);
    r = await post(a, bytes);
    expect(r.status).toBe(202);
    const expected = before + strange.length + 1;
    const stored = await waitFor(
      async () => {
        const l = await listAllRequests(a.token, a.accountSid, a.bucketSid);
        return l.length >= expected ? l : undefined;
      },
      { timeoutMs: 30_000, what: 'hostile records stored' },
    );
    expect(stored).toHaveLength(expected);
    const byContext = new Map(stored.map((s) => [s.contextSid as string, s]));
    expect((byContext.get('hostile-0')!.request as { body: string }).body).toBe('a\u0000b');
    expect((byContext.get('hostile-1')!.request as { body: string }).body).toBe("' OR '1'='1");
  }, 120_000);

  it('records ClickHouse could refuse (101 days in one call, lone surrogates) never block the partition', async () => {
    const a = await seeded();
    const before = (await listAllRequests(a.token, a.accountSid, a.bucketSid)).length;
    // The requests table is partitioned by day: one block touching over 100 days was refused by
    // ClickHouse on every retry, and no later record of the Kafka partition was ever stored. Ingest
    // now refuses a createdAt before the retention (RETENTION_DAYS, TEST_RETENTION_DAYS here) per record; the days
    // inside it are accepted and stored in one block.
    const days = Array.from({ length: 101 }, (_, i) =>
      makeRecord({ contextSid: `day-${i}`, createdAt: new Date(Date.now() - i * 86_400_000).toISOString() }),
    );
    let r = await post(a, JSON.stringify({ records: days }));
    expect(r.status).toBe(202);
    const answer = JSON.parse(r.text) as { accepted: number; rejected: { index: number }[] };
    expect(answer.accepted).toBeGreaterThanOrEqual(TEST_RETENTION_DAYS - 1);
    expect(answer.accepted + answer.rejected.length).toBe(101);
    expect(answer.rejected.map((x) => x.index)).toEqual(
      Array.from({ length: answer.rejected.length }, (_, i) => 101 - answer.rejected.length + i),
    );
    r = await post(
      a,
      JSON.stringify({ records: [makeRecord({ contextSid: 'surrogate', note: 'x\ud800y' })] }),
    );
    expect(r.status).toBe(202);
    // Same bucket, so the same Kafka partition: this one is stored only if nothing blocks it.
    r = await post(a, JSON.stringify({ records: [makeRecord({ contextSid: 'after' })] }));
    expect(r.status).toBe(202);
    const stored = await waitFor(
      async () => {
        const l = await listAllRequests(a.token, a.accountSid, a.bucketSid);
        return l.some((x) => x.contextSid === 'after') ? l : undefined;
      },
      { timeoutMs: 30_000, what: 'the record sent after the hostile ones' },
    );
    const contexts = new Set(stored.map((x) => x.contextSid));
    expect(contexts.has('surrogate')).toBe(true);
    // Days within the retention window are all there (older ones may already be expired by TTL).
    for (let i = 0; i < TEST_RETENTION_DAYS - 2; i++) expect(contexts.has(`day-${i}`), `day-${i}`).toBe(true);
    expect(stored.length).toBeLessThanOrEqual(before + 103);
  }, 120_000);

  it('rejects alone a record holding a __proto__ or constructor.prototype key; its batch is stored', async () => {
    const a = await seeded();
    const ctx = `proto-${Date.now()}`;
    const poisoned = makeRecord({ contextSid: `${ctx}-poisoned` });
    const tagged = [makeRecord({ contextSid: `${ctx}-0` }), makeRecord({ contextSid: `${ctx}-1` })];
    // The middle record's request headers carry the key (JSON.stringify cannot write one).
    const body = JSON.stringify({
      records: [
        tagged[0],
        { ...poisoned, request: { ...(poisoned.request as object), headers: { accept: '*/*' } } },
        tagged[1],
      ],
    }).replace('"headers":{"accept"', '"headers":{"__proto__":{"admin":true},"accept"');
    expect(body).toContain('__proto__');
    const r = await post(a, body);
    expect(r.status, r.text).toBe(202);
    const out = JSON.parse(r.text) as {
      accepted: number;
      rejected: { index: number; error: { code: string; message: string } }[];
    };
    expect(out.accepted).toBe(2);
    expect(out.rejected).toEqual([
      {
        index: 1,
        error: expect.objectContaining({
          code: 'VALIDATION_ERROR',
          message: 'Record contains a forbidden key (__proto__, or constructor.prototype)',
        }),
      },
    ]);
    const stored = await waitFor(
      async () => {
        const ctxs = (await listAllRequests(a.token, a.accountSid, a.bucketSid)).map((x) => x.contextSid);
        return tagged.every((t) => ctxs.includes(t.contextSid)) ? ctxs : undefined;
      },
      { timeoutMs: 20_000, what: 'the two other records stored' },
    );
    expect(stored).not.toContain(poisoned.contextSid);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('random record batches never get a 5xx, and exactly the accepted records are stored', async () => {
    const a = await seeded();
    const before = (await listAllRequests(a.token, a.accountSid, a.bucketSid)).length;
    let accepted = 0;
    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.string({ unit: 'binary', maxLength: 50 }),
      fc.constantFrom('a\u0000b', "' OR 1=1 --", -1, 1e308, null, 'req_bad'),
    );
    const field = fc.constantFrom(
      'sid',
      'createdAt',
      'environmentSid',
      'direction',
      'note',
      'request',
      'response',
      'timings',
      'zz',
    );
    const subField = fc.constantFrom(
      'method',
      'path',
      'port',
      'url',
      'headers',
      'statusCode',
      'duration',
      'size',
    );
    const record = fc.oneof(
      fc.constant(null).map(() => makeRecord()),
      fc.tuple(field, value).map(([k, v]) => ({ ...makeRecord(), [k]: v })),
      fc.tuple(fc.constantFrom('request', 'response', 'timings'), subField, value).map(([part, k, v]) => {
        const r = makeRecord();
        return { ...r, [part]: { ...(r[part] as object), [k]: v } };
      }),
      value,
    );
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 15 }), async (batch) => {
        const r = await post(a, JSON.stringify({ records: batch }));
        expect(r.status).toBeLessThan(500);
        // Every item is judged on its own, objects or not: the batch is 202 and each item is
        // either accepted or rejected with VALIDATION_ERROR (a non-object item is a rejected record).
        expect(r.status).toBe(202);
        const body = JSON.parse(r.text) as {
          accepted: number;
          rejected: { index: number; error: { code: string } }[];
        };
        expect(body.accepted + body.rejected.length).toBe(batch.length);
        for (const rej of body.rejected) expect(rej.error.code).toBe('VALIDATION_ERROR');
        batch.forEach((x, i) => {
          if (x === null || typeof x !== 'object' || Array.isArray(x)) {
            expect(body.rejected.some((rej) => rej.index === i)).toBe(true);
          }
        });
        accepted += body.accepted;
      }),
      { numRuns: 40 },
    );
    expect(accepted).toBeGreaterThan(0);
    const stored = await waitFor(
      async () => {
        const n = (await listAllRequests(a.token, a.accountSid, a.bucketSid)).length;
        return n >= before + accepted ? n : undefined;
      },
      { timeoutMs: 30_000, what: 'accepted records stored' },
    );
    expect(stored).toBe(before + accepted);
  }, 180_000);
});

/**
 * Nesting depth (docs/security.md "Limits"): every JSON input nests at most MAX_JSON_DEPTH levels.
 * A deeper ingest record is rejected alone; any other body is a 400 in the envelope. Beyond the
 * limit, serialising a record (JSON.stringify) could exhaust the call stack: one such record used
 * to take the ingest worker down for every tenant.
 */
describe('nesting depth', () => {
  /** `n` arrays nested in each other, as a value (level 1 is the outermost array). */
  const nested = (n: number): unknown => JSON.parse(deepArrays(n)) as unknown;
  /**
   * `value` as JSON text with 5,000 nested arrays in place of every DEEP marker: JSON.stringify
   * itself cannot write a value that deep (the very failure the limit guards against).
   */
  const DEEP = '__deep__';
  const text = (value: unknown) => JSON.stringify(value).replaceAll(`"${DEEP}"`, deepArrays(5_000));
  const phrase = `nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`;
  const json = (r: RawResponse) =>
    JSON.parse(r.text) as {
      accepted?: number;
      rejected?: {
        index: number;
        error: { code: string; message: string; details: Record<string, string> };
      }[];
      error?: { code: string; message: string; details: Record<string, string> };
    };

  /** Pids of the test stack's ingest worker processes (ROLES=ingest children of the service). */
  function ingestWorkerPids(): number[] {
    const pids: number[] = [];
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let env: string[];
      try {
        env = fs.readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      } catch {
        continue;
      }
      if (env.includes('ROLES=ingest') && env.includes(`DATA_DIR=${testEnv().dataDir}`))
        pids.push(Number(entry));
    }
    return pids.sort((x, y) => x - y);
  }
  const exits = () => fs.readFileSync(testEnv().serviceLog, 'utf8').split('ingest process exited').length - 1;

  it('rejects a 5,000-deep record alone, keeps other tenants’ records and never restarts the ingest worker', async () => {
    const [a, b] = await Promise.all([newAccount(), newAccount()]);
    const workers = ingestWorkerPids();
    expect(workers.length).toBeGreaterThan(0);
    const exitsBefore = exits();
    const deep = makeRecord({
      contextSid: 'deep',
      request: { method: 'POST', path: '/d', body: DEEP },
    });
    // The attacker repeats the deep record while another tenant sends ordinary ones at the same moment.
    const rounds = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const [bad, good] = await Promise.all([
          rawRequest(testEnv().ingestUrl, {
            method: 'POST',
            url: `/v1/buckets/${a.bucketSid}/ingest`,
            body: text({ records: [makeRecord({ contextSid: `kept-${i}` }), deep] }),
            headers: { authorization: `Bearer ${a.apiToken}`, 'content-type': 'application/json' },
          }),
          ingest(b.bucketSid, b.apiToken, [makeRecord({ contextSid: `other-${i}` })]),
        ]);
        return { bad, good };
      }),
    );
    for (const { bad, good } of rounds) {
      expect([good.status, good.body]).toEqual([202, { accepted: 1, rejected: [] }]);
      expect([bad.status, JSON.parse(bad.text)]).toEqual([
        202,
        {
          accepted: 1,
          rejected: [
            {
              index: 1,
              error: {
                code: 'VALIDATION_ERROR',
                message: `Record ${phrase}`,
                details: { 'request.body': phrase },
              },
            },
          ],
        },
      ]);
    }
    const stored = async (acct: TestAccount, n: number) =>
      waitFor(
        async () => {
          const l = await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid);
          return l.length >= n ? l : undefined;
        },
        { timeoutMs: 30_000, what: `${n} records stored` },
      );
    expect((await stored(b, 5)).map((r) => r.contextSid).sort()).toEqual(
      Array.from({ length: 5 }, (_, i) => `other-${i}`),
    );
    expect((await stored(a, 5)).map((r) => r.contextSid).sort()).toEqual(
      Array.from({ length: 5 }, (_, i) => `kept-${i}`),
    );
    // The same worker processes serve, and none exited in between.
    expect(ingestWorkerPids()).toEqual(workers);
    expect(exits()).toBe(exitsBefore);
  }, 120_000);

  it('counts the limit from the record: 64 levels are stored, 65 are rejected', async () => {
    const a = await newAccount();
    // The record is level 1, `request` level 2: a body of 62 levels makes 64, of 63 makes 65.
    const atLimit = makeRecord({
      contextSid: 'at-limit',
      request: { method: 'GET', path: '/l', body: nested(62) },
    });
    const over = makeRecord({ contextSid: 'over', request: { method: 'GET', path: '/l', body: nested(63) } });
    const r = await ingest(a.bucketSid, a.apiToken, [atLimit, over]);
    expect([r.status, r.body.accepted, r.body.rejected.map((x) => x.index)]).toEqual([202, 1, [1]]);
    const [one] = await waitFor(
      async () => {
        const l = await listAllRequests(a.apiToken, a.accountSid, a.bucketSid);
        return l.length ? l : undefined;
      },
      { timeoutMs: 30_000, what: 'the record at the limit' },
    );
    expect(one!.contextSid).toBe('at-limit');
    expect((one!.request as { body: unknown }).body).toEqual(nested(62));
  }, 60_000);

  it('answers the SDK wire format per call: one deep call is a 400, a deep call in an array is rejected alone', async () => {
    const a = await newAccount();
    const call = (body: unknown) => ({
      request: { method: 'POST', url: 'https://api.example.com/sdk', headers: {}, body },
      response: { status: 200, headers: {}, responseTime: 3 },
    });
    const send = (body: unknown) =>
      rawRequest(testEnv().ingestUrl, {
        method: 'POST',
        url: '/',
        body: text(body),
        headers: {
          authorization: `Bearer ${a.apiToken}`,
          'api-traffic-bucket-sid': a.bucketSid,
          'content-type': 'application/json',
        },
      });
    let r = await send(call(DEEP));
    expect([r.status, json(r).error]).toEqual([
      400,
      { code: 'VALIDATION_ERROR', message: `Call ${phrase}`, details: { 'request.body': phrase } },
    ]);
    r = await send([call(DEEP), call({ ok: true })]);
    expect([r.status, json(r).accepted, json(r).rejected?.map((x) => [x.index, x.error.message])]).toEqual([
      202,
      1,
      [[0, `Call ${phrase}`]],
    ]);
  }, 60_000);

  it('refuses deep event metadata, workflow bodies, automation data and rule preview samples with a 400', async () => {
    const a = await newAccount();
    const base = `/v1/accounts/${a.accountSid}`;
    const wf = `${base}/environments/prod01/buckets/${a.bucketSid}/workflows`;
    const workflow = (action: Record<string, unknown>) => ({
      name: 'deep',
      trigger: { type: 'error', conditions: [{ statusCode: 500 }] },
      actions: [action],
    });
    const cases: [string, string, unknown, string][] = [
      [
        'event metadata',
        `${base}/events`,
        { type: 'custom', name: 'n', metadata: { tree: DEEP } },
        'body.metadata.tree',
      ],
      [
        'webhook body',
        wf,
        workflow({
          type: 'webhook',
          config: { url: 'https://hooks.example.test/in', body: { x: DEEP } },
        }),
        'body.actions.0.config.body',
      ],
      [
        'automation data',
        wf,
        workflow({
          type: 'automation',
          config: { flow_id: 'f', webhook_url: 'https://auto.example.test/f', data: DEEP },
        }),
        'body.actions.0.config.data',
      ],
      ['workflow preview', `${wf}/preview`, { configs: [{ body: DEEP }] }, 'body.configs.0.body'],
      [
        'redaction preview',
        `${base}/redactions/preview`,
        {
          rule: { fieldPath: '$.request.body', redactionType: 'mask' },
          record: makeRecord({ request: { method: 'GET', path: '/p', body: DEEP } }),
        },
        'body.record.request.body',
      ],
      [
        'exclusion preview',
        `${base}/exclusions/preview`,
        {
          rule: { pathPattern: '/p', method: 'GET' },
          record: makeRecord({ request: { method: 'GET', path: '/p', body: DEEP } }),
        },
        'body.record.request.body',
      ],
    ];
    for (const [label, url, body, field] of cases) {
      const r = await rawRequest(testEnv().apiUrl, {
        method: 'POST',
        url,
        body: text(body),
        headers: { authorization: `Bearer ${a.apiToken}`, 'content-type': 'application/json' },
      });
      expect([label, r.status, json(r).error]).toEqual([
        label,
        400,
        { code: 'VALIDATION_ERROR', message: `The body ${phrase}`, details: { [field]: phrase } },
      ]);
    }
  }, 60_000);

  it('refuses deep nesting in every free-form place of the ingest listener’s inputs (fuzz corpus)', async () => {
    const a = await newAccount();
    const ms = Date.now() - 1000;
    const otlp = {
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'deep' } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
                  name: 'GET /deep',
                  kind: 2,
                  startTimeUnixNano: `${ms}000000`,
                  endTimeUnixNano: `${ms + 5}000000`,
                  attributes: [
                    { key: 'http.request.method', value: { stringValue: 'GET' } },
                    { key: 'url.path', value: { stringValue: '/deep' } },
                    { key: 'http.response.status_code', value: { intValue: '200' } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    };
    const call = {
      request: { method: 'GET', url: 'https://api.example.com/deep', headers: {}, body: null },
      response: { status: 200, headers: {}, body: null, responseTime: 3 },
      tags: [],
    };
    const cases = ingestDeepCases(a.bucketSid, makeRecord(), call, otlp);
    expect(cases.length).toBeGreaterThanOrEqual(20);
    for (const c of cases) {
      const r = await rawRequest(testEnv().ingestUrl, {
        method: 'POST',
        url: c.url,
        body: c.body,
        headers: { ...c.headers, authorization: `Bearer ${a.apiToken}` },
      });
      if (c.expect.status === 400) {
        expect([c.label, r.status, isEnvelope(r.text), json(r).error?.message]).toEqual([
          c.label,
          400,
          true,
          expect.stringContaining(phrase),
        ]);
      } else {
        const answer = json(r);
        expect([c.label, r.status, answer.accepted, answer.rejected?.map((x) => x.index)]).toEqual([
          c.label,
          202,
          c.expect.accepted,
          c.expect.rejected,
        ]);
        expect(answer.rejected?.[0]?.error.message, c.label).toMatch(phrase);
      }
    }
  }, 120_000);

  it('refuses a deep OTLP/JSON export with a 400 in the envelope', async () => {
    const a = await newAccount();
    const r = await rawRequest(testEnv().ingestUrl, {
      method: 'POST',
      url: '/v1/traces',
      body: text({ resourceSpans: [], extension: DEEP }),
      headers: {
        authorization: `Bearer ${a.apiToken}`,
        'content-type': 'application/json',
        'x-tapline-bucket': a.bucketSid,
      },
    });
    expect([r.status, json(r).error]).toEqual([
      400,
      { code: 'VALIDATION_ERROR', message: `The body ${phrase}`, details: { 'body.extension': phrase } },
    ]);
  }, 60_000);
});
