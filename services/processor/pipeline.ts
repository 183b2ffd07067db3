import type { ActionJob } from '../../schemas/action-job.schema.js';
import { NO_RULES, type BucketRules } from './compiled-rules.js';

/**
 * Pipeline steps return a result instead of throwing (PostHog's ingestion model) and say what they
 * did to the record, so the sink can decide how to store it:
 * - `ok`: content kept as received; `added` names the top-level fields the step set (`endpoint`,
 *   `workflowExecutions`), which the sink adds to the record's own JSON line;
 * - `changed`: content rewritten (redaction): the sink serialises the record, or, when every
 *   changing step only replaced `request` / `response` by copies (`replacedParts`), writes the
 *   new values into the line where it can prove their place (line-splice.ts);
 * - `drop` ends it silently with a reason, `exclude` drops it as an exclusion rule match (counted);
 * - `dlq` sends it to the dead-letter topic.
 * A step that rewrites content and returns `ok` loses its change whenever the line is stored as
 * received. Throwing means an infrastructure failure: do not commit, retry. Side effects are data,
 * not calls: a step that wants an action job run returns it in `jobs`, and the sink produces the
 * jobs of a block after its insert and before its offset commit.
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

/** What a kept or changed record carries on besides itself. */
export interface StepReport {
  jobs?: ActionJob[];
  /** top-level fields the step set on the record */
  added?: readonly string[];
  /**
   * `changed` only: the step's change is `request` / `response` replaced by copies holding the new
   * values (the received objects untouched) plus the `added` fields, so the sink may write the new
   * values into the received line (line-splice.ts) instead of serialising the record.
   */
  replacedParts?: boolean;
  /**
   * A rule read the parsed record: its stored line must not hold a value the parse dropped (a
   * repeated key), so the sink checks the line before storing it as received (line-splice.ts).
   */
  checkLine?: boolean;
}

export type StepResult =
  | ({ kind: 'ok' | 'changed'; record: StoredRecord } & StepReport)
  | { kind: 'drop'; reason: string; excluded?: boolean }
  | { kind: 'dlq'; reason: string };

function kept(kind: 'ok' | 'changed', record: StoredRecord, report?: StepReport): StepResult {
  const res: StepResult = { kind, record };
  if (report?.jobs?.length) res.jobs = report.jobs;
  if (report?.added?.length) res.added = report.added;
  if (kind === 'changed' && report?.replacedParts) res.replacedParts = true;
  if (report?.checkLine) res.checkLine = true;
  return res;
}

export const ok = (record: StoredRecord, report?: StepReport): StepResult => kept('ok', record, report);
/** The step rewrote the record's content: the sink serialises the record instead of reusing its line. */
export const changed = (record: StoredRecord, report?: StepReport): StepResult =>
  kept('changed', record, report);
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

/**
 * Runs the steps in order until one drops or dead-letters the record. The result is `changed` when
 * any step changed it, with every step's jobs and added fields (each field named once).
 */
export function runSteps(record: StoredRecord, ctx: StepContext, steps: readonly Step[]): StepResult {
  let current = record;
  let jobs: ActionJob[] | undefined;
  let added: string[] | undefined;
  let anyChanged = false;
  let replacedParts = true;
  let checkLine = false;
  for (const step of steps) {
    const res = step(current, ctx);
    if (res.kind !== 'ok' && res.kind !== 'changed') return res;
    current = res.record;
    if (res.kind === 'changed') {
      anyChanged = true;
      if (!res.replacedParts) replacedParts = false;
    }
    if (res.checkLine) checkLine = true;
    if (res.jobs) jobs = jobs ? [...jobs, ...res.jobs] : res.jobs;
    if (res.added) for (const f of res.added) if (!added?.includes(f)) (added ??= []).push(f);
  }
  return kept(anyChanged ? 'changed' : 'ok', current, { jobs, added, replacedParts, checkLine });
}
