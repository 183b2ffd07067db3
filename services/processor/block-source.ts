import { performance } from 'node:perf_hooks';
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Logger } from '../shared/logger.js';
import { metrics } from '../shared/metrics.js';
import { planBlocks } from './block-plan.js';
import type { OffsetRange } from './requests.writer.js';

/** Why a block was stored when it was (docs/processing.md, "What the processor counts"). */
export type FlushTrigger = 'size' | 'time' | 'hold';

/** A run of one partition's messages, handed to the sink as one unit and committed after it. */
export interface Block {
  topic: string;
  partition: number;
  range: OffsetRange;
  messages: KafkaMessage[];
  /** true: the block re-sends a range recorded before a crash (the sink reuses its token) */
  replay: boolean;
  /** true: the range is already stored; only resolve and commit past it */
  skip?: boolean;
}

/** Where the block source records each block's offset range before the block is stored. */
export interface RangeStore {
  loadRanges(topic: string): Promise<Map<number, OffsetRange>>;
  saveRange(topic: string, partition: number, range: OffsetRange): Promise<void>;
  /** whether any row of this offset range is stored */
  rangeStored(partition: number, range: OffsetRange): Promise<boolean>;
}

/** The parts of a kafkajs batch the source drives (kafkajs's `EachBatchPayload` and consumer). */
export interface BatchControl {
  resolveOffset(offset: string): void;
  commit(offset: string): Promise<void>;
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  isStale(): boolean;
  /** the partition's high watermark when the batch was fetched (kafkajs `batch.highWatermark`) */
  highWatermark?: string;
}

export type BlockSink = (block: Block) => Promise<void>;

export interface BlockSourceOptions {
  kafka: Kafka;
  topic: string;
  groupId: string;
  /** most messages per block */
  maxBatch: number;
  /** longest wait of a fetch for `fetchMinBytes` */
  flushMs: number;
  fetchMinBytes: number;
  /** most bytes a fetch returns of one partition (default 16 MiB) */
  fetchMaxBytes?: number;
  /**
   * Longest a partition's fetched messages are held for more fetches to join their block while
   * the partition has more messages waiting (0: never held).
   */
  holdMs: number;
  /** a held block is stored once its messages reach this many bytes */
  holdBytes: number;
  /**
   * The freshness a hold may cost: held messages are stored once the oldest of them has been in
   * Kafka this long (ms since its timestamp) less the time recent blocks took to store, unless the
   * partition is still behind (0 or absent: no such bound, only `holdMs`).
   */
  freshnessMs?: number;
  /**
   * Whether a busy partition's fetches are joined (see BlockSource): `auto` (default) while other
   * processors share the consumer group, `on` always, `off` never.
   */
  busyHold?: 'auto' | 'on' | 'off';
  /**
   * true: a fetch that is not held is stored behind the next fetch (its offsets resolved, not
   * committed, then stored while the broker gathers the next one) instead of before it, so a
   * fetch's wait and the previous block's store overlap (see BlockSource). false or absent: each
   * fetch is stored before kafkajs fetches again.
   */
  overlap?: boolean;
  ranges: RangeStore;
  log: Logger;
  /** stores a block; offsets are committed past it only when it returns */
  sink: BlockSink;
}

/** most bytes a fetch returns of one partition unless `fetchMaxBytes` says otherwise */
const DEFAULT_FETCH_MAX_BYTES = 16 * 1024 * 1024;
/** pause before a new consumer replaces one that crashed for good */
const RESTART_AFTER_CRASH_MS = 5000;
/**
 * Default byte bound of the hold (see BlockSource; its time bound is PROCESSOR_HOLD_MS): 64 MiB
 * of messages per block (~18,000 of the bench's records, ~3.7 KB each as Kafka messages; a fetch
 * returns at most 16 MiB of a partition, ~4,500 of them).
 */
