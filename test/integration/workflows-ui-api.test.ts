import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, http, newAccount, testEnv, waitFor, type TestAccount } from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';
import { tokenWithScopes } from '../helpers/tokens.js';

/**
 * The workflow endpoints the dashboard uses (docs/workflows-api.md "Dashboard tools"): template
 * preview on a stored request, "send a test", the extended execution log with its filters and
 * the re-run of a dead-lettered execution; and issue 14 point 10: writing, testing or re-running
 * a workflow with outbound actions needs `requests:read` besides the workflows scope.
 * The service runs with ACTION_BACKOFF_MS=200 and 5 attempts (test/helpers/test-stack.ts).
 */

const ENV = 'prod01';
let receiver: Awaited<ReturnType<typeof startReceiver>>;
/** paths of the receiver that answer 500 while listed */
const failing = new Set<string>();

beforeAll(async () => {
  receiver = await startReceiver((path) =>
    failing.has(path) ? { status: 500, body: 'down' } : { status: 200 },
  );
});
afterAll(async () => {
  await receiver?.close();
});

const wfPath = (a: TestAccount) =>
  `/v1/accounts/${a.accountSid}/environments/${ENV}/buckets/${a.bucketSid}/workflows`;

async function ingest(a: TestAccount, records: unknown[]): Promise<void> {
  const res = await http('POST', `${testEnv().ingestUrl}/v1/buckets/${a.bucketSid}/ingest`, {
    token: a.apiToken,
    body: { records },
  });
  expect(res.status, res.text).toBe(202);
}

async function storedRequests(a: TestAccount): Promise<{ sid: string; request: { path: string } }[]> {
  const res = await api(a.apiToken).get<{ records: { sid: string; request: { path: string } }[] }>(
    `/v1/accounts/${a.accountSid}/buckets/${a.bucketSid}/requests?limit=100`,
  );
  return res.body.records ?? [];
}

interface Execution {
  sid: string;
  status: string;
  attempts: number;
  error: string | null;
  requestSid: string | null;
  deadLettered: boolean;
  trigger: { type: string; message: string } | null;
  actions: { index: number; type: string; status: string; statusCode: number | null; error: string | null }[];
}

describe('issue 14 point 10: outbound workflows need requests:read', () => {
  it('refuses create, update, test, re-run and preview to a token without requests:read (403 envelope)', async () => {
    const a = await newAccount();
    const writer = await tokenWithScopes(a, ['workflows:read', 'workflows:write']);
    const body = {
      name: 'exfiltrate',
      trigger: { type: 'request', conditions: [] },
      actions: [{ type: 'webhook', config: { url: `${receiver.url}/steal` } }],
    };
    const created = await api(writer).post(wfPath(a), body);
    expect(created.status, created.text).toBe(403);
    expect(created.body).toMatchObject({
      success: false,
      error: { code: 'FORBIDDEN', details: { requiredScope: 'requests:read' } },
    });
    expect(String((created.body.error as { message: string }).message)).toContain('requests:read');

    // The same body with requests:read is accepted; then every outbound operation is checked.
    const full = await tokenWithScopes(a, ['workflows:read', 'workflows:write', 'requests:read']);
    const ok = await api(full).post<{ sid: string }>(wfPath(a), body);
    expect(ok.status, ok.text).toBe(201);
    const w = ok.body.sid;

    const put = await api(writer).put(`${wfPath(a)}/${w}`, { ...body, isActive: false });
    expect(put.status).toBe(403);
    expect(put.body).toMatchObject({
      error: { code: 'FORBIDDEN', details: { requiredScope: 'requests:read' } },
    });
    const test = await api(writer).post(`${wfPath(a)}/${w}/test`, {});
    expect(test.status).toBe(403);
    expect(test.body).toMatchObject({ error: { details: { requiredScope: 'requests:read' } } });
    const rerun = await api(writer).post(`${wfPath(a)}/${w}/executions/wfx_${'a'.repeat(27)}/retry`);
    expect(rerun.status).toBe(403);
    const preview = await api(writer).post(`${wfPath(a)}/preview`, {});
    expect(preview.status).toBe(403);
    expect(preview.body).toMatchObject({ error: { details: { requiredScope: 'requests:read' } } });

    // Without workflows:write the workflows scope is still what is named first.
    const reader = await tokenWithScopes(a, ['workflows:read', 'requests:read']);
    const r = await api(reader).post(wfPath(a), body);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: { details: { requiredScope: 'workflows:write' } } });
    expect(receiver.callsTo('/steal')).toHaveLength(0);
  });
});

