import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ref } from '../../../schemas/index.js';
import type { SchemaTypes } from '../api.types.js';
import { createAccount } from '../accounts/accounts.service.js';
import { hashToken } from '../../shared/credentials.js';
import { AppError, notFound } from '../../shared/errors.js';
import { hashPassword, verifyPassword } from '../../shared/passwords.js';
import { SigninThrottle } from '../auth/signin-throttle.js';
import {
  SESSION_COOKIE,
  setSessionCookies,
  startSession,
  type StartedSession,
} from '../auth/sessions.service.js';
import { newSid } from '../../shared/ids.js';

interface UserRow {
  sid: string;
  email: string;
  first_name: string;
  last_name: string;
  password_hash: string | null;
  default_account_sid: string | null;
}

const tags = ['authentication'];

/**
 * The endpoints that take no credential (docs/auth.md): sign-in, the first run's account
 * creation, and accepting an invitation. Each answers like a sign-in: the session in cookies for
 * the dashboard, and its token in the body for API clients.
 */
export default async function signinRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const pool = app.deps.pg;
  const cfg = app.deps.cfg;
  const throttle = new SigninThrottle();

  /**
   * The throttle's keys of a password attempt (the email and the client's address); a 429 with
   * Retry-After while either must still wait.
   */
  const throttled = (req: FastifyRequest, reply: FastifyReply, email: string): string[] => {
    const keys = [`email:${email.trim().toLowerCase()}`, `ip:${req.ip}`];
    const wait = throttle.waitMs(keys);
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      void reply.header('retry-after', String(seconds));
      throw new AppError(429, 'RATE_LIMIT_EXCEEDED', 'Too many failed sign-ins; try again later', {
        retryAfterSeconds: seconds,
      });
    }
    return keys;
  };

  /**
   * OIDC_ONLY: people sign in through the OpenID provider alone, so a password is refused before
   * it is looked at (sign-in, and an invitation, which sets or checks one).
   */
  const passwordsOff = () => {
    if (cfg.oidc?.only)
      throw new AppError(
        403,
        'FORBIDDEN',
        `Password sign-in is turned off: sign in with ${cfg.oidc.providerName}`,
        { reason: 'sso_only' },
      );
  };

  const signedIn = async (
    req: FastifyRequest,
    reply: FastifyReply,
    user: Pick<UserRow, 'sid' | 'email' | 'first_name' | 'last_name'>,
    accountSid: string,
    role: string,
    session?: StartedSession,
  ) => {
    const s = session ?? (await startSession(pool, user.sid, accountSid, cfg.sessionTtlDays));
    setSessionCookies(req, reply, s);
    return {
      sessionToken: s.sessionToken,
      csrfToken: s.csrfToken,
      expiresAt: s.expiresAt.toISOString(),
      accountSid,
      role,
      user: { sid: user.sid, email: user.email, firstName: user.first_name, lastName: user.last_name },
    };
  };

  app.post(
    '/v1/authentication/signin',
    {
      schema: {
        tags,
        summary: 'Sign in with email and password (sets the dashboard session cookie)',
        security: [],
        body: ref('signinBody'),
        response: { 200: ref('signinResult') },
      } as const,
    },
    async (req, reply) => {
      passwordsOff();
      const email = req.body.email.trim().toLowerCase();
      const keys = throttled(req, reply, email);
      const r = await pool.query<UserRow & { account_sid: string | null; role: string | null }>(
        `SELECT u.sid, u.email, u.first_name, u.last_name, u.password_hash, u.default_account_sid,
                m.account_sid, m.role
         FROM users u
         LEFT JOIN LATERAL (
           SELECT account_sid, role FROM memberships WHERE user_sid = u.sid
           ORDER BY (account_sid = u.default_account_sid) DESC, created_at LIMIT 1
         ) m ON true
         WHERE lower(u.email) = $1 LIMIT 1`,
        [email],
      );
      const user = r.rows[0];
      // Unknown email, no password, wrong password: one answer, one scrypt run's time.
      const ok = await verifyPassword(req.body.password, user?.password_hash);
      if (!ok || !user || !user.account_sid || !user.role) {
        throttle.fail(keys);
        throw new AppError(401, 'INVALID_CREDENTIALS', 'Email or password is incorrect');
      }
      throttle.succeed(keys[0]!);
      return signedIn(req, reply, user, user.account_sid, user.role);
    },
  );

  app.get(
    '/v1/setup',
    {
      schema: {
        tags,
        summary: 'Whether Tapline still needs its first account',
        security: [],
        response: { 200: ref('setupStatus') },
      } as const,
    },
    async (req) => {
      const r = await pool.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM accounts) AS any');
      // Lets the dashboard tell "not signed in" without provoking a 401 on its first call.
      const cookie = req.cookies[SESSION_COOKIE];
      const principal = cookie ? await app.deps.credentials.authenticate(cookie) : null;
      const scheme = cfg.tls ? 'https' : 'http';
      const host = cfg.publicUrl ? new URL(cfg.publicUrl).hostname : cfg.host;
      return {
        needsSetup: !r.rows[0]?.any,
        signedIn: principal?.kind === 'session',
        ingestUrl: cfg.roles.has('ingest') || cfg.publicUrl ? `${scheme}://${host}:${cfg.ingestPort}` : null,
      };
    },
  );

  app.post(
    '/v1/setup',
    {
      schema: {
        tags,
        summary: 'First run: create the first account and its administrator, signed in',
        security: [],
        body: ref('setupBody'),
        response: { 200: ref('signinResult') },
      } as const,
    },
    async (req, reply) => {
      const b = req.body;
      // A session-level advisory lock: two first-run submissions cannot both create an account.
      const client = await pool.connect();
      let created: Awaited<ReturnType<typeof createAccount>>;
      try {
        await client.query('SELECT pg_advisory_lock(7207001)');
        const r = await client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM accounts) AS any');
        if (r.rows[0]?.any)
          throw new AppError(409, 'CONFLICT', 'Tapline already has an account: sign in instead');
        created = await createAccount(pool, {
          name: b.accountName ?? `${b.name.trim().split(/\s+/)[0]}'s account`,
          email: b.email.trim(),
          password: b.password,
        });
      } finally {
        await client.query('SELECT pg_advisory_unlock(7207001)').catch(() => undefined);
        client.release();
      }
      const [first = '', ...rest] = b.name.trim().split(/\s+/);
      await pool.query('UPDATE users SET first_name = $2, last_name = $3 WHERE sid = $1', [
        created.userSid,
        first,
        rest.join(' '),
      ]);
      // createAccount also made an unused session; it ends here (the dashboard gets its own).
      await pool.query('UPDATE sessions SET ended_at = now() WHERE user_sid = $1 AND csrf_hash IS NULL', [
        created.userSid,
      ]);
      return signedIn(
        req,
        reply,
        { sid: created.userSid, email: b.email.trim(), first_name: first, last_name: rest.join(' ') },
        created.accountSid,
        'administrator',
      );
    },
  );

  const findInvite = async (token: string) => {
    const r = await pool.query<{
      sid: string;
      account_sid: string;
      account_name: string;
      email: string;
      first_name: string;
      last_name: string;
      role: string;
      expires_at: Date;
    }>(
      `SELECT i.sid, i.account_sid, a.name AS account_name, i.email, i.first_name, i.last_name, i.role, i.expires_at
       FROM invites i JOIN accounts a ON a.sid = i.account_sid
       WHERE i.token_hash = $1 AND i.accepted_at IS NULL AND i.expires_at > now()`,
      [hashToken(token)],
    );
    const inv = r.rows[0];
    if (!inv) throw notFound('Invitation (unknown, already used or expired)');
    return inv;
  };

  const tokenParams = {
    type: 'object',
    required: ['token'],
    properties: { token: { type: 'string', minLength: 10, maxLength: 100 } },
  } as const;

  app.get(
    '/v1/invites/:token',
    { schema: { tags, security: [], params: tokenParams, response: { 200: ref('inviteInfo') } } as const },
    async (req) => {
      const inv = await findInvite(req.params.token);
      return {
        email: inv.email,
        accountName: inv.account_name,
        role: inv.role,
        expiresAt: inv.expires_at.toISOString(),
      };
    },
  );

  app.post(
    '/v1/invites/:token/accept',
    {
      schema: {
        tags,
        summary: 'Accept an invitation: set the password, join the account, signed in',
        security: [],
        params: tokenParams,
        body: ref('inviteAccept'),
        response: { 200: ref('signinResult') },
      } as const,
    },
    async (req, reply) => {
      passwordsOff();
      const inv = await findInvite(req.params.token);
      // A person who already has a Tapline user proves it with their own password: the link is
      // handed to the inviter, so it must never set or replace the password of an existing user
      // (that would hand the inviter the person's other accounts). Guesses count as failed sign-ins.
      const known = await pool.query<UserRow>('SELECT * FROM users WHERE lower(email) = lower($1)', [
        inv.email,
      ]);
      const prior = known.rows[0];
      if (prior) {
        const keys = throttled(req, reply, prior.email);
        if (!prior.password_hash)
          throw new AppError(
            409,
            'CONFLICT',
            `${inv.email} already has a Tapline user without a password: an operator sets one first (npm run admin -- set-password --email ${inv.email}), then accept the invitation with it`,
          );
        if (!(await verifyPassword(req.body.password, prior.password_hash))) {
          throttle.fail(keys);
          throw new AppError(
            401,
            'INVALID_CREDENTIALS',
            `Wrong password: ${inv.email} already has a Tapline password; enter it to join ${inv.account_name}`,
          );
        }
        throttle.succeed(keys[0]!);
      }
      const hash = prior ? null : await hashPassword(req.body.password);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        // One use only: the row is claimed before anything else happens.
        const claimed = await client.query(
          'UPDATE invites SET accepted_at = now() WHERE sid = $1 AND accepted_at IS NULL',
          [inv.sid],
        );
        if (claimed.rowCount !== 1) throw notFound('Invitation (unknown, already used or expired)');
        const existing = await client.query<UserRow>('SELECT * FROM users WHERE lower(email) = lower($1)', [
          inv.email,
        ]);
        let user = existing.rows[0];
        const firstName = req.body.firstName ?? inv.first_name;
        const lastName = req.body.lastName ?? inv.last_name;
        if (!user) {
          // The user was deleted between the password check and this transaction.
          if (!hash)
            throw new AppError(409, 'CONFLICT', `${inv.email} changed meanwhile: open the invitation again`);
          const sid = newSid('user');
          await client.query(
            `INSERT INTO users (sid, email, first_name, last_name, default_account_sid, password_hash)
             VALUES ($1, $2, $3, $4, $5, $6)`,
            [sid, inv.email, firstName, lastName, inv.account_sid, hash],
          );
          user = {
            sid,
            email: inv.email,
            first_name: firstName,
            last_name: lastName,
            password_hash: hash,
            default_account_sid: inv.account_sid,
          };
        } else if (user.sid !== prior?.sid) {
          // The user appeared between the password check and this transaction: nothing was checked.
          throw new AppError(409, 'CONFLICT', `${inv.email} changed meanwhile: open the invitation again`);
        }
        // An existing person joins one more account with the password they proved above; their
        // name and password stay as they are.
        await client.query(
          `INSERT INTO memberships (account_sid, user_sid, role) VALUES ($1, $2, $3)
           ON CONFLICT (account_sid, user_sid) DO NOTHING`,
          [inv.account_sid, user.sid, inv.role],
        );
        const s = await startSession(client, user.sid, inv.account_sid, cfg.sessionTtlDays);
        await client.query('COMMIT');
        return signedIn(req, reply, user, inv.account_sid, inv.role, s);
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
  );
}
