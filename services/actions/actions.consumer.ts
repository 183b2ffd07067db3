import { setMaxListeners } from 'node:events';
import type { Consumer, EachMessagePayload, Kafka, Producer } from 'kafkajs';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { Pool } from '../shared/postgres.js';
import { validator } from '../shared/schemas.js';
import { secretBox } from '../shared/secret-box.js';
import { CONSUMER_GROUPS, TOPICS } from '../shared/topics.js';
import { RunnerStoppingError } from './action.errors.js';
import type { ExecutionDetail } from './executions.repository.js';
import { ExecutionsRepository } from './executions.repository.js';
import { dashboardBaseUrl } from './action.executors.js';
import { JobRunner } from './job.runner.js';
import { MailSender } from './mail.sender.js';
import { OffsetTracker } from './offset.tracker.js';
import { OutboundGuard } from './outbound-guard.js';

export interface ActionsConsumerDeps {
  kafka: Kafka;
  producer: Producer;
  pg: Pool;
  cfg: Config;
  log: Logger;
  /** topic and consumer group; the defaults are the deployment's, tests run a runner on their own */
  topic?: string;
  groupId?: string;
  dlqTopic?: string;
  /** pause before a new consumer replaces one that crashed for good (default 5 s) */
  restartAfterMs?: number;
}

export interface ActionsStats {
  consumed: number;
  succeeded: number;
  failed: number;
  skipped: number;
  deadLettered: number;
}

const COMMIT_DEBOUNCE_MS = 100;
const INFRA_RETRY_MAX_MS = 30_000;
const RESTART_AFTER_CRASH_MS = 5000;

/**
 * The action runner role: consumes `workflow.actions` in its own group and runs jobs concurrently
 * (at most ACTION_CONCURRENCY at a time, across partitions). `eachMessage` only hands a job to
 * the pool, so a job in backoff or a receiver that hangs never holds its partition. Offsets are
 * committed per partition up to the lowest job still in flight (OffsetTracker): a crash
 * redelivers every unfinished job, and the execution record makes that redelivery resume
 * instead of repeat (docs/workflows.md "Delivery").
 */
export class ActionsConsumer {
  private consumer: Consumer | undefined;
  private readonly trackers = new Map<number, OffsetTracker>();
  private readonly dirty = new Set<number>();
  private commitTimer: NodeJS.Timeout | undefined;
  private commitChain: Promise<void> = Promise.resolve();
  private readonly running = new Map<string, Promise<void>>();
  private active = 0;
  private waiters: (() => void)[] = [];
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  /** consumers started so far (1 + restarts after a crash) */
  starts = 0;
  private readonly stopCtl = new AbortController();
  private readonly validate = validator<ActionJob>('actionJob');
  private readonly runner: JobRunner;
  private readonly mail: MailSender;
  readonly stats: ActionsStats = { consumed: 0, succeeded: 0, failed: 0, skipped: 0, deadLettered: 0 };

  constructor(private readonly deps: ActionsConsumerDeps) {
    const { cfg, log, pg } = deps;
    // Every running action attempt listens on the stop signal (removed when the attempt ends), up
    // to `ACTION_CONCURRENCY` at once: above Node's default of 10 listeners that is not a leak.
    setMaxListeners(Math.max(10, cfg.actions.concurrency * 2 + 10), this.stopCtl.signal);
    this.mail = new MailSender(cfg.smtp, cfg.actions.timeoutMs);
    this.runner = new JobRunner(
      new ExecutionsRepository(pg, secretBox(cfg)),
      {
        guard: new OutboundGuard(cfg.actions.outboundAllow),
        mail: this.mail,
        dashboardUrl: dashboardBaseUrl(cfg),
      },
      cfg.actions,
      (job, reason, attempts, detail) => this.deadLetterJob(job, reason, attempts, detail),
      log,
    );
  }

  private get topic(): string {
    return this.deps.topic ?? TOPICS.actions;
  }

