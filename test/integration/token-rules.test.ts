import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, newAccount, testEnv, testPool, waitFor } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';
import { hashToken } from '../../services/shared/credentials.js';

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
    // Scopes cannot be changed by an update at all (docs/auth.md): refused as an unknown field.
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

/** One JSON-RPC `tools/call` on /mcp: the tool's result (`isError`, text content). */
async function callTool(token: string, name: string, args: Record<string, unknown> = {}) {
  const res = await fetch(`${testEnv().apiUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { result: { isError?: boolean; content: { text: string }[] } };
  return { isError: body.result.isError === true, text: body.result.content[0]!.text };
}

/** The names tools/list offers to `token`. */
async function toolNames(token: string): Promise<string[]> {
  const res = await fetch(`${testEnv().apiUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  const body = (await res.json()) as { result: { tools: { name: string }[] } };
  return body.result.tools.map((t) => t.name).sort();
}

/** An API token of `acct` holding `scopes` that expires at `at`. */
async function expiringToken(acct: { accountSid: string }, scopes: string[], at: Date): Promise<string> {
  const value = await tokenWithScopes(acct, scopes);
  await testPool().query('UPDATE api_tokens SET expires_at = $2 WHERE token_hash = $1', [
    hashToken(value),
    at,
  ]);
  return value;
}

describe('Token inheritance: an MCP token reaches only what its creator reaches', () => {
  // The two escalation paths: MCP-token management plus the event scopes, given directly or
  // granted by tokens:write + buckets:read + buckets:write.
  for (const scopes of [
    ['mcpTokens:write', 'events:read', 'events:write'],
    ['tokens:write', 'buckets:read', 'buckets:write'],
  ]) {
    it(`a creator holding ${scopes.join(' + ')} mints a token whose traffic tools refuse`, async () => {
      const acct = await newAccount();
      const base = `/v1/accounts/${acct.accountSid}`;
      const creator = api(await tokenWithScopes(acct, scopes));
      // The creator itself cannot read requests, metrics or workflows on /v1.
      for (const path of [
        `${base}/buckets/${acct.bucketSid}/requests`,
        `${base}/metrics/summary?bucketSid=${acct.bucketSid}`,
        `${base}/workflows`,
      ])
        expect((await creator.get(path)).status, path).toBe(403);

      const minted = await creator.post<{ token: string; scopes: string[] }>(`${base}/mcpTokens`, {
        name: 'minted',
        environmentSid: 'prod01',
      });
      expect(minted.status, minted.text).toBe(201);
      expect(minted.body.scopes).not.toContain('requests:read');
      expect(minted.body.scopes).not.toContain('metrics:read');
      expect(minted.body.scopes).not.toContain('workflows:read');
      const token = minted.body.token;
      const refused: [string, Record<string, unknown>, string][] = [
        ['search_requests', { bucketSid: acct.bucketSid }, 'requests:read'],
        ['get_request', { requestSid: 'req_x' }, 'requests:read'],
        ['get_metrics_summary', {}, 'metrics:read'],
        ['get_errors', {}, 'metrics:read'],
        ['get_timeseries', {}, 'metrics:read'],
        ['list_workflows', {}, 'workflows:read'],
        ['list_workflow_executions', {}, 'workflows:read'],
      ];
      for (const [name, args, scope] of refused) {
        const res = await callTool(token, name, args);
        expect(res.isError, `${name}: ${res.text}`).toBe(true);
        expect(JSON.parse(res.text)).toMatchObject({ details: { requiredScope: scope } });
      }
      // The event tools the creator could use still work, and only usable tools are listed.
      expect((await callTool(token, 'list_events')).isError).toBe(false);
      const listed = await toolNames(token);
      expect(listed).toContain('list_events');
      expect(listed).not.toContain('search_requests');
      expect(listed).not.toContain('get_metrics_summary');

      // An administrator's MCP token of the same account reaches everything.
      const full = await api(acct.apiToken).post<{ token: string }>(`${base}/mcpTokens`, {
        name: 'full',
        environmentSid: 'prod01',
      });
      expect(full.status, full.text).toBe(201);
      const all = await callTool(full.body.token, 'search_requests', { bucketSid: acct.bucketSid });
      expect(all.isError, all.text).toBe(false);
    });
  }

  it('widening an MCP token needs every scope it holds', async () => {
    const acct = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/mcpTokens`;
    const full = await api(acct.apiToken).post<{ sid: string }>(base, {
      name: 'one bucket',
      environmentSid: 'prod01',
      bucketSids: [acct.bucketSid],
    });
    expect(full.status, full.text).toBe(201);
    const weak = api(await tokenWithScopes(acct, ['mcpTokens:write', 'events:read', 'events:write']));
    const widen = await weak.put<Err>(`${base}/${full.body.sid}`, { bucketSids: [] });
    expect(widen.status, widen.text).toBe(403);
    expect(widen.body.error.details.notHeld).toEqual([
      'buckets:read',
      'metrics:read',
      'requests:read',
      'workflows:read',
    ]);
    const kept = await api(acct.apiToken).get<{ bucketSids: string[] }>(`${base}/${full.body.sid}`);
    expect(kept.body.bucketSids).toEqual([acct.bucketSid]);
  });
});

describe('Token inheritance: a child expires no later than its maker', () => {
  it('caps expiresAt on API token create and PUT', async () => {
    const acct = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/apiTokens`;
    const parentExpiry = new Date(Date.now() + 3_600_000);
    const parent = api(
      await expiringToken(acct, ['tokens:read', 'tokens:write', 'buckets:read'], parentExpiry),
    );
    const cap = parentExpiry.toISOString();

    const never = await parent.post<{ expiresAt: string | null }>(base, {
      name: 'no expiry',
      scopes: ['buckets:read'],
    });
    expect(never.status, never.text).toBe(201);
    expect(never.body.expiresAt).toBe(cap);
    const later = await parent.post<{ expiresAt: string | null }>(base, {
      name: 'later',
      scopes: ['buckets:read'],
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(later.body.expiresAt).toBe(cap);
    const sooner = new Date(Date.now() + 600_000).toISOString();
    const early = await parent.post<{ expiresAt: string | null }>(base, {
      name: 'sooner',
      scopes: ['buckets:read'],
      expiresAt: sooner,
    });
    expect(early.body.expiresAt).toBe(sooner);

    // An administrator's token without expiry, changed (reactivated) by the expiring parent.
    const made = await api(acct.apiToken).post<{ sid: string; expiresAt: string | null }>(base, {
      name: 'admin made',
      scopes: ['buckets:read'],
    });
    expect(made.body.expiresAt).toBeNull();
    const put = await parent.put<{ expiresAt: string | null }>(`${base}/${made.body.sid}`, {
      name: 'touched',
      isActive: true,
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.expiresAt).toBe(cap);

    // A session (the dashboard person) is not capped: its expiry slides with use.
    const bySession = await api(acct.sessionToken).post<{ expiresAt: string | null }>(base, {
      name: 'by session',
      scopes: ['buckets:read'],
    });
    expect(bySession.status, bySession.text).toBe(201);
    expect(bySession.body.expiresAt).toBeNull();
  });

  it('caps expiresAt on MCP token create and PUT, and the child stops with its parent', async () => {
    const acct = await newAccount();
    const base = `/v1/accounts/${acct.accountSid}/mcpTokens`;
    const parentExpiry = new Date(Date.now() + 4000);
    const parent = api(
      await expiringToken(
        acct,
        ['tokens:read', 'tokens:write', 'buckets:read', 'buckets:write'],
        parentExpiry,
      ),
    );
    const child = await parent.post<{ sid: string; token: string; expiresAt: string | null }>(base, {
      name: 'child',
      environmentSid: 'prod01',
    });
    expect(child.status, child.text).toBe(201);
    expect(child.body.expiresAt).toBe(parentExpiry.toISOString());
    const put = await parent.put<{ expiresAt: string | null }>(`${base}/${child.body.sid}`, {
      expiresAt: null,
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.expiresAt).toBe(parentExpiry.toISOString());
    expect(await rpc(child.body.token, 'tools/list')).toBe(200);
    await waitFor(async () => (await rpc(child.body.token, 'tools/list')) === 401, {
      timeoutMs: 20_000,
      what: 'the child MCP token refused once its parent expired',
    });
  });
});
