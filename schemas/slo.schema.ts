/**
 * Service level objectives (docs/slos.md) and release impact (docs/releases.md). SLO figures are
 * computed from the per-minute aggregates when asked; only definitions are stored.
 */
import { listOf, nullableTimestamp, timestamp } from './common.schema.js';
import { HTTP_METHODS } from './rules.schema.js';

export const SLO_WINDOW_DAYS = [7, 28, 30] as const;
export const SLI_KINDS = ['availability', 'latency'] as const;

const sli = {
  type: 'object',
  required: ['kind'],
  discriminator: { propertyName: 'kind' },
  oneOf: [
    {
      type: 'object',
      required: ['kind'],
      additionalProperties: false,
      properties: { kind: { const: 'availability' } },
      description: 'good = answers other than 5xx',
    },
    {
      type: 'object',
      required: ['kind', 'thresholdMs'],
      additionalProperties: false,
      properties: {
        kind: { const: 'latency' },
        thresholdMs: { type: 'number', minimum: 0.001, maximum: 3_600_000 },
      },
      description: 'good = calls with a duration at or under thresholdMs',
    },
  ],
} as const;

const sloBody = {
  type: 'object',
  required: ['name', 'bucketSid', 'sli', 'objective', 'windowDays'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    bucketSid: { type: 'string', minLength: 1, maxLength: 64 },
    environmentSid: {
      type: ['string', 'null'],
      pattern: '^[A-Za-z0-9]{6}$',
      description: 'one environment; omitted or null = every environment of the bucket',
    },
    endpoint: {
      type: ['string', 'null'],
      minLength: 1,
      maxLength: 2048,
      description: 'an endpoint template as the metrics show it (e.g. `/users/{id}`); null = every endpoint',
    },
    method: { type: ['string', 'null'], enum: [...HTTP_METHODS, null], description: 'null = every method' },
    sli,
    objective: {
      type: 'number',
      minimum: 0.001,
      maximum: 99.999,
      description: 'percent of good events, e.g. 99.9 (0.001 to 99.999)',
    },
    windowDays: { type: 'integer', enum: SLO_WINDOW_DAYS },
  },
} as const;

export const sloCreateSchema = { $id: 'sloCreate', ...sloBody } as const;
export const sloUpdateSchema = { $id: 'sloUpdate', ...sloBody } as const;

export const sloSchema = {
  $id: 'slo',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'name',
    'bucketSid',
    'environmentSid',
    'endpoint',
    'method',
    'sli',
    'objective',
    'windowDays',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    name: { type: 'string' },
    bucketSid: { type: 'string' },
    environmentSid: { type: ['string', 'null'] },
    endpoint: { type: ['string', 'null'] },
    method: { type: ['string', 'null'] },
    sli: {
      type: 'object',
      required: ['kind'],
      properties: { kind: { type: 'string', enum: SLI_KINDS }, thresholdMs: { type: 'number' } },
    },
    objective: { type: 'number' },
    windowDays: { type: 'integer' },
    createdAt: timestamp,
    updatedAt: nullableTimestamp,
  },
} as const;

export const sloListSchema = { $id: 'sloList', ...listOf('slo') } as const;

const nullableNumber = { type: ['number', 'null'] } as const;
const counts = {
  type: 'object',
  required: ['total', 'good', 'bad'],
  properties: { total: { type: 'number' }, good: { type: 'number' }, bad: { type: 'number' } },
} as const;

export const sloStatusSchema = {
  $id: 'sloStatus',
  type: 'object',
  required: [
    'sid',
    'name',
    'sli',
    'objective',
    'windowDays',
    'window',
    'events',
    'errorBudget',
    'burnRates',
    'status',
    'daily',
  ],
  properties: {
    sid: { type: 'string' },
    name: { type: 'string' },
    sli: { ...nullableNumber, description: 'percent good over the window; null without traffic' },
    objective: { type: 'number' },
    windowDays: { type: 'integer' },
    window: {
      type: 'object',
      required: ['from', 'to'],
      properties: { from: timestamp, to: timestamp },
    },
    events: counts,
    errorBudget: {
      type: 'object',
      required: ['total', 'consumed', 'remaining', 'remainingPercent'],
      properties: {
        total: { type: 'number', description: 'bad events the objective allows for the traffic so far' },
        consumed: { type: 'number', description: 'bad events so far' },
        remaining: { type: 'number', description: 'total - consumed (negative once missed)' },
        remainingPercent: { type: 'number', description: 'remaining / total in percent' },
      },
    },
    burnRates: {
      type: 'object',
      required: ['5m', '30m', '1h', '6h', '3d'],
      properties: {
        '5m': nullableNumber,
        '30m': nullableNumber,
        '1h': nullableNumber,
        '6h': nullableNumber,
        '3d': nullableNumber,
      },
    },
    status: { type: 'string', enum: ['ok', 'warning', 'breaching'] },
    daily: {
      type: 'array',
      items: {
        type: 'object',
        required: ['day', 'total', 'good', 'bad', 'sli', 'budgetRemainingPercent'],
        properties: {
          day: { type: 'string', description: 'UTC date YYYY-MM-DD' },
          total: { type: 'number' },
          good: { type: 'number' },
          bad: { type: 'number' },
          sli: nullableNumber,
          budgetRemainingPercent: {
            type: 'number',
            description: 'the budget left at the end of this day, from the start of the window',
          },
        },
      },
    },
  },
} as const;

