import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, http, newAccount, testEnv, waitFor, type TestAccount } from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';

/**
 * Traffic in the existing SDKs' wire format carries no environment, while every workflow lives in
 * one environment. Records without an environment belong to every environment of their bucket
 * (docs/workflows.md "Environments"): request, error and threshold workflows created under any
 * environment fire for them, and the job names the workflow's environment.
 */

const ENV = 'prod01';

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
});

async function createWorkflow(acct: TestAccount, path: string, trigger: Record<string, unknown>) {
  const res = await api(acct.apiToken).post<{ sid: string }>(
    `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`,
    {
      name: `sdk ${randomBytes(3).toString('hex')}`,
      trigger,
      actions: [
        {
          type: 'webhook',
          config: {
            url: `${rx.url}${path}`,
            body: {
              type: '{{trigger.type}}',
              path: '{{request.path}}',
              status: '{{response.statusCode}}',
              environment: '{{environment.name}}',
              value: '{{metric.value}}',
            },
          },
        },
      ],
    },
  );
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

/** Calls in the SDK wire format (`POST /` on the ingest listener, bucket in a header). */
async function sendSdkCalls(acct: TestAccount, calls: { path: string; status: number }[]) {
  const now = new Date().toISOString();
  const body = calls.map((c) => ({
    request: {
      url: `https://api.example.com${c.path}`,
      method: 'GET',
      headers: { 'user-agent': 'sdk-test' },
      received: now,
    },
    response: { status: c.status, responseTime: 12, headers: { 'content-type': 'application/json' } },
  }));
  const res = await http<{ accepted: number }>('POST', `${testEnv().ingestUrl}/`, {
    token: acct.apiToken,
    body,
    headers: { 'api-traffic-bucket-sid': acct.bucketSid },
  });
  expect(res.status, res.text).toBe(202);
  expect(res.body.accepted).toBe(calls.length);
}

describe('workflows for SDK traffic (records without an environment)', () => {
  it('fire request and error workflows', async () => {
    const acct = await newAccount();
    const tag = randomBytes(3).toString('hex');
    await createWorkflow(acct, `/request-${tag}`, {
      type: 'request',
      conditions: [{ path: '/orders/*', method: 'GET' }],
    });
    await createWorkflow(acct, `/error-${tag}`, { type: 'error', conditions: [] });
    // The workflows reach the processor through NOTIFY; keep sending until both have fired.
    await waitFor(
      async () => {
        await sendSdkCalls(acct, [
          { path: '/orders/1', status: 200 },
          { path: '/health', status: 503 },
        ]);
        await new Promise((r) => setTimeout(r, 1000));
        return rx.callsTo(`/request-${tag}`).length > 0 && rx.callsTo(`/error-${tag}`).length > 0;
      },
      { timeoutMs: 45_000, what: 'request and error webhooks for SDK-format records' },
    );
    const req = rx.callsTo(`/request-${tag}`)[0]!.json as Record<string, string>;
    expect(req).toMatchObject({ type: 'request', path: '/orders/1', status: '200', environment: ENV });
    const err = rx.callsTo(`/error-${tag}`)[0]!.json as Record<string, string>;
    expect(err).toMatchObject({ type: 'error', path: '/health', status: '503', environment: ENV });
    // The request workflow never fired for the other path.
    for (const c of rx.callsTo(`/request-${tag}`))
      expect((c.json as { path: string }).path).toBe('/orders/1');
  });

  it('fire threshold workflows', async () => {
    const acct = await newAccount();
    const tag = randomBytes(3).toString('hex');
    await createWorkflow(acct, `/threshold-${tag}`, {
      type: 'threshold',
      conditions: [{ metric: 'error_rate', operator: 'greater_than', value: 10, timeWindow: '5m' }],
    });
    // 6 of 8 answered 500: error rate 75 %.
    await sendSdkCalls(acct, [
      ...Array.from({ length: 6 }, (_, i) => ({ path: `/pay/${i}`, status: 500 })),
      { path: '/pay/ok', status: 200 },
      { path: '/pay/ok', status: 200 },
    ]);
    await waitFor(() => rx.callsTo(`/threshold-${tag}`).length > 0, {
      timeoutMs: 45_000,
      what: 'threshold webhook for SDK-format records',
    });
    const body = rx.callsTo(`/threshold-${tag}`)[0]!.json as Record<string, string>;
    expect(body).toMatchObject({ type: 'threshold', environment: ENV, value: '75' });
  });
});
