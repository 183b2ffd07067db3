import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validation } from '../shared/errors.js';
import { depthError } from '../shared/json-depth.js';
import { createHttpServer } from '../shared/http-server.js';
import { registerMetrics } from '../shared/metrics.js';
import type { ApiDeps } from './api.types.js';
import authPlugin from './plugins/auth.plugin.js';
import openapiPlugin from './plugins/openapi.plugin.js';
import rateLimitPlugin from './plugins/rate-limit.plugin.js';
import webPlugin from './plugins/web.plugin.js';
import { ROUTES } from './routes/index.js';

/**
 * The API as a plugin tree (fastify/demo): shared schemas, then the app's own plugins (auth),
 * then routes. `server.ts`-style listening happens in main.ts.
 */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const app = createHttpServer({
    log: deps.log,
    bodyLimit: 1024 * 1024,
    tls: deps.cfg.tls,
    hstsMaxAge: deps.cfg.hstsMaxAge,
    timeouts: {
      requestMs: deps.cfg.limits.httpRequestTimeoutMs,
      connectionMs: deps.cfg.limits.httpConnectionTimeoutMs,
    },
  });
  app.decorate('deps', deps);
  // Many HTTP clients send `Content-Type: application/json` on every request, a DELETE without a
  // body too; Fastify's parser refuses such an empty body (FST_ERR_CTP_EMPTY_JSON_BODY). An empty
  // body is read as no body (a route that needs one still answers its schema's 400); any other
  // body goes through Fastify's own parser, prototype-poisoning checks included. Its refusal of a
  // `__proto__` (or `constructor.prototype`) key reads "not valid JSON"; such a body is valid JSON,
  // so the answer names the key instead.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (text === '') {
      done(null, undefined);
      return;
    }
    json(req, text, (err, parsed) => {
      if (err && /"(?:__proto__|constructor)"/.test(text) && isJson(text)) {
        done(
          validation('Body contains a forbidden key (__proto__, or constructor.prototype)', {
            body: 'must not contain a __proto__ or constructor.prototype key',
          }),
          undefined,
        );
        return;
      }
      // The body's nesting is bounded here, once for every route (docs/security.md "Limits").
      const deep = err ? null : depthError(parsed, 'The body', 'body');
      if (deep) done(deep, undefined);
      else done(err, parsed);
    });
  });

  // Every /v1 answer is an account's data, and some carry credentials (sign-in, new tokens,
  // invitations): no browser, proxy or CDN may keep a copy. A route that sets its own policy (the
  // live tail's `no-cache`) keeps it. Decided on the path as the router reads it, so an encoded
  // spelling (`/%761/…`) is covered too.
  app.addHook('onSend', async (req, reply) => {
    if (isV1(req) && !reply.hasHeader('cache-control')) void reply.header('cache-control', 'no-store');
  });

  const stats = processStats();
  app.addHook('onClose', async () => stats.stop());
  app.get('/healthz', { schema: { hide: true, response: { 200: HEALTH_RESPONSE } } }, async () => ({
    status: 'ok',
    ...stats.read(),
  }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const checks = await deps.ready();
    const ok = Object.values(checks).every(Boolean);
    return reply.status(ok ? 200 : 503).send({ status: ok ? 'ready' : 'unavailable', checks });
  });
  // GET /metrics (Prometheus) and the request latency histogram (docs/operations.md).
  registerMetrics(app, deps.cfg, 'api');

  await app.register(authPlugin);
  await app.register(rateLimitPlugin);
  await app.register(openapiPlugin);
  for (const r of ROUTES) await app.register(r.plugin, r.opts ?? {});
  await app.register(webPlugin);
  return app;
}

const DELAY = {
  type: 'object',
  required: ['p50', 'p99', 'max'],
  properties: { p50: { type: 'number' }, p99: { type: 'number' }, max: { type: 'number' } },
} as const;

const HEALTH_RESPONSE = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string' },
    rssBytes: { type: 'integer' },
    heapUsedBytes: { type: 'integer' },
    uptimeSeconds: { type: 'number' },
    eventLoopDelayMs: DELAY,
    eventLoopDelaySinceStartMs: DELAY,
    eventLoopWindowSeconds: { type: 'integer' },
  },
} as const;

/** Length of the event-loop delay window /healthz reports (docs/reliability.md). */
const WINDOW_MS = 10_000;
const RESOLUTION_MS = 10;

/**
 * Process figures for /healthz (soak runs, dashboards). Event-loop delay comes from
 * monitorEventLoopDelay in two histograms: one since start, one over tumbling 10 s windows, of
 * which the last completed one is reported. NOTE: nothing is reset by a read, so several pollers
 * never disturb each other's figures (the first 10 s report the window in progress).
 * NOTE: the histograms record whole timer intervals (resolution + delay); the resolution is
 * subtracted, as @fastify/under-pressure does, so an idle loop reports ~0 ms.
 */
function processStats(): { read: () => Record<string, unknown>; stop: () => void } {
  const sinceStart = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  const window = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  sinceStart.enable();
  window.enable();
  const ms = (ns: number) =>
    Number.isFinite(ns) ? Math.max(0, Math.round((ns / 1e6 - RESOLUTION_MS) * 100) / 100) : 0;
  const summary = (h: IntervalHistogram) =>
    h.count === 0
      ? { p50: 0, p99: 0, max: 0 }
      : { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) };
  let last: ReturnType<typeof summary> | undefined;
  const timer = setInterval(() => {
    last = summary(window);
    window.reset();
  }, WINDOW_MS);
  timer.unref();
  return {
    read: () => {
      const mem = process.memoryUsage();
      return {
        rssBytes: mem.rss,
        heapUsedBytes: mem.heapUsed,
        uptimeSeconds: Math.round(process.uptime() * 10) / 10,
        eventLoopDelayMs: last ?? summary(window),
        eventLoopDelaySinceStartMs: summary(sinceStart),
        eventLoopWindowSeconds: WINDOW_MS / 1000,
      };
    },
    stop: () => {
      clearInterval(timer);
      sinceStart.disable();
      window.disable();
    },
  };
}

/**
 * Whether a request is for the /v1 tree: the route the router matched (it decodes `%XX` before
 * matching), or, when none matched (404, 405), the decoded path. A path that cannot be decoded
 * counts as /v1: its answer is an error envelope, which no one needs to cache.
 */
function isV1(req: FastifyRequest): boolean {
  const route = req.routeOptions.url;
  if (route !== undefined) return route.startsWith('/v1/');
  const path = req.url.split('?')[0] ?? '';
  try {
    return decodeURIComponent(path).startsWith('/v1/');
  } catch {
    return true;
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
