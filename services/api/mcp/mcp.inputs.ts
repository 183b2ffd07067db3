/**
 * Input schemas of the read-only MCP tools, assembled from the REST API's own schema pieces
 * (schemas/*.ts and the query strings the /v1 routes declare), so a value the REST API refuses is
 * refused here with the same rule. Tool arguments are JSON: nothing is type-coerced.
 * The environment is never an input: it is the token's.
 */
import { listQuery } from '../../../schemas/common.schema.js';
import {
  METRIC_INTERVALS,
  errorsQuery,
  metricsScopeQuery,
  performanceQuery,
} from '../../../schemas/metrics.schema.js';
import { ingestRecordSchema } from '../../../schemas/request-record.schema.js';
import { EXECUTION_STATUSES } from '../../../schemas/workflow.schema.js';
import { requestListQuery } from '../routes/requests.route.js';

const m = metricsScopeQuery.properties;

const bucketSid = {
  ...m.bucketSid,
  description: 'One bucket (see list_buckets); default: every bucket this token covers',
} as const;

/** The metrics range and narrowing filters of /v1/accounts/{a}/metrics/*. */
const rangeProperties = {
  startDate: {
    ...m.startDate,
    description: 'ISO 8601 date-time (or a date = that UTC day); default endDate minus 24 hours',
  },
  endDate: { ...m.endDate, description: 'ISO 8601 date-time (or a date = the whole UTC day); default now' },
  bucketSid,
  endpoint: {
    ...m.endpoint,
    description: 'One endpoint template as stored, e.g. /users/{id} (see get_endpoint_performance)',
  },
  method: { ...m.method, description: 'One HTTP method, e.g. POST' },
  consumer: { ...m.consumer, description: 'One consumer id (see list_consumers): only its calls' },
} as const;

const object = <P extends Record<string, unknown>>(properties: P, required: string[] = []) =>
  ({
    type: 'object',
    additionalProperties: false,
    properties,
    ...(required.length ? { required } : {}),
  }) as const;

export const listBucketsInput = object({});

export const metricsSummaryInput = object(rangeProperties);

export const PERFORMANCE_SORTS = [
  'requestCount',
  'errorRate',
  'averageResponseTime',
  'p50ResponseTime',
  'p95ResponseTime',
  'p99ResponseTime',
] as const;

export const endpointPerformanceInput = object({
  ...rangeProperties,
  groupBy: {
    ...performanceQuery.properties.groupBy,
    enum: ['endpoint', 'method', 'status'],
    description: 'endpoint (template), method or status code',
  },
  sortBy: {
    type: 'string',
    enum: PERFORMANCE_SORTS,
    default: 'requestCount',
    description: 'Column sorted on, largest first',
  },
  limit: { ...performanceQuery.properties.limit, maximum: 100, default: 20, description: 'Top N groups' },
});

export const errorsInput = object({
  ...rangeProperties,
  statusCode: { ...errorsQuery.properties.statusCode, description: 'Only errors with this status code' },
  limit: { ...errorsQuery.properties.limit, maximum: 100, default: 20, description: 'Top N endpoints' },
});

export const timeseriesInput = object({
  ...rangeProperties,
  interval: {
    type: 'string',
    enum: METRIC_INTERVALS,
    description: 'Point width; default: the finest giving at most 200 points',
  },
});

const r = requestListQuery.properties;

export const searchRequestsInput = object({
  q: {
    ...r.q,
    description:
      'Search language of the request stream (docs/search.md), e.g. `status:5xx endpoint:/checkout* ' +
      'duration:>500ms method:POST -path:/health`; terms are AND-ed',
  },
  startDate: { ...r.startDate, description: 'ISO 8601 date-time: captured at or after' },
  endDate: {
    ...r.endDate,
    description: 'ISO 8601 date-time: captured at or before',
  },
  bucketSid,
  consumer: rangeProperties.consumer,
  cursor: {
    ...r.cursor,
    description:
      'nextCursor of the previous answer: the hits after it (older), none skipped or repeated; keep q, startDate, endDate and bucketSid',
  },
  limit: { ...r.limit, maximum: 50, default: 20, description: 'Hits returned, newest first (≤ 50)' },
});

