import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import nodeHttp from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { api, http, newAccount, testEnv, testPool } from '../helpers/client.js';
import { ROOT } from '../helpers/service-process.js';

const run = promisify(execFile);

interface SignIn {
  sessionToken: string;
  csrfToken: string;
  accountSid: string;
  role: string;
  user: { sid: string; email: string };
}

async function accountWithPassword(password = 'correct horse battery') {
  const tag = randomBytes(6).toString('hex');
  const email = `signin-${tag}@example.test`;
  const acct = await createAccount(testPool(), {
    name: `Signin ${tag}`,
    email,
    bucketName: `b-${tag}`,
    plan: 'enterprise',
    rateLimit: 1_000_000,
    password,
  });
  return { ...acct, email, password, bucketSid: acct.bucketSid! };
}

/**
 * A JSON POST sent from another loopback address: the sign-in throttle also counts failures per
 * client IP, over the whole run against the shared service, so the failures a test provokes on
 * purpose come from an address of their own.
 */
function postFrom<T>(localAddress: string, url: string, body: unknown): Promise<{ status: number; body: T }> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = nodeHttp.request(
      url,
      {
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') as T }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const signin = (body: unknown, headers: Record<string, string> = {}) =>
  http<SignIn & { error: { code: string; message: string; details: Record<string, unknown> } }>(
    'POST',
    `${testEnv().apiUrl}/v1/authentication/signin`,
    { body, headers },
  );

/** The two cookies of a sign-in answer, as a Cookie header, plus the CSRF token. */
function cookiesOf(res: { headers: Headers }): { cookie: string; csrf: string; raw: string[] } {
  const raw = res.headers.getSetCookie();
  const pairs = raw.map((c) => c.split(';')[0]!);
  const csrf = pairs.find((p) => p.startsWith('tapline_csrf='))!.split('=')[1]!;
  return { cookie: pairs.join('; '), csrf: decodeURIComponent(csrf), raw };
}

describe('sign-in and dashboard sessions', () => {
  it('signs in with the right password and sets an HttpOnly, SameSite=Strict session cookie', async () => {
    const acct = await accountWithPassword();
    const res = await signin({ email: acct.email.toUpperCase(), password: acct.password });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      accountSid: acct.accountSid,
      role: 'administrator',
      user: { email: acct.email },
    });
    expect(res.body.sessionToken).toMatch(/^tls_/);
    // An answer carrying a credential is never kept by a browser or proxy; nor is any /v1 answer.
    expect(res.headers.get('cache-control')).toBe('no-store');
    const tok = await api(acct.apiToken).post(`/v1/accounts/${acct.accountSid}/apiTokens`, {
      name: 'cached?',
      scopes: ['buckets:read'],
    });
    expect(tok.status).toBe(201);
    expect(tok.headers.get('cache-control')).toBe('no-store');
    const { raw } = cookiesOf(res);
    const session = raw.find((c) => c.startsWith('tapline_session='))!;
    expect(session).toMatch(/HttpOnly/i);
    expect(session).toMatch(/SameSite=Strict/i);
    expect(session).not.toMatch(/Secure/i);
    const csrf = raw.find((c) => c.startsWith('tapline_csrf='))!;
    expect(csrf).not.toMatch(/HttpOnly/i);
    // The token in the body works as a Bearer token too (API clients).
    const me = await api(res.body.sessionToken).get<{ accountSid: string }>('/v1/authentication/verify');
    expect(me.body.accountSid).toBe(acct.accountSid);
    // Behind a proxy that terminated HTTPS, the cookies are Secure.
    const viaTls = await signin(
      { email: acct.email, password: acct.password },
      { 'x-forwarded-proto': 'https' },
    );
    expect(cookiesOf(viaTls).raw.every((c) => /;\s*Secure/i.test(c))).toBe(true);
  });

  it('answers a wrong password and an unknown email the same way, then slows repeated failures', async () => {
    const acct = await accountWithPassword();
    const ip = {};
    const wrong = await signin({ email: acct.email, password: 'not the password' }, ip);
    const unknown = await signin({ email: `nobody-${acct.email}`, password: 'not the password' }, ip);
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.text).toBe(unknown.text);
    expect(wrong.body.error).toEqual({
      code: 'INVALID_CREDENTIALS',
      message: 'Email or password is incorrect',
      details: {},
    });
    // Both paths run one scrypt: neither answers in a fraction of the other's time.
    const time = async (email: string) => {
      const t = performance.now();
      await signin({ email, password: 'still wrong' });
      return performance.now() - t;
    };
    const other = await accountWithPassword();
    const [known, missing] = [await time(other.email), await time(`nobody-${other.email}`)];
    expect(Math.min(known, missing) / Math.max(known, missing)).toBeGreaterThan(0.3);
    let last = wrong;
    for (let i = 0; i < 6 && last.status !== 429; i++)
      last = await signin({ email: acct.email, password: `wrong ${i}` }, ip);
    expect(last.status).toBe(429);
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    // Even the right password waits until the delay has passed.
    expect((await signin({ email: acct.email, password: acct.password }, ip)).status).toBe(429);
  });

  it('accepts the cookie for reads, and for writes only with the CSRF token', async () => {
    const acct = await accountWithPassword();
    const { cookie, csrf } = cookiesOf(await signin({ email: acct.email, password: acct.password }));
    const base = `${testEnv().apiUrl}/v1/accounts/${acct.accountSid}`;
    const read = await http('GET', `${base}/buckets`, { headers: { cookie } });
    expect(read.status).toBe(200);
    const noCsrf = await http<{ error: { code: string; details: { reason: string } } }>(
      'POST',
      `${base}/buckets`,
      {
        headers: { cookie },
        body: { name: 'x' },
      },
    );
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.error.details.reason).toBe('csrf');
    const badCsrf = await http('POST', `${base}/buckets`, {
      headers: { cookie, 'x-csrf-token': 'nope' },
      body: { name: 'x' },
    });
    expect(badCsrf.status).toBe(403);
    const ok = await http('POST', `${base}/buckets`, {
      headers: { cookie, 'x-csrf-token': csrf },
      body: { name: 'x' },
    });
    expect(ok.status).toBe(201);
    const session = await http<{ kind: string; role: string; scopes: string[]; user: { email: string } }>(
      'GET',
      `${testEnv().apiUrl}/v1/authentication/session`,
      { headers: { cookie } },
    );
    expect(session.body).toMatchObject({
      kind: 'session',
      role: 'administrator',
      user: { email: acct.email },
    });
    expect(session.body.scopes).toContain('users:write');
  });

  it('signs out by cookie only with the CSRF token; with the session token in Authorization always', async () => {
    const acct = await accountWithPassword();
    const s = await signin({ email: acct.email, password: acct.password });
    const { cookie, csrf } = cookiesOf(s);
    const signout = `${testEnv().apiUrl}/v1/authentication/signout`;
    // What `<img src=/v1/authentication/signout>` on another page of the same host sends.
    for (const headers of [{ cookie }, { cookie, 'x-csrf-token': 'not-the-token' }] as Record<
      string,
      string
    >[]) {
      const forged = await http<{ error: { code: string; details: { reason: string } } }>('GET', signout, {
        headers,
      });
      expect(forged.status).toBe(403);
      expect(forged.body.error).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'csrf' } });
    }
    expect(
      (await http('GET', `${testEnv().apiUrl}/v1/authentication/verify`, { headers: { cookie } })).status,
    ).toBe(200);
    const out = await http<{ success: boolean }>('GET', signout, {
      headers: { cookie, 'x-csrf-token': csrf },
    });
    expect(out.status, out.text).toBe(200);
    expect(out.body.success).toBe(true);
    expect(
      (await http('GET', `${testEnv().apiUrl}/v1/authentication/verify`, { headers: { cookie } })).status,
    ).toBe(401);
    // The spec's GET with the session token in Authorization needs no CSRF token.
    const s2 = await signin({ email: acct.email, password: acct.password });
    const bearer = await http<{ success: boolean }>('GET', signout, { token: s2.body.sessionToken });
    expect(bearer.status, bearer.text).toBe(200);
    expect(bearer.body.success).toBe(true);
    expect((await api(s2.body.sessionToken).get('/v1/authentication/verify')).status).toBe(401);
  });

  it('refuses a signed-out session, an expired session and another account', async () => {
    const acct = await accountWithPassword();
    const other = await newAccount();
    const s = await signin({ email: acct.email, password: acct.password });
    const { cookie, csrf } = cookiesOf(s);
    expect((await api(s.body.sessionToken).get(`/v1/accounts/${other.accountSid}/buckets`)).status).toBe(404);
    const out = await http<{ success: boolean }>('GET', `${testEnv().apiUrl}/v1/authentication/signout`, {
      headers: { cookie, 'x-csrf-token': csrf },
    });
    expect(out.body.success).toBe(true);
    expect(out.headers.getSetCookie().some((c) => /tapline_session=;/.test(c) && /Max-Age=0/i.test(c))).toBe(
      true,
    );
    expect(
      (await http('GET', `${testEnv().apiUrl}/v1/authentication/verify`, { headers: { cookie } })).status,
    ).toBe(401);
    const s2 = await signin({ email: acct.email, password: acct.password });
    await testPool().query(
      "UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = sha256($1::bytea)",
      [Buffer.from(s2.body.sessionToken)],
    );
    expect((await api(s2.body.sessionToken).get('/v1/authentication/verify')).status).toBe(401);
  });

  it('first run is refused once an account exists', async () => {
    const res = await http<{ error: { code: string } }>('POST', `${testEnv().apiUrl}/v1/setup`, {
      body: { name: 'Late Comer', email: 'late@example.test', password: 'long enough pw' },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    const status = await http<{ needsSetup: boolean }>('GET', `${testEnv().apiUrl}/v1/setup`);
    expect(status.body.needsSetup).toBe(false);
  });

  it('invites a member who signs in with the user role, limited to it', async () => {
    const acct = await accountWithPassword();
    const admin = await signin({ email: acct.email, password: acct.password });
    const a = api(admin.body.sessionToken);
    const users = `/v1/accounts/${acct.accountSid}/users`;
    const email = `member-${randomBytes(4).toString('hex')}@example.test`;
    const inv = await a.post<{
      inviteUrl: string;
      inviteToken: string;
      user: { sid: string; status: string };
    }>(users, {
      email,
      role: 'user',
    });
    expect(inv.status).toBe(201);
    expect(inv.body.user.status).toBe('invited');
    expect(inv.body.inviteUrl).toContain(`/invite/${inv.body.inviteToken}`);
    expect((await a.post(users, { email: acct.email, role: 'user' })).status).toBe(409);
    // An API token cannot manage members (the users scopes belong to administrators' sessions).
    expect((await api(acct.apiToken).get(users)).status).toBe(403);
    const info = await http<{ email: string; role: string }>(
      'GET',
      `${testEnv().apiUrl}/v1/invites/${inv.body.inviteToken}`,
    );
    expect(info.body).toMatchObject({ email, role: 'user' });
    const short = await http<{ error: { code: string } }>(
      'POST',
      `${testEnv().apiUrl}/v1/invites/${inv.body.inviteToken}/accept`,
      {
        body: { password: 'short' },
      },
    );
    expect(short.status).toBe(400);
    const accepted = await http<SignIn>(
      'POST',
      `${testEnv().apiUrl}/v1/invites/${inv.body.inviteToken}/accept`,
      {
        body: { password: 'member password 1', firstName: 'Mia' },
      },
    );
    expect(accepted.status).toBe(200);
    expect(accepted.body.role).toBe('user');
    // The invitation's answer signs the person in: its session works at once, as cookie and token.
    expect((await api(accepted.body.sessionToken).get('/v1/authentication/session')).status).toBe(200);
    const { cookie } = cookiesOf(accepted);
    expect(
      (await http('GET', `${testEnv().apiUrl}/v1/authentication/session`, { headers: { cookie } })).status,
    ).toBe(200);
    expect(
      (
        await http('POST', `${testEnv().apiUrl}/v1/invites/${inv.body.inviteToken}/accept`, {
          body: { password: 'member password 2' },
        })
      ).status,
    ).toBe(404);
    const member = await signin({ email, password: 'member password 1' });
    expect(member.status).toBe(200);
    const m = api(member.body.sessionToken);
    const del = await m.delete<{ error: { code: string } }>(
      `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}`,
    );
    expect(del.status).toBe(403);
    const ev = await m.post(`/v1/accounts/${acct.accountSid}/events`, { type: 'deployment', name: 'v1' });
    expect(ev.status).toBe(201);
    expect((await m.get(users)).status).toBe(403);
    // Promote, demote, remove; the last administrator stays.
    const list = await a.get<{ users: { sid: string; email: string; role: string; status: string }[] }>(
      users,
    );
    const memberSid = list.body.users.find((u) => u.email === email)!.sid;
    expect((await a.put(`${users}/${memberSid}`, { role: 'administrator' })).status).toBe(200);
    expect((await m.get(users)).status).toBe(200);
    expect((await a.put(`${users}/${acct.userSid}`, { role: 'user' })).status).toBe(200);
    const self = await m.delete<{ error: { code: string } }>(`${users}/${memberSid}`);
    expect(self.status).toBe(409);
    expect((await m.put(`${users}/${acct.userSid}`, { role: 'administrator' })).status).toBe(200);
    expect((await a.delete(`${users}/${memberSid}`)).status).toBe(200);
    expect((await m.get('/v1/authentication/verify')).status).toBe(401);
  });

  it("an invitation to an existing user's email takes that user's own password and never changes it", async () => {
    // Another account's administrator invites a person who already has a user (the audit's takeover).
    const victim = await accountWithPassword('victim password 1');
    const other = await accountWithPassword();
    const inviter = api((await signin({ email: other.email, password: other.password })).body.sessionToken);
    const inv = await inviter.post<{ inviteToken: string }>(`/v1/accounts/${other.accountSid}/users`, {
      email: victim.email.toUpperCase(),
      role: 'administrator',
    });
    expect(inv.status).toBe(201);
    const url = `${testEnv().apiUrl}/v1/invites/${inv.body.inviteToken}`;
    // The invitation does not say whether the email has a user before the person proves who they
    // are (an administrator of any account could otherwise probe who uses Tapline).
    const info = await http<Record<string, unknown>>('GET', url);
    expect(info.status).toBe(200);
    expect(Object.keys(info.body).sort()).toEqual(['accountName', 'email', 'expiresAt', 'role']);
    const taken = await postFrom<{ error: { code: string; message: string } }>('127.0.0.7', `${url}/accept`, {
      password: 'TakenOver123!',
      firstName: 'Mallory',
    });
    expect(taken.status).toBe(401);
    expect(taken.body.error.code).toBe('INVALID_CREDENTIALS');
    expect(taken.body.error.message).toContain('already has a Tapline password');
    // Nothing changed: the victim's password works, the attacker's does not, the invitation is open.
    const wrong = await postFrom<{ error: { code: string } }>(
      '127.0.0.7',
      `${testEnv().apiUrl}/v1/authentication/signin`,
      {
        email: victim.email,
        password: 'TakenOver123!',
      },
    );
    expect(wrong.status).toBe(401);
    const still = await signin({ email: victim.email, password: 'victim password 1' });
    expect(still.status).toBe(200);
    expect(still.body.accountSid).toBe(victim.accountSid);
    expect((await http('GET', url)).status).toBe(200);
    // With their own password the person joins the second account, keeping password and name.
    const joined = await http<SignIn & { user: { firstName: string } }>('POST', `${url}/accept`, {
      body: { password: 'victim password 1', firstName: 'Mallory' },
    });
    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({ accountSid: other.accountSid, role: 'administrator' });
    expect(joined.body.user.sid).toBe(victim.userSid);
    expect(joined.body.user.firstName).not.toBe('Mallory');
    expect((await signin({ email: victim.email, password: 'victim password 1' })).status).toBe(200);
    expect((await http('POST', `${url}/accept`, { body: { password: 'victim password 1' } })).status).toBe(
      404,
    );
    // A new person's invitation says so, and sets the password they choose.
    const fresh = await inviter.post<{ inviteToken: string }>(`/v1/accounts/${other.accountSid}/users`, {
      email: `fresh-${randomBytes(4).toString('hex')}@example.test`,
      role: 'user',
    });
    const freshInfo = await http<Record<string, unknown>>(
      'GET',
      `${testEnv().apiUrl}/v1/invites/${fresh.body.inviteToken}`,
    );
    // A new email's invitation reads exactly like an existing user's: same fields.
    expect(Object.keys(freshInfo.body).sort()).toEqual(Object.keys(info.body).sort());
  });

  it('admin set-password sets a new password from an argument or standard input', async () => {
    const acct = await accountWithPassword();
    const env = { ...process.env, DATABASE_URL: testEnv().databaseUrl, LOG_LEVEL: 'warn' };
    const tsx = path.join(ROOT, 'node_modules', '.bin', 'tsx');
    const arg = await run(
      tsx,
      ['services/admin.ts', 'set-password', '--email', acct.email, '--password', 'from argument 1'],
      {
        cwd: ROOT,
        env,
      },
    );
    expect(arg.stdout).not.toContain('from argument 1');
    expect((await signin({ email: acct.email, password: 'from argument 1' })).status).toBe(200);
    const child = execFile(tsx, ['services/admin.ts', 'set-password', '--email', acct.email], {
      cwd: ROOT,
      env,
    });
    child.stdin!.end('from standard input\n');
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(0);
    expect((await signin({ email: acct.email, password: 'from standard input' })).status).toBe(200);
    expect((await signin({ email: acct.email, password: 'from argument 1' })).status).toBe(401);
  });
});
