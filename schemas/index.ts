/**
 * Every JSON Schema with an `$id`: the single source for validation (ajv), response
 * serialisation (Fastify), TypeScript types (json-schema-to-ts `FromSchema`, next to each schema
 * and through the API's type provider) and the OpenAPI document.
 */
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import { actionJobSchema } from './action-job.schema.js';
import { ALERT_SCHEMAS } from './alert.schema.js';
import { ACCOUNT_SCHEMAS } from './account.schema.js';
import { AUTH_SCHEMAS } from './auth.schema.js';
import { bucketCreateSchema, bucketListSchema, bucketSchema, bucketUpdateSchema } from './bucket.schema.js';
import { CONSUMER_SCHEMAS } from './consumers.schema.js';
import { deletedSchema, errorSchema, type Closed } from './common.schema.js';
import { ENDPOINT_TEMPLATE_SCHEMAS } from './endpoint-template.schema.js';
import { EVENT_SCHEMAS } from './events.schema.js';
import { STREAM_VIEW_SCHEMAS } from './stream-view.schema.js';
import {
  ingestBodySchema,
  ingestRecordSchema,
  ingestResultSchema,
  kafkaRequestHeaderSchema,
  kafkaRequestItemSchema,
  requestPartSchema,
  requestRecordSchema,
  responsePartSchema,
  sdkCallSchema,
  timingsSchema,
} from './request-record.schema.js';
import { TOKEN_SCHEMAS } from './tokens.schema.js';
import { RULE_SCHEMAS } from './rules.schema.js';
import { WORKFLOW_SCHEMAS } from './workflow.schema.js';
import { METRICS_SCHEMAS } from './metrics.schema.js';
import { SLO_SCHEMAS } from './slo.schema.js';

export const ALL_SCHEMAS = [
  errorSchema,
  deletedSchema,
  requestPartSchema,
  responsePartSchema,
  timingsSchema,
  ingestRecordSchema,
  ingestBodySchema,
  ingestResultSchema,
  requestRecordSchema,
  kafkaRequestHeaderSchema,
  kafkaRequestItemSchema,
  sdkCallSchema,
  bucketSchema,
  bucketListSchema,
  bucketCreateSchema,
  bucketUpdateSchema,
  ...EVENT_SCHEMAS,
  ...STREAM_VIEW_SCHEMAS,
  actionJobSchema,
  ...TOKEN_SCHEMAS,
  ...RULE_SCHEMAS,
  ...WORKFLOW_SCHEMAS,
  ...ALERT_SCHEMAS,
  ...METRICS_SCHEMAS,
  ...SLO_SCHEMAS,
  ...AUTH_SCHEMAS,
  ...ACCOUNT_SCHEMAS,
  ...CONSUMER_SCHEMAS,
  ...ENDPOINT_TEMPLATE_SCHEMAS,
] as const satisfies readonly { $id: string }[];

/** Every registered schema, as the `references` of `FromSchema`, so that a `$ref` to an `$id` resolves. */
export type SchemaReferences = [...typeof ALL_SCHEMAS];

/** The `$id` of a registered schema. */
export type SchemaId = SchemaReferences[number]['$id'];

/** The type of the data a registered schema (or one that `$ref`s registered ones) describes. */
export type FromSchemas<S extends JSONSchema> = FromSchema<S, { references: SchemaReferences }>;

/** The type of a reply a registered schema (or one that `$ref`s registered ones) serialises. */
export type Reply<S extends JSONSchema> = Closed<FromSchemas<S>>;

export type { Closed };

/** `{ $ref: 'id#' }` to a registered schema; an unknown id is a type error. */
export const ref = <const Id extends SchemaId>(id: Id) => ({ $ref: `${id}#` }) as const;