  async start(): Promise<void> {
    const { kafka, cfg, log } = this.deps;
    this.starts++;
    const consumer = kafka.consumer({
      groupId: this.deps.groupId ?? CONSUMER_GROUPS.actions,
      sessionTimeout: 30_000,
      heartbeatInterval: 3000,
      maxWaitTimeInMs: 500,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      // A new generation starts from the committed offsets: old positions no longer apply.
      this.trackers.clear();
      log.info({ assignment: e.payload.memberAssignment }, 'action runner joined group');
    });
    consumer.on(consumer.events.CRASH, (e) => {
      log.error(
        { err: e.payload.error?.message, restart: e.payload.restart },
        'action runner consumer crashed',
      );
      // NOTE: kafkajs restarts a crashed consumer only after retriable errors. After any other
      // (a non-retriable broker error, a bug in a handler) the process would stay up with nothing
      // consumed: run a new consumer after a pause, as the processor does. It resumes from the
      // committed offsets; jobs still running here are joined, not run twice (`running`).
      if (!e.payload.restart) this.scheduleRestart();
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: this.topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        partitionsConsumedConcurrently: cfg.kafka.partitions,
        eachMessage: (p) => this.onMessage(p),
      });
    } catch (err) {
      // A half-started consumer must not stay in the group beside the next attempt's.
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
  }

