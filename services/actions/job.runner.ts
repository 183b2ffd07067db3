import pRetry, { AbortError } from 'p-retry';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { RESOLVING_ACTION_TYPES } from '../../schemas/workflow.schema.js';
import type { Logger } from '../shared/logger.js';
import { ActionError, RunnerStoppingError } from './action.errors.js';
import { executeAction, parseActions, type ActionDeps, type RunnableAction } from './action.executors.js';
import type { ActionRecord, ExecutionDetail, ExecutionsRepository } from './executions.repository.js';
import { templateVars } from './template.renderer.js';
import { WindowLimiter } from '../shared/window-limiter.js';
import { metrics } from '../shared/metrics.js';

export interface RunnerSettings {
  timeoutMs: number;
  maxAttempts: number;
  backoffMs: number;
  /** executions started per minute per workflow and per account (docs/security.md "Limits") */
  perWorkflowPerMinute?: number;
  perAccountPerMinute?: number;
}

export type JobOutcome =
  | { kind: 'succeeded'; attempts: number }
  | { kind: 'failed'; attempts: number; reason: string; detail: ExecutionDetail }
  /** nothing to do: a redelivered finished job, or its workflow is gone */
  | { kind: 'skipped'; reason: string };

/** Called for a job that failed for good, before its execution is marked failed. */
export type DeadLetterFn = (
  job: ActionJob,
  reason: string,
  attempts: number,
  detail: ExecutionDetail,
) => Promise<void>;

const MAX_BACKOFF_MS = 5 * 60_000;
const RESOLVING: ReadonlySet<string> = new Set(RESOLVING_ACTION_TYPES);

/**
 * Runs one action job: every action of the workflow in ascending `order` (ties: array order).
 * An attempt runs each action that has not succeeded yet and is still retryable; the job is
 * retried (p-retry: exponential backoff with jitter, base ACTION_BACKOFF_MS) while some action
 * failed with a retryable error, up to ACTION_MAX_ATTEMPTS attempts counted across restarts.
 * The execution row records every step, so a redelivered job resumes where it stopped and never
 * repeats an action that already succeeded.
 * Throws only for infrastructure errors (Postgres) and RunnerStoppingError: the caller retries
 * the job later and does not commit its offset.
 */
export class JobRunner {
  constructor(
    private readonly repo: ExecutionsRepository,
    private readonly deps: ActionDeps,
    private readonly settings: RunnerSettings,
    private readonly deadLetter: DeadLetterFn,
    private readonly log: Logger,
  ) {
    this.perWorkflow = new WindowLimiter(settings.perWorkflowPerMinute ?? Number.MAX_SAFE_INTEGER);
    this.perAccount = new WindowLimiter(settings.perAccountPerMinute ?? Number.MAX_SAFE_INTEGER);
  }

  private readonly perWorkflow: WindowLimiter;
  private readonly perAccount: WindowLimiter;

  /** Why a new execution may not start now (over a per-minute limit), or undefined. */
  private overLimit(job: ActionJob): string | undefined {
    if (!this.perWorkflow.hit(job.workflowSid).allowed)
      return `rate limit: more than ${this.perWorkflow.max} executions per minute for this workflow`;
    if (!this.perAccount.hit(job.accountSid).allowed)
      return `rate limit: more than ${this.perAccount.max} executions per minute for this account`;
    return undefined;
  }

