-- The cluster form of ../migrations/006_duration_grid_all_environments.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- Each table `t` is `t_local` on every node (ON CLUSTER), with the Replicated engine (Keeper path
-- and `{replica}` first, `replicated_deduplication_window` for the insert deduplication tokens),
-- behind a Distributed table `t` sharded by cityHash64(bucket_sid) where the table has a bucket
-- (one bucket's rows, aggregates and deletions on one shard), by rand() otherwise. Views read and
-- write the local tables of their node; ALTER and DROP run ON CLUSTER on the local
-- tables (column changes on the Distributed table too). test/unit/clickhouse-cluster.test.ts
-- checks that this file and the single-server one describe the same schema.
DROP VIEW IF EXISTS requests_minute_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS requests_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP VIEW IF EXISTS requests_deleted_minute_mv ON CLUSTER '${CLUSTER}' SYNC;

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_minute_mv ON CLUSTER '${CLUSTER}' TO requests_minute_local AS
SELECT
    account_sid,
    bucket_sid,
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
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_deleted_minute_mv ON CLUSTER '${CLUSTER}' TO requests_minute_local AS
SELECT
    account_sid,
    bucket_sid,
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
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_rollup_mv ON CLUSTER '${CLUSTER}' TO requests_rollup_local AS
SELECT
    account_sid,
    d.1 AS dim,
    lv AS level,
    toDateTime(intDiv(toUInt32(m), lv * 60) * lv * 60, 'UTC') AS t,
    bucket_sid,
    environment_sid,
    d.2 AS value,
    sum(n) AS requests,
    sum(e) AS errors,
    sum(b) AS blocked,
    sum(bt) AS bytes,
    sum(ds) AS duration_sum,
    sum(dc) AS duration_count,
    min(dmin) AS duration_min,
    max(dmax) AS duration_max,
    sumMapIf(h, d.1 != 'error') AS duration_hist
FROM
(
    SELECT account_sid, bucket_sid, environment_sid AS es, minute AS m, method AS mt, status_code AS sc, endpoint AS ep,
        requests AS n, errors AS e, blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc,
        duration_min AS dmin, duration_max AS dmax, duration_hist AS h
    FROM requests_minute_local
)
ARRAY JOIN [es, '*'] AS environment_sid
ARRAY JOIN arrayConcat(
    [('all', ''), ('method', toString(mt)), ('status', toString(sc)), ('endpoint', ep)],
    if(sc >= 400, [('error', concat(toString(sc), ' ', ep))], [])) AS d
ARRAY JOIN [toUInt16(10), 60, 360, 1440] AS lv
GROUP BY account_sid, dim, level, t, bucket_sid, environment_sid, value;
