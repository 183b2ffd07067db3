-- Raw captured traffic, one row per request record, after exclusion and redaction.
-- Ordered for the API's access path: one account, one bucket, a time range, newest first.
-- Partitioned by day so retention drops whole parts; TTL follows RETENTION_DAYS (re-applied at start).
-- NOTE: non_replicated_deduplication_window makes an insert retried with the same
-- insert_deduplication_token a no-op (the processor's exactly-once design, see processor README);
-- every materialized-view target needs the same setting or re-sent blocks count twice there.
CREATE TABLE IF NOT EXISTS requests
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    sid              String,
    environment_sid  LowCardinality(String),
    context_sid      String,
    direction        LowCardinality(String),
    created_at       DateTime64(3, 'UTC'),
    received_at      DateTime64(3, 'UTC'),
    stored_at        DateTime64(3, 'UTC') DEFAULT now64(3),
    method           LowCardinality(String),
    host             String,
    path             String,
    endpoint         String,
    status_code      UInt16,
    duration         Nullable(Float64),
    request_size     UInt64,
    response_size    UInt64,
    blocked          UInt8,
    tags             Map(String, String),
    record           String CODEC(ZSTD(1)),
    kafka_partition  UInt16,
    kafka_offset     UInt64,
    INDEX idx_sid sid TYPE bloom_filter(0.01) GRANULARITY 4,
    INDEX idx_path path TYPE tokenbf_v1(4096, 3, 0) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(created_at)
ORDER BY (account_sid, bucket_sid, created_at, sid)
TTL toDateTime(created_at) + toIntervalDay(${RETENTION_DAYS})
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 8192;

-- Processor state per Kafka partition: the offset range of the last block written to ClickHouse,
-- recorded before the insert. After a crash the same range is re-sent with the same
-- deduplication token (design of the ClickHouse Kafka Connect sink's exactly-once mode).
CREATE TABLE IF NOT EXISTS processor_offsets
(
    topic       LowCardinality(String),
    partition   UInt16,
    min_offset  UInt64,
    max_offset  UInt64,
    updated_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (topic, partition);
