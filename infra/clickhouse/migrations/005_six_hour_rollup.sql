-- A 6-hour level in requests_rollup (level = 360, blocks starting at 00:00, 06:00, 12:00 and 18:00
-- UTC), between the hour and the day. Measured in docs/metrics.md ("Query time": "Server mode in
-- the query phase, and the 6-hour level").
--
-- The default range (the last 24 hours) straddles two UTC days, so it holds no whole day block: it
-- was covered by 23 hour blocks, and a percentile query summed 23 hour histograms per group. With
-- this level it is at most 3 six-hour blocks plus at most 10 hour blocks (5 at each edge):
-- `performance?groupBy=endpoint` at 10M records -26% CPU. Every insert writes one more rollup row
-- per (dimension, value, environment) of its block: +8 ms CPU per 20,000-record insert (+6%).
--
-- 1. drop requests_rollup_mv (nothing reaches requests_rollup while this runs),
-- 2. write the 6-hour rows that are missing, summed from the hour rows,
-- 3. create requests_rollup_mv again with the four levels.
--
-- Step 2 inserts, per 6-hour block and key, the hour rows' sums MINUS the 6-hour rows already
-- stored (the histograms subtracted entry by entry), and nothing where the two agree: applied once
-- it writes every block, applied again (a second run, or after a run interrupted half-way) it
-- writes only what is missing, so it never counts twice. min/max are idempotent as they are.
-- Cost: 0.3 s for 10M stored records on the 2-core dev machine (docs/metrics.md).
-- NOTE: the view is created anew, not changed with `ALTER TABLE … MODIFY QUERY`: with MODIFY QUERY
-- (chDB 26.7), a block re-sent after a crash of the process that ran the migration was counted
-- twice in requests_rollup while requests and requests_minute dropped it (measured by
-- test/faults/processor-crash-after-insert.test.ts: +50 rows at every level).
-- Migrations run at start, before this process's processor consumes anything. With a ClickHouse
-- server shared by several service processes, stop the other processors for the upgrade: a block
-- inserted between steps 1 and 3 reaches requests_minute but no rollup row (as with 004).
DROP VIEW IF EXISTS requests_rollup_mv;

INSERT INTO requests_rollup (account_sid, dim, level, t, bucket_sid, environment_sid, value, requests, errors, blocked,
    bytes, duration_sum, duration_count, duration_min, duration_max, duration_hist)
SELECT
    account_sid,
    dim,
    -- No alias may be a column name: `level` and `t` below are the stored rows' columns.
    toUInt16(360) AS lv6,
    toDateTime(intDiv(toUInt32(t), 21600) * 21600, 'UTC') AS t6,
    bucket_sid,
    environment_sid,
    value,
    sum(if(level = 60, requests, -requests)) AS n,
    sum(if(level = 60, errors, -errors)) AS e,
    sum(if(level = 60, blocked, -blocked)) AS b,
    sum(if(level = 60, bytes, -bytes)) AS bt,
    sum(if(level = 60, duration_sum, -duration_sum)) AS ds,
    sum(if(level = 60, duration_count, -duration_count)) AS dc,
    min(duration_min) AS dmin,
    max(duration_max) AS dmax,
    -- sumMap keeps the entries that sum to 0: only the counts that differ are written.
    mapFilter((k, c) -> c != 0,
        sumMap(if(level = 60, duration_hist, mapApply((k, c) -> (k, -c), duration_hist)))) AS h
FROM requests_rollup
WHERE level IN (60, 360)
GROUP BY account_sid, dim, t6, bucket_sid, environment_sid, value
-- Not `ds`: float sums added in another order differ by rounding where every count agrees.
HAVING n != 0 OR e != 0 OR b != 0 OR bt != 0 OR dc != 0 OR notEmpty(h)
SETTINGS insert_deduplicate = 0;

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
