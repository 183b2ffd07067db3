import * as oidc from 'openid-client';
import type pg from 'pg';
import type { MemberRole, OidcConfig } from '../../shared/config.js';
import { AppError } from '../../shared/errors.js';
import { newSid } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import { SecretBox } from '../../shared/secret-box.js';

/** The cookie that carries one sign-in attempt's state, nonce and PKCE verifier, sealed. */
export const OIDC_FLOW_COOKIE = 'tapline_oidc';
/** The cookie is sent only to the two OIDC routes. */
export const OIDC_FLOW_PATH = '/v1/authentication/oidc/';
/** An attempt left at the provider for longer than this is refused and started again. */
export const OIDC_FLOW_TTL_SECONDS = 600;

/**
 * Why a single sign-on attempt was refused: the `details.reason` of the error, the `sso_error`
 * the sign-in page is sent back with, and the message shown there
 * (`GET /v1/authentication/methods` lists them). `{provider}` is the configured provider name.
 */
export const OIDC_REFUSALS = {
  flow: 'This sign-in attempt expired or was started in another browser. Start again.',
  state: 'This sign-in attempt could not be verified (its state did not match). Start again.',
  nonce:
    'The answer from {provider} did not belong to this sign-in attempt (its nonce did not match). Start again.',
  provider: '{provider} refused the sign-in.',
  response: 'The answer from {provider} could not be verified. Start again, or ask an administrator.',
  email: '{provider} did not share an email address for your account.',
  unverified: 'Your email address is not verified at {provider}.',
  domain: 'Sign-in with {provider} is not allowed for your email domain.',
  role: 'Your {provider} account has no role in Tapline. Ask an administrator to add you to a Tapline group.',
  account: 'Single sign-on has no Tapline account to join. Ask an administrator.',
  unavailable: '{provider} cannot be reached right now. Try again in a moment.',
} as const;
export type OidcRefusal = keyof typeof OIDC_REFUSALS;

/** The HTTP status and code of each refusal (the error envelope of the JSON answer). */
const STATUS: Record<OidcRefusal, [number, 'INVALID_CREDENTIALS' | 'FORBIDDEN' | 'SERVICE_UNAVAILABLE']> = {
  flow: [401, 'INVALID_CREDENTIALS'],
  state: [401, 'INVALID_CREDENTIALS'],
  nonce: [401, 'INVALID_CREDENTIALS'],
  provider: [401, 'INVALID_CREDENTIALS'],
  response: [401, 'INVALID_CREDENTIALS'],
  email: [403, 'FORBIDDEN'],
  unverified: [403, 'FORBIDDEN'],
  domain: [403, 'FORBIDDEN'],
  role: [403, 'FORBIDDEN'],
  account: [403, 'FORBIDDEN'],
  unavailable: [503, 'SERVICE_UNAVAILABLE'],
};

export function refusalMessages(providerName: string): Record<OidcRefusal, string> {
  return Object.fromEntries(
    Object.entries(OIDC_REFUSALS).map(([k, m]) => [k, m.replaceAll('{provider}', providerName)]),
  ) as Record<OidcRefusal, string>;
}

export function refusal(cfg: OidcConfig, reason: OidcRefusal, extra: Record<string, unknown> = {}): AppError {
  const [status, code] = STATUS[reason];
  return new AppError(status, code, refusalMessages(cfg.providerName)[reason], { reason, ...extra }, true);
}

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  /** a same-site path to open after sign-in */
  next: string;
  /** epoch ms the attempt started */
  at: number;
}

export interface OidcPerson {
  email: string;
  firstName: string;
  lastName: string;
  /** the role the claims map to; null = none maps (the default role applies to a new member) */
  role: MemberRole | null;
}

const ROLE_RANK: Record<MemberRole, number> = { user: 1, administrator: 2 };

/**
 * The value of the role claim: the claim of that exact name, else, for a dotted name, the path
 * through nested objects (`realm_access.roles` of Keycloak). An exact name wins, so namespaced
 * claims (`https://tapline.example/roles` of Auth0) work as they are.
 */
export function claimValue(claims: Record<string, unknown>, name: string): unknown {
  if (name in claims) return claims[name];
  let at: unknown = claims;
  for (const part of name.split('.')) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/**
 * The role the claim maps to: every value (a string, or each string of an array) is looked up
 * in OIDC_ROLE_MAP and the highest role found wins; null when none maps.
 */
export function roleFromClaims(cfg: OidcConfig, claims: Record<string, unknown>): MemberRole | null {
  const raw = claimValue(claims, cfg.roleClaim);
  const values = Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw];
  let best: MemberRole | null = null;
  for (const v of values) {
    if (typeof v !== 'string') continue;
    const role = cfg.roleMap.get(v);
    if (role && (!best || ROLE_RANK[role] > ROLE_RANK[best])) best = role;
  }
  return best;
}

