import type { ActionJob } from '../../schemas/action-job.schema.js';
import { NO_RULES, type BucketRules } from './compiled-rules.js';

/**
 * Pipeline steps are copy-on-write functions: they never change the record they are given (nor
 * any object it holds) and return a result instead of throwing (PostHog's ingestion model):
 * - `ok(record, {jobs})`: the record to carry on with, the one received or a copy holding the
 *   step's changes (`copyWith(record, {field})`, record-copy.ts; a part copied before one of its members is replaced);
 * - `exclude(ruleSid)`: dropped by an exclusion rule (counted per bucket in `excluded_minute`);
 * - `drop(reason)`: dropped silently, for one of the reasons of `DropReason`;
 * - `dlq(reason)`: sent to the dead-letter topic with the reason.
 * How the record is stored is the sink's business: its encoder (record-encoder.ts) compares what
 * the steps returned with what was received and reuses the received line wherever it can. A
 * thrown error is a step failure: the record goes to the dead-letter topic with it. Side effects
 * are data, not calls: a step that wants an action job run returns it in `jobs`, and the sink
 * produces the jobs of a block after its insert and before its offset commit.
 */
export type StoredRecord = Record<string, unknown> & {
  sid: string;
  accountSid: string;
  bucketSid: string;
  createdAt: string;
  receivedAt: string;
  request: Record<string, unknown>;
  response?: Record<string, unknown> | null;
  timings?: Record<string, unknown> | null;
  endpoint?: string;
};

/**
 * Why a record is dropped without being stored: `excluded` (an exclusion rule matched; a step
 * says so with `exclude(ruleSid)`), `repeat` (its sid was stored recently from the same bucket:
 * a client retry or a producer repeat, found by the sink). These are the `reason` labels of the
 * processor's dropped-records counter (docs/processing.md).
 */
export const DROP_REASONS = ['excluded', 'repeat'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export interface Kept {
  kind: 'ok';
  record: StoredRecord;
  jobs?: ActionJob[];
}
export interface Excluded {
  kind: 'exclude';
  ruleSid: string;
}
export interface Dropped {
  kind: 'drop';
  reason: DropReason;
}
export interface DeadLettered {
  kind: 'dlq';
  reason: string;
}
export type StepResult = Kept | Excluded | Dropped | DeadLettered;

/**
 * What the steps came to: a step's result, where a dead letter carries the record as the steps
 * before it left it (redacted when redaction ran), which is what the dead-letter topic receives.
 */
export type PipelineResult = Kept | Excluded | Dropped | (DeadLettered & { record: StoredRecord });

export const ok = (record: StoredRecord, report?: { jobs?: ActionJob[] }): Kept =>
  report?.jobs?.length ? { kind: 'ok', record, jobs: report.jobs } : { kind: 'ok', record };
/** Dropped by an exclusion rule: never stored, counted per bucket (`excluded_minute`). */
export const exclude = (ruleSid: string): Excluded => ({ kind: 'exclude', ruleSid });
export const drop = (reason: DropReason): Dropped => ({ kind: 'drop', reason });
export const dlq = (reason: string): DeadLettered => ({ kind: 'dlq', reason });

export interface StepContext {
  accountSid: string;
  bucketSid: string;
  /** the account's compiled rules that apply to this bucket (snapshot at the time of the message) */
  rules: BucketRules;
}

export function baseContext(accountSid: string, bucketSid: string): StepContext {
  return { accountSid, bucketSid, rules: NO_RULES };
}

export type Step = (record: StoredRecord, ctx: StepContext) => StepResult;

/**
 * Runs the steps in order until one excludes, drops or dead-letters the record; a step that
 * throws dead-letters it (`pipeline step failed: …`). An `ok` result carries the last step's
 * record and every step's jobs in order. With `spent`, each step's time (ms) is added to its
 * element (the processor times a sample of its records, processor.consumer.ts).
 */
export function runSteps(
  record: StoredRecord,
  ctx: StepContext,
  steps: readonly Step[],
  spent?: Float64Array,
): PipelineResult {
  let current = record;
  let jobs: ActionJob[] | undefined;
  for (let i = 0; i < steps.length; i++) {
    let res: StepResult;
    const t0 = spent ? performance.now() : 0;
    try {
      res = steps[i]!(current, ctx);
    } catch (err) {
      return { kind: 'dlq', reason: `pipeline step failed: ${(err as Error).message}`, record: current };
    } finally {
      if (spent) spent[i] = (spent[i] ?? 0) + performance.now() - t0;
    }
    if (res.kind === 'dlq') return { ...res, record: current };
    if (res.kind !== 'ok') return res;
    current = res.record;
    if (res.jobs) jobs = jobs ? [...jobs, ...res.jobs] : res.jobs;
  }
  return jobs ? { kind: 'ok', record: current, jobs } : { kind: 'ok', record: current };
}
