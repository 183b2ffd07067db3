import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, newAccount, testEnv, testPool, waitFor } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

/**
 * Token rules (docs/auth.md "Token rules"): no credential hands out or changes more than it holds,
 * an API token's view of the caller's profile stays inside its account, the chat user hash is
 * keyed by a configured secret, and MCP tokens may expire.
 */

type Err = { error: { code: string; details: Record<string, unknown> } };

async function rpc(token: string, method: string, params: Record<string, unknown> = {}) {
  const res = await fetch(`${testEnv().apiUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return res.status;
}

describe('API token updates', () => {
  it('refuses to change a token that holds scopes the caller lacks', async () => {
    const acct = await newAccount();
    const admin = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/apiTokens`;
    const strong = await admin.post<{ sid: string }>(base, {
      name: 'strong',
      scopes: ['tokens:read', 'tokens:write', 'buckets:delete'],
    });
    expect(strong.status, strong.text).toBe(201);
    // Deactivated by the administrator, then a weaker token tries to bring it back.
    expect((await admin.put(`${base}/${strong.body.sid}`, { name: 'strong', isActive: false })).status).toBe(
      200,
    );
    const weak = api(await tokenWithScopes(acct, ['tokens:read', 'tokens:write']));
    const res = await weak.put<Err>(`${base}/${strong.body.sid}`, { name: 'mine now', isActive: true });
    expect(res.status, res.text).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(res.body.error.details.notHeld).toEqual(['buckets:delete']);
    const after = await admin.get<{ name: string; isActive: boolean }>(`${base}/${strong.body.sid}`);
    expect(after.body).toMatchObject({ name: 'strong', isActive: false });
    // A token within the caller's scopes may still be changed; scopes cannot be sent at all.
    const small = await weak.post<{ sid: string }>(base, { name: 'small', scopes: ['tokens:read'] });
    expect(small.status, small.text).toBe(201);
    expect((await weak.put(`${base}/${small.body.sid}`, { name: 'small-2', isActive: false })).status).toBe(
      200,
    );
    const grant = await weak.put(`${base}/${small.body.sid}`, {
      name: 'small-3',
      isActive: true,
      scopes: ['buckets:delete'],
    });
    // Scopes cannot be changed by an update at all (spec 4.2): refused as an unknown field.
    expect(grant.status).toBe(400);
    const kept = await admin.get<{ scopes: string[] }>(`${base}/${small.body.sid}`);
    expect(kept.body.scopes).toEqual(['tokens:read']);
  });
});

