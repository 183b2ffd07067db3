import type { FromSchema } from 'json-schema-to-ts';
import { listOf, type Closed } from './common.schema.js';

/**
 * API consumers (docs/consumers.md): a bucket's identification rules, the consumers list and one
 * consumer, and the name/group a person sets.
 */

const headerName = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
} as const;
const claim = { type: 'string', minLength: 1, maxLength: 256 } as const;

/**
 * One place a consumer id is read from, tried in list order until one gives a value:
 * - `header`: a request header's value (e.g. `X-API-Key`); `hash` (default true) stores a keyed
 *   hash of it instead of the value, for a credential;
 * - `bearer`: the token of an `Authorization: Bearer …` header, always hashed;
 * - `jwtClaim`: a claim (`sub`, `client_id`, `azp` …) of a JWT read from a header (default
 *   `Authorization`, with or without `Bearer `), its signature not verified; `groupClaim` names
 *   the consumer's group from another claim (e.g. an org id);
 * - `query`: a query parameter's value; `hash` (default false) as for `header`.
 */
export const identificationSourceSchema = {
  type: 'object',
  required: ['type'],
  // Picks the branch by `type`, so a refusal names what is wrong in that branch (a header name
  // with a space, a missing claim, an unknown type) instead of every other branch's mismatch.
  discriminator: { propertyName: 'type' },
  oneOf: [
    {
      type: 'object',
      required: ['type', 'name'],
      additionalProperties: false,
      properties: { type: { const: 'header' }, name: headerName, hash: { type: 'boolean', default: true } },
    },
    {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: { type: { const: 'bearer' } },
    },
    {
      type: 'object',
      required: ['type', 'claim'],
      additionalProperties: false,
      properties: {
        type: { const: 'jwtClaim' },
        header: { ...headerName, default: 'Authorization' },
        claim,
        groupClaim: claim,
      },
    },
    {
      type: 'object',
      required: ['type', 'name'],
      additionalProperties: false,
      properties: {
        type: { const: 'query' },
        name: { type: 'string', minLength: 1, maxLength: 256 },
        hash: { type: 'boolean', default: false },
      },
    },
  ],
} as const;

