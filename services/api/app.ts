import type { FastifyInstance } from 'fastify';
import { createHttpServer } from '../shared/http-server.js';
import type { ApiDeps } from './api.types.js';
import authPlugin from './plugins/auth.plugin.js';
import openapiPlugin from './plugins/openapi.plugin.js';
import rateLimitPlugin from './plugins/rate-limit.plugin.js';
import { ROUTES } from './routes/index.js';

/**
 * The API as a plugin tree (fastify/demo): shared schemas, then the app's own plugins (auth),
 * then routes. `server.ts`-style listening happens in main.ts.
 */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const app = createHttpServer({ log: deps.log, bodyLimit: 1024 * 1024 });
  app.decorate('deps', deps);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const checks = await deps.ready();
    const ok = Object.values(checks).every(Boolean);
    return reply.status(ok ? 200 : 503).send({ status: ok ? 'ready' : 'unavailable', checks });
  });

  await app.register(authPlugin);
  await app.register(rateLimitPlugin);
  await app.register(openapiPlugin);
  for (const r of ROUTES) await app.register(r.plugin, r.opts ?? {});
  return app;
}
