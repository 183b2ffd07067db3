/**
 * Metrics (docs/metrics.md): query strings and responses of the plain answers and of the
 * comparison summary and period answers (documented extra paths under /metrics/shapeA). See docs/metrics.md.
 */
import type { FromSchema } from 'json-schema-to-ts';
import type { Closed } from './common.schema.js';

export const METRIC_INTERVALS = ['minute', 'hour', 'day', 'week', 'month'] as const;
export const PERFORMANCE_GROUPS = [
  'endpoint',
  'method',
  'status',
  'environment',
  'route',
  'consumer',
  'group',
] as const;
export const AVERAGE_UNITS = ['rpm', 'rps'] as const;

/** ISO 8601: a date-time with an offset (`Z` or `±hh:mm`) or a bare date (a whole UTC day). */
const isoDate = {
  type: 'string',
  maxLength: 40,
  anyOf: [{ format: 'date-time' }, { format: 'date' }],
} as const;

const scopeProperties = {
  bucketSid: { type: 'string', minLength: 1, maxLength: 64 },
  environmentSid: { type: 'string', pattern: '^[A-Za-z0-9]{6}$' },
  /** one endpoint template as stored (e.g. `/users/{id}`) and/or one HTTP method */
  endpoint: { type: 'string', minLength: 1, maxLength: 2048 },
  method: { type: 'string', pattern: '^[A-Za-z-]{1,32}$' },
  /** one consumer id, or the consumers of one group (docs/consumers.md) */
  consumer: { type: 'string', minLength: 1, maxLength: 256 },
  group: { type: 'string', minLength: 1, maxLength: 256 },
  startDate: isoDate,
  endDate: isoDate,
  // Aliases of the list endpoints' spelling (docs/search.md).
  start_date: isoDate,
  end_date: isoDate,
} as const;

const limit = { type: 'integer', minimum: 1, maximum: 1000, default: 100 } as const;

export const metricsScopeQuery = { type: 'object', properties: scopeProperties } as const;

export const throughputQuery = {
  type: 'object',
  properties: {
    ...scopeProperties,
    interval: { type: 'string', enum: METRIC_INTERVALS, default: 'hour' },
  },
} as const;

export const performanceQuery = {
  type: 'object',
  properties: {
    ...scopeProperties,
    groupBy: { type: 'string', enum: PERFORMANCE_GROUPS, default: 'endpoint' },
    limit,
    /** adds each group's requests per interval of this length (`throughput`) */
    interval: { type: 'string', enum: METRIC_INTERVALS },
    /** adds each group's duration histogram (`histogram`) */
    histogram: { type: 'boolean', default: false },
  },
} as const;

export const errorsQuery = {
  type: 'object',
  properties: {
    ...scopeProperties,
    statusCode: { type: 'integer', minimum: 100, maximum: 599 },
    limit,
  },
} as const;

export const throughputPeriodsQuery = {
  type: 'object',
  properties: {
    ...throughputQuery.properties,
    averageUnits: { type: 'string', enum: AVERAGE_UNITS, default: 'rpm' },
  },
} as const;

export const responseTimePeriodsQuery = throughputQuery;

/** The scope and range every metrics query takes. */
export type MetricsScopeQuery = Closed<FromSchema<typeof metricsScopeQuery>>;

const num = { type: 'number' } as const;
const int = { type: 'integer' } as const;
const nullableNum = { type: ['number', 'null'] } as const;
const ts = { type: 'string', format: 'date-time' } as const;
const counts = { type: 'object', additionalProperties: int } as const;

