import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Consumer, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREDEFINED_TYPES } from '../../services/processor/sensitive/index.js';
import { newSid } from '../../services/shared/ids.js';
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
import { startReceiver } from '../helpers/http-receiver.js';

/**
 * Shape A rules end to end (issue 15) on the real stack: rules created through the rules API reach
 * the processor's rule snapshot (NOTIFY), and the corpus of test/unit/sensitive-corpus.test.ts
 * (secrets planted in every scope and body type) goes through ingest -> Kafka -> processor. No
 * planted secret may reach what the processor writes or hands on: the stored rows (read back through
 * the API, which serves the stored `record` column as written, and searched by the `path` column),
 * the API list and get, the live stream (SSE), the body of a webhook fired by a request trigger, and
 * the dead-letter topic. Shape A exclusion criteria drop matching records; a soft-deleted rule stops
 * applying once the processor reloads.
 */

const ENV = 'prod01';
const tag = () => randomBytes(5).toString('hex');
type Rec = Record<string, unknown> & { sid: string; contextSid?: string; request: Record<string, unknown> };

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';

/** Every secret planted below, as it would appear in any output if it leaked. */
const SECRETS = [
  'jane.doe@example.com',
  'jane.doe%40example.com',
  'bob@example.com',
  'bob%40example.com',
  'jane@example.com',
  'support@example.com',
  'abc123def456ghi',
  'k_1234567890',
  'access_token=abc123',
  '203.0.113.7',
  '203.0.113.9',
  JWT,
  '4111 1111 1111 1111',
  '4111-1111-1111-1111',
  '4111111111111111',
  'DE89370400440532013000',
  'GB29 NWBK 6016 1331 9268 19',
  'hunter2',
  '123-45-6789',
  '078 05 1120',
  's3cr3t',
  's3cret',
  '(415) 555-2671',
  '+14155552671',
  '+44 20 7946 0958',
  'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
  'AKIAIOSFODNN7EXAMPLE',
  '2001:db8::1',
  '2001:db8:85a3:0:0:8a2e:370:7334',
  'abc&amp;def',
  'CUST-123456',
  'IR-99-internal',
];

/** Look-alikes the card and other detectors must leave alone (the corpus's false positives). */
const KEPT = [
  'ORD-20261125-000123',
  '4111111111111112',
  '550e8400-e29b-41d4-a716-446655440000',
  'token_type',
];

const leaks = (text: string) => SECRETS.filter((s) => text.includes(s));

const XML_BODY =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<customer id="C-1001" contact="jane.doe@example.com">\n' +
  '  <ns:Password>hunter2</ns:Password>\n' +
  '  <payment><card type="visa">4111 1111 1111 1111</card><iban>GB29 NWBK 6016 1331 9268 19</iban></payment>\n' +
  '  <notes><![CDATA[call +44 20 7946 0958 <urgent>]]></notes>\n' +
  '  <auth token="abc&amp;def"/>\n' +
  '  <ip>2001:db8:85a3:0:0:8a2e:370:7334</ip>\n' +
  '</customer>\n';

