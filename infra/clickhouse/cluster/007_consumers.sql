-- The cluster form of ../migrations/007_consumers.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- Each table `t` is `t_local` on every node (ON CLUSTER), with the Replicated engine (Keeper path
-- and `{replica}` first, `replicated_deduplication_window` for the insert deduplication tokens),
-- behind a Distributed table `t` sharded by cityHash64(bucket_sid) where the table has a bucket
-- (one bucket's rows, aggregates and deletions on one shard), by rand() otherwise. Views read and
-- write the local tables of their node; ALTER and DROP run ON CLUSTER on the local
-- tables (column changes on the Distributed table too). test/unit/clickhouse-cluster.test.ts
-- checks that this file and the single-server one describe the same schema.
ALTER TABLE requests_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_id String;

ALTER TABLE requests ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_id String;

ALTER TABLE requests_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_name String;

ALTER TABLE requests ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_name String;

ALTER TABLE requests_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_group LowCardinality(String);

ALTER TABLE requests ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_group LowCardinality(String);

ALTER TABLE requests_deleted_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_id String;

ALTER TABLE requests_deleted ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS consumer_id String;

CREATE TABLE IF NOT EXISTS consumers_minute_local ON CLUSTER '${CLUSTER}'
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    consumer_id      String,
    minute           DateTime('UTC'),
    environment_sid  LowCardinality(String),
    method           LowCardinality(String),
    status_code      UInt16,
    endpoint         String,
    requests         SimpleAggregateFunction(sum, Int64),
    errors           SimpleAggregateFunction(sum, Int64),
    blocked          SimpleAggregateFunction(sum, Int64),
    bytes            SimpleAggregateFunction(sum, Int64),
    duration_sum     SimpleAggregateFunction(sum, Float64),
    duration_count   SimpleAggregateFunction(sum, Int64),
    duration_min     SimpleAggregateFunction(min, Nullable(Float64)),
    duration_max     SimpleAggregateFunction(max, Nullable(Float64)),
    duration_hist    SimpleAggregateFunction(sumMap, Map(Int16, Int64))
)
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/consumers_minute_local', '{replica}')
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint)
TTL minute + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS consumers_minute ON CLUSTER '${CLUSTER}' AS consumers_minute_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), consumers_minute_local, cityHash64(bucket_sid));

CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_minute_mv ON CLUSTER '${CLUSTER}' TO consumers_minute_local AS
SELECT
    account_sid,
    bucket_sid,
    consumer_id,
    toDateTime(toStartOfMinute(created_at), 'UTC') AS minute,
    environment_sid,
    method,
    status_code,
    endpoint,
    toInt64(count()) AS requests,
    toInt64(countIf(status_code >= 400)) AS errors,
    toInt64(sum(blocked)) AS blocked,
    toInt64(sum(request_size + response_size)) AS bytes,
    sumIf(assumeNotNull(duration), isNotNull(duration)) AS duration_sum,
    toInt64(countIf(isNotNull(duration))) AS duration_count,
    min(duration) AS duration_min,
    max(duration) AS duration_max,
    sumMapIf(
        map(if(assumeNotNull(duration) > 0,
               toInt16(greatest(-32767, least(32767, round(log2(assumeNotNull(duration)) * 50)))),
               toInt16(-32768)),
            toInt64(1)),
        isNotNull(duration)) AS duration_hist
FROM requests_local
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_deleted_minute_mv ON CLUSTER '${CLUSTER}' TO consumers_minute_local AS
SELECT
    account_sid,
    bucket_sid,
    consumer_id,
    toDateTime(toStartOfMinute(created_at), 'UTC') AS minute,
    environment_sid,
    method,
    status_code,
    endpoint,
    -toInt64(count()) AS requests,
    -toInt64(countIf(status_code >= 400)) AS errors,
    -toInt64(sum(blocked)) AS blocked,
    -toInt64(sum(request_size + response_size)) AS bytes,
    -sumIf(assumeNotNull(duration), isNotNull(duration)) AS duration_sum,
    -toInt64(countIf(isNotNull(duration))) AS duration_count,
    CAST(NULL AS Nullable(Float64)) AS duration_min,
    CAST(NULL AS Nullable(Float64)) AS duration_max,
    sumMapIf(
        map(if(assumeNotNull(duration) > 0,
               toInt16(greatest(-32767, least(32767, round(log2(assumeNotNull(duration)) * 50)))),
               toInt16(-32768)),
            toInt64(-1)),
        isNotNull(duration)) AS duration_hist
FROM requests_deleted_local
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

CREATE TABLE IF NOT EXISTS consumer_labels_local ON CLUSTER '${CLUSTER}'
(
    account_sid  LowCardinality(String),
    bucket_sid   LowCardinality(String),
    consumer_id  String,
    first_seen   SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    last_seen    SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    name         AggregateFunction(argMax, String, DateTime64(3, 'UTC')),
    name_at      SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    grp          AggregateFunction(argMax, String, DateTime64(3, 'UTC')),
    group_at     SimpleAggregateFunction(max, DateTime64(3, 'UTC'))
)
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/consumer_labels_local', '{replica}')
ORDER BY (account_sid, bucket_sid, consumer_id)
SETTINGS replicated_deduplication_window = 10000;

CREATE TABLE IF NOT EXISTS consumer_labels ON CLUSTER '${CLUSTER}' AS consumer_labels_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), consumer_labels_local, cityHash64(bucket_sid));

CREATE MATERIALIZED VIEW IF NOT EXISTS consumer_labels_mv ON CLUSTER '${CLUSTER}' TO consumer_labels_local AS
SELECT
    account_sid,
    bucket_sid,
    consumer_id,
    min(created_at) AS first_seen,
    max(created_at) AS last_seen,
    argMaxStateIf(consumer_name, created_at, consumer_name != '') AS name,
    maxIf(created_at, consumer_name != '') AS name_at,
    argMaxStateIf(toString(consumer_group), created_at, consumer_group != '') AS grp,
    maxIf(created_at, consumer_group != '') AS group_at
FROM requests_local
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id;
