import cron, { type Logger as CronLogger, type ScheduledTask, type TaskContext } from 'node-cron';
import type { Producer } from 'kafkajs';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { RESOLVING_ACTION_TYPES } from '../../schemas/workflow.schema.js';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { PgListener } from '../shared/pg-listener.js';
import type { Pool } from '../shared/postgres.js';
import { validator } from '../shared/schemas.js';
import { TOPICS } from '../shared/topics.js';
import { timedJob } from './job.factory.js';
import {
  describeEvaluation,
  evaluate,
  parseThresholdConditions,
  round,
  type WindowMetrics,
} from './threshold.evaluator.js';
import { consumerWindowMetrics, scopeKey, windowMetrics, type Scope } from './threshold.query.js';
import { SloBurnEvaluator } from './slo-burn.evaluator.js';
import { RegressionEvaluator } from './regression.evaluator.js';
import { TriggerStateRepository } from './trigger-state.repository.js';
import { WorkflowDirectory, type TimedWorkflow } from './workflow.directory.js';
import { metrics } from '../shared/metrics.js';
import { sealConsumerRollup } from '../shared/consumer-seal.js';
import { viewInsertLock } from '../shared/view-insert-lock.js';

/** A job run on a cron pattern by exactly one replica per slot (docs/architecture.md, convention 10). */
export interface ScheduledJob {
  name: string;
  pattern: string;
  handler: (slot: Date) => Promise<void>;
}

export interface SchedulerDeps {
  pg: Pool;
  ch: ClickHouseClient;
  producer: Producer;
  listener: PgListener;
  cfg: Config;
  log: Logger;
}

const RESOLVING: ReadonlySet<string> = new Set(RESOLVING_ACTION_TYPES);

/** Cron patterns are read in UTC unless a schedule trigger names its own `timezone`. */
const DEFAULT_TIMEZONE = 'UTC';

/**
 * The scheduler role. Static jobs come from `jobs()`; each schedule workflow gets a cron task of
 * its own, kept in step with the workflow snapshot (NOTIFY `tapline_rules` + periodic reload).
 * Every run goes through `runExclusive`: a Postgres advisory lock per job name, then an atomic
 * claim of the slot, so one replica runs it even when clocks differ (docs/workflows.md).
 */
export class Scheduler {
  private readonly state: TriggerStateRepository;
  private readonly directory: WorkflowDirectory;
  private readonly sloBurn: SloBurnEvaluator;
  private readonly regression: RegressionEvaluator;
  private readonly staticTasks: ScheduledTask[] = [];
  private readonly scheduleTasks = new Map<string, { key: string; task: ScheduledTask }>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly validateJob = validator<ActionJob>('actionJob');
  private reloadTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** node-cron's own messages (overlap warnings, task errors) go to pino, not the console. */
  private readonly cronLog: CronLogger;

  constructor(private readonly deps: SchedulerDeps) {
    const log = deps.log;
    this.cronLog = {
      info: (m) => log.debug({ source: 'node-cron' }, m),
      warn: (m) => log.warn({ source: 'node-cron' }, m),
      error: (m, err) => log.error({ source: 'node-cron', err: err ?? m }, String(m)),
      debug: (m) => log.debug({ source: 'node-cron' }, String(m)),
    };
    this.state = new TriggerStateRepository(deps.pg);
    this.directory = new WorkflowDirectory(deps.pg, () => this.syncScheduleTasks(), deps.log);
    this.regression = new RegressionEvaluator(deps.pg, deps.ch, (job) => this.produce(job), deps.log);
    this.sloBurn = new SloBurnEvaluator(
      deps.pg,
      deps.ch,
      this.state,
      (job) => this.produce(job),
      RESOLVING,
      deps.log,
    );
  }

  /** The cluster-wide jobs: one list, one place. */
  jobs(): ScheduledJob[] {
    return [
      {
        name: 'threshold-triggers',
        pattern: this.deps.cfg.scheduler.thresholdCron,
        handler: (slot) => this.evaluateThresholds(slot),
      },
      {
        name: 'slo-burn-triggers',
        pattern: this.deps.cfg.scheduler.thresholdCron,
        handler: async (slot) => {
          const r = await this.sloBurn.evaluate(this.directory.all('slo_burn'), slot);
          this.deps.log.debug({ ...r, slot: slot.toISOString() }, 'slo_burn triggers evaluated');
        },
      },
      {
        // Hour, day and week blocks of consumers_rollup for the blocks that ended (consumer-seal.ts).
        name: 'consumer-rollup-seal',
        pattern: this.deps.cfg.scheduler.sealCron,
        handler: async (slot) => {
          const { ch, cfg, log } = this.deps;
          // It reads a target of the views and inserts into it: held against rebuild-metrics' swaps.
          const r = await viewInsertLock(
            this.deps.pg,
            ch,
          )(() =>
            sealConsumerRollup(ch, {
              retentionDays: cfg.clickhouse.retentionDays,
              now: slot.getTime(),
              cluster: Boolean(cfg.clickhouse.cluster),
            }),
          );
          if (r.hours || r.days || r.weeks)
            log.info({ ...r, slot: slot.toISOString() }, 'consumer rollup sealed');
        },
      },
      {
        name: 'regression-triggers',
        pattern: this.deps.cfg.scheduler.thresholdCron,
        handler: async (slot) => {
          const fired = await this.regression.evaluate(this.directory.all('regression'), slot);
          this.deps.log.debug({ fired, slot: slot.toISOString() }, 'regression triggers evaluated');
        },
      },
    ];
  }

