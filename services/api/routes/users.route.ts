import type { FastifyInstance } from 'fastify';
import { accountParams } from '../../../schemas/common.schema.js';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { hashToken } from '../../shared/credentials.js';
import { AppError, notFound } from '../../shared/errors.js';
import { newSid, randomAlnum } from '../../shared/ids.js';
import { requireScope } from '../plugins/auth.plugin.js';

const INVITE_DAYS = 7;
const tags = ['users'];
const userParams = {
  type: 'object',
  required: ['accountSid', 'userSid'],
  properties: { accountSid: { type: 'string' }, userSid: { type: 'string', maxLength: 64 } },
} as const;

interface MemberRow {
  sid: string;
  email: string;
  first_name: string;
  last_name: string;
  role: string;
  status: 'active' | 'invited';
  created_at: Date;
  last_sign_in_at: Date | null;
}

const toMember = (r: MemberRow) => ({
  sid: r.sid,
  email: r.email,
  firstName: r.first_name,
  lastName: r.last_name,
  role: r.role,
  status: r.status,
  createdAt: r.created_at.toISOString(),
  lastSignInAt: r.last_sign_in_at?.toISOString() ?? null,
});

/**
 * Members of an account (people who sign in to the dashboard) and invitations. Only
 * administrators' sessions hold the `users:*` scopes (docs/auth.md, "Roles").
 */
export default async function usersRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const pool = app.deps.pg;
  const base = '/v1/accounts/:accountSid/users';

  const members = async (accountSid: string, userSid?: string) =>
    (
      await pool.query<MemberRow>(
        `SELECT * FROM (
           SELECT u.sid, u.email, u.first_name, u.last_name, m.role, 'active' AS status, m.created_at, u.last_sign_in_at
           FROM memberships m JOIN users u ON u.sid = m.user_sid WHERE m.account_sid = $1
           UNION ALL
           SELECT i.sid, i.email, i.first_name, i.last_name, i.role, 'invited', i.created_at, NULL
           FROM invites i WHERE i.account_sid = $1 AND i.accepted_at IS NULL AND i.expires_at > now()
         ) x WHERE $2::text IS NULL OR x.sid = $2 ORDER BY created_at`,
        [accountSid, userSid ?? null],
      )
    ).rows;

  /** Refuses a change that would leave the account without an administrator. */
  const keepOneAdmin = async (accountSid: string, userSid: string) => {
    const r = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM memberships WHERE account_sid = $1 AND role = 'administrator' AND user_sid <> $2`,
      [accountSid, userSid],
    );
    if ((r.rows[0]?.n ?? 0) === 0)
      throw new AppError(409, 'CONFLICT', 'An account keeps at least one administrator');
  };

  app.get(
    base,
    {
      preHandler: requireScope('users:read'),
      schema: { tags, params: accountParams, response: { 200: ref('memberList') } } as const,
    },
    async (req) => ({ hasMore: false, users: (await members(req.params.accountSid)).map(toMember) }),
  );

  app.post(
    base,
    {
      preHandler: requireScope('users:write'),
      schema: {
        tags,
        summary: 'Invite someone: the answer holds a one-time link that sets their password',
        params: accountParams,
        body: ref('inviteBody'),
        response: { 201: ref('inviteResult') },
      } as const,
    },
    async (req, reply) => {
      const a = req.params.accountSid;
      const email = req.body.email.trim();
      const member = await pool.query(
        `SELECT 1 FROM memberships m JOIN users u ON u.sid = m.user_sid
         WHERE m.account_sid = $1 AND lower(u.email) = lower($2)`,
        [a, email],
      );
      if (member.rowCount)
        throw new AppError(409, 'CONFLICT', `${email} is already a member of this account`);
      // A new invitation replaces an open one for the same address.
      await pool.query(
        'DELETE FROM invites WHERE account_sid = $1 AND lower(email) = lower($2) AND accepted_at IS NULL',
        [a, email],
      );
      const token = randomAlnum(40);
      const sid = newSid('invite');
      const expiresAt = new Date(Date.now() + INVITE_DAYS * 86_400_000);
      await pool.query(
        `INSERT INTO invites (sid, account_sid, email, first_name, last_name, role, token_hash, created_by, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          sid,
          a,
          email,
          req.body.firstName ?? '',
          req.body.lastName ?? '',
          req.body.role,
          hashToken(token),
          req.principal.userSid,
          expiresAt,
        ],
      );
      const origin =
        app.deps.cfg.publicUrl?.replace(/\/$/, '') ?? `${req.protocol}://${req.headers.host ?? 'localhost'}`;
      const [row] = await members(a, sid);
      return reply.status(201).send({
        user: toMember(row!),
        inviteUrl: `${origin}/invite/${token}`,
        inviteToken: token,
        expiresAt: expiresAt.toISOString(),
      });
    },
  );

  app.put(
    `${base}/:userSid`,
    {
      preHandler: requireScope('users:write'),
      schema: {
        tags,
        params: userParams,
        body: ref('memberUpdate'),
        response: { 200: ref('member') },
      } as const,
    },
    async (req) => {
      const { accountSid: a, userSid } = req.params;
      const [row] = await members(a, userSid);
      if (!row) throw notFound('User');
      if (row.status === 'invited') {
        await pool.query('UPDATE invites SET role = $3 WHERE sid = $1 AND account_sid = $2', [
          userSid,
          a,
          req.body.role,
        ]);
      } else {
        if (row.role === 'administrator' && req.body.role !== 'administrator') await keepOneAdmin(a, userSid);
        await pool.query('UPDATE memberships SET role = $3 WHERE account_sid = $1 AND user_sid = $2', [
          a,
          userSid,
          req.body.role,
        ]);
      }
      app.deps.credentials.invalidate({ table: 'memberships', accountSid: a, userSid });
      const [after] = await members(a, userSid);
      return toMember(after!);
    },
  );

  app.delete(
    `${base}/:userSid`,
    {
      preHandler: requireScope('users:delete'),
      schema: { tags, params: userParams, response: { 200: ref('deleted') } } as const,
    },
    async (req) => {
      const { accountSid: a, userSid } = req.params;
      const [row] = await members(a, userSid);
      if (!row) throw notFound('User');
      if (row.status === 'invited') {
        await pool.query('DELETE FROM invites WHERE sid = $1 AND account_sid = $2', [userSid, a]);
      } else {
        if (row.role === 'administrator') await keepOneAdmin(a, userSid);
        await pool.query('DELETE FROM memberships WHERE account_sid = $1 AND user_sid = $2', [a, userSid]);
        await pool.query(
          'UPDATE sessions SET ended_at = now() WHERE account_sid = $1 AND user_sid = $2 AND ended_at IS NULL',
          [a, userSid],
        );
      }
      app.deps.credentials.invalidate({ table: 'memberships', accountSid: a, userSid });
      return { sid: userSid, deleted: true };
    },
  );
}
