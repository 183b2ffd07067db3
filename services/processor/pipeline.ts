/**
 * Pipeline steps return a result instead of throwing (PostHog's ingestion model): `ok` carries the
 * (possibly changed) record on, `drop` ends it silently with a reason (exclusions), `dlq` sends it
 * to the dead-letter topic. Throwing means an infrastructure failure: do not commit, retry.
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
  { kind: 'ok'; record: StoredRecord } | { kind: 'drop'; reason: string } | { kind: 'dlq'; reason: string };

export const ok = (record: StoredRecord): StepResult => ({ kind: 'ok', record });
export const drop = (reason: string): StepResult => ({ kind: 'drop', reason });
export const dlq = (reason: string): StepResult => ({ kind: 'dlq', reason });

export interface StepContext {
  accountSid: string;
  bucketSid: string;
}

export type Step = (record: StoredRecord, ctx: StepContext) => StepResult;

export function runSteps(record: StoredRecord, ctx: StepContext, steps: readonly Step[]): StepResult {
  let current = record;
  for (const step of steps) {
    const res = step(current, ctx);
    if (res.kind !== 'ok') return res;
    current = res.record;
  }
  return ok(current);
}
