import { hostname } from 'node:os';
import { createGzip } from 'node:zlib';
import { CircuitBreaker } from './circuit.js';
import { BoundedQueue, type QueueItem } from './queue.js';
import {
  compileExclusion,
  compileRedaction,
  excludedBy,
  redactRecord,
  sampleRateOf,
  type CompiledExclusion,
  type CompiledRedaction,
} from './rules.js';
import {
  byteSize,
  compileCriteria,
  hasSize,
  compileSensitive,
  excludedByCriteria,
  redactSensitiveRules,
  sensitiveWithout,
  type CompiledCriteria,
  type CompiledSensitive,
} from './shape-a.js';
import { DEFAULT_BODY_TYPES } from './capture.js';
import { backoffMs, classify, request, retryAfterMs, SDK_NAME } from './transport.js';
import type {
  ConsumerInfo,
  CapturedRecord,
  RemoteExclusionCriteria,
  RemoteExclusionRule,
  RemoteRedactionRule,
  RemoteSettings,
  TaplineLogger,
  TaplineOptions,
  TaplineStats,
} from './types.js';

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
const ENV_SID = /^[a-z0-9]{6}$/;

export interface ResolvedOptions {
  endpoint: URL;
  settingsEndpoint: URL;
  bucketSid: string;
  token: string;
  environment: string | null;
  tags: { key: string; value: string }[];
  clientId: string;
  captureOutgoing: boolean;
  maxBodyBytes: number;
  bodyContentTypes: string[];
  dropHeaders: Set<string> | null;
  sampling: Record<string, number> | undefined;
  maxQueueBytes: number;
  batchSize: number;
  batchBytes: number;
  flushIntervalMs: number;
  settingsRefreshMs: number;
  requestTimeoutMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  handleProcessEvents: boolean;
  shutdownTimeoutMs: number;
  enabled: boolean;
  consumer: TaplineOptions['consumer'];
}

const num = (v: unknown, dflt: number, min: number, max: number): number =>
  typeof v === 'number' && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : dflt;

/** Validated options with defaults; bad values fall back to the default instead of throwing. */
export function resolveOptions(o: TaplineOptions): ResolvedOptions {
  const base = (s: string | undefined): URL => {
    try {
      return new URL(s ?? 'http://127.0.0.1:8081');
    } catch {
      return new URL('http://127.0.0.1:8081');
    }
  };
  const endpoint = base(o.endpoint);
  const env = typeof o.environment === 'string' ? o.environment : null;
  const tags = Object.entries(o.tags ?? {})
    .filter(([k, v]) => typeof k === 'string' && k.length > 0 && typeof v === 'string')
    .map(([key, value]) => ({ key: key.slice(0, 256), value: value.slice(0, 4096) }));
  tags.push({ key: 'sdk', value: SDK_NAME });
  // An environment that is not an environment sid still travels, as a tag.
  if (env !== null && !ENV_SID.test(env)) tags.push({ key: 'environment', value: env.slice(0, 4096) });
  const batchBytes = num(o.batchBytes, 1_048_576, 1024, 4 * 1_048_576);
  return {
    endpoint,
    settingsEndpoint: o.settingsEndpoint ? base(o.settingsEndpoint) : endpoint,
    bucketSid: String(o.bucketSid ?? ''),
    token: String(o.token ?? ''),
    environment: env !== null && ENV_SID.test(env) ? env : null,
    tags,
    clientId: (o.clientId ?? `node-${hostname()}-${process.pid}`).slice(0, 200),
    captureOutgoing: o.captureOutgoing !== false,
    maxBodyBytes: num(o.maxBodyBytes, 65_536, 0, 1_048_576),
    bodyContentTypes: Array.isArray(o.bodyContentTypes)
      ? o.bodyContentTypes.map((s) => String(s).toLowerCase())
      : DEFAULT_BODY_TYPES,
    dropHeaders: Array.isArray(o.dropHeaders)
      ? new Set(o.dropHeaders.map((h) => String(h).toLowerCase()))
      : null,
    sampling: o.sampling,
    maxQueueBytes: num(o.maxQueueBytes, 16 * 1_048_576, 16 * 1024, 1024 * 1_048_576),
    batchSize: num(o.batchSize, 500, 1, 1000),
    batchBytes,
    flushIntervalMs: num(o.flushIntervalMs, 1000, 10, 600_000),
    settingsRefreshMs: num(o.settingsRefreshMs, 60_000, 100, 86_400_000),
    requestTimeoutMs: num(o.requestTimeoutMs, 10_000, 100, 600_000),
    retryBaseMs: num(o.retryBaseMs, 500, 1, 600_000),
    retryMaxMs: num(o.retryMaxMs, 30_000, 1, 3_600_000),
    handleProcessEvents: o.handleProcessEvents !== false,
    shutdownTimeoutMs: num(o.shutdownTimeoutMs, 5000, 0, 600_000),
    enabled: o.enabled !== false,
    consumer: typeof o.consumer === 'function' ? o.consumer : undefined,
  };
}

