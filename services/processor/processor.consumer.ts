import type { Kafka, Producer } from 'kafkajs';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import { QUERY_LIMITS, withQuerySettings } from '../shared/clickhouse.js';
import type { Config } from '../shared/config.js';
import { logger, type Logger } from '../shared/logger.js';
import { metrics } from '../shared/metrics.js';
import { secretBox } from '../shared/secret-box.js';
import type { PgListener } from '../shared/pg-listener.js';
import type { Pool } from '../shared/postgres.js';
import { CONSUMER_GROUPS, TOPICS } from '../shared/topics.js';
import { viewInsertLock } from '../shared/view-insert-lock.js';
import { BlockSource, HOLD_BYTES, type Block } from './block-source.js';
import { compileProcessorRules, NO_RULES, type ProcessorRules } from './compiled-rules.js';
import { Decoder } from './decoder.js';
import { ExcludedWriter } from './excluded.writer.js';
import { baseContext, runSteps, type Step, type StepContext } from './pipeline.js';
import { rulesReadContent } from './record-encoder.js';
import { RequestsSink, SinkBlock, type ProcessorStats } from './requests.sink.js';
import { RequestsWriter } from './requests.writer.js';
import { RuleSnapshot } from './rule-snapshot.js';
import { PROCESSOR_STEPS } from './steps/index.js';

export interface ProcessorDeps {
  kafka: Kafka;
  producer: Producer;
  writer: RequestsWriter;
  excludedWriter?: ExcludedWriter;
  cfg: Config;
  log: Logger;
  /** per message: the account's compiled rules for the bucket (rule snapshot lookup) */
  context?: (accountSid: string, bucketSid: string) => StepContext;
  /** the steps every record goes through (default PROCESSOR_STEPS) */
  steps?: readonly Step[];
  /** topics and consumer group (defaults: the service's) */
  topic?: string;
  groupId?: string;
  dlqTopic?: string;
  actionsTopic?: string;
  /** the block source's hold of a partition behind its end (default PROCESSOR_HOLD_MS, HOLD_BYTES) */
  hold?: { ms: number; bytes: number };
  /** most bytes a fetch returns of one partition (default PROCESSOR_FETCH_MAX_BYTES) */
  fetchMaxBytes?: number;
  /** whether busy fetches are joined (the block source's `busyHold`; default `auto`) */
  busyHold?: 'auto' | 'on' | 'off';
}

const EMPTY = Buffer.alloc(0);

/** One record in this many has its steps timed (tapline_processor_step_seconds_total). */
const STEP_SAMPLE = 8;

/** A step's metric label: its function's name without `Step` (exclusionsStep -> exclusions). */
const stepLabel = (step: Step, i: number): string => step.name.replace(/Step$/, '') || `step${i}`;

/**
 * The processor: blocks of `traffic.requests` messages (block-source.ts) are decoded into records
 * (decoder.ts), each record goes through the steps (pipeline.ts, steps/), and the sink stores the
 * block (requests.sink.ts) before the block source commits its offsets.
 */
export class ProcessorConsumer {
  private readonly decoder = new Decoder();
  private readonly sink: RequestsSink;
  private readonly source: BlockSource;
  private readonly steps: readonly Step[];
  private readonly context: (accountSid: string, bucketSid: string) => StepContext;
  /** per step: ms spent by the sampled records of the block in progress */
  private readonly spent: Float64Array;
  private readonly stepLabels: string[];
  private sampled = 0;

