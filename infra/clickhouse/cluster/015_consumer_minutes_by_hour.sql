-- The cluster form of ../migrations/015_consumer_minutes_by_hour.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- The views read and write the local tables of their node. `consumers_minute_all_local` reads both
-- local tables of its node, and `consumers_minute_all` every shard's.
-- test/unit/clickhouse-cluster.test.ts checks that this file and the single-server one describe
-- the same schema.
DROP VIEW IF EXISTS consumers_minute_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS consumers_deleted_minute_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS consumers_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

CREATE TABLE IF NOT EXISTS consumers_minute_by_hour_local ON CLUSTER '${CLUSTER}'
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
    duration_hist    SimpleAggregateFunction(sumMap, Map(Int16, Int64)),
    duration_sumsq   SimpleAggregateFunction(sum, Float64),
    sumsq_count      SimpleAggregateFunction(sum, Int64)
)
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/consumers_minute_by_hour_local', '{replica}')
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, toStartOfHour(minute), consumer_id, toMinute(minute), environment_sid, method, status_code, endpoint)
TTL minute + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS consumers_minute_by_hour ON CLUSTER '${CLUSTER}' AS consumers_minute_by_hour_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), consumers_minute_by_hour_local, cityHash64(bucket_sid));

CREATE TABLE IF NOT EXISTS consumers_minute_all_local ON CLUSTER '${CLUSTER}'
AS consumers_minute_by_hour_local
ENGINE = Merge(currentDatabase(), '^consumers_minute_local$|^consumers_minute_by_hour_local$');

CREATE TABLE IF NOT EXISTS consumers_minute_all ON CLUSTER '${CLUSTER}' AS consumers_minute_all_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), consumers_minute_all_local, rand());

-- consumers_minute_mv and consumers_deleted_minute_mv as in 009_consumer_duration_moments.sql (see
-- the comments there and in 007_consumers.sql), writing the new table.
CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_minute_mv ON CLUSTER '${CLUSTER}' TO consumers_minute_by_hour_local AS
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
        isNotNull(duration)) AS duration_hist,
    sumIf(assumeNotNull(duration) * assumeNotNull(duration), isNotNull(duration)) AS duration_sumsq,
    toInt64(countIf(isNotNull(duration))) AS sumsq_count
FROM requests_local
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_deleted_minute_mv ON CLUSTER '${CLUSTER}' TO consumers_minute_by_hour_local AS
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
        isNotNull(duration)) AS duration_hist,
    -sumIf(assumeNotNull(duration) * assumeNotNull(duration), isNotNull(duration)) AS duration_sumsq,
    -toInt64(countIf(isNotNull(duration))) - 4294967296 * toInt64(count()) AS sumsq_count
FROM requests_deleted_local
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

-- consumers_rollup_mv as in 014_consumer_hour_blocks_sealed.sql, without single minutes: it writes a
-- block only once it has ended at the insert (`now()`), so a record of the current hour, day and
-- week adds no rollup row here.
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
    sumMap(h) AS duration_hist,
    sum(dss) AS duration_sumsq,
    sum(ssc) AS sumsq_count
FROM
(
    SELECT account_sid, bucket_sid, consumer_id, environment_sid, minute AS m, requests AS n, errors AS e,
        blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc, duration_min AS dmin,
        duration_max AS dmax, duration_hist AS h, duration_sumsq AS dss, sumsq_count AS ssc
    FROM consumers_minute_by_hour_local
    -- Only a minute whose hour has ended can be in an ended block: the rows of the current hour
    -- (nearly all of an insert's) leave the view here.
    WHERE minute < toStartOfHour(now())
)
ARRAY JOIN arrayFilter(
    l -> (intDiv(toUInt32(m), l * 60) + 1) * l * 60 <= toUInt32(now()),
    [toUInt16(60), 1440, 10080]) AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;
