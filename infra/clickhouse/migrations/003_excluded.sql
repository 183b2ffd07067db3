-- Records dropped by exclusion rules, counted per bucket and minute (they are never stored in
-- `requests`). Written by the processor once per Kafka block, with the block's deduplication token
-- plus ':excluded', so a block re-sent after a crash is not counted twice. `minute` is the minute
-- of the record's createdAt. Read by GET /v1/accounts/{a}/buckets/{b}/stats (docs/processing.md).
CREATE TABLE IF NOT EXISTS excluded_minute
(
    account_sid  LowCardinality(String),
    bucket_sid   LowCardinality(String),
    minute       DateTime('UTC'),
    excluded     SimpleAggregateFunction(sum, Int64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, minute)
TTL minute + toIntervalDay(${RETENTION_DAYS})
SETTINGS non_replicated_deduplication_window = 10000;
