import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from './logger.js';
import { randomAlnum } from './ids.js';
import { metrics } from './metrics.js';
import { RateBudget } from './window-limiter.js';
import { effectiveScopes } from './scope-grants.js';
import { ALL_SCOPES, SESSION_ONLY_SCOPES } from '../../schemas/scopes.js';

export { ALL_SCOPES, SESSION_ONLY_SCOPES, type Scope } from '../../schemas/scopes.js';

export type MemberRole = 'administrator' | 'user';

/**
 * What a dashboard session may do, by the member's role in the session's account:
 * an administrator everything; a user reads everything, sends traffic and manages event markers.
 */
export function roleScopes(role: string): ReadonlySet<string> {
  if (role === 'administrator') return new Set([...ALL_SCOPES, ...SESSION_ONLY_SCOPES]);
  if (role === 'user')
    return new Set([
      ...ALL_SCOPES.filter((s) => s.endsWith(':read')),
      'requests:write',
      'events:write',
      'events:delete',
    ]);
  return new Set();
}

export type CredentialKind = 'session' | 'apiToken' | 'mcpToken';

export interface Principal {
  kind: CredentialKind;
  /** sid of the session, API token or MCP token record */
  credentialSid: string;
  accountSid: string;
  userSid: string | null;
  scopes: ReadonlySet<string>;
  /** sessions only: the member's role in the account, and the SHA-256 of the session's CSRF token */
  role?: string;
  csrfHash?: Buffer | null;
  /**
   * When the credential stops working (ms since epoch), for tokens: a token it makes or changes
   * expires no later (docs/auth.md "Token inheritance"). Absent for sessions, whose expiry slides.
   */
  expiresAt?: number | null;
  /** MCP tokens only */
  environmentSid?: string;
  bucketSids?: string[];
}

export const TOKEN_PREFIX = { live: 'at_live_', test: 'at_test_', mcp: 'mcp_', session: 'tls_' } as const;

/** Token values carry 40 base62 characters (~238 bits) after their prefix. */
export function newTokenValue(prefix: string): string {
  return prefix + randomAlnum(40);
}