const periodFigures = {
  type: 'object',
  required: ['count', 'errorRate', 'p50', 'p95', 'p99'],
  properties: {
    count: { type: 'integer' },
    errorRate: { ...nullableNumber, description: 'percent of answers with status >= 400' },
    p50: nullableNumber,
    p95: nullableNumber,
    p99: nullableNumber,
  },
} as const;

const range = {
  type: 'object',
  required: ['from', 'to'],
  properties: { from: timestamp, to: timestamp },
} as const;

const impactChange = {
  type: 'object',
  required: ['p50', 'p95', 'p99', 'errorRate', 'latencyPValue', 'errorsPValue', 'reasons'],
  properties: {
    p50: { ...nullableNumber, description: 'after / before' },
    p95: { ...nullableNumber, description: 'after / before' },
    p99: { ...nullableNumber, description: 'after / before' },
    errorRate: { ...nullableNumber, description: 'after - before, percentage points' },
    latencyPValue: { ...nullableNumber, description: 'Mann-Whitney U, two-sided' },
    errorsPValue: { ...nullableNumber, description: 'two-proportion z-test, two-sided' },
    reasons: { type: 'array', items: { type: 'string' } },
  },
} as const;

export const releaseImpactSchema = {
  $id: 'releaseImpact',
  type: 'object',
  required: ['eventSid', 'status', 'window', 'summary', 'endpoints'],
  properties: {
    eventSid: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'ready'] },
    window: {
      type: 'object',
      required: ['before', 'after', 'settleMinutes', 'shortenedBy'],
      properties: {
        before: range,
        after: range,
        settleMinutes: { type: 'integer' },
        shortenedBy: {
          type: 'array',
          items: { type: 'string' },
          description: 'sids of the deployments that cut a window short',
        },
      },
    },
    summary: {
      type: 'object',
      required: ['regressed', 'improved', 'unchanged', 'insufficient'],
      properties: {
        regressed: { type: 'integer' },
        improved: { type: 'integer' },
        unchanged: { type: 'integer' },
        insufficient: { type: 'integer' },
      },
    },
    endpoints: {
      type: 'array',
      items: {
        type: 'object',
        required: ['endpoint', 'method', 'verdict', 'before', 'after', 'change'],
        properties: {
          endpoint: { type: 'string' },
          method: { type: 'string' },
          verdict: { type: 'string', enum: ['regressed', 'improved', 'unchanged', 'insufficient'] },
          before: periodFigures,
          after: periodFigures,
          change: impactChange,
          consumers: {
            type: 'array',
            description:
              'regressed endpoints with calls from consumers only: each consumer of the endpoint judged by ' +
              'the same rule on its own calls, in severity order, at most 10',
            items: {
              type: 'object',
              required: ['consumer', 'name', 'group', 'verdict', 'before', 'after', 'change'],
              properties: {
                consumer: { type: 'string', description: 'the consumer id' },
                name: { type: ['string', 'null'] },
                group: { type: ['string', 'null'] },
                verdict: { type: 'string', enum: ['regressed', 'improved', 'unchanged', 'insufficient'] },
                before: periodFigures,
                after: periodFigures,
                change: impactChange,
              },
            },
          },
          consumersHit: {
            type: 'integer',
            description: 'consumers of the endpoint whose own verdict is regressed',
          },
          consumersTotal: {
            type: 'integer',
            description: 'consumers with calls of the endpoint in the windows',
          },
        },
      },
    },
  },
} as const;

/** Ranges of the impact windows, for the query parameters and the per-bucket settings alike. */
export const IMPACT_WINDOW_LIMITS = {
  beforeMinutes: { type: 'integer', minimum: 5, maximum: 1440 },
  afterMinutes: { type: 'integer', minimum: 5, maximum: 1440 },
  settleMinutes: { type: 'integer', minimum: 0, maximum: 120 },
} as const;

export const releaseSettingsUpdateSchema = {
  $id: 'releaseSettingsUpdate',
  type: 'object',
  required: ['beforeMinutes', 'afterMinutes', 'settleMinutes'],
  additionalProperties: false,
  properties: {
    beforeMinutes: {
      ...IMPACT_WINDOW_LIMITS.beforeMinutes,
      description: 'minutes before the marker (5 to 1440)',
    },
    afterMinutes: {
      ...IMPACT_WINDOW_LIMITS.afterMinutes,
      description: 'minutes after the settling period (5 to 1440)',
    },
    settleMinutes: {
      ...IMPACT_WINDOW_LIMITS.settleMinutes,
      description: 'minutes after the marker left out (0 to 120)',
    },
  },
} as const;

export const releaseSettingsSchema = {
  $id: 'releaseSettings',
  type: 'object',
  required: ['bucketSid', 'beforeMinutes', 'afterMinutes', 'settleMinutes', 'updatedAt'],
  properties: {
    bucketSid: { type: 'string' },
    beforeMinutes: { type: 'integer' },
    afterMinutes: { type: 'integer' },
    settleMinutes: { type: 'integer' },
    updatedAt: { ...nullableTimestamp, description: 'null while the bucket uses the defaults (30, 30, 2)' },
  },
} as const;

export const SLO_SCHEMAS = [
  sloCreateSchema,
  sloUpdateSchema,
  sloSchema,
  sloListSchema,
  sloStatusSchema,
  releaseImpactSchema,
  releaseSettingsSchema,
  releaseSettingsUpdateSchema,
] as const;