export const HOLD_BYTES = 64 * 1024 * 1024;
/**
 * A fetch that reaches its partition's end still joins the next ones when it brought at least
 * `fetchMinBytes` and at least this much (a processor set to fetch tiny amounts for latency is
 * never held for being busy).
 */
export const BUSY_MIN_BYTES = 1024 * 1024;
/**
 * In a group of N processors the busy hold lasts up to min(N, this) × `holdMs`: each processor
 * gets 1/N of the partitions' traffic, so holding N times as long keeps its blocks (and the
 * ClickHouse server's cost per record) about the size one processor's would be.
 */
export const BUSY_HOLD_MAX_MEMBERS = 4;
/** pause before a held block whose timed store failed is tried again */
const HELD_RETRY_MS = 1000;

/** Messages of one partition fetched behind its end and not yet stored (resolved, not committed). */
interface Held {
  /** the group generation they were fetched in: a rebalance drops them (fetched again) */
  gen: number;
  messages: KafkaMessage[];
  bytes: number;
  /** when the first of them was fetched */
  since: number;
  /** the Kafka timestamp of the first of them (ms; `since` when it has none) */
  oldest: number;
  /** when they are stored if no fetch stores them first */
  deadline: number;
  timer: NodeJS.Timeout | undefined;
  /** commits the partition past an offset (the control of the batch that brought them) */
  commit: BatchControl['commit'];
}

const messageBytes = (messages: KafkaMessage[]) =>
  messages.reduce((n, m) => n + (m.value?.length ?? 0) + (m.key?.length ?? 0), 0);

/** A message's Kafka timestamp (ms), or `fallback` when it has none. */
const kafkaTime = (m: KafkaMessage, fallback: number): number => {
  const t = Number(m.timestamp);
  return Number.isFinite(t) && t > 0 ? t : fallback;
};

/** Weight of the latest store in the moving average of store times. */
const STORE_TIME_WEIGHT = 0.3;

/**
 * Blocks of Kafka messages with their offset ranges, at-least-once: each block's range is saved
 * before the sink stores it and its offsets are committed only after the sink returned. A crash in
 * between re-forms the same range (the sink's insert deduplicates on the range's token).
 *
 * When the processor falls behind or its partition is busy, a partition's fetches are joined into
 * larger blocks: a ClickHouse insert costs less CPU per record as its block grows
 * (docs/scaling.md), and a fetch returns at most `fetchMaxBytes` of a partition. A fetch behind
 * which the partition (its high watermark) holds enough for the next fetch to be answered at once
 * is held; so is one that reached the end but
 * brought at least `fetchMinBytes` (and BUSY_MIN_BYTES) while other processors share the group
 * (`busyHold`): each of several processors sharing a heavy load keeps up with its part and would
 * otherwise store every fetch as a small block, which costs the ClickHouse server about twice the
 * CPU per record (docs/scaling.md). A held fetch has its offsets resolved (kafkajs fetches on at
 * once) but not committed, until a fetch neither behind nor busy comes, the held messages reach
 * `holdBytes` or `maxBatch`, or `holdMs` passed since the first of them was fetched (times the
 * group's size, at most BUSY_HOLD_MAX_MEMBERS, while busy fetches are held), or, unless the
 * partition is still behind, the oldest of them has been in Kafka `freshnessMs` less the recent
 * stores' time (the freshness the hold costs is bounded); then they are
 * planned and stored as if they were one fetch. A crash or a rebalance loses nothing held: nothing
 * held was committed, so its messages are fetched again. Below `fetchMinBytes` per fetch, and
 * always when it is alone in its group, a processor that keeps up holds nothing: the busy hold
 * costs freshness (up to `holdMs` times the group's size), which only a shared group's throughput
 * pays for.
 *
 * With `overlap`, a fetch that is not held is stored behind the next one: its offsets are resolved
 * (so kafkajs asks the broker for the next fetch at once) and it is stored as held messages are, in
 * the partition's queue, committed once stored. kafkajs fetches and hands over batches one at a
 * time, so without it the broker's wait for the next fetch (up to `flushMs` when traffic is light)
 * starts only after the store; with it the two overlap and a record waits about one of them
 * instead of both. The next batch of the partition still waits for that store, so at most one
 * block is stored behind its fetch. A store that fails keeps its messages held and is tried again
 * (alone after a pause, or joined by the next fetch), as a held block's is.
 */