  private scheduleRestart(): void {
    if (this.stopping || this.restartTimer) return;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      this.deps.log.warn('restarting the action runner consumer');
      this.start().catch((err: unknown) => {
        this.deps.log.error({ err: (err as Error).message }, 'action runner consumer restart failed');
        this.scheduleRestart();
      });
    }, this.deps.restartAfterMs ?? RESTART_AFTER_CRASH_MS);
  }

  /** Stop taking jobs, let running ones finish for a short grace, abort the rest, commit, leave. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    for (const w of this.waiters.splice(0)) w();
    const grace = Math.min(this.deps.cfg.actions.timeoutMs, 5000);
    await Promise.race([Promise.allSettled([...this.running.values()]), sleep(grace)]);
    this.stopCtl.abort(new RunnerStoppingError());
    await Promise.allSettled([...this.running.values()]);
    await this.flushCommits();
    await this.consumer?.disconnect();
    this.mail.close();
  }

  private async onMessage({ partition, message, heartbeat }: EachMessagePayload): Promise<void> {
    if (this.stopping) return;
    this.stats.consumed++;
    const offset = Number(message.offset);
    const tracker = this.tracker(partition);
    const raw = message.value?.toString('utf8') ?? '';
    let job: ActionJob;
    try {
      job = JSON.parse(raw) as ActionJob;
    } catch {
      // NOTE: tracked only after the dead letter is written: if that throws, kafkajs redelivers
      // the message and no phantom in-flight offset is left to block the commits.
      await this.deadLetterRaw(raw, 'message is not JSON', partition, message.offset);
      tracker.start(offset);
      return this.done(tracker, partition, offset);
    }
    if (!this.validate(job)) {
      const why = this.validate.errors?.[0];
      await this.deadLetterRaw(
        raw,
        `message breaks actionJob: ${why?.instancePath ?? ''} ${why?.message ?? ''}`.trim(),
        partition,
        message.offset,
      );
      tracker.start(offset);
      return this.done(tracker, partition, offset);
    }

    // A redelivery of a job still running here (after a rebalance) joins it instead of running twice.
    let task = this.running.get(job.executionSid);
    if (!task) {
      if (!(await this.acquire(heartbeat))) return;
      const sid = job.executionSid;
      task = this.execute(job).finally(() => {
        this.running.delete(sid);
        this.releaseSlot();
      });
      this.running.set(sid, task);
    }
    tracker.start(offset);
    task.then(
      () => this.done(tracker, partition, offset),
      () => undefined, // stopping: the offset stays uncommitted and the job is redelivered
    );
  }

  /** Runs a job to its end; infrastructure failures (Postgres, Kafka) are retried with backoff. */
  private async execute(job: ActionJob): Promise<void> {
    const { log, cfg } = this.deps;
    let delay = cfg.actions.backoffMs;
    for (;;) {
      try {
        const out = await this.runner.run(job, this.stopCtl.signal);
        this.stats[out.kind]++;
        const data = {
          executionSid: job.executionSid,
          workflowSid: job.workflowSid,
          trigger: job.trigger.type,
        };
        if (out.kind === 'failed') log.warn({ ...data, reason: out.reason }, 'workflow execution failed');
        else if (out.kind === 'skipped') log.info({ ...data, reason: out.reason }, 'action job skipped');
        else log.info({ ...data, attempts: out.attempts }, 'workflow execution succeeded');
        return;
      } catch (err) {
        if (err instanceof RunnerStoppingError || this.stopCtl.signal.aborted) throw err;
        log.error(
          { err, executionSid: job.executionSid, retryInMs: delay },
          'action job hit an infrastructure error',
        );
        await sleep(delay, this.stopCtl.signal);
        if (this.stopCtl.signal.aborted) throw new RunnerStoppingError();
        delay = Math.min(delay * 2, INFRA_RETRY_MAX_MS);
      }
    }
  }

  /** Waits for a free slot, heartbeating so a long wait does not cost the group membership. */
  private async acquire(heartbeat: () => Promise<void>): Promise<boolean> {
    while (this.active >= this.deps.cfg.actions.concurrency) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== wake);
          resolve();
        }, 1000);
        this.waiters.push(wake);
      });
      if (this.stopping) return false;
      await heartbeat().catch(() => undefined);
    }
    if (this.stopping) return false;
    this.active++;
    return true;
  }

  private releaseSlot(): void {
    this.active--;
    this.waiters.shift()?.();
  }

  private tracker(partition: number): OffsetTracker {
    let t = this.trackers.get(partition);
    if (!t) {
      t = new OffsetTracker();
      this.trackers.set(partition, t);
    }
    return t;
  }

  private done(tracker: OffsetTracker, partition: number, offset: number): void {
    tracker.finish(offset);
    // Ignore trackers of an older generation (cleared on rejoin).
    if (this.trackers.get(partition) !== tracker) return;
    this.dirty.add(partition);
    this.commitTimer ??= setTimeout(() => {
      this.commitTimer = undefined;
      void this.flushCommits();
    }, COMMIT_DEBOUNCE_MS);
  }

  private flushCommits(): Promise<void> {
    if (this.commitTimer) clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    const offsets: { topic: string; partition: number; offset: string }[] = [];
    for (const p of this.dirty) {
      const t = this.trackers.get(p);
      const next = t?.committable();
      if (t && next !== undefined) {
        t.markCommitted(next);
        offsets.push({ topic: this.topic, partition: p, offset: String(next) });
      }
    }
    this.dirty.clear();
    if (offsets.length === 0 || !this.consumer) return this.commitChain;
    const consumer = this.consumer;
    // Serialised so a later, higher commit never lands before an earlier one.
    this.commitChain = this.commitChain
      .then(() => consumer.commitOffsets(offsets))
      .catch((err: Error) =>
        // After a rebalance the partition may be someone else's: they redo from their position.
        this.deps.log.warn({ err: err.message, offsets }, 'action offsets commit failed'),
      );
    return this.commitChain;
  }

  private async deadLetterJob(job: ActionJob, reason: string, attempts: number, detail: ExecutionDetail) {
    this.stats.deadLettered++;
    await this.deps.producer.send({
      topic: this.deps.dlqTopic ?? TOPICS.actionsDlq,
      acks: -1,
      messages: [
        {
          key: job.executionSid,
          value: JSON.stringify({
            reason,
            attempts,
            failedAt: new Date().toISOString(),
            actions: detail.actions,
            job,
          }),
          headers: { reason: reason.slice(0, 1000), executionSid: job.executionSid },
        },
      ],
    });
  }

  private async deadLetterRaw(
    value: string,
    reason: string,
    partition: number,
    offset: string,
  ): Promise<void> {
    this.stats.deadLettered++;
    this.deps.log.warn({ reason, partition, offset }, 'invalid action job sent to the dead-letter topic');
    await this.deps.producer.send({
      topic: this.deps.dlqTopic ?? TOPICS.actionsDlq,
      acks: -1,
      messages: [
        {
          key: `${partition}:${offset}`,
          value: JSON.stringify({ reason, partition, offset, value }),
          headers: { reason: reason.slice(0, 1000) },
        },
      ],
    });
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
