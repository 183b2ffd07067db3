/**
 * FIFO of captured records bounded by (estimated) bytes. Pushing past the bound drops the oldest
 * records and counts them, so the host's memory never grows with an unreachable ingest.
 * A ring of arrays keeps push and shift O(1) amortised.
 */
export class BoundedQueue<T> {
  private items: (T | undefined)[] = [];
  private sizes: number[] = [];
  private head = 0;
  private bytesHeld = 0;
  dropped = 0;

  constructor(private maxBytes: number) {}

  get length(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.bytesHeld;
  }

  setMaxBytes(n: number): void {
    this.maxBytes = n;
    this.trim();
  }

  /** Adds one item of `size` bytes; returns how many old items were dropped to make room. */
  push(item: T, size: number): number {
    this.items.push(item);
    this.sizes.push(size);
    this.bytesHeld += size;
    return this.trim();
  }

  private trim(): number {
    let n = 0;
    while (this.bytesHeld > this.maxBytes && this.length > 0) {
      this.shift();
      n++;
    }
    this.dropped += n;
    return n;
  }

  /** Removes and returns the oldest item with its size. */
  shift(): { item: T; size: number } | undefined {
    if (this.length === 0) return undefined;
    const item = this.items[this.head] as T;
    const size = this.sizes[this.head]!;
    this.items[this.head] = undefined;
    this.head++;
    this.bytesHeld -= size;
    // Compact once the consumed prefix dominates, keeping shift O(1) amortised.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    return { item, size };
  }

  /** Puts items back at the front (a batch that could not be sent), oldest first. */
  unshiftAll(entries: { item: T; size: number }[]): void {
    if (entries.length === 0) return;
    const items = entries.map((e) => e.item);
    const sizes = entries.map((e) => e.size);
    this.items = [...items, ...this.items.slice(this.head)];
    this.sizes = [...sizes, ...this.sizes.slice(this.head)];
    this.head = 0;
    for (const s of sizes) this.bytesHeld += s;
    this.trim();
  }

  clear(): void {
    this.items = [];
    this.sizes = [];
    this.head = 0;
    this.bytesHeld = 0;
  }
}
