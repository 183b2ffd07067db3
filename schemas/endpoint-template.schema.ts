import type { FromSchema } from 'json-schema-to-ts';
import { listOf, nullableTimestamp, timestamp } from './common.schema.js';

/**
 * Endpoint template rules of a bucket (docs/processing.md, "Endpoint templates") and the
 * suggestions the dashboard offers for them.
 */

/** ISO 8601: a date-time with an offset or a bare date (a whole UTC day), as the metrics take it. */
const isoDate = {
  type: 'string',
  maxLength: 40,
  anyOf: [{ format: 'date-time' }, { format: 'date' }],
} as const;

const pattern = {
  type: 'string',
  minLength: 1,
  maxLength: 512,
  description:
    'The endpoint matching paths are stored under: `/`-separated segments, each a literal (matched exactly) or a `{name}` placeholder matching any one segment, e.g. `/coupons/{code}`; at least one placeholder.',
} as const;
const method = {
  type: ['string', 'null'],
  pattern: '^[A-Za-z-]{1,32}$',
  description: 'Only requests of this HTTP method (stored upper case); null or absent: every method.',
} as const;

export const endpointTemplateSchema = {
  $id: 'endpointTemplate',
  type: 'object',
  required: ['sid', 'accountSid', 'bucketSid', 'pattern', 'method', 'createdAt', 'updatedAt'],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    bucketSid: { type: 'string' },
    pattern: { type: 'string' },
    method: { type: ['string', 'null'] },
    createdAt: timestamp,
    updatedAt: nullableTimestamp,
  },
} as const;

export const endpointTemplateListSchema = {
  $id: 'endpointTemplateList',
  ...listOf('endpointTemplate'),
} as const;

export const endpointTemplateCreateSchema = {
  $id: 'endpointTemplateCreate',
  type: 'object',
  required: ['pattern'],
  additionalProperties: false,
  properties: { pattern, method },
} as const;

/** PUT: either field; only the provided ones change (method null: every method). */
export const endpointTemplateUpdateSchema = {
  $id: 'endpointTemplateUpdate',
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: { pattern, method },
} as const;

export const endpointTemplateSuggestionsSchema = {
  $id: 'endpointTemplateSuggestions',
  type: 'object',
  required: ['startDate', 'endDate', 'suggestions'],
  properties: {
    startDate: timestamp,
    endDate: timestamp,
    suggestions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['pattern', 'examples', 'endpoints', 'requests'],
        properties: {
          pattern: { type: 'string', description: 'the proposed rule pattern' },
          examples: {
            type: 'array',
            items: { type: 'string' },
            description: 'endpoints it merges, the busiest first (at most 5)',
          },
          endpoints: { type: 'integer', description: 'how many endpoints of the range it merges' },
          requests: { type: 'integer', description: 'their requests in the range' },
        },
      },
    },
  },
} as const;

export const endpointTemplateSuggestionsQuery = {
  type: 'object',
  properties: {
    startDate: isoDate,
    endDate: isoDate,
    environmentSid: { type: 'string', pattern: '^[A-Za-z0-9]{6}$' },
  },
} as const;

export type EndpointTemplateCreate = FromSchema<typeof endpointTemplateCreateSchema>;
export type EndpointTemplateUpdate = FromSchema<typeof endpointTemplateUpdateSchema>;

export const ENDPOINT_TEMPLATE_SCHEMAS = [
  endpointTemplateSchema,
  endpointTemplateListSchema,
  endpointTemplateCreateSchema,
  endpointTemplateUpdateSchema,
  endpointTemplateSuggestionsSchema,
] as const;
