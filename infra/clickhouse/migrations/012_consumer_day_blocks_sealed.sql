-- Day and week blocks of `consumers_rollup` written once per consumer and block, not at every insert.
--
-- With many rare consumers nearly every consumers_minute row is the only one of its consumer in a
-- day or a week, so each block length the view writes costs as many rows as the minute level
-- (bench/README.md). From here on consumers_rollup_mv writes:
-- - single minutes and hours, always;
-- - a day or week block only when the block has ended at the insert (`now()`): late records and
--   deletions of past days reach those blocks as they arrive.
-- A block still open at the insert gets its day and week rows from the seal
-- (services/shared/consumer-seal.ts, run by the scheduler every 5 minutes): once a day has ended
-- it inserts, per consumer and environment, the difference between the day's hour rows and its
-- day rows (then the same for each ended week against its day rows), and records the instant up to
-- which every day and week block is complete as a `level = 0` row of account '' in this table.
-- The queries read day and week blocks only up to that instant and hours after it
-- (services/api/consumers/consumer-stats.sql.ts).
--
-- No stored row changes: the rows written before hold every level, so the first seal inserts no
-- difference for them. Until it has run the queries read hours (the same figures, more rows).
-- NOTE: the view is created anew, not changed with `ALTER TABLE … MODIFY QUERY` (005 says why).
DROP VIEW IF EXISTS consumers_rollup_mv;

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
ARRAY JOIN arrayFilter(
    l -> l <= 60 OR (intDiv(toUInt32(m), l * 60) + 1) * l * 60 <= toUInt32(now()),
    [toUInt16(1), 60, 1440, 10080]) AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;
