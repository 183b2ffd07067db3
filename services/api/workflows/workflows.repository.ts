import type pg from 'pg';
import type { Workflow, WorkflowAction, WorkflowTrigger } from '../../../schemas/workflow.schema.js';
import { notFound } from '../../shared/errors.js';
import { isSid, newSid } from '../../shared/ids.js';
import type { SecretBox } from '../../shared/secret-box.js';
import { openActions, sealActions, unmaskActions } from '../../actions/action-secrets.js';
import { iso, listPage, offsetOf, pageOf, type ListQuery, type ListResult } from '../tables/pagination.js';

export type {
  ActionType,
  TriggerType,
  Workflow,
  WorkflowAction,
  WorkflowTrigger,
} from '../../../schemas/workflow.schema.js';

export interface WorkflowInput {
  name: string;
  description?: string | null;
  trigger: WorkflowTrigger;
  actions: WorkflowAction[];
  isActive: boolean;
}

export interface WorkflowExecution {
  sid: string;
  workflowSid: string;
  triggerType: string;
  requestSid: string | null;
  status: string;
  attempts: number;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** Where a workflow lives: account, environment and bucket, as in its path. */
export interface WorkflowScope {
  accountSid: string;
  environmentSid: string;
  bucketSid: string;
}

interface Row {
  sid: string;
  account_sid: string;
  environment_sid: string;
  bucket_sid: string;
  name: string;
  description: string;
  trigger: WorkflowTrigger;
  actions: WorkflowAction[];
  is_active: boolean;
  created_at: Date;
  updated_at: Date | null;
}

/** A `workflow_executions` row as executionColumns() reads it. */
export interface ExecutionRow {
  sid: string;
  workflow_sid: string;
  trigger_type: string;
  request_sid: string | null;
  status: string;
  attempts: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const toWorkflow = (r: Row): Workflow => ({
  sid: r.sid,
  accountSid: r.account_sid,
  environmentSid: r.environment_sid,
  bucketSid: r.bucket_sid,
  name: r.name,
  description: r.description,
  trigger: r.trigger,
  actions: r.actions,
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

const EXECUTION_COLUMNS = [
  'sid',
  'workflow_sid',
  'trigger_type',
  'request_sid',
  'status',
  'attempts',
  'error',
  'created_at',
  'started_at',
  'finished_at',
];

/** The summary columns of `workflow_executions` (ExecutionRow), each prefixed with `alias.` when given. */
export const executionColumns = (alias?: string): string =>
  EXECUTION_COLUMNS.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

export const toExecution = (r: ExecutionRow): WorkflowExecution => ({
  sid: r.sid,
  workflowSid: r.workflow_sid,
  triggerType: r.trigger_type,
  requestSid: r.request_sid,
  status: r.status,
  attempts: r.attempts,
  error: r.error,
  createdAt: r.created_at.toISOString(),
  startedAt: iso(r.started_at),
  finishedAt: iso(r.finished_at),
});

export const WORKFLOW_SORTS = ['createdAt', 'updatedAt', 'name'] as const;
const SORT_COLUMNS = { createdAt: 'created_at', updatedAt: 'COALESCE(updated_at, created_at)', name: 'name' };
export const EXECUTION_SORTS = ['createdAt'] as const;

export interface WorkflowFilters {
  bucketSid?: string;
  /** any of these buckets (an MCP token limited to a bucket list) */
  bucketSids?: string[];
  environmentSid?: string;
  isActive?: boolean;
}

export class WorkflowsRepository {
  /**
   * With `box`, action secrets (URLs, header values, credential-named body and data values) are
   * sealed on write and opened on read (action-secrets.ts); the API masks them in its answers.
   * Without it (a reader that never shows nor runs actions) rows are returned as stored.
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly box?: SecretBox,
  ) {}

  private readonly toWorkflow = (r: Row): Workflow => {
    const w = toWorkflow(r);
    return this.box && Array.isArray(w.actions) ? { ...w, actions: openActions(w.actions, this.box) } : w;
  };

  private seal(actions: WorkflowAction[]): WorkflowAction[] {
    return this.box ? sealActions(actions, this.box) : actions;
  }

  /** Account-wide list, optionally narrowed to a bucket and/or environment. */
  list(accountSid: string, f: WorkflowFilters, q: ListQuery): Promise<ListResult<Workflow>> {
    return listPage(
      this.pool,
      {
        select: 'SELECT * FROM workflows',
        where: `account_sid = $1
         AND ($2::text IS NULL OR bucket_sid = $2)
         AND ($3::text IS NULL OR environment_sid = $3)
         AND ($4::boolean IS NULL OR is_active = $4)
         AND ($5::text[] IS NULL OR bucket_sid = ANY($5))`,
        values: [
          accountSid,
          f.bucketSid ?? null,
          f.environmentSid ?? null,
          f.isActive ?? null,
          f.bucketSids ?? null,
        ],
        sorts: SORT_COLUMNS,
      },
      q,
      this.toWorkflow,
    );
  }

  async get(scope: WorkflowScope, sid: string): Promise<Workflow> {
    if (!isSid('workflow', sid)) throw notFound('Workflow');
    const r = await this.pool.query<Row>(
      `SELECT * FROM workflows
       WHERE account_sid = $1 AND environment_sid = $2 AND bucket_sid = $3 AND sid = $4`,
      [scope.accountSid, scope.environmentSid, scope.bucketSid, sid],
    );
    if (!r.rows[0]) throw notFound('Workflow');
    return this.toWorkflow(r.rows[0]);
  }

  async create(scope: WorkflowScope, input: WorkflowInput): Promise<Workflow> {
    // Nothing is stored yet: a masked value (a body copied from a read) is a 400, never stored.
    const actions = this.box ? unmaskActions(input.actions, []) : input.actions;
    const r = await this.pool.query<Row>(
      `INSERT INTO workflows
         (sid, account_sid, environment_sid, bucket_sid, name, description, trigger, actions, is_active)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
      [
        newSid('workflow'),
        scope.accountSid,
        scope.environmentSid,
        scope.bucketSid,
        input.name,
        input.description ?? '',
        JSON.stringify(input.trigger),
        JSON.stringify(this.seal(actions)),
        input.isActive,
      ],
    );
    return this.toWorkflow(r.rows[0]!);
  }

  async update(scope: WorkflowScope, sid: string, input: WorkflowInput): Promise<Workflow> {
    if (!isSid('workflow', sid)) throw notFound('Workflow');
    // Masked values read from the API and sent back keep the stored secrets while their action's
    // URL keeps its origin; any other masked value is a 400 (action-secrets.ts).
    const actions = this.box
      ? unmaskActions(input.actions, (await this.get(scope, sid)).actions)
      : input.actions;
    const r = await this.pool.query<Row>(
      `UPDATE workflows SET name = $5, description = $6, trigger = $7, actions = $8, is_active = $9,
         updated_at = now()
       WHERE account_sid = $1 AND environment_sid = $2 AND bucket_sid = $3 AND sid = $4 RETURNING *`,
      [
        scope.accountSid,
        scope.environmentSid,
        scope.bucketSid,
        sid,
        input.name,
        input.description ?? '',
        JSON.stringify(input.trigger),
        JSON.stringify(this.seal(actions)),
        input.isActive,
      ],
    );
    if (!r.rows[0]) throw notFound('Workflow');
    return this.toWorkflow(r.rows[0]);
  }

  async delete(scope: WorkflowScope, sid: string): Promise<void> {
    if (!isSid('workflow', sid)) throw notFound('Workflow');
    const r = await this.pool.query(
      `DELETE FROM workflows
       WHERE account_sid = $1 AND environment_sid = $2 AND bucket_sid = $3 AND sid = $4`,
      [scope.accountSid, scope.environmentSid, scope.bucketSid, sid],
    );
    if (r.rowCount === 0) throw notFound('Workflow');
  }

  /**
   * Executions of every workflow matching `f` (one workflow with `workflowSid`), newest first, with
   * the workflow's name and the trigger's message: what fired, for MCP `list_workflow_executions`.
   */
  async executionsOf(
    accountSid: string,
    f: WorkflowFilters & { workflowSid?: string; status?: string; since?: string },
    q: ListQuery,
  ): Promise<ListResult<WorkflowExecution & { workflowName: string; message: string | null }>> {
    const r = await this.pool.query<ExecutionRow & { workflow_name: string; message: string | null }>(
      `SELECT ${executionColumns('e')}, w.name AS workflow_name,
              e.detail->'trigger'->>'message' AS message
       FROM workflow_executions e JOIN workflows w ON w.sid = e.workflow_sid
       WHERE e.account_sid = $1 AND w.account_sid = $1
         AND ($2::text IS NULL OR w.bucket_sid = $2)
         AND ($3::text IS NULL OR w.environment_sid = $3)
         AND ($4::text[] IS NULL OR w.bucket_sid = ANY($4))
         AND ($5::text IS NULL OR w.sid = $5)
         AND ($6::text IS NULL OR e.status = $6)
         AND ($7::timestamptz IS NULL OR e.created_at >= $7)
       ORDER BY e.created_at ${q.order === 'asc' ? 'ASC' : 'DESC'}, e.sid ${q.order === 'asc' ? 'ASC' : 'DESC'}
       LIMIT $8 OFFSET $9`,
      [
        accountSid,
        f.bucketSid ?? null,
        f.environmentSid ?? null,
        f.bucketSids ?? null,
        f.workflowSid ?? null,
        f.status ?? null,
        f.since ?? null,
        q.limit + 1,
        offsetOf(q),
      ],
    );
    return pageOf(
      r.rows.map((x) => ({ ...toExecution(x), workflowName: x.workflow_name, message: x.message })),
      q.limit,
    );
  }
}