/** The corpus records (request/response parts; contextSid added per run). */
function corpus(run: string): Record<string, unknown>[] {
  const jsonBody =
    '{"order":{"id":"ORD-20261125-000123","createdAt":1732518826000,"ref":"550e8400-e29b-41d4-a716-446655440000",' +
    '"payer":{"contact":{"email":"jane.doe@example.com","phones":["+14155552671","not a phone"]},' +
    '"card":{"number":"4111 1111 1111 1111","fake":"4111111111111112"},"iban":"DE89370400440532013000"},' +
    '"items":[{"sku":"A-1","n":4111111111111111},{"note":"ship to 203.0.113.7 or 2001:db8::1"}],' +
    '"auth":{"password":"hunter2","api_key":"k-123","token_type":"Bearer"}},' +
    '"ssn": "123-45-6789", "total": 4999, "ref": "CUST-123456"}';
  const path = `/sens/${run}/users/jane.doe@example.com/orders?email=bob%40example.com&page=2&access_token=abc123&sort=desc`;
  const base = (ctx: string, request: Record<string, unknown>, response: Record<string, unknown> | null) => ({
    environmentSid: ENV,
    contextSid: `${run}-${ctx}`,
    createdAt: new Date(Date.now() - 1000).toISOString(),
    request: { host: 'api.example.com', method: 'POST', port: 443, ...request },
    response,
    timings: { duration: 12 },
  });
  return [
    // JSON text at depth and in arrays; headers; query object; URL and path; response headers and body.
    base(
      'json',
      {
        path,
        url: `https://api.example.com${path}`,
        queryString: { email: 'bob@example.com', page: '2', access_token: 'abc123', sort: 'desc' },
        headers: {
          authorization: 'Bearer abc123def456ghi',
          'x-api-key': 'k_1234567890',
          'x-forwarded-for': '203.0.113.7, 10.0.0.1',
          'x-request-id': '550e8400-e29b-41d4-a716-446655440000',
          'x-trace': `session ${JWT}`,
          'x-internal-ref': 'IR-99-internal',
          'content-type': 'application/json',
        },
        body: jsonBody,
        contentType: 'application/json',
      },
      {
        statusCode: 201,
        headers: {
          'set-cookie': 'sid=s3cr3t; HttpOnly',
          'x-support': 'mail support@example.com or call (415) 555-2671',
        },
        body: '{"ok":true,"stripe":"sk_live_4eC39HqLyjWDarjtT1zdp7dc","aws":["AKIAIOSFODNN7EXAMPLE"]}',
        contentType: 'application/json',
      },
    ),
    // JSON body given as an object, a password-like key holding an object.
    base(
      'object',
      {
        path: `/sens/${run}/object`,
        body: {
          users: [
            { name: 'Jane', email: 'jane@example.com', secret: { q: 'pet', a: 'hunter2' } },
            { name: 'Bob', ssn: '078 05 1120', pin: 1234 },
          ],
          count: 2,
        },
        contentType: 'application/json',
      },
      { statusCode: 200, body: null },
    ),
    // Form body.
    base(
      'form',
      {
        path: `/sens/${run}/form`,
        body: 'name=Jane+Doe&email=jane.doe%40example.com&card=4111-1111-1111-1111&pwd=s3cret%21&note=hello+world',
        contentType: 'application/x-www-form-urlencoded; charset=utf-8',
      },
      { statusCode: 200 },
    ),
    // XML response body.
    base(
      'xml',
      { method: 'GET', path: `/sens/${run}/xml` },
      {
        statusCode: 200,
        body: XML_BODY,
        contentType: 'application/xml',
      },
    ),
    // Plain text with name=value and header-like lines.
    base(
      'text',
      {
        path: `/sens/${run}/text`,
        body:
          'Login failed for jane.doe@example.com from 203.0.113.9\n' +
          'password=hunter2 retry=3\n' +
          'Authorization: Bearer abc123def456ghi\n' +
          '"client_secret": "s3cr3t-value", iban GB29 NWBK 6016 1331 9268 19\n',
        contentType: 'text/plain',
      },
      { statusCode: 400 },
    ),
    // A body that is not valid in its declared type is scanned as text.
    base(
      'broken-json',
      {
        path: `/sens/${run}/broken`,
        body: '{"email": "jane@example.com", "password": "hunter2", broken',
        contentType: 'application/json',
      },
      { statusCode: 400, body: '<a><b>support@example.com</a>', contentType: 'text/xml' },
    ),
  ];
}

