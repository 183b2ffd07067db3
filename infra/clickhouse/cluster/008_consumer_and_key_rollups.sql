-- The cluster form of ../migrations/008_consumer_and_key_rollups.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- Each table `t` is `t_local` on every node (ON CLUSTER), with the Replicated engine (Keeper path
-- and `{replica}` first, `replicated_deduplication_window` for the insert deduplication tokens),
-- behind a Distributed table `t` sharded by cityHash64(bucket_sid) where the table has a bucket
-- (one bucket's rows, aggregates and deletions on one shard), by rand() otherwise. Views read and
-- write the local tables of their node; ALTER and DROP run ON CLUSTER on the local
-- tables (column changes on the Distributed table too). test/unit/clickhouse-cluster.test.ts
-- checks that this file and the single-server one describe the same schema.
DROP VIEW IF EXISTS consumers_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS consumer_endpoints_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS requests_key_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

CREATE TABLE IF NOT EXISTS consumers_rollup_local ON CLUSTER '${CLUSTER}'
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    level            UInt16,
    t                DateTime('UTC'),
    consumer_id      String,
    environment_sid  LowCardinality(String),
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
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/consumers_rollup_local', '{replica}')
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, bucket_sid, level, t, consumer_id, environment_sid)
TTL t + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS consumers_rollup ON CLUSTER '${CLUSTER}' AS consumers_rollup_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), consumers_rollup_local, cityHash64(bucket_sid));

CREATE TABLE IF NOT EXISTS consumer_endpoints_rollup_local ON CLUSTER '${CLUSTER}'
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    consumer_id      String,
    level            UInt16,
    t                DateTime('UTC'),
    environment_sid  LowCardinality(String),
    method           LowCardinality(String),
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
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/consumer_endpoints_rollup_local', '{replica}')
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, bucket_sid, consumer_id, level, t, environment_sid, method, endpoint)
TTL t + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS consumer_endpoints_rollup ON CLUSTER '${CLUSTER}' AS consumer_endpoints_rollup_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), consumer_endpoints_rollup_local, cityHash64(bucket_sid));

CREATE TABLE IF NOT EXISTS requests_key_rollup_local ON CLUSTER '${CLUSTER}'
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    level            UInt16,
    t                DateTime('UTC'),
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
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/requests_key_rollup_local', '{replica}')
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, bucket_sid, level, t, environment_sid, method, status_code, endpoint)
TTL t + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS requests_key_rollup ON CLUSTER '${CLUSTER}' AS requests_key_rollup_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), requests_key_rollup_local, cityHash64(bucket_sid));

CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_rollup_mv ON CLUSTER '${CLUSTER}' TO consumers_rollup_local AS
SELECT
    account_sid,
    bucket_sid,
    lv AS level,
    toDateTime(intDiv(toUInt32(m), lv * 60) * lv * 60, 'UTC') AS t,
    consumer_id,
    environment_sid,
    sum(n) AS requests,
    sum(e) AS errors,
    sum(b) AS blocked,
    sum(bt) AS bytes,
    sum(ds) AS duration_sum,
    sum(dc) AS duration_count,
    min(dmin) AS duration_min,
    max(dmax) AS duration_max,
    sumMap(h) AS duration_hist
FROM
(
    SELECT account_sid, bucket_sid, consumer_id, environment_sid, minute AS m, requests AS n, errors AS e,
        blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc, duration_min AS dmin,
        duration_max AS dmax, duration_hist AS h
    FROM consumers_minute_local
)
ARRAY JOIN [toUInt16(1), 10, 60, 1440] AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;

CREATE MATERIALIZED VIEW IF NOT EXISTS consumer_endpoints_rollup_mv ON CLUSTER '${CLUSTER}' TO consumer_endpoints_rollup_local AS
SELECT
    account_sid,
    bucket_sid,
    consumer_id,
    lv AS level,
    toDateTime(intDiv(toUInt32(m), lv * 60) * lv * 60, 'UTC') AS t,
    environment_sid,
    method,
    endpoint,
    sum(n) AS requests,
    sum(e) AS errors,
    sum(b) AS blocked,
    sum(bt) AS bytes,
    sum(ds) AS duration_sum,
    sum(dc) AS duration_count,
    min(dmin) AS duration_min,
    max(dmax) AS duration_max,
    sumMap(h) AS duration_hist
FROM
(
    SELECT account_sid, bucket_sid, consumer_id, environment_sid, method, endpoint, minute AS m, requests AS n,
        errors AS e, blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc, duration_min AS dmin,
        duration_max AS dmax, duration_hist AS h
    FROM consumers_minute_local
)
ARRAY JOIN [toUInt16(60), 1440] AS lv
GROUP BY account_sid, bucket_sid, consumer_id, level, t, environment_sid, method, endpoint;

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_key_rollup_mv ON CLUSTER '${CLUSTER}' TO requests_key_rollup_local AS
SELECT
    account_sid,
    bucket_sid,
    lv AS level,
    toDateTime(intDiv(toUInt32(m), lv * 60) * lv * 60, 'UTC') AS t,
    environment_sid,
    method,
    status_code,
    endpoint,
    sum(n) AS requests,
    sum(e) AS errors,
    sum(b) AS blocked,
    sum(bt) AS bytes,
    sum(ds) AS duration_sum,
    sum(dc) AS duration_count,
    min(dmin) AS duration_min,
    max(dmax) AS duration_max,
    sumMap(h) AS duration_hist
FROM
(
    SELECT account_sid, bucket_sid, environment_sid, method, status_code, endpoint, minute AS m, requests AS n,
        errors AS e, blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc, duration_min AS dmin,
        duration_max AS dmax, duration_hist AS h
    FROM requests_minute_local
)
ARRAY JOIN [toUInt16(60), 1440] AS lv
GROUP BY account_sid, bucket_sid, level, t, environment_sid, method, status_code, endpoint;
