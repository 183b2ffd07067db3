-- The cluster form of ../migrations/009_consumer_duration_moments.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- Each table `t` is `t_local` on every node (ON CLUSTER), behind a Distributed table `t`; views
-- read and write the local tables of their node; ALTER and DROP run ON CLUSTER on the local
-- tables (column changes on the Distributed table too). test/unit/clickhouse-cluster.test.ts
-- checks that this file and the single-server one describe the same schema.
ALTER TABLE consumers_minute_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS duration_sumsq SimpleAggregateFunction(sum, Float64);

ALTER TABLE consumers_minute ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS duration_sumsq SimpleAggregateFunction(sum, Float64);

ALTER TABLE consumers_minute_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS sumsq_count SimpleAggregateFunction(sum, Int64);

ALTER TABLE consumers_minute ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS sumsq_count SimpleAggregateFunction(sum, Int64);

ALTER TABLE consumers_rollup_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS duration_sumsq SimpleAggregateFunction(sum, Float64);

ALTER TABLE consumers_rollup ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS duration_sumsq SimpleAggregateFunction(sum, Float64);

ALTER TABLE consumers_rollup_local ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS sumsq_count SimpleAggregateFunction(sum, Int64);

ALTER TABLE consumers_rollup ON CLUSTER '${CLUSTER}' ADD COLUMN IF NOT EXISTS sumsq_count SimpleAggregateFunction(sum, Int64);

DROP VIEW IF EXISTS consumers_minute_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS consumers_deleted_minute_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS consumers_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

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
        isNotNull(duration)) AS duration_hist,
    sumIf(assumeNotNull(duration) * assumeNotNull(duration), isNotNull(duration)) AS duration_sumsq,
    toInt64(countIf(isNotNull(duration))) AS sumsq_count
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
        isNotNull(duration)) AS duration_hist,
    -sumIf(assumeNotNull(duration) * assumeNotNull(duration), isNotNull(duration)) AS duration_sumsq,
    -toInt64(countIf(isNotNull(duration))) - 4294967296 * toInt64(count()) AS sumsq_count
FROM requests_deleted_local
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

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
    FROM consumers_minute_local
)
ARRAY JOIN [toUInt16(1), 60, 1440, 10080] AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;
