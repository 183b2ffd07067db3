-- 006: duration histograms on a grid of 50 steps per doubling instead of 100, and rollup rows for
-- all environments together.
--
-- 1. `duration_hist` counts each duration at index round(log2(ms) * 50) (0 ms and below: -32768),
--    read back as exp2(index / 50) (services/shared/metrics-sql.ts HIST_GRID): within
--    2^(1/100) - 1 = 0.69% of the duration (the bound asked for is 1%), with about half the entries
--    per histogram, so a percentile query sums (sumMap) and every insert writes about half as many.
-- 2. Every (dimension, value, level, block, bucket) of requests_rollup also has a row with
--    environment_sid = '*' holding the sum of its environments' rows (counts, sums, min/max and
--    the histogram). A metrics query without an environment (the API's default and the
--    dashboard's "All environments") reads the '*' rows, one histogram per group and block instead
--    of one per environment. A query for one environment reads that environment's rows;
--    `groupBy=environment` every row but the '*' ones (services/api/metrics/metrics-queries.ts `blocksOf`).
--    requests_minute has no '*' rows: the edge minutes of a range are summed per environment. No
--    environment sid is '*' (an environment sid is 6 letters or digits: schemas/common.schema.ts).
--    Deletions reach the '*' rows as they reach the others (requests_deleted -> requests_minute ->
--    requests_rollup_mv). Costs and gains: docs/metrics.md ("Query time").
--
-- Schema only: the three views are dropped and created with the new grid and the '*' rows.
-- Histograms of two grids must never be summed together, so on a database that already held
-- requests the aggregates are rebuilt from the raw rows by `npm run admin -- rebuild-metrics`
-- (docs/operations.md "Rebuilding the metrics"), which the migrator names in its log when it
-- applies this file to stored data.
-- NOTE: the views are created anew, not changed with `ALTER TABLE … MODIFY QUERY` (005 says why).
DROP VIEW IF EXISTS requests_minute_mv;
DROP VIEW IF EXISTS requests_rollup_mv;
DROP VIEW IF EXISTS requests_deleted_minute_mv;

-- requests_minute as in 004_duration_histograms.sql (see the comments there), on the grid of 50.
CREATE MATERIALIZED VIEW IF NOT EXISTS requests_minute_mv TO requests_minute AS
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
FROM requests
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

-- Deleting a request (services/api/requests/requests.repository.ts delete()): negated counts, and -1 at its
-- duration's grid index.
CREATE MATERIALIZED VIEW IF NOT EXISTS requests_deleted_minute_mv TO requests_minute AS
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
FROM requests_deleted
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

-- requests_rollup_mv as in 005_six_hour_rollup.sql (levels 10, 60, 360 and 1440; see the comments
-- there and in 004), each requests_minute row aggregated for its environment and for '*'.
CREATE MATERIALIZED VIEW IF NOT EXISTS requests_rollup_mv TO requests_rollup AS
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
    FROM requests_minute
)
ARRAY JOIN [es, '*'] AS environment_sid
ARRAY JOIN arrayConcat(
    [('all', ''), ('method', toString(mt)), ('status', toString(sc)), ('endpoint', ep)],
    if(sc >= 400, [('error', concat(toString(sc), ' ', ep))], [])) AS d
ARRAY JOIN [toUInt16(10), 60, 360, 1440] AS lv
GROUP BY account_sid, dim, level, t, bucket_sid, environment_sid, value;
