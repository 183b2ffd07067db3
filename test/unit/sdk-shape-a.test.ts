import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { TaplineCore } from '../../sdk/node/src/client.js';
import { Tapline } from '../../sdk/node/src/index.js';
import { newRecordSid } from '../../sdk/node/src/sid.js';
import type { CapturedRecord } from '../../sdk/node/src/types.js';

/**
 * Shape A rules in the SDK (docs/sdk.md, "Settings and rules"): a real local HTTP server stands in
 * for the ingest and for `GET /v1/buckets/{b}/sdk`; the bytes it receives are checked for every
 * planted secret and every excluded record.
 */

const EMAIL = 'ann.secret@example.org';
const CARD = '4111 1111 1111 1111';
const CARD_Q = '4242424242424242';
const TOKEN = 'tok-Zq81xWv0';

/** The ingest and settings endpoint: `settings()` is asked on each GET; batches are kept as raw text. */
async function ingest(settings: () => Promise<Record<string, unknown>> | Record<string, unknown>) {
  const raw: string[] = [];
  const settingsAsked: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        settingsAsked.push(req.url ?? '');
        void Promise.resolve(settings()).then((s) => res.end(JSON.stringify(s)));
        return;
      }
      const text = gunzipSync(Buffer.concat(chunks)).toString('utf8');
      raw.push(text);
      const n = (JSON.parse(text) as { records: unknown[] }).records.length;
      res.statusCode = 202;
      res.end(JSON.stringify({ accepted: n, rejected: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const records = () =>
    raw.flatMap((t) => (JSON.parse(t) as { records: (CapturedRecord & { redacted?: boolean })[] }).records);
  return { url, raw, records, settingsAsked, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** An app server whose every request the SDK captures (`httpHandler`); it echoes a JSON body. */
async function app(tapline: Tapline) {
  const server = http.createServer(
    tapline.httpHandler((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const status = req.url?.startsWith('/internal/') ? 204 : 200;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(status === 204 ? undefined : JSON.stringify({ contact: EMAIL, ok: true }));
      });
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const SETTINGS = {
  bucketSid: 'bkt_test',
  clientId: 'c',
  redactAt: 'client',
  redactionRules: [],
  exclusionRules: [],
  sensitiveRules: [
    {
      sid: 'rda_email',
      type: 'email',
      pattern: null,
      applyTo: null,
      level: 'full',
      scopes: [],
      environments: null,
    },
    {
      sid: 'rda_card',
      type: 'card',
      pattern: null,
      applyTo: null,
      level: 'partial',
      scopes: ['*'],
      environments: null,
    },
    {
      sid: 'rda_tok',
      type: 'shopToken',
      pattern: 'tok-[A-Za-z0-9]{8}',
      applyTo: 'value',
      level: 'full',
      scopes: ['request.headers', 'request.body'],
      environments: null,
    },
  ],
  exclusionCriteria: [{ sid: 'xcl_internal', criteria: 'path:/internal/* status:204', environments: null }],
  settings: { enabled: true },
};

const open: { stop: () => Promise<unknown> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.stop();
});

async function withSdk(
  settings: () => Promise<Record<string, unknown>> | Record<string, unknown>,
  logs?: string[],
) {
  const ing = await ingest(settings);
  open.push({ stop: ing.close });
  const tapline = new Tapline({
    endpoint: ing.url,
    bucketSid: 'bkt_test',
    token: 't',
    handleProcessEvents: false,
    captureOutgoing: false,
    flushIntervalMs: 60_000,
    debug: logs !== undefined,
    logger: logs ? { debug: (obj, msg) => logs.push(`${msg} ${JSON.stringify(obj)}`) } : undefined,
  });
  open.push({ stop: () => tapline.shutdown(500) });
  const a = await app(tapline);
  open.push({ stop: a.close });
  return { ing, tapline, app: a };
}

async function call(base: string, path: string, init: RequestInit = {}): Promise<void> {
  const res = await fetch(`${base}${path}`, init);
  await res.arrayBuffer();
}

async function flushed(tapline: Tapline): Promise<void> {
  // The record is queued when the response finishes; the client's fetch may return just before.
  await new Promise((r) => setTimeout(r, 50));
  expect(await tapline.flush(5000)).toBe(true);
}

describe('sdk: Shape A rules from the SDK settings', () => {
  it('redacts secrets in the host and drops criteria-excluded calls before anything is sent', async () => {
    const { ing, tapline, app: a } = await withSdk(() => SETTINGS);
    while (!tapline.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 10));
    expect(tapline.stats()).toMatchObject({ sensitiveRules: 3, exclusionCriteria: 1 });

    const jsonBody = JSON.stringify({
      user: { email: EMAIL, cards: [{ number: CARD }] },
      note: 'order 1234',
    });
    await call(a.url, `/pay?card=${CARD_Q}&page=2`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-shop-token': TOKEN },
      body: jsonBody,
    });
    await call(a.url, '/text', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: `mail ${EMAIL} card ${CARD} token ${TOKEN}`,
    });
    await call(a.url, '/internal/ping', { method: 'POST', body: 'x' });
    await call(a.url, '/internal/other?keep=1', { method: 'GET' });
    await flushed(tapline);

    const bytes = ing.raw.join('\n');
    for (const secret of [EMAIL, CARD, CARD_Q, TOKEN, '4111111111111111', 'ann.secret'])
      expect(bytes).not.toContain(secret);
    const recs = ing.records();
    // `/internal/ping` answers 204 and is excluded; `/internal/other` too (also 204).
    expect(recs.map((r) => r.request.path).sort()).toEqual(['/pay', '/text']);
    expect(bytes).not.toContain('/internal/');
    expect(tapline.stats().excluded).toBe(2);

    const pay = recs.find((r) => r.request.path === '/pay')!;
    expect(pay.redacted).toBe(true);
    expect(JSON.parse(pay.request.body as string)).toEqual({
      user: { email: '[REDACTED:email]', cards: [{ number: '**** **** **** 1111' }] },
      note: 'order 1234',
    });
    expect(pay.request.headers['x-shop-token']).toBe('[REDACTED:shopToken]');
    expect(pay.request.queryString).toEqual({ card: '************4242', page: '2' });
    expect(JSON.parse(pay.response!.body as string)).toEqual({ contact: '[REDACTED:email]', ok: true });
    // Sizes stay as received.
    expect(pay.request.size).toBe(Buffer.byteLength(jsonBody));
    expect(pay.response!.size).toBe(Buffer.byteLength(JSON.stringify({ contact: EMAIL, ok: true })));

    const text = recs.find((r) => r.request.path === '/text')!;
    expect(text.request.body).toBe(
      'mail [REDACTED:email] card **** **** **** 1111 token [REDACTED:shopToken]',
    );
    expect(text.redacted).toBe(true);
  });

  it('skips a rule that does not compile, logs it at debug, and keeps capturing with the others', async () => {
    const logs: string[] = [];
    const settings = {
      ...SETTINGS,
      sensitiveRules: [
        // RE2 has no backreferences or lookaround: the engine refuses both.
        { sid: 'rda_bad', type: 'bad', pattern: '(a)\\1', applyTo: 'value', level: 'full', scopes: [] },
        { sid: 'rda_bad2', type: 'worse', pattern: '(?<=x)y', applyTo: 'value', level: 'full', scopes: [] },
        { sid: 'rda_unknown', type: '!!', level: 'full' },
        null,
        ...SETTINGS.sensitiveRules,
      ],
      exclusionCriteria: [
        { sid: 'xcl_bad', criteria: 'colour:red', environments: null },
        { sid: 'xcl_nostring', criteria: 42 },
        ...SETTINGS.exclusionCriteria,
      ],
    };
    const { ing, tapline, app: a } = await withSdk(() => settings, logs);
    while (!tapline.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 10));
    expect(tapline.stats()).toMatchObject({ sensitiveRules: 3, exclusionCriteria: 1 });

    await call(a.url, '/text', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: `to ${EMAIL}`,
    });
    await call(a.url, '/internal/ping', { method: 'POST', body: 'x' });
    await flushed(tapline);

    const recs = ing.records();
    expect(recs.map((r) => r.request.path)).toEqual(['/text']);
    expect(recs[0]!.request.body).toBe('to [REDACTED:email]');
    expect(ing.raw.join('\n')).not.toContain(EMAIL);
    expect(tapline.stats().internalErrors).toBe(0);
    const skipped = logs.find((l) => l.startsWith('Shape A rules that do not compile'));
    for (const sid of ['rda_bad', 'rda_bad2', 'rda_unknown', 'xcl_bad', 'xcl_nostring'])
      expect(skipped).toContain(sid);
  });

  it('applies the rules at send time to records captured before the settings answered', async () => {
    let answer: (() => void) | undefined;
    const gate = new Promise<void>((r) => (answer = r));
    const {
      ing,
      tapline,
      app: a,
    } = await withSdk(async () => {
      await gate;
      return SETTINGS;
    });
    await call(a.url, '/early', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: `card ${CARD}`,
    });
    await call(a.url, '/internal/early', { method: 'POST', body: 'x' });
    await new Promise((r) => setTimeout(r, 50));
    expect(tapline.stats().settingsLoaded).toBe(false);
    expect(tapline.stats().queuedRecords).toBe(2);
    answer!();
    while (!tapline.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 10));
    await flushed(tapline);

    const recs = ing.records();
    expect(recs.map((r) => r.request.path)).toEqual(['/early']);
    expect(recs[0]!.request.body).toBe('card **** **** **** 1111');
    expect(recs[0]!.redacted).toBe(true);
    expect(ing.raw.join('\n')).not.toContain(CARD);
  });
});

