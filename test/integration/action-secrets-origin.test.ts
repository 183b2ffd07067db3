import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, newAccount, testPool, type TestAccount } from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';
import { tokenWithScopes } from '../helpers/tokens.js';

/**
 * A masked secret of a workflow action is kept only for its own destination (docs/security.md
 * "Secrets at rest"): a token holding workflows:read, workflows:write and requests:read reads a
 * webhook whose header and body key hold secrets, then writes it back (or test-sends it) with the
 * URL pointing to another origin and the secrets still masked. That is a 400 naming the header,
 * and the other origin receives nothing. The same origin on another path keeps the secrets; values
 * entered again go to the new origin. Credential-named values of `body` and `data` are sealed at
 * rest and masked in reads like header values.
 *
 * Two receivers on 127.0.0.1 with different ports are two origins.
 */

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
let home: Receiver;
let other: Receiver;

beforeAll(async () => {
  home = await startReceiver();
  other = await startReceiver();
});
afterAll(async () => {
  await home?.close();
  await other?.close();
});

const HEADER_SECRET = 'HOOKHEADERSECRET777';
const BODY_SECRET = 'PDROUTINGKEYSECRET333';
const DATA_SECRET = 'AUTODATASECRET666';

interface Action {
  type: string;
  order: number;
  config: Record<string, unknown> & { url?: string; headers?: Record<string, string> };
}
interface Wf {
  sid: string;
  name: string;
  trigger: Record<string, unknown>;
  isActive: boolean;
  actions: Action[];
}
interface ErrorEnvelope {
  success: false;
  error: { code: string; message: string; details: Record<string, string> };
}
interface TestResult {
  results: { status: string; statusCode: number | null; error: string | null }[];
}

const wfPath = (a: TestAccount) =>
  `/v1/accounts/${a.accountSid}/environments/prod01/buckets/${a.bucketSid}/workflows`;

/** A workflow that never fires on its own (inactive): only "send a test" calls the receivers. */
async function setUp(tag: string) {
  const acct = await newAccount();
  const created = await api(acct.apiToken).post<Wf>(wfPath(acct), {
    name: `origin ${tag}`,
    isActive: false,
    trigger: { type: 'error', conditions: [{ path: `/never-${tag}/*` }] },
    actions: [
      {
        type: 'webhook',
        config: {
          url: `${home.url}/hook-${tag}`,
          headers: { 'X-Hook-Auth': HEADER_SECRET },
          body: { routing_key: BODY_SECRET, summary: '{{trigger.message}}' },
        },
      },
    ],
  });
  expect(created.status, created.text).toBe(201);
  const token = await tokenWithScopes(acct, ['workflows:read', 'workflows:write', 'requests:read']);
  const one = `${wfPath(acct)}/${created.body.sid}`;
  const read = await api(token).get<Wf>(one);
  expect(read.status, read.text).toBe(200);
  return { acct, token, one, read: read.body };
}

const putBody = (w: Wf, actions: Action[]) => ({
  name: w.name,
  trigger: w.trigger,
  isActive: w.isActive,
  actions,
});
const withConfig = (w: Wf, patch: Record<string, unknown>): Action[] => [
  { ...w.actions[0]!, config: { ...w.actions[0]!.config, ...patch } },
];
const everything = (r: Receiver) => JSON.stringify(r.calls);

