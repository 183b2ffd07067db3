/**
 * Circuit breaker of the delivery loop: after `threshold` consecutive failed attempts it opens
 * for `openMs` (doubling on each re-open up to `maxOpenMs`); no attempt is made while open. After
 * the wait one attempt is let through (half-open): success closes it, failure re-opens it. So an
 * ingest outage costs one attempt per open period, never a retry storm.
 */
export class CircuitBreaker {
  state: 'closed' | 'open' | 'half-open' = 'closed';
  private failures = 0;
  private opens = 0;
  private openUntil = 0;

  constructor(
    private readonly threshold: number,
    private readonly openMs: number,
    private readonly maxOpenMs: number,
  ) {}

  /** Milliseconds to wait before the next attempt is allowed (0 = now). */
  waitMs(now = Date.now()): number {
    if (this.state !== 'open') return 0;
    if (now >= this.openUntil) {
      this.state = 'half-open';
      return 0;
    }
    return this.openUntil - now;
  }

  success(): void {
    this.state = 'closed';
    this.failures = 0;
    this.opens = 0;
  }

  /** Records a failed attempt; true when this opened the circuit. */
  failure(now = Date.now()): boolean {
    this.failures++;
    if (this.state === 'half-open' || this.failures >= this.threshold) {
      const ms = Math.min(this.maxOpenMs, this.openMs * 2 ** Math.min(this.opens, 20));
      this.opens++;
      this.state = 'open';
      this.openUntil = now + ms;
      return true;
    }
    return false;
  }
}
