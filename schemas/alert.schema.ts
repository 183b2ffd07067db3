/**
 * Alerts: the threshold and error workflows of an account with their state (firing, resolved or
 * paused), since when, and their latest executions (docs/workflows-api.md "Alerts").
 */
import { listOf, nullableTimestamp } from './common.schema.js';

export const ALERT_TRIGGER_TYPES = ['threshold', 'error'] as const;
export const ALERT_STATES = ['firing', 'resolved', 'paused'] as const;
/** An error alert fires while its last execution is younger than this; it resolves after. */
export const ERROR_ALERT_QUIET_MINUTES = 5;
/** The latest executions listed with each alert. */
export const ALERT_EXECUTIONS = 5;

export const alertSchema = {
  $id: 'alert',
  type: 'object',
  required: [
    'workflowSid',
    'name',
    'bucketSid',
    'environmentSid',
    'triggerType',
    'trigger',
    'isActive',
    'state',
    'since',
    'lastFiredAt',
    'lastEvaluatedAt',
    'lastValue',
    'executions',
  ],
  properties: {
    workflowSid: { type: 'string' },
    name: { type: 'string' },
    bucketSid: { type: 'string' },
    environmentSid: { type: 'string' },
    triggerType: { type: 'string', enum: ALERT_TRIGGER_TYPES },
    trigger: { $ref: 'workflowTrigger#' },
    isActive: { type: 'boolean' },
    state: {
      type: 'string',
      enum: ALERT_STATES,
      description:
        'threshold: `firing` while the last evaluation held; error: `firing` while the last execution is less than 5 minutes old; `paused` when the workflow is not active',
    },
    since: {
      ...nullableTimestamp,
      description:
        'since when the state holds: threshold, the evaluation that changed the result; error, the first execution of the current burst (firing) or the last execution + 5 minutes (resolved); null when never evaluated or never fired, and when paused',
    },
    lastFiredAt: { ...nullableTimestamp, description: 'the latest execution of the workflow' },
    lastEvaluatedAt: { ...nullableTimestamp, description: 'threshold only: the latest evaluation' },
    lastValue: {
      type: ['number', 'null'],
      description: "threshold only: the first condition's value at the latest evaluation",
    },
    executions: {
      type: 'array',
      maxItems: ALERT_EXECUTIONS,
      items: { $ref: 'workflowExecution#' },
      description: 'the latest executions, newest first',
    },
  },
} as const;

export const alertListSchema = { $id: 'alertList', ...listOf('alert') } as const;

export const ALERT_SCHEMAS = [alertSchema, alertListSchema] as const;
