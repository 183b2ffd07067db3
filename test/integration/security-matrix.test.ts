import fs from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { OutboundGuard, OutboundRefusedError } from '../../services/actions/outbound-guard.js';
import {
  ALL_SCOPES,
  hashToken,
  newTokenValue,
  SESSION_ONLY_SCOPES,
  TOKEN_PREFIX,
} from '../../services/shared/credentials.js';
import { newSid } from '../../services/shared/ids.js';
import { IMPLIED_BY } from '../../services/shared/scope-grants.js';
import { REDACT_PATHS } from '../../services/shared/logger.js';
import {
  endpoints,
  fillPath,
  requiredQueryString,
  resolve,
  sample,
  type Endpoint,
  type OpenApiDoc,
} from '../fuzz/hostile-variants.js';
import { mapLimit, rawRequest, type RawResponse } from '../fuzz/raw-http.js';
import { seedResources, type SeededAccount } from '../fuzz/seed.js';
import { newAccount, testEnv, testPool, type TestAccount } from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

/**
 * Issue 7, security. Every operation of the OpenAPI document (routes added later included) ×
 * {no token, garbage, expired, inactive, deleted, signed-out session, missing scope, MCP token,
 * another account's token} answers 401/401/401/401/401/401/403/401/404 in the error envelope,
 * without internals. Exceptions, documented in docs/security.md:
 *  - `/v1/openapi.json` is public;
 *  - `/v1/authentication/*` answer about the caller's own credential: no scope, no account in
 *    the path, so the scope and other-account cases do not apply (any valid credential: 200);
 *  - `/mcp` takes MCP tokens only: every API token or session is a 401 there.
 * Then: no token value the tests used appears in the service log, and outbound action URLs to
 * private addresses are refused.
 */

type Kind =
  'none' | 'garbage' | 'expired' | 'inactive' | 'deleted' | 'signedOut' | 'noScope' | 'mcp' | 'otherAccount';

interface Result {
  ep: Endpoint;
  kind: string;
  r: RawResponse;
}

