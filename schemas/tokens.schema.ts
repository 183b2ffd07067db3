import { ALL_SCOPES } from './scopes.js';
import { environmentSid, listOf, nullableTimestamp, timestamp } from './common.schema.js';

/**
 * API tokens (docs/auth.md: the plain fields plus role, environmentSid, updatedAt) and MCP tokens
 * (docs/events-mcp.md).
 */

const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const description = { type: 'string', maxLength: 2000 } as const;
const nullableEnvironmentSid = { type: ['string', 'null'], pattern: '^[a-z0-9]{6}$' } as const;

export const API_TOKEN_ROLES = ['administrator', 'user', 'ingest'] as const;

export const apiTokenSchema = {
  $id: 'apiToken',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'environmentSid',
    'name',
    'description',
    'role',
    'scopes',
    'lastUsedAt',
    'expiresAt',
    'isActive',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    sid: { type: 'string', description: 'Token record identifier (`tok_` + 27 alphanumerics)' },
    accountSid: { type: 'string' },
    environmentSid: {
      ...nullableEnvironmentSid,
      description: 'Environment label given on create; null when none was given',
    },
    name: { type: 'string' },
    description: { type: 'string' },
    role: {
      type: 'string',
      enum: API_TOKEN_ROLES,
      description:
        'Derived from scopes: every scope = administrator; only requests:write = ingest; otherwise user',
    },
    scopes: { type: 'array', items: { type: 'string' } },
    lastUsedAt: { ...nullableTimestamp, description: 'Kept current within a few seconds' },
    expiresAt: { ...nullableTimestamp, description: 'null means no expiration' },
    isActive: { type: 'boolean' },
    createdAt: timestamp,
    updatedAt: nullableTimestamp,
    token: {
      type: 'string',
      description: 'The token value (`at_live_…` or `at_test_…`): only in the create response, once',
    },
  },
} as const;

export const apiTokenListSchema = { $id: 'apiTokenList', ...listOf('apiToken') } as const;

export const apiTokenCreateSchema = {
  $id: 'apiTokenCreate',
  type: 'object',
  required: ['name', 'scopes'],
  additionalProperties: false,
  properties: {
    name,
    description,
    scopes: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      // NOTE: not an `enum`: an unknown scope is refused by the route with a message naming it.
      items: { type: 'string', minLength: 1, maxLength: 64 },
      description: `Scopes to grant; each one of: ${ALL_SCOPES.join(', ')}. The caller must hold each.`,
    },
    expiresAt: { ...nullableTimestamp, description: 'Must be in the future; null or omitted = never' },
    environment: {
      type: 'string',
      enum: ['live', 'test'],
      default: 'live',
      description: 'Chooses the value prefix: `at_live_` (default) or `at_test_`',
    },
    environmentSid: nullableEnvironmentSid,
  },
} as const;

export const apiTokenUpdateSchema = {
  $id: 'apiTokenUpdate',
  type: 'object',
  required: ['name', 'isActive'],
  additionalProperties: false,
  properties: {
    name,
    description: { ...description, description: 'Omitted = unchanged' },
    isActive: { type: 'boolean' },
  },
} as const;

export const mcpTokenSchema = {
  $id: 'mcpToken',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'environmentSid',
    'bucketSids',
    'scopes',
    'name',
    'token',
    'isRevoked',
    'lastUsedAt',
    'createdAt',
    'updatedAt',
    'revokedAt',
    'expiresAt',
  ],
  properties: {
    sid: { type: 'string', description: '`mcp_` + 27 alphanumerics' },
    accountSid: { type: 'string' },
    environmentSid,
    bucketSids: {
      type: 'array',
      items: { type: 'string' },
      description: 'Empty = every bucket of the environment',
    },
    scopes: {
      type: 'array',
      items: { type: 'string' },
      description:
        "The tool scopes the token's creator held when it was made (events:read, events:write, " +
        'buckets:read, metrics:read, requests:read, workflows:read): each MCP tool answers only when ' +
        'the token holds the scope it needs',
    },
    name: { type: 'string' },
    token: {
      type: 'string',
      description:
        'Full value (`mcp_` + 40 alphanumerics) only in the create response; elsewhere masked as `mcp_abcd…wxyz`',
    },
    isRevoked: { type: 'boolean' },
    lastUsedAt: nullableTimestamp,
    createdAt: timestamp,
    updatedAt: timestamp,
    revokedAt: nullableTimestamp,
    expiresAt: {
      ...nullableTimestamp,
      description: 'When the token stops working (refused like a revoked one); null = never',
    },
  },
} as const;

export const mcpTokenListSchema = { $id: 'mcpTokenList', ...listOf('mcpToken') } as const;

const bucketSids = {
  type: 'array',
  maxItems: 100,
  items: { type: 'string', minLength: 1, maxLength: 64 },
  description: 'Buckets of this account; empty or omitted = every bucket of the environment',
} as const;

const mcpExpiresAt = {
  type: ['string', 'null'],
  format: 'date-time',
  description: 'When the token stops working, in the future; null or omitted = never',
} as const;

export const mcpTokenCreateSchema = {
  $id: 'mcpTokenCreate',
  type: 'object',
  required: ['name', 'environmentSid'],
  additionalProperties: false,
  properties: { name, environmentSid, bucketSids, expiresAt: mcpExpiresAt },
} as const;

export const mcpTokenUpdateSchema = {
  $id: 'mcpTokenUpdate',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name,
    bucketSids,
    expiresAt: {
      ...mcpExpiresAt,
      description: 'A new expiry in the future; null = never; omitted = unchanged',
    },
  },
} as const;

/** Registered once by schemas/index.ts. */
export const TOKEN_SCHEMAS = [
  apiTokenSchema,
  apiTokenListSchema,
  apiTokenCreateSchema,
  apiTokenUpdateSchema,
  mcpTokenSchema,
  mcpTokenListSchema,
  mcpTokenCreateSchema,
  mcpTokenUpdateSchema,
] as const;