  async run(job: ActionJob, stop: AbortSignal): Promise<JobOutcome> {
    const wf = await this.repo.workflow(job.accountSid, job.workflowSid);
    if (!wf) return { kind: 'skipped', reason: 'workflow not found (deleted?)' };
    // A resolved alert goes only to the channels that know the notion (the native alert channels).
    const actions = parseActions(wf.actions).filter(
      (a) => job.trigger.status !== 'resolved' || RESOLVING.has(a.type),
    );
    const fresh: ExecutionDetail = {
      trigger: job.trigger,
      actions: actions.map((a) => ({
        index: a.index,
        type: a.type,
        order: a.order,
        status: 'pending',
        attempts: 0,
      })),
    };
    const row = await this.repo.begin(job, fresh);
    if (!row) return { kind: 'skipped', reason: 'execution already finished' };
    const detail = resume(fresh, row.detail);
    let attempts = row.attempts;

    if (!wf.is_active) {
      await this.repo.finish(job.executionSid, 'failed', attempts, 'workflow is inactive', detail);
      return { kind: 'skipped', reason: 'workflow is inactive' };
    }
    // Only a first run counts (a resumed job has attempts): past a limit, the execution is logged
    // as `skipped` with the reason, and none of its actions runs.
    const over = attempts === 0 ? this.overLimit(job) : undefined;
    if (over) {
      await this.repo.finish(job.executionSid, 'skipped', attempts, over, detail);
      this.log.warn({ executionSid: job.executionSid, workflowSid: job.workflowSid }, over);
      return { kind: 'skipped', reason: over };
    }

    const workflow = { sid: wf.sid, name: wf.name };
    const vars = templateVars(job, workflow);
    const left = this.settings.maxAttempts - attempts;
    if (left > 0 && pending(detail).length > 0) {
      const save = async () => {
        try {
          await this.repo.attempt(job.executionSid, attempts, detail);
        } catch (err) {
          throw new AbortError(err as Error);
        }
      };
      let retry = false;
      try {
        await pRetry(
          async () => {
            if (stop.aborted) throw new AbortError(new RunnerStoppingError());
            // A workflow paused or deleted while its actions wait for a retry gets no more calls:
            // the attempts after the first of this run re-read it first.
            if (retry) await this.stillRunnable(job);
            retry = true;
            attempts++;
            await save();
            const failed = await this.attempt(job, workflow, actions, detail, vars, stop);
            if (stop.aborted) throw new AbortError(new RunnerStoppingError());
            await save();
            if (failed.length === 0) return;
            const err = new AttemptFailed(summary(failed));
            // Only permanently failed actions left: more attempts cannot change the outcome.
            if (!failed.some((a) => a.retryable !== false)) throw new AbortError(err);
            throw err;
          },
          {
            retries: left - 1,
            factor: 2,
            minTimeout: this.settings.backoffMs,
            maxTimeout: MAX_BACKOFF_MS,
            randomize: true,
            signal: stop,
            onFailedAttempt: ({ error, retriesLeft }) =>
              this.log.info(
                { executionSid: job.executionSid, attempts, retriesLeft, error: error.message },
                'action attempt failed',
              ),
          },
        );
      } catch (err) {
        if (err instanceof RunnerStoppingError || stop.aborted) {
          await this.repo.release(job.executionSid, detail).catch(() => undefined);
          throw new RunnerStoppingError();
        }
        if (err instanceof WorkflowStopped) {
          // As for a job still queued: an inactive workflow ends `failed` without a dead letter;
          // a deleted one took its execution log along, so there is nothing left to record.
          if (err.reason === 'workflow is inactive')
            await this.repo.finish(job.executionSid, 'failed', attempts, err.reason, detail);
          this.log.info({ executionSid: job.executionSid, attempts }, `retries stopped: ${err.reason}`);
          return { kind: 'skipped', reason: err.reason };
        }
        // Not an action failure: Postgres or a bug. The caller retries the whole job later.
        if (!(err instanceof AttemptFailed)) throw err;
      }
    }

    const failed = detail.actions.filter((a) => a.status !== 'succeeded');
    for (const a of detail.actions)
      metrics.actionExecutions.inc({
        channel: a.type,
        outcome: a.status === 'succeeded' ? 'succeeded' : 'failed',
      });
    if (failed.length === 0) {
      await this.repo.finish(job.executionSid, 'succeeded', attempts, null, detail);
      return { kind: 'succeeded', attempts };
    }
    const reason = `after ${attempts} attempt(s): ${summary(failed)}`;
    await this.deadLetter(job, reason, attempts, detail);
    await this.repo.finish(job.executionSid, 'failed', attempts, reason, detail);
    return { kind: 'failed', attempts, reason, detail };
  }

