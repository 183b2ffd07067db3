import { describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../services/shared/credentials.js';
import { api, newAccount, testPool, waitFor, type HttpResult } from '../helpers/client.js';

type Token = Record<string, unknown> & { sid: string; token?: string };
type ErrorBody = {
  success: false;
  error: { code: string; message: string; details: Record<string, unknown> };
};
type List<T> = { hasMore: boolean; records: T[] };

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const errorOf = (res: HttpResult) => (res.body as unknown as ErrorBody).error;

/** Creates an API token with the admin token of `acct`; fails the test if that does not work. */
async function createToken(
  adminToken: string,
  accountSid: string,
  body: Record<string, unknown>,
): Promise<Token & { token: string }> {
  const res = await api(adminToken).post<Token>(`/v1/accounts/${accountSid}/apiTokens`, body);
  expect(res.status, res.text).toBe(201);
  return res.body as Token & { token: string };
}

describe('API tokens', () => {
  it('shows the value once, and deactivate, reactivate and delete act at once', async () => {
    const acct = await newAccount();
    const admin = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/apiTokens`;

    const created = await createToken(acct.apiToken, acct.accountSid, {
      name: 'ci',
      description: 'deploy pipeline',
      scopes: ['buckets:read', 'tokens:read'],
    });
    expect(created).toMatchObject({
      accountSid: acct.accountSid,
      environmentSid: null,
      name: 'ci',
      description: 'deploy pipeline',
      role: 'user',
      scopes: ['buckets:read', 'tokens:read'],
      lastUsedAt: null,
      expiresAt: null,
      isActive: true,
      updatedAt: null,
    });
    expect(created.sid).toMatch(/^tok_[A-Za-z0-9]{27}$/);
    expect(created.token).toMatch(/^at_live_[A-Za-z0-9]{40}$/);
    expect(created.createdAt).toMatch(ISO_MS);
    const value = created.token;

    // Never again: neither get nor list carries the value.
    const one = await admin.get<Token>(`${base}/${created.sid}`);
    expect(one.status).toBe(200);
    expect(one.body).not.toHaveProperty('token');
    expect(one.text).not.toContain(value);
    const list = await admin.get<List<Token>>(`${base}?limit=100`);
    expect(list.status).toBe(200);
    expect(list.body.records.map((t) => t.sid)).toContain(created.sid);
    expect(list.body.records.every((t) => !('token' in t))).toBe(true);
    expect(list.text).not.toContain(value);

    const mine = api(value);
    const buckets = `/v1/accounts/${acct.accountSid}/buckets`;
    // This also puts the token in the credential cache, so the checks below prove invalidation.
    expect((await mine.get(buckets)).status).toBe(200);
    const noScope = await mine.post(buckets, { name: 'nope' });
    expect(noScope.status).toBe(403);
    expect(errorOf(noScope)).toMatchObject({
      code: 'FORBIDDEN',
      details: { requiredScope: 'buckets:write' },
    });

    // lastUsedAt is written in batches, not per request.
    await waitFor(
      async () =>
        ((await admin.get<Token>(`${base}/${created.sid}`)).body.lastUsedAt as string | null) ?? false,
      { timeoutMs: 15_000, what: 'lastUsedAt' },
    );

    const off = await admin.put<Token>(`${base}/${created.sid}`, { name: 'ci-off', isActive: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ name: 'ci-off', description: 'deploy pipeline', isActive: false });
    expect(off.body.updatedAt).toMatch(ISO_MS);
    expect(off.body).not.toHaveProperty('token');
    const refused = await mine.get(buckets);
    expect(refused.status).toBe(401);
    expect(errorOf(refused).code).toBe('INVALID_TOKEN');

    const on = await admin.put<Token>(`${base}/${created.sid}`, {
      name: 'ci',
      description: 'renamed',
      isActive: true,
    });
    expect(on.body).toMatchObject({ name: 'ci', description: 'renamed', isActive: true });
    expect((await mine.get(buckets)).status).toBe(200);

    const del = await admin.delete(`${base}/${created.sid}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ sid: created.sid, deleted: true });
    const gone = await mine.get(buckets);
    expect(gone.status).toBe(401);
    expect(errorOf(gone).code).toBe('INVALID_TOKEN');
    expect((await admin.get(`${base}/${created.sid}`)).status).toBe(404);
    expect((await admin.delete(`${base}/${created.sid}`)).status).toBe(404);
  });

  it('drops a token changed straight in Postgres (another replica) through the NOTIFY trigger', async () => {
    const acct = await newAccount();
    const t = await createToken(acct.apiToken, acct.accountSid, { name: 'x', scopes: ['buckets:read'] });
    const mine = api(t.token);
    const buckets = `/v1/accounts/${acct.accountSid}/buckets`;
    expect((await mine.get(buckets)).status).toBe(200); // cached now
    await testPool().query('UPDATE api_tokens SET is_active = false WHERE sid = $1', [t.sid]);
    await waitFor(async () => (await mine.get(buckets)).status === 401, {
      timeoutMs: 3000,
      what: 'NOTIFY to clear the cached token',
    });
    await testPool().query('UPDATE api_tokens SET is_active = true WHERE sid = $1', [t.sid]);
    await waitFor(async () => (await mine.get(buckets)).status === 200, { timeoutMs: 3000 });
    await testPool().query('DELETE FROM api_tokens WHERE sid = $1', [t.sid]);
    await waitFor(async () => (await mine.get(buckets)).status === 401, { timeoutMs: 3000 });
  });

  it('derives the role, picks the prefix by environment and expires tokens', async () => {
    const acct = await newAccount();
    const admin = await createToken(acct.apiToken, acct.accountSid, {
      name: 'all',
      scopes: [...ALL_SCOPES],
      environment: 'test',
      environmentSid: 'prod01',
    });
    expect(admin.token).toMatch(/^at_test_[A-Za-z0-9]{40}$/);
    expect(admin).toMatchObject({ role: 'administrator', environmentSid: 'prod01' });
    const ingestOnly = await createToken(acct.apiToken, acct.accountSid, {
      name: 'sdk',
      scopes: ['requests:write'],
    });
    expect(ingestOnly.role).toBe('ingest');

    const expiresAt = new Date(Date.now() + 2500).toISOString();
    const short = await createToken(acct.apiToken, acct.accountSid, {
      name: 'short',
      scopes: ['buckets:read'],
      expiresAt,
    });
    expect(short.expiresAt).toBe(expiresAt);
    const mine = api(short.token);
    const buckets = `/v1/accounts/${acct.accountSid}/buckets`;
    expect((await mine.get(buckets)).status).toBe(200);
    const expired = await waitFor(
      async () => {
        const r = await mine.get(buckets);
        return r.status === 401 ? r : undefined;
      },
      { timeoutMs: 10_000, what: 'token expiry' },
    );
    expect(errorOf(expired).code).toBe('INVALID_TOKEN');
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
  });

  it('refuses invalid bodies with details naming each field', async () => {
    const acct = await newAccount();
    const admin = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/apiTokens`;
    const detailsOf = async (res: Promise<HttpResult>) => {
      const r = await res;
      expect(r.status, r.text).toBe(400);
      expect(errorOf(r).code).toBe('VALIDATION_ERROR');
      return errorOf(r).details;
    };

    expect(Object.keys(await detailsOf(admin.post(base, {})))).toEqual(
      expect.arrayContaining(['body.name', 'body.scopes']),
    );
    expect(await detailsOf(admin.post(base, { name: 'x', scopes: [] }))).toHaveProperty('body.scopes');
    const unknown = await admin.post(base, { name: 'x', scopes: ['buckets:read', 'nope:zap'] });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown).message).toContain('nope:zap');
    expect(String(errorOf(unknown).details['body.scopes'])).toContain('nope:zap');
    expect(
      await detailsOf(admin.post(base, { name: 'x', scopes: ['buckets:read'], token: 'at_live_mine' })),
    ).toHaveProperty('body.token');
    expect(
      await detailsOf(admin.post(base, { name: 'x', scopes: ['buckets:read'], expiresAt: 'tomorrow' })),
    ).toHaveProperty('body.expiresAt');
    expect(
      await detailsOf(
        admin.post(base, { name: 'x', scopes: ['buckets:read'], expiresAt: '2020-01-01T00:00:00.000Z' }),
      ),
    ).toHaveProperty('body.expiresAt');
    expect(
      await detailsOf(admin.post(base, { name: 'x', scopes: ['buckets:read'], environment: 'prod' })),
    ).toHaveProperty('body.environment');

    const t = await createToken(acct.apiToken, acct.accountSid, { name: 'x', scopes: ['buckets:read'] });
    expect(await detailsOf(admin.put(`${base}/${t.sid}`, { name: 'y' }))).toHaveProperty('body.isActive');
    expect(
      await detailsOf(admin.put(`${base}/${t.sid}`, { name: 'y', isActive: true, scopes: ['tokens:read'] })),
    ).toHaveProperty('body.scopes');
    expect(await detailsOf(admin.put(`${base}/${t.sid}`, { name: '', isActive: true }))).toHaveProperty(
      'body.name',
    );
    expect((await admin.get<Token>(`${base}/${t.sid}`)).body).toMatchObject({
      name: 'x',
      scopes: ['buckets:read'],
    });
  });

  it('enforces scopes and refuses to grant scopes the caller does not hold', async () => {
    const acct = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/apiTokens`;
    const limited = await createToken(acct.apiToken, acct.accountSid, {
      name: 'limited',
      scopes: ['tokens:write', 'buckets:read'],
    });
    const lim = api(limited.token);

    const escalate = await lim.post(base, { name: 'more', scopes: ['buckets:read', 'buckets:write'] });
    expect(escalate.status).toBe(403);
    expect(errorOf(escalate)).toMatchObject({ code: 'FORBIDDEN', details: { notHeld: ['buckets:write'] } });
    const same = await lim.post<Token>(base, { name: 'same', scopes: ['buckets:read'] });
    expect(same.status).toBe(201);

    for (const [res, scope] of [
      [await lim.get(base), 'tokens:read'],
      [await lim.get(`${base}/${same.body.sid}`), 'tokens:read'],
      [await lim.delete(`${base}/${same.body.sid}`), 'tokens:delete'],
      [await lim.get(`/v1/accounts/${acct.accountSid}/mcpTokens`), 'mcpTokens:read'],
    ] as const) {
      expect(res.status, `${scope}: ${res.text}`).toBe(403);
      expect(errorOf(res)).toMatchObject({ code: 'FORBIDDEN', details: { requiredScope: scope } });
    }
    // tokens:write also grants mcpTokens:write (docs/auth.md "Scopes"), but an MCP token grants
    // events:read and events:write, and this caller holds only the first (through buckets:read).
    const mcp = await lim.post(`/v1/accounts/${acct.accountSid}/mcpTokens`, {
      name: 'm',
      environmentSid: 'prod01',
    });
    expect(mcp.status, mcp.text).toBe(403);
    expect(errorOf(mcp)).toMatchObject({ code: 'FORBIDDEN', details: { notHeld: ['events:write'] } });
    // The refused DELETE left the token in place.
    expect((await api(acct.apiToken).get(`${base}/${same.body.sid}`)).status).toBe(200);
  });

  it('hides another account’s tokens behind 404 and refuses missing or unknown tokens', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const theirs = await createToken(other.apiToken, other.accountSid, {
      name: 't',
      scopes: ['buckets:read'],
    });
    const admin = api(acct.apiToken);
    const mineBase = `/v1/accounts/${acct.accountSid}/apiTokens`;
    const theirBase = `/v1/accounts/${other.accountSid}/apiTokens`;

    for (const res of [
      await admin.get(`${mineBase}/${theirs.sid}`),
      await admin.put(`${mineBase}/${theirs.sid}`, { name: 'stolen', isActive: false }),
      await admin.delete(`${mineBase}/${theirs.sid}`),
      await admin.get(theirBase),
      await admin.get(`${theirBase}/${theirs.sid}`),
      await admin.put(`${theirBase}/${theirs.sid}`, { name: 'stolen', isActive: false }),
      await admin.delete(`${theirBase}/${theirs.sid}`),
      await admin.post(theirBase, { name: 'x', scopes: ['buckets:read'] }),
      await admin.get(`${mineBase}/not-a-sid`),
    ]) {
      expect(res.status, res.text).toBe(404);
      expect(errorOf(res).code).toBe('RESOURCE_NOT_FOUND');
    }
    expect((await api(theirs.token).get(`/v1/accounts/${other.accountSid}/buckets`)).status).toBe(200);
    expect((await api(other.apiToken).get<Token>(`${theirBase}/${theirs.sid}`)).body.name).toBe('t');

    for (const res of [await api().get(mineBase), await api('at_live_' + 'x'.repeat(40)).get(mineBase)]) {
      expect(res.status).toBe(401);
      expect(errorOf(res).code).toBe('INVALID_TOKEN');
    }
  });
});