/** Event markers (docs/events-mcp.md) overlapping the range, beside the series (docs/events-mcp.md). */
export const metricsEventSchema = {
  $id: 'metricsEventMarker',
  type: 'object',
  required: ['sid', 'type', 'name', 'startedAt', 'endedAt', 'bucketSids', 'environmentSids'],
  properties: {
    sid: { type: 'string' },
    type: { type: 'string' },
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    source: { type: ['string', 'null'] },
    metadata: { type: ['object', 'null'], additionalProperties: true },
    bucketSids: { type: 'array', items: { type: 'string' } },
    environmentSids: { type: 'array', items: { type: 'string' } },
    startedAt: ts,
    endedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

const events = { type: 'array', items: { $ref: 'metricsEventMarker#' } } as const;
/** The effective range answered (minute resolution, both ends inclusive). */
const rangeProps = { startDate: ts, endDate: ts } as const;

export const metricsSummarySchema = {
  $id: 'metricsSummary',
  type: 'object',
  required: [
    'totalRequests',
    'totalErrors',
    'averageResponseTime',
    'totalDataTransferred',
    'requestsByMethod',
    'requestsByStatus',
    'topEndpoints',
  ],
  properties: {
    ...rangeProps,
    totalRequests: int,
    totalErrors: int,
    totalBlocked: int,
    errorRate: num,
    averageResponseTime: num,
    totalDataTransferred: int,
    requestsByMethod: counts,
    requestsByStatus: counts,
    topEndpoints: {
      type: 'array',
      items: {
        type: 'object',
        required: ['path', 'count', 'averageResponseTime'],
        properties: { path: { type: 'string' }, count: int, averageResponseTime: num },
      },
    },
  },
} as const;

export const metricsThroughputSchema = {
  $id: 'metricsThroughput',
  type: 'object',
  required: ['interval', 'data'],
  properties: {
    ...rangeProps,
    interval: { type: 'string' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['timestamp', 'requestCount', 'errorCount', 'averageResponseTime'],
        properties: { timestamp: ts, requestCount: int, errorCount: int, averageResponseTime: num },
      },
    },
    events,
  },
} as const;

export const metricsPerformanceSchema = {
  $id: 'metricsPerformance',
  type: 'object',
  required: ['groupBy', 'metrics'],
  properties: {
    ...rangeProps,
    groupBy: { type: 'string' },
    interval: { type: 'string' },
    metrics: {
      type: 'array',
      items: {
        type: 'object',
        required: [
          'group',
          'requestCount',
          'errorRate',
          'averageResponseTime',
          'p50ResponseTime',
          'p95ResponseTime',
          'p99ResponseTime',
          'bytes',
          'averageBytes',
        ],
        properties: {
          group: { type: 'string' },
          /** groupBy=route: the group's HTTP method and endpoint template */
          method: { type: 'string' },
          endpoint: { type: 'string' },
          requestCount: int,
          errorRate: num,
          averageResponseTime: num,
          p50ResponseTime: num,
          p95ResponseTime: num,
          p99ResponseTime: num,
          /** request plus response sizes summed, and per request (rounded) */
          bytes: int,
          averageBytes: int,
          /** with `interval`: requests per interval from the range's start */
          throughput: { type: 'array', items: int },
          /** with `histogram=true`: durations per bin of [from, to) ms */
          histogram: {
            type: 'array',
            items: {
              type: 'object',
              required: ['from', 'to', 'count'],
              properties: { from: num, to: num, count: int },
            },
          },
        },
      },
    },
  },
} as const;

export const metricsErrorsSchema = {
  $id: 'metricsErrors',
  type: 'object',
  required: ['totalErrors', 'errorRate', 'errorsByStatus', 'errorsByEndpoint'],
  properties: {
    ...rangeProps,
    totalErrors: int,
    errorRate: num,
    errorsByStatus: counts,
    errorsByEndpoint: {
      type: 'array',
      items: {
        type: 'object',
        required: ['endpoint', 'errorCount', 'errorRate', 'mostCommonErrors'],
        properties: {
          endpoint: { type: 'string' },
          errorCount: int,
          errorRate: num,
          mostCommonErrors: { type: 'array', items: int },
        },
      },
    },
  },
} as const;

/* ---- comparison summary and periods (/metrics/shapeA) ---- */

const amount = (units: readonly string[]) =>
  ({
    type: 'object',
    required: ['amount', 'units'],
    properties: { amount: nullableNum, units: { type: 'string', enum: units } },
  }) as const;

const comparison = {
  type: 'object',
  required: ['current', 'previous', 'change'],
  properties: {
    current: amount(['requests', 'milliseconds']),
    previous: amount(['requests', 'milliseconds']),
    change: amount(['percent', 'milliseconds']),
  },
} as const;

export const comparisonSummarySchema = {
  $id: 'metricsShapeASummary',
  type: 'object',
  required: ['requests', 'responseTime', 'errors', 'blocked'],
  properties: {
    ...rangeProps,
    previousStartDate: ts,
    previousEndDate: ts,
    requests: comparison,
    responseTime: comparison,
    errors: comparison,
    blocked: comparison,
  },
} as const;

const countAverage = {
  type: 'object',
  required: ['count', 'average'],
  properties: { count: int, average: num },
} as const;

const throughputPeriod = {
  type: 'object',
  required: ['startTime', 'endTime', 'averageUnits', 'total', 'httpStatus'],
  properties: {
    startTime: ts,
    endTime: ts,
    averageUnits: { type: 'string', enum: AVERAGE_UNITS },
    total: countAverage,
    httpStatus: {
      type: 'object',
      required: ['200', '300', '400', '500'],
      properties: { '200': countAverage, '300': countAverage, '400': countAverage, '500': countAverage },
    },
  },
} as const;

export const throughputPeriodsSchema = {
  $id: 'metricsShapeAThroughput',
  type: 'object',
  required: ['summary', 'periods'],
  properties: {
    interval: { type: 'string' },
    summary: throughputPeriod,
    periods: { type: 'array', items: throughputPeriod },
    events,
  },
} as const;

const percentileValue = {
  type: 'object',
  required: ['value'],
  properties: { value: nullableNum, maximum: nullableNum, minimum: nullableNum, median: nullableNum },
} as const;

const responseTimePeriod = {
  type: 'object',
  required: ['startTime', 'endTime', 'requests', 'maximum', 'minimum', 'average'],
  properties: {
    startTime: ts,
    endTime: ts,
    requests: int,
    maximum: nullableNum,
    minimum: nullableNum,
    average: nullableNum,
    percentiles: {
      type: 'object',
      properties: { '50': percentileValue, '95': percentileValue, '99': percentileValue },
    },
  },
} as const;

export const responseTimePeriodsSchema = {
  $id: 'metricsShapeAResponseTime',
  type: 'object',
  required: ['summary', 'periods'],
  properties: {
    interval: { type: 'string' },
    summary: responseTimePeriod,
    periods: { type: 'array', items: responseTimePeriod },
    events,
  },
} as const;

export const METRICS_SCHEMAS = [
  metricsEventSchema,
  metricsSummarySchema,
  metricsThroughputSchema,
  metricsPerformanceSchema,
  metricsErrorsSchema,
  comparisonSummarySchema,
  throughputPeriodsSchema,
  responseTimePeriodsSchema,
] as const;