const STACK_TRACE =
  /\bat [\w$.<>[\] ]+ \(|\bat (file|node):|\/work\/|node_modules|[\w-]+\.(ts|js|mjs|cjs):\d+/;
const usedTokens = new Set<string>();

function envelope(
  text: string,
): { code: string; message: string; details: Record<string, unknown> } | undefined {
  try {
    const j = JSON.parse(text) as {
      success?: unknown;
      error?: { code: string; message: string; details: Record<string, unknown> };
    };
    if (j.success !== false || typeof j.error?.code !== 'string' || typeof j.error.message !== 'string')
      return undefined;
    if (typeof j.error.details !== 'object' || j.error.details === null) return undefined;
    return j.error;
  } catch {
    return undefined;
  }
}

/** An API token of `acct` changed by SQL after creation (expired / inactive). */
async function alteredToken(
  acct: Pick<TestAccount, 'accountSid'>,
  change: 'expired' | 'inactive',
): Promise<string> {
  const value = await tokenWithScopes(acct, [...ALL_SCOPES]);
  const sql =
    change === 'expired'
      ? `UPDATE api_tokens SET expires_at = now() - interval '1 hour' WHERE token_hash = $1`
      : `UPDATE api_tokens SET is_active = false WHERE token_hash = $1`;
  const r = await testPool().query(sql, [hashToken(value)]);
  expect(r.rowCount).toBe(1);
  return value;
}

let doc: OpenApiDoc;
let owner: SeededAccount & { sessionToken: string };
let other: SeededAccount & { sessionToken: string };
const tokens: Record<Exclude<Kind, 'none' | 'noScope' | 'otherAccount'>, string> = {
  garbage: '',
  expired: '',
  inactive: '',
  deleted: '',
  signedOut: '',
  mcp: '',
};

async function seededAccount(): Promise<SeededAccount & { sessionToken: string }> {
  const a = await newAccount();
  const s = await seedResources(
    { apiUrl: testEnv().apiUrl, ingestUrl: testEnv().ingestUrl },
    { accountSid: a.accountSid, bucketSid: a.bucketSid, token: a.apiToken },
  );
  usedTokens.add(a.apiToken).add(a.sessionToken).add(s.mcpToken);
  return { ...s, sessionToken: a.sessionToken };
}

function call(
  ep: Endpoint,
  token: string | undefined,
  params: Record<string, string>,
  body?: string,
): Promise<RawResponse> {
  if (token) usedTokens.add(token);
  return rawRequest(testEnv().apiUrl, {
    method: ep.method,
    url: fillPath(ep.path, params) + requiredQueryString(ep, doc, params),
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body,
  });
}

/** A schema-valid body for the operation (validation runs before the scope and account checks). */
function validBody(ep: Endpoint, params: Record<string, string>): string | undefined {
  const schema = ep.op.requestBody?.content['application/json']?.schema;
  if (!schema) return undefined;
  return JSON.stringify(sample(resolve(schema, doc), doc, params));
}

/** Switching a session's account: API tokens get 400 (they belong to one account). */
const isAccountSwitch = (ep: Endpoint) => ep.path === '/v1/authentication/account';
const isAuthInfo = (ep: Endpoint) => ep.path.startsWith('/v1/authentication/') && !isAccountSwitch(ep);
/**
 * Credential-free: this document, sign-in (its methods and single sign-on when configured), first
 * run and invitations (docs/auth.md).
 */
const isPublic = (ep: Endpoint) =>
  ep.path === '/v1/openapi.json' ||
  ep.path === '/v1/authentication/signin' ||
  ep.path === '/v1/authentication/methods' ||
  ep.path.startsWith('/v1/authentication/oidc/') ||
  ep.path === '/v1/setup' ||
  ep.path.startsWith('/v1/invites/');
const isMcp = (ep: Endpoint) => ep.path === '/mcp';

beforeAll(async () => {
  doc = JSON.parse(
    (await rawRequest(testEnv().apiUrl, { method: 'GET', url: '/v1/openapi.json' })).text,
  ) as OpenApiDoc;
  [owner, other] = await Promise.all([seededAccount(), seededAccount()]);
  tokens.garbage = newTokenValue(TOKEN_PREFIX.live);
  tokens.expired = await alteredToken(owner, 'expired');
  tokens.inactive = await alteredToken(owner, 'inactive');
  tokens.mcp = owner.mcpToken;

  // Deleted through the API, after it was seen working.
  const api = (method: string, path: string, token: string, body?: unknown) =>
    rawRequest(testEnv().apiUrl, {
      method,
      url: path,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  const created = await api('POST', `/v1/accounts/${owner.accountSid}/apiTokens`, owner.token, {
    name: 'to delete',
    scopes: [...ALL_SCOPES],
  });
  expect(created.status).toBe(201);
  const { sid, token } = JSON.parse(created.text) as { sid: string; token: string };
  tokens.deleted = token;
  expect((await api('GET', '/v1/authentication/verify', token)).status).toBe(200);
  expect((await api('DELETE', `/v1/accounts/${owner.accountSid}/apiTokens/${sid}`, owner.token)).status).toBe(
    200,
  );

  // A second session of the owner's user, signed out.
  const session = await testPool().query<{ user_sid: string }>(
    'SELECT user_sid FROM sessions WHERE token_hash = $1',
    [hashToken(owner.sessionToken)],
  );
  tokens.signedOut = newTokenValue(TOKEN_PREFIX.session);
  await testPool().query(
    `INSERT INTO sessions (sid, user_sid, account_sid, token_hash) VALUES ($1, $2, $3, $4)`,
    [newSid('session'), session.rows[0]!.user_sid, owner.accountSid, hashToken(tokens.signedOut)],
  );
  expect((await api('GET', '/v1/authentication/verify', tokens.signedOut)).status).toBe(200);
  const out = await api('GET', '/v1/authentication/signout', tokens.signedOut);
  expect(JSON.parse(out.text)).toEqual({ success: true });
  for (const t of Object.values(tokens)) usedTokens.add(t);
}, 180_000);

describe('authentication and authorization matrix (every operation of the OpenAPI document)', () => {
  it('answers 401 INVALID_TOKEN without a valid credential, on every operation', async () => {
    const ops = endpoints(doc).filter((ep) => !isPublic(ep));
    expect(ops.length).toBeGreaterThanOrEqual(40);
    const kinds: Kind[] = ['none', 'garbage', 'expired', 'inactive', 'deleted', 'signedOut', 'mcp'];
    const jobs = ops.flatMap((ep) =>
      kinds.filter((k) => !(k === 'mcp' && isMcp(ep))).map((kind) => ({ ep, kind })),
    );
    const results: Result[] = await mapLimit(jobs, 4, async ({ ep, kind }) => ({
      ep,
      kind,
      r: await call(
        ep,
        kind === 'none' ? undefined : tokens[kind as keyof typeof tokens],
        owner.params,
        validBody(ep, owner.params),
      ),
    }));
    const wrong = results
      .filter(
        ({ r }) => r.status !== 401 || envelope(r.text)?.code !== 'INVALID_TOKEN' || STACK_TRACE.test(r.text),
      )
      .map(({ ep, kind, r }) => `${ep.method} ${ep.path} [${kind}] -> ${r.status} ${r.text.slice(0, 120)}`);
    expect(wrong).toEqual([]);
    expect(results.length).toBe(jobs.length);
  }, 300_000);

  it('answers 403 FORBIDDEN naming the scope when the token lacks exactly that scope', async () => {
    const ops = endpoints(doc).filter((ep) => !isPublic(ep) && !isMcp(ep));
    const none = await tokenWithScopes(owner, ['zz:none']);
    usedTokens.add(none);
    const allBut = new Map<string, string>();
    const wrong: string[] = [];
    const seenScopes = new Set<string>();
    for (const ep of ops) {
      const body = validBody(ep, owner.params);
      const r = await call(ep, none, owner.params, body);
      if (isAuthInfo(ep)) {
        // Exception: the caller's own credential needs no scope.
        if (r.status !== 200) wrong.push(`${ep.method} ${ep.path} [no scope, auth info] -> ${r.status}`);
        continue;
      }
      if (isAccountSwitch(ep)) {
        if (r.status !== 400) wrong.push(`${ep.method} ${ep.path} [API token] -> ${r.status}`);
        continue;
      }
      const err = envelope(r.text);
      const scope = err?.details.requiredScope;
      if (
        r.status !== 403 ||
        err?.code !== 'FORBIDDEN' ||
        typeof scope !== 'string' ||
        !([...ALL_SCOPES, ...SESSION_ONLY_SCOPES] as readonly string[]).includes(scope)
      ) {
        wrong.push(`${ep.method} ${ep.path} [no scope] -> ${r.status} ${r.text.slice(0, 160)}`);
        continue;
      }
      seenScopes.add(scope);
      // Every other scope is not enough: the check is for this one.
      let token = allBut.get(scope);
      if (!token) {
        // Without the scope and without the spec scopes that grant it too (scope-grants.ts).
        const granting = IMPLIED_BY[scope] ?? [];
        token = await tokenWithScopes(
          owner,
          ALL_SCOPES.filter((s) => s !== scope && !granting.includes(s)),
        );
        usedTokens.add(token);
        allBut.set(scope, token);
      }
      const r2 = await call(ep, token, owner.params, body);
      // Exception: the SDK bootstrap also opens to requests:write, an SDK's ingest token (docs/auth.md).
      if (ep.path === '/v1/buckets/{bucketSid}/sdk' && scope === 'buckets:read') {
        if (r2.status !== 200) wrong.push(`${ep.method} ${ep.path} [all but ${scope}] -> ${r2.status}`);
        continue;
      }
      if (r2.status !== 403 || envelope(r2.text)?.details.requiredScope !== scope)
        wrong.push(`${ep.method} ${ep.path} [all but ${scope}] -> ${r2.status} ${r2.text.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
    // The matrix exercised the resource families of the interface (docs/auth.md), not one scope for everything.
    for (const s of [
      'buckets:read',
      'buckets:write',
      'requests:read',
      'metrics:read',
      'exclusions:write',
      'redactions:read',
      'tokens:read',
      'workflows:write',
    ])
      expect(seenScopes.has(s), s).toBe(true);
  }, 300_000);

  it('answers 404 RESOURCE_NOT_FOUND to another account’s token, and deletes or changes nothing', async () => {
    const ops = endpoints(doc).filter((ep) => !isPublic(ep) && !isMcp(ep));
    const wrong: string[] = [];
    let checked = 0;
    for (const ep of ops) {
      const body = validBody(ep, owner.params);
      const r = await call(ep, other.token, owner.params, body);
      if (isAccountSwitch(ep)) {
        if (r.status !== 400) wrong.push(`${ep.method} ${ep.path} [API token] -> ${r.status}`);
        continue;
      }
      if (isAuthInfo(ep)) {
        // Exception: these answer about the caller's own account.
        if (r.status !== 200) wrong.push(`${ep.method} ${ep.path} [other account, auth info] -> ${r.status}`);
        else if (ep.path.endsWith('/verify') && JSON.parse(r.text).accountSid !== other.accountSid)
          wrong.push('verify names the wrong account');
        continue;
      }
      checked++;
      if (r.status !== 404 || envelope(r.text)?.code !== 'RESOURCE_NOT_FOUND' || STACK_TRACE.test(r.text))
        wrong.push(
          `${ep.method} ${ep.path} [owner's path, other's token] -> ${r.status} ${r.text.slice(0, 160)}`,
        );
      // The caller's own account in the path, the owner's resources after it: still nothing.
      const resourceParams = [...ep.path.matchAll(/\{([^}]+)\}/g)]
        .map((m) => m[1]!)
        .filter((n) => n !== 'accountSid');
      if (ep.path.includes('{accountSid}') && resourceParams.some((n) => n !== 'environmentSid')) {
        const mixed = { ...owner.params, accountSid: other.accountSid };
        const r2 = await call(ep, other.token, mixed, validBody(ep, mixed));
        // Members (users:*) are for administrators' sessions: an API token is refused by scope
        // first, in its own account, before any resource is looked up.
        const sessionOnly = (SESSION_ONLY_SCOPES as readonly string[]).includes(
          String(envelope(r2.text)?.details.requiredScope),
        );
        if (sessionOnly && r2.status === 403) continue;
        if (r2.status !== 404 || envelope(r2.text)?.code !== 'RESOURCE_NOT_FOUND')
          wrong.push(
            `${ep.method} ${ep.path} [own account, owner's resource] -> ${r2.status} ${r2.text.slice(0, 160)}`,
          );
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(40);
    // Everything of the owner is still there and unchanged.
    for (const ep of endpoints(doc)) {
      if (ep.method !== 'GET' || !ep.path.startsWith('/v1/accounts/') || !/Sid\}$/.test(ep.path)) continue;
      const r = await call(ep, owner.token, owner.params);
      expect([ep.path, r.status]).toEqual([ep.path, 200]);
    }
  }, 300_000);

  it('/mcp takes MCP tokens only; a revoked MCP token is refused', async () => {
    const mcp = endpoints(doc).find((ep) => isMcp(ep) && ep.method === 'POST');
    expect(mcp).toBeDefined();
    const rpc = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const post = (token: string) =>
      rawRequest(testEnv().apiUrl, {
        method: 'POST',
        url: '/mcp',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: rpc,
      });
    for (const t of [owner.token, owner.sessionToken, other.token]) {
      const r = await post(t);
      expect([r.status, envelope(r.text)?.code]).toEqual([401, 'INVALID_TOKEN']);
    }
    expect((await post(owner.mcpToken)).status).toBe(200);
    // Revoke (DELETE) the owner's MCP token: refused at once.
    const del = await rawRequest(testEnv().apiUrl, {
      method: 'DELETE',
      url: `/v1/accounts/${owner.accountSid}/mcpTokens/${owner.params.mcpTokenSid}`,
      headers: { authorization: `Bearer ${owner.token}` },
    });
    expect(del.status).toBe(200);
    const revoked = await post(owner.mcpToken);
    expect([revoked.status, envelope(revoked.text)?.code]).toEqual([401, 'INVALID_TOKEN']);
  });

  it('applies the same matrix to the ingest listener', async () => {
    const url = `/v1/buckets/${owner.bucketSid}/ingest`;
    const body = JSON.stringify({ records: [{ request: { method: 'GET', path: '/matrix' } }] });
    const noWrite = await tokenWithScopes(
      owner,
      ALL_SCOPES.filter((s) => s !== 'requests:write'),
    );
    usedTokens.add(noWrite);
    const cases: [string, string | undefined, number, string][] = [
      ['none', undefined, 401, 'INVALID_TOKEN'],
      ['garbage', tokens.garbage, 401, 'INVALID_TOKEN'],
      ['expired', tokens.expired, 401, 'INVALID_TOKEN'],
      ['inactive', tokens.inactive, 401, 'INVALID_TOKEN'],
      ['deleted', tokens.deleted, 401, 'INVALID_TOKEN'],
      ['signed out', tokens.signedOut, 401, 'INVALID_TOKEN'],
      ['no requests:write', noWrite, 403, 'FORBIDDEN'],
      ['mcp', other.mcpToken, 401, 'INVALID_TOKEN'],
      ['other account', other.token, 404, 'RESOURCE_NOT_FOUND'],
    ];
    for (const [label, token, status, code] of cases) {
      const r = await rawRequest(testEnv().ingestUrl, {
        method: 'POST',
        url,
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body,
      });
      expect([label, r.status, envelope(r.text)?.code]).toEqual([label, status, code]);
    }
  });
});

describe('secrets and internals', () => {
  it('pino redaction blanks every token-bearing field shape', () => {
    let out = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    const log = pino({ redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
    const secret = newTokenValue(TOKEN_PREFIX.live);
    log.info({ req: { headers: { authorization: `Bearer ${secret}`, cookie: secret } } }, 'request');
    log.info({ headers: { authorization: `Bearer ${secret}` } }, 'headers');
    log.info({ request: { headers: { Authorization: `Bearer ${secret}` } } }, 'outbound');
    log.info({ err: { config: { headers: { Authorization: `Bearer ${secret}` } } } }, 'error with request');
    log.info(
      { token: secret, apiToken: secret, sessionToken: secret, mcpToken: secret, password: secret },
      'fields',
    );
    log.info({ created: { token: secret }, result: { value: { token: secret } } }, 'nested');
    expect(out.split('\n').filter(Boolean)).toHaveLength(6);
    expect(out).not.toContain(secret);
    expect(out.match(/\[redacted\]/g)?.length).toBeGreaterThanOrEqual(12);
  });

  it('no token value used by these tests appears in the service log', async () => {
    // Make the service log something about tokens: a created API token (its sid is logged).
    const created = await rawRequest(testEnv().apiUrl, {
      method: 'POST',
      url: `/v1/accounts/${owner.accountSid}/apiTokens`,
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'log probe', scopes: ['buckets:read'] }),
    });
    expect(created.status).toBe(201);
    const { sid, token } = JSON.parse(created.text) as { sid: string; token: string };
    usedTokens.add(token);
    const logFile = testEnv().serviceLog;
    // The log is written by another process: wait until it shows this request, then read it all.
    let text = '';
    for (let i = 0; i < 100 && !text.includes(sid); i++) {
      text = fs.readFileSync(logFile, 'utf8');
      if (!text.includes(sid)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(text).toContain(sid);
    expect(usedTokens.size).toBeGreaterThanOrEqual(12);
    const leaked = [...usedTokens].filter((t) => t && text.includes(t));
    expect(leaked).toEqual([]);
    // And no value shaped like any token of any test of this run.
    expect(text.match(/\b(at_live_|at_test_|tls_|mcp_)[A-Za-z0-9]{40}\b/g) ?? []).toEqual([]);
  });

  it('outbound action URLs to private and metadata addresses are refused without an allow-list', async () => {
    const resolver = async (host: string) => {
      if (host === 'rebind.example.test') return [{ address: '127.0.0.1', family: 4 }];
      if (host === 'mixed.example.test')
        return [
          { address: '93.184.215.14', family: 4 },
          { address: '10.0.0.7', family: 4 },
        ];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    const guard = new OutboundGuard([], resolver);
    for (const url of [
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'https://192.168.1.1/',
      'http://[::1]:8080/',
      'http://[fd00::1]/',
      'http://rebind.example.test/hook',
      'http://mixed.example.test/hook',
      'http://127.0.0.1:5432/',
      'http://[::ffff:127.0.0.1]/',
      'http://0.0.0.0/',
      'http://2130706433/',
    ]) {
      await expect(guard.check(url), url).rejects.toBeInstanceOf(OutboundRefusedError);
    }
    // The system resolver too: `localhost` resolves to a loopback address.
    await expect(new OutboundGuard([]).check('http://localhost:9/')).rejects.toBeInstanceOf(
      OutboundRefusedError,
    );
    // An allow-list entry opens exactly that host.
    const allowed = await new OutboundGuard(['rebind.example.test'], resolver).check(
      'http://rebind.example.test/x',
    );
    expect(allowed.target.address).toBe('127.0.0.1');
  });
});
