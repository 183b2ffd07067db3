import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, testPool, waitFor } from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';

/**
 * Secrets inside workflow actions (docs/security.md "Secrets at rest"): the hook URL's token-like
 * path segments and query values and every custom header value are sealed (AES-256-GCM) in
 * Postgres, masked in every API answer, kept when a client saves back what it read, and opened
 * only for the action runner, which sends the real values.
 */

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
});

interface Wf {
  sid: string;
  name: string;
  trigger: Record<string, unknown>;
  isActive: boolean;
  actions: { type: string; order: number; config: { url: string; headers: Record<string, string> } }[];
}

describe('webhook secrets', () => {
  it('are sealed at rest, masked in reads, kept on a save of what was read, and sent for real', async () => {
    const acct = await newAccount();
    const tag = randomBytes(4).toString('hex');
    const pathToken = `T0k${randomBytes(12).toString('hex')}`;
    const sig = `sig${randomBytes(8).toString('hex')}`;
    const bearer = `Bearer sk_${randomBytes(12).toString('hex')}`;
    const apiKey = `key_${randomBytes(12).toString('hex')}`;
    const secrets = [pathToken, sig, bearer.slice(7), apiKey];
    const base = `/v1/accounts/${acct.accountSid}/environments/prod01/buckets/${acct.bucketSid}/workflows`;
    const a = api(acct.apiToken);

    const created = await a.post<Wf>(base, {
      name: `secrets ${tag}`,
      trigger: { type: 'request', conditions: [{ path: `/secret-${tag}/*` }] },
      actions: [
        {
          type: 'webhook',
          config: {
            url: `${rx.url}/hook/${tag}/${pathToken}?sig=${sig}`,
            headers: { Authorization: bearer, 'X-Api-Key': apiKey },
            body: { path: '{{request.path}}' },
          },
        },
      ],
    });
    expect(created.status, created.text).toBe(201);
    const masked = created.body.actions[0]!.config;
    expect(masked.url).toBe(`${rx.url}/hook/${tag}/****?sig=****`);
    expect(masked.headers).toEqual({ Authorization: '****', 'X-Api-Key': '****' });
    for (const s of secrets) expect(created.text).not.toContain(s);

    // At rest: sealed values, no plain secret anywhere in the row.
    const row = await testPool().query<{ actions: string }>(
      'SELECT actions::text AS actions FROM workflows WHERE sid = $1',
      [created.body.sid],
    );
    expect(row.rows[0]!.actions).toContain('tlenc:v1:');
    for (const s of secrets) expect(row.rows[0]!.actions).not.toContain(s);

    // Every read is masked: one workflow, the bucket's list.
    const got = await a.get<Wf>(`${base}/${created.body.sid}`);
    expect(got.body.actions[0]!.config).toMatchObject(masked);
    const list = await a.get<{ records: Wf[] }>(base);
    for (const s of secrets) expect(list.text).not.toContain(s);

    // Saving back what was read (a rename) keeps the stored secrets.
    const saved = await a.put<Wf>(`${base}/${created.body.sid}`, {
      name: `secrets ${tag} renamed`,
      trigger: got.body.trigger,
      actions: got.body.actions,
      isActive: true,
    });
    expect(saved.status, saved.text).toBe(200);
    const after = await testPool().query<{ actions: string }>(
      'SELECT actions::text AS actions FROM workflows WHERE sid = $1',
      [created.body.sid],
    );
    expect(after.rows[0]!.actions).not.toContain('****');

    // The runner opens them: the receiver gets the real URL and headers.
    await waitFor(
      async () => {
        const res = await ingest(acct.bucketSid, acct.apiToken, [
          makeRecord({ request: { method: 'GET', path: `/secret-${tag}/1`, host: 'api.example.com' } }),
        ]);
        expect(res.status).toBe(202);
        await new Promise((r) => setTimeout(r, 1000));
        return rx.calls.some((c) => c.path.startsWith(`/hook/${tag}/`));
      },
      { timeoutMs: 45_000, what: 'the webhook with its real secrets' },
    );
    const call = rx.calls.find((c) => c.path.startsWith(`/hook/${tag}/`))!;
    expect(call.path).toBe(`/hook/${tag}/${pathToken}?sig=${sig}`);
    expect(call.headers.authorization).toBe(bearer);
    expect(call.headers['x-api-key']).toBe(apiKey);
  });
});
