import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import type { Logger } from '../shared/logger.js';
import type { Pool } from '../shared/postgres.js';
import {
  DEFAULT_BURN_ALERTS,
  burnRate,
  describeBurn,
  holdingAlerts,
  round,
  windowSeconds,
  type BurnAlert,
} from '../slo/slo-math.js';
import { sloBurnCounts } from '../slo/slo.query.js';
import { SlosRepository, type Slo } from '../slo/slos.repository.js';
import { timedJob } from './job.factory.js';
import type { TriggerStateRepository } from './trigger-state.repository.js';
import type { TimedWorkflow } from './workflow.directory.js';

/** The alerts of a slo_burn trigger: its stored conditions, or the default table when it has none. */
export function burnAlertsOf(trigger: Record<string, unknown>): BurnAlert[] {
  const list = Array.isArray(trigger.conditions) ? (trigger.conditions as Record<string, unknown>[]) : [];
  const alerts = list.flatMap((c): BurnAlert[] => {
    const burn = Number(c.burnRate);
    const long = String(c.longWindow);
    const short = String(c.shortWindow);
    if (!(burn > 0) || windowSeconds(long) === undefined || windowSeconds(short) === undefined) return [];
    return [
      {
        severity: c.severity === 'ticket' ? 'ticket' : 'page',
        burnRate: burn,
        longWindow: long,
        shortWindow: short,
      },
    ];
  });
  return alerts.length ? alerts : [...DEFAULT_BURN_ALERTS];
}

/**
 * The `slo_burn` triggers (docs/slos.md "Burn-rate alerts"), evaluated on the scheduler's minute:
 * per bucket one query gives the bad and total counts of every window its SLOs' workflows name,
 * for each of those SLOs (sloBurnCounts); a workflow whose alert holds (long AND short window at
 * or above the burn rate) fires once and stays open, firing no more, until an evaluation finds no
 * alert holding, which closes it with one `resolved` job for its native alert channels (as a
 * threshold trigger resolves).
 */
export class SloBurnEvaluator {
  private readonly slos: SlosRepository;

  constructor(
    pg: Pool,
    private readonly ch: ClickHouseClient,
    private readonly state: TriggerStateRepository,
    private readonly produce: (job: ActionJob) => Promise<void>,
    private readonly resolving: ReadonlySet<string>,
    private readonly log: Logger,
  ) {
    this.slos = new SlosRepository(pg);
  }

  async evaluate(
    workflows: readonly TimedWorkflow[],
    slot: Date,
  ): Promise<{ fired: number; resolved: number }> {
    let fired = 0;
    let resolved = 0;
    if (workflows.length === 0) return { fired, resolved };
    const slos = await this.slos.bySids([...new Set(workflows.map((w) => String(w.trigger.sloSid)))]);
    const bySlo = new Map<string, TimedWorkflow[]>();
    for (const wf of workflows) {
      const sid = String(wf.trigger.sloSid);
      // An SLO deleted (or of another account) leaves its workflow idle.
      if (slos.get(sid)?.accountSid !== wf.accountSid) continue;
      bySlo.set(sid, [...(bySlo.get(sid) ?? []), wf]);
    }
    // The SLOs of one bucket are counted in one query, over every window their workflows name.
    const byBucket = new Map<string, string[]>();
    for (const sid of bySlo.keys()) {
      const slo = slos.get(sid)!;
      const key = `${slo.accountSid}/${slo.bucketSid}`;
      byBucket.set(key, [...(byBucket.get(key) ?? []), sid]);
    }
    for (const sids of byBucket.values()) {
      const alertsOf = new Map<string, BurnAlert[]>();
      const windows = new Set<number>();
      for (const sid of sids)
        for (const wf of bySlo.get(sid)!) {
          const alerts = burnAlertsOf(wf.trigger);
          alertsOf.set(wf.sid, alerts);
          for (const a of alerts) {
            windows.add(windowSeconds(a.longWindow)!);
            windows.add(windowSeconds(a.shortWindow)!);
          }
        }
      let counts: Map<string, Map<number, { total: number; bad: number }>>;
      try {
        counts = await sloBurnCounts(
          this.ch,
          sids.map((sid) => slos.get(sid)!),
          [...windows],
          slot,
        );
      } catch (err) {
        this.log.error({ err, sloSids: sids }, 'slo_burn evaluation failed');
        continue;
      }
      for (const sid of sids) {
        const slo = slos.get(sid)!;
        try {
          const burn = counts.get(sid)!;
          const rateOf = (w: string): number | null => {
            const c = burn.get(windowSeconds(w) ?? -1);
            return c ? burnRate(c, slo.objective) : null;
          };
          for (const wf of bySlo.get(sid)!) {
            const r = await this.evaluateOne(wf, slo, alertsOf.get(wf.sid)!, rateOf, slot);
            fired += r.fired;
            resolved += r.resolved;
          }
        } catch (err) {
          this.log.error({ err, sloSid: sid }, 'slo_burn evaluation failed');
        }
      }
    }
    return { fired, resolved };
  }

  private async evaluateOne(
    wf: TimedWorkflow,
    slo: Slo,
    alerts: BurnAlert[],
    rateOf: (w: string) => number | null,
    slot: Date,
  ): Promise<{ fired: number; resolved: number }> {
    const holding = holdingAlerts(alerts, rateOf);
    const shown = holding[0] ?? alerts[0]!;
    const longRate = rateOf(shown.longWindow);
    const firing = await this.state.recordEvaluation(
      wf.sid,
      wf.accountSid,
      slot,
      longRate === null ? null : round(longRate),
      holding.length > 0,
    );
    const context = {
      slo: {
        sid: slo.sid,
        name: slo.name,
        objective: slo.objective,
        severity: shown.severity,
        burnRate: longRate === null ? null : round(longRate),
        shortBurnRate: rateOf(shown.shortWindow) === null ? null : round(rateOf(shown.shortWindow)!),
        threshold: shown.burnRate,
        longWindow: shown.longWindow,
        shortWindow: shown.shortWindow,
      },
    };
    const metric = { value: context.slo.burnRate, threshold: shown.burnRate, timeWindow: shown.longWindow };
    if (holding.length === 0) {
      if (!firing || !(await this.state.claimResolve(wf.sid))) return { fired: 0, resolved: 0 };
      if (!wf.actionTypes.some((t) => this.resolving.has(t))) return { fired: 0, resolved: 0 };
      const message = `resolved: SLO ${slo.name}: ${describeBurn(shown, rateOf)}`;
      try {
        await this.produce(timedJob(wf, { type: 'slo_burn', message, status: 'resolved' }, metric, context));
      } catch (err) {
        await this.state.unclaimResolve(wf.sid).catch(() => undefined);
        throw err;
      }
      return { fired: 0, resolved: 1 };
    }
    if (!(await this.state.claimBreach(wf.sid, slot))) return { fired: 0, resolved: 0 };
    const message = `SLO ${slo.name}: ${describeBurn(shown, rateOf)}`;
    try {
      await this.produce(timedJob(wf, { type: 'slo_burn', message }, metric, context));
    } catch (err) {
      await this.state.unclaimBreach(wf.sid).catch(() => undefined);
      throw err;
    }
    return { fired: 1, resolved: 0 };
  }
}
