/**
 * Workflows (docs/workflows.md) and their execution log. Trigger and action shapes are validated
 * strictly: `oneOf` by `type` with an OpenAPI `discriminator`, so a failing body reports only the
 * errors of the branch its `type` names (the workflow routes compile with ajv's discriminator
 * option). Cron strings are checked with node-cron in the route, beyond what a schema can say.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { listOf, timestamp, type Closed } from './common.schema.js';
import { pathPattern, ruleMethod } from './rules.schema.js';

export const TRIGGER_TYPES = ['request', 'error', 'threshold', 'schedule', 'slo_burn', 'regression'] as const;
export const ACTION_TYPES = [
  'webhook',
  'email',
  'chat',
  'automation',
  'slack',
  'teams',
  'pagerduty',
  'opsgenie',
] as const;
/**
 * The native alert channels that know a resolved alert: a threshold workflow that recovers sends
 * them a `resolved` job (docs/workflows.md "Native alert channels"); the generic types get none.
 */
export const RESOLVING_ACTION_TYPES = ['slack', 'teams', 'pagerduty', 'opsgenie'] as const;
export const THRESHOLD_METRICS = ['error_rate', 'response_time', 'avg_response_time'] as const;
export const THRESHOLD_OPERATORS = [
  'greater_than',
  'less_than',
  'greater_than_or_equal',
  'less_than_or_equal',
  'equals',
] as const;
export const EXECUTION_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'skipped'] as const;

const MAX_CONDITIONS = 20;
export const MAX_ACTIONS = 20;

// ---------------------------------------------------------------- trigger

/** A consumer id or group (docs/consumers.md) a request/error condition requires. */
const consumerConditions = {
  consumer: { type: 'string', minLength: 1, maxLength: 256, description: "the call's consumer id" },
  group: {
    type: 'string',
    minLength: 1,
    maxLength: 256,
    description: "the group the call's consumer carried",
  },
} as const;

const requestCondition = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...consumerConditions,
    path: pathPattern,
    method: ruleMethod,
    statusCode: {
      oneOf: [
        { type: 'integer', minimum: 100, maximum: 599 },
        { type: 'string', pattern: '^[1-5]([xX]{2}|\\*\\*)$' },
      ],
      description: 'a status code, or a class such as `5xx` / `4**`',
    },
  },
} as const;

const errorCondition = {
  type: 'object',
  additionalProperties: false,
  properties: {
    statusCode: {
      oneOf: [
        { type: 'integer', minimum: 400, maximum: 599 },
        { type: 'string', pattern: '^[45]([xX]{2}|\\*\\*)$' },
      ],
      description: 'an error status (400-599), or a class `4xx` / `5xx` (also `5**`)',
    },
    path: pathPattern,
    ...consumerConditions,
  },
} as const;

const thresholdCondition = {
  type: 'object',
  required: ['metric', 'operator', 'value', 'timeWindow'],
  additionalProperties: false,
  properties: {
    metric: { type: 'string', enum: THRESHOLD_METRICS },
    operator: { type: 'string', enum: THRESHOLD_OPERATORS },
    value: { type: 'number' },
    timeWindow: {
      type: 'string',
      maxLength: 10,
      pattern: '^[1-9][0-9]*[smhd]$',
      description: 'integer and unit: s, m, h or d (for example `5m`); at most 30 days',
    },
  },
} as const;

const noSchedule = { type: 'null', description: 'only for schedule triggers' } as const;

/** One burn-rate alert of a `slo_burn` trigger (docs/slos.md "Burn-rate alerts"). */
const burnCondition = {
  type: 'object',
  required: ['burnRate', 'longWindow', 'shortWindow'],
  additionalProperties: false,
  properties: {
    severity: { type: 'string', enum: ['page', 'ticket'], default: 'page' },
    burnRate: { type: 'number', minimum: 0.001, maximum: 100_000 },
    longWindow: { type: 'string', pattern: '^[1-9][0-9]{0,5}[mhd]$', maxLength: 10 },
    shortWindow: { type: 'string', pattern: '^[1-9][0-9]{0,5}[mhd]$', maxLength: 10 },
  },
} as const;

