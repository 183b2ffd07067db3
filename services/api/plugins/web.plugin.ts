import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { projectRoot } from '../../shared/postgres.js';

/** Where `npm run build:web` writes the dashboard. */
export const WEB_DIST = path.join(projectRoot(), 'web', 'dist');

/** Paths that belong to the API, never to the dashboard's client-side routes. */
const API_PREFIXES = ['/v1/', '/v1?', '/mcp', '/healthz', '/readyz', '/assets/'];

const HTML_HEADERS = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    // uPlot and React set element styles inline.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
};

/**
 * The dashboard, served by the API listener at `/` (same origin as /v1, so no CORS):
 * hashed assets under /assets/ with a year of immutable caching, each sent precompressed (brotli
 * or gzip, written at build time), and index.html for every other GET that accepts HTML, so a deep
 * link such as /stream?bucket=…&q=… reloads into the right page.
 */
export default fp(
  async (app: FastifyInstance, opts: { root?: string }) => {
    const root = opts.root ?? WEB_DIST;
    const indexPath = path.join(root, 'index.html');

    if (fs.existsSync(path.join(root, 'assets'))) {
      await app.register(fastifyStatic, {
        root: path.join(root, 'assets'),
        prefix: '/assets/',
        preCompressed: true,
        index: false,
        wildcard: true,
        cacheControl: false,
        setHeaders: (res) => {
          void res.header('cache-control', 'public, max-age=31536000, immutable');
          void res.header('x-content-type-options', 'nosniff');
        },
      });
    }
    // The few root files (favicon) are small; served as they are.
    const rootFiles = fs.existsSync(root)
      ? fs.readdirSync(root).filter((f) => /\.(svg|ico|png|txt)$/.test(f))
      : [];
    for (const f of rootFiles) {
      app.get(`/${f}`, { schema: { hide: true } }, async (_req, reply) =>
        reply
          .header('cache-control', 'public, max-age=86400')
          .type(f.endsWith('.svg') ? 'image/svg+xml' : 'application/octet-stream')
          .send(fs.createReadStream(path.join(root, f))),
      );
    }

    const sendIndex = async (req: FastifyRequest, reply: FastifyReply) => {
      if (!fs.existsSync(indexPath)) {
        return reply
          .status(503)
          .type('text/plain; charset=utf-8')
          .send('The dashboard is not built: run `npm run build` (or `npm start`, which builds it).\n');
      }
      const accept = String(req.headers['accept-encoding'] ?? '');
      const [file, encoding] =
        /\bbr\b/.test(accept) && fs.existsSync(`${indexPath}.br`)
          ? [`${indexPath}.br`, 'br']
          : /\bgzip\b/.test(accept) && fs.existsSync(`${indexPath}.gz`)
            ? [`${indexPath}.gz`, 'gzip']
            : [indexPath, undefined];
      void reply.headers(HTML_HEADERS).header('vary', 'Accept-Encoding').type('text/html; charset=utf-8');
      if (encoding) void reply.header('content-encoding', encoding);
      return reply.send(fs.createReadStream(file));
    };

    app.get('/', { schema: { hide: true } }, sendIndex);
    // Client-side routes of the dashboard; API paths keep the JSON 404 envelope.
    app.get('/*', { schema: { hide: true } }, async (req, reply) => {
      const url = req.url;
      const wantsHtml = String(req.headers.accept ?? '').includes('text/html');
      if (API_PREFIXES.some((p) => url === p.replace(/[/?]$/, '') || url.startsWith(p)) || !wantsHtml) {
        // The not-found handler (http-errors.ts): 405 with Allow for a known API path, else 404.
        return reply.callNotFound();
      }
      return sendIndex(req, reply);
    });
  },
  { name: 'web' },
);
