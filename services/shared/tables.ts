/** The only file that knows ClickHouse table names (docs/architecture.md, convention 1). */
export const TABLES = {
  requests: 'requests',
  /** Per-minute aggregates filled by the materialized view `requests_minute_mv` (002_metrics.sql). */
  requestsMinute: 'requests_minute',
  /** requests_minute per dimension and time block (`requests_rollup_mv`): the metrics API's read path. */
  requestsRollup: 'requests_rollup',
  /** Null table: a deleted request's row, written negated into both aggregates by materialized views. */
  requestsDeleted: 'requests_deleted',
  /** requests_minute with its whole key in hour and day blocks (008): SLO windows and daily series. */
  requestsKeyRollup: 'requests_key_rollup',
  /** Records dropped by exclusion rules, per bucket and minute (003_excluded.sql). */
  excludedMinute: 'excluded_minute',
  /** requests_minute per consumer, rows with a consumer only (007_consumers.sql). */
  consumersMinute: 'consumers_minute',
  /** consumers_minute per consumer and environment in minute, hour, day and week blocks (008, 009, 011). */
  consumersRollup: 'consumers_rollup',
  /** Per bucket and consumer: first/last seen and the latest name and group records carried. */
  consumerLabels: 'consumer_labels',
  processorState: 'processor_offsets',
  migrations: 'schema_migrations',
} as const;

/** Tables holding per-bucket rows (`account_sid`, `bucket_sid`): all emptied when a bucket is deleted. */
export const BUCKET_TABLES: readonly string[] = [
  TABLES.requests,
  TABLES.requestsMinute,
  TABLES.requestsRollup,
  TABLES.requestsKeyRollup,
  TABLES.excludedMinute,
  TABLES.consumersMinute,
  TABLES.consumersRollup,
  TABLES.consumerLabels,
];
