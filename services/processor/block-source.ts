import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Logger } from '../shared/logger.js';
import type { OffsetRange } from './requests.writer.js';

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
  ranges: RangeStore;
  log: Logger;
  /** stores a block; offsets are committed past it only when it returns */
  sink: BlockSink;
}

/** pause before a new consumer replaces one that crashed for good */
const RESTART_AFTER_CRASH_MS = 5000;

/**
 * Splits a fetched batch of one partition into blocks of at most `maxBlock` messages, so that a
 * range recorded before a crash (`saved`) is re-sent exactly, with its token. If the fetch does not
 * reach the end of that range (it normally does), `rangeStored` decides: the messages up to its end
 * are skipped (stored) or processed as new.
 */
export async function planBlocks(
  topic: string,
  partition: number,
  messages: KafkaMessage[],
  saved: OffsetRange | undefined,
  maxBlock: number,
  rangeStored: (range: OffsetRange) => Promise<boolean>,
): Promise<Block[]> {
  const first = Number(messages[0]!.offset);
  const last = Number(messages[messages.length - 1]!.offset);
  const blocks: Block[] = [];
  let rest = messages;
  if (saved && first <= saved.max && last >= saved.min) {
    const head = messages.filter((m) => Number(m.offset) <= saved.max);
    rest = messages.filter((m) => Number(m.offset) > saved.max);
    const exact =
      Number(head[0]!.offset) === saved.min && Number(head[head.length - 1]!.offset) === saved.max;
    if (exact) {
      blocks.push({ topic, partition, range: saved, messages: head, replay: true });
    } else if (!(await rangeStored(saved))) {
      rest = messages;
    } else {
      // Commit past it even when nothing follows in this fetch, or the same fetch comes back forever.
      blocks.push({
        topic,
        partition,
        range: { min: first, max: saved.max },
        messages: [],
        replay: true,
        skip: true,
      });
    }
  }
  for (let i = 0; i < rest.length; i += maxBlock) {
    const part = rest.slice(i, i + maxBlock);
    blocks.push({
      topic,
      partition,
      range: { min: Number(part[0]!.offset), max: Number(part[part.length - 1]!.offset) },
      messages: part,
      replay: false,
    });
  }
  return blocks;
}

/**
 * Blocks of Kafka messages with their offset ranges, at-least-once: each block's range is saved
 * before the sink stores it and its offsets are committed only after the sink returned. A crash in
 * between re-forms the same range (the sink's insert deduplicates on the range's token).
 */
export class BlockSource {
  private consumer: Consumer | undefined;
  private ranges = new Map<number, OffsetRange>();
  /** group generations joined / whose ranges are loaded */
  private joins = 0;
  private rangesOfJoin = 0;
  private rangesLoading: Promise<void> | undefined;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: BlockSourceOptions) {}

  async start(): Promise<void> {
    this.ranges = await this.o.ranges.loadRanges(this.o.topic);
    await this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    // kafkajs finishes the batch in progress (sink + commit) before disconnect resolves.
    await this.consumer?.disconnect();
  }

  private async run(): Promise<void> {
    const { kafka, log } = this.o;
    const consumer = kafka.consumer({
      groupId: this.o.groupId,
      sessionTimeout: 30_000,
      heartbeatInterval: 3000,
      maxBytesPerPartition: 16 * 1024 * 1024,
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

  /** One fetched batch: its blocks in order, each saved, stored by the sink, resolved and committed. */
  async onBatch(
    topic: string,
    partition: number,
    messages: KafkaMessage[],
    ctl: BatchControl,
  ): Promise<void> {
    if (messages.length === 0 || !ctl.isRunning() || ctl.isStale()) return;
    // Batches of several partitions run concurrently: they all wait for the same reload.
    while (this.rangesOfJoin !== this.joins) await (this.rangesLoading ??= this.reloadRanges(topic));
    const { ranges, maxBatch, log } = this.o;
    const blocks = await planBlocks(topic, partition, messages, this.ranges.get(partition), maxBatch, (r) =>
      ranges.rangeStored(partition, r),
    );
    for (const block of blocks) {
      if (!ctl.isRunning() || ctl.isStale()) return;
      if (block.skip)
        log.warn({ partition, saved: block.range }, 'skipping a range already stored before a restart');
      else {
        if (!block.replay) await ranges.saveRange(topic, partition, block.range);
        this.ranges.set(partition, block.range);
        await this.o.sink(block);
      }
      ctl.resolveOffset(String(block.range.max));
      await ctl.commit(String(block.range.max + 1));
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
