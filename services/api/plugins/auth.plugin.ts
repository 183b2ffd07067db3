import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { bearerToken } from '../../shared/bearer.js';
import { forbidden, invalidToken, notFound } from '../../shared/errors.js';
import type { Principal } from '../../shared/credentials.js';

/**
 * Authentication for the whole /v1 tree in one hook (fastify/demo's autohooks). MCP tokens are
 * refused here: they only work on /mcp.
 */
export default fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('principal', null as unknown as Principal);
    app.addHook('onRequest', async (req: FastifyRequest) => {
      if (!req.url.startsWith('/v1/') || req.url.startsWith('/v1/openapi.json')) return;
      const token = bearerToken(req);
      if (!token) throw invalidToken();
      const principal = await app.deps.credentials.authenticate(token);
      if (!principal || principal.kind === 'mcpToken') throw invalidToken();
      req.principal = principal;
    });
  },
  { name: 'auth' },
);

/** preHandler: the caller needs `scope`; `/accounts/{accountSid}` must be the caller's own account. */
export function requireScope(scope: string): preHandlerAsyncHookHandler {
  return async (req) => {
    const params = req.params as { accountSid?: string };
    // Another account is a 404, never a hint that it exists.
    if (params.accountSid !== undefined && params.accountSid !== req.principal.accountSid)
      throw notFound('Account');
    if (!req.principal.scopes.has(scope)) throw forbidden(scope);
  };
}
