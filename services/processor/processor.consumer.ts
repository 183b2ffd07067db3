import type { Consumer, EachBatchPayload, Kafka, KafkaMessage, Producer } from 'kafkajs';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { ValidateFunction } from 'ajv';
import { validator } from '../shared/schemas.js';
import { CONSUMER_GROUPS, TOPICS } from '../shared/topics.js';
import { countExcluded, type ExcludedCount, type ExcludedWriter } from './excluded.writer.js';
import { baseContext, runSteps, type Step, type StepContext, type StoredRecord } from './pipeline.js';
import { RequestsWriter, type OffsetRange } from './requests.writer.js';
import { toRow, type RequestRow } from './row.mapper.js';
import { SID_WINDOW_SIZE, SidWindow } from './sid-window.js';

export interface DeadLetter {
  reason: string;
  partition: number;
  offset: string;
  value: string;
}

/** Called with the records of a block after they are stored and before offsets are committed. */
export type StoredHook = (records: StoredRecord[]) => Promise<void>;

export interface ProcessorStats {
  consumed: number;
  stored: number;
  dropped: number;
  deadLettered: number;
  /** records dropped by exclusion rules (also in ClickHouse `excluded_minute`) */
  excluded: number;
  /** action jobs produced to `workflow.actions` */
  jobs: number;
  /** records dropped because their sid was stored recently (client retries, producer repeats) */
  duplicates: number;
  droppedByBucket: Map<string, number>;
}

export interface ProcessorDeps {
  kafka: Kafka;
  producer: Producer;
  writer: RequestsWriter;
  cfg: Config;
  log: Logger;
  /** Steps for one record's account/bucket: the rule snapshot decides. */
  steps: (ctx: StepContext) => readonly Step[];
  /** Per-message context: the account's compiled rules for the bucket (rule snapshot lookup). */
  context?: (accountSid: string, bucketSid: string) => StepContext;
  /** Writes per-bucket excluded counts; without it exclusions are only counted in `stats`. */
  excludedWriter?: ExcludedWriter;
  onStored?: StoredHook;
}

/** What one block's messages produced, before anything is written. */
interface BlockOutput {
  rows: RequestRow[];
  stored: StoredRecord[];
  dead: DeadLetter[];
  jobs: ActionJob[];
  excluded: Map<string, ExcludedCount>;
  /** sids of the block's rows, to drop a repeat inside the block */
  sids: Set<string>;
}

const NEWLINE = 0x0a;

/** pause before a new consumer replaces one that crashed for good */
const RESTART_AFTER_CRASH_MS = 5000;

interface Block {
  range: OffsetRange;
  messages: KafkaMessage[];
  /** true: the block re-sends a range recorded before a crash, with the same token */
  replay: boolean;
  /** true: the range is already stored; only resolve and commit past it */
  skip?: boolean;
}

/**
 * Consumes `traffic.requests` in per-partition batches: parse, run the pipeline steps, insert into
 * ClickHouse with a deduplication token of the offset range, then commit. Offsets are committed only
 * after the insert; a crash in between re-forms the same range and the insert deduplicates.
 */
export class ProcessorConsumer {
  private consumer: Consumer | undefined;
  private ranges = new Map<number, OffsetRange>();
  /** group generations joined / whose ranges are loaded (see GROUP_JOIN below) */
  private joins = 0;
  private rangesOfJoin = 0;
  private rangesLoading: Promise<void> | undefined;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private validateBatch = validator('kafkaRequestBatch');
  private validateHeader = validator('kafkaRequestHeader');
  private validateItem = validator('kafkaRequestItem');
  /** per partition: sids stored recently, so a repeated sid is stored once */
  private sidWindows = new Map<number, SidWindow>();
  readonly stats: ProcessorStats = {
    consumed: 0,
    stored: 0,
    dropped: 0,
    deadLettered: 0,
    excluded: 0,
    jobs: 0,
    duplicates: 0,
    droppedByBucket: new Map(),
  };

  constructor(private readonly deps: ProcessorDeps) {}

  async start(): Promise<void> {
    this.ranges = await this.deps.writer.loadRanges(TOPICS.requests);
    await this.run();
  }