export const workflowTriggerSchema = {
  $id: 'workflowTrigger',
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: TRIGGER_TYPES } },
  discriminator: { propertyName: 'type' },
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { const: 'request' },
        conditions: { type: 'array', maxItems: MAX_CONDITIONS, items: requestCondition },
        schedule: noSchedule,
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { const: 'error' },
        conditions: { type: 'array', maxItems: MAX_CONDITIONS, items: errorCondition },
        schedule: noSchedule,
      },
    },
    {
      type: 'object',
      required: ['conditions'],
      additionalProperties: false,
      properties: {
        type: { const: 'threshold' },
        conditions: { type: 'array', minItems: 1, maxItems: MAX_CONDITIONS, items: thresholdCondition },
        perConsumer: {
          type: 'boolean',
          description:
            'evaluate the conditions per API consumer (docs/consumers.md): fires once per consumer per breach',
        },
        schedule: noSchedule,
      },
    },
    {
      type: 'object',
      required: ['schedule'],
      additionalProperties: false,
      properties: {
        type: { const: 'schedule' },
        conditions: { type: 'array', maxItems: 0 },
        schedule: {
          type: 'string',
          minLength: 1,
          maxLength: 200,
          description: 'cron expression (5 fields, or 6 with seconds first)',
        },
        timezone: {
          type: 'string',
          minLength: 1,
          maxLength: 64,
          description: 'IANA time zone the cron expression is read in; default UTC',
        },
      },
    },
    {
      type: 'object',
      required: ['sloSid'],
      additionalProperties: false,
      properties: {
        type: { const: 'slo_burn' },
        sloSid: { type: 'string', minLength: 1, maxLength: 64, description: 'an SLO of the account' },
        conditions: {
          type: 'array',
          maxItems: MAX_CONDITIONS,
          items: burnCondition,
          description: 'the burn-rate alerts; omitted or empty = the default table (docs/slos.md)',
        },
        schedule: noSchedule,
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { const: 'regression' },
        conditions: { type: 'array', maxItems: 0 },
        schedule: noSchedule,
      },
    },
  ],
} as const;

// ---------------------------------------------------------------- actions

const httpUrl = {
  type: 'string',
  format: 'uri',
  maxLength: 2048,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#]+',
  description: 'http or https URL',
} as const;
const text = (max: number) => ({ type: 'string', maxLength: max }) as const;

const webhookConfig = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: httpUrl,
    method: {
      type: 'string',
      enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      description: 'default POST; case-insensitive',
    },
    headers: { type: 'object', maxProperties: 50, additionalProperties: text(8192) },
    body: { type: 'object' },
  },
} as const;

const emailConfig = {
  type: 'object',
  required: ['to'],
  additionalProperties: false,
  properties: {
    to: {
      type: 'array',
      minItems: 1,
      maxItems: 50,
      uniqueItems: true,
      items: { type: 'string', format: 'email', maxLength: 254 },
    },
    subject: text(998),
    body: text(100_000),
  },
} as const;

const chatConfig = {
  type: 'object',
  required: ['webhook_url'],
  additionalProperties: false,
  properties: {
    webhook_url: httpUrl,
    channel: text(200),
    message: text(40_000),
    username: text(200),
  },
} as const;

const automationConfig = {
  type: 'object',
  required: ['flow_id', 'webhook_url'],
  additionalProperties: false,
  properties: {
    flow_id: { type: ['string', 'integer'], minLength: 1, maxLength: 200 },
    webhook_url: httpUrl,
    data: { type: 'object' },
  },
} as const;

