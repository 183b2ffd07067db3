import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import pg from 'pg';
import type { ErrorObject } from 'ajv';
import { AppError, errorBody, type ErrorCode } from './errors.js';
import { isConnectionError } from './postgres.js';
import { describeAjvError, validationMessage } from './validation-messages.js';

/**
 * Postgres "data exception" states (SQLSTATE class 22) a client value can cause: the store
 * refused the value, so the request is at fault, not the server (never a 500 for bad input).
 */
const PG_DATA_ERRORS: Record<string, string> = {
  '22021': 'A text value contains a NUL character or an invalid UTF-8 byte sequence',
  '22P05': 'A text value contains a NUL character (\\u0000), which cannot be stored',
  '22P02': 'A value has an invalid format for its type',
  '22007': 'A date or time value has an invalid format',
  '22008': 'A date or time value is out of range',
  '22003': 'A number is out of range',
  '22001': 'A text value is too long',
  '2201B': 'A pattern is not a valid regular expression',
  '22025': 'A pattern has an invalid escape sequence',
  '22019': 'A pattern has an invalid escape character',
  '22023': 'A value is not valid for its parameter',
  '22012': 'A value leads to a division by zero',
};

/**
 * ClickHouse errors that mean a bound query parameter could not be read as its declared type:
 * the value came from the client. Anything else from ClickHouse stays a 500.
 */
const CH_PARAM_ERRORS = new Set([
  'BAD_QUERY_PARAMETER',
  'CANNOT_CONVERT_TYPE',
  'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  'DECIMAL_OVERFLOW',
  'TOO_LARGE_STRING_SIZE',
  'CANNOT_READ_ARRAY_FROM_TEXT',
]);

/**
 * ClickHouse errors of a query that went over its class's limit (clickhouse.ts QUERY_LIMITS): the
 * request asked for too much at once (a wide range, a costly filter), so a 400 that says so.
 */
const CH_LIMIT_ERRORS: Record<string, string> = {
  TIMEOUT_EXCEEDED: 'time',
  MEMORY_LIMIT_EXCEEDED: 'memory',
  TOO_MANY_ROWS: 'rows',
  TOO_MANY_BYTES: 'bytes',
};

/** The pg DatabaseError behind `err` (possibly wrapped once as `cause`), or undefined. */
function pgError(err: unknown): pg.DatabaseError | undefined {
  if (err instanceof pg.DatabaseError) return err;
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return cause instanceof pg.DatabaseError ? cause : undefined;
}

/** The type of a ClickHouse server error (`CANNOT_PARSE_DATETIME`, ...), or undefined. */
function clickHouseErrorType(err: unknown): string | undefined {
  const e = err as { constructor?: { name?: string }; type?: unknown; code?: unknown } | undefined;
  if (e?.constructor?.name !== 'ClickHouseError' || typeof e.type !== 'string') return undefined;
  return e.type;
}

/** A 400 for client values the stores refused, or undefined when `err` is not one. */
function dataError(
  err: unknown,
): { status: 400; code: ErrorCode; message: string; details: Record<string, unknown> } | undefined {
  const pgErr = pgError(err);
  if (pgErr?.code && pgErr.code.startsWith('22')) {
    return {
      status: 400,
      code: 'VALIDATION_ERROR',
      message: PG_DATA_ERRORS[pgErr.code] ?? 'A value is not valid for its type',
      details: {},
    };
  }
  const chType = clickHouseErrorType(err);
  if (chType && CH_LIMIT_ERRORS[chType]) {
    return {
      status: 400,
      code: 'VALIDATION_ERROR',
      message: `The query went over its ${CH_LIMIT_ERRORS[chType]} limit: narrow the time range or the filters`,
      details: { query: `exceeds the ${CH_LIMIT_ERRORS[chType]} limit` },
    };
  }
  if (chType && (CH_PARAM_ERRORS.has(chType) || chType.startsWith('CANNOT_PARSE_'))) {
    return {
      status: 400,
      code: 'VALIDATION_ERROR',
      message: 'A query value could not be read as its type',
      details: {},
    };
  }
  return undefined;
}

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'VALIDATION_ERROR',
  401: 'INVALID_TOKEN',
  403: 'FORBIDDEN',
  404: 'RESOURCE_NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMIT_EXCEEDED',
  503: 'SERVICE_UNAVAILABLE',
};

