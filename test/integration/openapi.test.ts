import SwaggerParser from '@apidevtools/swagger-parser';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../services/api/app.js';
import type { InventoryRoute } from '../../services/api/plugins/openapi.plugin.js';
import { createClickHouse } from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { CredentialStore } from '../../services/shared/credentials.js';
import { api, testPool } from '../helpers/client.js';

interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
  components: {
    schemas: Record<string, unknown>;
    securitySchemes: Record<string, { type: string; in?: string; name?: string }>;
  };
  security: Record<string, unknown[]>[];
}

/**
 * Every route the API registers, as Fastify saw it. The app is built in this process only to
 * list its routes: it never listens, and its ClickHouse client (HTTP, never called) does not
 * touch the running service's chDB directory.
 */
async function registeredRoutes(): Promise<InventoryRoute[]> {
  const cfg = parseConfig({ CLICKHOUSE_URL: 'http://127.0.0.1:9', DEMO_ACCOUNT: 'false' });
  const log = pino({ level: 'silent' });
  const app = await buildApp({
    cfg,
    log,
    pg: testPool(),
    ch: createClickHouse(cfg.clickhouse),
    credentials: new CredentialStore(testPool(), log),
    ready: async () => ({}),
  });
  try {
    await app.ready();
    return [...app.routeInventory];
  } finally {
    await app.close();
  }
}

describe('OpenAPI document', () => {
  it('is served without a token, validates as OpenAPI 3.0 and carries version 2.0.1', async () => {
    const res = await api().get<OpenApiDoc>('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const doc = res.body;
    expect(doc.openapi).toBe('3.0.0');
    expect(doc.info.version).toBe('2.0.1');
    expect(doc.components.securitySchemes.bearer).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
    });
    expect(doc.security).toEqual([{ bearer: [] }]);

    // Throws on an invalid document or a `$ref` that does not resolve.
    const validated = (await SwaggerParser.validate(structuredClone(doc) as never)) as unknown as OpenApiDoc;
    expect(validated.info.version).toBe('2.0.1');

    // Shared schemas are components named by their `$id`, referenced from the operations.
    const tokens = doc.paths['/v1/accounts/{accountSid}/apiTokens'];
    expect(tokens?.post?.responses['201']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/apiToken' } } },
    });
    expect(tokens?.get?.responses['429']).toEqual({ $ref: '#/components/responses/error429' });
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['apiToken', 'mcpToken', 'bucket', 'error', 'deleted']),
    );
    expect(doc.paths['/v1/openapi.json']?.get?.security).toEqual([]);
  });

  it('lists every registered /v1 route and no hidden one', async () => {
    const doc = (await api().get<OpenApiDoc>('/v1/openapi.json')).body;
    const routes = await registeredRoutes();
    const v1 = routes.filter((r) => r.url.startsWith('/v1/') && r.method !== 'HEAD' && !r.hidden);
    // The token routes of this change at least; later routes are checked the same way.
    expect(v1.length).toBeGreaterThanOrEqual(12);
    const missing = v1
      .map((r) => ({ method: r.method.toLowerCase(), path: r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}') }))
      .filter(({ method, path }) => !doc.paths[path]?.[method])
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(missing).toEqual([]);

    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented).toEqual(
      expect.arrayContaining([
        'GET /v1/accounts/{accountSid}/apiTokens',
        'POST /v1/accounts/{accountSid}/apiTokens',
        'GET /v1/accounts/{accountSid}/apiTokens/{apiTokenSid}',
        'PUT /v1/accounts/{accountSid}/apiTokens/{apiTokenSid}',
        'DELETE /v1/accounts/{accountSid}/apiTokens/{apiTokenSid}',
        'GET /v1/accounts/{accountSid}/mcpTokens',
        'POST /v1/accounts/{accountSid}/mcpTokens',
        'GET /v1/accounts/{accountSid}/mcpTokens/{mcpTokenSid}',
        'PUT /v1/accounts/{accountSid}/mcpTokens/{mcpTokenSid}',
        'DELETE /v1/accounts/{accountSid}/mcpTokens/{mcpTokenSid}',
      ]),
    );
    expect(doc.paths['/healthz']).toBeUndefined();

    // Scopes are enforced everywhere: every /v1 route but sign-in state, the credential-free ones
    // (first run, invitations) and this document has a route-level preHandler, where requireScope sits.
    const credentialFree = (url: string) => url === '/v1/setup' || url.startsWith('/v1/invites/');
    const unguarded = v1
      .filter(
        (r) =>
          !r.guarded &&
          !r.url.startsWith('/v1/authentication/') &&
          r.url !== '/v1/openapi.json' &&
          !credentialFree(r.url),
      )
      .map((r) => `${r.method} ${r.url}`);
    expect(unguarded).toEqual([]);
    expect(doc.paths['/readyz']).toBeUndefined();
  });
});
