/**
 * Exclusion and redaction rules (spec 2.5, 2.6, 4.5, 4.6) and the SDK settings document (4.4).
 * Shape B fields plus Shape A's scoping (`buckets`, `environments`) and `redactAt`.
 */
import { environmentSid, listOf, timestamp } from './common.schema.js';

export const HTTP_METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'CONNECT',
] as const;

/** HTTP method or `*`. Routes upper-case the value before validation, so `get` is accepted. */
export const ruleMethod = {
  type: 'string',
  enum: ['*', ...HTTP_METHODS],
  description: 'HTTP method (case-insensitive, stored upper case) or `*` for every method',
} as const;

/** `*` matches any run of characters, everything else matches exactly (spec 2.5). */
export const pathPattern = {
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  pattern: '^[/*]\\S*$',
  description: 'Starts with `/` or `*`; no whitespace. `*` matches any run of characters.',
} as const;

const ruleName = { type: 'string', minLength: 1, maxLength: 200 } as const;
const ruleDescription = {
  type: ['string', 'null'],
  maxLength: 2000,
  description: 'null or omitted is stored as the empty string',
} as const;
const statusCode = { type: ['integer', 'null'], minimum: 100, maximum: 599 } as const;

export const bucketScope = {
  type: ['array', 'null'],
  items: { type: 'string', minLength: 1, maxLength: 64 },
  uniqueItems: true,
  maxItems: 100,
  description: 'Bucket sids of this account the rule applies to; null, omitted or [] = every bucket',
} as const;
export const environmentScope = {
  type: ['array', 'null'],
  items: environmentSid,
  uniqueItems: true,
  maxItems: 100,
  description: 'Environment sids the rule applies to; null, omitted or [] = every environment',
} as const;
const nullableStrings = { type: ['array', 'null'], items: { type: 'string' } } as const;

// ---------------------------------------------------------------- exclusions

export const exclusionSchema = {
  $id: 'exclusion',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'name',
    'description',
    'pathPattern',
    'method',
    'statusCode',
    'buckets',
    'environments',
    'isActive',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    pathPattern: { type: 'string' },
    method: { type: 'string' },
    statusCode: { type: ['integer', 'null'] },
    buckets: nullableStrings,
    environments: nullableStrings,
    isActive: { type: 'boolean' },
    createdAt: timestamp,
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const exclusionListSchema = { $id: 'exclusionList', ...listOf('exclusion') } as const;

const exclusionFields = {
  name: ruleName,
  description: ruleDescription,
  pathPattern,
  method: ruleMethod,
  statusCode,
  isActive: { type: 'boolean' },
  buckets: bucketScope,
  environments: environmentScope,
} as const;

export const exclusionCreateSchema = {
  $id: 'exclusionCreate',
  type: 'object',
  required: ['name', 'pathPattern', 'method'],
  additionalProperties: false,
  properties: { ...exclusionFields, isActive: { type: 'boolean', default: true } },
} as const;

export const exclusionUpdateSchema = {
  $id: 'exclusionUpdate',
  type: 'object',
  required: ['name', 'pathPattern', 'method', 'isActive'],
  additionalProperties: false,
  properties: exclusionFields,
} as const;

// ---------------------------------------------------------------- redactions

export const REDACTION_TYPES = ['mask', 'remove', 'hash', 'replace'] as const;
export const REDACT_AT = ['client', 'server'] as const;

export const redactionSchema = {
  $id: 'redaction',
  type: 'object',
  required: [
    'sid',
    'accountSid',
    'name',
    'description',
    'fieldPath',
    'redactionType',
    'replacementValue',
    'redactAt',
    'buckets',
    'environments',
    'isActive',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    sid: { type: 'string' },
    accountSid: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    fieldPath: { type: 'string' },
    redactionType: { type: 'string', enum: REDACTION_TYPES },
    replacementValue: { type: ['string', 'null'] },
    redactAt: { type: 'string', enum: REDACT_AT },
    buckets: nullableStrings,
    environments: nullableStrings,
    isActive: { type: 'boolean' },
    createdAt: timestamp,
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const redactionListSchema = { $id: 'redactionList', ...listOf('redaction') } as const;

const redactionFields = {
  name: ruleName,
  description: ruleDescription,
  fieldPath: {
    type: 'string',
    minLength: 2,
    maxLength: 1024,
    pattern: '^\\$',
    description: 'Field path (docs/rules.md), e.g. `$.password`, `$.request.headers.authorization`',
  },
  redactionType: { type: 'string', enum: REDACTION_TYPES },
  replacementValue: {
    type: ['string', 'null'],
    maxLength: 1000,
    description: 'Required when redactionType is `replace`; stored as null for the other types',
  },
  redactAt: { type: 'string', enum: REDACT_AT },
  isActive: { type: 'boolean' },
  buckets: bucketScope,
  environments: environmentScope,
} as const;

export const redactionCreateSchema = {
  $id: 'redactionCreate',
  type: 'object',
  required: ['name', 'fieldPath', 'redactionType'],
  additionalProperties: false,
  properties: {
    ...redactionFields,
    redactAt: { ...redactionFields.redactAt, default: 'server' },
    isActive: { type: 'boolean', default: true },
  },
} as const;

export const redactionUpdateSchema = {
  $id: 'redactionUpdate',
  type: 'object',
  required: ['name', 'fieldPath', 'redactionType', 'isActive'],
  additionalProperties: false,
  properties: redactionFields,
} as const;

// ---------------------------------------------------------------- SDK settings

/** Inline (no `$id`): query strings are described in place, like listQuery(). */
export const sdkQuery = {
  type: 'object',
  required: ['redactAt', 'clientId'],
  properties: {
    redactAt: { type: 'string', enum: REDACT_AT },
    clientId: { type: 'string', minLength: 1, maxLength: 200 },
    environmentSid: { ...environmentSid, description: 'only rules applying to this environment' },
  },
} as const;

export const sdkSettingsSchema = {
  $id: 'sdkSettings',
  type: 'object',
  required: ['bucketSid', 'clientId', 'redactAt', 'redactionRules', 'exclusionRules', 'settings'],
  properties: {
    bucketSid: { type: 'string' },
    clientId: { type: 'string' },
    redactAt: { type: 'string', enum: REDACT_AT },
    redactionRules: {
      type: 'array',
      items: {
        type: 'object',
        required: ['sid', 'field', 'action', 'environments'],
        properties: {
          sid: { type: 'string' },
          field: { type: 'string' },
          action: { type: 'string', enum: REDACTION_TYPES },
          replacement: { type: 'string' },
          environments: nullableStrings,
        },
      },
    },
    exclusionRules: {
      type: 'array',
      items: {
        type: 'object',
        required: ['sid', 'path', 'method', 'statusCode', 'environments'],
        properties: {
          sid: { type: 'string' },
          path: { type: 'string' },
          method: { type: 'string' },
          statusCode: { type: ['integer', 'null'] },
          environments: nullableStrings,
        },
      },
    },
    settings: {
      type: 'object',
      required: ['interceptOutbound', 'debug'],
      properties: {
        interceptOutbound: { type: 'boolean' },
        debug: { type: 'boolean' },
      },
    },
  },
} as const;

export const RULE_SCHEMAS = [
  exclusionSchema,
  exclusionListSchema,
  exclusionCreateSchema,
  exclusionUpdateSchema,
  redactionSchema,
  redactionListSchema,
  redactionCreateSchema,
  redactionUpdateSchema,
  sdkSettingsSchema,
] as const;
