-- Hour blocks of `consumers_rollup` written once per consumer and hour, not at every insert.
--
-- With many consumers nearly every record is the only one of its consumer in its processor block,
-- so the hour level written at every insert costs one rollup row (and its merges) per record, as
-- the minute level does (bench/README.md). From here on consumers_rollup_mv writes:
-- - single minutes, always;
-- - an hour, day or week block only when the block has ended at the insert (`now()`).
-- A block still open at the insert gets its rows from the seal (services/shared/consumer-seal.ts,
-- run by the scheduler every 5 minutes): once an hour has ended it inserts, per consumer and
-- environment, the difference between the hour's minute rows and its hour rows, and records the
-- instant up to which every hour block is complete as a `level = 0` row of account '' and consumer
-- 'hours' in this table; days and weeks follow as 012 says. The queries read hour blocks only up
-- to that instant and single minutes after it (services/api/consumers/consumer-stats.sql.ts).
--
-- No stored row changes. Until the hours' seal is recorded the queries read single minutes after
-- the days' seal, and the first hours' seal starts there: the hours before it were written at
-- every insert.
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
    l -> l = 1 OR (intDiv(toUInt32(m), l * 60) + 1) * l * 60 <= toUInt32(now()),
    [toUInt16(1), 60, 1440, 10080]) AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;