describe('a masked secret and a changed destination', () => {
  it('reads show the header and the credential body key masked; nothing is stored in clear', async () => {
    const { read, acct } = await setUp(randomBytes(4).toString('hex'));
    expect(read.actions[0]!.config.headers).toEqual({ 'X-Hook-Auth': '****' });
    expect(read.actions[0]!.config.body).toEqual({ routing_key: '****', summary: '{{trigger.message}}' });
    const row = await testPool().query<{ actions: string }>(
      'SELECT actions::text AS actions FROM workflows WHERE account_sid = $1',
      [acct.accountSid],
    );
    expect(row.rows[0]!.actions).not.toContain(HEADER_SECRET);
    expect(row.rows[0]!.actions).not.toContain(BODY_SECRET);
    expect(row.rows[0]!.actions).toContain('{{trigger.message}}');
  });

  it('another origin with the header still masked: 400 naming it, nothing sent, nothing changed', async () => {
    const tag = randomBytes(4).toString('hex');
    const { token, one, read } = await setUp(tag);
    const moved = withConfig(read, { url: `${other.url}/steal-${tag}` });

    const put = await api(token).put<ErrorEnvelope>(one, putBody(read, moved));
    expect(put.status, put.text).toBe(400);
    expect(put.body.success).toBe(false);
    expect(put.body.error.code).toBe('VALIDATION_ERROR');
    expect(put.body.error.message).toContain('actions.0.config.headers.X-Hook-Auth is masked');
    expect(put.body.error.message).toContain("enter its value again when the URL's origin");
    expect(put.body.error.details['body.actions.0.config.headers']).toMatch(/^X-Hook-Auth is masked/);
    expect(put.body.error.details['body.actions.0.config.body']).toMatch(/^routing_key is masked/);
    expect(put.text).not.toContain(HEADER_SECRET);

    const test = await api(token).post<ErrorEnvelope>(`${one}/test`, { actions: moved });
    expect(test.status, test.text).toBe(400);
    expect(test.body.error.message).toContain('actions.0.config.headers.X-Hook-Auth is masked');

    // The stored workflow still points home, with its secrets.
    const after = await api(token).get<Wf>(one);
    expect(after.body.actions[0]!.config.url).toBe(`${home.url}/hook-${tag}`);
    const sent = await api(token).post<TestResult>(`${one}/test`, {});
    expect(sent.status, sent.text).toBe(200);
    expect(home.callsTo(`/hook-${tag}`).at(-1)!.headers['x-hook-auth']).toBe(HEADER_SECRET);

    expect(other.calls.filter((c) => c.path.includes(tag))).toEqual([]);
    expect(everything(other)).not.toContain(HEADER_SECRET);
    expect(everything(other)).not.toContain(BODY_SECRET);
  });

  it('the same origin on another path keeps the masked secrets and sends them', async () => {
    const tag = randomBytes(4).toString('hex');
    const { token, one, read } = await setUp(tag);
    const elsewhere = withConfig(read, { url: `${home.url}/moved-${tag}?v=2` });

    const draft = await api(token).post<TestResult>(`${one}/test`, { actions: elsewhere });
    expect(draft.status, draft.text).toBe(200);
    expect(draft.body.results[0]).toMatchObject({ status: 'succeeded', statusCode: 200 });
    const first = home.callsTo(`/moved-${tag}?v=2`);
    expect(first).toHaveLength(1);
    expect(first[0]!.headers['x-hook-auth']).toBe(HEADER_SECRET);
    expect(first[0]!.json).toMatchObject({ routing_key: BODY_SECRET });

    const put = await api(token).put<Wf>(one, putBody(read, elsewhere));
    expect(put.status, put.text).toBe(200);
    expect(put.body.actions[0]!.config.headers).toEqual({ 'X-Hook-Auth': '****' });
    const sent = await api(token).post<TestResult>(`${one}/test`, {});
    expect(sent.body.results[0]).toMatchObject({ status: 'succeeded', statusCode: 200 });
    const second = home.callsTo(`/moved-${tag}?v=2`);
    expect(second).toHaveLength(2);
    expect(second[1]!.headers['x-hook-auth']).toBe(HEADER_SECRET);
    expect(second[1]!.json).toMatchObject({ routing_key: BODY_SECRET });
  });

  it('values entered again with the new origin are sent there, the old ones never', async () => {
    const tag = randomBytes(4).toString('hex');
    const { token, one, read } = await setUp(tag);
    const moved = withConfig(read, {
      url: `${other.url}/new-${tag}`,
      headers: { 'X-Hook-Auth': 'NEWHEADERVALUE1' },
      body: { routing_key: 'NEWROUTINGKEY1', summary: '{{trigger.message}}' },
    });

    const draft = await api(token).post<TestResult>(`${one}/test`, { actions: moved });
    expect(draft.status, draft.text).toBe(200);
    expect(draft.body.results[0]).toMatchObject({ status: 'succeeded', statusCode: 200 });
    const put = await api(token).put<Wf>(one, putBody(read, moved));
    expect(put.status, put.text).toBe(200);
    const sent = await api(token).post<TestResult>(`${one}/test`, {});
    expect(sent.body.results[0]).toMatchObject({ status: 'succeeded', statusCode: 200 });

    const calls = other.callsTo(`/new-${tag}`);
    expect(calls).toHaveLength(2);
    for (const c of calls) {
      expect(c.headers['x-hook-auth']).toBe('NEWHEADERVALUE1');
      expect(c.json).toMatchObject({ routing_key: 'NEWROUTINGKEY1' });
    }
    expect(everything(other)).not.toContain(HEADER_SECRET);
    expect(everything(other)).not.toContain(BODY_SECRET);
  });
});

describe('automation data', () => {
  it('a credential key of data is sealed, masked, and refused for another origin', async () => {
    const tag = randomBytes(4).toString('hex');
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const created = await a.post<Wf>(wfPath(acct), {
      name: `automation ${tag}`,
      isActive: false,
      trigger: { type: 'error', conditions: [{ path: `/never-${tag}/*` }] },
      actions: [
        {
          type: 'automation',
          config: {
            flow_id: 'flow-1',
            webhook_url: `${home.url}/flow-${tag}`,
            data: { apiKey: DATA_SECRET, path: '{{request.path}}' },
          },
        },
      ],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.actions[0]!.config.data).toEqual({ apiKey: '****', path: '{{request.path}}' });
    const row = await testPool().query<{ actions: string }>(
      'SELECT actions::text AS actions FROM workflows WHERE sid = $1',
      [created.body.sid],
    );
    expect(row.rows[0]!.actions).not.toContain(DATA_SECRET);

    const one = `${wfPath(acct)}/${created.body.sid}`;
    const sent = await a.post<TestResult>(`${one}/test`, {});
    expect(sent.body.results[0]).toMatchObject({ status: 'succeeded', statusCode: 200 });
    expect(home.callsTo(`/flow-${tag}`)[0]!.json).toMatchObject({
      flow_id: 'flow-1',
      data: { apiKey: DATA_SECRET },
    });

    const moved = withConfig(created.body, { webhook_url: `${other.url}/flow-${tag}` });
    const put = await a.put<ErrorEnvelope>(one, putBody(created.body, moved));
    expect(put.status, put.text).toBe(400);
    expect(put.body.error.details).toEqual({
      'body.actions.0.config.data': expect.stringMatching(
        /^apiKey is masked \(\*\*\*\*\); enter its value again/,
      ),
    });
    expect(other.calls.filter((c) => c.path.includes(tag))).toEqual([]);
  });
});
