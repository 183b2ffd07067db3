/**
 * The most recent record keys (bucket and sid, requests.sink.ts `repeatKey`) stored from one Kafka
 * partition (a ring of `capacity` keys with a set for lookups). A record whose key is in the
 * window is a repeat: an SDK re-sending a batch
 * whose 202 it never saw, or a producer retry that appended a message twice. Both land in the
 * same partition (keyed by bucket) close in offset, so a bounded window catches them.
 */
export class SidWindow {
  private readonly ring: (string | undefined)[];
  private readonly seen = new Set<string>();
  private next = 0;

  constructor(private readonly capacity: number) {
    this.ring = new Array<string | undefined>(capacity);
  }

  has(sid: string): boolean {
    return this.seen.has(sid);
  }

  add(sid: string): void {
    if (this.capacity <= 0 || this.seen.has(sid)) return;
    const old = this.ring[this.next];
    if (old !== undefined) this.seen.delete(old);
    this.ring[this.next] = sid;
    this.seen.add(sid);
    this.next = (this.next + 1) % this.capacity;
  }

  get size(): number {
    return this.seen.size;
  }
}

/** keys kept per partition: ~130 bytes each, so ~13 MB per partition at most. */
export const SID_WINDOW_SIZE = 100_000;