export class BlockSource {
  private consumer: Consumer | undefined;
  private ranges = new Map<number, OffsetRange>();
  private readonly held = new Map<number, Held>();
  /** per partition: its batches and timed stores, one at a time and in order */
  private readonly queues = new Map<number, Promise<void>>();
  /** per partition: the last offset this source committed past */
  private readonly committed = new Map<number, number>();
  /** group generations joined / whose ranges are loaded */
  private joins = 0;
  /** true while other processors share the consumer group (from the group's description at each join) */
  private sharedGroup = false;
  /** members of the consumer group at its last description */
  private groupMembers = 1;
  private rangesOfJoin = 0;
  private rangesLoading: Promise<void> | undefined;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;
  /** moving average of the time a block takes to store (save its range, sink, commit), in ms */
  private storeMs = 0;

  constructor(private readonly o: BlockSourceOptions) {}

  async start(): Promise<void> {
    this.ranges = await this.o.ranges.loadRanges(this.o.topic);
    await this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    // Held messages were not committed: the next start fetches them again. A timed store under
    // way finishes first (kafkajs does the same for the batch in progress).
    for (const h of this.held.values()) clearTimeout(h.timer);
    this.held.clear();
    await this.settled();
    // kafkajs finishes the batch in progress (sink + commit) before disconnect resolves.
    await this.consumer?.disconnect();
  }

  /** Resolves once every store queued so far (stores behind their fetch, timed stores) has ended. */
  async settled(): Promise<void> {
    await Promise.all(this.queues.values());
  }

