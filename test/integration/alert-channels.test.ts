import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { newSid } from '../../services/shared/ids.js';
import { TOPICS } from '../../services/shared/topics.js';
import {
  api,
  ingest,
  makeRecord,
  newAccount,
  testEnv,
  testPool,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';

/**
 * The native alert channels (docs/workflows.md "Native alert channels") against a local receiver
 * that records each call: the exact Slack Block Kit message, Teams adaptive card, PagerDuty Events
 * API v2 event and Opsgenie alert, and the `resolved` a threshold workflow sends when its
 * condition clears (PagerDuty resolve, Opsgenie close, a resolved Slack and Teams message). The
 * receiver stands in for the vendors' endpoints: the payloads follow their published formats
 * (Slack Block Kit, Adaptive Cards 1.4, PagerDuty Events API v2, Opsgenie Alert API v2).
 */

const ENV = 'prod01';
let producer: Producer;
type Receiver = Awaited<ReturnType<typeof startReceiver>>;
let rx: Receiver;

beforeAll(async () => {
  const kafka = new Kafka({
    clientId: 'alert-channels-test',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  rx = await startReceiver((path) => ({
    status: path.startsWith('/pd') || path.includes('/v2/alerts') ? 202 : 200,
  }));
});

afterAll(async () => {
  await producer?.disconnect();
  await rx?.close();
});

const base = (acct: TestAccount) =>
  `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`;

function nativeActions(tag: string) {
  return [
    { type: 'slack', config: { webhook_url: `${rx.url}/slack/${tag}` } },
    { type: 'teams', config: { webhook_url: `${rx.url}/teams/${tag}` } },
    {
      type: 'pagerduty',
      config: { routing_key: `rk-${tag}`, severity: 'critical', url: `${rx.url}/pd/${tag}` },
    },
    { type: 'opsgenie', config: { api_key: `og-${tag}`, priority: 'P2', url: `${rx.url}/og/${tag}` } },
  ];
}

async function createWorkflow(acct: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(acct.apiToken).post<{ sid: string }>(base(acct), body);
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

function errorJob(acct: TestAccount, workflowSid: string): ActionJob {
  return {
    v: 1,
    executionSid: newSid('execution'),
    accountSid: acct.accountSid,
    workflowSid,
    bucketSid: acct.bucketSid,
    environmentSid: ENV,
    trigger: { type: 'error', message: 'POST /orders/42 answered 502' },
    requestSid: newSid('request'),
    createdAt: '2026-11-29T01:00:00.000Z',
    context: {
      request: { method: 'POST', path: '/orders/42', headers: {}, body: null, query: {} },
      response: { statusCode: 502, headers: {}, body: null, size: 23 },
      timings: { duration: 812.5, responseTime: 800 },
      bucket: { sid: acct.bucketSid, name: 'shop-api' },
      account: { name: 'Acme <Corp>' },
      environment: { name: ENV },
    },
  };
}

describe('native alert channels', () => {
  it('send the exact Slack, Teams, PagerDuty and Opsgenie payloads for a request hit', async () => {
    const acct = await newAccount();
    const tag = randomBytes(4).toString('hex');
    const wf = await createWorkflow(acct, {
      name: 'Checkout <errors> & co',
      trigger: { type: 'error', conditions: [{ statusCode: 599, path: '/never/*' }] },
      actions: nativeActions(tag),
    });
    const job = errorJob(acct, wf);
    await producer.send({ topic: TOPICS.actions, messages: [{ key: wf, value: JSON.stringify(job) }] });
    const calls = await waitFor(
      () => {
        const c = rx.calls.filter((x) => x.path.includes(tag));
        return c.length >= 4 ? c : undefined;
      },
      { timeoutMs: 30_000, what: 'four channel calls' },
    );
    const at = (prefix: string) => calls.find((c) => c.path.startsWith(prefix))!;
    const link = `${testEnv().apiUrl.replace(/\/+$/, '')}/requests/${acct.bucketSid}/${job.requestSid}`;

    const slack = at(`/slack/${tag}`);
    expect(slack.method).toBe('POST');
    expect(slack.headers['content-type']).toBe('application/json');
    expect(slack.headers['x-tapline-execution']).toBe(job.executionSid);
    expect(slack.json).toEqual({
      text: 'Triggered: Checkout <errors> & co: POST /orders/42 answered 502',
      blocks: [
        {
          type: 'header',
          text: { type: 'plain_text', text: 'Triggered: Checkout <errors> & co', emoji: true },
        },
        { type: 'section', text: { type: 'mrkdwn', text: 'POST /orders/42 answered 502' } },
        {
          type: 'section',
          fields: [
            { type: 'mrkdwn', text: '*Request*\nPOST /orders/42' },
            { type: 'mrkdwn', text: '*Status*\n502' },
            { type: 'mrkdwn', text: '*Duration*\n812.5 ms' },
            { type: 'mrkdwn', text: '*Bucket*\nshop-api' },
            { type: 'mrkdwn', text: '*Environment*\nprod01' },
            { type: 'mrkdwn', text: '*Workflow*\nCheckout &lt;errors&gt; &amp; co' },
          ],
        },
        {
          type: 'actions',
          elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in Tapline' }, url: link }],
        },
      ],
    });

    const facts = [
      { title: 'Request', value: 'POST /orders/42' },
      { title: 'Status', value: '502' },
      { title: 'Duration', value: '812.5 ms' },
      { title: 'Bucket', value: 'shop-api' },
      { title: 'Environment', value: 'prod01' },
      { title: 'Workflow', value: 'Checkout <errors> & co' },
    ];
    expect(at(`/teams/${tag}`).json).toEqual({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          contentUrl: null,
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.4',
            body: [
              {
                type: 'TextBlock',
                size: 'Large',
                weight: 'Bolder',
                wrap: true,
                color: 'Attention',
                text: 'Triggered: Checkout <errors> & co',
              },
              { type: 'TextBlock', wrap: true, text: 'POST /orders/42 answered 502' },
              { type: 'FactSet', facts },
            ],
            actions: [{ type: 'Action.OpenUrl', title: 'Open in Tapline', url: link }],
          },
        },
      ],
    });

    const details = Object.fromEntries(facts.map((f) => [f.title, f.value]));
    expect(at(`/pd/${tag}`).json).toEqual({
      routing_key: `rk-${tag}`,
      event_action: 'trigger',
      dedup_key: `tapline-${job.executionSid}`,
      payload: {
        summary: 'Checkout <errors> & co: POST /orders/42 answered 502',
        source: 'tapline/shop-api',
        severity: 'critical',
        timestamp: '2026-11-29T01:00:00.000Z',
        group: 'prod01',
        class: 'error',
        custom_details: details,
      },
      client: 'Tapline',
      client_url: link,
      links: [{ href: link, text: 'Open in Tapline' }],
    });

    const og = at(`/og/${tag}`);
    expect(og.path).toBe(`/og/${tag}/v2/alerts`);
    expect(og.headers.authorization).toBe(`GenieKey og-${tag}`);
    expect(og.json).toEqual({
      message: 'Checkout <errors> & co: POST /orders/42 answered 502',
      alias: `tapline-${job.executionSid}`,
      description: `POST /orders/42 answered 502\n\n${link}`,
      details: { ...details, Link: link },
      entity: 'shop-api',
      source: 'Tapline',
      priority: 'P2',
      tags: ['tapline', 'error'],
    });

    const exec = await waitFor(
      async () => {
        const r = await testPool().query<{
          status: string;
          detail: { actions: { type: string; statusCode: number }[] };
        }>('SELECT status, detail FROM workflow_executions WHERE sid = $1', [job.executionSid]);
        return r.rows[0]?.status === 'succeeded' ? r.rows[0] : undefined;
      },
      { timeoutMs: 10_000, what: 'the execution to succeed' },
    );
    expect(exec.detail.actions.map((a) => [a.type, a.statusCode])).toEqual([
      ['slack', 200],
      ['teams', 200],
      ['pagerduty', 202],
      ['opsgenie', 202],
    ]);
  });

  it('seal the PagerDuty and Opsgenie keys, mask them in reads and keep them on a save of what was read', async () => {
    const acct = await newAccount();
    const tag = randomBytes(4).toString('hex');
    const a = api(acct.apiToken);
    const body = {
      name: `keys ${tag}`,
      trigger: { type: 'error', conditions: [{ statusCode: 599, path: '/never/*' }] },
      actions: nativeActions(tag).slice(2),
    };
    const sid = await createWorkflow(acct, body);
    const got = await a.get<{ actions: { config: Record<string, string> }[] }>(`${base(acct)}/${sid}`);
    expect(got.body.actions.map((x) => x.config.routing_key ?? x.config.api_key)).toEqual(['****', '****']);
    const row = await testPool().query<{ actions: string }>(
      'SELECT actions::text AS actions FROM workflows WHERE sid = $1',
      [sid],
    );
    expect(row.rows[0]!.actions).not.toContain(`rk-${tag}`);
    expect(row.rows[0]!.actions).not.toContain(`og-${tag}`);

    // Saved back as read: the stored keys stay (the job below reaches the receiver with them).
    const put = await a.put(`${base(acct)}/${sid}`, { ...body, actions: got.body.actions, isActive: true });
    expect(put.status, put.text).toBe(200);
    const job = errorJob(acct, sid);
    await producer.send({ topic: TOPICS.actions, messages: [{ key: sid, value: JSON.stringify(job) }] });
    await waitFor(() => rx.calls.filter((c) => c.path.includes(tag)).length >= 2, {
      timeoutMs: 30_000,
      what: 'two channel calls',
    });
    const calls = rx.calls.filter((c) => c.path.includes(tag));
    expect((calls.find((c) => c.path.startsWith('/pd'))!.json as { routing_key: string }).routing_key).toBe(
      `rk-${tag}`,
    );
    expect(calls.find((c) => c.path.startsWith('/og'))!.headers.authorization).toBe(`GenieKey og-${tag}`);

    // A masked key may not follow the action to another host.
    const moved = await a.put(`${base(acct)}/${sid}`, {
      ...body,
      isActive: true,
      actions: [
        { type: 'pagerduty', config: { routing_key: '****', url: 'https://events.example.org/v2/enqueue' } },
      ],
    });
    expect(moved.status, moved.text).toBe(400);
    expect(moved.body).toMatchObject({
      success: false,
      error: {
        code: 'VALIDATION_ERROR',
        details: {
          'body.actions.0.config.routing_key': expect.stringContaining('enter its value again'),
        },
      },
    });
  });

  it('send resolved to every native channel when a threshold workflow recovers, and nothing to a webhook', async () => {
    const acct = await newAccount();
    const tag = randomBytes(4).toString('hex');
    const wf = await createWorkflow(acct, {
      name: `error rate ${tag}`,
      trigger: {
        type: 'threshold',
        conditions: [{ metric: 'error_rate', operator: 'greater_than', value: 10, timeWindow: '5m' }],
      },
      actions: [...nativeActions(tag), { type: 'webhook', config: { url: `${rx.url}/hook/${tag}` } }],
    });
    const mine = (prefix: string) => rx.calls.filter((c) => c.path.startsWith(`${prefix}/${tag}`));

    // 12 of 18 requests answered 500: error rate 66.667 %.
    const errors = Array.from({ length: 12 }, () =>
      makeRecord({ response: { statusCode: 500, headers: {}, size: 10 } }),
    );
    const first = await ingest(acct.bucketSid, acct.apiToken, [
      ...errors,
      ...Array.from({ length: 6 }, () => makeRecord()),
    ]);
    expect(first.status, first.text).toBe(202);
    await waitFor(() => mine('/pd').length >= 1 && mine('/og').length >= 1 && mine('/hook').length >= 1, {
      timeoutMs: 40_000,
      what: 'the fire on every channel',
    });
    const fired = mine('/pd')[0]!.json as {
      event_action: string;
      dedup_key: string;
      payload: { summary: string };
    };
    expect(fired.event_action).toBe('trigger');
    expect(fired.dedup_key).toBe(`tapline-${wf}`);
    expect(fired.payload.summary).toBe(
      `error rate ${tag}: error_rate is 66.667 (greater_than 10) over the last 5m`,
    );
    expect((mine('/og')[0]!.json as { alias: string }).alias).toBe(`tapline-${wf}`);
    expect((mine('/slack')[0]!.json as { text: string }).text).toBe(
      `Firing: error rate ${tag}: error_rate is 66.667 (greater_than 10) over the last 5m`,
    );

    // 102 more successes: 12 of 120 = 10 %, no longer greater than 10.
    const more = await ingest(
      acct.bucketSid,
      acct.apiToken,
      Array.from({ length: 102 }, () => makeRecord()),
    );
    expect(more.status, more.text).toBe(202);
    await waitFor(
      () =>
        mine('/pd').length >= 2 &&
        mine('/og').length >= 2 &&
        mine('/slack').length >= 2 &&
        mine('/teams').length >= 2,
      { timeoutMs: 40_000, what: 'the resolve on every native channel' },
    );
    expect(mine('/pd')[1]!.json).toEqual({
      routing_key: `rk-${tag}`,
      event_action: 'resolve',
      dedup_key: `tapline-${wf}`,
    });
    const close = mine('/og')[1]!;
    expect(close.path).toBe(`/og/${tag}/v2/alerts/tapline-${wf}/close?identifierType=alias`);
    expect(close.headers.authorization).toBe(`GenieKey og-${tag}`);
    const message = 'resolved: error_rate is 10 (greater_than 10) over the last 5m';
    expect(close.json).toEqual({ source: 'Tapline', note: message });
    const slack = mine('/slack')[1]!.json as { text: string; blocks: { type: string; fields?: unknown[] }[] };
    expect(slack.text).toBe(`Resolved: error rate ${tag}: ${message}`);
    expect(slack.blocks[2]!.fields!.slice(0, 3)).toEqual([
      { type: 'mrkdwn', text: '*Value*\n10' },
      { type: 'mrkdwn', text: '*Threshold*\n10' },
      { type: 'mrkdwn', text: '*Window*\n5m' },
    ]);
    const card = (
      mine('/teams')[1]!.json as { attachments: { content: { body: { color?: string; text?: string }[] } }[] }
    ).attachments[0]!.content.body[0]!;
    expect(card).toMatchObject({ color: 'Good', text: `Resolved: error rate ${tag}` });

    // The generic webhook has no notion of a resolve: it got the fire only.
    expect(mine('/hook')).toHaveLength(1);
    const execs = await testPool().query<{
      status: string;
      detail: { trigger: { status?: string }; actions: { type: string }[] };
    }>(
      "SELECT status, detail FROM workflow_executions WHERE workflow_sid = $1 AND detail->'trigger'->>'status' = 'resolved'",
      [wf],
    );
    expect(execs.rows).toHaveLength(1);
    expect(execs.rows[0]!.detail.actions.map((x) => x.type)).toEqual([
      'slack',
      'teams',
      'pagerduty',
      'opsgenie',
    ]);
    const state = await testPool().query<{ firing: boolean }>(
      'SELECT firing FROM workflow_trigger_state WHERE workflow_sid = $1',
      [wf],
    );
    expect(state.rows[0]!.firing).toBe(false);
  });
});