describe('dashboard workflow tools', () => {
  let a: TestAccount;
  let requestSid = '';
  const tag = randomBytes(3).toString('hex');

  beforeAll(async () => {
    a = await newAccount();
    await ingest(a, [
      {
        environmentSid: ENV,
        request: { method: 'POST', path: `/orders/${tag}`, headers: { 'x-request-id': 'rq-1' } },
        response: { statusCode: 502 },
      },
    ]);
    await waitFor(async () => (await storedRequests(a)).length === 1, { timeoutMs: 30_000, intervalMs: 500 });
    requestSid = (await storedRequests(a))[0]!.sid;
  });

  it('renders every template variable on the newest stored request, and action configs', async () => {
    const res = await api(a.apiToken).post<{
      sample: { kind: string; requestSid: string | null };
      variables: { name: string; value: string }[];
      rendered: Record<string, unknown>[];
    }>(`${wfPath(a)}/preview`, {
      triggerType: 'error',
      configs: [{ message: '{{request.method}} {{request.path}} → {{response.statusCode}} {{nope.x}}' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.sample).toMatchObject({ kind: 'stored', requestSid });
    const v = Object.fromEntries(res.body.variables.map((x) => [x.name, x.value]));
    expect(v['request.path']).toBe(`/orders/${tag}`);
    expect(v['response.statusCode']).toBe('502');
    expect(v['environment.name']).toBe(ENV);
    expect(v['metric.value']).toBe('');
    expect(res.body.rendered[0]).toEqual({ message: `POST /orders/${tag} → 502 {{nope.x}}` });

    // An unknown request sid is a 404; a bucket without traffic gets a synthetic sample.
    const missing = await api(a.apiToken).post(`${wfPath(a)}/preview`, { requestSid: 'req_nothere' });
    expect(missing.status).toBe(404);
    const empty = await newAccount();
    const syn = await api(empty.apiToken).post<{ sample: { kind: string } }>(`${wfPath(empty)}/preview`, {});
    expect(syn.status, syn.text).toBe(200);
    expect(syn.body.sample.kind).toBe('synthetic');
  });

  it('sends a test: each action once with its result; nothing in the execution log', async () => {
    const created = await api(a.apiToken).post<{ sid: string }>(wfPath(a), {
      name: 'test me',
      trigger: { type: 'error', conditions: [{ path: '/never/*' }] },
      actions: [
        { type: 'webhook', config: { url: `${receiver.url}/ok-${tag}`, body: { p: '{{request.path}}' } } },
        { type: 'chat', config: { webhook_url: `${receiver.url}/down-${tag}`, message: 'hi' } },
        { type: 'webhook', config: { url: 'http://10.1.2.3/internal' } },
      ],
    });
    expect(created.status, created.text).toBe(201);
    const w = created.body.sid;
    failing.add(`/down-${tag}`);
    const res = await api(a.apiToken).post<{
      executionSid: string;
      sample: { kind: string; requestSid: string };
      results: {
        index: number;
        type: string;
        status: string;
        statusCode: number | null;
        error: string | null;
        retryable: boolean | null;
      }[];
    }>(`${wfPath(a)}/${w}/test`, { requestSid });
    expect(res.status, res.text).toBe(200);
    expect(res.body.sample).toMatchObject({ kind: 'stored', requestSid });
    expect(res.body.results).toHaveLength(3);
    expect(res.body.results[0]).toMatchObject({
      type: 'webhook',
      status: 'succeeded',
      statusCode: 200,
      error: null,
    });
    expect(res.body.results[1]).toMatchObject({
      type: 'chat',
      status: 'failed',
      statusCode: 500,
      retryable: true,
    });
    expect(res.body.results[1]!.error).toContain('500');
    expect(res.body.results[2]).toMatchObject({ status: 'failed', retryable: false });
    expect(res.body.results[2]!.error).toContain('private');
    const got = receiver.callsTo(`/ok-${tag}`);
    expect(got).toHaveLength(1);
    expect(got[0]!.json).toEqual({ p: `/orders/${tag}` });
    expect(got[0]!.headers['x-tapline-execution']).toBe(res.body.executionSid);
    expect(receiver.callsTo(`/down-${tag}`)).toHaveLength(1);

    // Draft actions in the body are tested instead of the stored ones.
    const draft = await api(a.apiToken).post<{ results: { status: string }[] }>(`${wfPath(a)}/${w}/test`, {
      actions: [{ type: 'webhook', config: { url: `${receiver.url}/draft-${tag}` } }],
    });
    expect(draft.status, draft.text).toBe(200);
    expect(draft.body.results).toEqual([expect.objectContaining({ status: 'succeeded', statusCode: 200 })]);
    expect(receiver.callsTo(`/draft-${tag}`)).toHaveLength(1);

    const log = await api(a.apiToken).get<{ records: unknown[] }>(`${wfPath(a)}/${w}/executions`);
    expect(log.status).toBe(200);
    expect(log.body.records).toEqual([]);
  });

  it('lists a dead-lettered execution with its response code, re-runs it, and it succeeds', async () => {
    const hook = `/hook-${tag}`;
    failing.add(hook);
    const created = await api(a.apiToken).post<{ sid: string }>(wfPath(a), {
      name: 'pay alerts',
      trigger: { type: 'error', conditions: [{ path: `/pay-${tag}/*` }] },
      actions: [{ type: 'webhook', config: { url: `${receiver.url}${hook}` } }],
    });
    expect(created.status, created.text).toBe(201);
    const w = created.body.sid;
    // `detail=true` adds trigger, deadLettered and the per-action results to each execution.
    const execs = (q = '') =>
      api(a.apiToken).get<{ records: Execution[] }>(
        `${wfPath(a)}/${w}/executions?detail=true${q.replace(/^\?/, '&')}`,
      );

    // The processor picks the workflow up within a moment (NOTIFY); resend until a hit is logged.
    await waitFor(
      async () => {
        if ((await execs()).body.records.length > 0) return true;
        await ingest(a, [
          {
            environmentSid: ENV,
            request: { method: 'POST', path: `/pay-${tag}/1` },
            response: { statusCode: 503 },
          },
        ]);
        return false;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    await waitFor(async () => (await execs('?deadLettered=true')).body.records.length > 0, {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    const dead = (await execs('?deadLettered=true')).body.records[0]!;
    expect(dead).toMatchObject({ status: 'failed', deadLettered: true, attempts: 5 });
    expect(dead.requestSid).toMatch(/^req_/);
    expect(dead.trigger?.type).toBe('error');
    expect(dead.actions[0]).toMatchObject({ type: 'webhook', status: 'failed', statusCode: 500 });
    expect(dead.error).toContain('after 5 attempt(s)');
    // Without `detail` the log lists the summary fields only.
    const plain = await api(a.apiToken).get<{ records: Record<string, unknown>[] }>(
      `${wfPath(a)}/${w}/executions?deadLettered=true`,
    );
    expect(Object.keys(plain.body.records[0]!).sort()).toEqual(
      [
        'attempts',
        'createdAt',
        'error',
        'finishedAt',
        'requestSid',
        'sid',
        'startedAt',
        'status',
        'triggerType',
        'workflowSid',
      ].sort(),
    );
    expect((await execs('?status=succeeded')).body.records.filter((x) => x.sid === dead.sid)).toEqual([]);
    expect((await execs('?triggerType=request')).body.records).toEqual([]);
    expect((await execs(`?requestSid=${dead.requestSid}`)).body.records.map((x) => x.sid)).toContain(
      dead.sid,
    );

    // A re-run of an execution that did not fail is a conflict; a failed one goes back to pending.
    failing.delete(hook);
    const before = receiver.callsTo(hook).length;
    const rerun = await api(a.apiToken).post<Execution>(`${wfPath(a)}/${w}/executions/${dead.sid}/retry`);
    expect(rerun.status, rerun.text).toBe(202);
    expect(['pending', 'running', 'succeeded']).toContain(rerun.body.status);
    // The re-run's action shows no status code of the failed run (500): none until it answers.
    expect([null, 200]).toContain(rerun.body.actions[0]?.statusCode);
    await waitFor(
      async () => {
        const x = (await execs()).body.records.find((r) => r.sid === dead.sid);
        return x?.status === 'succeeded';
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const done = (await execs()).body.records.find((r) => r.sid === dead.sid)!;
    expect(done).toMatchObject({ status: 'succeeded', attempts: 1, error: null, deadLettered: false });
    expect(done.actions[0]).toMatchObject({ status: 'succeeded', statusCode: 200 });
    // Other executions of the same hook may still be retrying: count the calls of this one.
    const calls = receiver
      .callsTo(hook)
      .slice(before)
      .filter((c) => c.headers['x-tapline-execution'] === dead.sid);
    expect(calls).toHaveLength(1);
    expect((calls[0]!.json as { requestSid: string }).requestSid).toBe(dead.requestSid);

    const again = await api(a.apiToken).post(`${wfPath(a)}/${w}/executions/${dead.sid}/retry`);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ success: false, error: { code: 'CONFLICT' } });
    const unknown = await api(a.apiToken).post(`${wfPath(a)}/${w}/executions/wfx_${'b'.repeat(27)}/retry`);
    expect(unknown.status).toBe(404);
  });
});
