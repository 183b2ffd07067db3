import type { FromSchema } from 'json-schema-to-ts';
import { environmentSid, nullableTimestamp, timestamp, type Closed } from './common.schema.js';

/**
 * A captured request record (docs/processing.md). The ingest schema is what clients send; the stored shape
 * is the same record with every server-filled field present.
 */
const nullableString = (max: number) => ({ type: ['string', 'null'], maxLength: max }) as const;
const nullableNumber = { type: ['number', 'null'] } as const;
// NOTE: sizes are stored as UInt64; ajv counts 1e308 as an integer, and such a row would fail the
// ClickHouse insert on every retry. The bound keeps them exact JS integers too.
const byteSize = { type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const headerValues = {
  type: 'object',
  maxProperties: 500,
  additionalProperties: { type: ['string', 'number', 'boolean', 'array'], maxLength: 65536 },
} as const;

export const requestPartSchema = {
  $id: 'requestPart',
  type: 'object',
  additionalProperties: false,
  properties: {
    host: nullableString(1024),
    ip: nullableString(64),
    method: { type: ['string', 'null'], pattern: '^[A-Za-z-]{1,32}$' },
    path: nullableString(8192),
    port: { type: ['integer', 'null'], minimum: 0, maximum: 65535 },
    url: nullableString(16384),
    queryString: { type: ['object', 'null'], maxProperties: 500 },
    headers: { anyOf: [headerValues, { type: 'null' }] },
    body: {},
    contentType: nullableString(512),
    size: byteSize,
  },
} as const;

export const responsePartSchema = {
  $id: 'responsePart',
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    statusCode: { type: ['integer', 'null'], minimum: 100, maximum: 599 },
    headers: { anyOf: [headerValues, { type: 'null' }] },
    size: byteSize,
    body: {},
    contentType: nullableString(512),
  },
} as const;

const timingNames = [
  'duration',
  'start',
  'end',
  'lookup',
  'socket',
  'upload',
  'connect',
  'response',
  'secureConnect',
  'abort',
  'error',
] as const;
const phaseNames = ['dns', 'tcp', 'tls', 'wait', 'total', 'request', 'download', 'firstByte'] as const;

export const timingsSchema = {
  $id: 'timings',
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    ...(Object.fromEntries(timingNames.map((n) => [n, nullableNumber])) as Record<
      (typeof timingNames)[number],
      typeof nullableNumber
    >),
    phases: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: Object.fromEntries(phaseNames.map((n) => [n, nullableNumber])) as Record<
        (typeof phaseNames)[number],
        typeof nullableNumber
      >,
    },
  },
} as const;

/**
 * Who made the call (docs/consumers.md): an id of the app's choosing (a customer, partner app or
 * API key id), with an optional display name and group. Sent by an SDK or mapped from OTLP
 * `enduser.*`; the processor fills it from the bucket's identification rules when absent.
 */
export const consumerSchema = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 256 },
    name: { type: 'string', maxLength: 256 },
    group: { type: 'string', maxLength: 256 },
  },
} as const;

const tag = {
  type: 'object',
  required: ['key', 'value'],
  additionalProperties: false,
  properties: {
    key: { type: 'string', minLength: 1, maxLength: 256 },
    value: { type: 'string', maxLength: 4096 },
  },
} as const;

/** One record as a client sends it. Unknown top-level fields are refused so typos are visible. */
export const ingestRecordSchema = {
  $id: 'ingestRecord',
  type: 'object',
  required: ['request'],
  additionalProperties: false,
  properties: {
    sid: { type: 'string', pattern: '^req_[A-Za-z0-9]{27}$' },
    bucketSid: { type: 'string', maxLength: 64 },
    environmentSid: { anyOf: [environmentSid, { type: 'null' }] },
    contextSid: nullableString(256),
    direction: { type: 'string', enum: ['in', 'out'] },
    // The route template when the client knows it (an SDK's framework route, `/users/:id`); the
    // processor derives one from the path when it is absent.
    endpoint: nullableString(2048),
    note: nullableString(10000),
    // Set by an SDK whose host-side sensitive-data rules changed the record (the sizes stay as
    // captured), as the processor sets it for its own; answered on the stored record.
    redacted: { type: 'boolean' },
    createdAt: timestamp,
    receivedAt: timestamp,
    firewall: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { blocked: { type: 'boolean' } },
    },
    request: { $ref: 'requestPart#' },
    response: { $ref: 'responsePart#' },
    timings: { $ref: 'timings#' },
    traces: {
      type: ['array', 'null'],
      maxItems: 1000,
      items: { anyOf: [{ type: 'string', maxLength: 65536 }, { type: 'object' }] },
    },
    tags: { type: 'array', maxItems: 100, items: tag },
    consumer: consumerSchema,
  },
} as const;

export const ingestBodySchema = {
  $id: 'ingestBody',
  type: 'object',
  required: ['records'],
  additionalProperties: false,
  properties: {
    // The per-record schema is applied one by one in the handler so a bad record rejects only itself.
    records: { type: 'array', items: {} },
  },
} as const;

export const ingestResultSchema = {
  $id: 'ingestResult',
  type: 'object',
  required: ['accepted', 'rejected'],
  properties: {
    accepted: { type: 'integer' },
    rejected: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'error'],
        properties: {
          index: { type: 'integer' },
          error: {
            type: 'object',
            required: ['code', 'message', 'details'],
            properties: {
              code: { type: 'string' },
              message: { type: 'string' },
              details: { type: 'object', additionalProperties: true },
            },
          },
        },
      },
    },
  },
} as const;