/**
 * `{field: phrase}` of a schema refusal, each phrase in words (validation-messages.ts): the
 * dashboard shows it next to the field, so it never carries a regular expression. Type errors of
 * one field from several `anyOf` branches are told as one (`must be text or null`).
 */
function validationDetails(err: FastifyError): Record<string, string> {
  const details: Record<string, string> = {};
  const types = new Map<string, string[]>();
  for (const v of err.validation ?? []) {
    const base = (err.validationContext ?? 'body') + v.instancePath.replaceAll('/', '.');
    const params = v.params as { missingProperty?: string; additionalProperty?: string; type?: unknown };
    if (params.missingProperty) details[`${base}.${params.missingProperty}`] = 'is required';
    else if (params.additionalProperty)
      details[`${base}.${params.additionalProperty}`] = 'is not a known field';
    else if (v.keyword === 'type' && (details[base] === undefined || types.has(base))) {
      const list = [...(types.get(base) ?? []), ...String(params.type).split(',')];
      types.set(base, list);
      details[base] = describeAjvError({
        ...v,
        params: { type: [...new Set(list)].join(',') },
      } as ErrorObject);
    } else details[base] ??= describeAjvError(v as ErrorObject);
  }
  return details;
}

/** Turns any error into the spec's envelope (section 7). 5xx bodies never carry internals. */
export function toErrorResponse(err: unknown): {
  status: number;
  code: string;
  message: string;
  details: Record<string, unknown>;
} {
  if (err instanceof AppError) {
    return {
      status: err.status,
      code: err.code,
      message: err.expose ? err.message : 'Internal server error',
      details: err.expose ? err.details : {},
    };
  }
  const fe = err as FastifyError;
  if (fe?.validation) {
    const details = validationDetails(fe);
    return {
      status: 400,
      code: 'VALIDATION_ERROR',
      message: validationMessage(details, fe.validationContext),
      details,
    };
  }
  // The engine as a whole at its memory bound (CLICKHOUSE_EMBEDDED_MEMORY_BYTES, or a server's
  // max_server_memory_usage): not this request's size, so not a 400 but a 503 to retry.
  if (
    clickHouseErrorType(err) === 'MEMORY_LIMIT_EXCEEDED' &&
    // "(total) memory limit exceeded" (older engines: "Memory limit (total) exceeded")
    /\(total\) memory limit exceeded|memory limit \(total\) exceeded/i.test((err as Error).message)
  ) {
    return {
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      message: 'ClickHouse is at its memory bound with other work: retry shortly',
      details: { query: 'the engine is at its total memory limit' },
    };
  }
  const data = dataError(err);
  if (data) return data;
  if (isConnectionError(err)) {
    return {
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      message: 'A backing store is unavailable, retry later',
      details: {},
    };
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    const code = BY_STATUS[status] ?? 'VALIDATION_ERROR';
    let message = fe.message;
    if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError)
      message = 'Body is not valid JSON';
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') message = 'Body is larger than the limit';
    return { status, code, message, details: {} };
  }
  return { status: 500, code: 'INTERNAL_ERROR', message: 'Internal server error', details: {} };
}

