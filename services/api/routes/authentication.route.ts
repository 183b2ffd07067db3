import { createHmac } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../shared/errors.js';

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

export default async function authenticationRoutes(app: FastifyInstance): Promise<void> {
  const pool = app.deps.pg;
  // Per-process key for the chat widget's user hash (HMAC of the user sid).
  const chatKey = app.deps.cfg.nodeEnv + ':tapline-chat';

  app.get(
    '/v1/authentication/me',
    { schema: { tags: ['authentication'], response: { 200: profileSchema } } },
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
      const accounts = await pool.query<{ sid: string; name: string; role: string }>(
        `SELECT a.sid, a.name, m.role FROM memberships m JOIN accounts a ON a.sid = m.account_sid
         WHERE m.user_sid = $1 ORDER BY m.created_at`,
        [userSid],
      );
      return {
        sid: u.sid,
        firstName: u.first_name,
        lastName: u.last_name,
        email: u.email,
        timezone: u.timezone,
        defaultAccountSid: u.default_account_sid,
        createdAt: u.created_at.toISOString(),
        accounts: accounts.rows,
        chat: { userHash: createHmac('sha256', chatKey).update(u.sid).digest('hex') },
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
      },
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
      },
    },
    async (req) => {
      const p = req.principal;
      // Only a user session can be signed out; an API token is revoked through its own endpoints.
      if (p.kind !== 'session') return { success: false };
      await pool.query('UPDATE sessions SET ended_at = now() WHERE sid = $1 AND ended_at IS NULL', [
        p.credentialSid,
      ]);
      app.deps.credentials.invalidate();
      return { success: true };
    },
  );
}
