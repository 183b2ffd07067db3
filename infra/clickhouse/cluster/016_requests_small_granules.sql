-- The cluster form of ../migrations/016_requests_small_granules.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for. The copy's Keeper path ends in its table's
-- UUID, so a run interrupted after the swap and started again never meets a path still in use.
DROP TABLE IF EXISTS requests_regranulated ON CLUSTER '${CLUSTER}' SYNC;

DROP TABLE IF EXISTS requests_regranulated_local ON CLUSTER '${CLUSTER}' SYNC;

CREATE TABLE requests_regranulated_local ON CLUSTER '${CLUSTER}' AS requests_local
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/requests_local/{uuid}', '{replica}')
PARTITION BY toYYYYMMDD(created_at)
ORDER BY (account_sid, bucket_sid, created_at, sid)
TTL toDateTime(created_at) + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 8192, min_bytes_for_wide_part = 268435456, index_granularity_bytes = 1048576;

ALTER TABLE requests_regranulated_local ON CLUSTER '${CLUSTER}' ATTACH PARTITION ALL FROM requests_local;

EXCHANGE TABLES requests_local AND requests_regranulated_local ON CLUSTER '${CLUSTER}';

DROP TABLE IF EXISTS requests_regranulated ON CLUSTER '${CLUSTER}' SYNC;

DROP TABLE IF EXISTS requests_regranulated_local ON CLUSTER '${CLUSTER}' SYNC;