/**
 * Fastify's `frameworkErrors` option: the router refuses a URL that does not decode (bad percent
 * encoding, FST_ERR_BAD_URL) or whose parameter is longer than `maxParamLength` before any route
 * or error handler runs, and by default answers in its own format. Both name nothing that exists.
 */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  req.log.debug({ code: err.code }, 'request rejected by the router');
  // Routes set it in an onRequest hook (http-server.ts); a router refusal runs no route hook.
  void reply.header('x-request-id', req.id);
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply
      .status(404)
      .send(errorBody('RESOURCE_NOT_FOUND', 'No such resource (a path segment is too long)'));
    return;
  }
  void reply
    .status(400)
    .send(
      errorBody('VALIDATION_ERROR', 'The URL is not valid (bad percent-encoding)', { url: 'is not valid' }),
    );
}

/**
 * Fastify's `clientErrorHandler` option. Node's HTTP parser refuses some requests before Fastify
 * routes them (headers over `--max-http-header-size`, 16 KB by default: 431; malformed HTTP: 400;
 * request timeout: 408) and emits `clientError` on the server; this answers those in the error
 * envelope too, then closes the connection as Node does.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'The request is not valid HTTP';
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'Request headers are larger than the limit (16 KB)';
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'The request was not received in time';
  }
  const body = JSON.stringify(errorBody('VALIDATION_ERROR', message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/**
 * Whether the rest of a refused body may be read and discarded instead of closing the connection.
 * NOTE: Fastify answers 413 with `Connection: close`; Node then closes while the client is still
 * uploading, and most clients (fetch/undici included) report EPIPE or a reset instead of the 413.
 * Up to 4× the body limit (declared by Content-Length) the connection stays open, so Node reads the
 * rest off the wire and the client gets its answer; beyond that, closing is cheaper.
 */
function drainable(req: FastifyRequest): boolean {
  const declared = Number(req.headers['content-length']);
  const limit = req.routeOptions?.bodyLimit;
  return Number.isFinite(declared) && typeof limit === 'number' && declared <= 4 * limit;
}

/** Resolves once the request body has been read to its end (discarded), at most after 10 s. */
function drainRequest(req: FastifyRequest): Promise<void> {
  const raw = req.raw;
  if (raw.readableEnded || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, 10_000);
    raw.once('end', done);
    raw.once('close', done);
    raw.once('error', done);
    raw.resume();
  });
}

/**
 * Runs before the 404 or 405 of a request no route matched. The API counts an authenticated `/v1`
 * request there against its account's rate limit and writes the rate-limit headers (docs/auth.md: on
 * every response); a rejection (its 429) is answered instead of the 404 or 405.
 */
