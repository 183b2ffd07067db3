/**
 * Which offset of one partition may be committed while jobs finish out of order: everything
 * below the lowest offset still in flight (or after the highest seen when none is). Pure, so the
 * rule is unit-tested on its own.
 */
export class OffsetTracker {
  private inFlight = new Map<number, number>();
  private highest = -1;
  private committed = -1;

  /** A message was taken up. */
  start(offset: number): void {
    // The group's position is at least the first offset handed to us: nothing to commit below it.
    if (this.committed < 0) this.committed = offset;
    this.inFlight.set(offset, (this.inFlight.get(offset) ?? 0) + 1);
    if (offset > this.highest) this.highest = offset;
  }

  /** Its job finished (succeeded, failed and dead-lettered, or skipped). */
  finish(offset: number): void {
    const n = this.inFlight.get(offset) ?? 0;
    if (n <= 1) this.inFlight.delete(offset);
    else this.inFlight.set(offset, n - 1);
  }

  /** The next offset to commit (Kafka's "next to read"), or undefined when nothing new is safe. */
  committable(): number | undefined {
    if (this.highest < 0) return undefined;
    let next = this.highest + 1;
    for (const o of this.inFlight.keys()) if (o < next) next = o;
    return next > this.committed ? next : undefined;
  }

  markCommitted(next: number): void {
    if (next > this.committed) this.committed = next;
  }

  get pending(): number {
    return this.inFlight.size;
  }
}
