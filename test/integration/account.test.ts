import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

type Account = {
  sid: string;
  name: string;
  plan: string;
  createdAt: string;
  rateLimit: { limit: number; windowSeconds: number; used: number; resetAt: string | null };
  environments: { sid: string; lastSeenAt: string; count: number }[];
};
type ErrorBody = { error: { code: string; details: Record<string, unknown> } };

/** `GET/PUT /v1/accounts/{a}` (docs/auth.md, "The account"): the dashboard's account page. */
describe('the account resource', () => {
  it('shows name, plan, the rate limit with its use, and the environments seen in traffic', async () => {
    const acct = await newAccount({ plan: 'pro' });
    const c = api(acct.apiToken);
    const path = `/v1/accounts/${acct.accountSid}`;
    expect((await c.get(`/v1/accounts/${acct.accountSid}/buckets`)).status).toBe(200);
    const first = await c.get<Account>(path);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ sid: acct.accountSid, plan: 'pro', environments: [] });
    // createAccount gives `pro` its plan limit; the window counts this account's /v1 calls.
    expect(first.body.rateLimit.limit).toBe(Number(first.headers.get('x-ratelimit-limit')));
    expect(first.body.rateLimit.windowSeconds).toBe(3600);
    expect(first.body.rateLimit.used).toBeGreaterThanOrEqual(2);
    expect(first.body.rateLimit.resetAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/);
    const second = await c.get<Account>(path);
    expect(second.body.rateLimit.used).toBe(first.body.rateLimit.used + 1);

    const sent = await ingest(acct.bucketSid, acct.apiToken, [
      makeRecord({ environmentSid: 'prod01' }),
      makeRecord({ environmentSid: 'prod01' }),
      makeRecord({ environmentSid: 'stag01' }),
      makeRecord({ environmentSid: null }),
    ]);
    expect(sent.status).toBe(202);
    const seen = await waitFor(
      async () => {
        const r = await c.get<Account>(path);
        return r.body.environments.length === 2 && r.body.environments.every((e) => e.count > 0) ? r : null;
      },
      { timeoutMs: 30_000, what: 'environments in the account' },
    );
    const bySid = Object.fromEntries(seen.body.environments.map((e) => [e.sid, e.count]));
    expect(bySid).toEqual({ prod01: 2, stag01: 1 });
    expect(seen.body.environments[0]!.lastSeenAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00\.000Z$/);
  }, 60_000);

  it('is renamed by an administrator’s session only; other accounts get 404', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const path = `/v1/accounts/${acct.accountSid}`;
    const byToken = await api(acct.apiToken).put<ErrorBody>(path, { name: 'Renamed' });
    expect([byToken.status, byToken.body.error.details.requiredScope]).toEqual([403, 'users:write']);
    const renamed = await api(acct.sessionToken).put<Account>(path, { name: '  Renamed Inc  ' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.name).toBe('Renamed Inc');
    expect((await api(acct.apiToken).get<Account>(path)).body.name).toBe('Renamed Inc');
    for (const name of ['', '   ', 'x'.repeat(201)]) {
      const bad = await api(acct.sessionToken).put<ErrorBody>(path, { name });
      expect([name.length, bad.status]).toEqual([name.length, 400]);
      expect(Object.keys(bad.body.error.details)).toContain('body.name');
    }
    const noScope = await tokenWithScopes(acct, ['buckets:read']);
    const r = await api(noScope).get<ErrorBody>(path);
    expect([r.status, r.body.error.details.requiredScope]).toEqual([403, 'metrics:read']);
    expect((await api(other.apiToken).get(path)).status).toBe(404);
    expect((await api(other.sessionToken).put(path, { name: 'Hijacked' })).status).toBe(404);
    expect((await api(acct.apiToken).get<Account>(path)).body.name).toBe('Renamed Inc');
  });
});
