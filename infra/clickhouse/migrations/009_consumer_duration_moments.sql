-- The second moment of each consumer's durations, for the consumers list sorted by p95, and week
-- blocks in consumers_rollup
-- (services/api/consumers/consumer-stats.sql.ts P95_UPPER_BOUND, docs/consumers.md).
--
-- The list sorted by p95 merges the duration histograms of a few candidates only, picked by an
-- upper bound of each consumer's p95 computed from plain sums. The count, sum, min and max alone
-- bound a consumer with a few dozen calls no lower than its slowest call; with the sum of squares
-- the bound follows the spread of its durations (Cantelli's inequality), and with the slowest call
-- taken out of the sums it no longer depends on that one call.
--
-- `consumers_minute` and `consumers_rollup` gain:
-- - `duration_sumsq`: the sum of the squared durations (ms^2), negated for a deleted request as
--   `duration_sum` is;
-- - `sumsq_count`: the durations counted in `duration_sumsq` (+1 per stored duration), less
--   2^32 per deleted request (the deletion view's -1 per duration and -4294967296 per request).
--   It equals `duration_count` summed over a consumer's rows exactly when none of them was
--   aggregated before this migration (those read 0 here) and none of its requests in range was
--   deleted (a deletion cannot undo `duration_max`, which the bound takes out of the sums; fewer
--   than 2^32 durations cannot make up the difference). Otherwise the bound is computed without
--   the moments.
--
-- `consumers_rollup`'s blocks become single minutes, hours, UTC days and weeks (level 10080: 7
-- UTC days from an epoch-aligned Thursday, as every block is epoch aligned): a list over 30 days
-- reads about 4 week rows and the days around them per consumer and environment instead of 30 day
-- rows (on 10 million records with 100,000 consumers, 1.55 million rows instead of 3.56 million;
-- bench/README.md). The 10-minute level is no longer written: at a range's edges the single
-- minutes read instead are about as many rows (a consumer seldom calls in two minutes of the
-- same 10), and each stored record then makes as many rollup rows as before. Level-10 rows
-- written before stay unread until the TTL or a rebuild drops them. A block's TTL counts from its
-- start, as for every level: a week block is read only for a range that holds all of it, whose
-- start is within retention.
--
-- Schema only: the three views that fill these tables from raw rows and minute rows are dropped
-- and created again with the new columns (005_six_hour_rollup.sql says why not MODIFY QUERY).
-- Blocks aggregated before this migration keep 0 in the new columns;
-- `npm run admin -- rebuild-metrics` rewrites them (docs/operations.md "Rebuilding the metrics").
ALTER TABLE consumers_minute ADD COLUMN IF NOT EXISTS duration_sumsq SimpleAggregateFunction(sum, Float64);
ALTER TABLE consumers_minute ADD COLUMN IF NOT EXISTS sumsq_count SimpleAggregateFunction(sum, Int64);
ALTER TABLE consumers_rollup ADD COLUMN IF NOT EXISTS duration_sumsq SimpleAggregateFunction(sum, Float64);
ALTER TABLE consumers_rollup ADD COLUMN IF NOT EXISTS sumsq_count SimpleAggregateFunction(sum, Int64);
DROP VIEW IF EXISTS consumers_minute_mv;
DROP VIEW IF EXISTS consumers_deleted_minute_mv;
DROP VIEW IF EXISTS consumers_rollup_mv;

-- consumers_minute_mv as in 007_consumers.sql (see the comments there), with the moment.
CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_minute_mv TO consumers_minute AS
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
FROM requests
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_deleted_minute_mv TO consumers_minute AS
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
FROM requests_deleted
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

-- consumers_rollup_mv as in 008_consumer_and_key_rollups.sql (see the comments there), with the
-- new columns summed and the week level.
CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_rollup_mv TO consumers_rollup AS
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
    FROM consumers_minute
)
ARRAY JOIN [toUInt16(1), 60, 1440, 10080] AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;
