import { takeBatch, type Batch, type Taking } from './batch.js';
import { CircuitBreaker } from './circuit.js';
import type { ResolvedOptions } from './options.js';
import { BoundedQueue, type QueueItem } from './queue.js';
import type { Counters } from './stats.js';
import { backoffMs, classify, request, retryAfterMs } from './transport.js';
import type { CapturedRecord, TaplineStats } from './types.js';

/**
 * A queued record: its JSON line as UTF-8 bytes in a slab (with the rules version it was made
 * under), or the object before the first settings answer.
 */
export type QueuedRecord = QueueItem<CapturedRecord>;

/** What the delivery loop reads from the core that owns it. */
export interface DeliveryHost {
  readonly opts: ResolvedOptions;
  readonly counters: Counters;
  /** true once the core is closed: no more waits, timers or attempts */
  readonly closed: boolean;
  /** whether records may be sent now (settings known, capture active) */
  sendable(): boolean;
  /** whether no finished capture waits to be built into a record */
  idle(): boolean;
  /** a queued record's JSON bytes under the current rules; undefined: not sent */
  lineOf(item: QueuedRecord): Buffer | undefined;
  debug(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  internalError(err: unknown): void;
}

/**
 * The delivery loop: the bounded queue, batches sent when full or at the flush interval, retries
 * with backoff (or Retry-After) and the circuit breaker. One batch is in flight at a time; while
 * it waits for a retry it is dropped for newer records when the queue's byte bound needs room.
 */
export class Delivery {
  readonly queue: BoundedQueue<CapturedRecord>;
  private readonly circuit: CircuitBreaker;
  private inflight: Batch | undefined;
  /** the batch being built and compressed (its records are off the queue, not yet in flight) */
  private taking: Taking | undefined;
  private pumping = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private sleepTimer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private readonly flushWaiters = new Set<() => void>();
  /** set by the interval timer: send a partial batch now */
  private dueNow = false;
  /** set by a flush: one attempt now, whatever the circuit says */
  private forceAttempt = false;
  /** failed attempts of the batch in flight */
  private attempt = 0;
  /** true while the batch in flight is on the wire (it cannot be dropped then) */
  private sending = false;
  /** records of in-flight batches dropped for newer ones while waiting for a retry */
  private inflightDropped = 0;

  constructor(private readonly host: DeliveryHost) {
    const o = host.opts;
    this.queue = new BoundedQueue(o.maxQueueBytes);
    this.circuit = new CircuitBreaker(o.circuitThreshold, o.circuitOpenMs, o.circuitMaxOpenMs);
  }