/** The Shape A rules of the corpus bucket: every predefined type on `*`, two custom types. */
async function createCorpusRules(a: TestAccount): Promise<void> {
  for (const type of PREDEFINED_TYPES)
    // `client` rules are applied on the server as well (safety net): half of them are client rules.
    await createRedaction(a, {
      type,
      level: 'full',
      scopes: ['*'],
      redactAt: PREDEFINED_TYPES.indexOf(type) % 2 ? 'client' : 'server',
    });
  await createRedaction(a, {
    type: 'internal-ref',
    pattern: '(?i)^x-internal-ref$',
    applyTo: 'key',
    level: 'full',
    scopes: ['request.headers'],
    redactAt: 'server',
  });
  // Created last: once it applies, every rule above does (one consistent read per reload).
  await createRedaction(a, {
    type: 'customer-ref',
    pattern: 'CUST-[0-9]{6}',
    applyTo: 'value',
    level: 'mask',
    scopes: ['*'],
    redactAt: 'server',
  });
}

// ------------------------------------------------------------------ Kafka tap of the DLQ

let kafka: Kafka;
let dlqConsumer: Consumer;
const dlq: KafkaMessage[] = [];

beforeAll(async () => {
  kafka = new Kafka({
    clientId: 'test-sensitive-e2e',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  dlqConsumer = kafka.consumer({ groupId: `test-sensitive-dlq-${tag()}`, maxWaitTimeInMs: 200 });
  await dlqConsumer.connect();
  await dlqConsumer.subscribe({ topic: TOPICS.requestsDlq, fromBeginning: true });
  let joined = false;
  dlqConsumer.on(dlqConsumer.events.GROUP_JOIN, () => (joined = true));
  await dlqConsumer.run({
    eachMessage: async ({ message }) => {
      dlq.push(message);
    },
  });
  await waitFor(() => joined, { timeoutMs: 30_000, what: 'DLQ consumer joined' });
});

afterAll(async () => {
  await dlqConsumer?.disconnect();
});

// ------------------------------------------------------------------ helpers

const base = (a: TestAccount) => `/v1/accounts/${a.accountSid}`;

async function createRedaction(a: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(a.apiToken).post<{ sid: string }>(`${base(a)}/redactions`, body);
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

async function createExclusion(a: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(a.apiToken).post<{ sid: string }>(`${base(a)}/exclusions`, body);
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

/** Ingests `records` and waits until every one of them (by contextSid) is stored; returns them. */
async function ingestAndWait(a: TestAccount, records: Record<string, unknown>[], expectStored = records) {
  const res = await ingest(a.bucketSid, a.apiToken, records);
  expect(res.status, res.text).toBe(202);
  expect(res.body.rejected).toEqual([]);
  const want = new Set(expectStored.map((r) => r.contextSid as string));
  return waitFor(
    async () => {
      const all = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Rec[];
      const mine = all.filter((r) => want.has(r.contextSid ?? ''));
      return mine.length === want.size ? { all, mine } : undefined;
    },
    { timeoutMs: 30_000, what: `${want.size} records stored` },
  );
}

/** A record of the probe environment (no workflow fires there) with `request` fields replaced. */
function probeRecord(ctx: string, request: Record<string, unknown>): Record<string, unknown> {
  const r = makeRecord({ contextSid: ctx, environmentSid: 'prob01' });
  const req: Record<string, unknown> = {
    ...(r.request as Record<string, unknown>),
    queryString: null,
    headers: {},
    ...request,
  };
  delete req.size;
  return { ...r, request: { ...req, url: `https://api.example.com${String(req.path)}` } };
}

/**
 * Re-ingests a probe until `applied(stored probe)` holds (the processor reloaded the rules). The
 * probe travels with a sentinel in one ingest call (one Kafka message, processed as a whole): once
 * the sentinel is stored, a missing probe was excluded.
 */
async function untilApplied(
  a: TestAccount,
  probe: (ctx: string) => Record<string, unknown>,
  applied: (stored: Rec | undefined) => boolean,
): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const ctx = `probe-${tag()}`;
    const sentinel = probeRecord(`sentinel-${tag()}`, { path: '/sentinel' });
    const { all } = await ingestAndWait(a, [probe(ctx), sentinel], [sentinel]);
    if (applied(all.find((r) => r.contextSid === ctx))) return;
    if (Date.now() - t0 > 20_000) throw new Error('rule change not applied within 20 s');
  }
}

/** Opens the live stream of a bucket and collects its `request` events until `close()`. */
async function openLive(a: TestAccount) {
  const url = `${testEnv().apiUrl}${base(a)}/buckets/${a.bucketSid}/requests/live`;
  const ac = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${a.apiToken}` }, signal: ac.signal });
  expect(res.status).toBe(200);
  const events: string[] = [];
  const done = (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          if (!block.split('\n').includes('event: request')) continue;
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('');
          if (data) events.push(data);
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    events,
    close: async () => {
      ac.abort();
      await done;
    },
  };
}

// ------------------------------------------------------------------ tests

describe('Shape A redaction end to end (issue 15)', () => {
  it('no planted secret reaches the stored rows, the API, the live stream, a webhook or the DLQ', async () => {
    const a = await newAccount();
    const run = tag();
    const rx = await startReceiver();
    const live = await openLive(a);
    try {
      // A request trigger on the corpus's environment whose webhook carries every part of the record.
      const wf = await api(a.apiToken).post<{ sid: string }>(
        `${base(a)}/environments/${ENV}/buckets/${a.bucketSid}/workflows`,
        {
          name: `sensitive ${run}`,
          trigger: { type: 'request', conditions: [] },
          actions: [
            {
              type: 'webhook',
              config: {
                url: `${rx.url}/hook`,
                body: {
                  path: '{{request.path}}',
                  requestHeaders: '{{request.headers}}',
                  query: '{{request.query}}',
                  requestBody: '{{request.body}}',
                  responseHeaders: '{{response.headers}}',
                  responseBody: '{{response.body}}',
                },
              },
            },
          ],
        },
      );
      expect(wf.status, wf.text).toBe(201);
      await createCorpusRules(a);
      await untilApplied(
        a,
        (ctx) => probeRecord(ctx, { path: '/p', body: 'CUST-999999', contentType: 'text/plain' }),
        (s) => s?.request.body === '****-******',
      );

      const records = corpus(run);
      const { mine } = await ingestAndWait(a, records);
      expect(mine).toHaveLength(records.length);

      // The API list (the stored rows as served) and each record's get.
      const listed = JSON.stringify(mine);
      expect(leaks(listed)).toEqual([]);
      for (const k of KEPT) expect(listed).toContain(k);
      for (const r of mine) {
        const got = await api(a.apiToken).get(`${base(a)}/buckets/${a.bucketSid}/requests/${r.sid}`);
        expect(got.status).toBe(200);
        expect(leaks(got.text), `get ${r.contextSid}`).toEqual([]);
        expect(got.text).toContain('[REDACTED:');
        // Sizes as received: the corpus sends none, so a redacted part keeps its original body's size.
        const sent = records.find((x) => x.contextSid === r.contextSid)!;
        for (const part of ['request', 'response'] as const) {
          const body = (sent[part] as Record<string, unknown> | null)?.body;
          if (body == null) continue;
          const size = Buffer.byteLength(typeof body === 'string' ? body : JSON.stringify(body));
          expect((got.body[part] as Record<string, unknown>).size, `${part}.size of ${r.contextSid}`).toBe(
            size,
          );
        }
      }
      const byCtx = (ctx: string) => mine.find((r) => r.contextSid === `${run}-${ctx}`)!;
      expect(byCtx('json').request.headers).toMatchObject({
        authorization: '[REDACTED:authorization]',
        'x-internal-ref': '[REDACTED:internal-ref]',
        'x-request-id': '550e8400-e29b-41d4-a716-446655440000',
      });
      expect(byCtx('form').request.body).toBe(
        'name=Jane+Doe&email=[REDACTED:email]&card=[REDACTED:card]&pwd=[REDACTED:password]&note=hello+world',
      );
      expect((byCtx('xml').response as Record<string, unknown>).body).toContain(
        '<card type="visa">[REDACTED:card]</card>',
      );

      // The `path` column: a search for a planted secret finds nothing, the redacted path is found.
      const search = async (q: string) =>
        (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid, `q=${encodeURIComponent(q)}`)).length;
      expect(await search('jane.doe')).toBe(0);
      expect(await search(`path:/sens/${run}/users/*`)).toBe(1);

      // The live stream saw every corpus record, redacted.
      await waitFor(() => live.events.filter((e) => e.includes(run)).length >= records.length, {
        timeoutMs: 15_000,
        what: 'corpus records on the live stream',
      });
      const streamed = live.events.filter((e) => e.includes(run)).join('\n');
      expect(leaks(streamed)).toEqual([]);
      expect(streamed).toContain('[REDACTED:email]');

      // The webhook of the request trigger: one call per corpus record, bodies redacted.
      const hooks = await waitFor(
        () => {
          const c = rx.callsTo('/hook').filter((x) => x.body.includes(`/sens/${run}/`));
          return c.length >= records.length ? c : undefined;
        },
        { timeoutMs: 30_000, what: 'webhook calls' },
      );
      const hookBodies = hooks.map((h) => h.body).join('\n');
      expect(leaks(hookBodies)).toEqual([]);
      expect(hookBodies).toContain('[REDACTED:');

      // The dead-letter topic: a record the processor redacts and then cannot store (its createdAt
      // is not a date-time), produced as the ingest produces it (version 2 message).
      const marker = `dlq-${run}`;
      const poison = {
        ...corpus(run)[0],
        contextSid: marker,
        sid: `req_${marker
          .replace(/[^A-Za-z0-9]/g, '')
          .padEnd(27, 'x')
          .slice(0, 27)}`,
        createdAt: 'not-a-date',
        receivedAt: new Date().toISOString(),
      };
      const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await producer.connect();
      try {
        await producer.send({
          topic: TOPICS.requests,
          acks: -1,
          messages: [
            {
              key: a.bucketSid,
              value: `${JSON.stringify({ v: 2, accountSid: a.accountSid, bucketSid: a.bucketSid })}\n${JSON.stringify(poison)}`,
            },
          ],
        });
      } finally {
        await producer.disconnect();
      }
      const dead = await waitFor(() => dlq.find((m) => m.value?.toString('utf8').includes(marker)), {
        timeoutMs: 30_000,
        what: 'the dead letter',
      });
      const deadText = dead.value!.toString('utf8');
      expect(dead.headers?.reason?.toString()).toMatch(/date-time/);
      expect(leaks(deadText)).toEqual([]);
      expect(deadText).toContain('[REDACTED:');
      // The record Shape A changed carries the mark (the dead letter is the record as the steps left it).
      expect(JSON.parse(deadText)).toMatchObject({ redacted: true });
    } finally {
      await live.close();
      await rx.close();
    }
  });

  it('Shape A exclusion criteria drop matching records; soft-deleted rules stop applying', async () => {
    const a = await newAccount();
    const run = tag();
    // Rows the API would refuse (written around it): the processor skips them, the others apply.
    await testPool().query(
      `INSERT INTO redactions (sid, account_sid, shape, type, pattern, apply_to, level, scopes)
       VALUES ($1, $2, 'A', 'broken', '(a', 'value', 'full', '{*}')`,
      [newSid('redaction'), a.accountSid],
    );
    await testPool().query(
      `INSERT INTO exclusions (sid, account_sid, shape, criteria) VALUES ($1, $2, 'A', 'colour:red')`,
      [newSid('exclusion'), a.accountSid],
    );
    const exclusion = await createExclusion(a, { criteria: `path:/drop-${run}/* method:DELETE` });
    const redaction = await createRedaction(a, {
      type: 'email',
      level: 'full',
      scopes: ['*'],
      redactAt: 'server',
    });
    const withEmail = (ctx: string, method = 'POST', path = `/keep-${run}/x`) =>
      probeRecord(ctx, { method, path, body: 'contact ops@example.org', contentType: 'text/plain' });
    await untilApplied(
      a,
      (ctx) => withEmail(ctx),
      (s) => s?.request.body === 'contact [REDACTED:email]',
    );
    // Exclusions apply with the redaction (one read loads both): the DELETE is dropped, the rest kept.
    const dropped = withEmail(`${run}-dropped`, 'DELETE', `/drop-${run}/1`);
    const keptGet = withEmail(`${run}-kept-get`, 'GET', `/drop-${run}/1`);
    const keptOther = withEmail(`${run}-kept-other`, 'DELETE', `/other-${run}/1`);
    const { all } = await ingestAndWait(a, [dropped, keptGet, keptOther], [keptGet, keptOther]);
    expect(all.find((r) => r.contextSid === `${run}-dropped`)).toBeUndefined();
    expect(all.find((r) => r.contextSid === `${run}-kept-get`)!.request.body).toBe(
      'contact [REDACTED:email]',
    );

    // Soft delete both: once the processor reloads, neither applies; both are still listed on request.
    for (const [kind, sid] of [
      ['exclusions', exclusion],
      ['redactions', redaction],
    ] as const) {
      const del = await api(a.apiToken).delete(`${base(a)}/${kind}/${sid}`);
      expect(del.status, del.text).toBe(200);
      const listed = await api(a.apiToken).get<{ data: { sid: string; deletedAt: string | null }[] }>(
        `${base(a)}/${kind}?includeDeleted=true`,
      );
      expect(listed.status, listed.text).toBe(200);
      expect(JSON.stringify(listed.body)).toContain(sid);
    }
    await untilApplied(
      a,
      (ctx) => withEmail(ctx, 'DELETE', `/drop-${run}/2`),
      (s) => s?.request.body === 'contact ops@example.org',
    );
  });

  it('previews a Shape A redaction and a Shape A exclusion with the processor code', async () => {
    const a = await newAccount();
    const record = makeRecord({
      request: {
        method: 'POST',
        path: '/preview',
        body: '{"card":"4111 1111 1111 1111","id":"ORD-1"}',
        contentType: 'application/json',
      },
    });
    const red = await api(a.apiToken).post<{
      applies: boolean;
      changed: boolean;
      changes: { path: string; before: unknown; after: unknown }[];
    }>(`${base(a)}/redactions/preview`, {
      rule: { type: 'card', level: 'partial', scopes: ['request.body'] },
      record,
    });
    expect(red.status, red.text).toBe(200);
    expect(red.body.applies).toBe(true);
    expect(red.body.changed).toBe(true);
    expect(red.body.changes).toEqual([
      {
        path: 'request.body.card',
        kind: 'changed',
        before: '4111 1111 1111 1111',
        after: '**** **** **** 1111',
      },
    ]);
    const bad = await api(a.apiToken).post<{ error: { details: Record<string, unknown> } }>(
      `${base(a)}/redactions/preview`,
      { rule: { type: 'ref', pattern: '(a', applyTo: 'value', level: 'full' }, record },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.position).toBe(0);

    const ex = await api(a.apiToken).post<{ excluded: boolean; applies: boolean }>(
      `${base(a)}/exclusions/preview`,
      { rule: { criteria: 'method:POST path:/preview' }, record },
    );
    expect(ex.status, ex.text).toBe(200);
    expect(ex.body).toMatchObject({ excluded: true, applies: true });
    const badCriteria = await api(a.apiToken).post<{ error: { details: Record<string, unknown> } }>(
      `${base(a)}/exclusions/preview`,
      { rule: { criteria: 'method:POST colour:red' }, record },
    );
    expect(badCriteria.status).toBe(400);
    expect(badCriteria.body.error.details.position).toBe(12);
  });
});
