import type pg from 'pg';
import { ALL_SCOPES, TOKEN_PREFIX, hashToken, newTokenValue } from '../../shared/credentials.js';
import { notFound } from '../../shared/errors.js';
import { newSid } from '../../shared/ids.js';
import { AccountTable } from '../tables/account-table.js';
import { iso } from '../tables/pagination.js';

export type ApiTokenRole = 'administrator' | 'user' | 'ingest';

export interface ApiToken {
  sid: string;
  accountSid: string;
  environmentSid: string | null;
  name: string;
  description: string;
  role: ApiTokenRole;
  scopes: string[];
  lastUsedAt: string | null;
  expiresAt: string | null;
  isActive: boolean;
  createdAt: string;
  updatedAt: string | null;
  /** create response only */
  token?: string;
}

interface Row {
  sid: string;
  account_sid: string;
  environment_sid: string | null;
  name: string;
  description: string;
  scopes: string[];
  is_active: boolean;
  expires_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
  updated_at: Date | null;
}

// Never `SELECT *`: token_hash must not leave the repository.
const COLUMNS = `sid, account_sid, environment_sid, name, description, scopes, is_active, expires_at,
  last_used_at, created_at, updated_at`;

/**
 * The token's role, derived from the scopes (docs/auth.md leaves the relation open): a token holding
 * every scope is an `administrator`, one holding only `requests:write` is an `ingest` token (it
 * can send traffic and nothing else), anything else is a `user`.
 */
export function roleOf(scopes: readonly string[]): ApiTokenRole {
  const held = new Set(scopes);
  if (ALL_SCOPES.every((s) => held.has(s))) return 'administrator';
  if (held.size === 1 && held.has('requests:write')) return 'ingest';
  return 'user';
}

const toToken = (r: Row): ApiToken => ({
  sid: r.sid,
  accountSid: r.account_sid,
  environmentSid: r.environment_sid,
  name: r.name,
  description: r.description,
  role: roleOf(r.scopes),
  scopes: r.scopes,
  lastUsedAt: iso(r.last_used_at),
  expiresAt: iso(r.expires_at),
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

export const API_TOKEN_SORTS = ['createdAt', 'name', 'lastUsedAt', 'expiresAt'] as const;
const SORT_COLUMNS = {
  createdAt: 'created_at',
  name: 'name',
  lastUsedAt: 'last_used_at',
  expiresAt: 'expires_at',
};

export interface ApiTokenInput {
  name: string;
  description?: string;
  scopes: string[];
  expiresAt?: string | null;
  environment?: 'live' | 'test';
  environmentSid?: string | null;
}

export class ApiTokensRepository extends AccountTable<Row, ApiToken> {
  constructor(pool: pg.Pool) {
    super(pool, {
      table: 'api_tokens',
      columns: COLUMNS,
      sortColumns: SORT_COLUMNS,
      map: toToken,
      what: 'API token',
    });
  }

  /** The value is minted here, returned once in `token`, and only its SHA-256 is stored. */
  async create(accountSid: string, input: ApiTokenInput): Promise<ApiToken> {
    const value = newTokenValue(input.environment === 'test' ? TOKEN_PREFIX.test : TOKEN_PREFIX.live);
    const r = await this.pool.query<Row>(
      `INSERT INTO api_tokens (sid, account_sid, environment_sid, name, description, scopes, token_hash,
         token_prefix, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
      [
        newSid('apiToken'),
        accountSid,
        input.environmentSid ?? null,
        input.name,
        input.description ?? '',
        input.scopes,
        hashToken(value),
        value.slice(0, 12),
        input.expiresAt ?? null,
      ],
    );
    return { ...toToken(r.rows[0]!), token: value };
  }

  /**
   * Name, description (unchanged when omitted) and isActive. Setting is_active fires the
   * `tapline_auth` NOTIFY, which clears every process's credential cache. `expiresAtCap` (the
   * caller's own expiry, or null) brings a later or missing expiry down to it.
   */
  async update(
    accountSid: string,
    sid: string,
    input: { name: string; description?: string; isActive: boolean },
    expiresAtCap: string | null,
  ): Promise<ApiToken> {
    // LEAST ignores NULLs: no cap keeps the expiry, a cap replaces "never" or a later one.
    const r = await this.pool.query<Row>(
      `UPDATE api_tokens SET name = $3, description = COALESCE($4, description), is_active = $5,
         expires_at = LEAST(expires_at, $6::timestamptz), updated_at = now()
       WHERE account_sid = $1 AND sid = $2 RETURNING ${COLUMNS}`,
      [accountSid, sid, input.name, input.description ?? null, input.isActive, expiresAtCap],
    );
    if (!r.rows[0]) throw notFound('API token');
    return toToken(r.rows[0]);
  }
}
