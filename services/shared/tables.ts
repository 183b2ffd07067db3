/** The only file that knows ClickHouse table names (STYLE.md rule 1). */
export const TABLES = {
  requests: 'requests',
  processorState: 'processor_offsets',
  migrations: 'schema_migrations',
} as const;

/** Tables holding per-bucket rows (`account_sid`, `bucket_sid`): all emptied when a bucket is deleted. */
export const BUCKET_TABLES: readonly string[] = [TABLES.requests];
