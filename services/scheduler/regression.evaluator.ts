import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { EventMarker } from '../api/events/events.repository.js';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import type { Logger } from '../shared/logger.js';
import type { Pool } from '../shared/postgres.js';
import { ImpactService, type EndpointImpact } from '../releases/impact.service.js';
import { timedJob } from './job.factory.js';
import type { TimedWorkflow } from './workflow.directory.js';

/** Records arriving late still count: a deployment is judged this long after its after window. */
export const REGRESSION_GRACE_MS = 2 * 60_000;
/**
 * Deployments older than this are never judged for a workflow (one made later, say). The longest
 * windows a bucket may set (1,440 minutes after 120 settling minutes) end well within it.
 */
const LOOKBACK_MS = 27 * 3_600_000;

interface EventRow {
  sid: string;
  account_sid: string;
  bucket_sids: string[];
  environment_sids: string[];
  name: string;
  started_at: Date;
}

/**
 * The `regression` triggers (docs/releases.md "Alerts"): for each active regression workflow, every
 * deployment event of its account shown on its bucket and environment, started in the last 24 h and
 * not judged yet for it, is judged once its after window (plus a 2-minute grace) has passed: the
 * impact restricted to the workflow's bucket and environment. The judgement is claimed by one
 * insert into release_regression_checks, so a deployment fires a workflow at most once; a
 * deployment that regressed an endpoint queues one job with the endpoints and their figures.
 */
export class RegressionEvaluator {
  private readonly impact: ImpactService;

  constructor(
    private readonly pg: Pool,
    ch: ClickHouseClient,
    private readonly produce: (job: ActionJob) => Promise<void>,
    private readonly log: Logger,
  ) {
    this.impact = new ImpactService(pg, ch);
  }

  async evaluate(workflows: readonly TimedWorkflow[], slot: Date): Promise<number> {
    let fired = 0;
    for (const wf of workflows) {
      try {
        const events = await this.pg.query<EventRow>(
          `SELECT e.sid, e.account_sid, e.bucket_sids, e.environment_sids, e.name, e.started_at FROM events e
           WHERE e.account_sid = $1 AND e.type = 'deployment'
             AND e.started_at >= $2 AND e.started_at <= $3
             AND (e.bucket_sids @> ARRAY[$4] OR '*' = ANY(e.bucket_sids))
             AND (e.environment_sids @> ARRAY[$5] OR '*' = ANY(e.environment_sids))
             AND NOT EXISTS (SELECT 1 FROM release_regression_checks c WHERE c.workflow_sid = $6 AND c.event_sid = e.sid)
           ORDER BY e.started_at`,
          [
            wf.accountSid,
            new Date(slot.getTime() - LOOKBACK_MS),
            slot,
            wf.bucketSid,
            wf.environmentSid,
            wf.sid,
          ],
        );
        for (const row of events.rows) fired += await this.judge(wf, row, slot);
      } catch (err) {
        this.log.error({ err, workflowSid: wf.sid }, 'regression evaluation failed');
      }
    }
    return fired;
  }

  private async judge(wf: TimedWorkflow, row: EventRow, slot: Date): Promise<number> {
    const event: EventMarker = {
      sid: row.sid,
      accountSid: row.account_sid,
      bucketSids: row.bucket_sids,
      environmentSids: row.environment_sids,
      type: 'deployment',
      name: row.name,
      description: null,
      source: null,
      metadata: null,
      startedAt: row.started_at.toISOString(),
      endedAt: null,
      createdAt: row.started_at.toISOString(),
      updatedAt: null,
    };
    const scope = { bucketSids: [wf.bucketSid], environmentSid: wf.environmentSid };
    const impact = await this.impact.analyse(event, {}, scope, slot);
    if (slot.getTime() < Date.parse(impact.window.after.to) + REGRESSION_GRACE_MS) return 0;
    const regressed = impact.endpoints.filter((e) => e.verdict === 'regressed');
    const claim = await this.pg.query(
      `INSERT INTO release_regression_checks (workflow_sid, event_sid, regressed) VALUES ($1, $2, $3)
       ON CONFLICT DO NOTHING RETURNING 1`,
      [wf.sid, event.sid, regressed.length > 0],
    );
    if (!claim.rowCount || regressed.length === 0) return 0;
    const job = timedJob(wf, { type: 'regression', message: describe(event.name, regressed) }, undefined, {
      release: {
        eventSid: event.sid,
        name: event.name,
        startedAt: event.startedAt,
        regressed: regressed.length,
        endpoints: regressed.map((e) => ({
          endpoint: e.endpoint,
          method: e.method,
          before: e.before,
          after: e.after,
          reasons: e.change.reasons,
          ...(e.consumers
            ? {
                consumersHit: e.consumersHit,
                consumersTotal: e.consumersTotal,
                consumers: hitConsumers(e).map((c) => ({
                  consumer: c.consumer,
                  name: c.name,
                  group: c.group,
                  before: c.before,
                  after: c.after,
                  reasons: c.change.reasons,
                })),
              }
            : {}),
        })),
        consumers: consumersHit(regressed),
      },
    });
    try {
      await this.produce(job);
    } catch (err) {
      // Not sent: forget the judgement so the next evaluation tries again.
      await this.pg
        .query('DELETE FROM release_regression_checks WHERE workflow_sid = $1 AND event_sid = $2', [
          wf.sid,
          event.sid,
        ])
        .catch(() => undefined);
      throw err;
    }
    return 1;
  }
}

/** The listed consumers of a regressed endpoint whose own calls regressed. */
function hitConsumers(e: EndpointImpact) {
  return (e.consumers ?? []).filter((c) => c.verdict === 'regressed');
}

/** Every listed consumer hit by the deployment, once, with the endpoints (`POST /checkout`) it is hit on. */
function consumersHit(regressed: EndpointImpact[]) {
  const out = new Map<
    string,
    { consumer: string; name: string | null; group: string | null; endpoints: string[] }
  >();
  for (const e of regressed)
    for (const c of hitConsumers(e)) {
      const cur = out.get(c.consumer) ?? {
        consumer: c.consumer,
        name: c.name,
        group: c.group,
        endpoints: [],
      };
      cur.endpoints.push(`${e.method} ${e.endpoint}`);
      out.set(c.consumer, cur);
    }
  return [...out.values()];
}

/**
 * `deployment v42 regressed 2 endpoints: POST /checkout (slower: p50 x3, p95 x3.1; consumers hit:
 * Acme Ltd); GET /cart (…)`: a consumer by its name, else its id.
 */
function describe(name: string, regressed: EndpointImpact[]): string {
  const list = regressed
    .slice(0, 10)
    .map((e) => {
      const hit = hitConsumers(e).map((c) => c.name ?? c.consumer);
      const more = (e.consumersHit ?? 0) - hit.length;
      const consumers = hit.length
        ? `; consumers hit: ${hit.join(', ')}${more > 0 ? ` and ${more} more` : ''}`
        : '';
      return `${e.method} ${e.endpoint} (${e.change.reasons.join(', ')}${consumers})`;
    })
    .join('; ');
  const more = regressed.length > 10 ? `; and ${regressed.length - 10} more` : '';
  return `deployment ${name} regressed ${regressed.length} endpoint${regressed.length === 1 ? '' : 's'}: ${list}${more}`;
}