describe('sdk core: Shape A rules that change while records wait', () => {
  it('applies new rules to queued lines at send time, and drops lines a new criteria excludes', async () => {
    const ing = await ingest(() => ({ redactAt: 'client', redactionRules: [], exclusionRules: [] }));
    open.push({ stop: ing.close });
    const core = new TaplineCore({
      endpoint: ing.url,
      bucketSid: 'bkt_test',
      token: 't',
      handleProcessEvents: false,
      flushIntervalMs: 60_000,
      settingsRefreshMs: 86_400_000,
    });
    open.push({ stop: () => core.close(500) });
    while (!core.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 10));
    const rec = (path: string, body: string): CapturedRecord => ({
      sid: newRecordSid(),
      direction: 'in',
      createdAt: new Date(0).toISOString(),
      request: {
        host: 'api.test',
        method: 'POST',
        path,
        port: 443,
        url: `https://api.test${path}`,
        queryString: {},
        headers: { 'content-type': 'text/plain' },
        body,
        contentType: 'text/plain',
        size: Buffer.byteLength(body),
      },
      response: { statusCode: 200, headers: {}, contentType: null, size: 0 },
      timings: { duration: 1 },
      tags: [],
    });
    // Queued (serialised) under rules without Shape A; the rules then change before sending.
    core.enqueue(rec('/a', `mail ${EMAIL}`));
    core.enqueue(rec('/drop/me', `card ${CARD}`));
    core.applySettings({
      redactAt: 'client',
      redactionRules: [],
      exclusionRules: [],
      sensitiveRules: [{ sid: 'rda_email', type: 'email', level: 'full', scopes: ['request.body'] }],
      exclusionCriteria: [{ sid: 'xcl_drop', criteria: 'path:/drop/*' }],
    });
    // Queued under the new rules; a further change adds a card rule (email is not applied twice).
    core.enqueue(rec('/b', `mail ${EMAIL} card ${CARD}`));
    core.applySettings({
      redactAt: 'client',
      redactionRules: [],
      exclusionRules: [],
      sensitiveRules: [
        { sid: 'rda_email', type: 'email', level: 'full', scopes: ['request.body'] },
        { sid: 'rda_card', type: 'card', level: 'mask', scopes: ['request.body'] },
      ],
      exclusionCriteria: [{ sid: 'xcl_drop', criteria: 'path:/drop/*' }],
    });
    expect(await core.flush(5000)).toBe(true);
    const recs = ing.records();
    expect(recs.map((r) => [r.request.path, r.request.body, r.redacted])).toEqual([
      ['/a', 'mail [REDACTED:email]', true],
      ['/b', 'mail [REDACTED:email] card **** **** **** ****', true],
    ]);
    const bytes = ing.raw.join('\n');
    for (const secret of [EMAIL, CARD, '/drop/me']) expect(bytes).not.toContain(secret);
    expect(core.stats().excluded).toBe(1);
  });
});

