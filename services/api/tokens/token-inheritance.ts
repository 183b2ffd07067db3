import type { Principal } from '../../shared/credentials.js';
import { AppError } from '../../shared/errors.js';

/**
 * Token inheritance (docs/auth.md "Token inheritance"): a credential makes or changes a token
 * only within its own reach, in scopes and in time.
 */

/** 403 naming, in `details.notHeld`, each of `wanted` that the caller does not hold. */
export function requireHeld(principal: Principal, wanted: readonly string[], message: string): void {
  const notHeld = wanted.filter((s) => !principal.scopes.has(s));
  if (notHeld.length) throw new AppError(403, 'FORBIDDEN', `${message}: ${notHeld.join(', ')}`, { notHeld });
}

/**
 * The latest expiry a token made or changed by `maker` may have (ISO 8601), or null when the maker
 * never expires. Sessions carry no `expiresAt`: a dashboard session slides forward with use, and the
 * person's membership, not the session's lifetime, is what they act on.
 */
export function expiryCap(maker: Principal): string | null {
  return maker.expiresAt == null ? null : new Date(maker.expiresAt).toISOString();
}

/** The expiry a new token gets: the requested one (null = never), no later than its maker's. */
export function cappedExpiry(requested: string | null | undefined, maker: Principal): string | null {
  const cap = expiryCap(maker);
  if (cap === null) return requested ?? null;
  return requested && Date.parse(requested) < Date.parse(cap) ? requested : cap;
}
