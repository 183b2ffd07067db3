import fs from 'node:fs';
import { createGunzip, createInflate } from 'node:zlib';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Ajv } from 'ajv';
import type { Config } from './config.js';
import { AppError } from './errors.js';
import { clientErrorHandler, frameworkErrors, installErrorHandlers } from './http-errors.js';
import type { Logger } from './logger.js';
import { newSid } from './ids.js';
import { LazyChildLogger } from './lazy-logger.js';
import { ALL_SCHEMAS } from '../../schemas/index.js';
import { createAjv } from './schemas.js';

/** The request came over HTTPS, directly or through a proxy that says so (X-Forwarded-Proto). */
export function cameOverHttps(req: FastifyRequest): boolean {
  const fwd = req.headers['x-forwarded-proto'];
  return req.protocol === 'https' || (typeof fwd === 'string' && fwd.split(',')[0]?.trim() === 'https');
}

/** Fastify with the service's common settings: logger, request ids, TLS, gzip bodies, envelope errors. */
export function createHttpServer(opts: {
  log: Logger;
  bodyLimit: number;
  tls?: Config['tls'];
  /** Config['limits'] (HTTP_REQUEST_TIMEOUT_MS, HTTP_CONNECTION_TIMEOUT_MS); defaults as there */
  timeouts?: { requestMs: number; connectionMs: number };
  /** Strict-Transport-Security max-age in seconds (HSTS_MAX_AGE), sent on answers over HTTPS */
  hstsMaxAge?: number;
  extra?: Partial<FastifyServerOptions>;
}): FastifyInstance {
  // A request must arrive whole (headers and body) within requestMs, its headers within
  // headersTimeout; a connection idle for connectionMs is closed (a live stream pings every 15 s).
  // Node checks the request deadlines every connectionsCheckingInterval (30 s by default).
  const requestMs = opts.timeouts?.requestMs ?? 30_000;
  const connectionMs = opts.timeouts?.connectionMs ?? 120_000;
  const nodeServer = {
    headersTimeout: Math.min(requestMs, 20_000),
    connectionsCheckingInterval: Math.min(5_000, Math.max(250, Math.floor(requestMs / 4))),
  };
  const https = opts.tls
    ? { key: fs.readFileSync(opts.tls.key), cert: fs.readFileSync(opts.tls.cert), ...nodeServer }
    : null;
  const app = Fastify({
    requestTimeout: requestMs,
    connectionTimeout: connectionMs,
    // Between requests of a kept-alive connection (Fastify's default is 72 s).
    keepAliveTimeout: Math.min(connectionMs, 72_000),
    http: nodeServer,
    loggerInstance: opts.log,
    bodyLimit: opts.bodyLimit,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given)
        ? given
        : newSid('request').slice(4, 20);
    },
    requestIdHeader: false,
    // The request's logger is made on first use: most requests log nothing (lazy-logger.ts).
    childLoggerFactory: (logger: Logger, bindings: Record<string, unknown>, options: object) =>
      new LazyChildLogger(logger, bindings, options),
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { maxParamLength: 200 },
    // Refusals before any route runs (undecodable URL, over-long parameter; Node's parser: 431 for
    // headers over 16 KB, malformed HTTP) in the error envelope too (http-errors.ts).
    frameworkErrors,
    clientErrorHandler,
    ...(https ? { https } : {}),
    ...opts.extra,
  } as FastifyServerOptions) as unknown as FastifyInstance;
  installErrorHandlers(app);
  for (const schema of ALL_SCHEMAS) app.addSchema(schema);
  // NOTE: bodies are validated without type coercion (`"200"` is not a number: wrong types are a
  // 400), while path and query strings are coerced (they only ever arrive as strings). Fastify's
  // default ajv would also strip unknown fields (removeAdditional); we refuse them instead.
  const strict = createAjv({ coerceTypes: false });
  const coercing = createAjv({ coerceTypes: 'array' });
  app.setValidatorCompiler(({ schema, httpPart }) =>
    compile(httpPart === 'body' ? strict : coercing, schema),
  );
  // Callback-style hooks: an async hook costs a promise per request on the ingest hot path.
  // HSTS on every answer that travelled over HTTPS: this listener's own TLS, or a proxy in front
  // that says so. Browsers ignore the header over plain HTTP, so a forged X-Forwarded-Proto on a
  // plain connection changes nothing.
  const hsts = `max-age=${opts.hstsMaxAge ?? 31_536_000}`;
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header('x-request-id', req.id);
    if (opts.tls || cameOverHttps(req)) void reply.header('strict-transport-security', hsts);
    done();
  });
  // Compressed bodies: the body limit then applies to the decompressed size (gzip-bomb safe).
  app.addHook('preParsing', (req, _reply, payload, done) => {
    const given = req.headers['content-encoding'];
    const enc = given === undefined ? 'identity' : String(given).toLowerCase();
    if (enc === 'identity') return done(null, payload);
    let out;
    if (enc === 'gzip' || enc === 'x-gzip') out = createGunzip();
    else if (enc === 'deflate') out = createInflate();
    else return done(new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${enc} is not supported`));
    out.on('error', () => undefined);
    delete req.headers['content-length'];
    // fastify reads `receivedEncodedLength` to report the raw size; keep the stream shape it expects.
    done(null, payload.pipe(out) as unknown as typeof payload);
  });
  return app;
}

/** Compiles a route schema; a registered schema (with `$id`) is taken from the instance, not re-added. */
function compile(ajv: Ajv, schema: unknown) {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id === 'string') {
    const known = ajv.getSchema(id);
    if (known) return known;
  }
  return ajv.compile(schema as object);
}
