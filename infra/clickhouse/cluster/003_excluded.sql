-- The cluster form of ../migrations/003_excluded.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- Each table `t` is `t_local` on every node (ON CLUSTER), with the Replicated engine (Keeper path
-- and `{replica}` first, `replicated_deduplication_window` for the insert deduplication tokens),
-- behind a Distributed table `t` sharded by cityHash64(bucket_sid) where the table has a bucket
-- (one bucket's rows, aggregates and deletions on one shard), by rand() otherwise. Views read and
-- write the local tables of their node; ALTER and DROP run ON CLUSTER on the local
-- tables (column changes on the Distributed table too). test/unit/clickhouse-cluster.test.ts
-- checks that this file and the single-server one describe the same schema.
CREATE TABLE IF NOT EXISTS excluded_minute_local ON CLUSTER '${CLUSTER}'
(
    account_sid  LowCardinality(String),
    bucket_sid   LowCardinality(String),
    minute       DateTime('UTC'),
    excluded     SimpleAggregateFunction(sum, Int64)
)
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/excluded_minute_local', '{replica}')
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, minute)
TTL minute + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000;

CREATE TABLE IF NOT EXISTS excluded_minute ON CLUSTER '${CLUSTER}' AS excluded_minute_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), excluded_minute_local, cityHash64(bucket_sid));
