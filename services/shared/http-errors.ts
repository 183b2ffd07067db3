import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody, type ErrorCode } from './errors.js';
import { isConnectionError } from './postgres.js';

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'VALIDATION_ERROR',
  401: 'INVALID_TOKEN',
  403: 'FORBIDDEN',
  404: 'RESOURCE_NOT_FOUND',
  405: 'RESOURCE_NOT_FOUND',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMIT_EXCEEDED',
  503: 'SERVICE_UNAVAILABLE',
};

function validationDetails(err: FastifyError): Record<string, string> {
  const details: Record<string, string> = {};
  for (const v of err.validation ?? []) {
    const base = (err.validationContext ?? 'body') + v.instancePath.replaceAll('/', '.');
    const params = v.params as { missingProperty?: string; additionalProperty?: string };
    if (params.missingProperty) details[`${base}.${params.missingProperty}`] = 'is required';
    else if (params.additionalProperty)
      details[`${base}.${params.additionalProperty}`] = 'is not a known field';
    else details[base] ??= v.message ?? 'is invalid';
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
    return {
      status: 400,
      code: 'VALIDATION_ERROR',
      message: `Request ${fe.validationContext ?? 'body'} is invalid`,
      details: validationDetails(fe),
    };
  }
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

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const res = toErrorResponse(err);
    if (res.status >= 500) req.log.error({ err }, 'request failed');
    else req.log.debug({ code: res.code, status: res.status }, 'request rejected');
    if (res.status === 503) void reply.header('Retry-After', '5');
    return reply.status(res.status).send(errorBody(res.code, res.message, res.details));
  });
  app.setNotFoundHandler((req: FastifyRequest, reply: FastifyReply) =>
    reply
      .status(404)
      .send(errorBody('RESOURCE_NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}`)),
  );
}