export type UnmatchedHook = (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
const unmatchedHooks = new WeakMap<FastifyInstance, UnmatchedHook>();

/** Sets the server's UnmatchedHook (`app` is the instance installErrorHandlers was given). */
export function setUnmatchedHook(app: FastifyInstance, hook: UnmatchedHook): void {
  unmatchedHooks.set(app, hook);
}

export function installErrorHandlers(app: FastifyInstance): void {
  const unmatched = (req: FastifyRequest, reply: FastifyReply): Promise<void> =>
    unmatchedHooks.get(app)?.(req, reply) ?? Promise.resolve();
  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const res = toErrorResponse(err);
    if (res.status >= 500) req.log.error({ err }, 'request failed');
    else req.log.debug({ code: res.code, status: res.status }, 'request rejected');
    if (res.status === 503) void reply.header('Retry-After', '5');
    // 429s of the per-minute limiters (window-limiter.ts) carry their wait in the details.
    const retryAfter = (res.details as { retryAfter?: unknown }).retryAfter;
    if (res.status === 429 && typeof retryAfter === 'number' && !reply.hasHeader('retry-after'))
      void reply.header('Retry-After', String(retryAfter));
    if (res.status === 413 && drainable(req)) {
      void reply.removeHeader('connection');
      // Read the rest of the upload off the wire before answering: a client still sending when the
      // answer arrives may see a reset instead of the 413 (seen under load).
      return drainRequest(req).then(() =>
        reply.status(res.status).send(errorBody(res.code, res.message, res.details)),
      );
    }
    return reply.status(res.status).send(errorBody(res.code, res.message, res.details));
  });
  const known = new KnownPaths();
  app.addHook('onRoute', (route) => known.add(route.url ?? route.path, route.method));
  /** The methods of a known path asked with another method; undefined when the path is not known. */
  const allowed = (req: FastifyRequest): string[] | undefined => {
    const allow = known.methodsOf(req.url.split('?')[0]!);
    return allow.length === 0 || allow.includes(req.method) ? undefined : allow;
  };
  /** A 405 for a known path asked with another method; false when the path is not known. */
  const methodNotAllowed = (req: FastifyRequest, reply: FastifyReply): boolean => {
    const path = req.url.split('?')[0]!;
    const allow = allowed(req);
    if (!allow) return false;
    void reply
      .status(405)
      .header('x-request-id', req.id)
      .header('allow', allow.join(', '))
      .send(errorBody('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}`, { allow }));
    return true;
  };
  // Decided before the body is read: a method such as QUERY would otherwise be refused for its
  // missing Content-Type (400) before the not-found handler runs.
  app.addHook('onRequest', (req, reply, done) => {
    if (!req.is404 || !allowed(req)) return done();
    unmatched(req, reply).then(
      () => methodNotAllowed(req, reply),
      (err: unknown) => reply.send(err),
    );
  });
  app.setNotFoundHandler(async (req: FastifyRequest, reply: FastifyReply) => {
    await unmatched(req, reply);
    // The dashboard's `/*` route hands API paths here (reply.callNotFound): the check runs again.
    if (methodNotAllowed(req, reply)) return reply;
    return reply
      .status(404)
      .send(errorBody('RESOURCE_NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}`));
  });
}

/**
 * The methods registered per route pattern, so a request the router found no route for can be
 * told apart: a known path asked with another method is a 405 with `Allow` (RFC 9110 15.5.6),
 * anything else a 404. Wildcard routes (the dashboard's `/*`, static assets) name no path and
 * are left out. Static segments compare decoded, as the router does; `:param` is one segment.
 */
class KnownPaths {
  private readonly routes: { segments: (string | RegExp)[]; methods: Set<string> }[] = [];
  private readonly byPattern = new Map<string, Set<string>>();

  add(pattern: string, method: string | string[]): void {
    if (!pattern.startsWith('/') || pattern.includes('*')) return;
    let methods = this.byPattern.get(pattern);
    if (!methods) {
      methods = new Set();
      this.byPattern.set(pattern, methods);
      this.routes.push({ segments: pattern.split('/').map(segmentMatcher), methods });
    }
    for (const m of Array.isArray(method) ? method : [method]) methods.add(m.toUpperCase());
  }

  /**
   * Methods of the most specific patterns `path` matches, sorted; empty when it matches none.
   * Most specific: at the first segment where two matching patterns differ, a static segment wins
   * over a parameter (`/workflows/preview` over `/workflows/:workflowSid`), as the router prefers.
   */
  methodsOf(path: string): string[] {
    const parts = path.split('/').map(decodeSegment);
    let best: { rank: string; methods: Set<string> }[] = [];
    for (const r of this.routes) {
      if (r.segments.length !== parts.length) continue;
      if (!r.segments.every((s, i) => (typeof s === 'string' ? s === parts[i] : s.test(parts[i]!)))) continue;
      const rank = r.segments.map((s) => (typeof s === 'string' ? '1' : '0')).join('');
      if (best.length === 0 || rank > best[0]!.rank) best = [{ rank, methods: r.methods }];
      else if (rank === best[0]!.rank) best.push({ rank, methods: r.methods });
    }
    return [...new Set(best.flatMap((b) => [...b.methods]))].sort();
  }
}

function segmentMatcher(segment: string): string | RegExp {
  if (!segment.includes(':')) return segment;
  const source = segment
    .split(/(:\w+)/)
    .map((piece) => (piece.startsWith(':') ? '.+' : piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
