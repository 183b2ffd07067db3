import { listOf, nullableTimestamp, timestamp } from './common.schema.js';

/** Event markers (docs/events-mcp.md). */

export const EVENT_TYPES = ['deployment', 'incident', 'config_change', 'scale', 'custom'] as const;

/** `*` (every bucket) or a bucket sid of the caller's account (checked by the route). */
const bucketSids = {
  type: 'array',
  minItems: 1,
  maxItems: 100,
  items: { type: 'string', minLength: 1, maxLength: 64 },
} as const;
/** `*` (every environment) or an environment sid: 6 alphanumeric characters (docs/auth.md). */
const environmentSids = {
  type: 'array',
  minItems: 1,
  maxItems: 100,
  items: { type: 'string', pattern: '^(\\*|[A-Za-z0-9]{6})$' },
} as const;
const type = { type: 'string', enum: EVENT_TYPES } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const description = { type: ['string', 'null'], maxLength: 4000 } as const;
const source = { type: ['string', 'null'], maxLength: 200 } as const;
const metadata = { type: ['object', 'null'], additionalProperties: true } as const;

export const eventSchema = {
  $id: 'event',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'bucketSids',
    'environmentSids',
    'type',
    'name',
    'description',
    'source',
    'metadata',
    'startedAt',
    'endedAt',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    bucketSids: { type: 'array', items: { type: 'string' } },
    environmentSids: { type: 'array', items: { type: 'string' } },
    type: { type: 'string' },
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    source: { type: ['string', 'null'] },
    metadata: { type: ['object', 'null'], additionalProperties: true },
    startedAt: timestamp,
    endedAt: nullableTimestamp,
    createdAt: timestamp,
    updatedAt: nullableTimestamp,
  },
} as const;

export const eventListSchema = { $id: 'eventList', ...listOf('event') } as const;

export const eventCreateSchema = {
  $id: 'eventCreate',
  type: 'object',
  required: ['type', 'name'],
  additionalProperties: false,
  properties: {
    type,
    name,
    description,
    source,
    metadata,
    bucketSids,
    environmentSids,
    startedAt: timestamp,
    endedAt: nullableTimestamp,
  },
} as const;

/** PUT: any create field; only the provided ones change (docs/events-mcp.md). */
export const eventUpdateSchema = {
  $id: 'eventUpdate',
  type: 'object',
  additionalProperties: false,
  properties: eventCreateSchema.properties,
} as const;

/** Query of `GET /events` (docs/events-mcp.md) plus the list conventions `page`, `sort`, `order`. */
export const eventListQuery = {
  type: 'object',
  properties: {
    type,
    startTime: timestamp,
    endTime: timestamp,
    // The list endpoints' date bounds (docs/search.md): for events, the same window as startTime/endTime.
    start_date: timestamp,
    end_date: timestamp,
    bucketSid: { type: 'string', minLength: 1, maxLength: 64 },
    environmentSid: { type: 'string', minLength: 1, maxLength: 64 },
    source: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: 'Only events of this source (exact)',
    },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
    page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
    sort: { type: 'string', enum: ['startedAt', 'createdAt'], default: 'startedAt' },
    order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
  },
} as const;

/** Inputs of the MCP tools (services/api/mcp/mcp.tools.ts); not HTTP bodies, so no `$id`. */
export const mcpListEventsInput = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { ...type, description: 'Only events of this type' },
    startTime: { ...timestamp, description: 'ISO 8601; events ending at or after this time' },
    endTime: { ...timestamp, description: 'ISO 8601; events starting at or before this time' },
    bucketSid: { type: 'string', maxLength: 64, description: 'Only events shown on this bucket' },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
  },
} as const;

export const mcpCreateEventInput = {
  type: 'object',
  required: ['type', 'name'],
  additionalProperties: false,
  properties: {
    type: { ...type, description: 'deployment, incident, config_change, scale or custom' },
    name: { ...name, description: 'Human-readable title' },
    description: { type: 'string', maxLength: 4000 },
    metadata: { type: 'object', additionalProperties: true, description: 'Any JSON object' },
    bucketSids: {
      ...bucketSids,
      description: "Buckets the marker is shown on; default the token's buckets (or all)",
    },
    startedAt: { ...timestamp, description: 'ISO 8601; default now' },
    endedAt: { ...nullableTimestamp, description: 'ISO 8601; omit or null for a point in time' },
  },
} as const;

export const EVENT_SCHEMAS = [eventSchema, eventListSchema, eventCreateSchema, eventUpdateSchema] as const;
