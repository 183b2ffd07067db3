import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { pino } from 'pino';
import { Kafka, logLevel, Partitioners, type Consumer, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { compileProcessorRules, type ProcessorRules } from '../../services/processor/compiled-rules.js';
import { RuleSnapshot } from '../../services/processor/rule-snapshot.js';
import { PgListener } from '../../services/shared/pg-listener.js';
import { createPool } from '../../services/shared/postgres.js';
import { validator } from '../../services/shared/schemas.js';
import { TOPICS } from '../../services/shared/topics.js';
import {
  api,
  ingest,
  listAllRequests,
  makeRecord,
  newAccount,
  testEnv,
  testPool,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { mcpToken } from '../helpers/scoped-token.js';

/**
 * The processor through the whole pipeline: ingest -> Kafka -> processor (exclusions, redaction,
 * endpoint templates, request/error triggers) -> ClickHouse -> API, plus the jobs it puts on
 * `workflow.actions` and the poison messages it puts on `traffic.requests.dlq`.
 * Rules are created through the REST API (their NOTIFY reaches the processor's rule snapshot).
 */

type Rec = Record<string, unknown> & {
  sid: string;
  request: Record<string, unknown>;
  response: Record<string, unknown> | null;
};

const tag = () => randomBytes(5).toString('hex');

// ------------------------------------------------------------------ Kafka taps (own consumer groups)

interface Tap {
  consumer: Consumer;
  messages: KafkaMessage[];
}

let kafka: Kafka;
let actionsTap: Tap;
let dlqTap: Tap;

async function tap(topic: string): Promise<Tap> {
  const consumer = kafka.consumer({ groupId: `test-processing-${topic}-${tag()}`, maxWaitTimeInMs: 200 });
  const messages: KafkaMessage[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let joined = false;
  consumer.on(consumer.events.GROUP_JOIN, () => (joined = true));
  await consumer.run({
    eachMessage: async ({ message }) => {
      messages.push(message);
    },
  });
  await waitFor(() => joined, { timeoutMs: 30_000, what: `consumer of ${topic} joined` });
  return { consumer, messages };
}

beforeAll(async () => {
  kafka = new Kafka({
    clientId: 'test-processing',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  [actionsTap, dlqTap] = await Promise.all([tap(TOPICS.actions), tap(TOPICS.requestsDlq)]);
});

afterAll(async () => {
  await Promise.all([actionsTap?.consumer.disconnect(), dlqTap?.consumer.disconnect()]);
});

const jobsOf = (accountSid: string): ActionJob[] =>
  actionsTap.messages
    .map((m) => JSON.parse(m.value!.toString('utf8')) as ActionJob)
    .filter((j) => j.accountSid === accountSid);

// ------------------------------------------------------------------ helpers

const base = (a: TestAccount) => `/v1/accounts/${a.accountSid}`;

async function createExclusion(a: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(a.apiToken).post<{ sid: string }>(`${base(a)}/exclusions`, { name: 'x', ...body });
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

async function createRedaction(a: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(a.apiToken).post<{ sid: string }>(`${base(a)}/redactions`, {
    name: 'r',
    redactAt: 'server',
    ...body,
  });
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

async function createWorkflow(
  a: TestAccount,
  env: string,
  trigger: Record<string, unknown>,
  name = 'wf',
): Promise<string> {
  const res = await api(a.apiToken).post<{ sid: string }>(
    `${base(a)}/environments/${env}/buckets/${a.bucketSid}/workflows`,
    {
      name,
      trigger,
      // Nothing listens on port 9: the action runner's attempts fail, which these tests ignore.
      actions: [
        { type: 'webhook', config: { url: 'http://127.0.0.1:9/hook', body: { m: '{{trigger.message}}' } } },
      ],
    },
  );
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

/**
 * Ingests `records` plus a sentinel in one call (one Kafka message, processed as a whole) and
 * returns what the bucket holds once the sentinel is stored.
 */
async function ingestAndSettle(a: TestAccount, records: Record<string, unknown>[], bucketSid = a.bucketSid) {
  const sentinel = makeRecord({ contextSid: `sentinel-${tag()}` });
  const res = await ingest(bucketSid, a.apiToken, [...records, sentinel]);
  expect(res.status, res.text).toBe(202);
  expect(res.body.rejected).toEqual([]);
  return waitFor(
    async () => {
      const all = (await listAllRequests(a.apiToken, a.accountSid, bucketSid)) as Rec[];
      return all.some((r) => r.contextSid === sentinel.contextSid) ? all : undefined;
    },
    { timeoutMs: 20_000, what: 'sentinel stored' },
  );
}

const stored = (all: Rec[], ctx: string) => all.find((r) => r.contextSid === ctx);

/** Re-ingests a probe until `applied(storedProbe)` holds; returns the milliseconds it took. */
async function untilApplied(
  a: TestAccount,
  probe: () => Record<string, unknown>,
  applied: (stored: Rec | undefined) => boolean,
  timeoutMs = 5000,
): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const ctx = `probe-${tag()}`;
    const all = await ingestAndSettle(a, [{ ...probe(), contextSid: ctx }]);
    if (applied(stored(all, ctx))) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) throw new Error(`rule change not applied within ${timeoutMs} ms`);
  }
}

/**
 * How long after `since` (a rule change) records start following it: sends a probe, each with its
 * own sentinel, every 200 ms until a probe whose outcome is known shows the change (or 6 s have
 * passed), lets every probe settle, and returns when the first probe of the run of applied probes
 * that ends the sequence was sent. This measures the processor's rule reload, not how long the
 * pipeline takes to store a record, which a loaded machine stretches to seconds.
 */
async function appliedAfter(
  a: TestAccount,
  since: number,
  probe: () => Record<string, unknown>,
  applied: (stored: Rec | undefined) => boolean,
): Promise<number> {
  const sent: { ctx: string; sentinel: string; at: number }[] = [];
  let all: Rec[] = [];
  const outcome = (p: (typeof sent)[number]) =>
    all.some((r) => r.contextSid === p.sentinel) ? applied(stored(all, p.ctx)) : undefined;
  for (;;) {
    const p = { ctx: `probe-${tag()}`, sentinel: `sentinel-${tag()}`, at: Date.now() };
    const res = await ingest(a.bucketSid, a.apiToken, [
      { ...probe(), contextSid: p.ctx },
      makeRecord({ contextSid: p.sentinel }),
    ]);
    expect(res.status, res.text).toBe(202);
    sent.push(p);
    await new Promise((r) => setTimeout(r, 200));
    all = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Rec[];
    const known = sent.filter((q) => outcome(q) !== undefined);
    if (known.length > 0 && outcome(known[known.length - 1]!) === true) break;
    if (Date.now() - since > 6000) break;
  }
  const last = sent[sent.length - 1]!;
  all = await waitFor(
    async () => {
      const now = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Rec[];
      return now.some((r) => r.contextSid === last.sentinel) ? now : undefined;
    },
    { timeoutMs: 20_000, what: 'last probe stored' },
  );
  let first = sent.length;
  while (first > 0 && outcome(sent[first - 1]!) === true) first--;
  if (first === sent.length) return Number.POSITIVE_INFINITY;
  return Math.max(0, sent[first]!.at - since);
}

function rec(method: string, path: string, status: number, ctx: string, extra: Record<string, unknown> = {}) {
  const r = makeRecord({ contextSid: ctx, ...extra });
  Object.assign(r.request as Record<string, unknown>, {
    method,
    path,
    url: `https://api.example.com${path}`,
  });
  (r.request as Record<string, unknown>).queryString = null;
  (r.response as Record<string, unknown>).statusCode = status;
  return r;
}

// ------------------------------------------------------------------ exclusions

describe('exclusion rules (docs/rules.md)', () => {
  it('exclude the five path-pattern forms and successful preflights; other traffic is stored and counted', async () => {
    const a = await newAccount();
    await createExclusion(a, { pathPattern: '/health', method: '*' });
    await createExclusion(a, { pathPattern: '/static*', method: 'GET' });
    await createExclusion(a, { pathPattern: '*/ping', method: '*' });
    await createExclusion(a, { pathPattern: '/users/*/avatar', method: '*' });
    await createExclusion(a, { pathPattern: '/a/*/v*/h*', method: '*' });
    await createExclusion(a, { pathPattern: '*', method: 'OPTIONS', statusCode: 200 });
    // Rules load in one consistent read: once the last-created one applies, all do.
    await untilApplied(
      a,
      () => rec('OPTIONS', '/probe', 200, ''),
      (s) => s === undefined,
    );
    const before = await api(a.apiToken).get<{ excluded: { total: number } }>(
      `${base(a)}/buckets/${a.bucketSid}/stats`,
    );

    const excluded = [
      rec('GET', '/health', 200, 'x-exact'),
      rec('GET', '/static/app.js', 200, 'x-suffix'),
      rec('GET', '/static', 304, 'x-suffix-empty'),
      rec('POST', '/svc/v2/ping', 200, 'x-prefix'),
      rec('GET', '/users/42/avatar', 200, 'x-middle'),
      rec('GET', '/users/a/b/avatar', 200, 'x-middle-slashes'),
      rec('GET', '/a/x/v1/health', 200, 'x-several'),
      rec('OPTIONS', '/api/orders', 200, 'x-preflight'),
      rec('GET', '/health?probe=1', 503, 'x-exact-query'),
    ];
    const kept = [
      rec('GET', '/health/deep', 200, 'k-exact'),
      rec('POST', '/static/upload', 200, 'k-suffix-method'),
      rec('GET', '/ping/x', 200, 'k-prefix'),
      rec('GET', '/users/42/avatar.png', 200, 'k-middle'),
      rec('GET', '/a/x/v1/status', 200, 'k-several'),
      rec('OPTIONS', '/api/orders', 204, 'k-preflight-status'),
      rec('GET', '/api/orders', 200, 'k-plain'),
    ];
    const all = await ingestAndSettle(a, [...excluded, ...kept]);
    for (const r of excluded)
      expect(stored(all, r.contextSid as string), r.contextSid as string).toBeUndefined();
    for (const r of kept) expect(stored(all, r.contextSid as string), r.contextSid as string).toBeDefined();

    const stats = await waitFor(async () => {
      const s = await api(a.apiToken).get<{
        bucketSid: string;
        excluded: { total: number; last24h: number };
      }>(`${base(a)}/buckets/${a.bucketSid}/stats`);
      return s.body.excluded.total === before.body.excluded.total + excluded.length ? s : undefined;
    });
    expect(stats.status).toBe(200);
    expect(stats.body.bucketSid).toBe(a.bucketSid);
    expect(stats.body.excluded.last24h).toBe(stats.body.excluded.total);
  });

  it('`*` alone scoped to one bucket and one environment excludes only there', async () => {
    const a = await newAccount();
    const other = await api(a.apiToken).post<{ sid: string }>(`${base(a)}/buckets`, { name: `b-${tag()}` });
    expect(other.status).toBe(201);
    await createExclusion(a, { pathPattern: '*', method: '*', buckets: [other.body.sid] });
    await createExclusion(a, { pathPattern: '*', method: '*', environments: ['stag01'] });
    await untilApplied(
      a,
      () => rec('GET', '/x', 200, '', { environmentSid: 'stag01' }),
      (s) => s === undefined,
    );
    const all = await ingestAndSettle(a, [
      rec('GET', '/x', 200, 'prod', { environmentSid: 'prod01' }),
      rec('GET', '/x', 200, 'stag', { environmentSid: 'stag01' }),
    ]);
    expect(stored(all, 'prod')).toBeDefined();
    expect(stored(all, 'stag')).toBeUndefined();

    const otherAll = await ingest(other.body.sid, a.apiToken, [rec('GET', '/y', 200, 'other')]);
    expect(otherAll.status).toBe(202);
    await waitFor(async () => {
      const s = await api(a.apiToken).get<{ excluded: { total: number } }>(
        `${base(a)}/buckets/${other.body.sid}/stats`,
      );
      return s.body.excluded.total === 1;
    });
    expect(await listAllRequests(a.apiToken, a.accountSid, other.body.sid)).toEqual([]);
  });

  it('bucket stats answer 404 for another account and 401 without a token', async () => {
    const a = await newAccount();
    const b = await newAccount();
    const res = await api(b.apiToken).get(`${base(a)}/buckets/${a.bucketSid}/stats`);
    expect(res.status).toBe(404);
    const res2 = await api(b.apiToken).get(`${base(b)}/buckets/${a.bucketSid}/stats`);
    expect(res2.status).toBe(404);
    const res3 = await api().get(`${base(a)}/buckets/${a.bucketSid}/stats`);
    expect(res3.status).toBe(401);
  });
});

// ------------------------------------------------------------------ rule changes

describe('rule changes through the API', () => {
  it('a created, changed, disabled and deleted rule applies within 5 seconds', async () => {
    const a = await newAccount();
    const probe = (path: string) => () => rec('GET', path, 200, '');
    const gone = (s: Rec | undefined) => s === undefined;
    const there = (s: Rec | undefined) => s !== undefined;

    let since = Date.now();
    const sid = await createExclusion(a, { pathPattern: '/old', method: '*' });
    expect(await appliedAfter(a, since, probe('/old'), gone)).toBeLessThan(5000);

    since = Date.now();
    const put = await api(a.apiToken).put(`${base(a)}/exclusions/${sid}`, {
      name: 'x',
      pathPattern: '/new',
      method: '*',
      isActive: true,
    });
    expect(put.status, put.text).toBe(200);
    expect(await appliedAfter(a, since, probe('/new'), gone)).toBeLessThan(5000);
    // One rule snapshot replaces the other: once `/new` is excluded, the first `/old` probe is kept.
    expect(await appliedAfter(a, Date.now(), probe('/old'), there)).toBeLessThan(200);

    since = Date.now();
    const off = await api(a.apiToken).put(`${base(a)}/exclusions/${sid}`, {
      name: 'x',
      pathPattern: '/new',
      method: '*',
      isActive: false,
    });
    expect(off.status, off.text).toBe(200);
    expect(await appliedAfter(a, since, probe('/new'), there)).toBeLessThan(5000);

    since = Date.now();
    const rdc = await createRedaction(a, {
      fieldPath: '$..secret',
      redactionType: 'replace',
      replacementValue: 'R',
    });
    const withSecret = () =>
      rec('POST', '/r', 200, '', { request: { method: 'POST', path: '/r', body: { secret: 's3' } } });
    const secretOf = (s: Rec | undefined) => (s?.request.body as { secret?: string } | undefined)?.secret;
    expect(await appliedAfter(a, since, withSecret, (s) => secretOf(s) === 'R')).toBeLessThan(5000);
    since = Date.now();
    const del = await api(a.apiToken).delete(`${base(a)}/redactions/${rdc}`);
    expect(del.status).toBe(200);
    expect(await appliedAfter(a, since, withSecret, (s) => secretOf(s) === 's3')).toBeLessThan(5000);
  });
});

// ------------------------------------------------------------------ redaction

describe('server-side redaction (docs/rules.md)', () => {
  it('each type on body fields, an array wildcard, a header, a query parameter and $..password; nothing leaks to storage or jobs', async () => {
    const a = await newAccount();
    await createRedaction(a, { fieldPath: '$.request.body.card', redactionType: 'mask' });
    await createRedaction(a, { fieldPath: '$.request.body.cvv', redactionType: 'remove' });
    await createRedaction(a, { fieldPath: '$.request.body.email', redactionType: 'hash' });
    await createRedaction(a, {
      fieldPath: '$.response.body.token',
      redactionType: 'replace',
      replacementValue: '[hidden]',
    });
    await createRedaction(a, { fieldPath: '$.request.body.items[*].serial', redactionType: 'mask' });
    await createRedaction(a, {
      fieldPath: '$.request.headers.authorization',
      redactionType: 'replace',
      replacementValue: 'Bearer ***',
    });
    await createRedaction(a, { fieldPath: '$.request.queryString.apiKey', redactionType: 'remove' });
    await createRedaction(a, { fieldPath: '$..password', redactionType: 'hash' });
    // A client-side rule is served to SDKs and must not be applied again here.
    await createRedaction(a, {
      fieldPath: '$.request.body.clientOnly',
      redactionType: 'remove',
      redactAt: 'client',
    });
    const wf = await createWorkflow(a, 'prod01', { type: 'request', conditions: [{ path: '/pay*' }] });

    const secrets = {
      card: '4111-1111-1111-1111',
      cvv: '987',
      email: 'alice@example.test',
      token: 'tok-ABCDEF-123',
      serial1: 'SN-777111',
      serial2: 'SN-888222',
      auth: 'Bearer sk_live_SECRET42',
      apiKey: 'KEY-XYZ-555',
      pw1: 'hunter2-pass',
      pw2: 'nested-pass-99',
    };
    const payRecord = (ctx: string) =>
      makeRecord({
        contextSid: ctx,
        request: {
          method: 'POST',
          path: '/pay',
          url: `https://api.example.com/pay?apiKey=${secrets.apiKey}&page=1`,
          queryString: { apiKey: secrets.apiKey, page: '1' },
          headers: { Authorization: secrets.auth, 'content-type': 'application/json' },
          body: JSON.stringify({
            card: secrets.card,
            cvv: secrets.cvv,
            email: secrets.email,
            items: [
              { serial: secrets.serial1, qty: 1 },
              { serial: secrets.serial2, qty: 2 },
            ],
            user: { name: 'Alice', password: secrets.pw1 },
            clientOnly: 'kept',
          }),
          contentType: 'application/json',
        },
        response: {
          statusCode: 201,
          headers: { 'content-type': 'application/json' },
          body: { token: secrets.token, profile: { password: secrets.pw2 } },
        },
      });
    // Rules load in one consistent read: once the last-created (the workflow) applies, all do.
    await untilApplied(
      a,
      () => payRecord(''),
      (s) => Array.isArray(s?.workflowExecutions) && s.workflowExecutions.length > 0,
    );

    const all = await ingestAndSettle(a, [payRecord('pay')]);
    const listed = stored(all, 'pay')!;
    expect(listed).toBeDefined();
    const one = await api(a.apiToken).get<Rec>(`${base(a)}/buckets/${a.bucketSid}/requests/${listed.sid}`);
    expect(one.status).toBe(200);
    const r = one.body;
    const body = JSON.parse(r.request.body as string) as Record<string, unknown>;
    const { createHash } = await import('node:crypto');
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    expect(body.card).toBe('****-****-****-****');
    expect(body).not.toHaveProperty('cvv');
    expect(body.email).toBe(sha(secrets.email));
    expect(body.items).toEqual([
      { serial: '**-******', qty: 1 },
      { serial: '**-******', qty: 2 },
    ]);
    expect(body.user).toEqual({ name: 'Alice', password: sha(secrets.pw1) });
    expect(body.clientOnly).toBe('kept');
    expect((r.request.headers as Record<string, unknown>).Authorization).toBe('Bearer ***');
    expect(r.request.queryString).toEqual({ page: '1' });
    expect(r.request.url).toBe('https://api.example.com/pay?page=1');
    expect(r.response!.body).toEqual({ token: '[hidden]', profile: { password: sha(secrets.pw2) } });

    // Nothing redacted in the stored record (the ClickHouse `record` column the API returns) ...
    const storedJson = JSON.stringify([one.body, listed]);
    for (const [k, v] of Object.entries(secrets)) expect(storedJson, k).not.toContain(v);

    // ... nor in the action job of the request trigger that matched it.
    const job = await waitFor(() => jobsOf(a.accountSid).find((j) => j.requestSid === listed.sid), {
      what: 'action job of the redacted record',
    });
    expect(job.workflowSid).toBe(wf);
    const jobJson = JSON.stringify(job);
    for (const [k, v] of Object.entries(secrets)) expect(jobJson, k).not.toContain(v);
    expect(job.context.request.headers).toMatchObject({ Authorization: 'Bearer ***' });
    expect(job.context.request.query).toEqual({ page: '1' });
  });
  it('every type on every location: a body field, an array wildcard, a header and a query parameter', async () => {
    const a = await newAccount();
    const { createHash } = await import('node:crypto');
    const sha = (v: string) => createHash('sha256').update(v).digest('hex');
    const types = ['mask', 'remove', 'hash', 'replace'] as const;
    const locations = {
      body: (t: string) => `$.request.body.f_${t}`,
      array: (t: string) => `$.request.body.list[*].a_${t}`,
      header: (t: string) => `$.request.headers.x-${t}`,
      query: (t: string) => `$.request.queryString.q_${t}`,
    };
    for (const [, path] of Object.entries(locations))
      for (const t of types)
        await createRedaction(a, {
          fieldPath: path(t),
          redactionType: t,
          replacementValue: t === 'replace' ? 'R!' : null,
        });
    const value = (loc: string, t: string) => `${loc}-${t}-Secret-123`;
    const make = (ctx: string) => {
      const query = Object.fromEntries(types.map((t) => [`q_${t}`, value('query', t)]));
      return makeRecord({
        contextSid: ctx,
        request: {
          method: 'POST',
          path: '/matrix',
          url: `https://api.example.com/matrix?${new URLSearchParams(query).toString()}`,
          queryString: query,
          headers: Object.fromEntries(types.map((t) => [`X-${t.toUpperCase()}`, value('header', t)])),
          body: JSON.stringify({
            ...Object.fromEntries(types.map((t) => [`f_${t}`, value('body', t)])),
            list: [1, 2].map((i) =>
              Object.fromEntries(types.map((t) => [`a_${t}`, `${value('array', t)}-${i}`])),
            ),
          }),
          contentType: 'application/json',
        },
      });
    };
    // The last-created rule is the query `replace`: once it applies, all sixteen do.
    await untilApplied(
      a,
      () => make(''),
      (s) => (s?.request.queryString as Record<string, string> | undefined)?.q_replace === 'R!',
    );
    const all = await ingestAndSettle(a, [make('matrix')]);
    const r = stored(all, 'matrix')!;
    const body = JSON.parse(r.request.body as string) as Record<string, unknown>;
    const headers = r.request.headers as Record<string, unknown>;
    const query = r.request.queryString as Record<string, unknown>;
    const expected = (v: string, t: string) =>
      t === 'mask'
        ? v.replace(/[A-Za-z0-9]/g, '*')
        : t === 'hash'
          ? sha(v)
          : t === 'replace'
            ? 'R!'
            : undefined;
    for (const t of types) {
      expect(body[`f_${t}`], `body ${t}`).toEqual(expected(value('body', t), t));
      expect(headers[`X-${t.toUpperCase()}`], `header ${t}`).toEqual(expected(value('header', t), t));
      expect(query[`q_${t}`], `query ${t}`).toEqual(expected(value('query', t), t));
      (body.list as Record<string, unknown>[]).forEach((item, i) =>
        expect(item[`a_${t}`], `array ${t} ${i}`).toEqual(expected(`${value('array', t)}-${i + 1}`, t)),
      );
    }
    expect('f_remove' in body || 'X-REMOVE' in headers || 'q_remove' in query).toBe(false);
    const json = JSON.stringify(r);
    expect(json).not.toMatch(/Secret-123/);
  });

  it("a record without an environment gets every environment's rules, as every environment's workflows see it", async () => {
    const a = await newAccount();
    await createRedaction(a, {
      fieldPath: '$.request.headers.x-secret',
      redactionType: 'replace',
      replacementValue: '[gone]',
      environments: ['prod01'],
    });
    const shapeA = await api(a.apiToken).post(`${base(a)}/redactions`, {
      type: 'card',
      level: 'full',
      environments: ['prod01'],
    });
    expect(shapeA.status, shapeA.text).toBe(201);
    const wf = await createWorkflow(a, 'prod01', { type: 'request', conditions: [{ path: '/env-pay' }] });
    const SECRET = 'PLAIN-secret-value-77';
    const CARD = '4111 1111 1111 1111';
    const payRecord = (ctx: string, environmentSid: string | null) => {
      const r = rec('POST', '/env-pay', 200, ctx);
      if (environmentSid === null) delete r.environmentSid;
      else r.environmentSid = environmentSid;
      Object.assign(r.request as Record<string, unknown>, {
        headers: { 'x-secret': SECRET, 'content-type': 'application/json' },
        body: JSON.stringify({ card: CARD, note: 'kept' }),
      });
      return r;
    };
    // The workflow is created last: once it fires for a probe, every rule is in the snapshot.
    await untilApplied(
      a,
      () => payRecord('', 'prod01'),
      (s) => Array.isArray(s?.workflowExecutions) && s.workflowExecutions.length > 0,
    );

    const all = await ingestAndSettle(a, [
      payRecord('none', null),
      payRecord('prod', 'prod01'),
      payRecord('stag', 'stag01'),
    ]);
    const get = async (ctx: string) => {
      const listed = stored(all, ctx);
      expect(listed, ctx).toBeDefined();
      const one = await api(a.apiToken).get<Rec>(`${base(a)}/buckets/${a.bucketSid}/requests/${listed!.sid}`);
      expect(one.status).toBe(200);
      return one.body;
    };
    const none = await get('none');
    expect(none.environmentSid).toBeNull();
    for (const r of [none, await get('prod')]) {
      expect((r.request.headers as Record<string, unknown>)['x-secret']).toBe('[gone]');
      const body = JSON.parse(r.request.body as string) as Record<string, unknown>;
      expect(body.note).toBe('kept');
      expect(JSON.stringify(r)).not.toContain(SECRET);
      expect(JSON.stringify(r)).not.toContain(CARD);
    }
    // A record of another environment is that environment's: prod01's rules leave it as sent.
    const stag = await get('stag');
    expect((stag.request.headers as Record<string, unknown>)['x-secret']).toBe(SECRET);
    expect(JSON.parse(stag.request.body as string)).toEqual({ card: CARD, note: 'kept' });

    // prod01's workflow fires for the record without an environment; its job holds no secret.
    const job = await waitFor(() => jobsOf(a.accountSid).find((j) => j.requestSid === none.sid), {
      what: 'action job of the record without an environment',
    });
    expect(job.workflowSid).toBe(wf);
    expect(JSON.stringify(job)).not.toContain(SECRET);
    expect(JSON.stringify(job)).not.toContain(CARD);
  });
});

// ------------------------------------------------------------------ what redaction reaches

/** The live tail's text from its opening until `close()` (server-sent events, as the dashboard reads it). */
async function openLiveText(a: TestAccount) {
  const ac = new AbortController();
  const res = await fetch(`${testEnv().apiUrl}${base(a)}/buckets/${a.bucketSid}/requests/live`, {
    headers: { authorization: `Bearer ${a.apiToken}` },
    signal: ac.signal,
  });
  expect(res.status).toBe(200);
  let text = '';
  const done = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        text += decoder.decode(chunk, { stream: true });
    } catch {
      // aborted by close()
    }
  })();
  return {
    text: () => text,
    close: async () => {
      ac.abort();
      await done;
    },
  };
}

/** The text of each MCP tool's answer, through the official client over Streamable HTTP. */
async function mcpAnswers(a: TestAccount, calls: [string, Record<string, unknown>][]): Promise<string[]> {
  const { token } = await mcpToken(a, 'prod01');
  const client = new Client({ name: 'tapline-processing-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${testEnv().apiUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  try {
    const out: string[] = [];
    for (const [name, args] of calls) {
      const res = (await client.callTool({ name, arguments: args })) as {
        isError?: boolean;
        content: { text: string }[];
      };
      expect(res.isError, `${name}: ${res.content[0]?.text}`).toBeFalsy();
      out.push(res.content[0]!.text);
    }
    return out;
  } finally {
    await client.close();
  }
}

describe('what redaction reaches beyond headers, query and bodies', () => {
  const SECRETS = [
    'ENDPOINTPW111',
    'TRACEBEARER343434',
    'TAGAPIKEY121212',
    'NOTEPASSWORD000',
    'CTXPW222',
    'HOSTPW333',
    'URLPW444',
    'FRAGAT666',
    'HDRINLINE1010zz',
  ];
  const leaks = (v: unknown) => {
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    return SECRETS.filter((x) => text.includes(x));
  };

  it('Shape A on `*`: endpoint, traces, tags, note, contextSid, userinfo, fragment and header pairs; the stored record, the live tail, the metrics, MCP and the action job hold no plaintext', async () => {
    const a = await newAccount();
    for (const type of ['authorization', 'api_key', 'password']) {
      const res = await api(a.apiToken).post(`${base(a)}/redactions`, { type, level: 'full' });
      expect(res.status, res.text).toBe(201);
    }
    const wf = await createWorkflow(a, 'prod01', { type: 'request', conditions: [{ path: '/audit*' }] });
    // Rules load in one consistent read: once the last-created (the workflow) applies, all do. The
    // probe holds no audit secret, so a probe stored before the rules is harmless.
    const probe = () => {
      const p = rec('GET', '/audit-probe', 200, '');
      (p.request as Record<string, unknown>).headers = { 'x-api-key': 'probe-value' };
      return p;
    };
    await untilApplied(
      a,
      probe,
      (s) =>
        (s?.request.headers as Record<string, unknown> | undefined)?.['x-api-key'] ===
          '[REDACTED:password]' &&
        Array.isArray(s?.workflowExecutions) &&
        s.workflowExecutions.length > 0,
    );

    const live = await openLiveText(a);
    const audit = makeRecord({
      contextSid: 'audit-password=CTXPW222',
      endpoint: '/login?password=ENDPOINTPW111',
      traces: ['Authorization: Bearer TRACEBEARER343434'],
      tags: [{ key: 'api_key', value: 'TAGAPIKEY121212' }],
      note: 'password=NOTEPASSWORD000',
      request: {
        method: 'GET',
        host: 'user:HOSTPW333@api.example.com',
        path: '/audit?Access_Token=x',
        url: 'https://user:URLPW444@api.example.com/audit?Access_Token=x#access_token=FRAGAT666',
        queryString: { Access_Token: 'x' },
        headers: { 'X-Custom': 'token=HDRINLINE1010zz' },
      },
    });
    const all = await ingestAndSettle(a, [audit]);
    const listed = all.find((r) => String(r.request.path).startsWith('/audit?'))!;
    expect(listed).toBeDefined();
    const one = await api(a.apiToken).get<Rec>(`${base(a)}/buckets/${a.bucketSid}/requests/${listed.sid}`);
    expect(one.status).toBe(200);
    for (const r of [listed, one.body]) {
      expect(leaks(r)).toEqual([]);
      expect(r).toMatchObject({
        endpoint: '/login?password=[REDACTED:password]',
        traces: ['Authorization: [REDACTED:authorization]'],
        tags: [{ key: 'api_key', value: '[REDACTED:password]' }],
        note: 'password=[REDACTED:password]',
        contextSid: 'audit-password=[REDACTED:password]',
        redacted: true,
      });
      expect(r.request).toMatchObject({
        host: 'user:[REDACTED:password]@api.example.com',
        url: 'https://user:[REDACTED:password]@api.example.com/audit?Access_Token=[REDACTED:password]#access_token=[REDACTED:password]',
        headers: { 'X-Custom': 'token=[REDACTED:password]' },
      });
    }

    // The live tail sends the stored record.
    await waitFor(() => live.text().includes(listed.sid), { what: 'the record on the live tail' });
    await live.close();
    expect(leaks(live.text())).toEqual([]);

    // The metrics group by the redacted endpoint.
    const query = `bucketSid=${a.bucketSid}`;
    const perf = await waitFor(
      async () => {
        const res = await api(a.apiToken).get<{ metrics: { group: string }[] }>(
          `${base(a)}/metrics/performance?groupBy=endpoint&${query}`,
        );
        return res.body.metrics?.some((m) => m.group === '/login?password=[REDACTED:password]')
          ? res
          : undefined;
      },
      { what: 'the redacted endpoint in the performance metrics' },
    );
    expect(leaks(perf.body)).toEqual([]);
    const summary = await api(a.apiToken).get<{ topEndpoints: { path: string }[] }>(
      `${base(a)}/metrics/summary?${query}`,
    );
    expect(summary.status).toBe(200);
    expect(summary.body.topEndpoints.map((e) => e.path)).toContain('/login?password=[REDACTED:password]');
    expect(leaks(summary.body)).toEqual([]);

    // MCP answers from the same stored data.
    const answers = await mcpAnswers(a, [
      ['get_request', { requestSid: listed.sid }],
      ['search_requests', { q: 'path:/audit*' }],
      ['get_endpoint_performance', {}],
      ['get_metrics_summary', {}],
    ]);
    expect(answers[0]).toContain('[REDACTED:password]');
    expect(answers[1]).toContain(listed.sid);
    expect(answers[2]).toContain('/login?password=[REDACTED:password]');
    for (const text of answers) expect(leaks(text)).toEqual([]);

    // The request trigger's action job (a webhook's context) is built from the redacted record.
    const job = await waitFor(() => jobsOf(a.accountSid).find((j) => j.requestSid === listed.sid), {
      what: 'action job of the audit record',
    });
    expect(job.workflowSid).toBe(wf);
    expect(leaks(job)).toEqual([]);
  });

  it('Shape B: a query rule reaches the endpoint and the fragment; a field name reaches tags and the userinfo password', async () => {
    const a = await newAccount();
    await createRedaction(a, {
      fieldPath: '$.request.queryString.password',
      redactionType: 'replace',
      replacementValue: 'R',
    });
    await createRedaction(a, { fieldPath: '$.request.queryString.access_token', redactionType: 'remove' });
    await createRedaction(a, { fieldPath: '$.request.headers.api_key', redactionType: 'hash' });
    // The last-created rule applies to a header: then all three do.
    const probe = () => {
      const p = rec('GET', '/b-probe', 200, '');
      (p.request as Record<string, unknown>).headers = { api_key: 'probe' };
      return p;
    };
    await untilApplied(
      a,
      probe,
      (s) =>
        (s?.request.headers as Record<string, unknown> | undefined)?.api_key ===
        createHash('sha256').update('probe').digest('hex'),
    );
    const r = rec('GET', '/audit', 200, 'shape-b', {
      endpoint: '/login?password=ENDPOINTPW111',
      tags: [
        { key: 'api_key', value: 'TAGAPIKEY121212' },
        { key: 'release', value: '2026.11.3' },
      ],
    });
    Object.assign(r.request as Record<string, unknown>, {
      host: 'user:HOSTPW333@api.example.com',
      url: 'https://user:URLPW444@api.example.com/audit#access_token=FRAGAT666',
    });
    const all = await ingestAndSettle(a, [r]);
    const s = stored(all, 'shape-b')!;
    expect(leaks(s)).toEqual([]);
    expect(s.endpoint).toBe('/login?password=R');
    expect(s.tags).toEqual([
      { key: 'api_key', value: createHash('sha256').update('TAGAPIKEY121212').digest('hex') },
      { key: 'release', value: '2026.11.3' },
    ]);
    // Every rule above names a credential: in order, the replace, then the remove drops it.
    expect(s.request.host).toBe('user@api.example.com');
    expect(s.request.url).toBe('https://user@api.example.com/audit');
    const perf = await waitFor(
      async () => {
        const res = await api(a.apiToken).get<{ metrics: { group: string }[] }>(
          `${base(a)}/metrics/performance?groupBy=endpoint&bucketSid=${a.bucketSid}`,
        );
        return res.body.metrics?.some((m) => m.group === '/login?password=R') ? res : undefined;
      },
      { what: 'the redacted endpoint in the performance metrics' },
    );
    expect(leaks(perf.body)).toEqual([]);
  });
});

// ------------------------------------------------------------------ triggers

describe('request and error triggers (docs/workflows.md)', () => {
  it('produce one job per hit with the documented context, and the record lists its executions', async () => {
    const a = await newAccount();
    const bucket = await api(a.apiToken).get<{ name: string }>(`${base(a)}/buckets/${a.bucketSid}`);
    const account = await testPool().query<{ name: string }>('SELECT name FROM accounts WHERE sid = $1', [
      a.accountSid,
    ]);
    const reqWf = await createWorkflow(a, 'prod01', {
      type: 'request',
      conditions: [{ path: '/orders/*', method: 'POST' }],
    });
    const errWf = await createWorkflow(a, 'prod01', { type: 'error', conditions: [{ statusCode: 500 }] });
    const anyErrWf = await createWorkflow(a, 'prod01', { type: 'error', conditions: [] });
    const otherEnvWf = await createWorkflow(a, 'stag01', { type: 'request', conditions: [] });
    // Loaded once the last workflow fires for a probe.
    await untilApplied(
      a,
      () => rec('GET', '/probe', 200, '', { environmentSid: 'stag01' }),
      (s) => Array.isArray(s?.workflowExecutions) && s.workflowExecutions.length > 0,
    );

    const all = await ingestAndSettle(a, [
      rec('POST', '/orders/17', 201, 't-request', { timings: { duration: 42.5 } }),
      rec('GET', '/orders/17', 500, 't-error'),
      rec('POST', '/orders/18', 404, 't-request-and-any-error'),
      rec('GET', '/other', 200, 't-none'),
    ]);
    const execs = (ctx: string) =>
      (stored(all, ctx)!.workflowExecutions ?? []) as {
        sid: string;
        workflowSid: string;
        triggerType: string;
      }[];
    expect(execs('t-request').map((e) => [e.workflowSid, e.triggerType])).toEqual([[reqWf, 'request']]);
    expect(
      execs('t-error')
        .map((e) => e.workflowSid)
        .sort(),
    ).toEqual([errWf, anyErrWf].sort());
    expect(
      execs('t-request-and-any-error')
        .map((e) => e.workflowSid)
        .sort(),
    ).toEqual([reqWf, anyErrWf].sort());
    expect(stored(all, 't-none')!.workflowExecutions).toBeNull();
    for (const e of execs('t-error')) expect(e.sid).toMatch(/^wfx_[A-Za-z0-9]{27}$/);

    const t = stored(all, 't-request')!;
    const job = await waitFor(() => jobsOf(a.accountSid).find((j) => j.requestSid === t.sid), {
      what: 'request job',
    });
    const validate = validator('actionJob');
    expect(validate(job), JSON.stringify(validate.errors)).toBe(true);
    expect(job).toMatchObject({
      v: 1,
      executionSid: execs('t-request')[0]!.sid,
      accountSid: a.accountSid,
      workflowSid: reqWf,
      bucketSid: a.bucketSid,
      environmentSid: 'prod01',
      trigger: { type: 'request' },
      requestSid: t.sid,
      context: {
        request: { method: 'POST', path: '/orders/17' },
        response: { statusCode: 201 },
        timings: { duration: 42.5, responseTime: 42.5 },
        bucket: { sid: a.bucketSid, name: bucket.body.name },
        environment: { name: 'prod01' },
      },
    });
    expect(job.context.account.name).toBe(account.rows[0]!.name);
    expect(job.trigger.message).toContain('/orders/17');

    const errSid = stored(all, 't-error')!.sid;
    const errJobs = await waitFor(() => {
      const js = jobsOf(a.accountSid).filter((j) => j.requestSid === errSid);
      return js.length === 2 ? js : undefined;
    });
    for (const j of errJobs) {
      expect(j.trigger.type).toBe('error');
      expect(j.context.response.statusCode).toBe(500);
    }
    const storedExecs = execs('t-error')
      .map((e) => e.sid)
      .sort();
    expect(errJobs.map((j) => j.executionSid).sort()).toEqual(storedExecs);
    // Jobs are keyed by workflow sid (per-workflow ordering on one partition).
    const keys = actionsTap.messages
      .filter((m) => JSON.parse(m.value!.toString('utf8')).requestSid === errSid)
      .map((m) => m.key!.toString());
    expect(keys.sort()).toEqual([errWf, anyErrWf].sort());
    // Nothing fired for the record of no workflow, nor for the other environment's workflow in prod01.
    const noneSid = stored(all, 't-none')!.sid;
    expect(jobsOf(a.accountSid).filter((j) => j.requestSid === noneSid)).toEqual([]);
    expect(
      jobsOf(a.accountSid).filter((j) => j.workflowSid === otherEnvWf && j.environmentSid === 'prod01'),
    ).toEqual([]);
  });

  it('stores endpoint templates beside the raw path', async () => {
    const a = await newAccount();
    const paths: [string, string][] = [
      ['/users/123/orders/9f8e7d6c5b4a39281706f5e4d3c2b1a0', '/users/{id}/orders/{id}'],
      ['/items/3fa85f64-5717-4562-b3fc-2c963f66afa6', '/items/{id}'],
      ['/v1/accounts/acc_Ab3dE5gH7jK9mN1pQ3sT5vX7zA9/buckets', '/v1/accounts/{id}/buckets'],
      ['/customers/cus_NffrFeUf1V2Hib', '/customers/{id}'],
      ['/health', '/health'],
    ];
    const all = await ingestAndSettle(
      a,
      paths.map(([p], i) => rec('GET', p, 200, `e${i}`)),
    );
    paths.forEach(([p, template], i) => {
      const s = stored(all, `e${i}`)!;
      expect(s.request.path).toBe(p);
      expect(s.endpoint).toBe(template);
    });
  });
});

// ------------------------------------------------------------------ dead letters

describe('dead letters', () => {
  it('poison messages go to the DLQ with a reason and the partition keeps flowing', async () => {
    const a = await newAccount();
    const marker = `poison-${tag()}`;
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    try {
      // Same key as the ingest listener uses (bucket sid): the same partition as the records after it.
      await producer.send({
        topic: TOPICS.requests,
        acks: -1,
        messages: [
          { key: a.bucketSid, value: `{not json ${marker}` },
          { key: a.bucketSid, value: JSON.stringify({ v: 1, accountSid: a.accountSid, marker }) },
        ],
      });
    } finally {
      await producer.disconnect();
    }
    const all = await ingestAndSettle(a, [rec('GET', '/after-poison', 200, 'after')]);
    expect(stored(all, 'after')).toBeDefined();

    const dead = await waitFor(() => {
      const d = dlqTap.messages.filter((m) => m.value?.toString('utf8').includes(marker));
      return d.length === 2 ? d : undefined;
    });
    const reasons = dead.map((m) => m.headers?.reason?.toString() ?? '');
    expect(reasons[0]).toBe('message header is not JSON');
    expect(reasons[1]).toMatch(/^message breaks kafkaRequestHeader/);
    for (const m of dead) {
      expect(m.headers?.partition?.toString()).toMatch(/^\d+$/);
      expect(m.headers?.offset?.toString()).toMatch(/^\d+$/);
    }
    expect(dead[0]!.headers!.partition!.toString()).toBe(dead[1]!.headers!.partition!.toString());
  });

  it('version 2 messages: a bad header dead-letters the message, a bad line only itself', async () => {
    const a = await newAccount();
    const marker = `poison2-${tag()}`;
    const good = {
      ...rec('GET', '/v2-line', 200, `${marker}-good`),
      sid: `req_${marker
        .replace(/[^A-Za-z0-9]/g, '')
        .padEnd(27, 'x')
        .slice(0, 27)}`,
      bucketSid: a.bucketSid,
      receivedAt: new Date().toISOString(),
    };
    const header = JSON.stringify({ v: 2, accountSid: a.accountSid, bucketSid: a.bucketSid });
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    try {
      await producer.send({
        topic: TOPICS.requests,
        acks: -1,
        messages: [
          { key: a.bucketSid, value: `{"v":2,"marker":"${marker}-head"}\n${JSON.stringify(good)}` },
          {
            key: a.bucketSid,
            value: [
              header,
              `{not json ${marker}-line`,
              JSON.stringify({ sid: 'req_x', marker: `${marker}-item`, createdAt: 'yesterday' }),
              '',
              JSON.stringify(good),
            ].join('\n'),
          },
        ],
      });
    } finally {
      await producer.disconnect();
    }
    // The good line of the second message is stored, with the columns' fields filled in.
    const all = await ingestAndSettle(a, [rec('GET', '/after-poison2', 200, 'after2')]);
    const s = stored(all, `${marker}-good`);
    expect(s).toBeDefined();
    expect(s!.accountSid).toBe(a.accountSid);
    expect(s!.bucketSid).toBe(a.bucketSid);
    expect(s!.endpoint).toBe('/v2-line');
    expect(s!.workflowExecutions).toBeNull();
    expect(all.filter((r) => r.contextSid === `${marker}-good`)).toHaveLength(1);
    const dead = await waitFor(() => {
      const d = dlqTap.messages.filter((m) => m.value?.toString('utf8').includes(marker));
      return d.length === 3 ? d : undefined;
    });
    const byReason = (re: RegExp) => dead.filter((m) => re.test(m.headers?.reason?.toString() ?? ''));
    expect(byReason(/^message breaks kafkaRequestHeader/)[0]!.value!.toString()).toContain(`${marker}-head`);
    expect(byReason(/^record line is not JSON$/)[0]!.value!.toString()).toBe(`{not json ${marker}-line`);
    expect(byReason(/^record breaks kafkaRequestItem/)[0]!.value!.toString()).toContain(`${marker}-item`);
  });
});

// ------------------------------------------------------------------ Postgres outage

/** A TCP relay to Postgres that the test can cut and restore: a real outage, seen from the client. */
async function relay(
  target: URL,
): Promise<{ url: string; down(): Promise<void>; up(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port), target.hostname);
        sockets.add(client).add(upstream);
        const cut = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', cut).on('close', cut);
        upstream.on('error', cut).on('close', cut);
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const down = async () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  };
  await listen();
  const url = new URL(target.toString());
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), down, up: listen, close: down };
}

