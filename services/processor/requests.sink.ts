import { performance } from 'node:perf_hooks';
import type { Producer } from 'kafkajs';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { Logger } from '../shared/logger.js';
import { TOPICS } from '../shared/topics.js';
import type { Block } from './block-source.js';
import type { DeadLetter, DecodedRecord } from './decoder.js';
import { countExcluded, type ExcludedCount, type ExcludedWriter } from './excluded.writer.js';
import { metrics } from '../shared/metrics.js';
import type { DropReason, PipelineResult } from './pipeline.js';
import { encodeKept } from './record-encoder.js';
import { RequestsWriter } from './requests.writer.js';
import { toRow, type RequestRow } from './row.mapper.js';
import { SID_WINDOW_SIZE, SidWindow } from './sid-window.js';

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

export interface SinkDeps {
  producer: Producer;
  writer: RequestsWriter;
  /** writes per-bucket excluded counts; without it exclusions are only counted in `stats` */
  excludedWriter?: ExcludedWriter;
  log: Logger;
  /** fault injection (tests only): SIGKILL this process between the insert and the commit */
  crashAfterInsert?: boolean;
  /** topic of dead letters (default `traffic.requests.dlq`) */
  dlqTopic?: string;
  /** topic of action jobs (default `workflow.actions`) */
  actionsTopic?: string;
}

/** What one block's records came to, collected before anything is written. */
export class SinkBlock {
  readonly rows: RequestRow[] = [];
  readonly dead: DeadLetter[] = [];
  readonly jobs: ActionJob[] = [];
  readonly excluded = new Map<string, ExcludedCount>();
  /** repeat keys (`repeatKey`) of the block's rows, to drop a repeat inside the block */
  readonly sids = new Set<string>();
  /** records dropped, by reason (counted into the metrics once the block is written) */
  readonly dropped: Record<DropReason, number> = { excluded: 0, repeat: 0 };
  constructor(readonly block: Block) {}
}

/**
 * What makes two records the same record: the sid within one bucket. A sid is chosen by the
 * client (the SDK's retries re-send the same sids), so a sid alone would let one tenant's record
 * drop another tenant's record that happens to carry the same sid.
 */
export const repeatKey = (bucketSid: string, sid: string): string => `${bucketSid}/${sid}`;

/**
 * Stores the processor's blocks: the records the steps kept as ClickHouse rows (one insert per
 * block with the token of its offset range, rows ClickHouse refuses isolated into dead letters),
 * the excluded counts, the dead letters and the action jobs. The stored JSON is the whole record
 * the steps returned: its received line with the new fields and values written in where the
 * encoder can prove their place (record-encoder.ts), else the record serialised.
 */
export class RequestsSink {
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
  /** per partition: sids stored recently, so a repeated sid is stored once */
  private readonly sidWindows = new Map<number, SidWindow>();

  constructor(private readonly deps: SinkDeps) {}

  /**
   * Whether the bucket's sid was stored recently from this partition or earlier in the block
   * (counted).
   */
  isRepeat(out: SinkBlock, bucketSid: string, sid: string): boolean {
    const key = repeatKey(bucketSid, sid);
    if (!out.sids.has(key) && !this.sidWindows.get(out.block.partition)?.has(key)) return false;
    this.stats.duplicates++;
    out.dropped.repeat++;
    return true;
  }

  deadLetter(out: SinkBlock, letters: DeadLetter[]): void {
    for (const d of letters) out.dead.push(d);
  }

  /**
   * One record's result into the block: a row, a drop, an excluded count or a dead letter.
   * `checkLine`: rules read the record's content (record-encoder.ts `rulesReadContent`).
   */
  add(out: SinkBlock, offset: string, decoded: DecodedRecord, res: PipelineResult, checkLine: boolean): void {
    const { record } = decoded;
    const { partition } = out.block;
    if (res.kind === 'drop' || res.kind === 'exclude') {
      this.stats.dropped++;
      out.dropped[res.kind === 'exclude' ? 'excluded' : res.reason]++;
      if (res.kind === 'exclude') {
        this.stats.excluded++;
        countExcluded(out.excluded, record.accountSid, record.bucketSid, record.createdAt);
      }
      const by = this.stats.droppedByBucket;
      by.set(record.bucketSid, (by.get(record.bucketSid) ?? 0) + 1);
      return;
    }
    if (res.kind === 'dlq') {
      out.dead.push({ reason: res.reason, partition, offset, value: JSON.stringify(res.record) });
      return;
    }
    try {
      const text = encodeKept(decoded, res.record, checkLine);
      out.rows.push(toRow(res.record, partition, Number(offset), text));
      out.sids.add(repeatKey(res.record.bucketSid, res.record.sid));
      if (res.jobs) out.jobs.push(...res.jobs);
    } catch (err) {
      out.dead.push({
        reason: `row mapping failed: ${(err as Error).message}`,
        partition,
        offset,
        value: JSON.stringify(res.record),
      });
    }
  }

