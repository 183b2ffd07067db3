/**
 * API types, derived from the JSON Schemas in `schemas/` (the API's own contract) with
 * json-schema-to-ts: a schema change is a type error here, never a silent mismatch.
 * Only types are imported, so nothing of `schemas/` reaches the bundle.
 */
import type { FromSchema } from 'json-schema-to-ts';
import type { bucketSchema } from '../../../schemas/bucket.schema';
import type {
  consumerDetailSchema,
  consumerIdentificationPreviewSchema,
  consumerSummarySchema,
  consumerUpdateSchema,
  IdentificationSource,
} from '../../../schemas/consumers.schema';
import type { eventCreateSchema, eventSchema } from '../../../schemas/events.schema';
import type {
  metricsErrorsSchema,
  metricsEventSchema,
  metricsPerformanceSchema,
  responseTimePeriodsSchema,
  comparisonSummarySchema,
  throughputPeriodsSchema,
} from '../../../schemas/metrics.schema';
import type { requestRecordSchema } from '../../../schemas/request-record.schema';
import type { streamViewSchema } from '../../../schemas/stream-view.schema';

type WithEvents = { references: [typeof metricsEventSchema] };

export type Bucket = FromSchema<typeof bucketSchema>;
export type ConsumerSummary = FromSchema<typeof consumerSummarySchema>;
export type ConsumerDetail = FromSchema<typeof consumerDetailSchema>;
export type ConsumerUpdate = FromSchema<typeof consumerUpdateSchema>;
export type { IdentificationSource };
/** A bucket's identification sources (GET/PUT …/consumerIdentification), every default written out. */
export interface ConsumerIdentification {
  bucketSid: string;
  sources: IdentificationSource[];
  updatedAt: string | null;
}
export type IdentificationPreview = FromSchema<typeof consumerIdentificationPreviewSchema>;
export type EventMarker = FromSchema<typeof eventSchema>;
export type EventCreate = FromSchema<typeof eventCreateSchema>;
export type MetricsEvent = FromSchema<typeof metricsEventSchema>;
export type RequestRecord = FromSchema<typeof requestRecordSchema>;
export type StreamView = FromSchema<typeof streamViewSchema>;
export type ComparisonSummary = FromSchema<typeof comparisonSummarySchema>;
export type ThroughputPeriods = FromSchema<typeof throughputPeriodsSchema, WithEvents>;
export type ResponseTimePeriods = FromSchema<typeof responseTimePeriodsSchema, WithEvents>;
export type Performance = FromSchema<typeof metricsPerformanceSchema>;
export type MetricsErrors = FromSchema<typeof metricsErrorsSchema>;

/** `{hasMore, records}` of every list endpoint (docs/search.md). */
export interface List<T> {
  hasMore: boolean;
  records: T[];
}
