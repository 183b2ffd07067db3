import type { Producer } from 'kafkajs';
import type pg from 'pg';
import type { ActionJob } from '../../../schemas/action-job.schema.js';
import { ActionError } from '../../actions/action.errors.js';
import { dashboardBaseUrl, executeAction, parseActions } from '../../actions/action.executors.js';
import type { ActionRecord, ExecutionDetail } from '../../actions/executions.repository.js';
import { MailSender } from '../../actions/mail.sender.js';
import { OutboundGuard } from '../../actions/outbound-guard.js';
import {
  TEMPLATE_VARIABLES,
  renderDeep,
  templateVars,
  type TemplateVars,
} from '../../actions/template.renderer.js';
import type { StoredRecord } from '../../processor/pipeline.js';
import { buildJob, factsOf } from '../../processor/triggers.js';
import type { ClickHouseClient } from '../../shared/clickhouse.js';
import type { Config } from '../../shared/config.js';
import { AppError, notFound, unavailable } from '../../shared/errors.js';
import { newSid } from '../../shared/ids.js';
import { TOPICS } from '../../shared/topics.js';
import { createdWithin, offsetOf, pageOf, type ListQuery, type ListResult } from '../tables/pagination.js';
import { RequestsRepository } from '../requests/requests.repository.js';
import {
  executionColumns,
  toExecution,
  type ExecutionRow,
  type Workflow,
  type WorkflowAction,
  type WorkflowExecution,
} from './workflows.repository.js';

/** Where a sample comes from: a stored request of the bucket, or a synthetic one. */
export interface SampleInfo {
  kind: 'stored' | 'synthetic';
  requestSid: string | null;
  /** one line saying what the sample is, for the dashboard */
  description: string;
}

/** What one action did in a test run (`POST …/workflows/{w}/test`). */
export interface TestActionResult {
  index: number;
  type: string;
  order: number;
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  messageId: string | null;
  error: string | null;
  retryable: boolean | null;
  durationMs: number;
}

/**
 * An execution as the log lists it (docs/workflows-api.md "Executions"): the summary fields always,
 * `trigger`, `deadLettered` and `actions` with `detail` (the list's `?detail=true`, one execution,
 * a re-run).
 */
export interface ExecutionView extends WorkflowExecution {
  trigger?: { type: string; message: string } | null;
  deadLettered?: boolean;
  actions?: {
    index: number;
    type: string;
    status: string;
    attempts: number;
    statusCode: number | null;
    error: string | null;
  }[];
}

export interface ExecutionFilters {
  status?: string;
  triggerType?: string;
  requestSid?: string;
  deadLettered?: boolean;
}

type ExecRow = ExecutionRow & { detail: Partial<ExecutionDetail> | null };

/**
 * The runner's dead-letter reason always starts "after N attempt(s): …" (job.runner.ts); other
 * failed executions (e.g. "workflow is inactive") never reached the dead-letter topic.
 */
const DEAD_LETTER_SQL = `(status = 'failed' AND error LIKE 'after %')`;

function toView(r: ExecRow, detail = true): ExecutionView {
  const summary: ExecutionView = toExecution(r);
  if (!detail) return summary;
  const d = r.detail ?? {};
  const trig = d.trigger && typeof d.trigger.message === 'string' ? d.trigger : null;
  return {
    ...summary,
    trigger: trig ? { type: String(trig.type), message: trig.message } : null,
    deadLettered: r.status === 'failed' && typeof r.error === 'string' && r.error.startsWith('after '),
    actions: (Array.isArray(d.actions) ? d.actions : []).map((a: ActionRecord) => ({
      index: a.index,
      type: a.type,
      status: a.status,
      attempts: a.attempts,
      statusCode: typeof a.statusCode === 'number' ? a.statusCode : null,
      error: a.error ?? null,
    })),
  };
}

/** Every template variable name the renderer knows, `root.field` (template.renderer.ts). */
export const TEMPLATE_VARIABLE_NAMES: readonly string[] = Object.entries(TEMPLATE_VARIABLES).flatMap(
  ([root, fields]) => fields.map((f) => `${root}.${f}`),
);

/**
 * The dashboard's workflow tools: a sample job built from a stored (or synthetic) request, the
 * rendered template variables of that sample, a one-shot test of a workflow's actions through
 * the runner's executors and outbound guard, the extended execution log, and the re-run of a
 * failed execution through `workflow.actions` (the normal action path).
 */