/**
 * OpenID Connect sign-in through `openid-client`: the authorization code flow with PKCE (S256),
 * a random state and nonce per attempt, kept sealed (AES-256-GCM) in an HttpOnly cookie of the
 * browser that started it, so the attempt can only be finished by that browser and needs no
 * server-side storage (any API replica finishes it).
 */
export class OidcSignIn {
  private discovered: Promise<oidc.Configuration> | undefined;
  private readonly box: SecretBox;

  constructor(
    readonly cfg: OidcConfig,
    key: Buffer,
    private readonly log: Logger,
  ) {
    this.box = new SecretBox(new SecretBox(key).derive('oidc-flow'));
  }

  /** The provider's metadata, fetched on first use and kept; a failed fetch is retried next time. */
  private configuration(): Promise<oidc.Configuration> {
    this.discovered ??= oidc
      .discovery(
        new URL(this.cfg.issuerUrl),
        this.cfg.clientId,
        this.cfg.clientSecret,
        this.cfg.clientSecret ? undefined : oidc.None(),
        // config.ts allows plain HTTP only for a provider on this machine.
        new URL(this.cfg.issuerUrl).protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {},
      )
      .catch((err: unknown) => {
        this.discovered = undefined;
        this.log.warn({ issuer: this.cfg.issuerUrl, err: errorText(err) }, 'OIDC discovery failed');
        throw refusal(this.cfg, 'unavailable');
      });
    return this.discovered;
  }

  /** The provider's authorization URL of a new attempt, and the sealed cookie value that goes with it. */
  async start(next: string): Promise<{ url: string; cookie: string }> {
    const config = await this.configuration();
    const verifier = oidc.randomPKCECodeVerifier();
    const flow: Flow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier,
      next,
      at: Date.now(),
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.cfg.redirectUrl,
      scope: this.cfg.scopes,
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    return { url: url.href, cookie: this.box.seal(JSON.stringify(flow)) };
  }

  /** The attempt of a flow cookie, or null when it is missing, tampered with or expired. */
  private openFlow(cookie: string | undefined): Flow | null {
    if (!cookie) return null;
    try {
      const flow = JSON.parse(this.box.open(cookie)) as Flow;
      if (typeof flow.at !== 'number' || Date.now() - flow.at > OIDC_FLOW_TTL_SECONDS * 1000) return null;
      return flow;
    } catch {
      return null;
    }
  }

  /**
   * Finishes an attempt at the redirect URL: checks the state against the cookie's, exchanges the
   * code with the PKCE verifier, checks the ID token (signature, issuer, audience, expiry, nonce),
   * merges the userinfo claims and applies the email, domain and role rules.
   */
  async finish(
    query: Record<string, string>,
    cookie: string | undefined,
  ): Promise<{ person: OidcPerson; next: string }> {
    const flow = this.openFlow(cookie);
    if (!flow) throw refusal(this.cfg, 'flow');
    if (typeof query.error === 'string') {
      // The provider's own refusal (e.g. access_denied): its code is kept when it is a plain word.
      const code = /^[a-z_]{1,64}$/.test(query.error) ? query.error : 'error';
      throw refusal(this.cfg, 'provider', { providerError: code });
    }
    if (query.state !== flow.state) throw refusal(this.cfg, 'state');
    const config = await this.configuration();
    const current = new URL(this.cfg.redirectUrl);
    current.search = new URLSearchParams(query).toString();
    let claims: Record<string, unknown>;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      const idClaims = tokens.claims();
      if (!idClaims) throw refusal(this.cfg, 'response');
      claims = { ...idClaims };
      if (config.serverMetadata().userinfo_endpoint) {
        const info = await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub);
        // The userinfo fills what the ID token lacks (scope claims often come only there); the
        // ID token's own values win where both have one.
        claims = { ...info, ...idClaims };
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw this.classify(err);
    }
    return { person: this.person(claims), next: flow.next };
  }

  /** An error of the exchange as a refusal; what the provider said goes to the log, not the person. */
  private classify(err: unknown): AppError {
    const text = errorText(err);
    this.log.warn({ issuer: this.cfg.issuerUrl, err: text }, 'OIDC sign-in refused');
    if (/"nonce"/.test(text)) return refusal(this.cfg, 'nonce');
    if (/"state"/.test(text)) return refusal(this.cfg, 'state');
    if (err instanceof oidc.AuthorizationResponseError)
      return refusal(this.cfg, 'provider', { providerError: err.error });
    if (/fetch failed|ECONNREFUSED|ENOTFOUND|ETIMEDOUT|socket/i.test(text))
      return refusal(this.cfg, 'unavailable');
    return refusal(this.cfg, 'response');
  }

  /** The Tapline person of verified claims, or a refusal. */
  person(claims: Record<string, unknown>): OidcPerson {
    const email = typeof claims.email === 'string' ? claims.email.trim() : '';
    if (!email.includes('@')) throw refusal(this.cfg, 'email');
    // An explicit `false` is refused; providers that do not send the claim (Entra ID) are taken
    // at their word, which is why the allowed domains matter there (docs/auth.md).
    if (claims.email_verified === false || claims.email_verified === 'false')
      throw refusal(this.cfg, 'unverified');
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
    if (this.cfg.allowedDomains.length > 0 && !this.cfg.allowedDomains.includes(domain))
      throw refusal(this.cfg, 'domain');
    const role = roleFromClaims(this.cfg, claims);
    if (!role && !this.cfg.defaultRole) throw refusal(this.cfg, 'role');
    const str = (v: unknown) => (typeof v === 'string' ? v.trim().slice(0, 200) : '');
    let firstName = str(claims.given_name);
    let lastName = str(claims.family_name);
    if (!firstName && !lastName) {
      const [first = '', ...rest] = str(claims.name).split(/\s+/);
      firstName = first;
      lastName = rest.join(' ');
    }
    return { email, firstName, lastName, role };
  }
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}

