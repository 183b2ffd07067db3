import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Kafka, logLevel, type Consumer, type KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tapline } from '../../sdk/node/src/index.js';
import { TOPICS } from '../../services/shared/topics.js';
import {
  api,
  http as request,
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
import { mcpToken } from '../helpers/scoped-token.js';

/**
 * API consumers (docs/consumers.md) on the real stack: each way a call gets its consumer (the
 * record's `consumer`, OTLP `enduser.*`, the Node SDK, and the bucket's identification rules:
 * a hashed header, the bearer token, a JWT claim with its group, a query parameter, wire-format
 * traffic), the consumers list and page against figures computed here, names and groups set
 * through the API, and account isolation.
 */

type Stored = Record<string, unknown> & {
  sid: string;
  contextSid: string | null;
  consumer?: { id: string; name?: string; group?: string } | null;
  request: { headers: Record<string, unknown> };
};
interface Summary {
  id: string;
  name: string | null;
  group: string | null;
  requestCount: number;
  errorCount: number;
  errorRate: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  firstSeenAt: string | null;
  lastSeenAt: string | null;
}
interface ListAnswer {
  hasMore: boolean;
  records: Summary[];
}

const tag = () => randomBytes(5).toString('hex');
const consumers = (a: TestAccount, query = '') =>
  api(a.apiToken).get<ListAnswer>(`/v1/accounts/${a.accountSid}/consumers${query ? `?${query}` : ''}`);
const identification = (a: TestAccount) =>
  `/v1/accounts/${a.accountSid}/buckets/${a.bucketSid}/consumerIdentification`;

/** The stored records of a bucket once `n` (of the given context prefix) are there. */
async function storedRecords(a: TestAccount, n: number, ctx: string): Promise<Stored[]> {
  return waitFor(
    async () => {
      const all = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Stored[];
      const mine = all.filter((r) => (r.contextSid ?? '').startsWith(ctx));
      return mine.length >= n ? mine : undefined;
    },
    { timeoutMs: 40_000, what: `${n} stored records of ${ctx}` },
  );
}

/** quantileExact's definition: the element at index floor(level * n) of the sorted values. */
function exactQuantile(values: number[], level: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(level * sorted.length))]!;
}

/** Within the endpoint metrics' stated bound of quantileExact's answer (docs/metrics.md: 0.69%). */
function expectPercentile(value: number | null, exact: number, what: string): void {
  expect(value, what).not.toBeNull();
  expect(Math.abs(value! - exact) / exact, `${what}: ${value} vs exact ${exact}`).toBeLessThanOrEqual(0.0069);
}

/** Sets the bucket's sources and waits until the processor applies them to a probe record. */
async function identifyBy(a: TestAccount, sources: unknown[], probe: Record<string, unknown>): Promise<void> {
  const put = await api(a.apiToken).put(identification(a), { sources });
  expect(put.status, put.text).toBe(200);
  const ctx = `probe-${tag()}`;
  await waitFor(
    async () => {
      const p = `${ctx}-${tag()}`;
      await ingest(a.bucketSid, a.apiToken, [makeRecord({ contextSid: p, ...probe })]);
      const [rec] = await storedRecords(a, 1, p);
      return rec!.consumer ? true : undefined;
    },
    { timeoutMs: 60_000, what: 'identification rules applied by the processor' },
  );
}

let kafka: Kafka;
let dlqConsumer: Consumer;
const dlq: KafkaMessage[] = [];