const slackConfig = {
  type: 'object',
  required: ['webhook_url'],
  additionalProperties: false,
  properties: {
    webhook_url: {
      ...httpUrl,
      description: 'Slack incoming webhook URL (https://hooks.slack.com/services/…)',
    },
    message: { ...text(3000), description: 'the summary line; default `trigger.message`' },
  },
} as const;

const teamsConfig = {
  type: 'object',
  required: ['webhook_url'],
  additionalProperties: false,
  properties: {
    webhook_url: {
      ...httpUrl,
      description: 'Teams workflow ("Post to a channel when a webhook request is received") URL',
    },
    message: { ...text(3000), description: 'the summary line; default `trigger.message`' },
  },
} as const;

const pagerdutyConfig = {
  type: 'object',
  required: ['routing_key'],
  additionalProperties: false,
  properties: {
    routing_key: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: 'integration key of an Events API v2 integration (sealed at rest)',
    },
    severity: {
      type: 'string',
      enum: ['critical', 'error', 'warning', 'info'],
      description: 'default `error`',
    },
    url: { ...httpUrl, description: 'default https://events.pagerduty.com/v2/enqueue' },
  },
} as const;

const opsgenieConfig = {
  type: 'object',
  required: ['api_key'],
  additionalProperties: false,
  properties: {
    api_key: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: 'API key of an Opsgenie API integration (sealed at rest)',
    },
    priority: { type: 'string', enum: ['P1', 'P2', 'P3', 'P4', 'P5'], description: 'default `P3`' },
    url: {
      ...httpUrl,
      description: 'API base URL; default https://api.opsgenie.com (EU: https://api.eu.opsgenie.com)',
    },
  },
} as const;

export const workflowActionSchema = {
  $id: 'workflowAction',
  type: 'object',
  required: ['type', 'config'],
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: ACTION_TYPES },
    config: { type: 'object' },
    order: {
      type: 'number',
      default: 0,
      description: 'actions run in ascending order; ties keep array order',
    },
  },
  discriminator: { propertyName: 'type' },
  oneOf: [
    { type: 'object', properties: { type: { const: 'webhook' }, config: webhookConfig } },
    { type: 'object', properties: { type: { const: 'email' }, config: emailConfig } },
    { type: 'object', properties: { type: { const: 'chat' }, config: chatConfig } },
    { type: 'object', properties: { type: { const: 'automation' }, config: automationConfig } },
    { type: 'object', properties: { type: { const: 'slack' }, config: slackConfig } },
    { type: 'object', properties: { type: { const: 'teams' }, config: teamsConfig } },
    { type: 'object', properties: { type: { const: 'pagerduty' }, config: pagerdutyConfig } },
    { type: 'object', properties: { type: { const: 'opsgenie' }, config: opsgenieConfig } },
  ],
} as const;

// ---------------------------------------------------------------- workflow

const workflowName = { type: 'string', minLength: 1, maxLength: 200 } as const;
const workflowDescription = {
  type: ['string', 'null'],
  maxLength: 2000,
  description: 'null or omitted is stored as the empty string',
} as const;
const actions = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_ACTIONS,
  items: { $ref: 'workflowAction#' },
} as const;

export const workflowCreateSchema = {
  $id: 'workflowCreate',
  type: 'object',
  required: ['name', 'trigger', 'actions'],
  additionalProperties: false,
  properties: {
    name: workflowName,
    description: workflowDescription,
    trigger: { $ref: 'workflowTrigger#' },
    actions,
    isActive: { type: 'boolean', default: true },
  },
} as const;

export const workflowUpdateSchema = {
  $id: 'workflowUpdate',
  type: 'object',
  required: ['name', 'trigger', 'actions', 'isActive'],
  additionalProperties: false,
  properties: {
    name: workflowName,
    description: workflowDescription,
    trigger: { $ref: 'workflowTrigger#' },
    actions,
    isActive: { type: 'boolean' },
  },
} as const;

