import { timingSafeEqual } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { bearerToken } from '../../shared/bearer.js';
import { hashToken, type Principal } from '../../shared/credentials.js';
import { AppError, forbidden, invalidToken, notFound } from '../../shared/errors.js';
import { SESSION_COOKIE } from '../auth/sessions.service.js';

/**
 * /v1 routes that take no credential: the API description, sign-in (password and single sign-on),
 * first run, invitations.
 * Matched against the route's pattern (`/v1/invites/:token`), never the raw URL.
 */
const PUBLIC = [
  /^\/v1\/openapi\.json$/,
  /^\/v1\/authentication\/signin$/,
  /^\/v1\/authentication\/methods$/,
  /^\/v1\/authentication\/oidc\/(start|callback)$/,
  /^\/v1\/setup$/,
  /^\/v1\/invites\//,
];
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/**
 * GET routes that change state. The spec makes sign-out a GET; carried by the cookie alone it would
 * let any page of the same site (`<img src=/v1/authentication/signout>`) sign the person out.
 */
const UNSAFE_GET = new Set(['/v1/authentication/signout']);

/**
 * Authentication for the whole /v1 tree in one hook (fastify/demo's autohooks). A Bearer token
 * wins; without one, the dashboard's session cookie is used, and a write (or sign-out) made with
 * the cookie must carry the session's CSRF token in `X-CSRF-Token` (the cookie alone proves nothing
 * about who made the page send it). MCP tokens are refused here: they only work on /mcp.
 */
export default fp(
  async (app: FastifyInstance) => {
    await app.register(fastifyCookie);
    app.decorateRequest('principal', null as unknown as Principal);
    app.addHook('onRequest', async (req: FastifyRequest) => {
      // NOTE: decided on the route the router matched. The router decodes `%XX` before matching,
      // so `/%761/…` reaches a `/v1/…` handler while its raw URL does not start with `/v1/`.
      // No matched route (undefined) is the not-found handler: nothing to protect.
      const route = req.routeOptions.url;
      if (route === undefined || !route.startsWith('/v1/') || PUBLIC.some((p) => p.test(route))) return;
      const bearer = bearerToken(req);
      const cookie = bearer ? undefined : req.cookies[SESSION_COOKIE];
      const token = bearer ?? cookie;
      if (!token) throw invalidToken();
      const principal = await app.deps.credentials.authenticate(token);
      if (!principal || principal.kind === 'mcpToken') throw invalidToken();
      const changes = UNSAFE.has(req.method) || UNSAFE_GET.has(route);
      if (cookie && (principal.kind !== 'session' || (changes && !csrfOk(req, principal))))
        throw new AppError(403, 'FORBIDDEN', 'Missing or invalid CSRF token', { reason: 'csrf' });
      req.principal = principal;
    });
  },
  { name: 'auth' },
);

function csrfOk(req: FastifyRequest, p: Principal): boolean {
  const given = req.headers['x-csrf-token'];
  if (typeof given !== 'string' || !given || !p.csrfHash) return false;
  const h = hashToken(given);
  return h.length === p.csrfHash.length && timingSafeEqual(h, p.csrfHash);
}

/** Marks the hooks requireScope makes, so the rate limiter can run them before it counts. */
const SCOPE_CHECK = Symbol('scopeCheck');

export function isScopeCheck(hook: unknown): boolean {
  return typeof hook === 'function' && SCOPE_CHECK in hook;
}

/**
 * Route hook: the caller needs `scope`; `/accounts/{accountSid}` must be the caller's own account.
 * Given as a route's `preHandler`; the rate limiter moves it ahead of its count (rate-limit.plugin.ts),
 * so a call refused here spends no quota.
 */
export function requireScope(scope: string): preHandlerAsyncHookHandler {
  return Object.assign(checkScope(scope), { [SCOPE_CHECK]: scope });
}

function checkScope(scope: string): preHandlerAsyncHookHandler {
  return async (req) => {
    // A handler reached without a principal (a route outside the /v1 tree) is refused, never a 500.
    if (!(req.principal as Principal | null)) throw invalidToken();
    const params = req.params as { accountSid?: string };
    // Another account is a 404, never a hint that it exists.
    if (params.accountSid !== undefined && params.accountSid !== req.principal.accountSid)
      throw notFound('Account');
    if (!req.principal.scopes.has(scope)) throw forbidden(scope);
  };
}
