import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiGet, collect, compare, expectExactlyOnce, waitDrained } from '../faults/fault-check.js';
import type { FaultAccount } from '../faults/fault-stack.js';
import { Partitioners } from 'kafkajs';
import { faultRecord, IngestLoad } from '../faults/ingest-load.js';
import { TOPICS } from '../../services/shared/topics.js';
import { startReceiver } from '../helpers/http-receiver.js';
import { waitFor } from '../helpers/service-process.js';
import { ScaledStack } from './scaled-stack.js';

/**
 * The scaled deployment of docs/scaling.md, on one machine: one Kafka, one Postgres, one
 * ClickHouse server, and Tapline as nine processes — 2 ingest, 2 processors sharing a
 * 2-partition `traffic.requests`, 2 API replicas, 1 action runner and 2 schedulers. What must hold:
 * records sent through both ingest listeners are stored exactly once, also when a processor is
 * SIGKILLed mid-load (the other takes its partition and the insert deduplication works against
 * the server); both API replicas answer the same; a workflow fires once per matching record, and
 * a threshold trigger once, with two schedulers evaluating it.
 */

const ENV = 'prod01';

describe('scaled topology: separate role processes against a ClickHouse server', () => {
  let stack: ScaledStack;
  let acct: FaultAccount;
  const apiOf = (name: string) => ({ apiUrl: stack.byName(name).service.apiUrl, brokers: stack.brokers });

  beforeAll(async () => {
    stack = await ScaledStack.start('topology');
    await stack.startRoles([
      { name: 'api-1', roles: 'api' },
      { name: 'ingest-1', roles: 'ingest' },
      { name: 'ingest-2', roles: 'ingest' },
      { name: 'processor-1', roles: 'processor' },
      { name: 'processor-2', roles: 'processor' },
      { name: 'api-2', roles: 'api' },
      { name: 'actions-1', roles: 'actions' },
      { name: 'scheduler-1', roles: 'scheduler' },
      { name: 'scheduler-2', roles: 'scheduler' },
    ]);
    acct = await stack.createAccount();
  });
  afterAll(async () => stack?.close());

  /**
   * The partition of `traffic.requests` a bucket's records go to: the ingest producer keys messages
   * by bucket sid with kafkajs's DefaultPartitioner (murmur2, as Java clients do).
   */
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionOf = (a: FaultAccount): number =>
    partitioner({
      topic: TOPICS.requests,
      partitionMetadata: [0, 1].map((partitionId) => ({
        partitionId,
        leader: 0,
        replicas: [0],
        isr: [0],
        partitionErrorCode: 0,
      })),
      message: { key: a.bucketSid, value: null },
    });

  it('stores records from both ingest processes once, through a processor SIGKILL; both API replicas agree', async () => {
    // The group has settled: each processor owns one of the two partitions.
    await waitFor(
      () => {
        const [p1, p2] = [stack.assignment('processor-1'), stack.assignment('processor-2')];
        return p1.length === 1 && p2.length === 1 && p1[0] !== p2[0];
      },
      { timeoutMs: 60_000, what: 'one partition per processor' },
    );
    // Records are keyed by bucket: two buckets on different partitions put load on both processors.
    const accounts = [acct];
    const parts = [partitionOf(acct)];
    while (accounts.length < 2) {
      const other = await stack.createAccount();
      const p = partitionOf(other);
      if (p !== parts[0]) {
        accounts.push(other);
        parts.push(p);
      }
    }
    const since = new Date();
    const ingestUrls = [
      stack.byName('ingest-1').service.ingestUrl,
      stack.byName('ingest-2').service.ingestUrl,
    ];
    const loads = accounts.map(
      (a) =>
        new IngestLoad({
          ingestUrl: ingestUrls,
          bucketSid: a.bucketSid,
          token: a.apiToken,
          rate: 250,
          maxRecords: 10_000,
        }),
    );
    loads.forEach((l) => l.start());
    try {
      await Promise.all(loads.map((l) => l.waitForMoreAcked(1000)));
      await waitFor(
        async () => {
          const r = await apiGet<{ stored: number }>(
            apiOf('api-1'),
            acct,
            `/v1/accounts/${acct.accountSid}/pipeline/stats?bucketSid=${acct.bucketSid}`,
          );
          return r.body.stored >= 300;
        },
        { timeoutMs: 60_000, what: 'rows flowing' },
      );
      const victim = stack.byName('processor-1').service;
      expect(stack.assignment('processor-1')).toHaveLength(1);
      victim.child.kill('SIGKILL');
      await victim.exited;
      expect(victim.child.signalCode).toBe('SIGKILL');
      await Promise.all(loads.map((l) => l.waitForMoreAcked(1000)));
    } finally {
      await Promise.all(loads.map((l) => l.stop()));
    }
    // processor-2 takes the dead member's partition once the group evicts it, and drains both.
    await waitFor(() => stack.assignment('processor-2').length === 2, {
      timeoutMs: 120_000,
      what: 'processor-2 owning both partitions',
    });
    await waitDrained(apiOf('api-1'));
    for (const [i, a] of accounts.entries()) {
      const got = await collect(apiOf('api-1'), a, since);
      const fig = compare(
        `scaled: processor SIGKILL, 2 ingest, ClickHouse server (partition ${parts[i]})`,
        loads[i]!,
        got,
      );
      console.log(`[scale] ${JSON.stringify(fig)}`);
      expect(new Set(loads[i]!.answers.map((x) => x.status))).toEqual(new Set([202]));
      expectExactlyOnce(fig, loads[i]!);
    }

    // Both API replicas read the same ClickHouse: the same totals and the same per-endpoint table.
    const range = `startDate=${new Date(since.getTime() - 3600_000).toISOString()}&endDate=${new Date(Date.now() + 3600_000).toISOString()}`;
    for (const p of ['summary', 'performance']) {
      const url = `/v1/accounts/${acct.accountSid}/metrics/${p}?bucketSid=${acct.bucketSid}&${range}`;
      const [a, b] = await Promise.all([
        apiGet(apiOf('api-1'), acct, url),
        apiGet(apiOf('api-2'), acct, url),
      ]);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      expect(b.body, `metrics/${p} on both replicas`).toEqual(a.body);
    }
  });

  it('fires a request workflow once per matching record and a threshold workflow once with two schedulers', async () => {
    const rx = await startReceiver();
    const base = `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`;
    const post = async (body: Record<string, unknown>) => {
      const res = await fetch(stack.byName('api-2').service.apiUrl + base, {
        method: 'POST',
        headers: { authorization: `Bearer ${acct.apiToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `scale ${randomBytes(3).toString('hex')}`, ...body }),
      });
      const json = (await res.json()) as { sid: string };
      expect(res.status, JSON.stringify(json)).toBe(201);
      return json.sid;
    };
    try {
      await post({
        trigger: { type: 'request', conditions: [{ path: '/scale/hook' }] },
        actions: [
          {
            type: 'webhook',
            config: { url: `${rx.url}/hook`, body: { n: '{{request.query.n}}', x: '{{execution.sid}}' } },
          },
        ],
      });
      const threshold = await post({
        trigger: {
          type: 'threshold',
          conditions: [{ metric: 'error_rate', operator: 'greater_than', value: 5, timeWindow: '5m' }],
        },
        actions: [
          { type: 'webhook', config: { url: `${rx.url}/threshold`, body: { v: '{{metric.value}}' } } },
        ],
      });

      // A rule change reaches the processors through Postgres NOTIFY, within moments: warm-up
      // records (n = w…) are sent until the first webhook shows the workflow is live everywhere.
      const ingests = [stack.byName('ingest-1'), stack.byName('ingest-2')];
      let sent = 0;
      const send = async (n: string) => {
        const rec = faultRecord(`req_${randomBytes(16).toString('hex').slice(0, 27)}`, sent);
        const request = rec.request as Record<string, unknown>;
        request.path = '/scale/hook';
        request.url = `https://api.example.com/scale/hook?n=${n}`;
        request.queryString = { n };
        const res = await fetch(
          `${ingests[sent++ % 2]!.service.ingestUrl}/v1/buckets/${acct.bucketSid}/ingest`,
          {
            method: 'POST',
            headers: { authorization: `Bearer ${acct.apiToken}`, 'content-type': 'application/json' },
            body: JSON.stringify({ records: [rec] }),
          },
        );
        expect(res.status, await res.text()).toBe(202);
      };
      await waitFor(
        async () => {
          await send(`w${sent}`);
          return rx.callsTo('/hook').length > 0;
        },
        { timeoutMs: 60_000, intervalMs: 500, what: 'the workflow live on the processors' },
      );
      // 20 matching records, alternating between the two ingest processes: one webhook each.
      const N = 20;
      for (let i = 0; i < N; i++) await send(String(i));
      const counted = () =>
        rx.callsTo('/hook').filter((c) => !String((c.json as { n: string }).n).startsWith('w'));
      await waitFor(() => counted().length >= N, { timeoutMs: 60_000, what: 'webhooks' });
      await waitFor(() => rx.callsTo('/threshold').length >= 1, { timeoutMs: 60_000, what: 'threshold' });

      // Both schedulers keep evaluating every 2 s; wait for several evaluations after the fire.
      const firedAt = rx.callsTo('/threshold')[0]!.at;
      await waitFor(
        async () => {
          const r = await stack.pool.query<{ t: Date }>(
            'SELECT last_evaluated_at AS t FROM workflow_trigger_state WHERE workflow_sid = $1',
            [threshold],
          );
          return r.rows[0] && r.rows[0].t.getTime() >= firedAt + 6000;
        },
        { timeoutMs: 30_000, what: 'three more threshold evaluations' },
      );
      const hooks = counted().map((c) => c.json as { n: string; x: string });
      expect(hooks).toHaveLength(N);
      expect(new Set(hooks.map((h) => h.n)).size, 'one webhook per record').toBe(N);
      expect(new Set(hooks.map((h) => h.x)).size, 'one execution per record').toBe(N);
      expect(rx.callsTo('/threshold'), 'threshold fired once by two schedulers').toHaveLength(1);
      const execs = await stack.pool.query<{ n: string }>(
        'SELECT count(*) AS n FROM workflow_executions WHERE workflow_sid = $1',
        [threshold],
      );
      expect(Number(execs.rows[0]!.n)).toBe(1);
    } finally {
      await rx.close();
    }
  });

  it('a token deleted through one API replica is refused at once by the other and by both ingest processes', async () => {
    const call = (base: string, p: string, token: string, init: RequestInit = {}) =>
      fetch(base + p, {
        ...init,
        headers: {
          authorization: `Bearer ${token}`,
          ...(init.body ? { 'content-type': 'application/json' } : {}),
        },
      });
    const [api1, api2] = [stack.byName('api-1').service.apiUrl, stack.byName('api-2').service.apiUrl];
    const ingests = [stack.byName('ingest-1').service.ingestUrl, stack.byName('ingest-2').service.ingestUrl];
    const created = await call(api1, `/v1/accounts/${acct.accountSid}/apiTokens`, acct.apiToken, {
      method: 'POST',
      body: JSON.stringify({ name: 'replicas', scopes: ['buckets:read', 'requests:write'] }),
    });
    expect(created.status).toBe(201);
    const token = (await created.json()) as { sid: string; token: string };
    const read = (base: string) => call(base, `/v1/accounts/${acct.accountSid}/buckets`, token.token);
    const send = (base: string) =>
      call(base, `/v1/buckets/${acct.bucketSid}/ingest`, token.token, {
        method: 'POST',
        body: JSON.stringify({
          records: [faultRecord(`req_${randomBytes(16).toString('hex').slice(0, 27)}`, 3)],
        }),
      });
    // Every process has seen (and cached) the token before it is deleted.
    expect((await read(api1)).status).toBe(200);
    expect((await read(api2)).status).toBe(200);
    for (const i of ingests) expect((await send(i)).status).toBe(202);

    const del = await call(api1, `/v1/accounts/${acct.accountSid}/apiTokens/${token.sid}`, acct.apiToken, {
      method: 'DELETE',
    });
    expect(del.status).toBeLessThan(300);
    // Credential caches are dropped on every replica through Postgres NOTIFY: no stale grant.
    await waitFor(async () => (await read(api2)).status === 401, { timeoutMs: 5_000, what: 'api-2 refuses' });
    for (const i of ingests) {
      await waitFor(async () => (await send(i)).status === 401, { timeoutMs: 5_000, what: `${i} refuses` });
    }
  });

  it('counts one rate limit for an account across both API replicas', async () => {
    const limited = await stack.createAccount({ rateLimit: 10 });
    const bases = [stack.byName('api-1').service.apiUrl, stack.byName('api-2').service.apiUrl];
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${bases[i % 2]}/v1/accounts/${limited.accountSid}/buckets`, {
        headers: { authorization: `Bearer ${limited.apiToken}` },
      });
      statuses.push(res.status);
      remaining.push(res.headers.get('x-ratelimit-remaining'));
    }
    // Ten requests in all, alternating replicas, are allowed; the eleventh is refused wherever it lands.
    expect(statuses).toEqual([...Array<number>(10).fill(200), 429, 429]);
    expect(remaining.slice(0, 10)).toEqual(['9', '8', '7', '6', '5', '4', '3', '2', '1', '0']);
  });
});
