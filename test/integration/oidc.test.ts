import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { api, http, testEnv, testPool } from '../helpers/client.js';
import { CookieClient, startTestProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { freePort, startService, type ServiceProcess } from '../helpers/service-process.js';

/**
 * OpenID Connect sign-in (docs/auth.md "Single sign-on") against a real provider, `oidc-provider`
 * (the certified reference implementation) on a loopback port, walked through its own login pages
 * with a cookie-keeping fetch. A second service (ingest and API roles) shares the run's Kafka and
 * Postgres, configured for the provider with OIDC_ONLY; the run's own service has no OIDC
 * settings and shows that nothing changes then.
 */
let provider: TestProvider;
let svc: ServiceProcess;
let accountSid: string;
/** the account owner's session: an administrator on the Members page */
let ownerSession: string;
const tag = randomBytes(4).toString('hex');

beforeAll(async () => {
  const env = testEnv();
  const dataDir = path.join(env.dataDir, `oidc-${process.pid}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  provider = await startTestProvider([`http://127.0.0.1:${port}/v1/authentication/oidc/callback`]);
  const acct = await createAccount(testPool(), {
    name: `SSO ${tag}`,
    email: `owner-${tag}@example.test`,
    plan: 'enterprise',
    rateLimit: 1_000_000,
  });
  accountSid = acct.accountSid;
  ownerSession = acct.sessionToken;
  svc = await startService(
    {
      ROLES: 'ingest,api',
      INGEST_PROCESS: 'inline',
      PORT: String(port),
      INGEST_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      KAFKA_BROKERS: env.kafkaBrokers.join(','),
      DATABASE_URL: env.databaseUrl,
      OIDC_ISSUER_URL: provider.issuer,
      OIDC_CLIENT_ID: provider.clientId,
      OIDC_CLIENT_SECRET: provider.clientSecret,
      OIDC_PROVIDER_NAME: 'Test IdP',
      OIDC_SCOPES: 'openid email profile groups',
      OIDC_ALLOWED_DOMAINS: `${tag}.example.test,corp-${tag}.example`,
      OIDC_ROLE_CLAIM: 'groups',
      OIDC_ROLE_MAP: 'tapline-admins=admin,tapline-devs=user',
      OIDC_DEFAULT_ROLE: 'user',
      OIDC_ACCOUNT: accountSid,
      OIDC_ONLY: 'true',
    },
    path.join(dataDir, 'service.log'),
  );
}, 180_000);

afterAll(async () => {
  await svc?.stop();
  await provider?.close();
});

/** A person at the provider with a unique login and email. */
function person(claims: { groups?: string[]; email_verified?: boolean; domain?: string } = {}): {
  login: string;
  email: string;
} {
  const login = `p-${randomBytes(5).toString('hex')}`;
  const email = `${login}@${claims.domain ?? `${tag}.example.test`}`;
  provider.people.set(login, {
    email,
    email_verified: claims.email_verified ?? true,
    given_name: 'Ada',
    family_name: 'Lovelace',
    groups: claims.groups ?? ['tapline-devs'],
  });
  return { login, email };
}

/**
 * Starts a sign-in at the service, walks the provider's login page as `login` and answers the
 * callback URL the provider sends the browser back to (not opened yet). `tamper` may change the
 * authorization URL before the browser goes there; `started` is the answer of a start already made.
 */
async function throughProvider(
  c: CookieClient,
  login: string,
  tamper?: (authUrl: URL) => void,
  started?: Response,
): Promise<string> {
  const start = started ?? (await c.fetch(`${svc.apiUrl}/v1/authentication/oidc/start`));
  expect(start.status).toBe(302);
  const authUrl = new URL(start.headers.get('location')!);
  expect(authUrl.origin).toBe(provider.issuer);
  expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authUrl.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(authUrl.searchParams.get('state')).toBeTruthy();
  expect(authUrl.searchParams.get('nonce')).toBeTruthy();
  tamper?.(authUrl);
  const atProvider = (u: URL) => u.origin === provider.issuer;
  const page = await c.follow(authUrl.href, atProvider);
  expect(page.status).toBe(200);
  const action = /<form[^>]*action="([^"]+)"/.exec(await page.text())?.[1];
  expect(action).toContain('/interaction/');
  const submitted = await c.fetch(new URL(action!, provider.issuer).href, {
    form: { prompt: 'login', login, password: 'any password' },
  });
  const back = await c.follow(new URL(submitted.headers.get('location')!, provider.issuer).href, atProvider);
  const callback = back.headers.get('location') ?? '';
  expect(callback.startsWith(`${svc.apiUrl}/v1/authentication/oidc/callback?`)).toBe(true);
  return callback;
}