/**
 * The user of a signed-in person, created on first sign-in, and their membership of the account.
 * A role the claims map to is set at every sign-in (the provider's groups are the source of
 * truth); when none maps, a new member gets the default role and an existing member keeps theirs
 * (set on the Members page). Found by email, case-insensitively: the provider vouches for it.
 */
export async function upsertOidcMember(
  pool: pg.Pool,
  cfg: OidcConfig,
  person: OidcPerson,
): Promise<{
  user: { sid: string; email: string; first_name: string; last_name: string };
  accountSid: string;
  role: MemberRole;
}> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const acct = await client.query<{ sid: string }>(
      cfg.accountSid
        ? 'SELECT sid FROM accounts WHERE sid = $1'
        : 'SELECT sid FROM accounts ORDER BY created_at, sid LIMIT 1',
      cfg.accountSid ? [cfg.accountSid] : [],
    );
    const accountSid = acct.rows[0]?.sid;
    if (!accountSid) throw refusal(cfg, 'account');
    const sid = newSid('user');
    // Two first sign-ins of one person at once: the unique email makes the second find the first.
    await client.query(
      `INSERT INTO users (sid, email, first_name, last_name, default_account_sid)
       SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($2))
       ON CONFLICT (email) DO NOTHING`,
      [sid, person.email, person.firstName, person.lastName, accountSid],
    );
    const found = await client.query<{ sid: string; email: string; first_name: string; last_name: string }>(
      'SELECT sid, email, first_name, last_name FROM users WHERE lower(email) = lower($1) ORDER BY created_at LIMIT 1',
      [person.email],
    );
    const user = found.rows[0];
    if (!user) throw refusal(cfg, 'email');
    await client.query(
      `INSERT INTO memberships (account_sid, user_sid, role) VALUES ($1, $2, $3)
       ON CONFLICT (account_sid, user_sid) DO NOTHING`,
      [accountSid, user.sid, person.role ?? cfg.defaultRole],
    );
    const member = await client.query<{ role: string }>(
      'SELECT role FROM memberships WHERE account_sid = $1 AND user_sid = $2 FOR UPDATE',
      [accountSid, user.sid],
    );
    let role = member.rows[0]?.role;
    // Written only when it changes: an update of memberships tells every process to drop its
    // cached credentials (a statement trigger, which fires even when no row changes).
    if (person.role && role !== person.role) {
      await client.query('UPDATE memberships SET role = $3 WHERE account_sid = $1 AND user_sid = $2', [
        accountSid,
        user.sid,
        person.role,
      ]);
      role = person.role;
    }
    // A membership of the `ingest` role (from before dashboard roles) signs in to nothing.
    if (role !== 'administrator' && role !== 'user') throw refusal(cfg, 'role');
    await client.query('COMMIT');
    return { user, accountSid, role };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
