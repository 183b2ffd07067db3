/**
 * Typed calls of the workflow pages (docs/workflows-api.md): workflows of a bucket and
 * environment, their execution log, "send a test", template preview and re-runs. Types come from
 * the API's schemas (types only: nothing of schemas/ reaches the bundle).
 */
import type { FromSchema } from 'json-schema-to-ts';
import type {
  ACTION_TYPES,
  THRESHOLD_METRICS,
  THRESHOLD_OPERATORS,
  TRIGGER_TYPES,
  workflowExecutionSchema,
  workflowPreviewSchema,
  workflowSchema,
  workflowTestResultSchema,
} from '../../../schemas/workflow.schema';
import type { ALERT_STATES } from '../../../schemas/alert.schema';
import { api } from './client';
import type { List } from './types';

export type Workflow = FromSchema<typeof workflowSchema>;
export type WorkflowExecution = FromSchema<typeof workflowExecutionSchema>;
/** An alert (GET …/alerts, schemas/alert.schema.ts): its trigger and executions as a workflow's. */
export interface Alert {
  workflowSid: string;
  name: string;
  bucketSid: string;
  environmentSid: string;
  triggerType: 'threshold' | 'error';
  trigger: Workflow['trigger'];
  isActive: boolean;
  state: (typeof ALERT_STATES)[number];
  since: string | null;
  lastFiredAt: string | null;
  lastEvaluatedAt: string | null;
  lastValue: number | null;
  executions: WorkflowExecution[];
}
export type WorkflowTestResult = FromSchema<typeof workflowTestResultSchema>;
export type WorkflowPreview = FromSchema<typeof workflowPreviewSchema>;
export type TriggerType = (typeof TRIGGER_TYPES)[number];
export type ActionType = (typeof ACTION_TYPES)[number];
export type ThresholdMetric = (typeof THRESHOLD_METRICS)[number];
export type ThresholdOperator = (typeof THRESHOLD_OPERATORS)[number];

/** The body of create (isActive optional) and update (PUT: every field). */
export interface WorkflowBody {
  name: string;
  description: string;
  trigger: {
    type: TriggerType;
    conditions: Record<string, unknown>[];
    schedule?: string;
    timezone?: string;
  };
  actions: { type: ActionType; config: Record<string, unknown>; order: number }[];
  isActive: boolean;
}

export interface ExecutionFilters {
  status?: string | null;
  triggerType?: string | null;
  deadLettered?: string | null;
  requestSid?: string | null;
  page?: number;
}

const acct = (accountSid: string) => `/v1/accounts/${encodeURIComponent(accountSid)}`;
const base = (accountSid: string, environmentSid: string, bucketSid: string) =>
  `${acct(accountSid)}/environments/${encodeURIComponent(environmentSid)}/buckets/${encodeURIComponent(bucketSid)}/workflows`;
const one = (accountSid: string, environmentSid: string, bucketSid: string, workflowSid: string) =>
  `${base(accountSid, environmentSid, bucketSid)}/${encodeURIComponent(workflowSid)}`;

export const alerts = {
  list: (accountSid: string, q: { bucketSid?: string | null; environmentSid?: string | null }) =>
    api.get<List<Alert>>(`${acct(accountSid)}/alerts`, {
      bucketSid: q.bucketSid ?? undefined,
      environmentSid: q.environmentSid ?? undefined,
    }),
};

export const workflows = {
  /** Every workflow of the account (all buckets and environments), for the list page. */
  listAccount: (accountSid: string, q: { bucketSid?: string | null; environmentSid?: string | null }) =>
    api.get<List<Workflow>>(`${acct(accountSid)}/workflows`, {
      limit: 100,
      sort: 'name',
      order: 'asc',
      bucketSid: q.bucketSid ?? undefined,
      environmentSid: q.environmentSid ?? undefined,
    }),
  get: (accountSid: string, environmentSid: string, bucketSid: string, workflowSid: string) =>
    api.get<Workflow>(one(accountSid, environmentSid, bucketSid, workflowSid)),
  create: (accountSid: string, environmentSid: string, bucketSid: string, body: WorkflowBody) =>
    api.post<Workflow>(base(accountSid, environmentSid, bucketSid), body),
  update: (
    accountSid: string,
    environmentSid: string,
    bucketSid: string,
    workflowSid: string,
    body: WorkflowBody,
  ) => api.put<Workflow>(one(accountSid, environmentSid, bucketSid, workflowSid), body),
  remove: (accountSid: string, environmentSid: string, bucketSid: string, workflowSid: string) =>
    api.del<{ sid: string; deleted: boolean }>(one(accountSid, environmentSid, bucketSid, workflowSid)),
  executions: (
    accountSid: string,
    environmentSid: string,
    bucketSid: string,
    workflowSid: string,
    filters: ExecutionFilters & { limit?: number },
  ) =>
    api.get<List<WorkflowExecution>>(
      `${one(accountSid, environmentSid, bucketSid, workflowSid)}/executions`,
      {
        detail: true,
        limit: filters.limit ?? 25,
        page: filters.page,
        status: filters.status ?? undefined,
        triggerType: filters.triggerType ?? undefined,
        deadLettered: filters.deadLettered ?? undefined,
        requestSid: filters.requestSid ?? undefined,
      },
    ),
  retry: (
    accountSid: string,
    environmentSid: string,
    bucketSid: string,
    workflowSid: string,
    executionSid: string,
  ) =>
    api.post<WorkflowExecution>(
      `${one(accountSid, environmentSid, bucketSid, workflowSid)}/executions/${encodeURIComponent(executionSid)}/retry`,
    ),
  test: (
    accountSid: string,
    environmentSid: string,
    bucketSid: string,
    workflowSid: string,
    body: { requestSid?: string | null; actions?: WorkflowBody['actions'] },
  ) => api.post<WorkflowTestResult>(`${one(accountSid, environmentSid, bucketSid, workflowSid)}/test`, body),
  preview: (
    accountSid: string,
    environmentSid: string,
    bucketSid: string,
    body: { triggerType?: TriggerType; requestSid?: string | null; configs?: Record<string, unknown>[] },
  ) => api.post<WorkflowPreview>(`${base(accountSid, environmentSid, bucketSid)}/preview`, body),
};
