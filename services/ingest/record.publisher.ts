import type { Producer } from 'kafkajs';
import { unavailable } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { TOPICS } from '../shared/topics.js';
import { metrics, secondsSince } from '../shared/metrics.js';

interface Pending {
  accountSid: string;
  bucketSid: string;
  /** each record serialised (JSON), one payload line each */
  lines: string[];
  waiters: { resolve: () => void; reject: (e: Error) => void }[];
}

const FLUSH_RECORDS = 2000;

/** What one `publish` call sent: the indexes of the records that could not be serialised. */
export interface PublishResult {
  unserialisable: number[];
}

/**
 * Sends in flight before a lingering batch waits for one of them to finish (up to HOLD_MS): under
 * load the batches grow to what arrives during a round trip to the broker instead of one send per
 * `lingerMs`. Each kafkajs send has a fixed CPU cost whatever its size, which dominates when
 * one-record-per-call traffic makes sends of a few records (bench/README.md).
 */
const MAX_IN_FLIGHT = 2;
const HOLD_MS = 50;

const NEWLINE = 0x0a;

/**
 * Version 2 of the `traffic.requests` payload (schemas/request-record.schema.ts): a header line,
 * then one record per line. The processor stores a record no step changed as this line, with
 * the fields its steps added spliced in.
 * NOTE: a Buffer, each line UTF-8-encoded once straight into it: kafkajs measures a string value
 * with Buffer.byteLength twice before writing it, and one string of all the lines would be
 * flattened (copied) before encoding (bench/README.md has the figures).
 */
function messageValue(p: Pending): Buffer {
  const head = JSON.stringify({ v: 2, accountSid: p.accountSid, bucketSid: p.bucketSid });
  const lines = p.lines;
  let size = Buffer.byteLength(head);
  for (const line of lines) size += 1 + Buffer.byteLength(line);
  const value = Buffer.allocUnsafe(size);
  let at = value.write(head);
  for (const line of lines) {
    value[at++] = NEWLINE;
    at += value.write(line, at);
  }
  return value;
}

/**
 * Publishes accepted records to `traffic.requests`, micro-batching across HTTP calls: calls that
 * arrive within `lingerMs` are grouped per bucket into one Kafka message (keyed by bucket sid) and
 * sent together with acks=all. Each caller's promise settles only when Kafka acknowledged the
 * message that carries its records, so a 202 always means "durable in Kafka". A call's records
 * always travel in one message, so a failure never half-accepts a call.
 */
export class RecordPublisher {
  private pending = new Map<string, Pending>();
  private pendingCount = 0;
  private timer: NodeJS.Timeout | undefined;
  /** when the oldest pending record arrived */
  private pendingSince = 0;
  private inflight = new Set<Promise<void>>();

  constructor(
    private readonly producer: Producer,
    private readonly opts: { lingerMs: number; timeoutMs: number },
    private readonly log: Logger,
  ) {}

  /**
   * Queues `records` for the bucket and settles when Kafka acknowledged them. Each record is
   * serialised here, in the caller's request, one at a time: a record that cannot be (a value
   * JSON cannot write) is left out and its index in `records` returned in `unserialisable`, so it
   * fails alone and nothing reaches the linger timer that could throw there.
   */
  publish(accountSid: string, bucketSid: string, records: unknown[]): Promise<PublishResult> {
    const lines: string[] = [];
    const unserialisable: number[] = [];
    records.forEach((r, index) => {
      try {
        const line = JSON.stringify(r) as string | undefined;
        if (typeof line === 'string') lines.push(line);
        else unserialisable.push(index);
      } catch {
        unserialisable.push(index);
      }
    });
    if (lines.length === 0) return Promise.resolve({ unserialisable });
    return new Promise<PublishResult>((resolve, reject) => {
      let p = this.pending.get(bucketSid);
      if (!p) {
        p = { accountSid, bucketSid, lines: [], waiters: [] };
        this.pending.set(bucketSid, p);
      }
      for (const line of lines) p.lines.push(line);
      p.waiters.push({ resolve: () => resolve({ unserialisable }), reject });
      if (this.pendingCount === 0) this.pendingSince = Date.now();
      this.pendingCount += lines.length;
      if (this.pendingCount >= FLUSH_RECORDS || this.opts.lingerMs === 0) this.flush();
      else this.timer ??= setTimeout(() => this.onLinger(), this.opts.lingerMs);
    });
  }

  private onLinger(): void {
    this.timer = undefined;
    if (this.inflight.size < MAX_IN_FLIGHT || Date.now() - this.pendingSince >= HOLD_MS) this.flush();
    else this.timer = setTimeout(() => this.onLinger(), this.opts.lingerMs);
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    this.pendingCount = 0;
    const messages = batch.map((p) => ({ key: p.bucketSid, value: messageValue(p) }));
    let timeout: NodeJS.Timeout | undefined;
    const start = process.hrtime.bigint();
    const send = this.producer.send({
      topic: TOPICS.requests,
      acks: -1,
      timeout: this.opts.timeoutMs,
      messages,
    });
    const deadline = new Promise<never>((_, reject) => {
      timeout = setTimeout(() => reject(new Error('produce timed out')), this.opts.timeoutMs);
    });
    const done = Promise.race([send, deadline]).then(
      () => {
        metrics.kafkaPublish.observe({ topic: TOPICS.requests, outcome: 'ok' }, secondsSince(start));
        for (const p of batch) for (const w of p.waiters) w.resolve();
      },
      (err: Error) => {
        metrics.kafkaPublish.observe({ topic: TOPICS.requests, outcome: 'failed' }, secondsSince(start));
        this.log.warn({ err: err.message, messages: messages.length }, 'produce failed');
        const e = unavailable('The event log');
        for (const p of batch) for (const w of p.waiters) w.reject(e);
      },
    );
    // A send that outlives its deadline must not surface as an unhandled rejection later.
    send.catch(() => undefined);
    const tracked = done.finally(() => {
      clearTimeout(timeout);
      this.inflight.delete(tracked);
      // What gathered while every slot was busy goes now.
      if (this.pendingCount > 0 && this.inflight.size < MAX_IN_FLIGHT) this.flush();
    });
    this.inflight.add(tracked);
  }

  /** Sends what is pending and waits for every send in flight (shutdown). */
  async drain(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.inflight]);
  }
}
