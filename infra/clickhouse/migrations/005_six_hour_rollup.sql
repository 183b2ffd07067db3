-- 005: a 6-hour level in requests_rollup (level = 360, blocks starting at 00:00, 06:00, 12:00 and
-- 18:00 UTC), between the hour and the day.
--
-- The default range (the last 24 hours) straddles two UTC days, so it holds no whole day block;
-- with this level it is covered by at most 3 six-hour blocks plus at most 10 hour blocks (5 at each
-- edge) instead of 23 hour blocks. Every insert writes one more rollup row per (dimension, value,
-- environment) of its block. Costs and gains: docs/metrics.md ("Query time").
--
-- Schema only: requests_rollup_mv is dropped and created again with the four levels. Blocks
-- aggregated before this migration have no 6-hour rows; `npm run admin -- rebuild-metrics` writes
-- them (docs/operations.md "Rebuilding the metrics").
-- NOTE: the view is created anew, not changed with `ALTER TABLE … MODIFY QUERY`: with MODIFY QUERY
-- (chDB 26.7) a block re-sent after a crash of the process that ran the migration is counted twice
-- in requests_rollup while requests and requests_minute drop it
-- (test/faults/processor-crash-after-insert.test.ts).
DROP VIEW IF EXISTS requests_rollup_mv;

-- requests_rollup_mv as in 004_duration_histograms.sql (see the comments there), with level 360.
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
ARRAY JOIN [toUInt16(10), 60, 360, 1440] AS lv
GROUP BY account_sid, dim, level, t, bucket_sid, environment_sid, value;
