import { TOKEN_PREFIX, hashToken, newTokenValue } from '../../services/shared/credentials.js';
import { ENVIRONMENT_SID, newSid } from '../../services/shared/ids.js';
import { testPool, type TestAccount } from './client.js';

/**
 * An API token of `acct` holding exactly `scopes`, inserted directly (403 tests need a token
 * lacking one scope, independent of the token endpoints). Returns the token value.
 */
export async function scopedToken(acct: Pick<TestAccount, 'accountSid'>, scopes: string[]): Promise<string> {
  const value = newTokenValue(TOKEN_PREFIX.live);
  await testPool().query(
    `INSERT INTO api_tokens (sid, account_sid, name, description, scopes, token_hash, token_prefix)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      newSid('apiToken'),
      acct.accountSid,
      'scoped',
      'test token',
      scopes,
      hashToken(value),
      value.slice(0, 12),
    ],
  );
  return value;
}

/** An MCP token row for `acct`, limited to one environment and `bucketSids` ([] = every bucket). */
export async function mcpToken(
  acct: Pick<TestAccount, 'accountSid'>,
  environmentSid: string,
  bucketSids: string[] = [],
): Promise<{ sid: string; token: string }> {
  if (!ENVIRONMENT_SID.test(environmentSid)) throw new Error(`bad environment sid ${environmentSid}`);
  const token = newTokenValue(TOKEN_PREFIX.mcp);
  const sid = newSid('mcpToken');
  await testPool().query(
    `INSERT INTO mcp_tokens (sid, account_sid, environment_sid, bucket_sids, name, token_hash, token_prefix,
                             token_suffix)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      sid,
      acct.accountSid,
      environmentSid,
      bucketSids,
      'mcp test',
      hashToken(token),
      token.slice(0, 8),
      token.slice(-4),
    ],
  );
  return { sid, token };
}
