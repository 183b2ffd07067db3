import { listOf, timestamp } from './common.schema.js';

export const bucketSchema = {
  $id: 'bucket',
  type: 'object',
  required: ['sid', 'accountSid', 'name', 'verifySslCerts', 'appIsConnected', 'createdAt'],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    name: { type: 'string' },
    verifySslCerts: { type: 'boolean' },
    appIsConnected: { type: 'boolean' },
    createdAt: timestamp,
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const bucketListSchema = { $id: 'bucketList', ...listOf('bucket') } as const;

const name = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const bucketCreateSchema = {
  $id: 'bucketCreate',
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name, verifySslCerts: { type: 'boolean' } },
} as const;

export const bucketUpdateSchema = {
  $id: 'bucketUpdate',
  type: 'object',
  required: ['name', 'verifySslCerts'],
  additionalProperties: false,
  properties: { name, verifySslCerts: { type: 'boolean' } },
} as const;