  /** Writes a block: counts, rows, dead letters, then jobs; the block source commits after it. */
  async write(out: SinkBlock): Promise<void> {
    const { writer, log, excludedWriter } = this.deps;
    const { topic, partition, range } = out.block;
    const { rows, dead, jobs } = out;
    const token = RequestsWriter.token(topic, partition, range);
    // Counts first: once a block's records are visible, its excluded count is too.
    if (out.excluded.size && excludedWriter) await excludedWriter.insert([...out.excluded.values()], token);
    const t0 = performance.now();
    const refused = await writer.insertIsolating(rows, token);
    const insertMs = performance.now() - t0;
    for (const bad of refused) {
      dead.push({
        reason: `ClickHouse refused the row: ${bad.reason}`,
        partition,
        offset: String(bad.row.kafka_offset),
        value: typeof bad.row.record === 'string' ? bad.row.record : bad.row.record.toString('utf8'),
      });
    }
    if (this.deps.crashAfterInsert) {
      // Written to stderr (synchronous for files and pipes on Linux), not through pino, whose
      // asynchronous write would die with the process; the fault suite reads this line.
      const msg = 'FAULT_CRASH_AFTER_INSERT: exiting before commit';
      process.stderr.write(`${JSON.stringify({ level: 40, module: 'processor', partition, range, msg })}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
    // Only after the insert: a block whose insert failed is processed again with the same sids.
    let window = this.sidWindows.get(partition);
    if (!window) this.sidWindows.set(partition, (window = new SidWindow(SID_WINDOW_SIZE)));
    for (const sid of out.sids) window.add(sid);
    if (dead.length) await this.sendDead(dead);
    // Jobs go out after the insert and before the commit: a crash in between re-sends them with the
    // same execution sids (triggers.ts executionSidFor), which the action runner dedupes.
    if (jobs.length) await this.sendJobs(jobs);
    this.stats.stored += rows.length - refused.length;
    countBlock(out, rows.length - refused.length, dead.length);
    log.debug(
      {
        partition,
        range,
        rows: rows.length - refused.length,
        dead: dead.length,
        jobs: jobs.length,
        insertMs: Math.round(insertMs),
      },
      'block stored',
    );
  }

  private async sendJobs(jobs: ActionJob[]): Promise<void> {
    await this.deps.producer.send({
      topic: this.deps.actionsTopic ?? TOPICS.actions,
      acks: -1,
      messages: jobs.map((j) => ({
        key: j.workflowSid,
        value: JSON.stringify(j),
        headers: { executionSid: j.executionSid, triggerType: j.trigger.type },
      })),
    });
    this.stats.jobs += jobs.length;
  }

  private async sendDead(dead: DeadLetter[]): Promise<void> {
    this.stats.deadLettered += dead.length;
    this.deps.log.warn(
      { count: dead.length, reason: dead[0]!.reason },
      'records sent to the dead-letter topic',
    );
    await this.deps.producer.send({
      topic: this.deps.dlqTopic ?? TOPICS.requestsDlq,
      acks: -1,
      messages: dead.map((d) => ({
        key: `${d.partition}:${d.offset}`,
        value: d.value,
        headers: { reason: d.reason.slice(0, 1000), partition: String(d.partition), offset: d.offset },
      })),
    });
  }
}

/** A written block's records into the processor's metrics: one increment per outcome and reason. */
function countBlock(out: SinkBlock, stored: number, dead: number): void {
  metrics.processorBlockRecords.observe(stored);
  if (stored) metrics.processorRecords.inc({ outcome: 'stored' }, stored);
  if (dead) metrics.processorRecords.inc({ outcome: 'dead_lettered' }, dead);
  let dropped = 0;
  for (const [reason, n] of Object.entries(out.dropped))
    if (n) {
      metrics.processorDropped.inc({ reason }, n);
      dropped += n;
    }
  if (dropped) metrics.processorRecords.inc({ outcome: 'dropped' }, dropped);
}
