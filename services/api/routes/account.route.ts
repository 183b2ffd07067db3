import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ref } from '../../../schemas/index.js';
import type { SchemaTypes } from '../api.types.js';
import type { ACCOUNT_PLANS } from '../../../schemas/account.schema.js';
import { accountParams } from '../../../schemas/common.schema.js';
import { notFound } from '../../shared/errors.js';
import { TABLES } from '../../shared/tables.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { planLimit, RATE_WINDOW_MS } from '../plugins/rate-limit.plugin.js';
import { readWindow } from '../plugins/postgres-rate-store.js';

type Plan = (typeof ACCOUNT_PLANS)[number];
interface Row {
  sid: string;
  name: string;
  plan: Plan;
  rate_limit: number | null;
  created_at: Date;
}

const header = (reply: FastifyReply, name: string): number | null => {
  const v = Number(reply.getHeader(name));
  return Number.isFinite(v) && reply.hasHeader(name) ? v : null;
};

/**
 * Designed endpoints (not in the spec): the caller's account for the dashboard's account page
 * (docs/auth.md, "The account"). Reading needs `metrics:read` (the rate-limit use and the
 * environments seen are usage figures every member may see); renaming needs `users:write`, which
 * only an administrator's session holds.
 */
export default async function accountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const { pg, ch, cfg } = app.deps;

  /**
   * The account's plan window. For an API token the rate-limit hook ran before this handler and
   * wrote it to the reply. A dashboard session counts in its person's own window, not the plan's,
   * so the account's window is read from the store, uncounted.
   */
  async function accountWindow(row: Row, req: FastifyRequest, reply: FastifyReply) {
    const plan = planLimit(row.plan, row.rate_limit, cfg.rateLimits);
    const windowSeconds = RATE_WINDOW_MS / 1000;
    if (req.principal.kind === 'session') {
      const w = await readWindow(pg, row.sid, RATE_WINDOW_MS);
      return { limit: plan, windowSeconds, used: w.used, resetAt: w.resetAt?.toISOString() ?? null };
    }
    const limit = header(reply, 'X-RateLimit-Limit') ?? plan;
    const remaining = header(reply, 'X-RateLimit-Remaining');
    const reset = header(reply, 'X-RateLimit-Reset');
    return {
      limit,
      windowSeconds,
      used: remaining === null ? 0 : Math.max(0, limit - remaining),
      resetAt: reset === null ? null : new Date(reset * 1000).toISOString(),
    };
  }

  async function load(accountSid: string, req: FastifyRequest, reply: FastifyReply) {
    const r = await pg.query<Row>(
      'SELECT sid, name, plan, rate_limit, created_at FROM accounts WHERE sid = $1',
      [accountSid],
    );
    const row = r.rows[0];
    if (!row) throw notFound('Account');
    const rateLimit = await accountWindow(row, req, reply);
    const rs = await ch.query({
      query: `SELECT environment_sid AS sid,
                     formatDateTime(max(minute), '%Y-%m-%dT%H:%i:00.000Z', 'UTC') AS lastSeenAt,
                     toInt64(sum(requests)) AS count
              FROM ${TABLES.requestsMinute}
              WHERE account_sid = {a:String} AND environment_sid != ''
              GROUP BY environment_sid
              HAVING count > 0
              ORDER BY max(minute) DESC, sid
              LIMIT 100`,
      query_params: { a: accountSid },
      format: 'JSONEachRow',
    });
    const envs = await rs.json<{ sid: string; lastSeenAt: string; count: number | string }>();
    return {
      sid: row.sid,
      name: row.name,
      plan: row.plan,
      createdAt: row.created_at.toISOString(),
      rateLimit,
      environments: envs.map((e) => ({ sid: e.sid, lastSeenAt: e.lastSeenAt, count: Number(e.count) })),
    };
  }

  app.get(
    '/v1/accounts/:accountSid',
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags: ['account'],
        summary: 'Get the account: name, plan, rate limit and its use, environments seen',
        params: accountParams,
        response: { 200: ref('account') },
      } as const,
    },
    async (req, reply) => load(req.params.accountSid, req, reply),
  );

  app.put(
    '/v1/accounts/:accountSid',
    {
      preHandler: requireScope('users:write'),
      schema: {
        tags: ['account'],
        summary: 'Rename the account (administrators)',
        params: accountParams,
        body: ref('accountUpdate'),
        response: { 200: ref('account') },
      } as const,
    },
    async (req, reply) => {
      await pg.query('UPDATE accounts SET name = $2 WHERE sid = $1', [
        req.params.accountSid,
        req.body.name.trim(),
      ]);
      return load(req.params.accountSid, req, reply);
    },
  );
}