  constructor(deps: ProcessorDeps) {
    const { cfg, log } = deps;
    this.steps = deps.steps ?? PROCESSOR_STEPS;
    this.spent = new Float64Array(this.steps.length);
    this.stepLabels = this.steps.map(stepLabel);
    this.context = deps.context ?? baseContext;
    this.sink = new RequestsSink({
      producer: deps.producer,
      writer: deps.writer,
      excludedWriter: deps.excludedWriter,
      log,
      crashAfterInsert: cfg.processor.crashAfterInsert,
      dlqTopic: deps.dlqTopic,
      actionsTopic: deps.actionsTopic,
    });
    this.source = new BlockSource({
      kafka: deps.kafka,
      topic: deps.topic ?? TOPICS.requests,
      groupId: deps.groupId ?? CONSUMER_GROUPS.processor,
      maxBatch: cfg.processor.maxBatch,
      flushMs: cfg.processor.flushMs,
      fetchMinBytes: cfg.processor.fetchMinBytes,
      fetchMaxBytes: deps.fetchMaxBytes ?? cfg.processor.fetchMaxBytes,
      holdMs: deps.hold?.ms ?? cfg.processor.holdMs,
      holdBytes: deps.hold?.bytes ?? HOLD_BYTES,
      freshnessMs: cfg.processor.freshnessMs,
      busyHold: deps.busyHold,
      overlap: cfg.processor.overlapStore,
      ranges: deps.writer,
      log,
      sink: (block) => this.onBlock(block),
    });
  }

  /** Whether fetches at a busy partition's end are joined now (other processors share the group). */
  get busyHold(): boolean {
    return this.source.busyHoldActive;
  }

  get stats(): ProcessorStats {
    return this.sink.stats;
  }

  start(): Promise<void> {
    return this.source.start();
  }

  stop(): Promise<void> {
    return this.source.stop();
  }

  private async onBlock(block: Block): Promise<void> {
    const out = new SinkBlock(block);
    for (const m of block.messages) {
      this.sink.stats.consumed++;
      const msg = this.decoder.decode(m.value ?? EMPTY, block.partition, m.offset);
      this.sink.deadLetter(out, msg.dead);
      if (msg.accountSid === undefined || msg.bucketSid === undefined) continue;
      const ctx = this.context(msg.accountSid, msg.bucketSid);
      const checkLine = rulesReadContent(ctx.rules);
      for (const decoded of msg.records) {
        if (this.sink.isRepeat(out, decoded.record.bucketSid, decoded.record.sid)) continue;
        const spent = ++this.sampled % STEP_SAMPLE === 0 ? this.spent : undefined;
        this.sink.add(out, m.offset, decoded, runSteps(decoded.record, ctx, this.steps, spent), checkLine);
      }
    }
    this.countStepTime();
    await this.sink.write(out);
  }

  /** The block's sampled step times into the metrics, scaled to every record (once per block). */
  private countStepTime(): void {
    for (let i = 0; i < this.spent.length; i++) {
      const ms = this.spent[i]!;
      if (ms === 0) continue;
      metrics.processorStepSeconds.inc({ step: this.stepLabels[i]! }, (ms * STEP_SAMPLE) / 1000);
      this.spent[i] = 0;
    }
  }
}

/**
 * The processor role: the rule snapshot (loaded before the first record is consumed, so nothing is
 * stored unredacted) and the consumer. Returns what stops both.
 */
export async function startProcessor(deps: {
  cfg: Config;
  pool: Pool;
  listener: PgListener;
  kafka: Kafka;
  producer: Producer;
  ch: ClickHouseClient;
}): Promise<{ stop: () => Promise<void> }> {
  const { cfg, pool, listener, kafka, producer } = deps;
  const ch = withQuerySettings(deps.ch, QUERY_LIMITS.processor);
  const rulesLog = logger('rules');
  // The HMAC key of hashed credential consumer ids (docs/consumers.md).
  const consumerKey = secretBox(cfg).derive('consumer-id');
  const rules = new RuleSnapshot<ProcessorRules>({
    pool,
    listener,
    log: rulesLog,
    reloadMs: cfg.rulesReloadMs,
    compile: (r) => compileProcessorRules(r, rulesLog, consumerKey),
  });
  await rules.start();
  const processor = new ProcessorConsumer({
    kafka,
    producer,
    writer: new RequestsWriter(ch, viewInsertLock(pool, ch)),
    excludedWriter: new ExcludedWriter(ch),
    cfg,
    log: logger('processor'),
    context: (accountSid, bucketSid) => ({
      accountSid,
      bucketSid,
      rules: rules.get(accountSid)?.forBucket(bucketSid) ?? NO_RULES,
    }),
  });
  try {
    await processor.start();
  } catch (err) {
    rules.stop();
    throw err;
  }
  return {
    stop: async () => {
      await processor.stop();
      rules.stop();
    },
  };
}
