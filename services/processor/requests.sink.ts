import type { Producer } from 'kafkajs';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { Logger } from '../shared/logger.js';
import { TOPICS } from '../shared/topics.js';
import type { Block } from './block-source.js';
import { HEADER_FIELDS, type DeadLetter, type DecodedRecord } from './decoder.js';
import { countExcluded, type ExcludedCount, type ExcludedWriter } from './excluded.writer.js';
import type { StepResult, StoredRecord } from './pipeline.js';
import { lineStorable, replacedPartsLine } from './line-splice.js';
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
  constructor(readonly block: Block) {}
}

const CLOSE_BRACE = 0x7d;
const OPEN_BRACE = 0x7b;
const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

/**
 * The `added` top-level fields as JSON members (`,"field":value…`) to write before the line's
 * closing brace: '' when there are none to write, undefined when the line already holds one with
 * another value (each key appears once in the stored text: the record must be serialised).
 */
function addedMembers(
  record: StoredRecord,
  received: Readonly<Record<string, unknown>>,
  added: readonly string[],
): string | undefined {
  let extra = '';
  for (const field of added) {
    const value = record[field];
    if (Object.hasOwn(received, field)) {
      if (received[field] === value) continue;
      return undefined;
    }
    if (value === undefined) continue;
    extra += `,${JSON.stringify(field)}:${JSON.stringify(value)}`;
  }
  return extra;
}

/** The index of the line's closing brace, or undefined unless it is a non-empty object. */
function closingBrace(line: Buffer): number | undefined {
  let end = line.length - 1;
  while (end > 0 && isSpace(line[end]!)) end--;
  if (line[end] !== CLOSE_BRACE) return undefined;
  let before = end - 1;
  while (before > 0 && isSpace(line[before]!)) before--;
  if (before <= 0 || line[before] === OPEN_BRACE) return undefined;
  return end;
}

/** `line` with `extra` written before its closing brace (undefined: no place for it). */
function withMembers(line: Buffer, extra: string): Buffer | undefined {
  if (extra === '') return line;
  const end = closingBrace(line);
  if (end === undefined) return undefined;
  const n = Buffer.byteLength(extra);
  const out = Buffer.allocUnsafe(line.length + n);
  line.copy(out, 0, 0, end);
  out.write(extra, end);
  line.copy(out, end + n, end);
  return out;
}

/**
 * The JSON text to store for a record the steps kept (`ok`): its line as received with the `added`
 * top-level fields spliced in before the closing brace, without serialising the record again.
 * Undefined when the record must be serialised instead: a field the line already holds with another
 * value (each key appears once in the stored text), or a line that does not end in `}`.
 */
export function splicedLine(
  record: StoredRecord,
  line: Buffer,
  received: Readonly<Record<string, unknown>>,
  added: readonly string[],
): Buffer | undefined {
  const extra = addedMembers(record, received, added);
  return extra === undefined ? undefined : withMembers(line, extra);
}

/**
 * The JSON text to store for a record the steps kept or changed, or undefined when it must be
 * serialised (toRow): the received line with the header and step fields spliced in, and for a
 * record whose steps only replaced parts by copies, the new values written in (line-splice.ts).
 */
export function keptText(
  res: Extract<StepResult, { kind: 'ok' | 'changed' }>,
  decoded: Pick<DecodedRecord, 'line' | 'received'>,
): Buffer | undefined {
  const fields = res.added ? [...HEADER_FIELDS, ...res.added] : HEADER_FIELDS;
  const extra = addedMembers(res.record, decoded.received, fields);
  if (extra === undefined) return undefined;
  if (res.kind === 'ok')
    return !res.checkLine || lineStorable(decoded.line) ? withMembers(decoded.line, extra) : undefined;
  if (!res.replacedParts) return undefined;
  // The replaced members and the added fields are written in one copy of the line.
  if (extra === '') return replacedPartsLine(decoded.line, decoded.received, res.record);
  const at = closingBrace(decoded.line);
  return at === undefined
    ? undefined
    : replacedPartsLine(decoded.line, decoded.received, res.record, { at, text: extra });
}

/**
 * What makes two records the same record: the sid within one bucket. A sid is chosen by the
 * client (the SDK's retries re-send the same sids), so a sid alone would let one tenant's record
 * drop another tenant's record that happens to carry the same sid.
 */
export const repeatKey = (bucketSid: string, sid: string): string => `${bucketSid}/${sid}`;

/**
 * Stores the processor's blocks: the records the steps kept or changed as ClickHouse rows (one
 * insert per block with the token of its offset range, rows ClickHouse refuses isolated into dead
 * letters), the excluded counts, the dead letters and the action jobs. The stored JSON is the whole
 * record: a record no step changed is stored as its line plus the fields the header and the steps
 * added; a changed one is serialised, or spliced when only its parts were replaced (keptText).
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
    return true;
  }

  deadLetter(out: SinkBlock, letters: DeadLetter[]): void {
    for (const d of letters) out.dead.push(d);
  }

  /** One record's step result into the block: a row, a drop, an excluded count or a dead letter. */
  add(out: SinkBlock, offset: string, decoded: DecodedRecord, res: StepResult): void {
    const { record } = decoded;
    const { partition } = out.block;
    if (res.kind === 'drop') {
      this.stats.dropped++;
      if (res.excluded) {
        this.stats.excluded++;
        countExcluded(out.excluded, record.accountSid, record.bucketSid, record.createdAt);
      }
      const by = this.stats.droppedByBucket;
      by.set(record.bucketSid, (by.get(record.bucketSid) ?? 0) + 1);
      return;
    }
    if (res.kind === 'dlq') {
      out.dead.push({ reason: res.reason, partition, offset, value: JSON.stringify(record) });
      return;
    }
    try {
      out.rows.push(toRow(res.record, partition, Number(offset), keptText(res, decoded)));
      out.sids.add(repeatKey(res.record.bucketSid, res.record.sid));
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

  /** Writes a block: counts, rows, dead letters, then jobs; the block source commits after it. */
  async write(out: SinkBlock): Promise<void> {
    const { writer, log, excludedWriter } = this.deps;
    const { topic, partition, range } = out.block;
    const { rows, dead, jobs } = out;
    const token = RequestsWriter.token(topic, partition, range);
    // Counts first: once a block's records are visible, its excluded count is too.
    if (out.excluded.size && excludedWriter) await excludedWriter.insert([...out.excluded.values()], token);
    const refused = await writer.insertIsolating(rows, token);
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
    log.debug(
      { partition, range, rows: rows.length - refused.length, dead: dead.length, jobs: jobs.length },
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