interface SignIn {
  sessionToken: string;
  csrfToken: string;
  accountSid: string;
  role: string;
  user: { sid: string; email: string; firstName: string; lastName: string };
}
type Envelope = {
  success: false;
  error: { code: string; message: string; details: Record<string, unknown> };
};

async function signIn(login: string) {
  const c = new CookieClient();
  const res = await c.fetch(await throughProvider(c, login));
  const body = (await res.json()) as SignIn & Envelope;
  return { c, res, body };
}

async function membership(email: string) {
  const r = await testPool().query<{ role: string; password_hash: string | null }>(
    `SELECT m.role, u.password_hash FROM users u JOIN memberships m ON m.user_sid = u.sid
     WHERE lower(u.email) = lower($1) AND m.account_sid = $2`,
    [email, accountSid],
  );
  return r.rows[0];
}

describe('OpenID Connect sign-in', () => {
  it('says which methods are on; unconfigured, nothing changes', async () => {
    const on = await http<{
      password: boolean;
      oidc: { name: string; startUrl: string; refusals: Record<string, string> };
    }>('GET', `${svc.apiUrl}/v1/authentication/methods`);
    expect(on.status).toBe(200);
    expect(on.body.password).toBe(false);
    expect(on.body.oidc.name).toBe('Test IdP');
    expect(on.body.oidc.startUrl).toBe('/v1/authentication/oidc/start');
    expect(on.body.oidc.refusals.domain).toBe('Sign-in with Test IdP is not allowed for your email domain.');

    const off = await api().get<{ password: boolean; oidc: unknown }>('/v1/authentication/methods');
    expect(off.body).toEqual({ password: true, oidc: null });
    expect((await api().get('/v1/authentication/oidc/start')).status).toBe(404);
  });

  it('creates the user on first sign-in with the mapped role, with the password sign-in session and CSRF rules', async () => {
    const p = person({ groups: ['other', 'tapline-admins'] });
    const { c, res, body } = await signIn(p.login);
    expect(res.status).toBe(200);
    expect(body).toMatchObject({
      accountSid,
      role: 'administrator',
      user: { email: p.email, firstName: 'Ada', lastName: 'Lovelace' },
    });
    expect(await membership(p.email)).toEqual({ role: 'administrator', password_hash: null });

    // The same cookies as password sign-in: HttpOnly Strict session, readable CSRF cookie.
    const set = res.headers.getSetCookie();
    const session = set.find((s) => s.startsWith('tapline_session='))!;
    expect(session).toMatch(/HttpOnly/i);
    expect(session).toMatch(/SameSite=Strict/i);
    expect(set.find((s) => s.startsWith('tapline_csrf='))).not.toMatch(/HttpOnly/i);
    // The attempt's cookie is spent.
    expect(set.some((s) => /^tapline_oidc=;/.test(s) && /Max-Age=0/i.test(s))).toBe(true);

    const cookie = `tapline_session=${c.cookie(svc.apiUrl, 'tapline_session')}`;
    const who = await http<{ kind: string; role: string; accountSid: string }>(
      'GET',
      `${svc.apiUrl}/v1/authentication/session`,
      { headers: { cookie } },
    );
    expect(who.body).toMatchObject({ kind: 'session', role: 'administrator', accountSid });
    // A write with the cookie alone is refused without the CSRF token, accepted with it.
    const rename = { name: `SSO ${tag}` };
    const noCsrf = await http<Envelope>('PUT', `${svc.apiUrl}/v1/accounts/${accountSid}`, {
      headers: { cookie },
      body: rename,
    });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.error.details.reason).toBe('csrf');
    const withCsrf = await http('PUT', `${svc.apiUrl}/v1/accounts/${accountSid}`, {
      headers: { cookie, 'x-csrf-token': body.csrfToken },
      body: rename,
    });
    expect(withCsrf.status).toBe(200);

    // Sign-out ends the session as for password sign-in.
    const out = await http('GET', `${svc.apiUrl}/v1/authentication/signout`, {
      headers: { cookie, 'x-csrf-token': body.csrfToken },
    });
    expect(out.status).toBe(200);
    const after = await http<Envelope>('GET', `${svc.apiUrl}/v1/authentication/session`, {
      headers: { cookie },
    });
    expect(after.status).toBe(401);
  });

  it('sets the role from the claims again at every sign-in', async () => {
    const p = person({ groups: ['tapline-devs'] });
    expect((await signIn(p.login)).body.role).toBe('user');
    expect((await membership(p.email))?.role).toBe('user');
    provider.people.get(p.login)!.groups = ['tapline-admins'];
    expect((await signIn(p.login)).body.role).toBe('administrator');
    expect((await membership(p.email))?.role).toBe('administrator');
    provider.people.get(p.login)!.groups = ['tapline-devs'];
    expect((await signIn(p.login)).body.role).toBe('user');
    expect((await membership(p.email))?.role).toBe('user');
  });

  it('gives a new member whose claim maps to nothing the default role, and never demotes with it', async () => {
    const p = person({ groups: ['marketing'] });
    const first = await signIn(p.login);
    expect(first.res.status).toBe(200);
    expect(first.body.role).toBe('user');
    // An administrator promotes them on the Members page; the default role does not undo it.
    const promoted = await http(
      'PUT',
      `${svc.apiUrl}/v1/accounts/${accountSid}/users/${first.body.user.sid}`,
      {
        token: ownerSession,
        body: { role: 'administrator' },
      },
    );
    expect(promoted.status).toBe(200);
    expect((await signIn(p.login)).body.role).toBe('administrator');
    expect((await membership(p.email))?.role).toBe('administrator');
    // A mapped group still decides.
    provider.people.get(p.login)!.groups = ['tapline-devs'];
    expect((await signIn(p.login)).body.role).toBe('user');
  });

  it('refuses a disallowed email domain and an unverified email, creating no user', async () => {
    const other = person({ domain: 'elsewhere.example', groups: ['tapline-admins'] });
    const refused = await signIn(other.login);
    expect(refused.res.status).toBe(403);
    expect(refused.body).toEqual({
      success: false,
      error: {
        code: 'FORBIDDEN',
        message: 'Sign-in with Test IdP is not allowed for your email domain.',
        details: { reason: 'domain' },
      },
    });
    const unverified = person({ email_verified: false, groups: ['tapline-admins'] });
    const r2 = await signIn(unverified.login);
    expect(r2.res.status).toBe(403);
    expect(r2.body.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'Your email address is not verified at Test IdP.',
      details: { reason: 'unverified' },
    });
    const users = await testPool().query('SELECT 1 FROM users WHERE email = ANY($1)', [
      [other.email, unverified.email],
    ]);
    expect(users.rowCount).toBe(0);
    // The second domain of the list is allowed too.
    const corp = person({ domain: `corp-${tag}.example` });
    expect((await signIn(corp.login)).res.status).toBe(200);
  });

  it('refuses a tampered state, and sends a browser back to the sign-in page with the reason', async () => {
    const p = person();
    const c = new CookieClient();
    const callback = new URL(await throughProvider(c, p.login));
    callback.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    const res = await c.fetch(callback.href);
    expect(res.status).toBe(401);
    const body = (await res.json()) as Envelope;
    expect(body.error).toMatchObject({ code: 'INVALID_CREDENTIALS', details: { reason: 'state' } });
    expect(body.error.message).toMatch(/state did not match/);
    expect(await membership(p.email)).toBeUndefined();

    const browser = new CookieClient({ accept: 'text/html,application/xhtml+xml' });
    const cb = new URL(await throughProvider(browser, p.login));
    cb.searchParams.set('state', 'forged');
    const page = await browser.fetch(cb.href);
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/signin?sso_error=state');
    expect(await membership(p.email)).toBeUndefined();
  });

  it('gives a browser a page that opens the requested dashboard page itself, signed in', async () => {
    const p = person();
    const browser = new CookieClient({ accept: 'text/html,application/xhtml+xml' });
    const start = await browser.fetch(
      `${svc.apiUrl}/v1/authentication/oidc/start?next=${encodeURIComponent('/alerts?x="<b>')}`,
    );
    const callback = await throughProvider(browser, p.login, undefined, start);
    const page = await browser.fetch(callback);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    // `next` comes back escaped, in a same-site navigation of the page's own.
    expect(html).toContain('<meta http-equiv="refresh" content="0;url=/alerts?x=&#34;&#60;b&#62;">');
    expect(browser.cookie(svc.apiUrl, 'tapline_session')).toMatch(/^tls_/);
    // An address of another site is never followed.
    const away = new CookieClient({ accept: 'text/html' });
    const s2 = await away.fetch(
      `${svc.apiUrl}/v1/authentication/oidc/start?next=${encodeURIComponent('//evil.example/x')}`,
    );
    const html2 = await (await away.fetch(await throughProvider(away, p.login, undefined, s2))).text();
    expect(html2).toContain('content="0;url=/overview"');
  });

  it('refuses a callback without the attempt cookie (another browser, or replayed)', async () => {
    const p = person();
    const c = new CookieClient();
    const callback = await throughProvider(c, p.login);
    const stranger = await new CookieClient().fetch(callback);
    expect(stranger.status).toBe(401);
    expect(((await stranger.json()) as Envelope).error.details.reason).toBe('flow');
    // The rightful browser finishes it once; the same callback again finds its cookie spent.
    expect((await c.fetch(callback)).status).toBe(200);
    const again = await c.fetch(callback);
    expect(again.status).toBe(401);
    expect(((await again.json()) as Envelope).error.details.reason).toBe('flow');
  });

  it('refuses an ID token whose nonce is not the attempt’s (replayed), or that has none', async () => {
    const p = person();
    for (const tamper of [
      (u: URL) => u.searchParams.set('nonce', 'replayed-from-another-attempt'),
      (u: URL) => u.searchParams.delete('nonce'),
    ]) {
      const c = new CookieClient();
      const res = await c.fetch(await throughProvider(c, p.login, tamper));
      expect(res.status).toBe(401);
      const body = (await res.json()) as Envelope;
      expect(body.error).toMatchObject({ code: 'INVALID_CREDENTIALS', details: { reason: 'nonce' } });
      expect(body.error.message).toMatch(/nonce did not match/);
    }
    expect(await membership(p.email)).toBeUndefined();
  });

  it("passes on the provider's refusal (the person cancels at the provider)", async () => {
    const c = new CookieClient();
    const start = await c.fetch(`${svc.apiUrl}/v1/authentication/oidc/start`);
    const page = await c.follow(start.headers.get('location')!, (u) => u.origin === provider.issuer);
    const uid = /\/interaction\/([^/"]+)/.exec(await page.text())?.[1];
    expect(uid).toBeTruthy();
    const aborted = await c.follow(
      `${provider.issuer}/interaction/${uid}/abort`,
      (u) => u.origin === provider.issuer,
    );
    const callback = aborted.headers.get('location')!;
    expect(new URL(callback).searchParams.get('error')).toBe('access_denied');
    const res = await c.fetch(callback);
    expect(res.status).toBe(401);
    expect(((await res.json()) as Envelope).error).toMatchObject({
      code: 'INVALID_CREDENTIALS',
      message: 'Test IdP refused the sign-in.',
      details: { reason: 'provider', providerError: 'access_denied' },
    });
  });

  it('OIDC_ONLY refuses password sign-in and invitations with a clear error', async () => {
    const res = await http<Envelope>('POST', `${svc.apiUrl}/v1/authentication/signin`, {
      body: { email: `owner-${tag}@example.test`, password: 'whatever password' },
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      success: false,
      error: {
        code: 'FORBIDDEN',
        message: 'Password sign-in is turned off: sign in with Test IdP',
        details: { reason: 'sso_only' },
      },
    });
    const invite = await http<Envelope>('POST', `${svc.apiUrl}/v1/invites/${'x'.repeat(40)}/accept`, {
      body: { password: 'a new password' },
    });
    expect(invite.status).toBe(403);
    expect(invite.body.error.details.reason).toBe('sso_only');
  });
});