/** Response shape: stored triggers/actions were validated on write, so they are described loosely. */
export const workflowSchema = {
  $id: 'workflow',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'environmentSid',
    'bucketSid',
    'name',
    'description',
    'trigger',
    'actions',
    'isActive',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    environmentSid: { type: 'string' },
    bucketSid: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    trigger: {
      type: 'object',
      required: ['type', 'conditions'],
      properties: {
        type: { type: 'string', enum: TRIGGER_TYPES },
        conditions: { type: 'array', items: { type: 'object', additionalProperties: true } },
        perConsumer: { type: 'boolean', description: 'threshold triggers: evaluated per API consumer' },
        schedule: { type: 'string' },
        timezone: { type: 'string' },
        sloSid: { type: 'string' },
      },
    },
    actions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'config', 'order'],
        properties: {
          type: { type: 'string', enum: ACTION_TYPES },
          config: { type: 'object', additionalProperties: true },
          order: { type: 'number' },
        },
      },
    },
    isActive: { type: 'boolean' },
    createdAt: timestamp,
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const workflowListSchema = { $id: 'workflowList', ...listOf('workflow') } as const;

export const workflowExecutionSchema = {
  $id: 'workflowExecution',
  type: 'object',
  required: [
    'sid',
    'workflowSid',
    'triggerType',
    'requestSid',
    'status',
    'attempts',
    'error',
    'createdAt',
    'startedAt',
    'finishedAt',
  ],
  properties: {
    sid: { type: 'string' },
    workflowSid: { type: 'string' },
    triggerType: { type: 'string' },
    requestSid: { type: ['string', 'null'] },
    status: { type: 'string', enum: EXECUTION_STATUSES },
    attempts: { type: 'integer' },
    error: { type: ['string', 'null'] },
    createdAt: timestamp,
    startedAt: { type: ['string', 'null'], format: 'date-time' },
    finishedAt: { type: ['string', 'null'], format: 'date-time' },
    trigger: {
      type: ['object', 'null'],
      required: ['type', 'message'],
      properties: { type: { type: 'string' }, message: { type: 'string' } },
      description: 'what fired it, as the runner recorded it; null before the runner took it',
    },
    deadLettered: {
      type: 'boolean',
      description: 'failed after its last attempt and was produced to workflow.actions.dlq',
    },
    actions: {
      type: 'array',
      description: 'per-action result of the latest run (position in the stored actions = index)',
      items: {
        type: 'object',
        required: ['index', 'type', 'status', 'attempts', 'statusCode', 'error'],
        properties: {
          index: { type: 'integer' },
          type: { type: 'string' },
          status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] },
          attempts: { type: 'integer' },
          statusCode: { type: ['integer', 'null'], description: "the receiver's HTTP status, if any" },
          error: { type: ['string', 'null'] },
        },
      },
    },
  },
} as const;

// ---------------------------------------------------------------- dashboard tools

const sampleRequestSid = {
  type: ['string', 'null'],
  minLength: 1,
  maxLength: 64,
  description:
    'a stored request of the bucket to use as the sample; omitted or null = the newest stored request ' +
    "of the workflow's environment (an error first for error triggers), or a synthetic one",
} as const;

const sampleInfo = {
  type: 'object',
  required: ['kind', 'requestSid', 'description'],
  properties: {
    kind: { type: 'string', enum: ['stored', 'synthetic'] },
    requestSid: { type: ['string', 'null'] },
    description: { type: 'string' },
  },
} as const;

export const workflowTestBodySchema = {
  $id: 'workflowTestBody',
  type: 'object',
  additionalProperties: false,
  properties: {
    requestSid: sampleRequestSid,
    actions: {
      ...actions,
      description: 'actions to test instead of the stored ones (e.g. an unsaved edit); omitted = stored',
    },
  },
} as const;