export const consumerIdentificationSchema = {
  $id: 'consumerIdentification',
  type: 'object',
  required: ['bucketSid', 'sources', 'updatedAt'],
  properties: {
    bucketSid: { type: 'string' },
    sources: { type: 'array', items: { type: 'object', additionalProperties: true } },
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const consumerIdentificationUpdateSchema = {
  $id: 'consumerIdentificationUpdate',
  type: 'object',
  required: ['sources'],
  additionalProperties: false,
  properties: { sources: { type: 'array', maxItems: 10, items: identificationSourceSchema } },
} as const;

export type IdentificationSource = FromSchema<typeof identificationSourceSchema>;

/**
 * POST …/consumerIdentification/preview: draft sources (as PUT takes them, not stored) applied to
 * one stored request of the bucket.
 */
export const consumerIdentificationPreviewBodySchema = {
  $id: 'consumerIdentificationPreviewBody',
  type: 'object',
  required: ['sources', 'requestSid'],
  additionalProperties: false,
  properties: {
    sources: consumerIdentificationUpdateSchema.properties.sources,
    requestSid: { type: 'string', minLength: 1, maxLength: 64 },
  },
} as const;

const previewConsumer = {
  type: ['object', 'null'],
  required: ['id'],
  properties: { id: { type: 'string' }, name: { type: 'string' }, group: { type: 'string' } },
} as const;

export const consumerIdentificationPreviewSchema = {
  $id: 'consumerIdentificationPreview',
  type: 'object',
  required: ['requestSid', 'consumer', 'source', 'redacted', 'storedConsumer'],
  properties: {
    requestSid: { type: 'string' },
    consumer: {
      ...previewConsumer,
      description:
        'the consumer the draft sources give the request (a credential as its keyed-hash id); null when none does',
    },
    source: {
      type: ['integer', 'null'],
      description: 'the index in `sources` of the source that gave it; null when none did',
    },
    redacted: {
      type: 'boolean',
      description:
        'true when the value the giving source read is redacted in the stored request: the processor read the original before redacting it, so `consumer` is not the id the call got',
    },
    storedConsumer: {
      ...previewConsumer,
      description:
        'the consumer the request was stored with (its own, or the rules of the time); null when none',
    },
  },
} as const;

const nullableNumber = { type: ['number', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

const consumerProperties = {
  id: { type: 'string' },
  name: { type: ['string', 'null'] },
  group: { type: ['string', 'null'] },
  requestCount: { type: 'integer' },
  errorCount: { type: 'integer' },
  errorRate: { type: 'number', description: 'percent 0-100' },
  p50: nullableNumber,
  p95: nullableNumber,
  p99: nullableNumber,
  firstSeenAt: nullableTime,
  lastSeenAt: nullableTime,
} as const;
const consumerRequired = Object.keys(consumerProperties) as (keyof typeof consumerProperties)[];

export const consumerSummarySchema = {
  $id: 'consumerSummary',
  type: 'object',
  required: consumerRequired,
  properties: consumerProperties,
} as const;

export const consumerListSchema = { $id: 'consumerList', ...listOf('consumerSummary') } as const;

export const consumerDetailSchema = {
  $id: 'consumerDetail',
  type: 'object',
  required: [...consumerRequired, 'endpoints', 'startDate', 'endDate'],
  properties: {
    ...consumerProperties,
    startDate: { type: 'string', format: 'date-time' },
    endDate: { type: 'string', format: 'date-time' },
    endpoints: {
      type: 'array',
      items: {
        type: 'object',
        required: ['method', 'endpoint', 'requestCount', 'errorCount', 'p95'],
        properties: {
          method: { type: 'string' },
          endpoint: { type: 'string' },
          requestCount: { type: 'integer' },
          errorCount: { type: 'integer' },
          p95: nullableNumber,
        },
      },
    },
  },
} as const;

/** PUT: `name` and/or `group`; null clears the value set here (the records' label shows again). */
export const consumerUpdateSchema = {
  $id: 'consumerUpdate',
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    name: { type: ['string', 'null'], maxLength: 256 },
    group: { type: ['string', 'null'], maxLength: 256 },
  },
} as const;

export const CONSUMER_SORTS = ['requests', 'errorRate', 'p95', 'lastSeen', 'name'] as const;

const isoDate = {
  type: 'string',
  maxLength: 40,
  anyOf: [{ format: 'date-time' }, { format: 'date' }],
} as const;

export const consumerListQuery = {
  type: 'object',
  properties: {
    bucketSid: { type: 'string', minLength: 1, maxLength: 64 },
    environmentSid: { type: 'string', pattern: '^[A-Za-z0-9]{6}$' },
    startDate: isoDate,
    endDate: isoDate,
    sort: { type: 'string', enum: CONSUMER_SORTS, default: 'requests' },
    order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
    q: { type: 'string', maxLength: 256 },
    page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
  },
} as const;

export const consumerGetQuery = {
  type: 'object',
  properties: {
    bucketSid: consumerListQuery.properties.bucketSid,
    environmentSid: consumerListQuery.properties.environmentSid,
    startDate: isoDate,
    endDate: isoDate,
  },
} as const;

export type ConsumerSummary = Closed<FromSchema<typeof consumerSummarySchema>>;
export type ConsumerListQuery = Closed<FromSchema<typeof consumerListQuery>>;

export const CONSUMER_SCHEMAS = [
  consumerIdentificationSchema,
  consumerIdentificationUpdateSchema,
  consumerIdentificationPreviewBodySchema,
  consumerIdentificationPreviewSchema,
  consumerSummarySchema,
  consumerListSchema,
  consumerDetailSchema,
  consumerUpdateSchema,
] as const;
