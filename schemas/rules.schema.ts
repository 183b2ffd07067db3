/**
 * Exclusion and redaction rules (docs/rules.md) and the SDK settings document (docs/rules.md). Both shapes
 * share the routes and the tables (docs/rules.md): path and field rules, shape B (`name`, `pathPattern`,
 * `fieldPath`, …, with the scoping `buckets`, `environments`, `redactAt`) and content rules, shape A
 * (`criteria`; `type`, `level`, `scopes`, `pattern`, `applyTo`; `enabled`, `deletedAt`).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { APPLY_TO, LEVELS, REDACT_AT, REDACTION_SCOPES, REDACTION_TYPES } from '../services/shared/rules.js';
import { environmentSid, listOf, nullableTimestamp, timestamp } from './common.schema.js';

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

/** `*` matches any run of characters, everything else matches exactly (docs/rules.md). */
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

/** The fields both content rules answer with (docs/rules.md), before and after their own. */
const contentRuleHead = {
  sid: { type: 'string' },
  accountSid: { type: 'string' },
  description: { type: ['string', 'null'] },
} as const;
const contentRuleTail = {
  environments: nullableStrings,
  enabled: { type: 'boolean' },
  createdAt: timestamp,
  updatedAt: nullableTimestamp,
  deletedAt: nullableTimestamp,
} as const;
const CONTENT_RULE_REQUIRED = [
  'sid',
  'accountSid',
  'description',
  'environments',
  'enabled',
  'createdAt',
  'updatedAt',
  'deletedAt',
] as const;

/**
 * Criteria exclusion (docs/rules.md): `criteria` in the stream-view search language (docs/search.md),
 * evaluated on each record by the processor. `deletedAt` set = soft-deleted (no longer applied).
 */
export const criteriaExclusionSchema = {
  $id: 'exclusionA',
  type: 'object',
  required: [...CONTENT_RULE_REQUIRED, 'criteria', 'buckets'],
  properties: {
    ...contentRuleHead,
    criteria: { type: 'string' },
    buckets: nullableStrings,
    ...contentRuleTail,
  },
} as const;

/** An exclusion in the shape it was created in: path (`pathPattern`…) or criteria (`criteria`). */
export const exclusionAnySchema = {
  $id: 'exclusionAny',
  anyOf: [{ $ref: 'exclusion#' }, { $ref: 'exclusionA#' }],
} as const;

export const exclusionListSchema = { $id: 'exclusionList', ...listOf('exclusionAny') } as const;

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

const contentRuleDescription = {
  type: ['string', 'null'],
  maxLength: 2000,
  description: 'Short description; null or omitted is stored as null',
} as const;

export const criteriaField = {
  type: 'string',
  minLength: 1,
  maxLength: 4096,
  pattern: '\\S',
  description:
    'Search criteria (docs/search.md), e.g. `method:OPTIONS status:2xx` or `path:/internal/* -env:prod01`; ' +
    'a text that does not parse is a 400 giving the position. Not empty: empty criteria would exclude everything.',
} as const;

const criteriaExclusionFields = {
  description: contentRuleDescription,
  criteria: criteriaField,
  buckets: bucketScope,
  environments: environmentScope,
  enabled: { type: 'boolean' },
} as const;

/** Criteria exclusion create: recognised by `criteria`. */
export const criteriaExclusionCreateSchema = {
  $id: 'exclusionCreateA',
  type: 'object',
  required: ['criteria'],
  additionalProperties: false,
  properties: { ...criteriaExclusionFields, enabled: { type: 'boolean', default: true } },
} as const;

/**
 * Criteria exclusion replace: omitted description becomes null, omitted buckets/environments keep their
 * value.
 */
export const criteriaExclusionUpdateSchema = {
  $id: 'exclusionUpdateA',
  type: 'object',
  required: ['criteria', 'enabled'],
  additionalProperties: false,
  properties: criteriaExclusionFields,
} as const;

/** The documented body of POST: either shape (the route tells them apart, docs/rules.md). */
export const exclusionCreateAnySchema = {
  $id: 'exclusionCreateAny',
  anyOf: [{ $ref: 'exclusionCreate#' }, { $ref: 'exclusionCreateA#' }],
} as const;
export const exclusionUpdateAnySchema = {
  $id: 'exclusionUpdateAny',
  anyOf: [{ $ref: 'exclusionUpdate#' }, { $ref: 'exclusionUpdateA#' }],
} as const;

