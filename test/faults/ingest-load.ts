import { performance } from 'node:perf_hooks';
import { randomAlnum } from '../../services/shared/ids.js';

export interface LoadOptions {
  /** one ingest listener, or several that the calls take in turn (a scaled deployment) */
  ingestUrl: string | string[];
  bucketSid: string;
  token: string;
  /** concurrent senders, each with one call in flight */
  senders?: number;
  /** records per call */
  batch?: number;
  /** records per second over all senders (0: as fast as answered) */
  rate?: number;
  /** stop sending once this many records were sent */
  maxRecords?: number;
  /** a call not answered by then counts as a hang (status 'TIMEOUT') */
  requestTimeoutMs?: number;
  /** the record for a client-chosen sid; default {@link faultRecord} */
  record?: (sid: string, seq: number) => Record<string, unknown>;
  /** keep every sid (set comparison); a long soak only counts */
  trackSids?: boolean;
}

/** One ingest call as the client saw it; times are ms on the performance clock of this process. */
export interface Answer {
  start: number;
  end: number;
  /** HTTP status, or the network error code ('ECONNREFUSED', 'TIMEOUT', ...) */
  status: number | string;
  records: number;
}

/**
 * A header only the fault suite's own redaction rule replaces: its name and value are nothing the
 * built-in sensitive-data detection recognises (a name with "secret" in it is masked as a password
 * before any rule of the account runs, so a rule's replacement would never show).
 */
export const RULE_HEADER = 'x-fault-label';
export const RULE_VALUE = 'label-fault';

/** A plausible captured call; status 500 for one in ten so aggregates have errors to count too. */
export function faultRecord(sid: string, seq: number): Record<string, unknown> {
  const now = new Date();
  const path = `/orders/${seq % 40}/items`;
  return {
    sid,
    environmentSid: 'prod01',
    createdAt: now.toISOString(),
    request: {
      host: 'api.example.com',
      method: seq % 3 === 0 ? 'POST' : 'GET',
      path,
      port: 443,
      url: `https://api.example.com${path}?seq=${seq}`,
      queryString: { seq: String(seq) },
      headers: { 'content-type': 'application/json', [RULE_HEADER]: RULE_VALUE },
      body: JSON.stringify({ seq }),
      contentType: 'application/json',
      size: 12,
    },
    response: {
      statusCode: seq % 10 === 0 ? 500 : 200,
      headers: { 'content-type': 'application/json' },
      size: 42,
      body: JSON.stringify({ ok: true, seq }),
      contentType: 'application/json',
    },
    timings: { duration: 3 + (seq % 97) },
  };
}