  async start(): Promise<void> {
    const { listener, cfg, log } = this.deps;
    listener.on('tapline_rules', (accountSid) => {
      if (accountSid) void this.directory.reloadAccount(accountSid).catch(() => undefined);
    });
    listener.onReconnect(() => void this.directory.reloadAll().catch(() => undefined));
    await this.directory.reloadAll();
    // Backstop for a lost notification; each replica keeps its own snapshot, so this is not locked.
    this.reloadTimer = setInterval(
      () => void this.directory.reloadAll().catch(() => undefined),
      cfg.rulesReloadMs,
    );
    this.reloadTimer.unref();
    for (const job of this.jobs()) {
      this.staticTasks.push(
        cron.schedule(job.pattern, (ctx) => this.track(this.runStatic(job, ctx)), {
          name: job.name,
          noOverlap: true,
          timezone: DEFAULT_TIMEZONE,
          logger: this.cronLog,
        }),
      );
    }
    log.info(
      {
        jobs: this.jobs().map((j) => ({ name: j.name, pattern: j.pattern })),
        schedules: this.scheduleTasks.size,
      },
      'scheduler started',
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reloadTimer) clearInterval(this.reloadTimer);
    for (const t of this.staticTasks) await t.destroy();
    for (const { task } of this.scheduleTasks.values()) await task.destroy();
    this.scheduleTasks.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  private track(p: Promise<void>): Promise<void> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  private async runStatic(job: ScheduledJob, ctx: TaskContext): Promise<void> {
    const slot = slotOf(ctx);
    await this.runExclusive(job.name, async () => {
      if (!(await this.state.claimSlot(job.name, slot))) return;
      await job.handler(slot);
    });
  }

  /** Runs `fn` while holding the job's advisory lock; skips when another replica holds it. */
  private async runExclusive(name: string, fn: () => Promise<void>): Promise<void> {
    if (this.stopped) return;
    const { pg, log } = this.deps;
    // Schedule workflows are counted together (one label value per workflow would be unbounded).
    const job = name.startsWith('schedule:') ? 'schedule' : name;
    let client;
    try {
      client = await pg.connect();
    } catch (err) {
      log.warn({ err: (err as Error).message, job: name }, 'scheduler job skipped: postgres unavailable');
      metrics.schedulerRuns.inc({ job, outcome: 'failed' });
      return;
    }
    let locked = false;
    try {
      locked = await this.state.tryLock(client, name);
      if (!locked) {
        log.debug({ job: name }, 'scheduler job running on another replica');
        metrics.schedulerRuns.inc({ job, outcome: 'elsewhere' });
        return;
      }
      await fn();
      metrics.schedulerRuns.inc({ job, outcome: 'ran' });
    } catch (err) {
      log.error({ err, job: name }, 'scheduler job failed');
      metrics.schedulerRuns.inc({ job, outcome: 'failed' });
    } finally {
      if (locked) await this.state.unlock(client, name).catch(() => undefined);
      client.release();
    }
  }

  /**
   * One evaluation of every active threshold workflow over the per-minute aggregates: one query
   * per distinct window (all scopes at once), then per workflow the comparison, the recorded
   * evaluation and, when it holds and the cooldown allows, a job.
   */
  private async evaluateThresholds(slot: Date): Promise<void> {
    const { ch, log } = this.deps;
    let planned = this.directory
      .all('threshold')
      .map((wf) => ({ wf, ...parseThresholdConditions(wf.trigger) }))
      .filter((p) => {
        if (p.conditions.length === 0)
          log.debug({ workflowSid: p.wf.sid, errors: p.errors }, 'no usable condition');
        return p.conditions.length > 0;
      });
    const perConsumer = planned.filter((p) => p.wf.trigger.perConsumer === true);
    planned = planned.filter((p) => p.wf.trigger.perConsumer !== true);
    let consumerFires = 0;
    for (const p of perConsumer) {
      if (this.stopped) return;
      try {
        consumerFires += await this.evaluatePerConsumer(p.wf, p.conditions, slot);
      } catch (err) {
        log.error({ err, workflowSid: p.wf.sid }, 'per-consumer threshold evaluation failed');
      }
    }
    const byWindow = new Map<number, Map<string, Scope>>();
    for (const { wf, conditions } of planned) {
      for (const c of conditions) {
        const scopes = byWindow.get(c.windowSeconds) ?? new Map<string, Scope>();
        scopes.set(scopeKey(wf), wf);
        byWindow.set(c.windowSeconds, scopes);
      }
    }
    const metrics = new Map<number, Map<string, WindowMetrics>>();
    for (const [window, scopes] of byWindow) {
      metrics.set(window, await windowMetrics(ch, [...scopes.values()], window, slot));
    }

    let fired = 0;
    let resolved = 0;
    for (const { wf, conditions } of planned) {
      if (this.stopped) return;
      try {
        const ev = evaluate(conditions, (w) => metrics.get(w)!.get(scopeKey(wf))!);
        const first = ev.results[0]!;
        const firing = await this.state.recordEvaluation(wf.sid, wf.accountSid, slot, first.actual, ev.hit);
        const metric = {
          value: first.actual === null ? null : round(first.actual),
          threshold: first.condition.value,
          timeWindow: first.condition.timeWindow,
        };
        if (!ev.hit) {
          if (firing) resolved += await this.resolve(wf, `resolved: ${describeEvaluation(ev)}`, metric);
          continue;
        }
        // Cooldown = the longest window among the conditions.
        const window = Math.max(...conditions.map((c) => c.windowSeconds));
        if (!(await this.state.claimFire(wf.sid, slot, window))) continue;
        const job = timedJob(wf, { type: 'threshold', message: describeEvaluation(ev) }, metric);
        try {
          await this.produce(job);
        } catch (err) {
          // Not sent: give the claim back so the next evaluation fires instead of the cooldown holding.
          await this.state.unclaimFire(wf.sid, slot, firing).catch(() => undefined);
          throw err;
        }
        fired++;
      } catch (err) {
        log.error({ err, workflowSid: wf.sid }, 'threshold workflow evaluation failed');
      }
    }
    log.debug(
      { workflows: planned.length, fired, resolved, consumerFires, slot: slot.toISOString() },
      'threshold triggers evaluated',
    );
  }

  /**
   * A per-consumer threshold workflow (docs/consumers.md): the conditions are evaluated for every
   * consumer of the bucket with calls in the windows; a consumer that meets them all fires once
   * (its own job, the consumer in `{{consumer.*}}`) and again only after its condition cleared.
   * The workflow's own state records whether any consumer breaches. Returns the jobs queued.
   */
  private async evaluatePerConsumer(
    wf: TimedWorkflow,
    conditions: ReturnType<typeof parseThresholdConditions>['conditions'],
    slot: Date,
  ): Promise<number> {
    const windows = [...new Set(conditions.map((c) => c.windowSeconds))];
    const byWindow = new Map<number, Awaited<ReturnType<typeof consumerWindowMetrics>>>();
    for (const w of windows) byWindow.set(w, await consumerWindowMetrics(this.deps.ch, wf, w, slot));
    const consumers = new Set<string>();
    for (const m of byWindow.values()) for (const id of m.keys()) consumers.add(id);
    const none: WindowMetrics = {
      requests: 0,
      error_rate: null,
      avg_response_time: null,
      response_time: null,
    };
    const breaching: string[] = [];
    let fired = 0;
    let worst: number | null = null;
    for (const id of [...consumers].sort()) {
      const ev = evaluate(conditions, (w) => byWindow.get(w)!.get(id) ?? none);
      if (!ev.hit) continue;
      breaching.push(id);
      const first = ev.results[0]!;
      if (first.actual !== null && (worst === null || first.actual > worst)) worst = first.actual;
      if (!(await this.state.claimConsumerFire(wf.sid, id, slot))) continue;
      const labels = [...byWindow.values()].map((m) => m.get(id)).find((m) => m !== undefined);
      const job = timedJob(
        wf,
        { type: 'threshold', message: `consumer ${id}: ${describeEvaluation(ev)}` },
        {
          value: first.actual === null ? null : round(first.actual),
          threshold: first.condition.value,
          timeWindow: first.condition.timeWindow,
        },
        { consumer: { id, name: labels?.name ?? null, group: labels?.group ?? null } },
      );
      try {
        await this.produce(job);
      } catch (err) {
        await this.state.unclaimConsumerFire(wf.sid, id).catch(() => undefined);
        throw err;
      }
      fired++;
    }
    await this.state.clearConsumerFires(wf.sid, breaching);
    await this.state.recordEvaluation(wf.sid, wf.accountSid, slot, worst, breaching.length > 0);
    return fired;
  }

  /**
   * Closes the open alert of a threshold workflow whose condition cleared: one `resolved` job for
   * its native alert channels (the generic action types have no notion of it and get none).
   * Returns 1 when a job was queued. If it cannot be queued the alert stays open, so the next
   * evaluation tries again.
   */
  private async resolve(
    wf: TimedWorkflow,
    message: string,
    metric: { value: number | null; threshold: number; timeWindow: string },
  ): Promise<number> {
    if (!(await this.state.claimResolve(wf.sid))) return 0;
    if (!wf.actionTypes.some((t) => RESOLVING.has(t))) return 0;
    try {
      await this.produce(timedJob(wf, { type: 'threshold', message, status: 'resolved' }, metric));
    } catch (err) {
      await this.state.unclaimResolve(wf.sid).catch(() => undefined);
      throw err;
    }
    return 1;
  }

  /** Makes the cron tasks match the active schedule workflows (create, re-pattern, remove). */
  private syncScheduleTasks(): void {
    if (this.stopped) return;
    const { log } = this.deps;
    const wanted = new Map<string, TimedWorkflow>();
    for (const wf of this.directory.all('schedule')) wanted.set(wf.sid, wf);
    for (const [sid, entry] of this.scheduleTasks) {
      const wf = wanted.get(sid);
      if (!wf || taskKey(wf) !== entry.key) {
        void entry.task.destroy();
        this.scheduleTasks.delete(sid);
        log.info({ workflowSid: sid }, 'schedule task removed');
      }
    }
    for (const [sid, wf] of wanted) {
      if (this.scheduleTasks.has(sid)) continue;
      const pattern = typeof wf.trigger.schedule === 'string' ? wf.trigger.schedule.trim() : '';
      const timezone = typeof wf.trigger.timezone === 'string' ? wf.trigger.timezone : DEFAULT_TIMEZONE;
      if (!cron.validate(pattern)) {
        log.warn({ workflowSid: sid, schedule: pattern }, 'schedule workflow has an invalid cron pattern');
        continue;
      }
      try {
        const task = cron.schedule(pattern, (ctx) => this.track(this.runSchedule(sid, ctx)), {
          name: `schedule:${sid}`,
          noOverlap: true,
          timezone,
          logger: this.cronLog,
        });
        this.scheduleTasks.set(sid, { key: taskKey(wf), task });
        log.info({ workflowSid: sid, schedule: pattern, timezone }, 'schedule task started');
      } catch (err) {
        log.warn({ workflowSid: sid, err: (err as Error).message }, 'schedule task could not start');
      }
    }
  }

  private async runSchedule(sid: string, ctx: TaskContext): Promise<void> {
    const slot = slotOf(ctx);
    await this.runExclusive(`schedule:${sid}`, async () => {
      // The snapshot may have dropped it since the tick was armed (deactivated, deleted).
      const wf = this.directory.all('schedule').find((w) => w.sid === sid);
      if (!wf) return;
      if (!(await this.state.claimTick(sid, wf.accountSid, slot))) return;
      const schedule = String(wf.trigger.schedule);
      await this.produce(
        timedJob(wf, { type: 'schedule', message: `schedule ${schedule} fired at ${slot.toISOString()}` }),
      );
    });
  }

  private async produce(job: ActionJob): Promise<void> {
    if (!this.validateJob(job)) {
      // A bug, not data: never put a job on the topic that the runner would dead-letter.
      throw new Error(
        `scheduler built an invalid actionJob: ${JSON.stringify(this.validateJob.errors?.[0])}`,
      );
    }
    await this.state.recordQueued(job);
    try {
      await this.deps.producer.send({
        topic: TOPICS.actions,
        acks: -1,
        messages: [{ key: job.workflowSid, value: JSON.stringify(job) }],
      });
    } catch (err) {
      await this.state
        .recordQueueFailure(job.executionSid, `job could not be queued: ${(err as Error).message}`)
        .catch(() => undefined);
      throw err;
    }
    this.deps.log.info(
      {
        workflowSid: job.workflowSid,
        executionSid: job.executionSid,
        trigger: job.trigger.type,
        status: job.trigger.status ?? 'firing',
      },
      'workflow triggered',
    );
  }
}

/** Pattern and timezone: a change of either re-creates the task. */
function taskKey(wf: TimedWorkflow): string {
  return `${String(wf.trigger.schedule)}|${String(wf.trigger.timezone ?? '')}`;
}

/** The cron slot a run belongs to, to the second (the same on every replica). */
function slotOf(ctx: TaskContext): Date {
  const d = ctx.date instanceof Date ? ctx.date : new Date();
  return new Date(Math.floor(d.getTime() / 1000) * 1000);
}