describe('MCP tokens', () => {
  it('creates with the full value once, lists and updates masked, and revokes', async () => {
    const acct = await newAccount();
    const admin = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/mcpTokens`;

    const res = await admin.post<Token>(base, {
      name: 'assistant',
      environmentSid: 'prod01',
      bucketSids: [acct.bucketSid],
    });
    expect(res.status, res.text).toBe(201);
    const created = res.body as Token & { token: string };
    expect(created).toMatchObject({
      accountSid: acct.accountSid,
      environmentSid: 'prod01',
      bucketSids: [acct.bucketSid],
      name: 'assistant',
      isRevoked: false,
      lastUsedAt: null,
      revokedAt: null,
    });
    expect(created.sid).toMatch(/^mcp_[A-Za-z0-9]{27}$/);
    expect(created.token).toMatch(/^mcp_[A-Za-z0-9]{40}$/);
    expect(created.createdAt).toMatch(ISO_MS);
    expect(created.updatedAt).toMatch(ISO_MS);
    const masked = `${created.token.slice(0, 8)}…${created.token.slice(-4)}`;

    const list = await admin.get<List<Token>>(base);
    expect(list.body.records).toHaveLength(1);
    expect(list.body.records[0]).toMatchObject({ sid: created.sid, token: masked });
    expect(list.text).not.toContain(created.token);
    const one = await admin.get<Token>(`${base}/${created.sid}`);
    expect(one.body.token).toBe(masked);

    const upd = await admin.put<Token>(`${base}/${created.sid}`, { name: 'assistant-2', bucketSids: [] });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body).toMatchObject({
      name: 'assistant-2',
      bucketSids: [],
      environmentSid: 'prod01',
      token: masked,
    });
    const renamed = await admin.put<Token>(`${base}/${created.sid}`, { name: 'assistant-3' });
    expect(renamed.body).toMatchObject({ name: 'assistant-3', bucketSids: [] });

    // An MCP token only works on /mcp: every /v1 endpoint refuses it.
    for (const path of [
      '/v1/authentication/verify',
      `/v1/accounts/${acct.accountSid}/buckets`,
      `/v1/accounts/${acct.accountSid}/events`,
      base,
    ]) {
      const r = await api(created.token).get(path);
      expect(r.status, path).toBe(401);
      expect(errorOf(r).code).toBe('INVALID_TOKEN');
    }

    const del = await admin.delete(`${base}/${created.sid}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ sid: created.sid, deleted: true });
    const revoked = await admin.get<Token>(`${base}/${created.sid}`);
    expect(revoked.body).toMatchObject({ isRevoked: true, token: masked });
    expect(revoked.body.revokedAt).toMatch(ISO_MS);
    const { rows } = await testPool().query<{ is_revoked: boolean }>(
      'SELECT is_revoked FROM mcp_tokens WHERE sid = $1',
      [created.sid],
    );
    expect(rows[0]?.is_revoked).toBe(true);
    // Revoking again is harmless and keeps the first revocation time.
    const again = await admin.delete(`${base}/${created.sid}`);
    expect(again.body).toEqual({ sid: created.sid, deleted: true });
    expect((await admin.get<Token>(`${base}/${created.sid}`)).body.revokedAt).toBe(revoked.body.revokedAt);
  });

  it('validates bodies, buckets and scopes, and hides another account’s tokens', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const admin = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/mcpTokens`;
    const detailsOf = async (p: Promise<HttpResult>) => {
      const r = await p;
      expect(r.status, r.text).toBe(400);
      expect(errorOf(r).code).toBe('VALIDATION_ERROR');
      return errorOf(r).details;
    };

    expect(Object.keys(await detailsOf(admin.post(base, {})))).toEqual(
      expect.arrayContaining(['body.name', 'body.environmentSid']),
    );
    expect(await detailsOf(admin.post(base, { name: 'x', environmentSid: 'PROD01' }))).toHaveProperty(
      'body.environmentSid',
    );
    expect(
      await detailsOf(
        admin.post(base, {
          name: 'x',
          environmentSid: 'prod01',
          bucketSids: [acct.bucketSid, other.bucketSid],
        }),
      ),
    ).toEqual({ 'body.bucketSids.1': `${other.bucketSid} is not a bucket of this account` });
    expect(
      await detailsOf(admin.post(base, { name: 'x', environmentSid: 'prod01', token: 'mcp_x' })),
    ).toHaveProperty('body.token');

    const theirs = await api(other.apiToken).post<Token>(`/v1/accounts/${other.accountSid}/mcpTokens`, {
      name: 'theirs',
      environmentSid: 'prod01',
    });
    expect(theirs.status).toBe(201);
    const mine = await admin.post<Token>(base, { name: 'mine', environmentSid: 'prod01' });
    expect(mine.body.bucketSids).toEqual([]);
    expect(await detailsOf(admin.put(`${base}/${mine.body.sid}`, {}))).toBeDefined();
    expect(
      await detailsOf(admin.put(`${base}/${mine.body.sid}`, { bucketSids: ['bkt_nope'] })),
    ).toHaveProperty('body.bucketSids.0');
    expect(
      await detailsOf(admin.put(`${base}/${mine.body.sid}`, { environmentSid: 'other1' })),
    ).toHaveProperty('body.environmentSid');

    for (const res of [
      await admin.get(`${base}/${theirs.body.sid}`),
      await admin.put(`${base}/${theirs.body.sid}`, { name: 'stolen' }),
      await admin.delete(`${base}/${theirs.body.sid}`),
      await admin.get(`/v1/accounts/${other.accountSid}/mcpTokens`),
      await admin.delete(`/v1/accounts/${other.accountSid}/mcpTokens/${theirs.body.sid}`),
      await admin.get(`${base}/mcp_short`),
    ]) {
      expect(res.status, res.text).toBe(404);
      expect(errorOf(res).code).toBe('RESOURCE_NOT_FOUND');
    }
    const still = await api(other.apiToken).get<Token>(
      `/v1/accounts/${other.accountSid}/mcpTokens/${theirs.body.sid}`,
    );
    expect(still.body).toMatchObject({ name: 'theirs', isRevoked: false });

    // Minting an MCP token hands out events:read and events:write: the caller needs both.
    const noEvents = await createToken(acct.apiToken, acct.accountSid, {
      name: 'mcp-admin',
      scopes: ['mcpTokens:read', 'mcpTokens:write', 'mcpTokens:delete', 'events:read'],
    });
    const refused = await api(noEvents.token).post(base, { name: 'x', environmentSid: 'prod01' });
    expect(refused.status).toBe(403);
    expect(errorOf(refused)).toMatchObject({ code: 'FORBIDDEN', details: { notHeld: ['events:write'] } });
    const readOnly = await createToken(acct.apiToken, acct.accountSid, {
      name: 'ro',
      scopes: ['mcpTokens:read'],
    });
    const ro = api(readOnly.token);
    expect((await ro.get(base)).status).toBe(200);
    for (const [res, scope] of [
      [await ro.put(`${base}/${mine.body.sid}`, { name: 'z' }), 'mcpTokens:write'],
      [await ro.delete(`${base}/${mine.body.sid}`), 'mcpTokens:delete'],
    ] as const) {
      expect(res.status).toBe(403);
      expect(errorOf(res).details).toEqual({ requiredScope: scope });
    }
    expect((await api().get(base)).status).toBe(401);
  });
});
