import type pg from 'pg';
import { TOKEN_PREFIX, hashToken, newTokenValue } from '../../shared/credentials.js';
import { notFound, validation } from '../../shared/errors.js';
import { newSid } from '../../shared/ids.js';
import { AccountTable } from '../tables/account-table.js';
import { iso } from '../tables/pagination.js';

export interface McpToken {
  sid: string;
  accountSid: string;
  environmentSid: string;
  bucketSids: string[];
  /** the tool scopes the creator held: what the token's tools may reach (docs/auth.md "MCP tokens") */
  scopes: string[];
  name: string;
  /** full value in the create response only; masked everywhere else */
  token: string;
  isRevoked: boolean;
  lastUsedAt: string | null;
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
  /** null = never expires */
  expiresAt: string | null;
}

interface Row {
  sid: string;
  account_sid: string;
  environment_sid: string;
  bucket_sids: string[];
  scopes: string[];
  name: string;
  token_prefix: string;
  token_suffix: string;
  is_revoked: boolean;
  last_used_at: Date | null;
  created_at: Date;
  updated_at: Date;
  revoked_at: Date | null;
  expires_at: Date | null;
}

// Never `SELECT *`: token_hash must not leave the repository.
const COLUMNS = `sid, account_sid, environment_sid, bucket_sids, scopes, name, token_prefix, token_suffix,
  is_revoked, last_used_at, created_at, updated_at, revoked_at, expires_at`;

/** `mcp_` + 4 characters are kept in front and 4 at the end: enough to tell tokens apart. */
const SHOWN_PREFIX = TOKEN_PREFIX.mcp.length + 4;
const SHOWN_SUFFIX = 4;

/** Masked value, e.g. `mcp_Ab3d…x9Yz`; the 32 characters in between are never stored. */
export const maskToken = (prefix: string, suffix: string): string => `${prefix}…${suffix}`;

const toToken = (r: Row): McpToken => ({
  sid: r.sid,
  accountSid: r.account_sid,
  environmentSid: r.environment_sid,
  bucketSids: r.bucket_sids,
  scopes: r.scopes,
  name: r.name,
  token: maskToken(r.token_prefix, r.token_suffix),
  isRevoked: r.is_revoked,
  lastUsedAt: iso(r.last_used_at),
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  revokedAt: iso(r.revoked_at),
  expiresAt: iso(r.expires_at),
});

export const MCP_TOKEN_SORTS = ['createdAt', 'name', 'lastUsedAt'] as const;
const SORT_COLUMNS = { createdAt: 'created_at', name: 'name', lastUsedAt: 'last_used_at' };

export class McpTokensRepository extends AccountTable<Row, McpToken> {
  constructor(pool: pg.Pool) {
    super(pool, {
      table: 'mcp_tokens',
      columns: COLUMNS,
      sortColumns: SORT_COLUMNS,
      map: toToken,
      what: 'MCP token',
    });
  }

  async create(
    accountSid: string,
    input: {
      name: string;
      environmentSid: string;
      bucketSids?: string[];
      expiresAt?: string | null;
      scopes: string[];
    },
  ): Promise<McpToken> {
    const bucketSids = await this.checkBuckets(accountSid, input.bucketSids ?? []);
    const value = newTokenValue(TOKEN_PREFIX.mcp);
    const r = await this.pool.query<Row>(
      `INSERT INTO mcp_tokens (sid, account_sid, environment_sid, bucket_sids, name, token_hash,
         token_prefix, token_suffix, expires_at, scopes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
      [
        newSid('mcpToken'),
        accountSid,
        input.environmentSid,
        bucketSids,
        input.name,
        hashToken(value),
        value.slice(0, SHOWN_PREFIX),
        value.slice(-SHOWN_SUFFIX),
        input.expiresAt ?? null,
        input.scopes,
      ],
    );
    return { ...toToken(r.rows[0]!), token: value };
  }

  /**
   * Partial: only the fields given change (`expiresAt: null` = never expires). A bucket_sids or
   * expires_at change fires the `tapline_auth` NOTIFY.
   */
  async update(
    accountSid: string,
    sid: string,
    input: { name?: string; bucketSids?: string[]; expiresAt?: string | null },
    expiresAtCap: string | null,
  ): Promise<McpToken> {
    const bucketSids =
      input.bucketSids === undefined ? null : await this.checkBuckets(accountSid, input.bucketSids);
    // `expiresAtCap` (the caller's own expiry, or null) brings a later or missing expiry down to
    // it; LEAST ignores NULLs.
    const r = await this.pool.query<Row>(
      `UPDATE mcp_tokens SET name = COALESCE($3, name), bucket_sids = COALESCE($4, bucket_sids),
         expires_at = LEAST(CASE WHEN $5 THEN $6::timestamptz ELSE expires_at END, $7::timestamptz),
         updated_at = now()
       WHERE account_sid = $1 AND sid = $2 RETURNING ${COLUMNS}`,
      [
        accountSid,
        sid,
        input.name ?? null,
        bucketSids,
        input.expiresAt !== undefined,
        input.expiresAt ?? null,
        expiresAtCap,
      ],
    );
    if (!r.rows[0]) throw notFound('MCP token');
    return toToken(r.rows[0]);
  }

  /** Revokes (the row stays, listed with isRevoked). Revoking twice keeps the first revokedAt. */
  async revoke(accountSid: string, sid: string): Promise<void> {
    const r = await this.pool.query(
      `UPDATE mcp_tokens SET is_revoked = true, revoked_at = COALESCE(revoked_at, now()),
         updated_at = CASE WHEN is_revoked THEN updated_at ELSE now() END
       WHERE account_sid = $1 AND sid = $2`,
      [accountSid, sid],
    );
    if (r.rowCount === 0) throw notFound('MCP token');
  }

  /** Every listed bucket must belong to the account; a 400 names each one that does not. */
  private async checkBuckets(accountSid: string, sids: string[]): Promise<string[]> {
    const unique = [...new Set(sids)];
    if (!unique.length) return [];
    const r = await this.pool.query<{ sid: string }>(
      'SELECT sid FROM buckets WHERE account_sid = $1 AND sid = ANY($2::text[])',
      [accountSid, unique],
    );
    const found = new Set(r.rows.map((row) => row.sid));
    const details: Record<string, string> = {};
    sids.forEach((s, i) => {
      if (!found.has(s)) details[`body.bucketSids.${i}`] = `${s} is not a bucket of this account`;
    });
    if (Object.keys(details).length) throw validation('bucketSids names unknown buckets', details);
    return unique;
  }
}
