import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { AppError, notFound } from '../../shared/errors.js';
import { IMPLIED_BY } from '../../shared/scope-grants.js';
import { chatUserHash } from '../../shared/secret-box.js';
import { clearSessionCookies } from '../auth/sessions.service.js';

const profileSchema = {
  type: 'object',
  required: [
    'sid',
    'firstName',
    'lastName',
    'email',
    'timezone',
    'defaultAccountSid',
    'createdAt',
    'accounts',
    'chat',
  ],
  properties: {
    sid: { type: 'string' },
    firstName: { type: 'string' },
    lastName: { type: 'string' },
    email: { type: 'string' },
    timezone: { type: 'string' },
    defaultAccountSid: { type: ['string', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    accounts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['sid', 'name', 'role'],
        properties: { sid: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' } },
      },
    },
    chat: { type: 'object', required: ['userHash'], properties: { userHash: { type: 'string' } } },
  },
} as const;

export default async function authenticationRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const pool = app.deps.pg;
  const cfg = app.deps.cfg;

  app.get(
    '/v1/authentication/me',
    {
      schema: {
        tags: ['authentication'],
        summary: "The caller's profile",
        description:
          "A session: the user and every account they are a member of. An API token: the account's " +
          'first administrator, with only the token’s own account in `accounts`.',
        response: { 200: profileSchema },
      } as const,
    },
    async (req) => {
      const p = req.principal;
      // An API token has no user of its own: it answers with the account's first administrator.
      const userSid =
        p.userSid ??
        (
          await pool.query<{ user_sid: string }>(
            `SELECT user_sid FROM memberships WHERE account_sid = $1 ORDER BY (role = 'administrator') DESC, created_at LIMIT 1`,
            [p.accountSid],
          )
        ).rows[0]?.user_sid;
      if (!userSid) throw notFound('User');
      const u = (
        await pool.query<{
          sid: string;
          first_name: string;
          last_name: string;
          email: string;
          timezone: string;
          default_account_sid: string | null;
          created_at: Date;
        }>('SELECT * FROM users WHERE sid = $1', [userSid])
      ).rows[0];
      if (!u) throw notFound('User');
      // A session lists the user's own memberships (the dashboard's account switcher); any other
      // credential belongs to one account and sees only that one, never the user's others.
      const own = p.kind === 'session';
      const accounts = await pool.query<{ sid: string; name: string; role: string }>(
        `SELECT a.sid, a.name, m.role FROM memberships m JOIN accounts a ON a.sid = m.account_sid
         WHERE m.user_sid = $1 AND ($2 OR m.account_sid = $3) ORDER BY m.created_at`,
        [userSid, own, p.accountSid],
      );
      return {
        sid: u.sid,
        firstName: u.first_name,
        lastName: u.last_name,
        email: u.email,
        timezone: u.timezone,
        defaultAccountSid: own ? u.default_account_sid : p.accountSid,
        createdAt: u.created_at.toISOString(),
        accounts: accounts.rows,
        // HMAC-SHA256 of the user sid with CHAT_HASH_KEY (or a key derived from the secrets key).
        chat: { userHash: chatUserHash(cfg, u.sid) },
      };
    },
  );

  app.get(
    '/v1/authentication/verify',
    {
      schema: {
        tags: ['authentication'],
        response: {
          200: { type: 'object', required: ['accountSid'], properties: { accountSid: { type: 'string' } } },
        },
      } as const,
    },
    async (req) => ({ accountSid: req.principal.accountSid }),
  );

  app.get(
    '/v1/authentication/signout',
    {
      schema: {
        tags: ['authentication'],
        response: {
          200: { type: 'object', required: ['success'], properties: { success: { type: 'boolean' } } },
        },
      } as const,
    },
    async (req, reply) => {
      const p = req.principal;
      // Only a user session can be signed out; an API token is revoked through its own endpoints.
      if (p.kind !== 'session') return { success: false };
      clearSessionCookies(req, reply);
      await pool.query('UPDATE sessions SET ended_at = now() WHERE sid = $1 AND ended_at IS NULL', [
        p.credentialSid,
      ]);
      app.deps.credentials.invalidate({ table: 'sessions', sid: p.credentialSid });
      return { success: true };
    },
  );

  app.get(
    '/v1/authentication/session',
    {
      schema: {
        tags: ['authentication'],
        summary:
          "The caller's credential: account, role, scopes, expiry and user (the dashboard's first call)",
        response: { 200: ref('sessionInfo') },
      } as const,
    },
    async (req) => {
      const p = req.principal;
      const user = p.userSid
        ? (
            await pool.query<{ sid: string; email: string; first_name: string; last_name: string }>(
              'SELECT sid, email, first_name, last_name FROM users WHERE sid = $1',
              [p.userSid],
            )
          ).rows[0]
        : undefined;
      const expires =
        p.kind === 'session'
          ? ((
              await pool.query<{ expires_at: Date | null }>(
                'SELECT expires_at FROM sessions WHERE sid = $1',
                [p.credentialSid],
              )
            ).rows[0]?.expires_at ?? null)
          : null;
      const scopes = [...p.scopes].sort();
      // The role is read from the scopes the token was given, not the finer ones they imply
      // (an ingest token's requests:write also grants streamViews:write, scope-grants.ts).
      const given = scopes.filter((s) => !(IMPLIED_BY[s] ?? []).some((g) => p.scopes.has(g)));
      return {
        kind: p.kind === 'session' ? ('session' as const) : ('apiToken' as const),
        accountSid: p.accountSid,
        role:
          p.role ??
          (p.kind === 'apiToken' && given.length === 1 && given[0] === 'requests:write'
            ? 'ingest'
            : p.scopes.has('tokens:write') && p.scopes.has('buckets:delete')
              ? 'administrator'
              : 'user'),
        scopes,
        expiresAt: expires ? expires.toISOString() : null,
        user: user
          ? { sid: user.sid, email: user.email, firstName: user.first_name, lastName: user.last_name }
          : null,
      };
    },
  );

  app.post(
    '/v1/authentication/account',
    {
      schema: {
        tags: ['authentication'],
        summary: 'Switch the session to another account the user is a member of',
        body: {
          type: 'object',
          required: ['accountSid'],
          additionalProperties: false,
          properties: { accountSid: { type: 'string', minLength: 1, maxLength: 64 } },
        },
        response: {
          200: {
            type: 'object',
            required: ['accountSid', 'role'],
            properties: { accountSid: { type: 'string' }, role: { type: 'string' } },
          },
        },
      } as const,
    },
    async (req) => {
      const p = req.principal;
      if (p.kind !== 'session' || !p.userSid)
        throw new AppError(400, 'VALIDATION_ERROR', 'Only a dashboard session can switch accounts');
      const m = await pool.query<{ role: string }>(
        'SELECT role FROM memberships WHERE account_sid = $1 AND user_sid = $2',
        [req.body.accountSid, p.userSid],
      );
      const role = m.rows[0]?.role;
      if (!role) throw notFound('Account');
      await pool.query('UPDATE sessions SET account_sid = $2 WHERE sid = $1', [
        p.credentialSid,
        req.body.accountSid,
      ]);
      app.deps.credentials.invalidate({ table: 'sessions', sid: p.credentialSid });
      return { accountSid: req.body.accountSid, role };
    },
  );
}
