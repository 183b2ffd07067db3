import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { WorkflowExecution } from '../../schemas/workflow.schema.js';
import { openActions } from './action-secrets.js';
import type { Pool } from '../shared/postgres.js';
import type { SecretBox } from '../shared/secret-box.js';

/** Per-action result inside `workflow_executions.detail.actions` (docs/workflows.md). */
export interface ActionRecord {
  index: number;
  type: string;
  order: number;
  status: NonNullable<WorkflowExecution['actions']>[number]['status'];
  attempts: number;
  /** false after a failure that another attempt cannot fix */
  retryable?: boolean;
  statusCode?: number;
  messageId?: string;
  error?: string;
  durationMs?: number;
  finishedAt?: string;
}

export interface ExecutionDetail {
  trigger: { type: string; message: string };
  actions: ActionRecord[];
}

export interface WorkflowRow {
  sid: string;
  account_sid: string;
  name: string;
  is_active: boolean;
  actions: unknown;
}

/** Postgres side of the action runner: the workflow to run and its execution record. */
export class ExecutionsRepository {
  /** `box` opens the sealed secrets of the workflow's actions (docs/security.md "Secrets at rest"). */
  constructor(
    private readonly pg: Pool,
    private readonly box?: SecretBox,
  ) {}

  async workflow(accountSid: string, workflowSid: string): Promise<WorkflowRow | undefined> {
    const r = await this.pg.query<WorkflowRow>(
      'SELECT sid, account_sid, name, is_active, actions FROM workflows WHERE sid = $1 AND account_sid = $2',
      [workflowSid, accountSid],
    );
    const row = r.rows[0];
    if (row && this.box && Array.isArray(row.actions))
      row.actions = openActions(row.actions as { config?: unknown }[], this.box);
    return row;
  }

  /**
   * Upserts the execution as `running`. Returns undefined when it already reached a final state
   * (a redelivered job): the caller skips it. A row written `pending` by the producer is taken over.
   */
  async begin(
    job: ActionJob,
    detail: ExecutionDetail,
  ): Promise<{ attempts: number; detail: ExecutionDetail | null } | undefined> {
    const r = await this.pg.query<{ attempts: number; detail: ExecutionDetail | null }>(
      `INSERT INTO workflow_executions
         (sid, account_sid, workflow_sid, bucket_sid, trigger_type, request_sid, status, attempts, detail,
          created_at, started_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'running', 0, $7, $8, now(), now())
       ON CONFLICT (sid) DO UPDATE SET
         status = 'running',
         started_at = COALESCE(workflow_executions.started_at, now()),
         updated_at = now()
       WHERE workflow_executions.status IN ('pending', 'running')
         AND workflow_executions.account_sid = EXCLUDED.account_sid
       RETURNING attempts, detail`,
      [
        job.executionSid,
        job.accountSid,
        job.workflowSid,
        job.bucketSid,
        job.trigger.type,
        job.requestSid,
        JSON.stringify(detail),
        job.createdAt,
      ],
    );
    return r.rows[0];
  }

  async attempt(sid: string, attempts: number, detail: ExecutionDetail): Promise<void> {
    await this.pg.query(
      'UPDATE workflow_executions SET attempts = $2, detail = $3, updated_at = now() WHERE sid = $1',
      [sid, attempts, JSON.stringify(detail)],
    );
  }

  async finish(
    sid: string,
    status: 'succeeded' | 'failed' | 'skipped',
    attempts: number,
    error: string | null,
    detail: ExecutionDetail,
  ): Promise<void> {
    await this.pg.query(
      `UPDATE workflow_executions
         SET status = $2, attempts = $3, error = $4, detail = $5, finished_at = now(), updated_at = now()
       WHERE sid = $1`,
      [sid, status, attempts, error, JSON.stringify(detail)],
    );
  }

  /** The runner stops mid-job: back to `pending`, the job is redelivered and resumes from `detail`. */
  async release(sid: string, detail: ExecutionDetail): Promise<void> {
    await this.pg.query(
      `UPDATE workflow_executions SET status = 'pending', detail = $2, updated_at = now()
       WHERE sid = $1 AND status = 'running'`,
      [sid, JSON.stringify(detail)],
    );
  }
}