/** `req_` + 27 base62 characters: the client chooses the sid, so sent and stored sets compare. */
export function clientSid(): string {
  return `req_${randomAlnum(27)}`;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A steady load through the ingest listener from the test process: `senders` loops, each posting
 * batches of client-sid records, paced to `rate` records/s. Every sid ends up in exactly one of
 * `acked` (answered 202 and accepted) or `unacked` (any other answer, a network error or a timeout),
 * so the records found later can be compared as sets.
 */
export class IngestLoad {
  readonly acked = new Set<string>();
  readonly unacked = new Set<string>();
  /** sids of records a 202 answer listed as rejected (a valid record never is) */
  readonly rejected = new Set<string>();
  readonly answers: Answer[] = [];
  private readonly opts: Required<LoadOptions>;
  private running = false;
  private loops: Promise<void>[] = [];
  private sent = 0;
  private calls = 0;
  private t0 = 0;
  /** records acknowledged, counted also when sids are not kept */
  ackedCount = 0;

  constructor(opts: LoadOptions) {
    this.opts = {
      senders: 3,
      batch: 50,
      rate: 300,
      maxRecords: 20_000,
      requestTimeoutMs: 30_000,
      record: faultRecord,
      trackSids: true,
      ...opts,
    };
  }

  get sentRecords(): number {
    return this.sent;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.t0 = performance.now();
    this.sent = 0;
    for (let i = 0; i < this.opts.senders; i++) this.loops.push(this.loop());
  }

  /** Stops sending and waits for the calls in flight to be answered. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  private async loop(): Promise<void> {
    const { batch, rate, maxRecords } = this.opts;
    while (this.running && this.sent < maxRecords) {
      if (rate > 0) {
        const due = this.t0 + ((this.sent + batch) / rate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) {
          await sleep(Math.min(wait, 250));
          continue;
        }
      }
      const n = Math.min(batch, maxRecords - this.sent);
      this.sent += n;
      await this.send(n);
    }
  }

  private async send(n: number): Promise<void> {
    const sids: string[] = [];
    const records: Record<string, unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const sid = clientSid();
      sids.push(sid);
      records.push(this.opts.record(sid, this.answers.length * this.opts.batch + i));
    }
    const urls = ([] as string[]).concat(this.opts.ingestUrl);
    const ingestUrl = urls[this.calls++ % urls.length]!;
    const start = performance.now();
    let status: number | string;
    let body: unknown;
    try {
      const res = await fetch(`${ingestUrl}/v1/buckets/${this.opts.bucketSid}/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.opts.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ records }),
        signal: AbortSignal.timeout(this.opts.requestTimeoutMs),
      });
      status = res.status;
      const text = await res.text();
      body = text ? (JSON.parse(text) as unknown) : undefined;
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string }; code?: string };
      status = e.name === 'TimeoutError' ? 'TIMEOUT' : (e.cause?.code ?? e.code ?? e.name ?? 'ERROR');
    }
    this.answers.push({ start, end: performance.now(), status, records: n });
    if (status !== 202) {
      if (this.opts.trackSids) for (const s of sids) this.unacked.add(s);
      return;
    }
    const rejected = new Set(
      ((body as { rejected?: { index: number }[] } | undefined)?.rejected ?? []).map((r) => r.index),
    );
    this.ackedCount += n - rejected.size;
    if (this.opts.trackSids)
      sids.forEach((s, i) => (rejected.has(i) ? this.rejected.add(s) : this.acked.add(s)));
  }

  /** Calls per answer status, e.g. {202: 120, 503: 14}. */
  statusCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const a of this.answers) out[String(a.status)] = (out[String(a.status)] ?? 0) + 1;
    return out;
  }

  /** Longest answer time of calls that started in [from, to). */
  maxAnswerMs(from = 0, to = Infinity, status?: number | string): number {
    let max = 0;
    for (const a of this.answers) {
      if (a.start >= from && a.start < to && (status === undefined || a.status === status))
        max = Math.max(max, a.end - a.start);
    }
    return max;
  }

  /** The first call (by answer time) answered with `status` that started at or after `after`. */
  firstAnswer(status: number | string, after: number): Answer | undefined {
    let best: Answer | undefined;
    for (const a of this.answers) {
      if (a.status === status && a.start >= after && (!best || a.end < best.end)) best = a;
    }
    return best;
  }

  /** Polls until `n` more records than now are acknowledged (load must be running). */
  async waitForMoreAcked(n: number, timeoutMs = 120_000): Promise<void> {
    const target = this.ackedCount + n;
    const deadline = performance.now() + timeoutMs;
    while (this.ackedCount < target) {
      if (performance.now() > deadline) {
        throw new Error(
          `load: ${this.ackedCount}/${target} records acknowledged after ${timeoutMs} ms; ` +
            `statuses ${JSON.stringify(this.statusCounts())}`,
        );
      }
      await sleep(50);
    }
  }

  /** Polls until a call that started at or after `after` is answered `status`. */
  async waitForAnswer(status: number | string, after: number, timeoutMs = 120_000): Promise<Answer> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const a = this.firstAnswer(status, after);
      if (a) return a;
      if (performance.now() > deadline) {
        throw new Error(
          `load: no ${status} answer within ${timeoutMs} ms; statuses ${JSON.stringify(this.statusCounts())}`,
        );
      }
      await sleep(50);
    }
  }
}
