/**
 * Every JSON Schema with an `$id`: the single source for validation (ajv), response
 * serialisation (Fastify), TypeScript types (json-schema-to-ts) and the OpenAPI document.
 */
import { bucketCreateSchema, bucketListSchema, bucketSchema, bucketUpdateSchema } from './bucket.schema.js';
import { deletedSchema, errorSchema } from './common.schema.js';
import {
  ingestBodySchema,
  ingestRecordSchema,
  ingestResultSchema,
  kafkaRequestBatchSchema,
  requestPartSchema,
  requestRecordSchema,
  responsePartSchema,
  sdkCallSchema,
  timingsSchema,
} from './request-record.schema.js';

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
  sdkCallSchema,
  bucketSchema,
  bucketListSchema,
  bucketCreateSchema,
  bucketUpdateSchema,
];