describe('rule snapshot through a Postgres outage', () => {
  it('a client checked out of the pool when Postgres goes away rejects its query and crashes nothing', async () => {
    const proxy = await relay(new URL(testEnv().databaseUrl));
    const pool = createPool(proxy.url, 1, pino({ level: 'silent' }));
    try {
      const client = await pool.connect();
      // The pool takes its own error listener off a client it hands out; createPool's stays.
      expect(client.listenerCount('error')).toBeGreaterThan(0);
      const running = client.query('SELECT pg_sleep(10)');
      await new Promise((r) => setTimeout(r, 200));
      await proxy.down();
      await expect(running).rejects.toThrow(/Connection terminated/);
      client.release(true);
    } finally {
      await pool.end().catch(() => undefined);
      await proxy.close();
    }
  });

  it('keeps the last snapshot while Postgres is unreachable and catches up after it returns', async () => {
    const a = await newAccount();
    const pg = testPool();
    const insert = (sid: string, pattern: string) =>
      pg.query(
        `INSERT INTO exclusions (sid, account_sid, name, path_pattern, method) VALUES ($1, $2, 'outage', $3, '*')`,
        [sid, a.accountSid, pattern],
      );
    await insert(`xcl_${tag()}`, '/one');

    const log = pino({ level: 'silent' });
    const proxy = await relay(new URL(testEnv().databaseUrl));
    const pool = createPool(proxy.url, 2, log);
    const listener = new PgListener(proxy.url, log);
    await listener.start();
    const snap = new RuleSnapshot<ProcessorRules>({
      pool,
      listener,
      log,
      reloadMs: 60_000,
      compile: (r) => compileProcessorRules(r),
    });
    const patterns = () => (snap.rules(a.accountSid)?.exclusions ?? []).map((x) => x.pathPattern).sort();
    try {
      await snap.start();
      expect(patterns()).toEqual(['/one']);
      expect(snap.get(a.accountSid)!.forBucket(a.bucketSid).exclusions).toHaveLength(1);

      await proxy.down();
      // Written while the snapshot cannot see Postgres: its NOTIFY is lost with the connection.
      await insert(`xcl_${tag()}`, '/two');
      const failedBefore = snap.failedLoads;
      snap.reloadAll();
      await waitFor(() => snap.failedLoads > failedBefore, { what: 'a failed reload' });
      expect(patterns()).toEqual(['/one']);
      expect(snap.get(a.accountSid)!.forBucket(a.bucketSid).exclusions).toHaveLength(1);

      await proxy.up();
      // The listener reconnects and reloads everything (and the failed reload is retried).
      await waitFor(() => patterns().length === 2, { timeoutMs: 15_000, what: 'catch-up after the outage' });
      expect(patterns()).toEqual(['/one', '/two']);
    } finally {
      snap.stop();
      await listener.stop();
      await pool.end().catch(() => undefined);
      await proxy.close();
    }
  });
});