/** A call as the capture layer hands it over, before sampling, exclusion and redaction. */
export type Captured = CapturedRecord;

/**
 * A queued record: its JSON line as UTF-8 bytes in a slab (with the rules version it was made
 * under), or the object before the first settings answer.
 */
type QueuedRecord = QueueItem<CapturedRecord>;

/**
 * Bytes of the slabs queued lines are written into. A line lives in the V8 heap only while it is
 * made; queued, it is off-heap bytes, so the queue adds nothing for the garbage collector to copy
 * or mark (a heap string queued for a batch interval outlives a young-generation collection and
 * is then promoted and marked: more and longer pauses in the host).
 */
const SLAB_BYTES = 256 * 1024;

/** A capture whose record is built after the responses of the current turn have gone out. */
export interface DeferredCapture {
  build(): void;
}

/** Deferred captures built per turn of the event loop, at least (see `buildDeferred`). */
const DEFERRED_PER_TURN = 256;

interface Batch {
  records: number;
  estimatedBytes: number;
  body: Buffer;
}

/**
 * The delivery core: settings, client rules, the bounded queue, batching, gzip, retries and the
 * circuit breaker. Capture adapters (node:http, Express, Fastify, Koa, outgoing channels) call
 * `shouldCapture` and `enqueue`; nothing here throws into the host.
 */
export class TaplineCore {
  readonly opts: ResolvedOptions;
  private readonly log: TaplineLogger | undefined;
  private debugOn: boolean;
  private readonly queue: BoundedQueue<CapturedRecord>;
  /** bumped whenever the client rules change: queued lines made under older rules get the new ones */
  private rulesVersion = 0;
  private rulesPrint = '';
  /** the redaction rules (by key) of each rules version, so a line never gets the same rule twice */
  private readonly versionRules = new Map<number, Set<string>>([[0, new Set()]]);
  private readonly circuit: CircuitBreaker;
  private redactions: CompiledRedaction[] = [];
  private exclusions: CompiledExclusion[] = [];
  /** criteria exclusions and sensitive-data redactions (shape-a.ts) */
  private criteria: CompiledCriteria[] = [];
  private sensitive: CompiledSensitive = compileSensitive([]);
  /**
   * the criteria and sensitive-data rules still to apply to a line made under an older rules version, by that
   * version
   */
  private sensitiveLeft = new Map<number, CompiledSensitive>();
  remote: RemoteSettings = {};
  private settingsLoaded = false;
  private settingsTimer: NodeJS.Timeout | undefined;
  private settingsFailures = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private pumping = false;
  private inflight: Batch | undefined;
  /** the batch being built and compressed (its records are off the queue, not yet in flight) */
  private taking: { records: number; estimatedBytes: number } | undefined;
  private sleepTimer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private flushWaiters = new Set<() => void>();
  private closed = false;
  private readonly counters = {
    captured: 0,
    skipped: 0,
    excluded: 0,
    sent: 0,
    rejected: 0,
    batches: 0,
    failures: 0,
    retries: 0,
    internalErrors: 0,
  };

  /** finished captures waiting for their record to be built (see `defer`) */
  private deferred: DeferredCapture[] = [];
  private deferredAt = 0;
  private deferredImmediate: NodeJS.Immediate | undefined;
  private readonly buildDeferredBound = () => this.buildDeferred();