export function hashToken(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export function randomSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** A changed credential row, as the `tapline_auth` NOTIFY names it (parseAuthNotice). */
export type CredentialChange =
  | { table: 'api_tokens' | 'mcp_tokens' | 'sessions'; sid: string }
  | { table: 'memberships'; accountSid: string; userSid: string };

const CHANGED_KIND: Record<'api_tokens' | 'mcp_tokens' | 'sessions', CredentialKind> = {
  api_tokens: 'apiToken',
  mcp_tokens: 'mcpToken',
  sessions: 'session',
};

/**
 * Reads a `tapline_auth` payload: `<table>:<sid>`, or `memberships:<accountSid>:<userSid>`
 * (row triggers of migration 021). A bucket's change is `{bucketSid}`; anything else (an unknown
 * form) is `{all: true}`, so the caller forgets everything rather than keep a stale entry.
 */
export function parseAuthNotice(
  payload: string,
): { credential: CredentialChange } | { bucketSid: string } | { all: true } {
  const [table, a, b] = payload.split(':');
  if (a && (table === 'api_tokens' || table === 'mcp_tokens' || table === 'sessions'))
    return { credential: { table, sid: a } };
  if (a && b && table === 'memberships') return { credential: { table, accountSid: a, userSid: b } };
  if (a && table === 'buckets') return { bucketSid: a };
  return { all: true };
}

interface CachedPrincipal {
  principal: Principal | null;
  hash: Buffer;
  expiresAt: number; // cache entry expiry
  tokenExpiresAt: number | null; // credential expiry
}

/**
 * Resolves bearer values to principals. Lookups are by SHA-256 of the value (an index probe), then
 * compared in constant time. Results are cached briefly; a change to a credential row raises a
 * NOTIFY naming it, which drops that credential from the cache, so a deactivated or deleted token
 * fails at once.
 * `lastUsedAt` is collected in memory and written every few seconds, not per request.
 */
export class CredentialStore {
  private cache = new Map<string, CachedPrincipal>();
  private lastUsed = new Map<string, { kind: CredentialKind; at: Date }>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: Logger,
    private readonly ttlMs = 30_000,
    /** lifetime of a dashboard session from its last use (sliding); 0 = sessions never slide */
    private readonly sessionTtlMs = 0,
    /** Postgres look-ups per second of values not in the cache (AUTH_LOOKUPS_PER_SECOND) */
    lookupsPerSecond = 500,
  ) {
    this.lookupBudget = new RateBudget(lookupsPerSecond);
  }

  private readonly lookupBudget: RateBudget;
  /** Values that named no credential, kept apart (bounded, oldest out) so they never push out known ones. */
  private readonly unknown = new Map<string, number>();

  start(): void {
    this.flushTimer = setInterval(() => void this.flushLastUsed(), 5000);
    this.flushTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    await this.flushLastUsed();
  }

  /**
   * Forgets cached principals. With a change, only the credentials it touches: the one token or
   * session, or every session of one membership; without, everything (a lost NOTIFY connection).
   * A change to a credential row also forgets the values that named none, since a reactivated
   * token is unknown until then. Forgetting only what changed keeps one tenant's sign-outs and
   * revocations from sending every other tenant's tokens back to the database.
   */
  invalidate(change?: CredentialChange): void {
    if (!change) {
      this.cache.clear();
      this.unknown.clear();
      return;
    }
    if (change.table === 'memberships') {
      for (const [value, hit] of this.cache) {
        const p = hit.principal;
        if (p?.kind === 'session' && p.accountSid === change.accountSid && p.userSid === change.userSid)
          this.cache.delete(value);
      }
      return;
    }
    const kind = CHANGED_KIND[change.table];
    for (const [value, hit] of this.cache) {
      if (hit.principal?.kind === kind && hit.principal.credentialSid === change.sid)
        this.cache.delete(value);
    }
    this.unknown.clear();
  }

  /**
   * The principal of a credential value, or null. `use` is where it is presented: MCP tokens are
   * accepted only on `/mcp` ('mcp'), every other credential only elsewhere ('api'); a credential
   * refused there is not counted as used (its `lastUsedAt` stays).
   */
  async authenticate(value: string, use: 'api' | 'mcp' = 'api'): Promise<Principal | null> {
    const p = await this.principalOf(value);
    if (!p || (p.kind === 'mcpToken') !== (use === 'mcp')) return null;
    this.touch(p);
    return p;
  }

  private async principalOf(value: string): Promise<Principal | null> {
    if (value.length < 8 || value.length > 256) return null;
    const now = Date.now();
    const hit = this.cache.get(value);
    if (hit && hit.expiresAt > now) {
      if (hit.principal && hit.tokenExpiresAt !== null && hit.tokenExpiresAt <= now) return null;
      return hit.principal;
    }
    const unknownUntil = this.unknown.get(value);
    if (unknownUntil !== undefined && unknownUntil > now) return null;
    // A bounded rate of database look-ups for values not cached (docs/security.md "Limits").
    if (!this.lookupBudget.take()) {
      metrics.authLookups.inc({ result: 'limited' });
      throw this.lookupBudget.refusal('authentication look-ups');
    }
    const hash = hashToken(value);
    const found = await this.lookup(value, hash);
    metrics.authLookups.inc({ result: found ? 'found' : 'unknown' });
    if (!found) {
      this.unknown.delete(value);
      if (this.unknown.size >= 10_000) this.unknown.delete(this.unknown.keys().next().value!);
      this.unknown.set(value, now + this.ttlMs);
      return null;
    }
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(value, {
      principal: found?.principal ?? null,
      hash,
      expiresAt: now + this.ttlMs,
      tokenExpiresAt: found?.expiresAt ?? null,
    });
    if (!found) return null;
    if (found.expiresAt !== null && found.expiresAt <= now) return null;
    return found.principal;
  }

  private touch(p: Principal): void {
    this.lastUsed.set(p.credentialSid, { kind: p.kind, at: new Date() });
  }

  private async lookup(
    value: string,
    hash: Buffer,
  ): Promise<{ principal: Principal; expiresAt: number | null } | null> {
    if (value.startsWith(TOKEN_PREFIX.live) || value.startsWith(TOKEN_PREFIX.test)) {
      const r = await this.pool.query<{
        sid: string;
        account_sid: string;
        scopes: string[];
        token_hash: Buffer;
        expires_at: Date | null;
      }>(
        `SELECT sid, account_sid, scopes, token_hash, expires_at FROM api_tokens
         WHERE token_hash = $1 AND is_active`,
        [hash],
      );
      const row = r.rows[0];
      if (!row || !timingSafeEqual(row.token_hash, hash)) return null;
      return {
        principal: {
          kind: 'apiToken',
          credentialSid: row.sid,
          accountSid: row.account_sid,
          userSid: null,
          // The stored scopes plus the finer ones spec scopes imply (scope-grants.ts).
          scopes: effectiveScopes(row.scopes),
          expiresAt: row.expires_at?.getTime() ?? null,
        },
        expiresAt: row.expires_at?.getTime() ?? null,
      };
    }
    if (value.startsWith(TOKEN_PREFIX.mcp)) {
      const r = await this.pool
        .query<{
          sid: string;
          account_sid: string;
          environment_sid: string;
          bucket_sids: string[];
          token_hash: Buffer;
          expires_at: Date | null;
        }>(
          `SELECT sid, account_sid, environment_sid, bucket_sids, token_hash, expires_at FROM mcp_tokens
         WHERE token_hash = $1 AND NOT is_revoked`,
          [hash],
        )
        .catch((err: { code?: string }) => {
          // mcp_tokens arrives with the API migrations; before that no MCP token can exist.
          if (err.code === '42P01') return { rows: [] };
          throw err;
        });
      const row = r.rows[0];
      if (!row || !timingSafeEqual(row.token_hash, hash)) return null;
      return {
        principal: {
          kind: 'mcpToken',
          credentialSid: row.sid,
          accountSid: row.account_sid,
          userSid: null,
          scopes: new Set(['events:read', 'events:write']),
          environmentSid: row.environment_sid,
          bucketSids: row.bucket_sids,
        },
        // MCP tokens may expire (migration 009); null = never.
        expiresAt: row.expires_at?.getTime() ?? null,
      };
    }
    if (value.startsWith(TOKEN_PREFIX.session)) {
      // The session's scopes follow the member's current role; a session whose membership is gone
      // (removed from the account) no longer authenticates.
      const r = await this.pool.query<{
        sid: string;
        account_sid: string;
        user_sid: string;
        token_hash: Buffer;
        csrf_hash: Buffer | null;
        expires_at: Date | null;
        role: string;
      }>(
        `SELECT s.sid, s.account_sid, s.user_sid, s.token_hash, s.csrf_hash, s.expires_at, m.role
         FROM sessions s JOIN memberships m ON m.account_sid = s.account_sid AND m.user_sid = s.user_sid
         WHERE s.token_hash = $1 AND s.ended_at IS NULL`,
        [hash],
      );
      const row = r.rows[0];
      if (!row || !timingSafeEqual(row.token_hash, hash)) return null;
      return {
        principal: {
          kind: 'session',
          credentialSid: row.sid,
          accountSid: row.account_sid,
          userSid: row.user_sid,
          scopes: roleScopes(row.role),
          role: row.role,
          csrfHash: row.csrf_hash,
        },
        expiresAt: row.expires_at?.getTime() ?? null,
      };
    }
    return null;
  }

  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const entries = [...this.lastUsed.entries()];
    this.lastUsed.clear();
    const byTable: Record<CredentialKind, { sids: string[]; ats: Date[] }> = {
      apiToken: { sids: [], ats: [] },
      mcpToken: { sids: [], ats: [] },
      session: { sids: [], ats: [] },
    };
    for (const [sid, { kind, at }] of entries) {
      byTable[kind].sids.push(sid);
      byTable[kind].ats.push(at);
    }
    const tables: Record<CredentialKind, string> = {
      apiToken: 'api_tokens',
      mcpToken: 'mcp_tokens',
      session: 'sessions',
    };
    for (const kind of Object.keys(byTable) as CredentialKind[]) {
      const { sids, ats } = byTable[kind];
      if (!sids.length) continue;
      if (kind === 'session' && this.sessionTtlMs) {
        // Sliding expiry: a used session lives another full lifetime from its last use. Written at
        // most once a minute per session, with the lastUsedAt flush (not once per request).
        // NOTE: expires_at is in the NOTIFY trigger's column list, so extending it clears caches;
        // only sessions whose expiry moves by more than a minute are updated.
        await this.pool
          .query(
            `UPDATE sessions t SET expires_at = u.at + make_interval(secs => $3::double precision / 1000)
             FROM unnest($1::text[], $2::timestamptz[]) AS u(sid, at)
             WHERE t.sid = u.sid AND t.expires_at IS NOT NULL AND t.ended_at IS NULL
               AND t.expires_at < u.at + make_interval(secs => $3::double precision / 1000) - interval '1 minute'`,
            [sids, ats, this.sessionTtlMs],
          )
          .catch((err: Error) => this.log.warn({ err: err.message }, 'session expiry flush failed'));
      }
      try {
        // NOTE: the NOTIFY triggers list their columns, so this UPDATE does not clear caches.
        await this.pool.query(
          `UPDATE ${tables[kind]} t SET last_used_at = u.at
           FROM unnest($1::text[], $2::timestamptz[]) AS u(sid, at)
           WHERE t.sid = u.sid AND (t.last_used_at IS NULL OR t.last_used_at < u.at)`,
          [sids, ats],
        );
      } catch (err) {
        this.log.warn({ err: (err as Error).message, kind }, 'lastUsedAt flush failed');
      }
    }
  }
}
