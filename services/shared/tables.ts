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
  /**
   * requests_minute per consumer, rows with a consumer only: the Merge table reading both tables
   * below as one (015_consumer_minutes_by_hour.sql). Every query of consumers' minute rows reads it.
   */
  consumersMinute: 'consumers_minute_all',
  /** The minute rows the views write, keyed by hour, then consumer (015). */
  consumersMinuteByHour: 'consumers_minute_by_hour',
  /** The minute rows written before 015, keyed by consumer first (007): read, not written, until the TTL. */
  consumersMinuteBefore: 'consumers_minute',
  /**
   * consumers' minute rows per consumer and environment in hour, day and week blocks (008, 009,
   * 012, 014), and in single minutes for the inserts before 015.
   */
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
  TABLES.consumersMinuteByHour,
  TABLES.consumersMinuteBefore,
  TABLES.consumersRollup,
  TABLES.consumerLabels,
];
