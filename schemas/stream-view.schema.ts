import { listOf, nullableTimestamp, timestamp } from './common.schema.js';

/** Stream views: saved searches over a bucket's traffic (docs/search.md; endpoints designed here). */

export const STREAM_VIEW_ICONS = [
  'search',
  'star',
  'alert',
  'check',
  'bolt',
  'bookmark',
  'flag',
  'heart',
] as const;

const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
/** The search language of docs/search.md; compiled on save, so a stored view always compiles. */
const criteria = { type: 'string', maxLength: 4096 } as const;
const icon = { type: 'string', enum: STREAM_VIEW_ICONS } as const;

export const streamViewSchema = {
  $id: 'streamView',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'bucketSid',
    'name',
    'criteria',
    'icon',
    'createdAt',
    'updatedAt',
    'deletedAt',
  ],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    bucketSid: { type: 'string' },
    name: { type: 'string' },
    criteria: { type: 'string' },
    icon: { type: 'string' },
    createdAt: timestamp,
    updatedAt: nullableTimestamp,
    deletedAt: nullableTimestamp,
  },
} as const;

export const streamViewListSchema = { $id: 'streamViewList', ...listOf('streamView') } as const;

export const streamViewCreateSchema = {
  $id: 'streamViewCreate',
  type: 'object',
  required: ['name', 'criteria'],
  additionalProperties: false,
  properties: { name, criteria, icon: { ...icon, default: 'search' } },
} as const;

/** PUT: any of the fields; only the provided ones change. */
export const streamViewUpdateSchema = {
  $id: 'streamViewUpdate',
  type: 'object',
  additionalProperties: false,
  properties: { name, criteria, icon },
} as const;

export const STREAM_VIEW_SCHEMAS = [
  streamViewSchema,
  streamViewListSchema,
  streamViewCreateSchema,
  streamViewUpdateSchema,
] as const;
