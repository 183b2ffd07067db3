import { Delivery, type DeliveryHost, type QueuedRecord } from './delivery.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { estimateSize } from './record-size.js';
import { EXCLUDED, RuleSet } from './rule-set.js';
import { sampleRateOf } from './rules.js';
import { remoteSettingsOf, SettingsPoller } from './settings.js';
import { SlabWriter } from './slab.js';
import { newCounters } from './stats.js';
import type {
  CapturedRecord,
  ConsumerInfo,
  RemoteSettings,
  TaplineLogger,
  TaplineOptions,
  TaplineStats,
} from './types.js';

/** A capture whose record is built after the responses of the current turn have gone out. */
export interface DeferredCapture {
  build(): void;
}

/** Deferred captures built per turn of the event loop, at least (see `buildDeferred`). */
const DEFERRED_PER_TURN = 256;

/**
 * The capture core the adapters (node:http, Express, Fastify, Koa, outgoing channels) call: the
 * capture decisions (`shouldCapture`), the deferred record builds (`defer`) and queueing
 * (`enqueue`, `enqueueLine`), wired to the settings poller (settings.ts), the client rules
 * (rule-set.ts), the slabs queued lines are written into (slab.ts) and the delivery loop
 * (delivery.ts). Nothing here throws into the host.
 */
export class TaplineCore implements DeliveryHost {
  readonly opts: ResolvedOptions;
  private readonly log: TaplineLogger | undefined;
  private debugOn: boolean;
  readonly counters = newCounters();
  private readonly rules = new RuleSet((err) => this.internalError(err));
  private readonly settings: SettingsPoller;
  private readonly delivery: Delivery;
  private readonly slabs = new SlabWriter();
  remote: RemoteSettings = {};
  closed = false;

  /** finished captures waiting for their record to be built (see `defer`) */
  private deferred: DeferredCapture[] = [];
  private deferredAt = 0;
  private deferredImmediate: NodeJS.Immediate | undefined;
  private readonly buildDeferredBound = () => this.buildDeferred();

  /** The SDK's tags as JSON array elements, and `,"environmentSid":…` when there is one. */
  private readonly tagsJson: string;
  private readonly envJson: string;

  constructor(options: TaplineOptions) {
    this.opts = resolveOptions(options);
    this.log = options.logger;
    this.debugOn = options.debug === true;
    this.delivery = new Delivery(this);
    this.settings = new SettingsPoller(this.opts, {
      apply: (body) => this.applySettings(body),
      warn: (obj, msg) => this.warn(obj, msg),
      debug: (obj, msg) => this.debug(obj, msg),
      polled: () => this.delivery.kick(),
    });
    this.tagsJson = JSON.stringify(this.opts.tags).slice(1, -1);
    this.envJson = this.opts.environment ? ',"environmentSid":' + JSON.stringify(this.opts.environment) : '';
    if (this.opts.enabled) this.settings.start();
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

  /** Takes a `GET /v1/buckets/{b}/sdk` answer; every field may be missing or malformed. */
  applySettings(body: Record<string, unknown>): void {
    const remote = remoteSettingsOf(body);
    this.remote = remote;
    const { skipped, unreadRedactions } = this.rules.update(body);
    if (skipped.length) this.debug({ skipped }, 'Shape A rules that do not compile, skipped');
    if (unreadRedactions > 0)
      this.warn({ rules: unreadRedactions }, 'tapline: redaction rules not understood, skipped');
    this.settings.loaded = true;
    if (remote.enabled === false) {
      this.counters.skipped += this.delivery.queue.length;
      this.delivery.queue.clear();
    }
    const s = this.ruleStats();
    this.debug(
      {
        redactions: s.redactionRules,
        exclusions: s.exclusionRules,
        sensitiveRules: s.sensitiveRules,
        exclusionCriteria: s.exclusionCriteria,
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
    if (this.rules.excludes(method, path, status, this.opts.environment ?? '')) {
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
    const loaded = this.settings.loaded;
    // Criteria exclusions read the whole record, so they run here rather than in shouldCapture.
    if (loaded && this.rules.excludedByCriteria(record, env)) {
      this.counters.excluded++;
      this.counters.skipped++;
      return;
    }
    this.counters.captured++;
    // Once the rules are known the record is redacted and serialised now: the queue then holds
    // compact strings whose size is exact, so the byte bound is a real memory bound. Before the
    // first settings answer it holds the object, redacted and serialised at send time.
    if (loaded) {
      this.rules.redactNew(record, env);
      const item = this.slabs.write<CapturedRecord>(JSON.stringify(record), this.rules.version);
      this.delivery.push(item, item.len! + 64);
    } else this.delivery.push({ record }, estimateSize(record));
  }

  /**
   * Whether a capture adapter may write a record's JSON line itself (`enqueueLine`) instead of
   * building the object for `enqueue`: the settings are known and no client rule reads or
   * rewrites a whole record (criteria exclusions, redactions), so the object would only be
   * serialised. Sampling and path exclusions still run first, through `shouldCapture`.
   */
  get directLines(): boolean {
    return this.settings.loaded && this.active && !this.rules.readsRecords;
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

  /** Queues a record given as its JSON line (written by an adapter while `directLines` holds). */
  enqueueLine(line: string): void {
    if (!this.active) return;
    this.counters.captured++;
    const item = this.slabs.write<CapturedRecord>(line, this.rules.version);
    this.delivery.push(item, item.len! + 64);
  }

  // -------------------------------------------------------------------------------------------
  // what the delivery loop asks (DeliveryHost)

  sendable(): boolean {
    return this.settings.loaded && this.active;
  }

  idle(): boolean {
    return this.deferred.length === 0;
  }

  /** A queued record's JSON bytes under the current rules; undefined when a rule now excludes it. */
  lineOf(q: QueuedRecord): Buffer | undefined {
    try {
      const line = this.rules.lineOf(q, this.opts.environment ?? '');
      if (line !== EXCLUDED) return line;
      this.counters.excluded++;
      return undefined;
    } catch (err) {
      this.internalError(err);
      return undefined;
    }
  }

  // -------------------------------------------------------------------------------------------
  // flush, close, stats

  /**
   * Sends everything queued; resolves true when the queue is empty, false at the timeout (the
   * records stay queued). A ref'd timer keeps the process alive until then.
   */
  flush(timeoutMs = 10_000): Promise<boolean> {
    this.buildDeferred(true);
    if (this.delivery.drained()) return Promise.resolve(true);
    if (!this.active) return Promise.resolve(this.delivery.queue.length === 0);
    return this.delivery.flush(timeoutMs);
  }

  /** Stops timers and capture after a final flush; the instance is unusable afterwards. */
  async close(timeoutMs = this.opts.shutdownTimeoutMs): Promise<boolean> {
    if (this.closed) return this.delivery.queue.length === 0;
    const ok = await this.flush(timeoutMs);
    this.closed = true;
    this.settings.stop();
    this.delivery.stop();
    return ok;
  }

  stats(): TaplineStats {
    return {
      ...this.counters,
      ...this.delivery.stats(),
      settingsLoaded: this.settings.loaded,
      ...this.ruleStats(),
    };
  }

  private ruleStats(): Pick<
    TaplineStats,
    'redactionRules' | 'exclusionRules' | 'sensitiveRules' | 'exclusionCriteria'
  > {
    const r = this.rules;
    return {
      redactionRules: r.redactions.length,
      exclusionRules: r.exclusions.length,
      sensitiveRules: r.sensitive.compiled?.size ?? 0,
      exclusionCriteria: r.criteria.length,
    };
  }
}