  private async run(): Promise<void> {
    const { kafka, cfg, log } = this.deps;
    const consumer = kafka.consumer({
      groupId: CONSUMER_GROUPS.processor,
      sessionTimeout: 30_000,
      heartbeatInterval: 3000,
      maxBytesPerPartition: 16 * 1024 * 1024,
      maxBytes: 64 * 1024 * 1024,
      maxWaitTimeInMs: Math.min(cfg.processor.flushMs, 500),
      // The broker holds a fetch until PROCESSOR_FETCH_MIN_BYTES are there or maxWaitTimeInMs
      // (PROCESSOR_FLUSH_MS) passed. Each insert has a fixed cost (~22 ms of chDB CPU with the
      // views, ~3 ms more for the offset range: test/bench/insert-fixed-cost.ts), so small blocks
      // are expensive: with 1 MiB (~400 records of 2.5 KB) the core process spent 22-24 CPU s per
      // 100,000 records at half the maximum rate, with 4 MiB 12-13, for a freshness p99 of ~550 ms
      // instead of ~300 (bench/README.md). Under full load fetches fill at once.
      minBytes: cfg.processor.fetchMinBytes,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      // NOTE: with several processor replicas a partition can move here after its previous owner
      // saved a range and died; ranges loaded at start would miss it and re-insert the range
      // under a new token (duplicates). Reload them before the first batch of each generation.
      this.joins++;
      log.info({ assignment: e.payload.memberAssignment }, 'processor joined group');
    });
    consumer.on(consumer.events.CRASH, (e) => {
      log.error({ err: e.payload.error?.message, restart: e.payload.restart }, 'processor consumer crashed');
      // NOTE: kafkajs restarts a crashed consumer only after retriable errors. Any other error (a
      // TypeError from a bug, say) would leave the process up and ready with nothing consumed any
      // more: run a new consumer after a pause; it resumes from the committed offsets.
      if (!e.payload.restart) this.scheduleRestart();
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: TOPICS.requests, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 2,
        eachBatch: (payload) => this.onBatch(payload),
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
      this.deps.log.warn('restarting the processor consumer');
      this.run().catch((err: unknown) => {
        this.deps.log.error({ err: (err as Error).message }, 'processor consumer restart failed');
        this.scheduleRestart();
      });
    }, RESTART_AFTER_CRASH_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    // kafkajs finishes the batch in progress (insert + commit) before disconnect resolves.
    await this.consumer?.disconnect();
  }

  private async onBatch({
    batch,
    resolveOffset,
    heartbeat,
    isRunning,
    isStale,
  }: EachBatchPayload): Promise<void> {
    const { partition, topic } = batch;
    if (batch.messages.length === 0 || !isRunning() || isStale()) return;
    // Batches of several partitions run concurrently: they all wait for the same reload.
    while (this.rangesOfJoin !== this.joins) await (this.rangesLoading ??= this.reloadRanges(topic));
    for (const block of await this.blocks(partition, batch.messages)) {
      if (!isRunning() || isStale()) return;
      if (!block.skip) await this.processBlock(topic, partition, block);
      resolveOffset(String(block.range.max));
      await this.consumer!.commitOffsets([{ topic, partition, offset: String(block.range.max + 1) }]);
      await heartbeat();
    }
  }

  private async reloadRanges(topic: string): Promise<void> {
    const join = this.joins;
    try {
      this.ranges = await this.deps.writer.loadRanges(topic);
      this.rangesOfJoin = join;
    } finally {
      this.rangesLoading = undefined;
    }
  }

  /**
   * Splits a fetched batch so a range recorded before a crash is re-sent exactly, with its token.
   * If the fetch does not reach the end of that range (it normally does), ClickHouse is asked
   * whether the range was stored, and the messages are skipped or processed as new accordingly.
   */
  private async blocks(partition: number, messages: KafkaMessage[]): Promise<Block[]> {
    const first = Number(messages[0]!.offset);
    const last = Number(messages[messages.length - 1]!.offset);
    const saved = this.ranges.get(partition);
    const maxBlock = this.deps.cfg.processor.maxBatch;
    const blocks: Block[] = [];
    let rest = messages;
    if (saved && first <= saved.max && last >= saved.min) {
      const head = messages.filter((m) => Number(m.offset) <= saved.max);
      rest = messages.filter((m) => Number(m.offset) > saved.max);
      const exact =
        Number(head[0]!.offset) === saved.min && Number(head[head.length - 1]!.offset) === saved.max;
      if (exact) {
        blocks.push({ range: saved, messages: head, replay: true });
      } else if (!(await this.deps.writer.rangeStored(partition, saved))) {
        rest = messages;
      } else {
        this.deps.log.warn({ partition, saved }, 'skipping a range already stored before a restart');
        // Commit past it even when nothing follows in this fetch, or the same fetch comes back forever.
        blocks.push({ range: { min: first, max: saved.max }, messages: [], replay: true, skip: true });
      }
    }
    for (let i = 0; i < rest.length; i += maxBlock) {
      const part = rest.slice(i, i + maxBlock);
      blocks.push({
        range: { min: Number(part[0]!.offset), max: Number(part[part.length - 1]!.offset) },
        messages: part,
        replay: false,
      });
    }
    return blocks;
  }

  private async processBlock(topic: string, partition: number, block: Block): Promise<void> {
    const { writer, log, cfg } = this.deps;
    const out: BlockOutput = {
      rows: [],
      stored: [],
      dead: [],
      jobs: [],
      excluded: new Map(),
      sids: new Set(),
    };
    for (const m of block.messages) this.processMessage(m, partition, out);
    const { rows, stored, dead, jobs } = out;

    if (!block.replay) await writer.saveRange(topic, partition, block.range);
    this.ranges.set(partition, block.range);
    const token = RequestsWriter.token(topic, partition, block.range);
    // Counts first: once a block's records are visible, its excluded count is too.
    if (out.excluded.size && this.deps.excludedWriter)
      await this.deps.excludedWriter.insert([...out.excluded.values()], token);
    for (const bad of await writer.insertIsolating(rows, token)) {
      dead.push({
        reason: `ClickHouse refused the row: ${bad.reason}`,
        partition,
        offset: String(bad.row.kafka_offset),
        value: typeof bad.row.record === 'string' ? bad.row.record : bad.row.record.toString('utf8'),
      });
    }
    if (cfg.processor.crashAfterInsert) {
      // Fault-injection hook (tests only): die between the insert and the offset commit.
      // NOTE: written to stderr (synchronous for files and pipes on Linux), not through pino, whose
      // asynchronous write would die with the process; the fault suite reads this line.
      const msg = 'FAULT_CRASH_AFTER_INSERT: exiting before commit';
      process.stderr.write(
        `${JSON.stringify({ level: 40, module: 'processor', partition, range: block.range, msg })}\n`,
      );
      process.kill(process.pid, 'SIGKILL');
    }
    // Only after the insert: a block whose insert failed is processed again with the same sids.
    let window = this.sidWindows.get(partition);
    if (!window) this.sidWindows.set(partition, (window = new SidWindow(SID_WINDOW_SIZE)));
    for (const sid of out.sids) window.add(sid);
    if (dead.length) await this.deadLetter(dead);
    // NOTE: jobs go out after the insert and before the commit: a crash in between re-sends them
    // with the same execution sids (triggers.ts executionSidFor), which the action runner dedupes.
    if (jobs.length) await this.produceJobs(jobs);
    if (this.deps.onStored && stored.length) await this.deps.onStored(stored);
    this.stats.stored += rows.length;
    log.debug(
      { partition, range: block.range, rows: rows.length, dead: dead.length, jobs: jobs.length },
      'block stored',
    );
  }

  private processMessage(m: KafkaMessage, partition: number, out: BlockOutput): void {
    this.stats.consumed++;
    const value = m.value ?? Buffer.alloc(0);
    // Version 2 (newline-delimited: header line, then one record per line) or version 1 (one JSON
    // document, which never holds a raw newline).
    const nl = value.indexOf(NEWLINE);
    if (nl < 0) {
      this.processV1(value.toString('utf8'), m.offset, partition, out);
      return;
    }
    const head = this.parseChecked(
      value.toString('utf8', 0, nl),
      this.validateHeader,
      'message header is not JSON',
      'message',
    );
    if ('reason' in head) {
      out.dead.push({ reason: head.reason, partition, offset: m.offset, value: value.toString('utf8') });
      return;
    }
    const { accountSid, bucketSid } = head.value as { accountSid: string; bucketSid: string };
    const ctx = this.deps.context?.(accountSid, bucketSid) ?? baseContext(accountSid, bucketSid);
    const steps = this.deps.steps(ctx);
    // With no redaction rule for the bucket, steps only add fields that are also columns
    // (accountSid, bucketSid, endpoint; workflowExecutions when no workflow fired, read back as null):
    // the record's line is stored as it came, without serialising the record again.
    const verbatim = ctx.rules.redactions.length === 0;
    for (let start = nl + 1; start < value.length;) {
      let end = value.indexOf(NEWLINE, start);
      if (end < 0) end = value.length;
      if (end > start) {
        const text = value.toString('utf8', start, end);
        const record = this.parseChecked(text, this.validateItem, 'record line is not JSON', 'record');
        if ('reason' in record)
          out.dead.push({ reason: record.reason, partition, offset: m.offset, value: text });
        else
          this.processRecord(
            record.value as StoredRecord,
            ctx,
            steps,
            partition,
            m.offset,
            out,
            verbatim ? value.subarray(start, end) : undefined,
          );
      }
      start = end + 1;
    }
  }

  private processV1(value: string, offset: string, partition: number, out: BlockOutput): void {
    const parsed = this.parseChecked(value, this.validateBatch, 'message is not JSON', 'message');
    if ('reason' in parsed) {
      out.dead.push({ reason: parsed.reason, partition, offset, value });
      return;
    }
    const payload = parsed.value as { accountSid: string; bucketSid: string; records: StoredRecord[] };
    const ctx =
      this.deps.context?.(payload.accountSid, payload.bucketSid) ??
      baseContext(payload.accountSid, payload.bucketSid);
    const steps = this.deps.steps(ctx);
    for (const record of payload.records)
      this.processRecord(record, ctx, steps, partition, offset, out, undefined);
  }

  /**
   * JSON text parsed and checked against a schema, or the dead-letter reason: `<notJson>`, or
   * `<noun> breaks <schema $id>: <path> <error>`.
   */
  private parseChecked(
    text: string,
    validate: ValidateFunction,
    notJson: string,
    noun: string,
  ): { value: unknown } | { reason: string } {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { reason: notJson };
    }
    if (validate(value)) return { value };
    const why = validate.errors?.[0];
    const schema = (validate.schema as { $id?: string }).$id ?? 'its schema';
    return { reason: `${noun} breaks ${schema}: ${why?.instancePath ?? ''} ${why?.message ?? ''}`.trim() };
  }