  /** Throws (AbortError of) WorkflowStopped when the workflow is gone or paused now. */
  private async stillRunnable(job: ActionJob): Promise<void> {
    let wf: Awaited<ReturnType<ExecutionsRepository['workflow']>>;
    try {
      wf = await this.repo.workflow(job.accountSid, job.workflowSid);
    } catch (err) {
      throw new AbortError(err as Error);
    }
    if (!wf) throw new AbortError(new WorkflowStopped('workflow deleted while its actions were retried'));
    if (!wf.is_active) throw new AbortError(new WorkflowStopped('workflow is inactive'));
  }

  /** One attempt: each action still to do, in order. Returns the actions that failed. */
  private async attempt(
    job: ActionJob,
    workflow: { sid: string; name: string },
    actions: RunnableAction[],
    detail: ExecutionDetail,
    vars: ReturnType<typeof templateVars>,
    stop: AbortSignal,
  ): Promise<ActionRecord[]> {
    const failed: ActionRecord[] = [];
    for (const action of actions) {
      const rec = detail.actions.find((r) => r.index === action.index);
      if (!rec || rec.status === 'succeeded' || rec.retryable === false) {
        if (rec && rec.status !== 'succeeded') failed.push(rec);
        continue;
      }
      if (stop.aborted) break;
      rec.attempts++;
      const t0 = Date.now();
      const ctl = new AbortController();
      // A receiver that hangs costs its own timeout, nothing more.
      const timer = setTimeout(
        () => ctl.abort(new ActionError(`timed out after ${this.settings.timeoutMs} ms`, true)),
        this.settings.timeoutMs,
      );
      const onStop = () => ctl.abort(new RunnerStoppingError());
      stop.addEventListener('abort', onStop, { once: true });
      try {
        const ok = await executeAction(action, { job, workflow, vars, signal: ctl.signal }, this.deps);
        rec.status = 'succeeded';
        rec.statusCode = ok.statusCode;
        rec.messageId = ok.messageId;
        delete rec.error;
        delete rec.retryable;
      } catch (err) {
        const e =
          err instanceof ActionError
            ? err
            : new ActionError(`unexpected error: ${(err as Error)?.message ?? String(err)}`, false);
        rec.status = 'failed';
        rec.error = e.message;
        rec.retryable = e.retryable;
        // The status code belongs to this attempt's answer: none (a refused connection, a
        // timeout) drops the one an earlier attempt got, so it never sits beside another error.
        if (e.statusCode !== undefined) rec.statusCode = e.statusCode;
        else delete rec.statusCode;
        failed.push(rec);
      } finally {
        clearTimeout(timer);
        stop.removeEventListener('abort', onStop);
        rec.durationMs = Date.now() - t0;
        rec.finishedAt = new Date().toISOString();
      }
    }
    return failed;
  }
}

/** The failure of one attempt (some action failed); anything else thrown is infrastructure. */
class AttemptFailed extends Error {}

/** The workflow was paused or deleted between two attempts: no more attempts are made. */
class WorkflowStopped extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

function summary(failed: ActionRecord[]): string {
  return failed.map((a) => `${a.type}#${a.index}: ${a.error ?? 'not run'}`).join('; ');
}

/** Actions still to run (not succeeded, not failed for good). */
function pending(detail: ExecutionDetail): ActionRecord[] {
  return detail.actions.filter((a) => a.status !== 'succeeded' && a.retryable !== false);
}

/** Keeps the recorded results of a redelivered job (same action positions), else starts fresh. */
function resume(fresh: ExecutionDetail, stored: ExecutionDetail | null): ExecutionDetail {
  if (!stored || !Array.isArray(stored.actions)) return fresh;
  return {
    trigger: fresh.trigger,
    actions: fresh.actions.map((a) => {
      const old = stored.actions.find((o) => o.index === a.index && o.type === a.type);
      return old ? { ...a, ...old } : a;
    }),
  };
}