export const DEFAULT_BODY_CHARS = 2000;

export const getRequestInput = object(
  {
    requestSid: { ...ingestRecordSchema.properties.sid, description: 'The request sid (req_…)' },
    bucketSid: {
      ...bucketSid,
      description: 'The bucket holding it; default: every bucket this token covers',
    },
    maxBodyChars: {
      type: 'integer',
      minimum: 0,
      maximum: 10_000,
      default: DEFAULT_BODY_CHARS,
      description: 'Bodies are cut to this many characters (their full length is stated)',
    },
  },
  ['requestSid'],
);

export const COMPARE_SORTS = ['p95ResponseTime', 'errorRate', 'requestCount'] as const;

export const comparePeriodsInput = object({
  eventSid: {
    type: 'string',
    minLength: 1,
    maxLength: 64,
    description: 'An event marker (list_events): compare windowMinutes before it with windowMinutes after it',
  },
  windowMinutes: {
    type: 'integer',
    minimum: 1,
    maximum: 10_080,
    default: 60,
    description: 'Length of each period around eventSid, in minutes',
  },
  beforeStartDate: { ...m.startDate, description: 'Start of the first period (without eventSid)' },
  beforeEndDate: { ...m.endDate, description: 'End of the first period' },
  afterStartDate: { ...m.startDate, description: 'Start of the second period' },
  afterEndDate: { ...m.endDate, description: 'End of the second period' },
  bucketSid,
  method: rangeProperties.method,
  consumer: rangeProperties.consumer,
  sortBy: {
    type: 'string',
    enum: COMPARE_SORTS,
    default: 'p95ResponseTime',
    description: 'Which change ranks the endpoints: largest absolute change first',
  },
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Top N endpoints' },
});

const wl = listQuery(['createdAt'], 'createdAt').properties;

export const listWorkflowsInput = object({
  bucketSid,
  isActive: { type: 'boolean', description: 'Only active (true) or inactive (false) workflows' },
  page: wl.page,
  limit: { ...wl.limit, default: 25 },
});

export const listExecutionsInput = object({
  workflowSid: { type: 'string', maxLength: 64, description: 'Only this workflow (list_workflows)' },
  bucketSid,
  status: { type: 'string', enum: EXECUTION_STATUSES, description: 'Only executions in this state' },
  startDate: { ...r.startDate, description: 'ISO 8601 date-time: executions created at or after' },
  page: wl.page,
  limit: { ...wl.limit, maximum: 50, default: 20 },
});

export const CONSUMER_TOOL_SORTS = ['requests', 'errorRate', 'p95', 'lastSeen', 'name'] as const;

/** list_consumers: the consumers list of /v1/accounts/{a}/consumers, in the token's environment. */
export const listConsumersInput = object({
  startDate: rangeProperties.startDate,
  endDate: rangeProperties.endDate,
  bucketSid,
  sort: {
    type: 'string',
    enum: CONSUMER_TOOL_SORTS,
    default: 'requests',
    description: 'requests, errorRate, p95, lastSeen or name; descending unless order is asc',
  },
  order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
  q: { type: 'string', maxLength: 256, description: 'Substring of the consumer id, name or group' },
  limit: { type: 'integer', minimum: 1, maximum: 50, default: 20, description: 'Consumers returned (≤ 50)' },
});

export const getConsumerInput = object(
  {
    consumerId: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      description: 'The consumer id (list_consumers)',
    },
    startDate: rangeProperties.startDate,
    endDate: rangeProperties.endDate,
    bucketSid,
  },
  ['consumerId'],
);