describe('sdk core: Shape A after Shape B', () => {
  it('runs Shape B field rules first, then Shape A, and keeps sizes as received', async () => {
    const ing = await ingest(() => ({
      redactAt: 'client',
      redactionRules: [{ sid: 'rdc_1', field: '$.request.body.note', action: 'replace', replacement: 'x' }],
      exclusionRules: [],
      sensitiveRules: [{ sid: 'rda_email', type: 'email', level: 'mask', scopes: ['request.body'] }],
      exclusionCriteria: [{ sid: 'xcl_env', criteria: 'method:DELETE', environments: ['other1'] }],
    }));
    open.push({ stop: ing.close });
    const core = new TaplineCore({
      endpoint: ing.url,
      bucketSid: 'bkt_test',
      token: 't',
      handleProcessEvents: false,
      flushIntervalMs: 60_000,
      environment: 'prod01',
    });
    open.push({ stop: () => core.close(500) });
    while (!core.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 10));
    const body = JSON.stringify({ note: 'a long note to be replaced', who: 'bo@ex.io' });
    const rec: CapturedRecord = {
      sid: newRecordSid(),
      direction: 'out',
      createdAt: new Date(0).toISOString(),
      request: {
        host: 'api.test',
        method: 'DELETE',
        path: '/x',
        port: 443,
        url: 'https://api.test/x',
        queryString: {},
        headers: {},
        body,
        contentType: 'application/json',
        size: null,
      },
      response: null,
      timings: { duration: 1 },
      tags: [],
    };
    core.enqueue(rec);
    expect(await core.flush(5000)).toBe(true);
    const [out] = ing.records();
    // The criteria exclusion is for another environment: the record is kept.
    expect(out).toBeDefined();
    expect(JSON.parse(out!.request.body as string)).toEqual({ note: 'x', who: '**@**.**' });
    expect(out!.redacted).toBe(true);
    expect(out!.request.size).toBe(Buffer.byteLength(body));
  });
});
