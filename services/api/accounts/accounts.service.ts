import { RECOMMENDED_REDACTIONS } from '../../../schemas/recommended-redactions.js';
import type pg from 'pg';
import { ALL_SCOPES, TOKEN_PREFIX, hashToken, newTokenValue } from '../../shared/credentials.js';
import { newSid } from '../../shared/ids.js';
import { hashPassword } from '../../shared/passwords.js';

export interface NewAccount {
  accountSid: string;
  userSid: string;
  sessionToken: string;
  apiToken: string;
  bucketSid?: string;
}

/**
 * Creates an account with its first user (administrator), a session for that user and an API token
 * holding every scope. Values are returned once; only their hashes are stored.
 * Used by `npm run admin -- create-account`, the demo account on first start, and tests.
 */
export async function createAccount(
  pool: pg.Pool,
  input: {
    name: string;
    email: string;
    plan?: 'standard' | 'pro' | 'enterprise';
    rateLimit?: number;
    bucketName?: string;
    /** the first user's password (hashed with scrypt); without it the user cannot sign in yet */
    password?: string;
    /**
     * Starts the account with RECOMMENDED_REDACTIONS (default): a fresh install redacts
     * credentials, secrets and card numbers before anything is stored, without any setting.
     */
    recommendedRedactions?: boolean;
  },
): Promise<NewAccount> {
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const accountSid = newSid('account');
    await client.query('INSERT INTO accounts (sid, name, plan, rate_limit) VALUES ($1, $2, $3, $4)', [
      accountSid,
      input.name,
      input.plan ?? 'standard',
      input.rateLimit ?? null,
    ]);
    const existing = await client.query<{ sid: string }>(
      'SELECT sid FROM users WHERE lower(email) = lower($1)',
      [input.email],
    );
    let userSid = existing.rows[0]?.sid;
    if (!userSid) {
      userSid = newSid('user');
      const [first, ...rest] = input.name.split(' ');
      await client.query(
        `INSERT INTO users (sid, email, first_name, last_name, default_account_sid, password_hash)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [userSid, input.email, first ?? '', rest.join(' '), accountSid, passwordHash],
      );
    } else if (passwordHash) {
      await client.query('UPDATE users SET password_hash = $2 WHERE sid = $1', [userSid, passwordHash]);
    }
    await client.query('INSERT INTO memberships (account_sid, user_sid, role) VALUES ($1, $2, $3)', [
      accountSid,
      userSid,
      'administrator',
    ]);
    const sessionToken = newTokenValue(TOKEN_PREFIX.session);
    await client.query(
      'INSERT INTO sessions (sid, user_sid, account_sid, token_hash) VALUES ($1, $2, $3, $4)',
      [newSid('session'), userSid, accountSid, hashToken(sessionToken)],
    );
    const apiToken = newTokenValue(TOKEN_PREFIX.live);
    await client.query(
      `INSERT INTO api_tokens (sid, account_sid, name, description, scopes, token_hash, token_prefix)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        newSid('apiToken'),
        accountSid,
        'admin',
        'Created with the account; holds every scope',
        [...ALL_SCOPES],
        hashToken(apiToken),
        apiToken.slice(0, 12),
      ],
    );
    let bucketSid: string | undefined;
    if (input.bucketName) {
      bucketSid = newSid('bucket');
      await client.query('INSERT INTO buckets (sid, account_sid, name) VALUES ($1, $2, $3)', [
        bucketSid,
        accountSid,
        input.bucketName,
      ]);
    }
    if (input.recommendedRedactions ?? true) {
      // One millisecond apart, first rule newest: lists (newest first by default) show them in
      // the order of RECOMMENDED_REDACTIONS rather than in a tie's arbitrary order.
      for (const [i, r] of RECOMMENDED_REDACTIONS.entries())
        await client.query(
          `INSERT INTO redactions (sid, account_sid, shape, description, scopes, type, redact_at, level, is_active, created_at)
           VALUES ($1, $2, 'A', $3, ARRAY['*'], $4, 'server', $5, true, now() - make_interval(secs => $6::double precision / 1000))`,
          [newSid('redaction'), accountSid, r.description, r.type, r.level, i],
        );
    }
    await client.query('COMMIT');
    return { accountSid, userSid, sessionToken, apiToken, ...(bucketSid ? { bucketSid } : {}) };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