/** A stored record as the API returns it (docs/processing.md) plus `endpoint`, `tags`, `storedAt`. */
export const requestRecordSchema = {
  $id: 'requestRecord',
  type: 'object',
  required: ['sid', 'bucketSid', 'createdAt', 'receivedAt', 'direction', 'firewall', 'request'],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    bucketSid: { type: 'string' },
    environmentSid: { type: ['string', 'null'] },
    contextSid: { type: ['string', 'null'] },
    direction: { type: 'string' },
    note: { type: ['string', 'null'] },
    createdAt: timestamp,
    receivedAt: timestamp,
    storedAt: nullableTimestamp,
    endpoint: { type: ['string', 'null'] },
    redacted: {
      type: 'boolean',
      description:
        'true when a Shape A redaction rule changed the record; sizes stay as received (docs/rules.md)',
    },
    firewall: { type: 'object', properties: { blocked: { type: 'boolean' } } },
    request: {
      type: 'object',
      additionalProperties: true,
      properties: {
        host: { type: ['string', 'null'] },
        method: { type: ['string', 'null'] },
        path: { type: ['string', 'null'] },
        port: { type: ['integer', 'null'] },
        url: { type: ['string', 'null'] },
        queryString: { type: ['object', 'null'], additionalProperties: true },
        headers: { type: ['object', 'null'], additionalProperties: true },
        body: {},
        contentType: { type: ['string', 'null'] },
        size: { type: ['integer', 'null'] },
      },
    },
    response: {
      type: ['object', 'null'],
      additionalProperties: true,
      properties: {
        statusCode: { type: ['integer', 'null'] },
        headers: { type: ['object', 'null'], additionalProperties: true },
        size: { type: ['integer', 'null'] },
        body: {},
        contentType: { type: ['string', 'null'] },
      },
    },
    timings: { type: ['object', 'null'], additionalProperties: true },
    traces: { type: ['array', 'null'] },
    tags: { type: 'array', items: { type: 'object', additionalProperties: true } },
    workflowExecutions: { type: ['array', 'null'], items: { type: 'object', additionalProperties: true } },
    consumer: {
      type: ['object', 'null'],
      description: 'who made the call (docs/consumers.md); null when no consumer is identified',
      properties: {
        id: { type: 'string' },
        name: { type: ['string', 'null'] },
        group: { type: ['string', 'null'] },
      },
    },
  },
} as const;

export type RequestRecord = Closed<FromSchema<typeof requestRecordSchema>>;

/**
 * What the processor requires of each record on `traffic.requests` (ingest validated the rest).
 * NOTE: the two instants are only typed here: the processor parses them into epoch milliseconds
 * anyway (row.mapper.ts, epochMs) and dead-letters a record whose instants do not parse, which
 * spares a date-time format check per record.
 */
const kafkaRecordItem = {
  type: 'object',
  required: ['sid', 'createdAt', 'receivedAt', 'request'],
  properties: {
    sid: { type: 'string' },
    createdAt: { type: 'string' },
    receivedAt: { type: 'string' },
    request: { type: 'object' },
  },
} as const;

/**
 * Kafka payload on `traffic.requests` (version 2): newline-delimited JSON, this header on the first
 * line and one record per line after it (JSON text never holds a raw newline). The processor parses
 * each line on its own; a record no step changed is stored as its line with the fields the steps
 * added spliced in, instead of being serialised again (services/processor/requests.sink.ts).
 */
export const kafkaRequestHeaderSchema = {
  $id: 'kafkaRequestHeader',
  type: 'object',
  required: ['v', 'accountSid', 'bucketSid'],
  properties: {
    v: { const: 2 },
    accountSid: { type: 'string', minLength: 1 },
    bucketSid: { type: 'string', minLength: 1 },
  },
} as const;

export const kafkaRequestItemSchema = { $id: 'kafkaRequestItem', ...kafkaRecordItem } as const;

/**
 * One captured call as the existing SDKs post it to `POST /` of the ingest listener
 * (headers Api-Traffic-Bucket-Sid, Api-Traffic-Sdk, Api-Traffic-Sdk-Version).
 */
export const sdkCallSchema = {
  $id: 'sdkCall',
  type: 'object',
  required: ['request'],
  additionalProperties: true,
  properties: {
    contextSid: nullableString(256),
    direction: { type: 'string', enum: ['in', 'out'] },
    request: {
      type: 'object',
      required: ['url', 'method'],
      properties: {
        received: timestamp,
        ip: nullableString(64),
        url: { type: 'string', minLength: 1, maxLength: 16384 },
        method: { type: 'string', pattern: '^[A-Za-z-]{1,32}$' },
        headers: { anyOf: [headerValues, { type: 'null' }] },
        body: {},
      },
    },
    response: {
      type: ['object', 'null'],
      properties: {
        headers: { anyOf: [headerValues, { type: 'null' }] },
        status: { type: ['integer', 'null'], minimum: 100, maximum: 599 },
        responseTime: { type: ['number', 'null'], minimum: 0 },
        size: byteSize,
        body: {},
      },
    },
    tags: { type: ['array', 'null'], maxItems: 100, items: tag },
    traces: {
      type: ['array', 'null'],
      maxItems: 1000,
      items: { type: 'object', properties: { time: {}, data: {} } },
    },
  },
} as const;