export const workflowTestResultSchema = {
  $id: 'workflowTestResult',
  type: 'object',
  required: ['executionSid', 'sample', 'results'],
  properties: {
    executionSid: {
      type: 'string',
      description: 'the X-Tapline-Execution header the receivers got; not in the execution log',
    },
    sample: sampleInfo,
    results: {
      type: 'array',
      items: {
        type: 'object',
        required: [
          'index',
          'type',
          'order',
          'status',
          'statusCode',
          'messageId',
          'error',
          'retryable',
          'durationMs',
        ],
        properties: {
          index: { type: 'integer' },
          type: { type: 'string' },
          order: { type: 'number' },
          status: { type: 'string', enum: ['succeeded', 'failed'] },
          statusCode: { type: ['integer', 'null'] },
          messageId: { type: ['string', 'null'] },
          error: { type: ['string', 'null'] },
          retryable: {
            type: ['boolean', 'null'],
            description: 'for a failure: whether the runner would have tried again',
          },
          durationMs: { type: 'integer' },
        },
      },
    },
  },
} as const;

export const workflowPreviewBodySchema = {
  $id: 'workflowPreviewBody',
  type: 'object',
  additionalProperties: false,
  properties: {
    triggerType: { type: 'string', enum: TRIGGER_TYPES, default: 'request' },
    requestSid: sampleRequestSid,
    configs: {
      type: 'array',
      maxItems: MAX_ACTIONS,
      items: { type: 'object' },
      description: 'action configs to render on the sample (templates in any string)',
    },
  },
} as const;

export const workflowPreviewSchema = {
  $id: 'workflowPreview',
  type: 'object',
  required: ['sample', 'variables', 'rendered'],
  properties: {
    sample: sampleInfo,
    variables: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'value'],
        properties: { name: { type: 'string' }, value: { type: 'string' } },
      },
    },
    rendered: { type: 'array', items: { type: 'object', additionalProperties: true } },
  },
} as const;

export const workflowExecutionListSchema = {
  $id: 'workflowExecutionList',
  ...listOf('workflowExecution'),
} as const;

export const WORKFLOW_SCHEMAS = [
  workflowTriggerSchema,
  workflowActionSchema,
  workflowCreateSchema,
  workflowUpdateSchema,
  workflowSchema,
  workflowListSchema,
  workflowExecutionSchema,
  workflowExecutionListSchema,
  workflowTestBodySchema,
  workflowTestResultSchema,
  workflowPreviewBodySchema,
  workflowPreviewSchema,
] as const;

type WorkflowRefs = { references: [typeof workflowTriggerSchema, typeof workflowActionSchema] };

/** A create body as validated (defaults applied): the input of the route's normal form. */
export type WorkflowCreate = FromSchema<typeof workflowCreateSchema, WorkflowRefs>;
export type WorkflowUpdate = FromSchema<typeof workflowUpdateSchema, WorkflowRefs>;
/** One action of a body, per type. */
export type WorkflowActionBody = FromSchema<typeof workflowActionSchema>;
export type WorkflowTriggerBody = FromSchema<typeof workflowTriggerSchema>;
export type WorkflowTestBody = FromSchema<typeof workflowTestBodySchema, WorkflowRefs>;
export type WorkflowPreviewBody = FromSchema<typeof workflowPreviewBodySchema>;

/** A stored workflow as the API answers it. */
export type Workflow = Closed<FromSchema<typeof workflowSchema>>;
/** A stored (normalised) action: `order` always present, the webhook method default applied. */
export type WorkflowAction = Workflow['actions'][number];
/** A stored trigger: `conditions` always present; `schedule`/`timezone` only on schedule triggers. */
export type WorkflowTrigger = Workflow['trigger'];
export type TriggerType = (typeof TRIGGER_TYPES)[number];
export type ActionType = (typeof ACTION_TYPES)[number];
export type WorkflowExecution = Closed<FromSchema<typeof workflowExecutionSchema>>;
export type WorkflowTestResult = Closed<FromSchema<typeof workflowTestResultSchema>>;
export type WorkflowPreview = Closed<FromSchema<typeof workflowPreviewSchema>>;
