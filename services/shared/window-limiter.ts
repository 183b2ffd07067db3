import { AppError } from './errors.js';

/**
 * Counts calls per key in fixed windows (one minute by default) in this process's memory: the
 * ingest listener and /mcp per token and per bucket (docs/security.md "Limits"). The table is
 * bounded: past `maxKeys` keys, expired windows are dropped, then the oldest ones.
 */
export class WindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    readonly max: number,
    readonly windowMs = 60_000,
    private readonly maxKeys = 100_000,
  ) {}

  /** Counts one call of `key`; the seconds until its window ends when it is over the limit. */
  hit(key: string, now = Date.now()): { allowed: true } | { allowed: false; retryAfterSeconds: number } {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      if (!w && this.windows.size >= this.maxKeys) this.evict(now);
      w = { start: now, count: 0 };
      this.windows.delete(key);
      this.windows.set(key, w);
    }
    w.count++;
    if (w.count <= this.max) return { allowed: true };
    return {
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000)),
    };
  }

  private evict(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(k);
    // Insertion order is window start order: the oldest go first.
    for (const k of this.windows.keys()) {
      if (this.windows.size < this.maxKeys) break;
      this.windows.delete(k);
    }
  }

  /** Throws a 429 (with `retryAfter` for the Retry-After header) when `key` is over the limit. */
  check(key: string, what: string): void {
    const r = this.hit(key);
    if (r.allowed) return;
    throw rateLimited(`Rate limit of ${this.max} requests per minute per ${what} exceeded`, {
      limit: this.max,
      per: what,
      windowSeconds: this.windowMs / 1000,
      retryAfter: r.retryAfterSeconds,
    });
  }
}

/** A 429 in the envelope; `details.retryAfter` (seconds) becomes the Retry-After header. */
export function rateLimited(
  message: string,
  details: { retryAfter: number } & Record<string, unknown>,
): AppError {
  return new AppError(429, 'RATE_LIMIT_EXCEEDED', message, details);
}

/**
 * At most `perSecond` takes per second, in bursts of up to `perSecond` (a token bucket): the
 * Postgres look-ups of credentials not in the cache (credentials.ts). Past it, a 429 with
 * Retry-After: 1, so a flood of made-up tokens costs the database a bounded rate of queries.
 */
export class RateBudget {
  private tokens: number;
  private last = Date.now();

  constructor(readonly perSecond: number) {
    this.tokens = perSecond;
  }

  take(now = Date.now()): boolean {
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Takes one, or throws the 429. */
  takeOrThrow(what: string): void {
    if (!this.take()) throw this.refusal(what);
  }

  /** The 429 a caller throws when `take` refused. */
  refusal(what: string): Error {
    return rateLimited(`Too many ${what} at once, retry in a second`, {
      limit: this.perSecond,
      per: 'second',
      retryAfter: 1,
    });
  }
}