/** Fields only one shape has: a body with fields of both is refused (docs/rules.md). */
export const CRITERIA_EXCLUSION_ONLY = ['criteria', 'enabled'] as const;
export const PATH_EXCLUSION_ONLY = ['name', 'pathPattern', 'method', 'statusCode', 'isActive'] as const;

export type CriteriaExclusion = FromSchema<typeof criteriaExclusionSchema>;
export type CriteriaExclusionCreate = FromSchema<typeof criteriaExclusionCreateSchema>;
export type CriteriaExclusionUpdate = FromSchema<typeof criteriaExclusionUpdateSchema>;

// ---------------------------------------------------------------- redactions

// The value lists come from the rules module the processor and the SDK use too.
export { APPLY_TO, REDACT_AT, REDACTION_SCOPES, REDACTION_TYPES };
export const REDACTION_LEVELS = LEVELS;

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

/**
 * Sensitive-data redaction (docs/rules.md): a predefined type (`pattern`, `applyTo` null) or a custom type
 * (`pattern` an RE2 expression, `applyTo` key or value), redacted at `level` in `scopes`.
 */
export const sensitiveRedactionSchema = {
  $id: 'redactionA',
  type: 'object',
  required: [
    ...CONTENT_RULE_REQUIRED,
    'buckets',
    'scopes',
    'pattern',
    'type',
    'redactAt',
    'level',
    'applyTo',
  ],
  properties: {
    ...contentRuleHead,
    buckets: nullableStrings,
    scopes: { type: 'array', items: { type: 'string', enum: REDACTION_SCOPES } },
    pattern: { type: ['string', 'null'] },
    type: { type: 'string' },
    redactAt: { type: 'string', enum: REDACT_AT },
    level: { type: 'string', enum: REDACTION_LEVELS },
    applyTo: { type: ['string', 'null'], enum: [...APPLY_TO, null] },
    ...contentRuleTail,
  },
} as const;

/** A redaction in the shape it was created in: field (`fieldPath`…) or sensitive-data (`type`…). */
export const redactionAnySchema = {
  $id: 'redactionAny',
  anyOf: [{ $ref: 'redaction#' }, { $ref: 'redactionA#' }],
} as const;

export const redactionListSchema = { $id: 'redactionList', ...listOf('redactionAny') } as const;

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

const sensitiveRedactionFields = {
  description: contentRuleDescription,
  buckets: bucketScope,
  environments: environmentScope,
  scopes: {
    type: 'array',
    items: { type: 'string', enum: REDACTION_SCOPES },
    uniqueItems: true,
    maxItems: REDACTION_SCOPES.length,
    description: 'Where to look (docs/rules.md "Scopes"); omitted or [] = `["*"]`, every scope',
  },
  pattern: {
    type: ['string', 'null'],
    maxLength: 1024,
    description:
      'Custom types: an RE2 regular expression (a pattern RE2 cannot compile is a 400 naming it); predefined types: null',
  },
  type: {
    type: 'string',
    minLength: 1,
    maxLength: 64,
    description:
      'A predefined type (`GET /v1/accounts/{accountSid}/redactions/types`) or, with `pattern` and `applyTo`, ' +
      'the name of a custom type (a letter, then letters, digits, `_`, `.`, `-`)',
  },
  redactAt: {
    type: 'string',
    enum: REDACT_AT,
    description: '`client`: served to SDKs and applied again on the server; `server`: the server only',
  },
  level: {
    type: 'string',
    enum: REDACTION_LEVELS,
    description:
      '`full` replaces, `mask` stars letters and digits, `partial` keeps a safe part (docs/rules.md)',
  },
  applyTo: {
    type: ['string', 'null'],
    enum: [...APPLY_TO, null],
    description: 'Custom types: `key` (field names) or `value` (any text); predefined types: null',
  },
  enabled: { type: 'boolean' },
} as const;

/** Sensitive-data redaction create: recognised by `type`, `level` or `scopes`. */
export const sensitiveRedactionCreateSchema = {
  $id: 'redactionCreateA',
  type: 'object',
  required: ['type', 'level'],
  additionalProperties: false,
  properties: {
    ...sensitiveRedactionFields,
    redactAt: { ...sensitiveRedactionFields.redactAt, default: 'server' },
    enabled: { type: 'boolean', default: true },
  },
} as const;

