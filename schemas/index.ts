/**
 * Every JSON Schema with an `$id`: the single source for validation (ajv), response
 * serialisation (Fastify), TypeScript types (json-schema-to-ts) and the OpenAPI document.
 */
import { actionJobSchema } from './action-job.schema.js';
import { ACCOUNT_SCHEMAS } from './account.schema.js';
import { AUTH_SCHEMAS } from './auth.schema.js';
import { bucketCreateSchema, bucketListSchema, bucketSchema, bucketUpdateSchema } from './bucket.schema.js';
import { deletedSchema, errorSchema } from './common.schema.js';
import { EVENT_SCHEMAS } from './events.schema.js';
import { STREAM_VIEW_SCHEMAS } from './stream-view.schema.js';
import {
  ingestBodySchema,
  ingestRecordSchema,
  ingestResultSchema,
  kafkaRequestBatchSchema,
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

export const ALL_SCHEMAS: readonly { $id: string }[] = [
  errorSchema,
  deletedSchema,
  requestPartSchema,
  responsePartSchema,
  timingsSchema,
  ingestRecordSchema,
  ingestBodySchema,
  ingestResultSchema,
  requestRecordSchema,
  kafkaRequestBatchSchema,
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
  ...METRICS_SCHEMAS,
  ...AUTH_SCHEMAS,
  ...ACCOUNT_SCHEMAS,
];