export class WorkflowTools {
  private readonly requests: RequestsRepository;
  private readonly guard: OutboundGuard;
  private readonly mail: MailSender;

  constructor(
    private readonly pool: pg.Pool,
    ch: ClickHouseClient,
    private readonly cfg: Config,
    private readonly producer: Producer | undefined,
  ) {
    this.requests = new RequestsRepository(ch, pool);
    this.guard = new OutboundGuard(cfg.actions.outboundAllow);
    this.mail = new MailSender(cfg.smtp, cfg.actions.timeoutMs);
  }

  private async names(accountSid: string, bucketSid: string) {
    const r = await this.pool.query<{ account_name: string; bucket_name: string }>(
      `SELECT a.name AS account_name, b.name AS bucket_name
         FROM buckets b JOIN accounts a ON a.sid = b.account_sid
        WHERE b.account_sid = $1 AND b.sid = $2`,
      [accountSid, bucketSid],
    );
    const row = r.rows[0];
    if (!row) throw notFound('Bucket');
    return { accountName: row.account_name, bucketName: row.bucket_name };
  }

  /**
   * The stored request to sample: the given sid (404 if the bucket has no such request), else the
   * newest stored request of the bucket in the workflow's environment (for an error trigger, the
   * newest error first), else none.
   */
  private async pickRequest(
    wf: Pick<Workflow, 'accountSid' | 'bucketSid' | 'environmentSid'> & { triggerType: string },
    requestSid: string | null | undefined,
  ): Promise<StoredRecord | null> {
    if (requestSid) return (await this.requests.get(wf.accountSid, wf.bucketSid, requestSid)) as StoredRecord;
    const page = await this.requests.list(
      wf.accountSid,
      wf.bucketSid,
      { page: 1, limit: 50, sort: 'createdAt', order: 'desc' } as ListQuery,
      {},
    );
    const recs = page.records as StoredRecord[];
    const sameEnv = recs.filter((r) => r.environmentSid === wf.environmentSid);
    const pool = sameEnv.length ? sameEnv : recs;
    const isError = (r: StoredRecord) => {
      const sc = r.response?.statusCode;
      return typeof sc === 'number' && sc >= 400;
    };
    if (wf.triggerType === 'error') return pool.find(isError) ?? pool[0] ?? null;
    return pool[0] ?? null;
  }

  /**
   * A job like the processor or scheduler would produce for this workflow, on a sample: a stored
   * request (request/error triggers, and any trigger when `requestSid` is given), or a synthetic
   * one; threshold triggers get `metric` from their first condition.
   */
  async sampleJob(
    wf: Pick<Workflow, 'sid' | 'name' | 'accountSid' | 'bucketSid' | 'environmentSid' | 'trigger'>,
    requestSid: string | null | undefined,
    executionSid: string,
  ): Promise<{ job: ActionJob; sample: SampleInfo }> {
    const names = await this.names(wf.accountSid, wf.bucketSid);
    const type = wf.trigger.type;
    const timed = type === 'threshold' || type === 'schedule';
    const stored =
      timed && !requestSid ? null : await this.pickRequest({ ...wf, triggerType: type }, requestSid);
    const record: StoredRecord = stored ?? {
      sid: 'req_sample',
      accountSid: wf.accountSid,
      bucketSid: wf.bucketSid,
      environmentSid: wf.environmentSid,
      createdAt: new Date().toISOString(),
      receivedAt: new Date().toISOString(),
      request: {
        method: 'GET',
        path: '/example/path',
        headers: { 'user-agent': 'tapline-sample' },
        body: null,
        queryString: {},
      },
      response: {
        statusCode: type === 'error' ? 500 : 200,
        headers: { 'content-type': 'application/json' },
        body: '{"sample":true}',
        size: 15,
      },
      timings: { duration: 42 },
    };
    const facts = factsOf(record);
    const processorType = type === 'error' ? 'error' : 'request';
    const job = buildJob(
      record,
      {
        sid: wf.sid,
        name: wf.name,
        bucketSid: wf.bucketSid,
        environmentSid: wf.environmentSid,
        type: processorType,
        matches: () => true,
      },
      facts,
      names,
      executionSid,
    );
    if (!stored) job.requestSid = null;
    if (timed) {
      const first = (wf.trigger.conditions[0] ?? {}) as {
        value?: unknown;
        timeWindow?: unknown;
        metric?: unknown;
      };
      job.trigger =
        type === 'threshold'
          ? {
              type,
              message: `${String(first.metric ?? 'metric')} is ${String(first.value ?? 0)} (sample) over the last ${String(first.timeWindow ?? '5m')}`,
            }
          : { type, message: `schedule ${wf.trigger.schedule ?? ''} fired at ${job.createdAt} (sample)` };
      if (type === 'threshold') {
        const value = typeof first.value === 'number' ? first.value : Number(first.value ?? 0);
        job.context.metric = { value, threshold: value, timeWindow: String(first.timeWindow ?? '') };
      }
      if (!stored) {
        job.context.request = { method: null, path: null, headers: {}, body: null, query: {} };
        job.context.response = { statusCode: null, headers: {}, body: null, size: null };
        job.context.timings = { duration: null, responseTime: null };
      }
    }
    const sample: SampleInfo = stored
      ? {
          kind: 'stored',
          requestSid: stored.sid,
          description: `${String(stored.request.method ?? '?')} ${String(stored.request.path ?? '/')} → ${String(stored.response?.statusCode ?? '—')} (${stored.sid})`,
        }
      : {
          kind: 'synthetic',
          requestSid: null,
          description: timed
            ? `a synthetic ${type} hit (no request behind it)`
            : 'a synthetic request (the bucket has no stored request yet)',
        };
    return { job, sample };
  }

