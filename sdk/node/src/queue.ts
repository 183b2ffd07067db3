/**
 * A queued item as pushed and shifted: a JSON line held as `len` bytes at `off` in `slab` (made
 * under rules `version`), or an object (`record`).
 */
export interface QueueItem<T> {
  slab?: Buffer;
  off?: number;
  len?: number;
  version?: number;
  record?: T;
}

const MIN_CAPACITY = 1024;

/**
 * FIFO of captured records bounded by (estimated) bytes. Pushing past the bound drops the oldest
 * records and counts them, so the host's memory never grows with an unreachable ingest.
 *
 * A line's place (slab, offset, length, rules version) and size are kept in typed-array rings,
 * not as an object per record: a record waits here for up to a batch interval, long enough to
 * outlive a young-generation collection, and an object per queued record would then be copied
 * and promoted by the host's garbage collector at every scavenge (at 5,000 captures/s, 63 KB
 * surviving each scavenge with an object per record against 24–31 KB without: docs/sdk.md). The slabs are
 * referenced once each, in order, and released when the queue moves past them. Objects (records
 * queued before the first settings answer) are kept in a plain array slot.
 */
export class BoundedQueue<T> {
  private cap = MIN_CAPACITY;
  private offs = new Int32Array(MIN_CAPACITY);
  private lens = new Int32Array(MIN_CAPACITY);
  private versions = new Int32Array(MIN_CAPACITY);
  /** -1 for an object item */
  private slabIds = new Int32Array(MIN_CAPACITY);
  private sizes = new Float64Array(MIN_CAPACITY);
  private objects: (T | undefined)[] = new Array<T | undefined>(MIN_CAPACITY);
  private head = 0;
  private count = 0;
  private bytesHeld = 0;
  /** slabs still referenced by queued lines; slabs[0] has id `slabBase` */
  private slabs: Buffer[] = [];
  private slabBase = 0;
  dropped = 0;

  constructor(private maxBytes: number) {}

  get length(): number {
    return this.count;
  }

  get bytes(): number {
    return this.bytesHeld;
  }

  setMaxBytes(n: number): void {
    this.maxBytes = n;
    this.trim();
  }

  /** Adds one item of `size` bytes; returns how many old items were dropped to make room. */
  push(item: QueueItem<T>, size: number): number {
    if (this.count === this.cap) this.grow();
    const i = (this.head + this.count) & (this.cap - 1);
    if (item.slab) {
      const last = this.slabs.length - 1;
      if (last < 0 || this.slabs[last] !== item.slab) this.slabs.push(item.slab);
      this.slabIds[i] = this.slabBase + this.slabs.length - 1;
      this.offs[i] = item.off ?? 0;
      this.lens[i] = item.len ?? 0;
      this.versions[i] = item.version ?? 0;
    } else {
      this.slabIds[i] = -1;
      this.objects[i] = item.record;
    }
    this.sizes[i] = size;
    this.count++;
    this.bytesHeld += size;
    return this.trim();
  }

  private trim(): number {
    let n = 0;
    while (this.bytesHeld > this.maxBytes && this.count > 0) {
      this.shift();
      n++;
    }
    this.dropped += n;
    return n;
  }

  /** Removes and returns the oldest item with its size. */
  shift(): { item: QueueItem<T>; size: number } | undefined {
    if (this.count === 0) return undefined;
    const i = this.head;
    const size = this.sizes[i]!;
    const id = this.slabIds[i]!;
    let item: QueueItem<T>;
    if (id >= 0) {
      // Slabs before this line's are no longer referenced by the queue.
      while (this.slabBase < id) {
        this.slabs.shift();
        this.slabBase++;
      }
      item = { slab: this.slabs[0], off: this.offs[i], len: this.lens[i], version: this.versions[i] };
    } else {
      item = { record: this.objects[i] };
      this.objects[i] = undefined;
    }
    this.head = (i + 1) & (this.cap - 1);
    this.count--;
    this.bytesHeld -= size;
    if (this.count === 0) this.reset();
    return { item, size };
  }

  clear(): void {
    this.objects.fill(undefined);
    this.count = 0;
    this.bytesHeld = 0;
    this.reset();
  }

  /** Empty: the slabs are released and a ring grown by a burst goes back to its first size. */
  private reset(): void {
    this.head = 0;
    this.slabBase += this.slabs.length;
    this.slabs = [];
    if (this.cap > MIN_CAPACITY) this.allocate(MIN_CAPACITY);
  }

  private grow(): void {
    const old = {
      offs: this.offs,
      lens: this.lens,
      versions: this.versions,
      slabIds: this.slabIds,
      sizes: this.sizes,
      objects: this.objects,
    };
    const oldCap = this.cap;
    this.allocate(oldCap * 2);
    // The ring's contents in order, from head: [head, oldCap) then [0, head).
    const tail = oldCap - this.head;
    const copy = <A extends Int32Array | Float64Array>(from: A, to: A) => {
      to.set(from.subarray(this.head, oldCap), 0);
      to.set(from.subarray(0, this.head), tail);
    };
    copy(old.offs, this.offs);
    copy(old.lens, this.lens);
    copy(old.versions, this.versions);
    copy(old.slabIds, this.slabIds);
    copy(old.sizes, this.sizes);
    for (let k = 0; k < oldCap; k++) this.objects[k] = old.objects[(this.head + k) & (oldCap - 1)];
    this.head = 0;
  }

  private allocate(cap: number): void {
    this.cap = cap;
    this.offs = new Int32Array(cap);
    this.lens = new Int32Array(cap);
    this.versions = new Int32Array(cap);
    this.slabIds = new Int32Array(cap);
    this.sizes = new Float64Array(cap);
    this.objects = new Array<T | undefined>(cap);
  }
}
