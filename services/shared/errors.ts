/**
 * The one error type (docs/architecture.md, convention 4). `expose` false means the message is internal and a 5xx
 * body says only "Internal server error".
 */
export type ErrorCode =
  | 'INVALID_TOKEN'
  | 'INVALID_CREDENTIALS'
  | 'FORBIDDEN'
  | 'RATE_LIMIT_EXCEEDED'
  | 'RESOURCE_NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'VALIDATION_ERROR'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'CONFLICT'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_ERROR';

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly expose = status < 500,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (what = 'Resource') => new AppError(404, 'RESOURCE_NOT_FOUND', `${what} not found`);
export const invalidToken = (message = 'Missing or invalid token') =>
  new AppError(401, 'INVALID_TOKEN', message);
export const forbidden = (scope: string) =>
  new AppError(403, 'FORBIDDEN', `Token lacks the scope ${scope}`, { requiredScope: scope });
export const validation = (message: string, details: Record<string, unknown> = {}) =>
  new AppError(400, 'VALIDATION_ERROR', message, details);
export const unavailable = (what: string) =>
  new AppError(503, 'SERVICE_UNAVAILABLE', `${what} is unavailable, retry later`, {}, true);

export interface ErrorBody {
  success: false;
  error: { code: string; message: string; details: Record<string, unknown> };
}

export function errorBody(code: string, message: string, details: Record<string, unknown> = {}): ErrorBody {
  return { success: false, error: { code, message, details } };
}
