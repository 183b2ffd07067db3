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

const acct = (a: string) => `/v1/accounts/${encodeURIComponent(a)}`;
const base = (a: string, e: string, b: string) =>
  `${acct(a)}/environments/${encodeURIComponent(e)}/buckets/${encodeURIComponent(b)}/workflows`;
const one = (a: string, e: string, b: string, w: string) => `${base(a, e, b)}/${encodeURIComponent(w)}`;

export const alerts = {
  list: (a: string, q: { bucketSid?: string | null; environmentSid?: string | null }) =>
    api.get<List<Alert>>(`${acct(a)}/alerts`, {
      bucketSid: q.bucketSid ?? undefined,
      environmentSid: q.environmentSid ?? undefined,
    }),
};

export const workflows = {
  /** Every workflow of the account (all buckets and environments), for the list page. */
  listAccount: (a: string, q: { bucketSid?: string | null; environmentSid?: string | null }) =>
    api.get<List<Workflow>>(`${acct(a)}/workflows`, {
      limit: 100,
      sort: 'name',
      order: 'asc',
      bucketSid: q.bucketSid ?? undefined,
      environmentSid: q.environmentSid ?? undefined,
    }),
  get: (a: string, e: string, b: string, w: string) => api.get<Workflow>(one(a, e, b, w)),
  create: (a: string, e: string, b: string, body: WorkflowBody) => api.post<Workflow>(base(a, e, b), body),
  update: (a: string, e: string, b: string, w: string, body: WorkflowBody) =>
    api.put<Workflow>(one(a, e, b, w), body),
  remove: (a: string, e: string, b: string, w: string) =>
    api.del<{ sid: string; deleted: boolean }>(one(a, e, b, w)),
  executions: (a: string, e: string, b: string, w: string, f: ExecutionFilters & { limit?: number }) =>
    api.get<List<WorkflowExecution>>(`${one(a, e, b, w)}/executions`, {
      detail: true,
      limit: f.limit ?? 25,
      page: f.page,
      status: f.status ?? undefined,
      triggerType: f.triggerType ?? undefined,
      deadLettered: f.deadLettered ?? undefined,
      requestSid: f.requestSid ?? undefined,
    }),
  retry: (a: string, e: string, b: string, w: string, x: string) =>
    api.post<WorkflowExecution>(`${one(a, e, b, w)}/executions/${encodeURIComponent(x)}/retry`),
  test: (
    a: string,
    e: string,
    b: string,
    w: string,
    body: { requestSid?: string | null; actions?: WorkflowBody['actions'] },
  ) => api.post<WorkflowTestResult>(`${one(a, e, b, w)}/test`, body),
  preview: (
    a: string,
    e: string,
    b: string,
    body: { triggerType?: TriggerType; requestSid?: string | null; configs?: Record<string, unknown>[] },
  ) => api.post<WorkflowPreview>(`${base(a, e, b)}/preview`, body),
};