/**
 * Sensitive-data redaction replace: omitted description/pattern/applyTo become null, omitted scopes `["*"]`;
 * omitted redactAt/buckets/environments keep their value.
 */
export const sensitiveRedactionUpdateSchema = {
  $id: 'redactionUpdateA',
  type: 'object',
  required: ['type', 'level', 'enabled'],
  additionalProperties: false,
  properties: sensitiveRedactionFields,
} as const;

export const redactionCreateAnySchema = {
  $id: 'redactionCreateAny',
  anyOf: [{ $ref: 'redactionCreate#' }, { $ref: 'redactionCreateA#' }],
} as const;
export const redactionUpdateAnySchema = {
  $id: 'redactionUpdateAny',
  anyOf: [{ $ref: 'redactionUpdate#' }, { $ref: 'redactionUpdateA#' }],
} as const;

/** A sensitive-data rule is recognised by these fields; the other fields only it has count for mixing. */
export const SENSITIVE_REDACTION_MARKERS = ['type', 'level', 'scopes'] as const;
export const SENSITIVE_REDACTION_ONLY = ['type', 'level', 'scopes', 'pattern', 'applyTo', 'enabled'] as const;
export const FIELD_REDACTION_ONLY = [
  'name',
  'fieldPath',
  'redactionType',
  'replacementValue',
  'isActive',
] as const;

export type SensitiveRedaction = FromSchema<typeof sensitiveRedactionSchema>;
export type SensitiveRedactionCreate = FromSchema<typeof sensitiveRedactionCreateSchema>;
export type SensitiveRedactionUpdate = FromSchema<typeof sensitiveRedactionUpdateSchema>;

/** `GET /v1/accounts/{a}/redactions/types`: the predefined types with what they match. */
export const redactionTypesSchema = {
  $id: 'redactionTypes',
  type: 'object',
  required: ['types', 'scopes', 'levels'],
  properties: {
    types: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'description', 'detects', 'validation', 'partial', 'examples'],
        properties: {
          name: { type: 'string' },
          description: { type: 'string' },
          detects: {
            type: 'array',
            items: { type: 'string', enum: ['value', 'key'] },
            description: '`value`: found in any text; `key`: a field name designates it',
          },
          validation: { type: 'string', description: 'what the detector accepts and rejects' },
          partial: { type: 'string', description: 'what the `partial` level keeps' },
          examples: {
            type: 'object',
            required: ['matches', 'nonMatches'],
            properties: {
              matches: { type: 'array', items: { type: 'string' } },
              nonMatches: { type: 'array', items: { type: 'string' } },
            },
          },
        },
      },
    },
    scopes: { type: 'array', items: { type: 'string' } },
    levels: { type: 'array', items: { type: 'string' } },
  },
} as const;

// ---------------------------------------------------------------- SDK settings

/**
 * The configurable SDK settings of a bucket (docs/rules.md, "SDK settings"). Each one is applied by
 * the SDK (sdk/node reads them at start and on refresh); none is enforced by the server.
 */
export const SDK_SETTING_PROPERTIES = {
  enabled: { type: 'boolean', description: 'false: the SDK captures and sends nothing' },
  captureRequestBody: { type: 'boolean', description: 'false: request bodies are not captured' },
  captureResponseBody: { type: 'boolean', description: 'false: response bodies are not captured' },
  maxBodyBytes: {
    type: 'integer',
    minimum: 0,
    maximum: 1_048_576,
    description: 'Bodies longer than this many bytes are cut to it (0 = no body at all)',
  },
  sampleRate: {
    type: 'number',
    minimum: 0,
    maximum: 1,
    description: 'Share of calls captured, 0 to 1 (1 = every call)',
  },
  interceptOutbound: { type: 'boolean', description: 'Also capture outbound calls the app makes' },
  debug: { type: 'boolean', description: "The SDK logs what it does to the app's console" },
} as const;

export type SdkSettingValues = {
  enabled: boolean;
  captureRequestBody: boolean;
  captureResponseBody: boolean;
  maxBodyBytes: number;
  sampleRate: number;
  interceptOutbound: boolean;
  debug: boolean;
};

/** What a bucket whose settings were never changed serves. */
export const SDK_SETTING_DEFAULTS: SdkSettingValues = {
  enabled: true,
  captureRequestBody: true,
  captureResponseBody: true,
  maxBodyBytes: 65_536,
  sampleRate: 1,
  interceptOutbound: true,
  debug: false,
};

