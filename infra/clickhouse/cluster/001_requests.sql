-- The cluster form of ../migrations/001_requests.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- Each table `t` is `t_local` on every node (ON CLUSTER), with the Replicated engine (Keeper path
-- and `{replica}` first, `replicated_deduplication_window` for the insert deduplication tokens),
-- behind a Distributed table `t` sharded by cityHash64(bucket_sid) where the table has a bucket
-- (one bucket's rows, aggregates and deletions on one shard), by rand() otherwise. Views read and
-- write the local tables of their node; ALTER and DROP run ON CLUSTER on the local
-- tables (column changes on the Distributed table too). test/unit/clickhouse-cluster.test.ts
-- checks that this file and the single-server one describe the same schema.
CREATE TABLE IF NOT EXISTS requests_local ON CLUSTER '${CLUSTER}'
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
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/requests_local', '{replica}')
PARTITION BY toYYYYMMDD(created_at)
ORDER BY (account_sid, bucket_sid, created_at, sid)
TTL toDateTime(created_at) + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 8192;

CREATE TABLE IF NOT EXISTS requests ON CLUSTER '${CLUSTER}' AS requests_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), requests_local, cityHash64(bucket_sid));

CREATE TABLE IF NOT EXISTS processor_offsets_local ON CLUSTER '${CLUSTER}'
(
    topic       LowCardinality(String),
    partition   UInt16,
    min_offset  UInt64,
    max_offset  UInt64,
    updated_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/processor_offsets_local', '{replica}', updated_at)
ORDER BY (topic, partition);

CREATE TABLE IF NOT EXISTS processor_offsets ON CLUSTER '${CLUSTER}' AS processor_offsets_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), processor_offsets_local, rand());
