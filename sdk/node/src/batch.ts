import { createGzip } from 'node:zlib';
import type { BoundedQueue, QueueItem } from './queue.js';

/**
 * Level 1: on captured-traffic JSON it compresses nearly as well as the default level 6 (about
 * 40:1 against 45:1) for a quarter of the CPU, which the host pays.
 */
const GZIP_LEVEL = 1;
/** Bytes of JSON lines joined and handed to gzip per turn of the event loop. */
const BATCH_SLICE_BYTES = 32 * 1024;
const OPEN = Buffer.from('{"records":[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']}');

/** A gzipped ingest body, `{"records":[…]}`, and what it holds. */
export interface Batch {
  records: number;
  /** the queued sizes of its records, which count against the queue's byte bound */
  estimatedBytes: number;
  body: Buffer;
}

/** The records of the batch being built (off the queue, not yet in flight). */
export interface Taking {
  records: number;
  estimatedBytes: number;
}

export interface BatchLimits {
  batchSize: number;
  batchBytes: number;
  maxQueueBytes: number;
}

/**
 * Takes the next batch off the queue and gzips it; undefined when no queued record is left to
 * send. The records are JSON bytes already (made when each was captured), so building a batch is
 * copying bytes; they go to gzip in slices of about BATCH_SLICE_BYTES with a turn of the event
 * loop between slices, so a 500-record batch never holds the host's loop for one long stretch.
 * Compression runs on libuv's thread pool (a zlib stream), not on the loop. `lineOf` gives a
 * queued record's bytes under the current rules (undefined: not sent); `taking` is updated as
 * records are taken, so the caller's stats count them while the batch is built.
 */
export async function takeBatch<T>(
  queue: BoundedQueue<T>,
  limits: BatchLimits,
  taking: Taking,
  lineOf: (item: QueueItem<T>) => Buffer | undefined,
): Promise<Batch | undefined> {
  const gz = createGzip({ level: GZIP_LEVEL });
  const out: Buffer[] = [];
  gz.on('data', (c: Buffer) => out.push(c));
  const compressed = new Promise<void>((resolve, reject) => {
    gz.once('end', resolve);
    gz.once('error', reject);
  });
  try {
    let bytes = 0;
    let slice: Buffer[] = [OPEN];
    let sliceBytes = 0;
    const writeSlice = () => {
      gz.write(Buffer.concat(slice));
      slice = [];
      sliceBytes = 0;
      // The byte bound covers the records being batched too.
      queue.setMaxBytes(Math.max(0, limits.maxQueueBytes - taking.estimatedBytes));
    };
    while (taking.records < limits.batchSize && bytes < limits.batchBytes) {
      const next = queue.shift();
      if (!next) break;
      taking.estimatedBytes += next.size;
      const line = lineOf(next.item);
      if (line === undefined) continue;
      if (taking.records > 0) slice.push(COMMA);
      slice.push(line);
      taking.records++;
      bytes += line.length;
      sliceBytes += line.length;
      if (sliceBytes >= BATCH_SLICE_BYTES) {
        writeSlice();
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    if (taking.records === 0) {
      gz.destroy();
      return undefined;
    }
    slice.push(CLOSE);
    // Records captured while this batch is compressed count against the bound with it.
    queue.setMaxBytes(Math.max(0, limits.maxQueueBytes - taking.estimatedBytes));
    gz.end(Buffer.concat(slice));
    await compressed;
    return { records: taking.records, estimatedBytes: taking.estimatedBytes, body: Buffer.concat(out) };
  } finally {
    // The caller bounds the queue by the batch in flight as soon as this returns one.
    queue.setMaxBytes(limits.maxQueueBytes);
  }
}