beforeAll(async () => {
  kafka = new Kafka({
    clientId: 'test-consumers',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  dlqConsumer = kafka.consumer({ groupId: `test-consumers-dlq-${tag()}`, maxWaitTimeInMs: 200 });
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

describe('consumers: identified on the record', () => {
  it('counts, error rates and percentiles per consumer match the ingested set; sort, q, paging', async () => {
    const a = await newAccount();
    const ctx = `rec-${tag()}`;
    // Three consumers with known durations and statuses.
    const plan: Record<string, { durations: number[]; errors: number; name?: string; group?: string }> = {
      cus_alpha: { durations: [], errors: 0, name: 'Alpha Ltd', group: 'pro' },
      cus_beta: { durations: [], errors: 0, group: 'free' },
      cus_gamma: { durations: [], errors: 0 },
    };
    const records: Record<string, unknown>[] = [];
    const ids = Object.keys(plan);
    for (let i = 0; i < 90; i++) {
      const id = ids[i % 3]!;
      const p = plan[id]!;
      // Long-tailed durations, distinct per consumer.
      const duration = Math.round((5 + ((i * 37) % 101) * (id === 'cus_beta' ? 7.3 : 1.9)) * 1000) / 1000;
      const status = i % 3 === 1 && i % 9 === 1 ? 503 : i % 3 === 0 && i % 15 === 0 ? 404 : 200;
      p.durations.push(duration);
      if (status >= 400) p.errors++;
      const consumer: Record<string, string> = { id };
      if (p.name) consumer.name = p.name;
      if (p.group) consumer.group = p.group;
      records.push(
        makeRecord({
          contextSid: `${ctx}-${i}`,
          consumer,
          response: { statusCode: status, headers: {}, size: 10 },
          timings: { duration },
          request: { method: i % 2 ? 'POST' : 'GET', path: i % 2 ? '/orders' : `/users/${i}`, headers: {} },
        }),
      );
    }
    // A record without a consumer: stored, in no consumer's figures.
    records.push(makeRecord({ contextSid: `${ctx}-none` }));
    const res = await ingest(a.bucketSid, a.apiToken, records);
    expect(res.status, res.text).toBe(202);
    const stored = await storedRecords(a, 91, ctx);
    // Request records carry their consumer in answers.
    expect(stored.find((r) => r.contextSid === `${ctx}-0`)!.consumer).toEqual({
      id: 'cus_alpha',
      name: 'Alpha Ltd',
      group: 'pro',
    });
    expect(stored.find((r) => r.contextSid === `${ctx}-none`)!.consumer ?? null).toBeNull();

    const list = await waitFor(
      async () => {
        const l = await consumers(a);
        return l.body.records?.reduce((n, r) => n + r.requestCount, 0) === 90 ? l : undefined;
      },
      { what: 'the consumers list to hold 90 requests' },
    );
    expect(list.status).toBe(200);
    expect(list.body.records.map((r) => r.id).sort()).toEqual(ids);
    for (const r of list.body.records) {
      const p = plan[r.id]!;
      expect(r.requestCount, r.id).toBe(30);
      expect(r.errorCount, r.id).toBe(p.errors);
      expect(r.errorRate, r.id).toBeCloseTo((100 * p.errors) / 30, 2);
      expectPercentile(r.p50, exactQuantile(p.durations, 0.5), `${r.id} p50`);
      expectPercentile(r.p95, exactQuantile(p.durations, 0.95), `${r.id} p95`);
      expectPercentile(r.p99, exactQuantile(p.durations, 0.99), `${r.id} p99`);
      expect(r.name).toBe(p.name ?? null);
      expect(r.group).toBe(p.group ?? null);
      expect(Date.parse(r.firstSeenAt!)).toBeLessThanOrEqual(Date.parse(r.lastSeenAt!));
    }

    // Sorting: p95 descending puts beta (the slowest) first; errorRate ascending puts the one with the fewest errors first.
    const byP95 = await consumers(a, 'sort=p95');
    expect(byP95.body.records[0]!.id).toBe('cus_beta');
    const byErr = await consumers(a, 'sort=errorRate&order=asc');
    const rates = byErr.body.records.map((r) => r.errorRate);
    expect(rates).toEqual([...rates].sort((x, y) => x - y));
    const byName = await consumers(a, 'sort=name&order=asc');
    expect(byName.body.records.map((r) => r.id)).toEqual(['cus_alpha', 'cus_beta', 'cus_gamma']);
    // q matches id, name or group; paging.
    expect((await consumers(a, 'q=alpha%20ltd')).body.records.map((r) => r.id)).toEqual(['cus_alpha']);
    expect((await consumers(a, 'q=FREE')).body.records.map((r) => r.id)).toEqual(['cus_beta']);
    const page1 = await consumers(a, 'sort=name&order=asc&limit=2');
    expect(page1.body).toMatchObject({ hasMore: true });
    expect(page1.body.records.map((r) => r.id)).toEqual(['cus_alpha', 'cus_beta']);
    const page2 = await consumers(a, 'sort=name&order=asc&limit=2&page=2');
    expect(page2.body.hasMore).toBe(false);
    expect(page2.body.records.map((r) => r.id)).toEqual(['cus_gamma']);

    // One consumer: its figures and the endpoints it called.
    const one = await api(a.apiToken).get<Summary & { endpoints: Record<string, unknown>[] }>(
      `/v1/accounts/${a.accountSid}/consumers/cus_alpha`,
    );
    expect(one.status, one.text).toBe(200);
    expect(one.body).toMatchObject({ id: 'cus_alpha', requestCount: 30, errorCount: plan.cus_alpha!.errors });
    const alphaRecords = records.filter(
      (r) => (r.consumer as { id?: string } | undefined)?.id === 'cus_alpha',
    );
    const byEndpoint = new Map<string, number>();
    for (const r of alphaRecords) {
      const req = r.request as { method: string; path: string };
      const key = `${req.method} ${req.method === 'POST' ? '/orders' : '/users/{id}'}`;
      byEndpoint.set(key, (byEndpoint.get(key) ?? 0) + 1);
    }
    expect(
      new Map(one.body.endpoints.map((e) => [`${String(e.method)} ${String(e.endpoint)}`, e.requestCount])),
    ).toEqual(byEndpoint);

    // Bad input: a clear 400 in the envelope, and an unknown consumer is a 404.
    const bad = await consumers(a, 'sort=loudest');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    const missing = await api(a.apiToken).get(`/v1/accounts/${a.accountSid}/consumers/nobody`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    // A consumer id out of the schema's bounds rejects only its record.
    const refused = await ingest(a.bucketSid, a.apiToken, [makeRecord({ consumer: { id: '' } })]);
    expect(refused.body.accepted).toBe(0);
    expect(refused.body.rejected[0]!.error.code).toBe('VALIDATION_ERROR');
  });

  it('backfilled over days: the list and a page answer the exact figures of any range, whatever blocks it is read from', async () => {
    const a = await newAccount();
    const ctx = `days-${tag()}`;
    const now = Math.floor(Date.now() / 60_000) * 60_000;
    // Every 40 min 50 s over the last 17 days (minutes, 10-minute blocks, hours, UTC days and
    // weeks of the rollups alike); two consumers, two environments, two endpoints, 5xx and 4xx.
    interface Sent {
      id: string;
      at: number;
      env: string;
      method: string;
      endpoint: string;
      status: number;
      duration: number;
    }
    const sent: Sent[] = [];
    for (let i = 0; i < 600; i++) {
      sent.push({
        id: i % 3 === 0 ? 'cus_north' : 'cus_south',
        at: now - 1000 - i * 2_450_000,
        env: i % 4 === 0 ? 'stag01' : 'prod01',
        method: i % 2 ? 'POST' : 'GET',
        endpoint: i % 2 ? '/orders' : '/users/{id}',
        status: i % 7 === 0 ? 503 : i % 11 === 0 ? 404 : 200,
        duration: Math.round((3 + ((i * 37) % 211) * 1.7) * 1000) / 1000,
      });
    }
    const records = sent.map((s, i) =>
      makeRecord({
        contextSid: `${ctx}-${i}`,
        environmentSid: s.env,
        createdAt: new Date(s.at).toISOString(),
        consumer: { id: s.id },
        response: { statusCode: s.status, headers: {}, size: 10 },
        timings: { duration: s.duration },
        request: { method: s.method, path: s.method === 'POST' ? '/orders' : `/users/${i}`, headers: {} },
      }),
    );
    for (let i = 0; i < records.length; i += 200) {
      const res = await ingest(a.bucketSid, a.apiToken, records.slice(i, i + 200));
      expect(res.status, res.text).toBe(202);
    }
    await storedRecords(a, records.length, ctx);
    // The scheduler's seal (every 15 s here) has run, so the ranges read day and week blocks up to
    // the last ended day, written by the view as the records arrived after the seal.
    await waitFor(
      async () => {
        const res = await fetch(`${testEnv().apiUrl}/metrics`, {
          headers: { authorization: `Bearer ${testEnv().serviceEnv.METRICS_TOKEN}` },
        });
        return /^tapline_scheduler_runs_total\{job="consumer-rollup-seal",outcome="ran"\} [1-9]/m.test(
          await res.text(),
        );
      },
      { timeoutMs: 30_000, what: 'the consumer rollup sealed' },
    );

    // Ranges with edges inside minutes, 10-minute blocks and hours, and the default last 24 hours.
    const iso = (ms: number) => new Date(ms).toISOString();
    const ranges: { label: string; query: string; from: number; to: number }[] = [
      { label: 'last 24 h', query: '', from: now - 24 * 3_600_000, to: now + 59_999 },
      {
        label: 'odd 50 h',
        query: `startDate=${iso(now - 61 * 3_600_000 - 17 * 60_000)}&endDate=${iso(now - 11 * 3_600_000 - 43 * 60_000)}`,
        from: now - 61 * 3_600_000 - 17 * 60_000,
        to: now - 11 * 3_600_000 - 43 * 60_000 + 59_999,
      },
      {
        label: 'whole span',
        query: `startDate=${iso(now - 18 * 86_400_000)}`,
        from: now - 18 * 86_400_000,
        to: now + 59_999,
      },
    ];
    for (const r of ranges) {
      for (const env of [undefined, 'stag01']) {
        const inRange = sent.filter(
          (s) => s.at >= r.from && s.at <= r.to && (env === undefined || s.env === env),
        );
        const query = [r.query, env ? `environmentSid=${env}` : ''].filter(Boolean).join('&');
        const list = await consumers(a, query);
        expect(list.status, list.text).toBe(200);
        const what = `${r.label}${env ? ` in ${env}` : ''}`;
        expect(list.body.records.map((c) => c.id).sort(), what).toEqual(['cus_north', 'cus_south']);
        for (const c of list.body.records) {
          const mine = inRange.filter((s) => s.id === c.id);
          const errors = mine.filter((s) => s.status >= 400).length;
          expect(c.requestCount, `${what} ${c.id}`).toBe(mine.length);
          expect(c.errorCount, `${what} ${c.id}`).toBe(errors);
          const durations = mine.map((s) => s.duration);
          expectPercentile(c.p50, exactQuantile(durations, 0.5), `${what} ${c.id} p50`);
          expectPercentile(c.p95, exactQuantile(durations, 0.95), `${what} ${c.id} p95`);
          expectPercentile(c.p99, exactQuantile(durations, 0.99), `${what} ${c.id} p99`);

          const page = await api(a.apiToken).get<Summary & { endpoints: Record<string, unknown>[] }>(
            `/v1/accounts/${a.accountSid}/consumers/${c.id}${query ? `?${query}` : ''}`,
          );
          expect(page.status, page.text).toBe(200);
          expect(page.body, what).toMatchObject({
            requestCount: mine.length,
            errorCount: errors,
            p95: c.p95,
          });
          const expected = ['GET /users/{id}', 'POST /orders'].flatMap((key) => {
            const calls = mine.filter((s) => `${s.method} ${s.endpoint}` === key);
            if (calls.length === 0) return [];
            return {
              key,
              requestCount: calls.length,
              errorCount: calls.filter((s) => s.status >= 400).length,
              p95: exactQuantile(
                calls.map((s) => s.duration),
                0.95,
              ),
            };
          });
          const got = page.body.endpoints.map((e) => ({
            key: `${String(e.method)} ${String(e.endpoint)}`,
            requestCount: e.requestCount,
            errorCount: e.errorCount,
            p95: e.p95 as number,
          }));
          expect(
            got.map((e) => [e.key, e.requestCount, e.errorCount]).sort(),
            `${what} ${c.id} endpoints`,
          ).toEqual(expected.map((e) => [e.key, e.requestCount, e.errorCount]).sort());
          for (const e of expected)
            expectPercentile(got.find((g) => g.key === e.key)!.p95, e.p95, `${what} ${c.id} ${e.key} p95`);
        }
      }
    }
  });

  it('PUT sets name and group; the later of a PUT and a record that carries a label wins; accounts are isolated', async () => {
    const a = await newAccount();
    const other = await newAccount();
    const ctx = `put-${tag()}`;
    await ingest(a.bucketSid, a.apiToken, [
      makeRecord({ contextSid: `${ctx}-1`, consumer: { id: 'partner-7', name: 'From SDK' } }),
    ]);
    await storedRecords(a, 1, ctx);
    await waitFor(async () => ((await consumers(a)).body.records?.length ? true : undefined), {
      what: 'partner-7 listed',
    });
    const put = await api(a.apiToken).put<Summary>(`/v1/accounts/${a.accountSid}/consumers/partner-7`, {
      name: 'Partner Seven',
      group: 'partners',
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      id: 'partner-7',
      name: 'Partner Seven',
      group: 'partners',
      requestCount: 1,
    });
    expect((await consumers(a)).body.records[0]).toMatchObject({ name: 'Partner Seven', group: 'partners' });

    // A later record with a name: the last write wins (the group set here stays).
    await ingest(a.bucketSid, a.apiToken, [
      makeRecord({
        contextSid: `${ctx}-2`,
        createdAt: new Date(Date.now() + 5_000).toISOString(),
        consumer: { id: 'partner-7', name: 'Renamed by SDK' },
      }),
    ]);
    // The record is 5 s ahead, so its minute can still be after the list's range (which ends now):
    // wait for its count as well as its name.
    await waitFor(
      async () => {
        const first = (await consumers(a)).body.records[0];
        return first?.name === 'Renamed by SDK' && first.requestCount === 2 ? true : undefined;
      },
      { what: 'the later record name and count' },
    );
    expect((await consumers(a)).body.records[0]).toMatchObject({ group: 'partners', requestCount: 2 });
    // null clears the group set here.
    const cleared = await api(a.apiToken).put<Summary>(`/v1/accounts/${a.accountSid}/consumers/partner-7`, {
      group: null,
    });
    expect(cleared.body.group).toBeNull();
    expect((await api(a.apiToken).put(`/v1/accounts/${a.accountSid}/consumers/partner-7`, {})).status).toBe(
      400,
    );

    // Isolation: the other account sees none of it through its own path, and the first account's
    // paths answer its token as if they did not exist.
    expect((await consumers(other)).body.records).toEqual([]);
    expect(
      (await api(other.apiToken).get(`/v1/accounts/${other.accountSid}/consumers/partner-7`)).status,
    ).toBe(404);
    expect((await api(other.apiToken).get(`/v1/accounts/${a.accountSid}/consumers`)).status).toBe(404);
    expect(
      (await api(other.apiToken).put(`/v1/accounts/${a.accountSid}/consumers/partner-7`, { name: 'x' }))
        .status,
    ).toBe(404);
    expect((await consumers(a)).body.records[0]!.name).toBe('Renamed by SDK');
    // Identification rules of another account's bucket are out of reach too.
    expect((await api(other.apiToken).get(identification(a))).status).toBe(404);
  });
});

describe('consumers: OTLP and the Node SDK', () => {
  it('an OTLP span gives its consumer from enduser.id, enduser.name and enduser.group', async () => {
    const a = await newAccount();
    const now = BigInt(Date.now() - 2000) * 1_000_000n;
    const attr = (key: string, v: string | number) => ({
      key,
      value: typeof v === 'number' ? { intValue: v } : { stringValue: v },
    });
    const span = (extra: ReturnType<typeof attr>[]) => ({
      traceId: randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      name: 'GET /items',
      kind: 2,
      startTimeUnixNano: String(now),
      endTimeUnixNano: String(now + 12_000_000n),
      attributes: [
        attr('http.request.method', 'GET'),
        attr('url.path', '/items'),
        attr('server.address', 'shop.example.com'),
        attr('http.response.status_code', 200),
        ...extra,
      ],
    });
    const res = await fetch(`${testEnv().ingestUrl}/v1/traces`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${a.apiToken}`,
        'content-type': 'application/json',
        'x-tapline-bucket': a.bucketSid,
      },
      body: JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [attr('service.name', 'shop')] },
            scopeSpans: [
              {
                spans: [
                  span([
                    attr('enduser.id', 'user-1'),
                    attr('enduser.name', 'Ann'),
                    attr('enduser.group', 'acme'),
                  ]),
                  span([]),
                ],
              },
            ],
          },
        ],
      }),
    });
    expect(res.status).toBe(200);
    const stored = await waitFor(
      async () => {
        const all = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Stored[];
        return all.length >= 2 ? all : undefined;
      },
      { what: 'two OTLP records' },
    );
    const withConsumer = stored.filter((r) => r.consumer);
    expect(withConsumer.map((r) => r.consumer)).toEqual([{ id: 'user-1', name: 'Ann', group: 'acme' }]);
    const list = await waitFor(
      async () => ((await consumers(a)).body.records?.length ? consumers(a) : undefined),
      {
        what: 'user-1 listed',
      },
    );
    expect(list.body.records).toMatchObject([{ id: 'user-1', name: 'Ann', group: 'acme', requestCount: 1 }]);
  });

  it('the Node SDK sends the consumer of identify() and of the consumer option', async () => {
    const a = await newAccount();
    const t = new Tapline({
      endpoint: testEnv().ingestUrl,
      settingsEndpoint: testEnv().apiUrl,
      bucketSid: a.bucketSid,
      token: a.apiToken,
      environment: 'prod01',
      handleProcessEvents: false,
      captureOutgoing: false,
      flushIntervalMs: 200,
      // The option answers from a header the app's auth would have read.
      consumer: (req) => {
        const user = req.headers['x-user'];
        return typeof user === 'string' ? { id: user } : undefined;
      },
    });
    const server = http.createServer(
      t.httpHandler((req, res) => {
        if (req.url === '/identified')
          t.identify(req, { id: 'org-9', name: 'Org Nine', group: 'enterprise' });
        res.end('ok');
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      // identify() wins over the option; the option alone; neither.
      await request('GET', `${base}/identified`, { headers: { 'x-user': 'not-me' } });
      await request('GET', `${base}/option`, { headers: { 'x-user': 'user-55' } });
      await request('GET', `${base}/anonymous`);
      await t.flush(5000);
      const stored = await waitFor(
        async () => {
          const all = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as (Stored & {
            request: { path: string };
          })[];
          return all.length >= 3 ? all : undefined;
        },
        { what: 'three SDK records' },
      );
      const byPath = (p: string) => stored.find((r) => r.request.path === p)!;
      expect(byPath('/identified').consumer).toEqual({ id: 'org-9', name: 'Org Nine', group: 'enterprise' });
      expect(byPath('/option').consumer).toEqual({ id: 'user-55' });
      expect(byPath('/anonymous').consumer ?? null).toBeNull();
    } finally {
      await new Promise((r) => server.close(r));
      await t.shutdown(2000);
    }
  });
});

describe('consumers: identification rules on the server', () => {
  it('a header rule stores a keyed hash, never the key: not in the stored record, the lists or the dead-letter topic', async () => {
    const a = await newAccount();
    const rawKey = `sk_live_${tag()}${tag()}`;
    // The header is redacted by a rule; identification runs before redaction and still sees it.
    const rdc = await api(a.apiToken).post(`/v1/accounts/${a.accountSid}/redactions`, {
      name: 'api key',
      fieldPath: "$.request.headers['x-api-key']",
      redactionType: 'mask',
      redactAt: 'server',
    });
    expect(rdc.status, rdc.text).toBe(201);
    await identifyBy(a, [{ type: 'header', name: 'X-API-Key' }], {
      request: { method: 'GET', path: '/probe', headers: { 'X-Api-Key': `probe-${tag()}` } },
    });
    const ctx = `hdr-${tag()}`;
    await ingest(a.bucketSid, a.apiToken, [
      makeRecord({
        contextSid: `${ctx}-1`,
        request: { method: 'GET', path: '/a', headers: { 'X-API-Key': rawKey } },
      }),
      makeRecord({
        contextSid: `${ctx}-2`,
        request: { method: 'GET', path: '/b', headers: { 'x-api-key': rawKey } },
      }),
      // The record's own consumer wins over the rule.
      makeRecord({
        contextSid: `${ctx}-3`,
        consumer: { id: 'own-id' },
        request: { method: 'GET', path: '/c', headers: { 'x-api-key': rawKey } },
      }),
    ]);
    const stored = await storedRecords(a, 3, ctx);
    const id = stored.find((r) => r.contextSid === `${ctx}-1`)!.consumer!.id;
    expect(id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(stored.find((r) => r.contextSid === `${ctx}-2`)!.consumer).toEqual({ id });
    expect(stored.find((r) => r.contextSid === `${ctx}-3`)!.consumer).toEqual({ id: 'own-id' });
    expect(JSON.stringify(stored)).not.toContain(rawKey);
    // The stored rows searched for the key find nothing; the consumer's list and page do not show it.
    expect(
      await listAllRequests(a.apiToken, a.accountSid, a.bucketSid, `q=${encodeURIComponent(rawKey)}`),
    ).toEqual([]);
    const list = await waitFor(
      async () => {
        const l = await consumers(a);
        return l.body.records?.some((r) => r.id === id && r.requestCount >= 2) ? l : undefined;
      },
      { what: 'the hashed consumer listed' },
    );
    expect(list.text).not.toContain(rawKey);
    const page = await api(a.apiToken).get(`/v1/accounts/${a.accountSid}/consumers/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(rawKey);

    // A record the processor identifies and then cannot store: the dead letter holds no key either.
    const marker = `dlq${tag()}`;
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic: TOPICS.requests,
        acks: -1,
        messages: [
          {
            key: a.bucketSid,
            value: `${JSON.stringify({ v: 2, accountSid: a.accountSid, bucketSid: a.bucketSid })}\n${JSON.stringify(
              {
                sid: `req_${marker.padEnd(27, 'x').slice(0, 27)}`,
                bucketSid: a.bucketSid,
                contextSid: marker,
                createdAt: 'not-a-date',
                receivedAt: new Date().toISOString(),
                request: { method: 'GET', path: '/dlq', headers: { 'x-api-key': rawKey } },
              },
            )}`,
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
    expect(deadText).not.toContain(rawKey);
    expect(JSON.parse(deadText)).toMatchObject({ consumer: { id } });
  });

  it('bearer token, JWT claim with group, query parameter and wire-format traffic identified by rule; GET returns the rules', async () => {
    const a = await newAccount();
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const jwt = (claims: Record<string, unknown>) => `${b64({ alg: 'HS256' })}.${b64(claims)}.not-verified`;
    const sources = [
      { type: 'jwtClaim', claim: 'client_id', groupClaim: 'org' },
      { type: 'query', name: 'app' },
      { type: 'bearer' },
    ];
    await identifyBy(a, sources, {
      request: { method: 'GET', path: '/probe?app=probe', queryString: { app: 'probe' }, headers: {} },
    });
    const got = await api(a.apiToken).get(identification(a));
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      bucketSid: a.bucketSid,
      sources: [
        { type: 'jwtClaim', claim: 'client_id', groupClaim: 'org', header: 'Authorization' },
        { type: 'query', name: 'app', hash: false },
        { type: 'bearer' },
      ],
    });
    const ctx = `rules-${tag()}`;
    const opaque = `opaque-${tag()}`;
    await ingest(a.bucketSid, a.apiToken, [
      makeRecord({
        contextSid: `${ctx}-jwt`,
        request: {
          method: 'GET',
          path: '/jwt',
          headers: { authorization: `Bearer ${jwt({ client_id: 'mobile-app', org: 'org_42' })}` },
        },
      }),
      makeRecord({
        contextSid: `${ctx}-query`,
        request: { method: 'GET', path: '/q', queryString: { app: 'cli' }, headers: {} },
      }),
      makeRecord({
        contextSid: `${ctx}-bearer`,
        request: { method: 'GET', path: '/bearer', headers: { Authorization: `Bearer ${opaque}` } },
      }),
      makeRecord({ contextSid: `${ctx}-none`, request: { method: 'GET', path: '/none', headers: {} } }),
    ]);
    const stored = await storedRecords(a, 4, ctx);
    const of = (s: string) => stored.find((r) => r.contextSid === `${ctx}-${s}`)!.consumer ?? null;
    expect(of('jwt')).toEqual({ id: 'mobile-app', group: 'org_42' });
    expect(of('query')).toEqual({ id: 'cli' });
    expect(of('bearer')!.id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(of('none')).toBeNull();

    // Wire-format traffic (the existing SDKs' `POST /`), identified by the same rules.
    const wire = await request('POST', `${testEnv().ingestUrl}/`, {
      token: a.apiToken,
      body: {
        contextSid: `${ctx}-wire`,
        request: { url: 'https://api.example.com/v2/things?app=wire-client', method: 'get', headers: {} },
        response: { status: 200, responseTime: 8, headers: {} },
      },
      headers: {
        'api-traffic-bucket-sid': a.bucketSid,
        'api-traffic-sdk': 'node',
        'api-traffic-sdk-version': '1.0.0',
      },
    });
    expect(wire.status, wire.text).toBe(202);
    const [w] = await storedRecords(a, 1, `${ctx}-wire`);
    expect(w!.consumer).toEqual({ id: 'wire-client' });

    // The group from the JWT claim is the consumer's group in the list.
    const listed = await waitFor(async () => (await consumers(a, 'q=mobile-app')).body.records?.[0], {
      what: 'mobile-app listed',
    });
    expect(listed).toMatchObject({ id: 'mobile-app', group: 'org_42' });

    // A bad source is a 400 naming the field, and changes nothing.
    const bad = await api(a.apiToken).put(identification(a), { sources: [{ type: 'cookie', name: 'sid' }] });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect((await api(a.apiToken).get(identification(a))).body).toMatchObject({ sources: got.body.sources });
  });
});

describe('consumers: metrics filters, groupings and search terms', () => {
  it('consumer= and group= narrow every metrics endpoint; groupBy=consumer and groupBy=group; consumer: and group: search', async () => {
    const a = await newAccount();
    const ctx = `met-${tag()}`;
    const durations: Record<string, number[]> = { c1: [], c2: [], anon: [] };
    const records: Record<string, unknown>[] = [];
    const add = (who: 'c1' | 'c2' | 'anon', i: number, status: number) => {
      const duration = who === 'c1' ? 10 + i * 3 : who === 'c2' ? 200 + i * 11 : 50 + i;
      durations[who]!.push(duration);
      records.push(
        makeRecord({
          contextSid: `${ctx}-${who}-${i}`,
          ...(who === 'anon' ? {} : { consumer: { id: who, group: who === 'c1' ? 'gold' : 'silver' } }),
          request: { method: 'GET', path: who === 'c2' ? '/slow' : '/fast', headers: {} },
          response: { statusCode: status, headers: {}, size: 5 },
          timings: { duration },
        }),
      );
    };
    for (let i = 0; i < 10; i++) add('c1', i, i < 2 ? 500 : 200);
    for (let i = 0; i < 5; i++) add('c2', i, i === 0 ? 404 : 200);
    for (let i = 0; i < 7; i++) add('anon', i, 200);
    expect((await ingest(a.bucketSid, a.apiToken, records)).status).toBe(202);
    await storedRecords(a, 22, ctx);
    const m = (path: string, query: string) =>
      api(a.apiToken).get<Record<string, unknown>>(`/v1/accounts/${a.accountSid}/metrics/${path}?${query}`);
    await waitFor(
      async () => ((await m('summary', 'consumer=c1')).body.totalRequests === 10 ? true : undefined),
      { what: 'consumer metrics' },
    );

    // summary
    expect((await m('summary', '')).body).toMatchObject({ totalRequests: 22, totalErrors: 3 });
    expect((await m('summary', 'consumer=c1')).body).toMatchObject({
      totalRequests: 10,
      totalErrors: 2,
      requestsByStatus: { '2xx': 8, '5xx': 2 },
    });
    expect((await m('summary', 'group=silver')).body).toMatchObject({ totalRequests: 5, totalErrors: 1 });
    expect((await m('summary', 'consumer=c1&group=silver')).body).toMatchObject({ totalRequests: 0 });
    // throughput
    const tp = (await m('throughput', 'consumer=c2&interval=hour')).body as {
      data: { requestCount: number; errorCount: number }[];
    };
    expect(tp.data.reduce((n, d) => n + d.requestCount, 0)).toBe(5);
    expect(tp.data.reduce((n, d) => n + d.errorCount, 0)).toBe(1);
    // errors
    expect((await m('errors', 'consumer=c1')).body).toMatchObject({ totalErrors: 2 });
    expect((await m('errors', 'group=gold')).body).toMatchObject({ totalErrors: 2 });
    // performance: narrowed, and grouped by consumer and by group, percentiles within the bound
    const perf = (await m('performance', 'groupBy=consumer')).body as {
      groupBy: string;
      metrics: { group: string; requestCount: number; p95ResponseTime: number }[];
    };
    expect(perf.groupBy).toBe('consumer');
    expect(perf.metrics.map((x) => [x.group, x.requestCount])).toEqual([
      ['c1', 10],
      ['c2', 5],
    ]);
    expectPercentile(perf.metrics[1]!.p95ResponseTime, exactQuantile(durations.c2!, 0.95), 'c2 p95');
    const byGroup = (await m('performance', 'groupBy=group')).body as typeof perf;
    expect(byGroup.metrics.map((x) => [x.group, x.requestCount])).toEqual([
      ['gold', 10],
      ['silver', 5],
    ]);
    // With a series per group (the endpoints table's sparkline) and the merged histogram.
    for (const [groupBy, want] of [
      ['consumer', { c1: 10, c2: 5 }],
      ['group', { gold: 10, silver: 5 }],
    ] as const) {
      const res = await m('performance', `groupBy=${groupBy}&interval=hour&histogram=true`);
      expect(res.status, res.text).toBe(200);
      const rows = (
        res.body as { metrics: { group: string; throughput: number[]; histogram: { count: number }[] }[] }
      ).metrics;
      for (const row of rows) {
        const n = want[row.group as keyof typeof want];
        expect(
          row.throughput.reduce((t, v) => t + v, 0),
          `${groupBy} ${row.group}`,
        ).toBe(n);
        expect(
          row.histogram.reduce((t, v) => t + v.count, 0),
          `${groupBy} ${row.group}`,
        ).toBe(n);
      }
      expect(rows.map((r) => r.group).sort()).toEqual(Object.keys(want).sort());
    }
    const narrowed = (await m('performance', 'groupBy=endpoint&consumer=c1')).body as typeof perf;
    expect(narrowed.metrics.map((x) => [x.group, x.requestCount])).toEqual([['/fast', 10]]);
    // Shape A
    const sa = (await m('shapeA/summary', 'group=gold')).body as {
      requests: { current: { amount: number } };
    };
    expect(sa.requests.current.amount).toBe(10);
    const sat = (await m('shapeA/throughput', 'consumer=c2&interval=hour')).body as {
      summary: { total: { count: number } };
    };
    expect(sat.summary.total.count).toBe(5);
    const sar = (await m('shapeA/responseTime', 'consumer=c1&interval=hour')).body as {
      summary: { requests: number; percentiles: Record<string, { value: number }> };
    };
    expect(sar.summary.requests).toBe(10);
    expectPercentile(sar.summary.percentiles['50']!.value, exactQuantile(durations.c1!, 0.5), 'c1 p50');

    // A group set through the API regroups the consumer at once.
    expect(
      (await api(a.apiToken).put(`/v1/accounts/${a.accountSid}/consumers/c2`, { group: 'gold' })).status,
    ).toBe(200);
    expect((await m('summary', 'group=gold')).body).toMatchObject({ totalRequests: 15 });
    expect((await m('summary', 'group=silver')).body).toMatchObject({ totalRequests: 0 });

    // Search terms over the stream: consumer: and group: (the group the record carried).
    const search = async (q: string) =>
      (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid, `q=${encodeURIComponent(q)}`)).length;
    expect(await search('consumer:c1')).toBe(10);
    expect(await search('consumer:c1,c2')).toBe(15);
    expect(await search('group:silver')).toBe(5);
    expect(await search(`-consumer:c1 context:${ctx}-c2-0`)).toBe(1);
    // A term without a value is a 400 naming it.
    const bad = await api(a.apiToken).get(
      `/v1/accounts/${a.accountSid}/buckets/${a.bucketSid}/requests?q=${encodeURIComponent('consumer:')}`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  });
});

describe('consumers: MCP tools', () => {
  it("list_consumers, get_consumer and the consumer argument keep to the token's environment and buckets", async () => {
    const a = await newAccount();
    const second = await api(a.apiToken).post<{ sid: string }>(`/v1/accounts/${a.accountSid}/buckets`, {
      name: 'second',
    });
    expect(second.status, second.text).toBe(201);
    const b2 = second.body.sid;
    const ctx = `mcp-${tag()}`;
    const rec = (env: string, id: string, i: number, status = 200) =>
      makeRecord({
        contextSid: `${ctx}-${env}-${id}-${i}`,
        environmentSid: env,
        consumer: { id },
        request: { method: 'GET', path: '/things', headers: {} },
        response: { statusCode: status, headers: {}, size: 1 },
        timings: { duration: 20 + i },
      });
    await ingest(a.bucketSid, a.apiToken, [
      ...Array.from({ length: 4 }, (_, i) => rec('prod01', 'shop-app', i, i === 0 ? 500 : 200)),
      ...Array.from({ length: 2 }, (_, i) => rec('prod01', 'partner', i)),
      ...Array.from({ length: 3 }, (_, i) => rec('stag01', 'staging-only', i)),
    ]);
    await ingest(b2, a.apiToken, [rec('prod01', 'other-bucket-app', 0)]);
    await storedRecords(a, 9, ctx);
    await waitFor(
      async () =>
        (await api(a.apiToken).get<ListAnswer>(`/v1/accounts/${a.accountSid}/consumers?bucketSid=${b2}`)).body
          .records?.length
          ? true
          : undefined,
      { what: 'the second bucket counted' },
    );

    const client = new Client({ name: 'tapline-consumers-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${testEnv().apiUrl}/mcp`), {
        requestInit: {
          headers: { authorization: `Bearer ${(await mcpToken(a, 'prod01', [a.bucketSid])).token}` },
        },
      }),
    );
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const res = (await client.callTool({ name, arguments: args })) as {
          isError?: boolean;
          content: { text: string }[];
        };
        return {
          isError: Boolean(res.isError),
          body: JSON.parse(res.content[0]!.text) as Record<string, unknown>,
        };
      };
      const list = await call('list_consumers', {});
      expect(list.isError).toBe(false);
      // The token's environment and bucket only: not staging, not the second bucket.
      expect((list.body.consumers as Summary[]).map((c) => [c.id, c.requestCount, c.errorCount])).toEqual([
        ['shop-app', 4, 1],
        ['partner', 2, 0],
      ]);
      const one = await call('get_consumer', { consumerId: 'shop-app' });
      expect(one.body).toMatchObject({
        id: 'shop-app',
        requestCount: 4,
        endpoints: [{ endpoint: '/things' }],
      });
      expect((await call('get_consumer', { consumerId: 'staging-only' })).isError).toBe(true);
      expect((await call('list_consumers', { bucketSid: b2 })).isError).toBe(true);
      // The consumer argument on the metrics and search tools.
      const summary = await call('get_metrics_summary', { consumer: 'partner' });
      expect(summary.body.current).toMatchObject({ requests: 2, errors: 0 });
      const hits = await call('search_requests', { consumer: 'shop-app' });
      expect((hits.body.hits as unknown[]).length).toBe(4);
      const bad = await call('list_consumers', { sort: 'loudest' });
      expect(bad.isError).toBe(true);
      expect(JSON.stringify(bad.body)).toContain('sort');
    } finally {
      await client.close();
    }
  });
});

describe('consumers: workflows', () => {
  it('a per-consumer threshold fires once per breaching consumer; request conditions on consumer and group', async () => {
    const a = await newAccount();
    const rx = await startReceiver();
    const wfBase = `/v1/accounts/${a.accountSid}/environments/prod01/buckets/${a.bucketSid}/workflows`;
    const body = {
      consumer: '{{consumer.id}}',
      name: '{{consumer.name}}',
      group: '{{consumer.group}}',
      value: '{{metric.value}}',
      message: '{{trigger.message}}',
    };
    try {
      const th = await api(a.apiToken).post<{ sid: string }>(wfBase, {
        name: 'any consumer above 5% errors',
        trigger: {
          type: 'threshold',
          perConsumer: true,
          conditions: [{ metric: 'error_rate', operator: 'greater_than', value: 5, timeWindow: '10m' }],
        },
        actions: [{ type: 'webhook', config: { url: `${rx.url}/threshold`, body } }],
      });
      expect(th.status, th.text).toBe(201);
      expect((th.body as unknown as { trigger: Record<string, unknown> }).trigger).toMatchObject({
        perConsumer: true,
      });
      const rq = await api(a.apiToken).post(wfBase, {
        name: 'gold errors',
        trigger: { type: 'error', conditions: [{ group: 'gold' }] },
        actions: [{ type: 'webhook', config: { url: `${rx.url}/gold`, body } }],
      });
      expect(rq.status, rq.text).toBe(201);
      const rc = await api(a.apiToken).post(wfBase, {
        name: 'one consumer',
        trigger: { type: 'request', conditions: [{ consumer: 'calm', path: '/w/*' }] },
        actions: [{ type: 'webhook', config: { url: `${rx.url}/calm`, body } }],
      });
      expect(rc.status, rc.text).toBe(201);

      const rec = (id: string, i: number, error: boolean, group?: string) =>
        makeRecord({
          consumer: group ? { id, name: `Name ${id}`, group } : { id },
          request: { method: 'GET', path: `/w/${i}`, headers: {} },
          response: { statusCode: error ? 503 : 200, headers: {}, size: 1 },
        });
      // noisy: 50% errors; flaky: 10%; calm: none. Only noisy and flaky breach 5%.
      const records = [
        ...Array.from({ length: 10 }, (_, i) => rec('noisy', i, i % 2 === 0, 'gold')),
        ...Array.from({ length: 10 }, (_, i) => rec('flaky', i, i === 0)),
        ...Array.from({ length: 10 }, (_, i) => rec('calm', i, false)),
      ];
      expect((await ingest(a.bucketSid, a.apiToken, records)).status).toBe(202);

      const calls = await waitFor(
        () => (rx.callsTo('/threshold').length >= 2 ? rx.callsTo('/threshold') : undefined),
        { timeoutMs: 60_000, what: 'two per-consumer threshold webhooks' },
      );
      const fired = new Map(calls.map((c) => [(c.json as Record<string, string>).consumer, c.json]));
      expect(fired.get('noisy')).toMatchObject({
        consumer: 'noisy',
        name: 'Name noisy',
        group: 'gold',
        value: '50',
      });
      expect(fired.get('flaky')).toMatchObject({ consumer: 'flaky', name: '', value: '10' });
      expect((fired.get('flaky') as { message: string }).message).toMatch(
        /^consumer flaky: error_rate is 10 /,
      );

      // More evaluations while both still breach: no second fire for either, none for calm.
      const since = Date.now();
      await waitFor(
        async () => {
          const r = await testPool().query<{ last_evaluated_at: Date }>(
            'SELECT last_evaluated_at FROM workflow_trigger_state WHERE workflow_sid = $1',
            [th.body.sid],
          );
          const at = r.rows[0]?.last_evaluated_at;
          return at && at.getTime() >= since + 4000 ? true : undefined;
        },
        { timeoutMs: 30_000, what: 'two more evaluations' },
      );
      expect(
        rx
          .callsTo('/threshold')
          .map((c) => (c.json as Record<string, string>).consumer)
          .sort(),
      ).toEqual(['flaky', 'noisy']);

      // The error trigger on group gold: noisy's 5 errors; the request trigger on consumer calm: its 10.
      await waitFor(
        () => (rx.callsTo('/gold').length >= 5 && rx.callsTo('/calm').length >= 10 ? true : undefined),
        {
          timeoutMs: 30_000,
          what: 'request and error trigger webhooks',
        },
      );
      expect(rx.callsTo('/gold')).toHaveLength(5);
      expect(new Set(rx.callsTo('/gold').map((c) => (c.json as Record<string, string>).consumer))).toEqual(
        new Set(['noisy']),
      );
      expect(rx.callsTo('/calm')).toHaveLength(10);
      expect((rx.callsTo('/calm')[0]!.json as Record<string, string>).consumer).toBe('calm');
    } finally {
      await rx.close();
    }
  });
});
