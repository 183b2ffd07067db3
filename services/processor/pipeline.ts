import type { ActionJob } from '../../schemas/action-job.schema.js';
import { NO_RULES, type BucketRules } from './compiled-rules.js';

/**
 * Pipeline steps return a result instead of throwing (PostHog's ingestion model): `ok` carries the
 * (possibly changed) record on, `drop` ends it silently with a reason (exclusions), `dlq` sends it
 * to the dead-letter topic. Throwing means an infrastructure failure: do not commit, retry.
 * Side effects are data, not calls: a step that wants an action job run returns it in `jobs`, and
 * the consumer produces the jobs of a block after its insert and before its offset commit.
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

export type StepResult =
  | { kind: 'ok'; record: StoredRecord; jobs?: ActionJob[] }
  | { kind: 'drop'; reason: string; excluded?: boolean }
  | { kind: 'dlq'; reason: string };

export const ok = (record: StoredRecord, jobs?: ActionJob[]): StepResult =>
  jobs && jobs.length ? { kind: 'ok', record, jobs } : { kind: 'ok', record };
export const drop = (reason: string): StepResult => ({ kind: 'drop', reason });
/** Dropped by an exclusion rule: never stored, counted per bucket (`excluded_minute`). */
export const exclude = (ruleSid: string): StepResult => ({
  kind: 'drop',
  reason: `excluded by ${ruleSid}`,
  excluded: true,
});
export const dlq = (reason: string): StepResult => ({ kind: 'dlq', reason });

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

export function runSteps(record: StoredRecord, ctx: StepContext, steps: readonly Step[]): StepResult {
  let current = record;
  let jobs: ActionJob[] | undefined;
  for (const step of steps) {
    const res = step(current, ctx);
    if (res.kind !== 'ok') return res;
    current = res.record;
    if (res.jobs) jobs = jobs ? [...jobs, ...res.jobs] : res.jobs;
  }
  return ok(current, jobs);
}
