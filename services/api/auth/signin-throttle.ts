/**
 * Slows repeated sign-in failures per email and per client IP: after FREE failures within the
 * window (FREE_IP for an address, which may front a whole office), each further attempt must wait (doubling from BASE_MS, at most MAX_MS) and is answered
 * 429 with Retry-After until then. A success clears the email's record.
 * NOTE: kept in memory per API process; with several API replicas each counts on its own, so the
 * effective allowance is multiplied by the replica count (docs/auth.md).
 */
const FREE = 5;
const FREE_IP = 30;
const WINDOW_MS = 15 * 60_000;
const BASE_MS = 2_000;
const MAX_MS = 15 * 60_000;
const MAX_KEYS = 100_000;

interface Entry {
  failures: number;
  first: number;
  blockedUntil: number;
}

export class SigninThrottle {
  private readonly entries = new Map<string, Entry>();

  /** Milliseconds the caller must still wait for any of `keys`, or 0. */
  waitMs(keys: string[], now = Date.now()): number {
    let wait = 0;
    for (const k of keys) {
      const e = this.entries.get(k);
      if (!e) continue;
      if (now - e.first > WINDOW_MS && now >= e.blockedUntil) {
        this.entries.delete(k);
        continue;
      }
      wait = Math.max(wait, e.blockedUntil - now);
    }
    return Math.max(0, wait);
  }

  fail(keys: string[], now = Date.now()): void {
    if (this.entries.size > MAX_KEYS) this.entries.clear();
    for (const k of keys) {
      const e = this.entries.get(k) ?? { failures: 0, first: now, blockedUntil: 0 };
      if (now - e.first > WINDOW_MS) Object.assign(e, { failures: 0, first: now, blockedUntil: 0 });
      e.failures++;
      const free = k.startsWith('ip:') ? FREE_IP : FREE;
      if (e.failures >= free)
        e.blockedUntil = now + Math.min(MAX_MS, BASE_MS * 2 ** Math.min(e.failures - free, 20));
      this.entries.set(k, e);
    }
  }

  succeed(key: string): void {
    this.entries.delete(key);
  }
}