  /** Every template variable rendered on the sample, and the given configs rendered. */
  async preview(
    wf: Pick<Workflow, 'sid' | 'name' | 'accountSid' | 'bucketSid' | 'environmentSid' | 'trigger'>,
    requestSid: string | null | undefined,
    configs: unknown[],
  ): Promise<{ sample: SampleInfo; variables: { name: string; value: string }[]; rendered: unknown[] }> {
    const { job, sample } = await this.sampleJob(wf, requestSid, newSid('execution'));
    const vars = templateVars(job, { sid: wf.sid, name: wf.name });
    const variables = TEMPLATE_VARIABLE_NAMES.map((name) => ({
      name,
      value: renderDeep(`{{${name}}}`, vars),
    }));
    return { sample, variables, rendered: configs.map((c) => renderDeep(c, vars)) };
  }

  /**
   * Runs each action once (no retries) on a sample, through the runner's executors, template
   * renderer and outbound guard, with its timeout. Writes nothing to the execution log.
   */
  async test(
    wf: Workflow,
    actions: WorkflowAction[],
    requestSid: string | null | undefined,
  ): Promise<{ executionSid: string; sample: SampleInfo; results: TestActionResult[] }> {
    const executionSid = newSid('execution');
    const { job, sample } = await this.sampleJob(wf, requestSid, executionSid);
    job.trigger = { ...job.trigger, message: `[test] ${job.trigger.message}` };
    const workflow = { sid: wf.sid, name: wf.name };
    const vars: TemplateVars = templateVars(job, workflow);
    const results: TestActionResult[] = [];
    for (const action of parseActions(actions)) {
      const t0 = Date.now();
      const ctl = new AbortController();
      const timer = setTimeout(
        () => ctl.abort(new ActionError(`timed out after ${this.cfg.actions.timeoutMs} ms`, true)),
        this.cfg.actions.timeoutMs,
      );
      const base = { index: action.index, type: action.type, order: action.order };
      try {
        const ok = await executeAction(
          action,
          { job, workflow, vars, signal: ctl.signal },
          {
            guard: this.guard,
            mail: this.mail,
            dashboardUrl: dashboardBaseUrl(this.cfg),
          },
        );
        results.push({
          ...base,
          status: 'succeeded',
          statusCode: ok.statusCode ?? null,
          messageId: ok.messageId ?? null,
          error: null,
          retryable: null,
          durationMs: Date.now() - t0,
        });
      } catch (err) {
        const e =
          err instanceof ActionError
            ? err
            : new ActionError(`unexpected error: ${(err as Error)?.message ?? String(err)}`, false);
        results.push({
          ...base,
          status: 'failed',
          statusCode: e.statusCode ?? null,
          messageId: null,
          error: e.message,
          retryable: e.retryable,
          durationMs: Date.now() - t0,
        });
      } finally {
        clearTimeout(timer);
      }
    }
    return { executionSid, sample, results };
  }

