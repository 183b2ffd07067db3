import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Consumer, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { newSid } from '../../services/shared/ids.js';
import { TOPICS } from '../../services/shared/topics.js';
import { readMails } from '../helpers/smtp-sink.js';
import { api, newAccount, testEnv, testPool, waitFor, type TestAccount } from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';

/**
 * The action runner against real peers: a local HTTP receiver (webhook, chat, automation), the
 * SMTP server started by the global setup, Kafka (jobs produced here, dead letters consumed here)
 * and Postgres (execution records). The service runs with ACTION_BACKOFF_MS=200,
 * ACTION_TIMEOUT_MS=2000 and the default ACTION_MAX_ATTEMPTS=5 (test/helpers/global-setup.ts).
 */

const ENV = 'prod01';
let kafka: Kafka;
let producer: Producer;
let dlqConsumer: Consumer;
const deadLetters = new Map<string, { reason: string; value: Record<string, unknown> }>();

beforeAll(async () => {
  kafka = new Kafka({
    clientId: 'actions-test',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  dlqConsumer = kafka.consumer({ groupId: `actions-test-dlq-${randomBytes(4).toString('hex')}` });
  await dlqConsumer.connect();
  await dlqConsumer.subscribe({ topic: TOPICS.actionsDlq, fromBeginning: true });
  await dlqConsumer.run({
    eachMessage: async ({ message }) => {
      deadLetters.set(message.key?.toString() ?? '', {
        reason: message.headers?.reason?.toString() ?? '',
        value: JSON.parse(message.value?.toString() ?? '{}') as Record<string, unknown>,
      });
    },
  });
});

afterAll(async () => {
  await dlqConsumer?.disconnect();
  await producer?.disconnect();
});

async function createWorkflow(acct: TestAccount, actions: unknown[]): Promise<string> {
  const res = await api(acct.apiToken).post<{ sid: string }>(
    `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`,
    {
      name: `actions ${randomBytes(3).toString('hex')}`,
      // Never matches a record (none is ingested here): jobs are produced by the test.
      trigger: { type: 'error', conditions: [{ statusCode: 599, path: '/never/*' }] },
      actions,
    },
  );
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

function job(acct: TestAccount, workflowSid: string): ActionJob {
  return {
    v: 1,
    executionSid: newSid('execution'),
    accountSid: acct.accountSid,
    workflowSid,
    bucketSid: acct.bucketSid,
    environmentSid: ENV,
    trigger: { type: 'error', message: 'POST /orders answered 502' },
    requestSid: newSid('request'),
    createdAt: new Date().toISOString(),
    context: {
      request: {
        method: 'POST',
        path: '/orders/42',
        headers: { 'content-type': 'application/json', 'x-request-id': 'rq-9' },
        body: '{"order":{"id":42,"total":9.5}}',
        query: { dryRun: 'false' },
      },
      response: {
        statusCode: 502,
        headers: { 'retry-after': '5' },
        body: { error: 'bad gateway' },
        size: 23,
      },
      timings: { duration: 812.5, responseTime: 800 },
      bucket: { sid: acct.bucketSid, name: 'shop-api' },
      account: { name: 'Acme Corp' },
      environment: { name: ENV },
    },
  };
}

async function produce(j: ActionJob, partition?: number): Promise<void> {
  await producer.send({
    topic: TOPICS.actions,
    messages: [
      { key: j.workflowSid, value: JSON.stringify(j), ...(partition === undefined ? {} : { partition }) },
    ],
  });
}

interface ExecutionRow {
  status: string;
  attempts: number;
  error: string | null;
  trigger_type: string;
  request_sid: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  detail: { actions: { index: number; type: string; status: string; attempts: number; error?: string }[] };
}

async function execution(sid: string): Promise<ExecutionRow | undefined> {
  const r = await testPool().query<ExecutionRow>('SELECT * FROM workflow_executions WHERE sid = $1', [sid]);
  return r.rows[0];
}

const finished = (sid: string, timeoutMs = 30_000) =>
  waitFor(
    async () => {
      const e = await execution(sid);
      return e && (e.status === 'succeeded' || e.status === 'failed') ? e : undefined;
    },
    { timeoutMs, what: `execution ${sid} finished` },
  );

describe('action runner', () => {
  it('runs webhook, chat, automation and email in order with every template filled', async () => {
    const acct = await newAccount();
    const rx = await startReceiver();
    try {
      const wf = await createWorkflow(acct, [
        {
          type: 'chat',
          order: 2,
          config: {
            webhook_url: `${rx.url}/chat`,
            channel: '#alerts',
            message:
              '{{request.method}} {{request.path}} -> {{response.statusCode}} in {{timings.duration}} ms',
            username: 'tapline',
          },
        },
        {
          type: 'webhook',
          order: 1,
          config: {
            // `{` is not valid in a URI: templates in URLs are written percent-encoded
            url: `${rx.url}/hook/%7B%7Bbucket.sid%7D%7D`,
            method: 'PUT',
            headers: { 'X-Env': '{{environment.name}}', 'X-Req': '{{request.headers.x-request-id}}' },
            body: {
              message: '{{trigger.message}}',
              type: '{{trigger.type}}',
              request: {
                headers: '{{request.headers}}',
                body: '{{request.body}}',
                query: '{{request.query}}',
              },
              response: {
                status: '{{response.statusCode}}',
                headers: '{{response.headers}}',
                body: '{{response.body}}',
                size: '{{response.size}}',
              },
              timings: ['{{timings.duration}}', '{{timings.responseTime}}'],
              names: '{{account.name}}/{{bucket.name}}/{{environment.name}}',
              metric: '[{{metric.value}}]',
              orderId: '{{request.body.order.id}}',
              unknown: '{{foo.bar}} {{request.nope}}',
            },
          },
        },
        {
          type: 'email',
          order: 3,
          config: {
            to: ['ops@example.test'],
            subject: 'Tapline {{bucket.name}} {{response.statusCode}}',
            body: '{{trigger.message}} on {{request.path}}',
          },
        },
        {
          type: 'automation',
          order: 1,
          config: {
            webhook_url: `${rx.url}/flow`,
            flow_id: 'flow-7',
            data: {
              bucket: '{{bucket.name}}',
              duration: '{{timings.duration}}',
              nested: ['{{request.method}}'],
            },
          },
        },
      ]);
      const j = job(acct, wf);
      await produce(j);
      const e = await finished(j.executionSid);
      expect(e.status, JSON.stringify(e)).toBe('succeeded');
      expect(e.attempts).toBe(1);
      expect(e.trigger_type).toBe('error');
      expect(e.request_sid).toBe(j.requestSid);
      expect(e.started_at).toBeInstanceOf(Date);
      expect(e.finished_at).toBeInstanceOf(Date);
      expect(e.detail.actions.map((a) => [a.type, a.status])).toEqual([
        ['webhook', 'succeeded'],
        ['automation', 'succeeded'],
        ['chat', 'succeeded'],
        ['email', 'succeeded'],
      ]);

      // ascending order; ties keep array order (webhook before automation)
      expect(rx.calls.map((c) => c.path)).toEqual([`/hook/${acct.bucketSid}`, '/flow', '/chat']);
      const [hook, flow, chat] = rx.calls;
      expect(hook!.method).toBe('PUT');
      expect(hook!.headers['x-env']).toBe(ENV);
      expect(hook!.headers['x-req']).toBe('rq-9');
      expect(hook!.headers['content-type']).toBe('application/json');
      expect(hook!.headers['x-tapline-execution']).toBe(j.executionSid);
      expect(hook!.json).toEqual({
        message: 'POST /orders answered 502',
        type: 'error',
        request: {
          headers: JSON.stringify(j.context.request.headers),
          body: '{"order":{"id":42,"total":9.5}}',
          query: '{"dryRun":"false"}',
        },
        response: {
          status: '502',
          headers: '{"retry-after":"5"}',
          body: '{"error":"bad gateway"}',
          size: '23',
        },
        timings: ['812.5', '800'],
        names: `Acme Corp/shop-api/${ENV}`,
        metric: '[]',
        orderId: '42',
        unknown: '{{foo.bar}} {{request.nope}}',
      });
      expect(flow!.method).toBe('POST');
      expect(flow!.json).toEqual({
        flow_id: 'flow-7',
        data: { bucket: 'shop-api', duration: '812.5', nested: ['POST'] },
      });
      expect(chat!.json).toEqual({
        channel: '#alerts',
        text: 'POST /orders/42 -> 502 in 812.5 ms',
        username: 'tapline',
      });

      const mail = await waitFor(
        () => readMails(testEnv().mailDir).find((m) => m.raw.includes(`Subject: Tapline shop-api 502`)),
        { what: 'email delivered to the SMTP server' },
      );
      expect(mail.rcptTo).toEqual(['ops@example.test']);
      expect(mail.raw).toContain('POST /orders answered 502 on /orders/42');

      // the executions API lists it
      const list = await api(acct.apiToken).get<{
        records: { sid: string; status: string; attempts: number }[];
      }>(
        `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows/${wf}/executions`,
      );
      expect(list.status, list.text).toBe(200);
      expect(list.body.records).toContainEqual(
        expect.objectContaining({ sid: j.executionSid, status: 'succeeded', attempts: 1 }),
      );
    } finally {
      await rx.close();
    }
  });

  it('retries a receiver that fails twice, then succeeds: three calls, three attempts', async () => {
    const acct = await newAccount();
    const rx = await startReceiver((_path, n) => (n < 2 ? { status: 503 } : { status: 200 }));
    try {
      const wf = await createWorkflow(acct, [
        { type: 'webhook', config: { url: `${rx.url}/flaky`, body: { n: '{{trigger.type}}' } } },
      ]);
      const j = job(acct, wf);
      await produce(j);
      const e = await finished(j.executionSid);
      expect(e.status, JSON.stringify(e)).toBe('succeeded');
      expect(e.attempts).toBe(3);
      expect(e.error).toBeNull();
      expect(rx.callsTo('/flaky')).toHaveLength(3);
      expect(e.detail.actions[0]).toMatchObject({ status: 'succeeded', attempts: 3 });
      // exponential backoff from 200 ms: the second pause is longer than the first (jitter ≤ 2x)
      const [a, b, c] = rx.calls.map((x) => x.at);
      expect(b! - a!).toBeGreaterThanOrEqual(190);
      expect(c! - b!).toBeGreaterThanOrEqual(390);
      expect(deadLetters.has(j.executionSid)).toBe(false);
    } finally {
      await rx.close();
    }
  });

  it('sends a job whose receiver always fails to the dead-letter topic after the last attempt', async () => {
    const acct = await newAccount();
    const rx = await startReceiver(() => ({ status: 500, body: 'always down' }));
    try {
      const wf = await createWorkflow(acct, [{ type: 'webhook', config: { url: `${rx.url}/down` } }]);
      const j = job(acct, wf);
      await produce(j);
      const dead = await waitFor(() => deadLetters.get(j.executionSid), {
        timeoutMs: 40_000,
        what: 'dead letter',
      });
      expect(dead.reason).toMatch(/after 5 attempt\(s\): webhook#0: receiver answered 500: always down/);
      expect(dead.value).toMatchObject({
        attempts: 5,
        job: { executionSid: j.executionSid, workflowSid: wf },
      });
      expect(rx.callsTo('/down')).toHaveLength(5);
      const e = await finished(j.executionSid);
      expect(e).toMatchObject({ status: 'failed', attempts: 5 });
      expect(e.error).toContain('receiver answered 500');
    } finally {
      await rx.close();
    }
  });

  it('times out a receiver that hangs without holding up the next job of the same partition', async () => {
    const acct = await newAccount();
    const rx = await startReceiver((path) => (path === '/hang' ? 'hang' : { status: 200 }));
    try {
      const slowWf = await createWorkflow(acct, [{ type: 'webhook', config: { url: `${rx.url}/hang` } }]);
      const fastWf = await createWorkflow(acct, [{ type: 'webhook', config: { url: `${rx.url}/fast` } }]);
      const slow = job(acct, slowWf);
      const fast = job(acct, fastWf);
      await produce(slow, 0);
      await produce(fast, 0);
      const f = await finished(fast.executionSid);
      expect(f.status).toBe('succeeded');
      // the hanging call costs its own 2 s timeout, not the next job's: the next job's call comes
      // while the hanging one still waits (measured from the hanging call, so a slow machine's
      // pipeline latency before it does not count)
      const s = await execution(slow.executionSid);
      expect(s?.status).toBe('running');
      expect(rx.callsTo('/fast')[0]!.at - rx.callsTo('/hang')[0]!.at).toBeLessThan(2000);

      const timedOut = await waitFor(
        async () => {
          const e = await execution(slow.executionSid);
          return e?.detail.actions[0]?.error?.includes('timed out after 2000 ms') ? e : undefined;
        },
        { what: 'timeout recorded' },
      );
      expect(timedOut.detail.actions[0]).toMatchObject({ type: 'webhook', status: 'failed' });
    } finally {
      await rx.close();
    }
  });

  it('makes no retry once the workflow is paused while its receiver is failing', async () => {
    const acct = await newAccount();
    // The first call hangs for the 2 s timeout: the workflow is paused while it waits.
    const rx = await startReceiver((_path, n) => (n === 0 ? 'hang' : { status: 500 }));
    try {
      const body = {
        name: 'paused mid-retry',
        trigger: { type: 'error', conditions: [{ statusCode: 599, path: '/never/*' }] },
        actions: [{ type: 'webhook', config: { url: `${rx.url}/paused` } }],
      };
      const path = `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`;
      const created = await api(acct.apiToken).post<{ sid: string }>(path, body);
      expect(created.status, created.text).toBe(201);
      const wf = created.body.sid;
      const j = job(acct, wf);
      await produce(j);
      await waitFor(() => rx.callsTo('/paused').length === 1 || undefined, { what: 'first call' });
      const paused = await api(acct.apiToken).put(`${path}/${wf}`, { ...body, isActive: false });
      expect(paused.status, paused.text).toBe(200);

      const e = await finished(j.executionSid);
      expect(e).toMatchObject({ status: 'failed', attempts: 1, error: 'workflow is inactive' });
      expect(e.detail.actions[0]).toMatchObject({ status: 'failed', attempts: 1 });
      // the backoffs of the attempts it would have made (200, 400, 800 ms, up to twice that) pass
      await new Promise((r) => setTimeout(r, 3000));
      expect(rx.callsTo('/paused')).toHaveLength(1);
      expect(deadLetters.has(j.executionSid)).toBe(false);
    } finally {
      await rx.close();
    }
  });

  it('makes no retry once the workflow is deleted while its receiver is failing', async () => {
    const acct = await newAccount();
    const rx = await startReceiver((_path, n) => (n === 0 ? 'hang' : { status: 500 }));
    try {
      const wf = await createWorkflow(acct, [{ type: 'webhook', config: { url: `${rx.url}/deleted` } }]);
      const j = job(acct, wf);
      await produce(j);
      await waitFor(() => rx.callsTo('/deleted').length === 1 || undefined, { what: 'first call' });
      const del = await api(acct.apiToken).delete(
        `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows/${wf}`,
      );
      expect(del.status, del.text).toBe(200);
      // the 2 s timeout of the first call, then the backoffs of four more attempts
      await new Promise((r) => setTimeout(r, 6000));
      expect(rx.callsTo('/deleted')).toHaveLength(1);
      expect(deadLetters.has(j.executionSid)).toBe(false);
      expect(await execution(j.executionSid)).toBeUndefined();
    } finally {
      await rx.close();
    }
  });

  it("records the last attempt's outcome: no status code of an earlier answer beside a refused connection", async () => {
    const acct = await newAccount();
    const rx = await startReceiver(() => ({ status: 500, body: 'down' }));
    let closed = false;
    try {
      const wf = await createWorkflow(acct, [{ type: 'webhook', config: { url: `${rx.url}/gone` } }]);
      const j = job(acct, wf);
      await produce(j);
      await waitFor(() => rx.callsTo('/gone').length === 1 || undefined, { what: 'first call' });
      // the receiver goes away: the next attempts find no listener
      await rx.close();
      closed = true;
      const e = await finished(j.executionSid);
      expect(e).toMatchObject({ status: 'failed', attempts: 5 });
      const last = e.detail.actions[0] as Record<string, unknown>;
      expect(last).toMatchObject({ status: 'failed', attempts: 5, error: 'request failed: ECONNREFUSED' });
      expect(last.statusCode).toBeUndefined();
    } finally {
      if (!closed) await rx.close();
    }
  });

  it('refuses a private address that OUTBOUND_ALLOW does not name, without retrying', async () => {
    const acct = await newAccount();
    const wf = await createWorkflow(acct, [
      { type: 'webhook', config: { url: 'http://10.255.255.1/internal' } },
      { type: 'chat', config: { webhook_url: 'http://169.254.169.254/latest/meta-data' } },
    ]);
    const j = job(acct, wf);
    await produce(j);
    const e = await finished(j.executionSid);
    expect(e.status).toBe('failed');
    expect(e.attempts).toBe(1);
    expect(e.detail.actions.map((a) => a.error)).toEqual([
      expect.stringMatching(/refused to call 10\.255\.255\.1: address 10\.255\.255\.1 is private/),
      expect.stringMatching(/refused to call 169\.254\.169\.254: .* is linkLocal/),
    ]);
    await waitFor(() => deadLetters.get(j.executionSid), { what: 'dead letter of the refused job' });
  });
});
