import fp from 'fastify-plugin';
import rateLimit, { type CreateRateLimitOptions } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { Config } from '../../shared/config.js';
import type { Principal } from '../../shared/credentials.js';
import { bearerToken } from '../../shared/bearer.js';
import { AppError } from '../../shared/errors.js';
import { setUnmatchedHook } from '../../shared/http-errors.js';
import { postgresRateStore } from './postgres-rate-store.js';

/** Spec 8 counts requests per hour. */
export const RATE_WINDOW_MS = 3_600_000;
/** A plan change reaches the limiter within this long. */
const PLAN_CACHE_MS = 60_000;

type Plan = 'standard' | 'pro' | 'enterprise';

/** Requests per hour of an account: its plan's limit; enterprise accounts may carry their own. */
export function planLimit(plan: Plan, customLimit: number | null, limits: Config['rateLimits']): number {
  if (plan === 'pro') return limits.pro;
  if (plan === 'enterprise') return customLimit ?? limits.enterprise;
  return limits.standard;
}

class PlanLimits {
  private cache = new Map<string, { limit: number; until: number }>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly limits: Config['rateLimits'],
  ) {}

  async limitOf(accountSid: string): Promise<number> {
    const now = Date.now();
    const hit = this.cache.get(accountSid);
    if (hit && hit.until > now) return hit.limit;
    const r = await this.pool.query<{ plan: Plan; rate_limit: number | null }>(
      'SELECT plan, rate_limit FROM accounts WHERE sid = $1',
      [accountSid],
    );
    const row = r.rows[0];
    const limit = row ? planLimit(row.plan, row.rate_limit, this.limits) : this.limits.standard;
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(accountSid, { limit, until: now + PLAN_CACHE_MS });
    return limit;
  }
}

/**
 * Per-account request rate of the management API (spec 8), counted by @fastify/rate-limit in
 * fixed one-hour windows that start at an account's first request. The counters live in Postgres
 * (postgres-rate-store.ts) so that every API replica counts against the same limit.
 *
 * NOTE: the plugin's own headers cannot be used: its `X-RateLimit-Reset` is seconds *until*
 * the reset, the spec wants the reset time as a Unix timestamp. So the plugin only counts
 * (`createRateLimit`) and this hook writes the headers. It must run after the auth hook: the
 * key is the caller's account, and requests that fail authentication are not counted.
 */
export default fp(
  async (app: FastifyInstance) => {
    await app.register(rateLimit, { global: false, store: postgresRateStore(app.deps.pg) });
    const plans = new PlanLimits(app.deps.pg, app.deps.cfg.rateLimits);
    const check = app.createRateLimit({
      timeWindow: RATE_WINDOW_MS,
      keyGenerator: (req) => (req.principal as Principal | null)?.accountSid ?? '',
      max: (_req, accountSid) => plans.limitOf(accountSid),
    } as CreateRateLimitOptions);

    const limit = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const r = await check(req);
      if (r.isAllowed) return;
      const resetAt = Math.ceil((Date.now() + r.ttl) / 1000);
      void reply.header('X-RateLimit-Limit', r.max);
      void reply.header('X-RateLimit-Remaining', r.remaining);
      void reply.header('X-RateLimit-Reset', resetAt);
      if (r.isExceeded) {
        void reply.header('Retry-After', Math.max(1, r.ttlInSeconds));
        throw new AppError(429, 'RATE_LIMIT_EXCEEDED', `Rate limit of ${r.max} requests per hour exceeded`, {
          limit: r.max,
          resetAt: new Date(resetAt * 1000).toISOString(),
        });
      }
    };

    app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      // Only authenticated /v1 requests (the auth hook set a principal); /mcp, /healthz and the
      // OpenAPI document are not counted, nor is the ingest listener (a separate server).
      if (!(req.principal as Principal | null)) return;
      await limit(req, reply);
    });
    // A /v1 path no route matches (404, or 405 for another method) with a valid bearer token is
    // counted and answered with the headers too. No route means nothing to authorise, so an
    // invalid token there still gets the 404 or 405, without headers.
    setUnmatchedHook(app, async (req, reply) => {
      if (!req.url.startsWith('/v1/') || (req.principal as Principal | null)) return;
      const token = bearerToken(req);
      const principal = token ? await app.deps.credentials.authenticate(token) : null;
      if (!principal) return;
      req.principal = principal;
      await limit(req, reply);
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