  async executions(
    accountSid: string,
    workflowSid: string,
    q: ListQuery,
    f: ExecutionFilters,
    detail = false,
  ): Promise<ListResult<ExecutionView>> {
    const dead =
      f.deadLettered === undefined ? 'TRUE' : f.deadLettered ? DEAD_LETTER_SQL : `NOT ${DEAD_LETTER_SQL}`;
    const created = createdWithin(q, 'created_at', 8);
    const r = await this.pool.query<ExecRow>(
      `SELECT ${executionColumns()}, detail
         FROM workflow_executions
        WHERE account_sid = $1 AND workflow_sid = $2
          AND ($3::text IS NULL OR status = $3)
          AND ($4::text IS NULL OR trigger_type = $4)
          AND ($5::text IS NULL OR request_sid = $5)
          AND ${dead}${created.sql}
        ORDER BY created_at ${q.order === 'asc' ? 'ASC' : 'DESC'}, sid
        LIMIT $6 OFFSET $7`,
      [
        accountSid,
        workflowSid,
        f.status ?? null,
        f.triggerType ?? null,
        f.requestSid ?? null,
        q.limit + 1,
        offsetOf(q),
        ...created.values,
      ],
    );
    return pageOf(
      r.rows.map((row) => toView(row, detail)),
      q.limit,
    );
  }

  async execution(accountSid: string, workflowSid: string, sid: string): Promise<ExecutionView> {
    const r = await this.pool.query<ExecRow>(
      `SELECT ${executionColumns()}, detail
         FROM workflow_executions WHERE account_sid = $1 AND workflow_sid = $2 AND sid = $3`,
      [accountSid, workflowSid, sid],
    );
    if (!r.rows[0]) throw notFound('Execution');
    return toView(r.rows[0]);
  }

  /**
   * Re-runs a failed execution through the normal action path: the row goes back to `pending`
   * (attempts restart at 0, the other actions lose the failed run's error and status code; actions
   * that succeeded stay succeeded and are not sent again) and a
   * job with the same execution sid is produced to `workflow.actions`, rebuilt from the stored
   * request it ran for (or, for threshold/schedule executions, from its recorded trigger).
   */
  async retry(wf: Workflow, sid: string): Promise<ExecutionView> {
    if (!this.producer) throw unavailable('The action queue');
    const current = await this.execution(wf.accountSid, wf.sid, sid);
    if (current.status !== 'failed')
      throw new AppError(
        409,
        'CONFLICT',
        `Only a failed execution can be re-run; this one is ${current.status}`,
        {
          status: current.status,
        },
      );
    let job: ActionJob;
    try {
      ({ job } = await this.sampleJob(wf, current.requestSid, sid));
    } catch (err) {
      if (err instanceof AppError && err.status === 404 && current.requestSid)
        throw new AppError(409, 'CONFLICT', `The request ${current.requestSid} is no longer stored`, {
          requestSid: current.requestSid,
        });
      throw err;
    }
    if (current.trigger) job.trigger = { type: job.trigger.type, message: current.trigger.message };
    job.createdAt = current.createdAt;
    const claimed = await this.pool.query<{ detail: Partial<ExecutionDetail> | null }>(
      `UPDATE workflow_executions
          SET status = 'pending', attempts = 0, error = NULL, finished_at = NULL, updated_at = now(),
              detail = CASE WHEN jsonb_typeof(detail -> 'actions') = 'array' THEN jsonb_set(detail, '{actions}', (
                SELECT COALESCE(jsonb_agg(CASE WHEN a ->> 'status' = 'succeeded' THEN a
                  ELSE (a - 'retryable' - 'error' - 'statusCode') || '{"status":"pending","attempts":0}'::jsonb END), '[]'::jsonb)
                  FROM jsonb_array_elements(detail -> 'actions') a)) ELSE detail END
        WHERE account_sid = $1 AND workflow_sid = $2 AND sid = $3 AND status = 'failed'
        RETURNING detail`,
      [wf.accountSid, wf.sid, sid],
    );
    if (claimed.rowCount === 0)
      throw new AppError(409, 'CONFLICT', 'The execution changed meanwhile; reload and try again');
    try {
      await this.producer.send({
        topic: TOPICS.actions,
        messages: [{ key: wf.sid, value: JSON.stringify(job) }],
      });
    } catch {
      await this.pool.query(
        `UPDATE workflow_executions SET status = 'failed', error = $2, finished_at = now(), updated_at = now()
          WHERE sid = $1 AND status = 'pending'`,
        [sid, current.error ?? 're-run could not be queued'],
      );
      throw unavailable('The action queue');
    }
    return this.execution(wf.accountSid, wf.sid, sid);
  }
}