describe('MCP token updates', () => {
  it('`bucketSids: []` on update follows the rule of create (the caller must hold events:read and events:write)', async () => {
    const acct = await newAccount();
    const admin = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/mcpTokens`;
    const created = await admin.post<{ sid: string }>(base, {
      name: 'one bucket',
      environmentSid: 'prod01',
      bucketSids: [acct.bucketSid],
    });
    expect(created.status, created.text).toBe(201);
    const managerOnly = api(await tokenWithScopes(acct, ['mcpTokens:read', 'mcpTokens:write']));
    // Same rule as create: this caller may not mint one...
    const mint = await managerOnly.post<Err>(base, { name: 'x', environmentSid: 'prod01' });
    expect(mint.status).toBe(403);
    // ...so it may not widen one to every bucket either,
    const widen = await managerOnly.put<Err>(`${base}/${created.body.sid}`, { bucketSids: [] });
    expect(widen.status, widen.text).toBe(403);
    expect(widen.body.error.details.notHeld).toEqual(['events:read', 'events:write']);
    const still = await admin.get<{ bucketSids: string[] }>(`${base}/${created.body.sid}`);
    expect(still.body.bucketSids).toEqual([acct.bucketSid]);
    // ...but it may rename one; a caller holding the grants may widen it.
    expect((await managerOnly.put(`${base}/${created.body.sid}`, { name: 'renamed' })).status).toBe(200);
    const ok = await admin.put<{ bucketSids: string[] }>(`${base}/${created.body.sid}`, { bucketSids: [] });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.bucketSids).toEqual([]);
  });

  it('expires: expiresAt on create and update, refused after', async () => {
    const acct = await newAccount();
    const admin = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/mcpTokens`;
    const past = await admin.post<Err>(base, {
      name: 'past',
      environmentSid: 'prod01',
      expiresAt: new Date(Date.now() - 60_000).toISOString(),
    });
    expect(past.status).toBe(400);
    expect(past.body.error.details).toHaveProperty(['body.expiresAt']);

    const soon = new Date(Date.now() + 3000).toISOString();
    const created = await admin.post<{ sid: string; token: string; expiresAt: string | null }>(base, {
      name: 'short-lived',
      environmentSid: 'prod01',
      expiresAt: soon,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.expiresAt).toBe(soon);
    expect(await rpc(created.body.token, 'tools/list')).toBe(200);
    await waitFor(async () => (await rpc(created.body.token, 'tools/list')) === 401, {
      timeoutMs: 20_000,
      what: 'the expired MCP token refused',
    });

    // Update: a new expiry, then none (null) again.
    const other = await admin.post<{ sid: string; token: string }>(base, {
      name: 'later',
      environmentSid: 'prod01',
    });
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const upd = await admin.put<{ expiresAt: string | null }>(`${base}/${other.body.sid}`, {
      expiresAt: later,
    });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body.expiresAt).toBe(later);
    const row = await testPool().query<{ expires_at: Date }>(
      'SELECT expires_at FROM mcp_tokens WHERE sid = $1',
      [other.body.sid],
    );
    expect(row.rows[0]!.expires_at.toISOString()).toBe(later);
    const never = await admin.put<{ expiresAt: string | null }>(`${base}/${other.body.sid}`, {
      expiresAt: null,
    });
    expect(never.body.expiresAt).toBeNull();
    expect(await rpc(other.body.token, 'tools/list')).toBe(200);
  });
});

describe('GET /v1/authentication/me', () => {
  it("shows an API token only its own account, never the administrator's others", async () => {
    const a = await newAccount();
    const b = await newAccount();
    // a's administrator is also a member of b.
    await testPool().query(`INSERT INTO memberships (account_sid, user_sid, role) VALUES ($1, $2, 'user')`, [
      b.accountSid,
      a.userSid,
    ]);
    const me = await api(a.apiToken).get<{ accounts: { sid: string }[]; defaultAccountSid: string | null }>(
      '/v1/authentication/me',
    );
    expect(me.status, me.text).toBe(200);
    expect(me.body.accounts.map((x) => x.sid)).toEqual([a.accountSid]);
    expect(me.text).not.toContain(b.accountSid);
    // The user's own session still lists every membership (the dashboard's account switcher).
    const session = await api(a.sessionToken).get<{ accounts: { sid: string }[] }>('/v1/authentication/me');
    expect(session.body.accounts.map((x) => x.sid).sort()).toEqual([a.accountSid, b.accountSid].sort());
  });

  it('keys the chat user hash with a configured secret, not a constant', async () => {
    const acct = await newAccount();
    const me = await api(acct.apiToken).get<{ sid: string; chat: { userHash: string } }>(
      '/v1/authentication/me',
    );
    expect(me.status).toBe(200);
    expect(me.body.chat.userHash).toMatch(/^[0-9a-f]{64}$/);
    // The key is neither the former constant nor anything derived from public settings.
    for (const env of ['test', 'development', 'production']) {
      const constant = createHmac('sha256', `${env}:tapline-chat`).update(me.body.sid).digest('hex');
      expect(me.body.chat.userHash).not.toBe(constant);
    }
    const again = await api(acct.sessionToken).get<{ chat: { userHash: string } }>('/v1/authentication/me');
    expect(again.body.chat.userHash).toBe(me.body.chat.userHash);
  });
});
