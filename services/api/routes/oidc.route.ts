import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ref } from '../../../schemas/index.js';
import type { SchemaTypes } from '../api.types.js';
import { AppError } from '../../shared/errors.js';
import { secretsKey } from '../../shared/secret-box.js';
import {
  OIDC_FLOW_COOKIE,
  OIDC_FLOW_PATH,
  OIDC_FLOW_TTL_SECONDS,
  OidcSignIn,
  refusalMessages,
  upsertOidcMember,
} from '../auth/oidc.service.js';
import { setSessionCookies, startSession } from '../auth/sessions.service.js';

const tags = ['authentication'];

/** Only same-site paths are followed after sign-in (no open redirect). */
function safeNext(next: unknown): string {
  return typeof next === 'string' && next.startsWith('/') && !next.startsWith('//') && !next.includes('\\')
    ? next
    : '/overview';
}

/** A browser's page navigation (it asks for HTML) rather than an API client. */
function wantsPage(req: FastifyRequest): boolean {
  return (req.headers.accept ?? '').includes('text/html');
}

/** Came in over HTTPS, directly or through a proxy that says so. */
function secure(req: FastifyRequest): boolean {
  const fwd = req.headers['x-forwarded-proto'];
  return req.protocol === 'https' || (typeof fwd === 'string' && fwd.split(',')[0]?.trim() === 'https');
}

const escapeHtml = (v: string) => v.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * What a browser gets when signed in: a page that opens `next` itself. A redirect would load the
 * dashboard as the last step of a navigation the provider's site started, a cross-site one, which
 * carries no SameSite=Strict session cookie; the page's own navigation is same-site, so the
 * dashboard loads as after a password sign-in.
 */
function continuePage(next: string): string {
  const href = escapeHtml(next);
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta http-equiv="refresh" content="0;url=${href}"><title>Signed in · Tapline</title></head>` +
    `<body><p>Signed in. <a href="${href}">Continue to Tapline</a></p></body></html>`
  );
}

const queryOfStrings = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 4096 },
  properties: {
    code: { type: 'string', maxLength: 4096 },
    state: { type: 'string', maxLength: 1024 },
    error: { type: 'string', maxLength: 1024 },
  },
} as const;

/**
 * Which sign-in methods are on (`GET /v1/authentication/methods`, for the sign-in page) and, when
 * OIDC is configured, the OpenID Connect sign-in (docs/auth.md "Single sign-on"):
 * `GET /v1/authentication/oidc/start` sends the browser to the provider, and the provider sends
 * it back to `GET /v1/authentication/oidc/callback`, which signs the person in with the same
 * session and CSRF cookies as password sign-in. A browser gets a page that opens the dashboard,
 * or is redirected to the sign-in page with `sso_error=<reason>`; an API client gets JSON: the
 * sign-in answer or the error envelope.
 */
export default async function oidcRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const cfg = app.deps.cfg;
  const o = cfg.oidc;

  app.get(
    '/v1/authentication/methods',
    {
      schema: {
        tags,
        summary: 'Sign-in methods that are on (the sign-in page shows them)',
        security: [],
        response: { 200: ref('signinMethods') },
      } as const,
    },
    async () => ({
      password: !o?.only,
      oidc: o
        ? {
            name: o.providerName,
            startUrl: '/v1/authentication/oidc/start',
            refusals: refusalMessages(o.providerName),
          }
        : null,
    }),
  );

  if (!o) return;
  const sso = new OidcSignIn(o, secretsKey(cfg), app.deps.log);

  const flowCookie = (req: FastifyRequest, reply: FastifyReply, value: string, maxAge: number) =>
    // SameSite=Lax: the provider's redirect back is a cross-site top-level navigation, which a
    // Strict cookie would not come with.
    reply.setCookie(OIDC_FLOW_COOKIE, value, {
      path: OIDC_FLOW_PATH,
      httpOnly: true,
      sameSite: 'lax',
      secure: secure(req),
      maxAge,
    });

  /** A refusal: the sign-in page with its reason for a browser, the error envelope otherwise. */
  const refuse = (req: FastifyRequest, reply: FastifyReply, err: unknown) => {
    if (!(err instanceof AppError) || !wantsPage(req)) throw err;
    const reason = typeof err.details.reason === 'string' ? err.details.reason : 'response';
    return reply.redirect(`/signin?sso_error=${encodeURIComponent(reason)}`, 303);
  };

  app.get(
    '/v1/authentication/oidc/start',
    {
      schema: {
        tags,
        summary: `Start single sign-on: redirects to the OpenID provider`,
        security: [],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { next: { type: 'string', maxLength: 2000 } },
        },
        response: { 302: { description: 'To the provider’s authorization endpoint', type: 'null' } },
      } as const,
    },
    async (req, reply) => {
      try {
        const { url, cookie } = await sso.start(safeNext(req.query.next));
        flowCookie(req, reply, cookie, OIDC_FLOW_TTL_SECONDS);
        return reply.redirect(url, 302);
      } catch (err) {
        return refuse(req, reply, err);
      }
    },
  );

  app.get(
    '/v1/authentication/oidc/callback',
    {
      schema: {
        tags,
        summary: 'Where the OpenID provider sends the person back; signs them in',
        security: [],
        querystring: queryOfStrings,
        response: {
          200: ref('signinResult'),
          303: {
            description: 'A browser: to the dashboard, or to the sign-in page with sso_error',
            type: 'null',
          },
        },
      } as const,
    },
    async (req, reply) => {
      // One attempt, one answer: the cookie goes whatever the outcome.
      flowCookie(req, reply, '', 0);
      try {
        const { person, next } = await sso.finish(
          // Every value is a string: the querystring schema says so.
          req.query as Record<string, string>,
          req.cookies[OIDC_FLOW_COOKIE],
        );
        const m = await upsertOidcMember(app.deps.pg, o, person);
        const s = await startSession(app.deps.pg, m.user.sid, m.accountSid, cfg.sessionTtlDays);
        setSessionCookies(req, reply, s);
        app.deps.log.info({ userSid: m.user.sid, accountSid: m.accountSid, role: m.role }, 'OIDC sign-in');
        // HTML, not the JSON the schema describes: the reply is taken untyped here.
        if (wantsPage(req))
          return (reply as FastifyReply).type('text/html; charset=utf-8').send(continuePage(next));
        return {
          sessionToken: s.sessionToken,
          csrfToken: s.csrfToken,
          expiresAt: s.expiresAt.toISOString(),
          accountSid: m.accountSid,
          role: m.role,
          user: {
            sid: m.user.sid,
            email: m.user.email,
            firstName: m.user.first_name,
            lastName: m.user.last_name,
          },
        };
      } catch (err) {
        return refuse(req, reply, err);
      }
    },
  );
}
