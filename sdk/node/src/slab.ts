import type { QueueItem } from './queue.js';

/**
 * Bytes of the slabs queued lines are written into. A line lives in the V8 heap only while it is
 * made; queued, it is off-heap bytes, so the queue adds nothing for the garbage collector to copy
 * or mark (a heap string queued for a batch interval outlives a young-generation collection and
 * is then promoted and marked: more and longer pauses in the host).
 */
const SLAB_BYTES = 256 * 1024;

/**
 * Writes JSON lines one after another into off-heap slabs. A slab is released once the queue no
 * longer refers to any line in it (BoundedQueue drops its reference when it moves past it).
 */
export class SlabWriter {
  private slab: Buffer | undefined;
  private off = 0;

  /** Writes a line into the current slab (a new one when it may not fit; UTF-8 is ≤ 3 bytes a char). */
  write<T>(line: string, version: number): QueueItem<T> {
    const most = line.length * 3;
    if (!this.slab || this.slab.length - this.off < most) {
      this.slab = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, most));
      this.off = 0;
    }
    const off = this.off;
    const len = this.slab.write(line, off);
    this.off += len;
    return { slab: this.slab, off, len, version };
  }
}