  private async run(): Promise<void> {
    const { kafka, log } = this.o;
    const consumer = kafka.consumer({
      groupId: this.o.groupId,
      sessionTimeout: 30_000,
      heartbeatInterval: 3000,
      maxBytesPerPartition: this.o.fetchMaxBytes ?? DEFAULT_FETCH_MAX_BYTES,
      maxBytes: 64 * 1024 * 1024,
      maxWaitTimeInMs: Math.min(this.o.flushMs, 500),
      // The broker holds a fetch until `fetchMinBytes` are there or maxWaitTimeInMs passed: each
      // insert has a fixed cost, so small blocks are expensive (bench/README.md). Under full load
      // fetches fill at once.
      minBytes: this.o.fetchMinBytes,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      // With several processor replicas a partition can move here after its previous owner saved a
      // range and died; ranges loaded at start would miss it and re-insert the range under a new
      // token (duplicates). They are reloaded before the first batch of each generation.
      this.joins++;
      log.info({ assignment: e.payload.memberAssignment }, 'processor joined group');
      const join = this.joins;
      consumer.describeGroup().then(
        (g) => {
          if (this.joins !== join) return;
          this.groupDescribed(g.members.length);
          log.info(
            { members: g.members.length, busyHold: this.busyHoldActive, holdMs: this.holdLimitMs() },
            'processor group described',
          );
        },
        () => undefined,
      );
    });
    consumer.on(consumer.events.CRASH, (e) => {
      log.error({ err: e.payload.error?.message, restart: e.payload.restart }, 'processor consumer crashed');
      // kafkajs restarts a crashed consumer only after retriable errors. Any other error (a
      // TypeError from a bug, say) would leave the process up and ready with nothing consumed any
      // more: a new consumer runs after a pause and resumes from the committed offsets.
      if (!e.payload.restart) this.scheduleRestart();
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: this.o.topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 2,
        eachBatch: ({ batch, resolveOffset, heartbeat, isRunning, isStale }) =>
          this.onBatch(batch.topic, batch.partition, batch.messages, {
            resolveOffset,
            heartbeat,
            isRunning,
            isStale,
            highWatermark: batch.highWatermark,
            commit: (offset) =>
              consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset }]),
          }),
      });
    } catch (err) {
      // A half-started consumer must not stay in the group beside the next attempt's.
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
  }

  private scheduleRestart(): void {
    if (this.stopped || this.restartTimer) return;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopped) return;
      this.o.log.warn('restarting the processor consumer');
      this.run().catch((err: unknown) => {
        this.o.log.error({ err: (err as Error).message }, 'processor consumer restart failed');
        this.scheduleRestart();
      });
    }, RESTART_AFTER_CRASH_MS);
  }

  /**
   * One fetched batch of a partition: held while the partition has more waiting (see the class),
   * else stored with what it holds, block by block, each saved, stored by the sink, resolved and
   * committed.
   */
  async onBatch(
    topic: string,
    partition: number,
    messages: KafkaMessage[],
    ctl: BatchControl,
  ): Promise<void> {
    if (messages.length === 0 || !ctl.isRunning() || ctl.isStale()) return;
    // Batches of several partitions run concurrently: they all wait for the same reload.
    while (this.rangesOfJoin !== this.joins) await (this.rangesLoading ??= this.reloadRanges(topic));
    await this.inOrder(partition, () => this.take(topic, partition, messages, ctl));
  }

  /** Takes the size of the consumer group (from its description at each join). */
  groupDescribed(members: number): void {
    this.groupMembers = Math.max(1, members);
    this.sharedGroup = members > 1;
  }

  /** How long fetched messages are held at most: `holdMs`, times the group's size while busy fetches are held. */
  holdLimitMs(): number {
    const n = this.busyHoldActive ? Math.min(this.groupMembers, BUSY_HOLD_MAX_MEMBERS) : 1;
    return this.o.holdMs * n;
  }

  /** Whether a busy partition's fetches are held now (`busyHold`, and the group shared or not). */
  get busyHoldActive(): boolean {
    const mode = this.o.busyHold ?? 'auto';
    return mode === 'on' || (mode === 'auto' && this.sharedGroup);
  }

  /** Runs `fn` after the partition's earlier batches and timed stores. */
  private inOrder(partition: number, fn: () => Promise<void>): Promise<void> {
    const run = (this.queues.get(partition) ?? Promise.resolve()).then(fn);
    this.queues.set(
      partition,
      run.catch(() => undefined),
    );
    return run;
  }

  private async take(
    topic: string,
    partition: number,
    batch: KafkaMessage[],
    ctl: BatchControl,
  ): Promise<void> {
    let held = this.held.get(partition);
    if (held && held.gen !== this.joins) {
      // Fetched before a rebalance: kafkajs starts again from the committed offset.
      this.drop(partition);
      held = undefined;
    }
    // A batch delivered again after a failed store repeats messages still held.
    const lastHeld = held ? Number(held.messages[held.messages.length - 1]!.offset) : -1;
    const fresh = held ? batch.filter((m) => Number(m.offset) > lastHeld) : batch;
    const messages = held ? held.messages.concat(fresh) : fresh;
    if (messages.length === 0) return;
    const freshBytes = messageBytes(fresh);
    const bytes = (held?.bytes ?? 0) + freshBytes;
    const since = held?.since ?? Date.now();
    const saved = this.ranges.get(partition);
    const { holdBytes, maxBatch } = this.o;
    const holdMs = this.holdLimitMs();
    const last = fresh.length ? Number(fresh[fresh.length - 1]!.offset) : -1;
    // Behind: past this fetch the partition holds enough for the next fetch to be answered at once
    // (fetchMinBytes, or a full fetch, at this fetch's bytes per message). Messages appended while
    // this fetch was answered are not enough: holding for them would only wait for arrivals.
    const waiting = ctl.highWatermark === undefined ? 0 : Number(ctl.highWatermark) - last - 1;
    const behind =
      fresh.length > 0 &&
      waiting > 0 &&
      (waiting * freshBytes) / fresh.length >=
        Math.min(this.o.fetchMinBytes, this.o.fetchMaxBytes ?? DEFAULT_FETCH_MAX_BYTES);
    const busy = this.busyHoldActive && freshBytes >= Math.max(this.o.fetchMinBytes, BUSY_MIN_BYTES);
    const oldest = held?.oldest ?? kafkaTime(messages[0]!, since);
    // A hold that waits for arrivals costs its messages freshness: it ends once the oldest held
    // message, stored now, would be `freshnessMs` old. A partition still behind is exempt (up to
    // holdMs): its next fetches come at once, and joining them lets the processor catch up sooner.
    const freshnessMs = this.o.freshnessMs ?? 0;
    const deadline =
      behind || freshnessMs <= 0
        ? since + holdMs
        : Math.min(since + holdMs, oldest + freshnessMs - this.storeMs);
    const hold =
      holdMs > 0 &&
      // A range saved before a crash is re-formed from the first fetch that reaches it, as before.
      !(saved && Number(messages[0]!.offset) <= saved.max) &&
      fresh.length > 0 &&
      // Busy: the fetch reached the end but brought at least fetchMinBytes, so the broker answered
      // for the bytes, not the wait.
      (behind || busy) &&
      bytes < holdBytes &&
      messages.length < maxBatch &&
      Date.now() < deadline;
    if (hold) {
      ctl.resolveOffset(fresh[fresh.length - 1]!.offset);
      const next: Held = {
        gen: this.joins,
        messages,
        bytes,
        since,
        oldest,
        deadline,
        timer: held?.timer,
        commit: ctl.commit,
      };
      // Stored when no further fetch comes by the deadline (messages deleted by retention, say, or
      // no more arrive while the freshness bound runs out).
      if (!next.timer || held?.deadline !== deadline) {
        clearTimeout(next.timer);
        next.timer = setTimeout(() => this.storeHeld(topic, partition), deadline - Date.now());
      }
      this.held.set(partition, next);
      await ctl.heartbeat();
      return;
    }
    this.drop(partition);
    // What flushes these messages (tapline_processor_blocks_total): held fetches joined, a fetch
    // the broker answered for its bytes (or that fills a block), or one answered when its wait ran out.
    const trigger: FlushTrigger = held
      ? 'hold'
      : freshBytes >= this.o.fetchMinBytes || messages.length >= maxBatch
        ? 'size'
        : 'time';
    if (this.o.overlap && !(saved && Number(messages[0]!.offset) <= saved.max) && fresh.length > 0) {
      // Stored behind the next fetch: resolved now so that kafkajs fetches on at once, committed
      // only once stored, as a held block is (a crash or a rebalance fetches it again). The next
      // batch of this partition waits for the store in the partition's queue.
      ctl.resolveOffset(fresh[fresh.length - 1]!.offset);
      const deadline = Date.now();
      this.held.set(partition, {
        gen: this.joins,
        messages,
        bytes,
        since,
        oldest,
        deadline,
        timer: undefined,
        commit: ctl.commit,
      });
      this.storeHeld(topic, partition, trigger);
      return;
    }
    try {
      await this.store(topic, partition, messages, ctl, trigger);
    } catch (err) {
      // kafkajs delivers this batch again (its offsets are not resolved), not the held messages
      // before it (resolved when they were held): those are held again.
      if (held) this.keep(partition, held.messages, held.commit);
      throw err;
    }
  }

  /** The timed store of held messages: their offsets are resolved already, so kafkajs will not deliver them again. */
  private storeHeld(topic: string, partition: number, trigger: FlushTrigger = 'hold'): void {
    void this.inOrder(partition, async () => {
      const held = this.held.get(partition);
      if (!held) return;
      this.drop(partition);
      // Fetched before a rebalance, or stopping: fetched again from the committed offset.
      if (held.gen !== this.joins || this.stopped) return;
      const gen = held.gen;
      try {
        await this.store(
          topic,
          partition,
          held.messages,
          {
            resolveOffset: () => undefined,
            commit: async (offset) => {
              if (this.joins !== gen) throw new Error('partition reassigned before the commit');
              await held.commit(offset);
            },
            heartbeat: async () => undefined,
            isRunning: () => !this.stopped && this.joins === gen,
            isStale: () => this.joins !== gen,
          },
          trigger,
        );
      } catch (err) {
        this.o.log.error(
          { err: (err as Error).message, partition },
          'storing held messages failed; retrying',
        );
        const rest = this.keep(partition, held.messages, held.commit);
        if (rest) rest.timer = setTimeout(() => this.storeHeld(topic, partition), HELD_RETRY_MS);
      }
    });
  }

  /**
   * After a failed store: holds again those of `messages` past the last committed block, so that
   * the batch kafkajs delivers again joins them (a saved range re-formed with its token).
   */
  private keep(partition: number, messages: KafkaMessage[], commit: Held['commit']): Held | undefined {
    const committed = this.committed.get(partition) ?? -1;
    const rest = messages.filter((m) => Number(m.offset) > committed);
    if (rest.length === 0 || this.stopped) return undefined;
    const now = Date.now();
    const h: Held = {
      gen: this.joins,
      messages: rest,
      bytes: messageBytes(rest),
      since: now,
      oldest: kafkaTime(rest[0]!, now),
      deadline: now + HELD_RETRY_MS,
      timer: undefined,
      commit,
    };
    this.held.set(partition, h);
    return h;
  }

  private drop(partition: number): void {
    clearTimeout(this.held.get(partition)?.timer);
    this.held.delete(partition);
  }

  /**
   * Messages of one partition as blocks, in order: each saved, stored by the sink, resolved and
   * committed. Every block but the last of a split is flushed by `size` (it holds maxBatch).
   */
  private async store(
    topic: string,
    partition: number,
    messages: KafkaMessage[],
    ctl: BatchControl,
    trigger: FlushTrigger,
  ): Promise<void> {
    const { ranges, maxBatch, log } = this.o;
    const blocks = await planBlocks(topic, partition, messages, this.ranges.get(partition), maxBatch, (r) =>
      ranges.rangeStored(partition, r),
    );
    for (const [i, block] of blocks.entries()) {
      if (!ctl.isRunning() || ctl.isStale()) return;
      const t0 = performance.now();
      let saved = t0;
      let stored = t0;
      if (block.skip)
        log.warn({ partition, saved: block.range }, 'skipping a range already stored before a restart');
      else {
        if (!block.replay) await ranges.saveRange(topic, partition, block.range);
        this.ranges.set(partition, block.range);
        saved = performance.now();
        await this.o.sink(block);
        stored = performance.now();
        metrics.processorBlocks.inc({ trigger: i < blocks.length - 1 ? 'size' : trigger });
      }
      ctl.resolveOffset(String(block.range.max));
      await ctl.commit(String(block.range.max + 1));
      this.committed.set(partition, block.range.max);
      if (!block.skip) {
        const done = performance.now();
        const ms = done - t0;
        // Where a block's time goes (LOG_LEVEL=debug): its range saved, the sink (the steps and the
        // insert), the commit; beside the sink's own line, which has the insert alone.
        log.debug(
          {
            partition,
            range: block.range,
            saveMs: Math.round(saved - t0),
            sinkMs: Math.round(stored - saved),
            commitMs: Math.round(done - stored),
          },
          'block committed',
        );
        this.storeMs = this.storeMs ? this.storeMs + STORE_TIME_WEIGHT * (ms - this.storeMs) : ms;
      }
      await ctl.heartbeat();
    }
  }

  private async reloadRanges(topic: string): Promise<void> {
    const join = this.joins;
    try {
      this.ranges = await this.o.ranges.loadRanges(topic);
      this.rangesOfJoin = join;
    } finally {
      this.rangesLoading = undefined;
    }
  }
}
