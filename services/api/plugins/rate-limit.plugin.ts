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
import { isScopeCheck } from './auth.plugin.js';

/** The interface (docs/auth.md) counts requests per hour. */
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
 * Request rate of the management API, counted by @fastify/rate-limit in fixed one-hour windows
 * that start at a key's first request. API tokens count per account against the plan's limit (spec
 * 8); a signed-in person's dashboard calls count per person against SESSION_RATE_LIMIT, apart from
 * the plan's quota (docs/security.md "What counts toward the quota"). The counters live in Postgres
 * (postgres-rate-store.ts) so that every API replica counts against the same limit.
 *
 * NOTE: the plugin's own headers cannot be used: its `X-RateLimit-Reset` is seconds *until*
 * the reset, the spec wants the reset time as a Unix timestamp. So the plugin only counts
 * (`createRateLimit`) and this hook writes the headers. A call is counted after authentication
 * (the auth hook) and after the route's scope check: a call refused with 401 or 403 spends nothing.
 */
/** The one /v1 route that is not counted (see the onRoute hook). */
const SIGN_OUT = '/v1/authentication/signout';

export default fp(
  async (app: FastifyInstance) => {
    await app.register(rateLimit, { global: false, store: postgresRateStore(app.deps.pg) });
    const plans = new PlanLimits(app.deps.pg, app.deps.cfg.rateLimits);
    const perAccount = app.createRateLimit({
      timeWindow: RATE_WINDOW_MS,
      keyGenerator: (req) => (req.principal as Principal | null)?.accountSid ?? '',
      max: (_req, accountSid) => plans.limitOf(accountSid),
    } as CreateRateLimitOptions);
    const perPerson = app.createRateLimit({
      timeWindow: RATE_WINDOW_MS,
      keyGenerator: (req) => `user:${(req.principal as Principal | null)?.userSid ?? ''}`,
      max: app.deps.cfg.rateLimits.session,
    } as CreateRateLimitOptions);

    const limit = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const session = req.principal.kind === 'session';
      const r = await (session ? perPerson : perAccount)(req);
      if (r.isAllowed) return;
      const resetAt = Math.ceil((Date.now() + r.ttl) / 1000);
      void reply.header('X-RateLimit-Limit', r.max);
      void reply.header('X-RateLimit-Remaining', r.remaining);
      void reply.header('X-RateLimit-Reset', resetAt);
      if (r.isExceeded) {
        void reply.header('Retry-After', Math.max(1, r.ttlInSeconds));
        throw new AppError(
          429,
          'RATE_LIMIT_EXCEEDED',
          session
            ? `Rate limit of ${r.max} dashboard requests per hour exceeded for this person`
            : `Rate limit of ${r.max} requests per hour exceeded`,
          {
            limit: r.max,
            resetAt: new Date(resetAt * 1000).toISOString(),
            per: session ? 'person' : 'account',
          },
        );
      }
    };

    // Only authenticated /v1 requests (the auth hook set a principal); /mcp, /healthz and the
    // OpenAPI document are not counted, nor is the ingest listener (a separate server).
    const count = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
      if (!(req.principal as Principal | null)) return;
      await limit(req, reply);
    };
    // Every /v1 route counts in preValidation, after its scope check, which moves there from
    // preHandler: refused for scope = not counted; refused by validation (400) = counted.
    app.addHook('onRoute', (route) => {
      // Signing out is never refused for the rate limit: a person past their bound can still end
      // the session.
      if (!route.url.startsWith('/v1/') || route.url === SIGN_OUT) return;
      const validation = [route.preValidation ?? []].flat();
      // A HEAD route copies its GET route's options: already arranged.
      if (validation.includes(count)) return;
      const handlers = [route.preHandler ?? []].flat();
      route.preHandler = handlers.filter((h) => !isScopeCheck(h));
      route.preValidation = [...handlers.filter(isScopeCheck), count, ...validation];
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
