-- The cluster form of ../migrations/014_consumer_hour_blocks_sealed.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- The view reads and writes the local tables of its node.
-- test/unit/clickhouse-cluster.test.ts checks that this file and the single-server one describe
-- the same schema.
DROP VIEW IF EXISTS consumers_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

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
ARRAY JOIN arrayFilter(
    l -> l = 1 OR (intDiv(toUInt32(m), l * 60) + 1) * l * 60 <= toUInt32(now()),
    [toUInt16(1), 60, 1440, 10080]) AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;

