import type { FastifyInstance } from 'fastify';
import type { Principal } from '../../shared/credentials.js';
import { validation } from '../../shared/errors.js';
import { expiryCap, requireHeld } from '../tokens/token-inheritance.js';

/** An expiry must lie in the future (null or omitted = never). */
export function rejectPastExpiry(expiresAt: string | null | undefined): void {
  if (expiresAt && Date.parse(expiresAt) <= Date.now())
    throw validation('expiresAt is in the past', { 'body.expiresAt': 'must be in the future' });
}

/** The stored tokens of one kind (API or MCP), as far as a change to one of them needs them. */
interface TokenRows<Change, Token> {
  get(accountSid: string, sid: string): Promise<{ scopes: readonly string[] }>;
  update(accountSid: string, sid: string, change: Change, expiresAtCap: string | null): Promise<Token>;
}

/**
 * The changes the API-token and MCP-token routes make to a stored token (docs/auth.md, "Token
 * rules"). The `tapline_auth` NOTIFY trigger clears other processes' credential caches; this
 * process clears its own before answering, so the very next request with the token already sees
 * the change.
 */
export function tokenChanges<Change, Token>(
  app: FastifyInstance,
  table: 'api_tokens' | 'mcp_tokens',
  rows: TokenRows<Change, Token>,
  remove: (accountSid: string, sid: string) => Promise<void>,
) {
  const forget = (sid: string) => app.deps.credentials.invalidate({ table, sid });
  return {
    /**
     * A stronger token (deactivated by an administrator, say) is not brought back, widened or
     * otherwise changed by a weaker credential: the caller must hold every scope of the token.
     */
    async requireHoldsScopesOf(principal: Principal, accountSid: string, sid: string): Promise<void> {
      const current = await rows.get(accountSid, sid);
      requireHeld(principal, current.scopes, 'Cannot change a token holding scopes the caller does not hold');
    },
    /** Stores the change; the token then expires no later than the credential that changed it. */
    async update(principal: Principal, accountSid: string, sid: string, change: Change): Promise<Token> {
      const updated = await rows.update(accountSid, sid, change, expiryCap(principal));
      forget(sid);
      return updated;
    },
    /** Deletes or revokes the token: access ends at once. */
    async remove(accountSid: string, sid: string): Promise<{ sid: string; deleted: true }> {
      await remove(accountSid, sid);
      forget(sid);
      return { sid, deleted: true };
    },
  };
}