  /** Queues a record; a full batch starts the loop, a partial one waits for the flush interval. */
  push(item: QueuedRecord, size: number): void {
    const o = this.host.opts;
    // The batch in flight holds the oldest records: while it waits for a retry it goes first.
    const b = this.inflight;
    if (b && !this.sending && this.queue.bytes + size + b.estimatedBytes > o.maxQueueBytes) {
      this.inflight = undefined;
      this.inflightDropped += b.records;
      this.attempt = 0;
      this.queue.setMaxBytes(o.maxQueueBytes);
    }
    this.queue.push(item, size);
    if (this.queue.length >= o.batchSize || this.queue.bytes >= o.batchBytes) this.kick();
    else if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => this.onInterval(), o.flushIntervalMs);
      this.flushTimer.unref();
    }
  }

  /** Nothing queued, nothing being batched, nothing in flight, no capture waiting to be built. */
  drained(): boolean {
    return this.queue.length === 0 && !this.inflight && !this.taking && this.host.idle();
  }

  /**
   * Resolves true once everything queued is sent, false at the timeout (the records stay queued).
   * A ref'd timer keeps the process alive until then.
   */
  flush(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined = undefined;
      const done = (ok: boolean) => {
        this.flushWaiters.delete(waiter);
        if (timer) clearTimeout(timer);
        resolve(ok);
      };
      const waiter = () => done(true);
      this.flushWaiters.add(waiter);
      timer = setTimeout(() => done(this.drained()), timeoutMs);
      this.dueNow = true;
      this.forceAttempt = true;
      // Cuts a backoff or circuit wait short; the loop then makes its attempt.
      this.wake?.();
      this.kick();
    });
  }

  /** Stops the interval timer and ends a wait (the host is closed). */
  stop(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.wake?.();
  }

  stats(): Pick<TaplineStats, 'dropped' | 'queuedRecords' | 'queuedBytes' | 'circuit'> {
    return {
      dropped: this.queue.dropped + this.inflightDropped,
      queuedRecords: this.queue.length + (this.inflight?.records ?? 0) + (this.taking?.records ?? 0),
      queuedBytes:
        this.queue.bytes + (this.inflight?.estimatedBytes ?? 0) + (this.taking?.estimatedBytes ?? 0),
      circuit: this.circuit.state,
    };
  }

  private onInterval(): void {
    this.flushTimer = undefined;
    this.dueNow = true;
    this.kick();
  }

  /** Starts the delivery loop if it is not running (or wakes it from a wait when asked). */
  kick(): void {
    if (this.pumping || this.host.closed) return;
    this.pumping = true;
    setImmediate(() => {
      this.pump()
        .catch((err: unknown) => this.host.internalError(err))
        .finally(() => {
          this.pumping = false;
          if (this.drained()) for (const w of this.flushWaiters) w();
          else if (this.queue.length > 0 && !this.flushTimer && !this.host.closed && this.host.sendable()) {
            this.flushTimer = setTimeout(() => this.onInterval(), this.host.opts.flushIntervalMs);
            this.flushTimer.unref();
          }
        });
    });
  }

  private async pump(): Promise<void> {
    const o = this.host.opts;
    while (this.host.sendable() || this.inflight) {
      if (!this.inflight) {
        if (this.queue.length === 0) return;
        // A partial batch waits for the interval unless a flush is waiting for it.
        const full = this.queue.length >= o.batchSize || this.queue.bytes >= o.batchBytes;
        if (!full && this.flushWaiters.size === 0 && !this.dueNow) return;
        this.dueNow = false;
        this.inflight = await this.takeBatch();
        if (!this.inflight) continue;
        // The bound covers records in flight too.
        this.queue.setMaxBytes(Math.max(0, o.maxQueueBytes - this.inflight.estimatedBytes));
      }
      const wait = this.circuit.waitMs();
      // A flush (shutdown) gets one attempt even while the circuit is open.
      if (wait > 0 && !this.forceAttempt) {
        await this.sleep(wait);
        if (this.host.closed) return;
        continue;
      }
      this.forceAttempt = false;
      const outcome = await this.send(this.inflight);
      if (!this.inflight) continue; // dropped for newer records during the retry wait
      if (outcome === 'retry') {
        this.host.counters.retries++;
        this.attempt++;
        continue;
      }
      this.attempt = 0;
      this.inflight = undefined;
      this.queue.setMaxBytes(o.maxQueueBytes);
    }
  }

  private async takeBatch(): Promise<Batch | undefined> {
    const taking: Taking = { records: 0, estimatedBytes: 0 };
    this.taking = taking;
    try {
      return await takeBatch(this.queue, this.host.opts, taking, (item) => this.host.lineOf(item));
    } finally {
      this.taking = undefined;
    }
  }

  /** One attempt to send a batch: 'retry' after the wait its failure calls for. */
  private async send(batch: Batch): Promise<'ok' | 'retry' | 'drop'> {
    const { opts: o, counters } = this.host;
    const url = new URL(`/v1/buckets/${encodeURIComponent(o.bucketSid)}/ingest`, o.endpoint);
    let status = 0;
    let retryAfter: number | undefined;
    this.sending = true;
    try {
      const res = await request(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${o.token}`,
          'content-type': 'application/json',
          'content-encoding': 'gzip',
        },
        body: batch.body,
        timeoutMs: o.requestTimeoutMs,
      }).finally(() => (this.sending = false));
      status = res.status;
      retryAfter = retryAfterMs(res.headers['retry-after']);
      const kind = classify(status);
      if (kind === 'ok') {
        this.circuit.success();
        let rejected = 0;
        try {
          const answer = JSON.parse(res.body) as { rejected?: unknown[] };
          rejected = Array.isArray(answer.rejected) ? answer.rejected.length : 0;
          if (rejected)
            this.host.warn({ rejected: answer.rejected?.slice(0, 3) }, 'tapline: ingest rejected records');
        } catch {
          // a 2xx without a JSON body still means accepted
        }
        counters.batches++;
        counters.sent += batch.records - rejected;
        counters.rejected += rejected;
        this.host.debug({ records: batch.records, rejected }, 'batch sent');
        return 'ok';
      }
      if (kind === 'drop') {
        this.circuit.success();
        counters.rejected += batch.records;
        this.host.warn(
          { status, answer: res.body.slice(0, 500) },
          'tapline: ingest refused a batch; dropped',
        );
        return 'drop';
      }
    } catch (err) {
      this.host.debug({ err: (err as Error).message }, 'batch send failed');
    }
    counters.failures++;
    const opened = this.circuit.failure();
    if (opened) this.host.warn({ status }, 'tapline: ingest unreachable, circuit open');
    // The circuit's own wait applies when it opened; otherwise backoff (or Retry-After).
    if (!opened) {
      const wait = retryAfter ?? backoffMs(this.attempt, o.retryBaseMs, o.retryMaxMs);
      await this.sleep(Math.min(wait, 3_600_000));
    } else if (retryAfter !== undefined) await this.sleep(Math.min(retryAfter, 3_600_000));
    return 'retry';
  }

  /** An unref'd wait the loop can be woken from (flush, shutdown). */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        if (this.sleepTimer) clearTimeout(this.sleepTimer);
        this.sleepTimer = undefined;
        resolve();
      };
      this.sleepTimer = setTimeout(() => this.wake?.(), ms);
      this.sleepTimer.unref();
    });
  }
}