  /**
   * One record through the steps into a row. `line` gives the record's own JSON text (version 2
   * messages, when nothing may change it): stored as it is when no step changed the record.
   */
  private processRecord(
    record: StoredRecord,
    ctx: StepContext,
    steps: readonly Step[],
    partition: number,
    offset: string,
    out: BlockOutput,
    line: Buffer | undefined,
  ): void {
    const { accountSid, bucketSid } = ctx;
    // A sid stored recently from this partition (or earlier in this block) is a repeat.
    if (out.sids.has(record.sid) || this.sidWindows.get(partition)?.has(record.sid)) {
      this.stats.duplicates++;
      return;
    }
    record.accountSid = accountSid;
    record.bucketSid = bucketSid;
    let res;
    try {
      res = runSteps(record, ctx, steps);
    } catch (err) {
      res = { kind: 'dlq' as const, reason: `pipeline step failed: ${(err as Error).message}` };
    }
    if (res.kind === 'drop') {
      this.stats.dropped++;
      if (res.excluded) {
        this.stats.excluded++;
        countExcluded(out.excluded, accountSid, bucketSid, record.createdAt);
      }
      this.stats.droppedByBucket.set(bucketSid, (this.stats.droppedByBucket.get(bucketSid) ?? 0) + 1);
      return;
    }
    if (res.kind === 'dlq') {
      out.dead.push({ reason: res.reason, partition, offset, value: JSON.stringify(record) });
      return;
    }
    try {
      // A workflow that fired wrote workflowExecutions into the record: serialise it.
      const text = res.jobs ? undefined : line;
      out.rows.push(toRow(res.record, partition, Number(offset), text));
      out.stored.push(res.record);
      out.sids.add(res.record.sid);
      if (res.jobs) out.jobs.push(...res.jobs);
    } catch (err) {
      out.dead.push({
        reason: `row mapping failed: ${(err as Error).message}`,
        partition,
        offset,
        value: JSON.stringify(record),
      });
    }
  }

  private async produceJobs(jobs: ActionJob[]): Promise<void> {
    await this.deps.producer.send({
      topic: TOPICS.actions,
      acks: -1,
      messages: jobs.map((j) => ({
        key: j.workflowSid,
        value: JSON.stringify(j),
        headers: { executionSid: j.executionSid, triggerType: j.trigger.type },
      })),
    });
    this.stats.jobs += jobs.length;
  }

  private async deadLetter(dead: DeadLetter[]): Promise<void> {
    this.stats.deadLettered += dead.length;
    this.deps.log.warn(
      { count: dead.length, reason: dead[0]!.reason },
      'records sent to the dead-letter topic',
    );
    await this.deps.producer.send({
      topic: TOPICS.requestsDlq,
      acks: -1,
      messages: dead.map((d) => ({
        key: `${d.partition}:${d.offset}`,
        value: d.value,
        headers: { reason: d.reason.slice(0, 1000), partition: String(d.partition), offset: d.offset },
      })),
    });
  }
}
