import type pg from 'pg';
import {
  ALERT_EXECUTIONS,
  ERROR_ALERT_QUIET_MINUTES,
  type ALERT_STATES,
} from '../../../schemas/alert.schema.js';
import type { WorkflowTrigger } from '../../../schemas/workflow.schema.js';
import { iso } from '../tables/pagination.js';
import {
  executionColumns,
  toExecution,
  type ExecutionRow,
  type WorkflowExecution,
} from './workflows.repository.js';

/** One alert as GET /v1/accounts/{a}/alerts answers it (schemas/alert.schema.ts). */
export interface Alert {
  workflowSid: string;
  name: string;
  bucketSid: string;
  environmentSid: string;
  triggerType: 'threshold' | 'error';
  trigger: WorkflowTrigger;
  isActive: boolean;
  state: (typeof ALERT_STATES)[number];
  since: string | null;
  lastFiredAt: string | null;
  lastEvaluatedAt: string | null;
  lastValue: number | null;
  executions: (WorkflowExecution & { trigger: { type: string; message: string } | null })[];
}

/** At most this many alerts are listed (an account's threshold and error workflows). */
export const MAX_ALERTS = 500;

export interface AlertFilters {
  bucketSid?: string;
  environmentSid?: string;
  state?: Alert['state'];
}

interface AlertRow {
  sid: string;
  name: string;
  bucket_sid: string;
  environment_sid: string;
  trigger: WorkflowTrigger;
  is_active: boolean;
  last_evaluated_at: Date | null;
  last_value: number | null;
  last_result: boolean | null;
  result_since: Date | null;
  last_at: Date | null;
  burst_start: Date | null;
}

/**
 * Threshold and error workflows as alerts with a state (docs/workflows-api.md "Alerts"). Threshold
 * state comes from the scheduler's last evaluation (`workflow_trigger_state`); an error workflow
 * fires per captured error, so it counts as firing while its executions keep coming: the current
 * burst is the run of executions each less than ERROR_ALERT_QUIET_MINUTES after the one before.
 */
export class AlertsRepository {
  constructor(private readonly pool: pg.Pool) {}

  async list(accountSid: string, f: AlertFilters, now = new Date()): Promise<Alert[]> {
    const r = await this.pool.query<AlertRow>(
      `WITH w AS (
         SELECT sid, name, bucket_sid, environment_sid, trigger, is_active, created_at FROM workflows
         WHERE account_sid = $1 AND trigger->>'type' IN ('threshold', 'error')
           AND ($2::text IS NULL OR bucket_sid = $2) AND ($3::text IS NULL OR environment_sid = $3)
         ORDER BY created_at, sid LIMIT ${MAX_ALERTS}
       ),
       e AS (
         SELECT x.workflow_sid, x.created_at,
                x.created_at - lag(x.created_at) OVER (PARTITION BY x.workflow_sid ORDER BY x.created_at) AS gap
         FROM workflow_executions x JOIN w ON w.sid = x.workflow_sid
         WHERE x.account_sid = $1 AND x.created_at > $4::timestamptz - interval '31 days'
       ),
       bursts AS (
         SELECT workflow_sid, max(created_at) AS last_at,
                max(created_at) FILTER (WHERE gap IS NULL OR gap >= make_interval(mins => $5)) AS burst_start
         FROM e GROUP BY workflow_sid
       )
       SELECT w.sid, w.name, w.bucket_sid, w.environment_sid, w.trigger, w.is_active,
              s.last_evaluated_at, s.last_value, s.last_result, s.result_since, b.last_at, b.burst_start
       FROM w
       LEFT JOIN workflow_trigger_state s ON s.workflow_sid = w.sid
       LEFT JOIN bursts b ON b.workflow_sid = w.sid
       ORDER BY w.created_at, w.sid`,
      [accountSid, f.bucketSid ?? null, f.environmentSid ?? null, now, ERROR_ALERT_QUIET_MINUTES],
    );
    const executions = await this.latestExecutions(
      accountSid,
      r.rows.map((x) => x.sid),
    );
    const alerts = r.rows.map((x) => toAlert(x, now, executions.get(x.sid) ?? []));
    return f.state ? alerts.filter((a) => a.state === f.state) : alerts;
  }

  /** The latest ALERT_EXECUTIONS executions of each workflow, newest first. */
  private async latestExecutions(
    accountSid: string,
    workflowSids: string[],
  ): Promise<Map<string, Alert['executions']>> {
    const out = new Map<string, Alert['executions']>();
    if (workflowSids.length === 0) return out;
    const r = await this.pool.query<ExecutionRow & { message: string | null }>(
      `SELECT ${executionColumns('x')}, x.detail->'trigger'->>'message' AS message
       FROM unnest($2::text[]) AS w(sid)
       CROSS JOIN LATERAL (
         SELECT * FROM workflow_executions e
         WHERE e.workflow_sid = w.sid AND e.account_sid = $1
         ORDER BY e.created_at DESC, e.sid DESC LIMIT ${ALERT_EXECUTIONS}
       ) x
       ORDER BY x.created_at DESC, x.sid DESC`,
      [accountSid, workflowSids],
    );
    for (const row of r.rows) {
      const list = out.get(row.workflow_sid) ?? [];
      list.push({
        ...toExecution(row),
        trigger: row.message === null ? null : { type: row.trigger_type, message: row.message },
      });
      out.set(row.workflow_sid, list);
    }
    return out;
  }
}

function toAlert(x: AlertRow, now: Date, executions: Alert['executions']): Alert {
  const threshold = x.trigger.type === 'threshold';
  let state: Alert['state'];
  let since: Date | null;
  if (!x.is_active) {
    state = 'paused';
    since = null;
  } else if (threshold) {
    state = x.last_result === true ? 'firing' : 'resolved';
    since = x.last_result === null ? null : x.result_since;
  } else if (x.last_at && now.getTime() - x.last_at.getTime() < ERROR_ALERT_QUIET_MINUTES * 60_000) {
    state = 'firing';
    since = x.burst_start;
  } else {
    state = 'resolved';
    since = x.last_at ? new Date(x.last_at.getTime() + ERROR_ALERT_QUIET_MINUTES * 60_000) : null;
  }
  return {
    workflowSid: x.sid,
    name: x.name,
    bucketSid: x.bucket_sid,
    environmentSid: x.environment_sid,
    triggerType: threshold ? 'threshold' : 'error',
    trigger: x.trigger,
    isActive: x.is_active,
    state,
    since: iso(since),
    lastFiredAt: iso(x.last_at),
    lastEvaluatedAt: threshold ? iso(x.last_evaluated_at) : null,
    lastValue: threshold ? x.last_value : null,
    executions,
  };
}
