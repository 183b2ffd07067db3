import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { ActionsConsumer } from '../../services/actions/actions.consumer.js';
import { parseConfig } from '../../services/shared/config.js';
import { newSid } from '../../services/shared/ids.js';
import { api, newAccount, testEnv, testPool, waitFor, type TestAccount } from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';

/**
 * Issue 14 point 12: workflow executions are limited per workflow and per account per minute
 * (ACTION_RATE_LIMIT_WORKFLOW / ACTION_RATE_LIMIT_ACCOUNT). Past a limit an execution is logged
 * as `skipped` with the reason, and none of its actions runs; nothing is dropped silently. A
 * runner of its own (limits 3 per workflow, 4 per account) on a topic of its own, against the
 * run's Kafka and Postgres and a real webhook receiver.
 */
const ENV = 'prod01';
const tag = randomBytes(4).toString('hex');
const topic = `test.actions.limits.${tag}`;
const dlqTopic = `test.actions.limits.dlq.${tag}`;
let kafka: Kafka;
let producer: Producer;
let runner: ActionsConsumer | undefined;
let rx: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  kafka = new Kafka({
    clientId: 'action-limits-test',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      { topic, numPartitions: 1, replicationFactor: 1 },
      { topic: dlqTopic, numPartitions: 1, replicationFactor: 1 },
    ],
  });
  await admin.disconnect();
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  rx = await startReceiver();
  runner = new ActionsConsumer({
    kafka,
    producer,
    pg: testPool(),
    cfg: parseConfig({
      OUTBOUND_ALLOW: '127.0.0.1',
      // The service's data folder: its generated SECRETS_KEY opens the sealed webhook URLs.
      DATA_DIR: testEnv().dataDir,
      ACTION_BACKOFF_MS: '100',
      ACTION_RATE_LIMIT_WORKFLOW: '3',
      ACTION_RATE_LIMIT_ACCOUNT: '4',
    }),
    log: pino({ level: 'silent' }),
    topic,
    groupId: `action-limits-${tag}`,
    dlqTopic,
  });
  await runner.start();
});

afterAll(async () => {
  await runner?.stop();
  await producer?.disconnect();
  await rx?.close();
});

async function createWorkflow(acct: TestAccount, path: string): Promise<string> {
  const res = await api(acct.apiToken).post<{ sid: string }>(
    `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`,
    {
      name: `limits ${randomBytes(3).toString('hex')}`,
      trigger: { type: 'error', conditions: [{ statusCode: 599, path: '/never/*' }] },
      actions: [{ type: 'webhook', config: { url: `${rx.url}${path}` } }],
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
    trigger: { type: 'error', message: 'GET /x answered 500' },
    requestSid: newSid('request'),
    createdAt: new Date().toISOString(),
    context: {
      request: { method: 'GET', path: '/x', headers: {}, body: null, query: {} },
      response: { statusCode: 500, headers: {}, body: null, size: 0 },
      timings: { duration: 1, responseTime: 1 },
      bucket: { sid: acct.bucketSid, name: 'b' },
      account: { name: 'a' },
      environment: { name: ENV },
    },
  };
}

describe('workflow execution limits', () => {
  it('logs executions over the per-workflow and per-account limits as skipped, running none of their actions', async () => {
    const acct = await newAccount();
    const wfA = await createWorkflow(acct, '/a');
    const wfB = await createWorkflow(acct, '/b');
    const jobs = [
      ...Array.from({ length: 5 }, () => job(acct, wfA)),
      ...Array.from({ length: 3 }, () => job(acct, wfB)),
    ];
    await producer.send({
      topic,
      messages: jobs.map((j) => ({ key: j.workflowSid, value: JSON.stringify(j) })),
    });

    const rows = await waitFor(
      async () => {
        const r = await testPool().query<{
          sid: string;
          workflow_sid: string;
          status: string;
          error: string | null;
        }>(`SELECT sid, workflow_sid, status, error FROM workflow_executions WHERE account_sid = $1`, [
          acct.accountSid,
        ]);
        return r.rows.length === jobs.length &&
          r.rows.every((x) => ['succeeded', 'skipped'].includes(x.status))
          ? r.rows
          : undefined;
      },
      { timeoutMs: 45_000, what: 'every execution finished or skipped' },
    );
    const ran = rows.filter((r) => r.status === 'succeeded');
    const skipped = rows.filter((r) => r.status === 'skipped');
    // 4 per account in all, at most 3 of them for one workflow.
    expect(ran).toHaveLength(4);
    expect(ran.filter((r) => r.workflow_sid === wfA).length).toBeLessThanOrEqual(3);
    expect(ran.filter((r) => r.workflow_sid === wfB).length).toBeLessThanOrEqual(3);
    expect(skipped).toHaveLength(4);
    for (const s of skipped)
      expect(s.error).toMatch(
        /^rate limit: more than [34] executions per minute for this (workflow|account)$/,
      );
    // Only the executions that ran called the receiver.
    expect(rx.callsTo('/a').length + rx.callsTo('/b').length).toBe(4);

    // The executions log lists the skipped ones, filterable by status.
    const list = await api(acct.apiToken).get<{ records: { status: string }[] }>(
      `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows/${wfA}/executions?status=skipped`,
    );
    expect(list.status, list.text).toBe(200);
    expect(list.body.records.length).toBe(skipped.filter((s) => s.workflow_sid === wfA).length);
    expect(list.body.records.every((r) => r.status === 'skipped')).toBe(true);
  }, 90_000);
});
