import type { FromSchema } from 'json-schema-to-ts';
import { timestamp, type Closed } from './common.schema.js';

/**
 * A job on Kafka topic `workflow.actions` (TOPICS.actions), keyed by workflow sid: one workflow hit
 * to be executed by the action runner. Produced by the processor (request/error triggers, after
 * server-side redaction) and by the scheduler (threshold/schedule triggers). `context` carries every
 * value a `{{…}}` template variable of the interface (docs/workflows.md) can name; `executionSid` (`wfx_…`) is the
 * execution id the runner records and the request record lists in `workflowExecutions`.
 */
const anyValue = {} as const;
const nullableString = { type: ['string', 'null'] } as const;
const nullableNumber = { type: ['number', 'null'] } as const;

export const actionJobSchema = {
  $id: 'actionJob',
  type: 'object',
  required: [
    'v',
    'executionSid',
    'accountSid',
    'workflowSid',
    'bucketSid',
    'environmentSid',
    'trigger',
    'requestSid',
    'createdAt',
    'context',
  ],
  properties: {
    v: { type: 'integer', const: 1 },
    executionSid: { type: 'string', pattern: '^wfx_[A-Za-z0-9]{27}$' },
    accountSid: { type: 'string' },
    workflowSid: { type: 'string' },
    bucketSid: { type: 'string' },
    environmentSid: nullableString,
    trigger: {
      type: 'object',
      required: ['type', 'message'],
      properties: {
        type: {
          type: 'string',
          enum: ['request', 'error', 'threshold', 'schedule', 'slo_burn', 'regression'],
        },
        message: { type: 'string' },
        /** threshold and slo_burn triggers: `resolved` when the condition cleared after a fire; absent = firing */
        status: { type: 'string', enum: ['firing', 'resolved'] },
      },
    },
    /** the request record that fired a request/error trigger; null for threshold/schedule */
    requestSid: nullableString,
    createdAt: timestamp,
    context: {
      type: 'object',
      required: ['request', 'response', 'timings', 'bucket', 'account', 'environment'],
      properties: {
        request: {
          type: 'object',
          required: ['method', 'path', 'headers', 'body', 'query'],
          properties: {
            method: nullableString,
            path: nullableString,
            headers: anyValue,
            body: anyValue,
            query: anyValue,
          },
        },
        response: {
          type: 'object',
          required: ['statusCode', 'headers', 'body', 'size'],
          properties: {
            statusCode: nullableNumber,
            headers: anyValue,
            body: anyValue,
            size: nullableNumber,
          },
        },
        timings: {
          type: 'object',
          required: ['duration', 'responseTime'],
          properties: { duration: nullableNumber, responseTime: nullableNumber },
        },
        bucket: {
          type: 'object',
          required: ['sid', 'name'],
          properties: { sid: { type: 'string' }, name: { type: 'string' } },
        },
        account: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
        environment: { type: 'object', required: ['name'], properties: { name: nullableString } },
        /** the call's consumer (docs/consumers.md); the breaching consumer of a per-consumer threshold */
        consumer: {
          type: 'object',
          required: ['id', 'name', 'group'],
          properties: { id: { type: 'string' }, name: nullableString, group: nullableString },
        },
        metric: {
          type: 'object',
          required: ['value', 'threshold', 'timeWindow'],
          properties: {
            value: nullableNumber,
            threshold: nullableNumber,
            timeWindow: { type: 'string' },
          },
        },
        /** slo_burn triggers: the SLO and the burn rates that fired (docs/slos.md) */
        slo: {
          type: 'object',
          required: ['sid', 'name', 'objective', 'severity', 'burnRate', 'longWindow', 'shortWindow'],
          properties: {
            sid: { type: 'string' },
            name: { type: 'string' },
            objective: { type: 'number' },
            severity: { type: 'string' },
            burnRate: nullableNumber,
            shortBurnRate: nullableNumber,
            threshold: nullableNumber,
            longWindow: { type: 'string' },
            shortWindow: { type: 'string' },
          },
        },
        /** regression triggers: the deployment and its regressed endpoints (docs/releases.md) */
        release: {
          type: 'object',
          required: ['eventSid', 'name', 'startedAt', 'regressed', 'endpoints'],
          properties: {
            eventSid: { type: 'string' },
            name: { type: 'string' },
            startedAt: { type: 'string' },
            regressed: { type: 'integer' },
            endpoints: { type: 'array', items: { type: 'object', additionalProperties: true } },
            /** the consumers the regression hits, each once with its endpoints */
            consumers: { type: 'array', items: { type: 'object', additionalProperties: true } },
          },
        },
      },
    },
  },
} as const;

export type ActionJob = Closed<FromSchema<typeof actionJobSchema>>;