  constructor(options: TaplineOptions) {
    this.opts = resolveOptions(options);
    this.log = options.logger;
    this.debugOn = options.debug === true;
    this.queue = new BoundedQueue(this.opts.maxQueueBytes);
    this.circuit = new CircuitBreaker(
      num(options.circuitThreshold, 5, 1, 1000),
      num(options.circuitOpenMs, 5000, 1, 3_600_000),
      num(options.circuitMaxOpenMs, 60_000, 1, 3_600_000),
    );
    this.tagsJson = JSON.stringify(this.opts.tags).slice(1, -1);
    this.envJson = this.opts.environment ? ',"environmentSid":' + JSON.stringify(this.opts.environment) : '';
    if (this.opts.enabled) this.loadSettings();
  }

  // -------------------------------------------------------------------------------------------
  // logging and safety

  debug(obj: Record<string, unknown>, msg: string): void {
    if (!this.debugOn && this.remote.debug !== true) return;
    try {
      this.log?.debug?.({ tapline: true, ...obj }, msg);
    } catch {
      // a failing host logger must not break capture
    }
  }

  warn(obj: Record<string, unknown>, msg: string): void {
    try {
      this.log?.warn?.({ tapline: true, ...obj }, msg);
    } catch {
      // ignored on purpose
    }
  }

