/**
 * The one HTTP client of the dashboard: every page goes through it (no page calls fetch).
 * The session lives in an HttpOnly cookie the browser sends by itself (same origin); writes carry
 * the CSRF token from the readable `tapline_csrf` cookie. Errors arrive in the API's envelope and
 * become an ApiError whose message is shown to the person as the API wrote it.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Query = Record<string, string | number | boolean | undefined | null>;

/**
 * When the API's request quota resets after a 429 (epoch ms), from `X-RateLimit-Reset` (a Unix
 * time in seconds) or else `Retry-After` (seconds from now); null while no call is refused.
 */
let limitedUntil: number | null = null;
const limitListeners = new Set<() => void>();

export function rateLimitedUntil(): number | null {
  return limitedUntil;
}

export function subscribeRateLimit(fn: () => void): () => void {
  limitListeners.add(fn);
  return () => limitListeners.delete(fn);
}

/** Forgets the refusal (the reset time has passed): the app shell calls it before refreshing. */
export function clearRateLimit(): void {
  limitedUntil = null;
  for (const fn of limitListeners) fn();
}

function resetTime(res: Response, details: Record<string, unknown>): number | null {
  const reset = Number(res.headers.get('x-ratelimit-reset'));
  if (Number.isFinite(reset) && reset > 0) return reset * 1000;
  const after = Number(res.headers.get('retry-after'));
  if (Number.isFinite(after) && after >= 0) return Date.now() + after * 1000;
  const at = typeof details.resetAt === 'string' ? Date.parse(details.resetAt) : NaN;
  return Number.isFinite(at) ? at : null;
}

let onUnauthorized: (() => void) | undefined;
/** Called once by the app shell: a 401 on any call means the session ended. */
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

function csrfToken(): string | undefined {
  const m = /(?:^|;\s*)tapline_csrf=([^;]+)/.exec(document.cookie);
  return m?.[1] ? decodeURIComponent(m[1]) : undefined;
}

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query))
    if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return s ? `${path}?${s}` : path;
}

async function request<T>(method: string, path: string, body?: unknown, query?: Query): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  // Every call carries the CSRF token: writes need it, and so does sign-out, a GET.
  const csrf = csrfToken();
  if (csrf) headers['x-csrf-token'] = csrf;
  let res: Response;
  try {
    res = await fetch(withQuery(path, query), {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'NETWORK_ERROR', 'Tapline cannot be reached. Check that the service is running.');
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const env = (json as { error?: { code?: string; message?: string; details?: Record<string, unknown> } })
      ?.error;
    const err = new ApiError(
      res.status,
      env?.code ?? 'HTTP_' + res.status,
      env?.message ?? `The server answered ${res.status} ${res.statusText}`,
      env?.details ?? {},
    );
    if (res.status === 401 && !path.startsWith('/v1/authentication/signin')) onUnauthorized?.();
    if (res.status === 429) {
      const until = resetTime(res, err.details);
      if (until !== null) err.details.resetAt = new Date(until).toISOString();
      // Sign-in has a throttle of its own, shown on its page; every other 429 is the API quota.
      if (until !== null && !path.startsWith('/v1/authentication/signin')) {
        limitedUntil = Math.max(limitedUntil ?? 0, until);
        for (const fn of limitListeners) fn();
      }
    }
    throw err;
  }
  return json as T;
}

export const api = {
  get: <T>(path: string, query?: Query) => request<T>('GET', path, undefined, query),
  post: <T>(path: string, body?: unknown) => request<T>('POST', path, body ?? {}),
  put: <T>(path: string, body: unknown) => request<T>('PUT', path, body),
  del: <T>(path: string) => request<T>('DELETE', path),
};

/** Field errors of a VALIDATION_ERROR, keyed by the field name the API names (for forms). */
export function fieldErrors(err: unknown): Record<string, string> {
  if (!(err instanceof ApiError) || err.code !== 'VALIDATION_ERROR') return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(err.details)) {
    const field = k.replace(/^(body|querystring|params)\./, '').replace(/^\//, '');
    out[field] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return out;
}
