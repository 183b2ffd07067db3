-- 004: percentile digests become plain histograms, and requests_rollup is filled from
-- requests_minute instead of from the raw rows.
--
-- 1. `duration_hist`, a Map(grid index -> count) summed by sumMap, replaces the quantilesExactWeighted
--    state `duration_digest` in requests_minute and requests_rollup: a Map column is read as two
--    plain arrays, where reading a quantile state rebuilds a hash map per entry (docs/metrics.md,
--    "Query time"). Percentiles are picked from the summed histogram (services/shared/metrics-sql.ts
--    `percentiles`): the grid index at quantileExact's rank floor(level * n) (0-based) of the
--    cumulative counts. Counts are Int64, so a deleted request's compensating row (-1 at its index)
--    takes it out exactly.
-- 2. The grid here has 100 steps per doubling (index = round(log2(ms) * 100), Int16; 0 ms and below
--    = -32768); 006 moves it to 50.
-- 3. requests_rollup_mv reads the rows the minute view writes into requests_minute, and a deletion
--    reaches requests_rollup the same way (requests_deleted -> requests_deleted_minute_mv ->
--    requests_minute -> requests_rollup_mv), so requests_deleted_rollup_mv is gone.
--
-- Schema only: the views are dropped and created with the new definitions, the digest column is
-- replaced. Rows aggregated before this migration keep their counts but have no histogram; a
-- quantile state cannot be converted (its entries cannot be listed in SQL), so on a database that
-- already held requests the aggregates are rebuilt from the raw rows by
-- `npm run admin -- rebuild-metrics` (docs/operations.md "Rebuilding the metrics"), which the
-- migrator names in its log when it applies this file to stored data.
DROP VIEW IF EXISTS requests_minute_mv;
DROP VIEW IF EXISTS requests_rollup_mv;
DROP VIEW IF EXISTS requests_deleted_minute_mv;
DROP VIEW IF EXISTS requests_deleted_rollup_mv;
ALTER TABLE requests_minute DROP COLUMN IF EXISTS duration_digest;
ALTER TABLE requests_rollup DROP COLUMN IF EXISTS duration_digest;
ALTER TABLE requests_minute ADD COLUMN IF NOT EXISTS duration_hist SimpleAggregateFunction(sumMap, Map(Int16, Int64));
ALTER TABLE requests_rollup ADD COLUMN IF NOT EXISTS duration_hist SimpleAggregateFunction(sumMap, Map(Int16, Int64));

-- requests_minute, as in 002_metrics.sql (see the comments there) with the histogram: +1 at the
-- grid index of each record's duration (records without a duration count in no histogram).
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
               toInt16(greatest(-32767, least(32767, round(log2(assumeNotNull(duration)) * 100)))),
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
               toInt16(greatest(-32767, least(32767, round(log2(assumeNotNull(duration)) * 100)))),
               toInt16(-32768)),
            toInt64(-1)),
        isNotNull(duration)) AS duration_hist
FROM requests_deleted
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

-- requests_rollup (the metrics API's read path; levels, dimensions and values as in
-- 002_metrics.sql) from each block written into requests_minute: by the processor's inserts
-- through requests_minute_mv, and by deletions through requests_deleted_minute_mv. `error` rows
-- carry no histogram (errors by endpoint and status code are counts).
-- NOTE: like every table in the insert chain, requests_rollup keeps
-- non_replicated_deduplication_window = 10000: a re-sent block (same insert_deduplication_token,
-- deduplicate_blocks_in_dependent_materialized_views) is dropped here too.
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
    SELECT account_sid, bucket_sid, environment_sid, minute AS m, method AS mt, status_code AS sc, endpoint AS ep,
        requests AS n, errors AS e, blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc,
        duration_min AS dmin, duration_max AS dmax, duration_hist AS h
    FROM requests_minute
)
ARRAY JOIN arrayConcat(
    [('all', ''), ('method', toString(mt)), ('status', toString(sc)), ('endpoint', ep)],
    if(sc >= 400, [('error', concat(toString(sc), ' ', ep))], [])) AS d
ARRAY JOIN [toUInt16(10), 60, 1440] AS lv
GROUP BY account_sid, dim, level, t, bucket_sid, environment_sid, value;