  /** Runs `fn`, counting and logging anything it throws instead of letting it reach the host. */
  guard<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch (err) {
      this.internalError(err);
      return fallback;
    }
  }

  internalError(err: unknown): void {
    this.counters.internalErrors++;
    this.debug({ err: (err as Error)?.message ?? String(err) }, 'internal error');
  }

  // -------------------------------------------------------------------------------------------
  // settings

  get active(): boolean {
    return this.opts.enabled && !this.closed && this.remote.enabled !== false;
  }

  get outgoingEnabled(): boolean {
    return this.active && this.opts.captureOutgoing && this.remote.interceptOutbound !== false;
  }

  bodyLimit(direction: 'request' | 'response'): number {
    const flag = direction === 'request' ? this.remote.captureRequestBody : this.remote.captureResponseBody;
    if (flag === false) return 0;
    const remote = this.remote.maxBodyBytes;
    return typeof remote === 'number' && remote >= 0
      ? Math.min(remote, this.opts.maxBodyBytes)
      : this.opts.maxBodyBytes;
  }

  private loadSettings(): void {
    const o = this.opts;
    const url = new URL(`/v1/buckets/${encodeURIComponent(o.bucketSid)}/sdk`, o.settingsEndpoint);
    url.searchParams.set('redactAt', 'client');
    url.searchParams.set('clientId', o.clientId);
    if (o.environment) url.searchParams.set('environmentSid', o.environment);
    request(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${o.token}`, accept: 'application/json' },
      timeoutMs: o.requestTimeoutMs,
    })
      .then((res) => {
        if (res.status === 200) {
          this.applySettings(JSON.parse(res.body) as Record<string, unknown>);
          this.settingsFailures = 0;
        } else if (classify(res.status) === 'drop') {
          // Answered, but no settings (an older server, a token without the scope): defaults,
          // so delivery does not wait forever; asked again at the next refresh.
          if (!this.settingsLoaded)
            this.warn({ status: res.status }, 'tapline: SDK settings unavailable, defaults used');
          this.settingsLoaded = true;
          this.settingsFailures = 0;
        } else throw new Error(`settings answered ${res.status}`);
      })
      .catch((err: unknown) => {
        this.settingsFailures++;
        this.debug({ err: (err as Error).message }, 'settings fetch failed');
      })
      .finally(() => {
        if (this.closed) return;
        // Until settings arrive once (client redactions must be known before anything is
        // sent), retry with backoff; afterwards refresh at the configured period.
        const wait = this.settingsLoaded
          ? o.settingsRefreshMs
          : Math.min(o.settingsRefreshMs, 250 * 2 ** Math.min(this.settingsFailures, 8));
        this.settingsTimer = setTimeout(() => this.loadSettings(), wait);
        this.settingsTimer.unref();
        this.kick();
      });
  }

  /** Takes a `GET /v1/buckets/{b}/sdk` answer; every field may be missing or malformed. */
  applySettings(body: Record<string, unknown>): void {
    const s = (body?.settings ?? {}) as Record<string, unknown>;
    const remote: RemoteSettings = {};
    if (typeof s.enabled === 'boolean') remote.enabled = s.enabled;
    if (typeof s.captureRequestBody === 'boolean') remote.captureRequestBody = s.captureRequestBody;
    if (typeof s.captureResponseBody === 'boolean') remote.captureResponseBody = s.captureResponseBody;
    if (typeof s.maxBodyBytes === 'number') remote.maxBodyBytes = s.maxBodyBytes;
    if (typeof s.sampleRate === 'number') remote.sampleRate = s.sampleRate;
    if (typeof s.interceptOutbound === 'boolean') remote.interceptOutbound = s.interceptOutbound;
    if (typeof s.debug === 'boolean') remote.debug = s.debug;
    this.remote = remote;
    const rdc = Array.isArray(body?.redactionRules) ? (body.redactionRules as RemoteRedactionRule[]) : [];
    const xcl = Array.isArray(body?.exclusionRules) ? (body.exclusionRules as RemoteExclusionRule[]) : [];
    const xca = Array.isArray(body?.exclusionCriteria)
      ? (body.exclusionCriteria as RemoteExclusionCriteria[])
      : [];
    const sen = Array.isArray(body?.sensitiveRules) ? (body.sensitiveRules as unknown[]) : [];
    // Only `client` rules are applied here; `server` ones are the processor's (never twice).
    const clientSide = body?.redactAt === undefined || body.redactAt === 'client';
    this.redactions = clientSide
      ? rdc.map((r) => compileRedaction(r)).filter((r): r is CompiledRedaction => r !== null)
      : [];
    this.exclusions = xcl.map((x) => compileExclusion(x)).filter((x): x is CompiledExclusion => x !== null);
    // Criteria and sensitive-data rules: compiled by the server's own evaluators; a rule that does not
    // compile is skipped.
    const criteria = compileCriteria(xca);
    this.criteria = criteria.rules;
    this.sensitive = compileSensitive(clientSide ? sen : []);
    const skipped = [...criteria.skipped, ...this.sensitive.skipped];
    if (skipped.length) this.debug({ skipped }, 'Shape A rules that do not compile, skipped');
    if (this.redactions.length < (clientSide ? rdc.length : 0))
      this.warn(
        { rules: rdc.length - this.redactions.length },
        'tapline: redaction rules not understood, skipped',
      );
    const print = JSON.stringify([rdc, xcl, clientSide, xca, clientSide ? sen : []]);
    if (print !== this.rulesPrint) {
      this.rulesPrint = print;
      this.rulesVersion++;
      this.versionRules.set(
        this.rulesVersion,
        new Set([...this.redactions.map((r) => r.key), ...this.sensitive.keys]),
      );
      this.sensitiveLeft.clear();
    }
    this.settingsLoaded = true;
    if (remote.enabled === false) {
      this.counters.skipped += this.queue.length;
      this.queue.clear();
    }
    this.debug(
      {
        redactions: this.redactions.length,
        exclusions: this.exclusions.length,
        sensitiveRules: this.sensitive.compiled?.size ?? 0,
        exclusionCriteria: this.criteria.length,
        settings: remote,
      },
      'settings loaded',
    );
  }

  // -------------------------------------------------------------------------------------------
  // capture decisions

  /** Sampling and exclusion for a finished call (cheap; runs before the record is built). */
  shouldCapture(method: string, path: string, endpoint: string | null, status: number | null): boolean {
    if (!this.active) return false;
    const rate = sampleRateOf(this.opts.sampling, this.remote.sampleRate ?? 1, method, endpoint, path);
    if (rate < 1 && (rate <= 0 || Math.random() >= rate)) {
      this.counters.skipped++;
      return false;
    }
    if (excludedBy(this.exclusions, method, path, status, this.opts.environment ?? '')) {
      this.counters.excluded++;
      this.counters.skipped++;
      return false;
    }
    return true;
  }

  /**
   * Queues a finished capture whose record is built in the event loop's check phase
   * (setImmediate), not in the `finish` listener. `finish` runs as a nextTick right after a
   * response is written, before Node handles the next readable socket of the same poll phase:
   * building the record there delays every other request that arrived in the same turn. From
   * the check phase, all the turn's responses are written first, then their records are built.
   */
  defer(capture: DeferredCapture): void {
    this.deferred.push(capture);
    this.deferredImmediate ??= setImmediate(this.buildDeferredBound);
  }

  /**
   * Builds the deferred records: per turn at least DEFERRED_PER_TURN and at least half of those
   * waiting (a burst does not hold the loop for one long stretch, and a host finishing more
   * requests per turn than that does not make the list grow), or all of them when `all` (flush,
   * shutdown).
   */
  buildDeferred(all = false): void {
    if (this.deferredImmediate) clearImmediate(this.deferredImmediate);
    this.deferredImmediate = undefined;
    const list = this.deferred;
    const waiting = list.length - this.deferredAt;
    const stop = all
      ? list.length
      : this.deferredAt + Math.min(waiting, Math.max(DEFERRED_PER_TURN, Math.ceil(waiting / 2)));
    while (this.deferredAt < stop) {
      const c = list[this.deferredAt]!;
      list[this.deferredAt++] = undefined as unknown as DeferredCapture;
      try {
        c.build();
      } catch (err) {
        this.internalError(err);
      }
    }
    if (this.deferredAt < list.length) {
      // Built entries are cut off the front once they are most of the list.
      if (this.deferredAt * 2 > list.length) {
        this.deferred = list.slice(this.deferredAt);
        this.deferredAt = 0;
      }
      this.deferredImmediate = setImmediate(this.buildDeferredBound);
      return;
    }
    list.length = 0;
    this.deferredAt = 0;
  }

  /** Fills the common fields and queues the record. */
  enqueue(record: CapturedRecord): void {
    if (!this.active) return;
    if (this.opts.environment) record.environmentSid = this.opts.environment;
    for (const t of this.opts.tags) record.tags.push(t);
    const env = this.opts.environment ?? '';
    // Criteria exclusions read the whole record, so they run here rather than in shouldCapture.
    if (this.settingsLoaded && this.excludedByCriteria(record, env)) {
      this.counters.excluded++;
      this.counters.skipped++;
      return;
    }
    this.counters.captured++;
    // Once the rules are known the record is redacted and serialised now: the queue then holds
    // compact strings whose size is exact, so the byte bound is a real memory bound. Before the
    // first settings answer it holds the object, redacted and serialised at send time.
    if (this.settingsLoaded) {
      this.redact(record, env, this.redactions, this.sensitive);
      const item = this.toSlab(JSON.stringify(record));
      this.push(item, item.len! + 64);
    } else this.push({ record }, estimateSize(record));
  }

  /**
   * Whether a capture adapter may write a record's JSON line itself (`enqueueLine`) instead of
   * building the object for `enqueue`: the settings are known and no client rule reads or
   * rewrites a whole record (criteria exclusions, redactions), so the object would only be
   * serialised. Sampling and path exclusions still run first, through `shouldCapture`.
   */
  get directLines(): boolean {
    return (
      this.settingsLoaded &&
      this.active &&
      this.criteria.length === 0 &&
      this.redactions.length === 0 &&
      this.sensitive.compiled === null
    );
  }

  /**
   * The tail of a directly written line after the record's own tags: the SDK's tags, then
   * `endpoint` (given), `consumer` (given) and `environmentSid`, in the order `enqueue` gives them.
   */
  lineTail(ownTags: boolean, endpoint: string | null, consumer?: ConsumerInfo): string {
    const t = this.tagsJson;
    let s = ownTags && t ? ',' + t + ']' : t + ']';
    if (endpoint !== null) s += ',"endpoint":' + JSON.stringify(endpoint);
    if (consumer) s += ',"consumer":' + JSON.stringify(consumer);
    return s + this.envJson + '}';
  }

  /** The SDK's tags as JSON array elements, and `,"environmentSid":…` when there is one. */
  private readonly tagsJson: string;
  private readonly envJson: string;

  /** Queues a record given as its JSON line (written by an adapter while `directLines` holds). */
  enqueueLine(line: string): void {
    if (!this.active) return;
    this.counters.captured++;
    const item = this.toSlab(line);
    this.push(item, item.len! + 64);
  }

  private push(item: QueuedRecord, size: number): void {
    // The batch in flight holds the oldest records: while it waits for a retry it goes first.
    const b = this.inflight;
    if (b && !this.sending && this.queue.bytes + size + b.estimatedBytes > this.opts.maxQueueBytes) {
      this.inflight = undefined;
      this.inflightDropped += b.records;
      this.attempt = 0;
      this.queue.setMaxBytes(this.opts.maxQueueBytes);
    }
    this.queue.push(item, size);
    if (this.queue.length >= this.opts.batchSize || this.queue.bytes >= this.opts.batchBytes) this.kick();
    else if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => this.onInterval(), this.opts.flushIntervalMs);
      this.flushTimer.unref();
    }
  }

  private slab: Buffer | undefined;
  private slabOff = 0;

  /** Writes a line into the current slab (a new one when it may not fit; UTF-8 is ≤ 3 bytes a char). */
  private toSlab(line: string): QueuedRecord {
    const most = line.length * 3;
    if (!this.slab || this.slab.length - this.slabOff < most) {
      this.slab = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, most));
      this.slabOff = 0;
    }
    const off = this.slabOff;
    const len = this.slab.write(line, off);
    this.slabOff += len;
    return { slab: this.slab, off, len, version: this.rulesVersion };
  }

  private onInterval(): void {
    this.flushTimer = undefined;
    this.dueNow = true;
    this.kick();
  }

  // -------------------------------------------------------------------------------------------
  // delivery

  /** Starts the delivery loop if it is not running (or wakes it from a wait when asked). */
  private kick(): void {
    if (this.pumping || this.closed) return;
    this.pumping = true;
    setImmediate(() => {
      this.pump()
        .catch((err: unknown) => this.internalError(err))
        .finally(() => {
          this.pumping = false;
          if (this.drained()) for (const w of this.flushWaiters) w();
          else if (this.queue.length > 0 && !this.flushTimer && !this.closed && this.sendable()) {
            this.flushTimer = setTimeout(() => this.onInterval(), this.opts.flushIntervalMs);
            this.flushTimer.unref();
          }
        });
    });
  }

  private sendable(): boolean {
    return this.settingsLoaded && this.active;
  }

  private async pump(): Promise<void> {
    while (this.sendable() || this.inflight) {
      if (!this.inflight) {
        if (this.queue.length === 0) return;
        // A partial batch waits for the interval unless a flush is waiting for it.
        const full = this.queue.length >= this.opts.batchSize || this.queue.bytes >= this.opts.batchBytes;
        if (!full && this.flushWaiters.size === 0 && !this.dueNow) return;
        this.dueNow = false;
        this.inflight = await this.takeBatch();
        if (!this.inflight) continue;
        // The bound covers records in flight too.
        this.queue.setMaxBytes(Math.max(0, this.opts.maxQueueBytes - this.inflight.estimatedBytes));
      }
      const wait = this.circuit.waitMs();
      // A flush (shutdown) gets one attempt even while the circuit is open.
      if (wait > 0 && !this.forceAttempt) {
        await this.sleep(wait);
        if (this.closed) return;
        continue;
      }
      this.forceAttempt = false;
      const outcome = await this.send(this.inflight);
      if (!this.inflight) continue; // dropped for newer records during the retry wait
      if (outcome === 'retry') {
        this.counters.retries++;
        this.attempt++;
        continue;
      }
      this.attempt = 0;
      this.inflight = undefined;
      this.queue.setMaxBytes(this.opts.maxQueueBytes);
    }
  }

  /** set by the interval timer: send a partial batch now */
  private dueNow = false;
  /** set by flush(): one attempt now, whatever the circuit says */
  private forceAttempt = false;
  /** failed attempts of the batch in flight */
  private attempt = 0;
  /** true while the batch in flight is on the wire (it cannot be dropped then) */
  private sending = false;
  /** records of in-flight batches dropped for newer ones while waiting for a retry */
  private inflightDropped = 0;

  /**
   * Takes the next batch off the queue and gzips it. The records are JSON bytes already (made
   * when each was captured), so building a batch is copying bytes; they go to gzip in slices of
   * about BATCH_SLICE_BYTES with a turn of the event loop between slices, so a 500-record batch
   * never holds the host's loop for one long stretch. Compression runs on libuv's thread pool (a
   * zlib stream), not on the loop.
   */
  private async takeBatch(): Promise<Batch | undefined> {
    const taking = { records: 0, estimatedBytes: 0 };
    this.taking = taking;
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
      const env = this.opts.environment ?? '';
      const writeSlice = () => {
        gz.write(Buffer.concat(slice));
        slice = [];
        sliceBytes = 0;
        // The byte bound covers the records being batched too.
        this.queue.setMaxBytes(Math.max(0, this.opts.maxQueueBytes - taking.estimatedBytes));
      };
      while (taking.records < this.opts.batchSize && bytes < this.opts.batchBytes) {
        const next = this.queue.shift();
        if (!next) break;
        taking.estimatedBytes += next.size;
        const line = this.lineOf(next.item, env);
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
      this.queue.setMaxBytes(Math.max(0, this.opts.maxQueueBytes - taking.estimatedBytes));
      gz.end(Buffer.concat(slice));
      await compressed;
      return { records: taking.records, estimatedBytes: taking.estimatedBytes, body: Buffer.concat(out) };
    } finally {
      this.taking = undefined;
      // pump() bounds the queue by the batch in flight as soon as this returns one.
      this.queue.setMaxBytes(this.opts.maxQueueBytes);
    }
  }

  /** A queued record's JSON bytes under the current rules; undefined when a rule now excludes it. */
  private lineOf(q: QueuedRecord, env: string): Buffer | undefined {
    try {
      const bytes = q.slab ? q.slab.subarray(q.off, q.off! + q.len!) : undefined;
      // Rules changed since the line was made (or were unknown): applied again at send time.
      if (bytes && (q.version === this.rulesVersion || !this.hasRules())) return bytes;
      const r = q.record ?? (JSON.parse(bytes!.toString('utf8')) as CapturedRecord);
      if (
        excludedBy(this.exclusions, r.request.method, r.request.path, r.response?.statusCode ?? null, env)
      ) {
        this.counters.excluded++;
        return undefined;
      }
      if (this.excludedByCriteria(r, env)) {
        this.counters.excluded++;
        return undefined;
      }
      const applied = q.record ? undefined : this.versionRules.get(q.version ?? 0);
      this.redact(
        r,
        env,
        applied ? this.redactions.filter((x) => !applied.has(x.key)) : this.redactions,
        applied ? this.sensitiveFor(q.version ?? 0, applied) : this.sensitive,
      );
      return Buffer.from(JSON.stringify(r));
    } catch (err) {
      this.internalError(err);
      return undefined;
    }
  }

  /** Nothing queued, nothing being batched, nothing in flight. */
  private drained(): boolean {
    return this.queue.length === 0 && !this.inflight && !this.taking && this.deferred.length === 0;
  }

  private hasRules(): boolean {
    return (
      this.redactions.length > 0 ||
      this.exclusions.length > 0 ||
      this.criteria.length > 0 ||
      this.sensitive.compiled !== null
    );
  }

  /** Whether a criteria exclusion drops the record; an evaluator error keeps it (and is counted). */
  private excludedByCriteria(record: CapturedRecord, env: string): boolean {
    if (this.criteria.length === 0) return false;
    return this.guard(() => excludedByCriteria(this.criteria, record, env) !== undefined, false);
  }

  /**
   * Redacts a record in place: the field-path rules, then the sensitive-data rules (the server's order,
   * docs/rules.md). A record the sensitive-data rules change is marked `redacted` and keeps the sizes it was
   * captured with.
   */
  private redact(
    record: CapturedRecord,
    env: string,
    fieldRules: CompiledRedaction[],
    sensitive: CompiledSensitive,
  ): void {
    if (sensitive.compiled === null) {
      redactRecord(record, fieldRules, env);
      return;
    }
    // Sizes as received, taken before a field rule rewrites a body (only for a part without one).
    const received: { request?: number; response?: number } = {};
    if (fieldRules.length) {
      if (!hasSize(record.request.size)) received.request = byteSize(record.request.body);
      if (record.response && !hasSize(record.response.size))
        received.response = byteSize(record.response.body);
    }
    redactRecord(record, fieldRules, env);
    redactSensitiveRules(record, sensitive, received);
  }

  /**
   * The criteria and sensitive-data rules a line made under `version` has not had yet (compiled once per
   * version).
   */
  private sensitiveFor(version: number, applied: ReadonlySet<string>): CompiledSensitive {
    let left = this.sensitiveLeft.get(version);
    if (!left) {
      left = sensitiveWithout(this.sensitive, applied);
      this.sensitiveLeft.set(version, left);
    }
    return left;
  }

  private async send(batch: Batch): Promise<'ok' | 'retry' | 'drop'> {
    const o = this.opts;
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
            this.warn({ rejected: answer.rejected?.slice(0, 3) }, 'tapline: ingest rejected records');
        } catch {
          // a 2xx without a JSON body still means accepted
        }
        this.counters.batches++;
        this.counters.sent += batch.records - rejected;
        this.counters.rejected += rejected;
        this.debug({ records: batch.records, rejected }, 'batch sent');
        return 'ok';
      }
      if (kind === 'drop') {
        this.circuit.success();
        this.counters.rejected += batch.records;
        this.warn({ status, answer: res.body.slice(0, 500) }, 'tapline: ingest refused a batch; dropped');
        return 'drop';
      }
    } catch (err) {
      this.debug({ err: (err as Error).message }, 'batch send failed');
    }
    this.counters.failures++;
    const opened = this.circuit.failure();
    if (opened) this.warn({ status }, 'tapline: ingest unreachable, circuit open');
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

  /**
   * Sends everything queued; resolves true when the queue is empty, false at the timeout (the
   * records stay queued). A ref'd timer keeps the process alive until then.
   */
  flush(timeoutMs = 10_000): Promise<boolean> {
    this.buildDeferred(true);
    if (this.drained()) return Promise.resolve(true);
    if (!this.active) return Promise.resolve(this.queue.length === 0);
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

  /** Stops timers and capture after a final flush; the instance is unusable afterwards. */
  async close(timeoutMs = this.opts.shutdownTimeoutMs): Promise<boolean> {
    if (this.closed) return this.queue.length === 0;
    const ok = await this.flush(timeoutMs);
    this.closed = true;
    if (this.settingsTimer) clearTimeout(this.settingsTimer);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.wake?.();
    return ok;
  }

  stats(): TaplineStats {
    return {
      ...this.counters,
      dropped: this.queue.dropped + this.inflightDropped,
      queuedRecords: this.queue.length + (this.inflight?.records ?? 0) + (this.taking?.records ?? 0),
      queuedBytes:
        this.queue.bytes + (this.inflight?.estimatedBytes ?? 0) + (this.taking?.estimatedBytes ?? 0),
      circuit: this.circuit.state,
      settingsLoaded: this.settingsLoaded,
      redactionRules: this.redactions.length,
      exclusionRules: this.exclusions.length,
      sensitiveRules: this.sensitive.compiled?.size ?? 0,
      exclusionCriteria: this.criteria.length,
    };
  }
}

/**
 * Estimated JSON size of a record without serialising it on the host's request path: the
 * strings that dominate (URL, headers, bodies) plus a fixed overhead for the structure.
 */
export function estimateSize(r: CapturedRecord): number {
  let n = 600 + r.request.url.length * 2 + r.request.path.length;
  n += headersSize(r.request.headers) + bodySize(r.request.body);
  if (r.response) n += headersSize(r.response.headers) + bodySize(r.response.body);
  for (const t of r.tags) n += t.key.length + t.value.length + 20;
  return n;
}

function headersSize(h: Record<string, unknown>): number {
  let n = 0;
  for (const k in h) {
    const v = h[k];
    n +=
      k.length +
      6 +
      (typeof v === 'string' ? v.length : Array.isArray(v) ? v.join(',').length + 4 * v.length : 8);
  }
  return n;
}

function bodySize(b: unknown): number {
  if (b === undefined || b === null) return 0;
  // Escapes can grow JSON text; 1.1 covers typical bodies.
  if (typeof b === 'string') return Math.ceil(b.length * 1.1) + 2;
  return 256;
}