const SDK_SETTING_KEYS = [
  'enabled',
  'captureRequestBody',
  'captureResponseBody',
  'maxBodyBytes',
  'sampleRate',
  'interceptOutbound',
  'debug',
] as const;

/** Every setting with its value: served by `/sdk` and by `GET …/sdkSettings`. */
const sdkSettingValues = {
  type: 'object',
  required: SDK_SETTING_KEYS,
  additionalProperties: false,
  properties: SDK_SETTING_PROPERTIES,
} as const;
export const sdkSettingValuesSchema = { $id: 'sdkSettingValues', ...sdkSettingValues } as const;

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
    sensitiveRules: {
      type: 'array',
      description:
        'Shape A redaction rules of this redactAt, in the form the sensitive-data engine compiles ' +
        '(docs/rules.md "SDK settings"); present only when there is at least one',
      items: {
        type: 'object',
        required: ['sid', 'type', 'pattern', 'applyTo', 'level', 'scopes', 'environments'],
        properties: {
          sid: { type: 'string' },
          type: { type: 'string' },
          pattern: { type: ['string', 'null'] },
          applyTo: { type: ['string', 'null'] },
          level: { type: 'string', enum: REDACTION_LEVELS },
          scopes: { type: 'array', items: { type: 'string' } },
          environments: nullableStrings,
        },
      },
    },
    exclusionCriteria: {
      type: 'array',
      description:
        'Shape A exclusions (search criteria); the processor applies them in any case. Present only ' +
        'when there is at least one',
      items: {
        type: 'object',
        required: ['sid', 'criteria', 'environments'],
        properties: {
          sid: { type: 'string' },
          criteria: { type: 'string' },
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
    settings: sdkSettingValues,
  },
} as const;

/** `PUT …/sdkSettings`: the settings to change; an omitted one keeps its value. */
export const sdkSettingsUpdateSchema = {
  $id: 'sdkSettingsUpdate',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: SDK_SETTING_PROPERTIES,
} as const;

/** `GET/PUT /v1/accounts/{a}/buckets/{b}/sdkSettings`. */
export const bucketSdkSettingsSchema = {
  $id: 'bucketSdkSettings',
  type: 'object',
  required: ['bucketSid', 'settings', 'defaults', 'updatedAt'],
  properties: {
    bucketSid: { type: 'string' },
    settings: { $ref: 'sdkSettingValues#' },
    defaults: { $ref: 'sdkSettingValues#' },
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

// ---------------------------------------------------------------- previews

const previewSource = {
  record: {
    type: 'object',
    description:
      'A sample record in the batch ingest format (`request`, `response`, `environmentSid`, …); ' +
      'checked as ingest checks it. Either this or `bucketSid` + `requestSid`.',
  },
  bucketSid: {
    type: 'string',
    minLength: 1,
    maxLength: 64,
    description:
      'The bucket the record is previewed in: decides whether a rule limited to buckets applies ' +
      '(without it, the bucket scope is not checked). With `requestSid`: the stored request’s bucket.',
  },
  requestSid: {
    type: 'string',
    minLength: 1,
    maxLength: 64,
    description: 'A stored request of `bucketSid` as the sample (needs requests:read)',
  },
} as const;

const anyRecord = { type: 'object', additionalProperties: true } as const;

export const redactionPreviewBodySchema = {
  $id: 'redactionPreviewBody',
  type: 'object',
  required: ['rule'],
  additionalProperties: false,
  properties: {
    rule: {
      type: 'object',
      required: ['fieldPath', 'redactionType'],
      additionalProperties: false,
      properties: redactionFields,
      description: 'The draft rule: the fields of a redaction rule (only these two are required)',
    },
    ...previewSource,
  },
} as const;

/** A sensitive-data draft redaction (`type` and `level` required), told apart by its own fields. */
export const sensitiveRedactionPreviewBodySchema = {
  $id: 'redactionPreviewBodyA',
  type: 'object',
  required: ['rule'],
  additionalProperties: false,
  properties: {
    rule: {
      type: 'object',
      required: ['type', 'level'],
      additionalProperties: false,
      properties: sensitiveRedactionFields,
      description: 'The draft Shape A rule: the fields of a Shape A redaction (`type` and `level` required)',
    },
    ...previewSource,
  },
} as const;

/** The preview body of either shape, for the OpenAPI document (the route picks one by its fields). */
export const redactionPreviewBodyAnySchema = {
  $id: 'redactionPreviewBodyAny',
  anyOf: [{ $ref: 'redactionPreviewBody#' }, { $ref: 'redactionPreviewBodyA#' }],
} as const;

export const redactionPreviewSchema = {
  $id: 'redactionPreview',
  type: 'object',
  required: ['applies', 'changed', 'before', 'after', 'changes'],
  properties: {
    applies: {
      type: 'boolean',
      description: 'false when the rule is limited to other buckets or environments than the record’s',
    },
    changed: { type: 'boolean', description: 'whether applying the rule changed anything' },
    before: { ...anyRecord, description: 'the record as the processor receives it' },
    after: { ...anyRecord, description: 'the record as the rule leaves it' },
    changes: {
      type: 'array',
      description:
        'Every changed value: `path` in dotted form; a JSON body held as a string is compared inside',
      items: {
        type: 'object',
        required: ['path', 'kind'],
        properties: {
          path: { type: 'string' },
          kind: { type: 'string', enum: ['changed', 'removed'] },
          before: {},
          after: {},
        },
      },
    },
  },
} as const;

export const exclusionPreviewBodySchema = {
  $id: 'exclusionPreviewBody',
  type: 'object',
  required: ['rule'],
  additionalProperties: false,
  properties: {
    rule: {
      type: 'object',
      required: ['pathPattern', 'method'],
      additionalProperties: false,
      properties: exclusionFields,
      description: 'The draft rule: the fields of an exclusion rule (only these two are required)',
    },
    ...previewSource,
  },
} as const;

/** A criteria draft exclusion (`criteria` required). */
export const criteriaExclusionPreviewBodySchema = {
  $id: 'exclusionPreviewBodyA',
  type: 'object',
  required: ['rule'],
  additionalProperties: false,
  properties: {
    rule: {
      type: 'object',
      required: ['criteria'],
      additionalProperties: false,
      properties: criteriaExclusionFields,
      description: 'The draft Shape A rule: the fields of a Shape A exclusion (`criteria` required)',
    },
    ...previewSource,
  },
} as const;

export const exclusionPreviewBodyAnySchema = {
  $id: 'exclusionPreviewBodyAny',
  anyOf: [{ $ref: 'exclusionPreviewBody#' }, { $ref: 'exclusionPreviewBodyA#' }],
} as const;

export const exclusionPreviewSchema = {
  $id: 'exclusionPreview',
  type: 'object',
  required: ['excluded', 'applies', 'compared', 'record'],
  properties: {
    excluded: { type: 'boolean', description: 'true: the processor would drop the record' },
    applies: {
      type: 'boolean',
      description: 'false when the rule is limited to other buckets or environments than the record’s',
    },
    compared: {
      type: 'object',
      description: 'The record’s values the rule is matched against (path without its query string)',
      required: ['method', 'path', 'statusCode', 'environmentSid'],
      properties: {
        method: { type: 'string' },
        path: { type: 'string' },
        statusCode: { type: ['integer', 'null'] },
        environmentSid: { type: ['string', 'null'] },
      },
    },
    record: { ...anyRecord, description: 'the record as the processor receives it' },
  },
} as const;

export const RULE_SCHEMAS = [
  exclusionSchema,
  criteriaExclusionSchema,
  exclusionAnySchema,
  exclusionListSchema,
  exclusionCreateSchema,
  exclusionUpdateSchema,
  criteriaExclusionCreateSchema,
  criteriaExclusionUpdateSchema,
  exclusionCreateAnySchema,
  exclusionUpdateAnySchema,
  redactionSchema,
  sensitiveRedactionSchema,
  redactionAnySchema,
  redactionListSchema,
  redactionCreateSchema,
  redactionUpdateSchema,
  sensitiveRedactionCreateSchema,
  sensitiveRedactionUpdateSchema,
  redactionCreateAnySchema,
  redactionUpdateAnySchema,
  redactionTypesSchema,
  sdkSettingsSchema,
  sdkSettingValuesSchema,
  sdkSettingsUpdateSchema,
  bucketSdkSettingsSchema,
  redactionPreviewBodySchema,
  sensitiveRedactionPreviewBodySchema,
  redactionPreviewBodyAnySchema,
  redactionPreviewSchema,
  exclusionPreviewBodySchema,
  criteriaExclusionPreviewBodySchema,
  exclusionPreviewBodyAnySchema,
  exclusionPreviewSchema,
] as const;
