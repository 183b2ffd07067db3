-- Single minutes per consumer stored once: `consumers_minute_by_hour`, keyed by the hour first,
-- replaces both `consumers_minute` (keyed by consumer first) and the minute level of
-- `consumers_rollup`.
--
-- With many consumers nearly every record is the only one of its consumer in its processor block
-- and minute, so each table keyed by consumer and minute costs a row (and its merges) per record.
-- Two such tables were written at every insert: consumers_minute, whose key (consumer first)
-- serves one consumer's minutes, and the rollup's level-1 rows, whose key (time first) serves a
-- minute range of every consumer. One table keyed
-- `(account, bucket, hour, consumer, minute of the hour, …)` serves both reads (bench/README.md,
-- "API consumers", has what each costs):
-- - a minute range of every consumer (the consumers list after the hours' seal, the per-consumer
--   threshold's window, a release's consumers, the hours' seal itself) reads that range's hours
--   only; with their endpoints, such ranges read consumers_minute's parts of the whole month before;
-- - one consumer's minutes read one granule or two per hour of the range: within an hour the rows
--   are sorted by consumer, so the primary index finds it (generic exclusion search;
--   test/unit/consumer-key.test.ts).
-- The key holds the minute as `toMinute(minute)`, not `minute` itself: ClickHouse maps a condition
-- on `minute` to the first key column it can, and with `minute` in the key that is `minute` (after
-- the consumer: no use to a range), not `toStartOfHour(minute)`. The hour and the minute of the
-- hour still set each row's minute, so rows of different minutes are never merged.
--
-- From here on:
-- - consumers_minute_mv and consumers_deleted_minute_mv write `consumers_minute_by_hour`;
-- - consumers_rollup_mv writes an hour, day or week block only when the block has ended at the
--   insert (a late record, a deletion of a past block), and no single minutes: the seal
--   (services/shared/consumer-seal.ts) fills the hour blocks from `consumers_minute_by_hour`;
-- - `consumers_minute` receives no row; what it holds stays until its TTL drops it;
-- - `consumers_minute_all` (engine Merge) reads both tables as one, each with its own primary
--   index: the queries that need a minute row's endpoint, method or status read it, so the rows
--   stored before this migration are read as they were;
-- - the consumers list, a consumer's totals and the seal read single minutes per consumer and
--   environment from consumers_rollup's level-1 rows (every insert before this migration wrote
--   them, so they hold what `consumers_minute` holds) and from consumers_minute_by_hour: both keyed
--   by time first, before and after the upgrade alike.
--
-- Schema only: no stored row is copied or changed. `rebuild-metrics` rebuilds
-- `consumers_minute_by_hour` from the raw rows and leaves `consumers_minute` empty.
-- A column added later to consumers_minute_by_hour is added to consumers_minute_all too (a Merge
-- table has the columns it was created with).
-- NOTE: the views are created anew, not changed with `ALTER TABLE … MODIFY QUERY` (005 says why).
DROP VIEW IF EXISTS consumers_minute_mv;

DROP VIEW IF EXISTS consumers_deleted_minute_mv;

DROP VIEW IF EXISTS consumers_rollup_mv;

CREATE TABLE IF NOT EXISTS consumers_minute_by_hour
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    consumer_id      String,
    minute           DateTime('UTC'),
    environment_sid  LowCardinality(String),
    method           LowCardinality(String),
    status_code      UInt16,
    endpoint         String,
    requests         SimpleAggregateFunction(sum, Int64),
    errors           SimpleAggregateFunction(sum, Int64),
    blocked          SimpleAggregateFunction(sum, Int64),
    bytes            SimpleAggregateFunction(sum, Int64),
    duration_sum     SimpleAggregateFunction(sum, Float64),
    duration_count   SimpleAggregateFunction(sum, Int64),
    duration_min     SimpleAggregateFunction(min, Nullable(Float64)),
    duration_max     SimpleAggregateFunction(max, Nullable(Float64)),
    duration_hist    SimpleAggregateFunction(sumMap, Map(Int16, Int64)),
    duration_sumsq   SimpleAggregateFunction(sum, Float64),
    sumsq_count      SimpleAggregateFunction(sum, Int64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, toStartOfHour(minute), consumer_id, toMinute(minute), environment_sid, method, status_code, endpoint)
TTL minute + toIntervalDay(${RETENTION_DAYS})
-- NOTE: as every materialized-view target (001_requests.sql): a re-sent block must not count twice.
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS consumers_minute_all AS consumers_minute_by_hour
ENGINE = Merge(currentDatabase(), '^consumers_minute$|^consumers_minute_by_hour$');

-- consumers_minute_mv and consumers_deleted_minute_mv as in 009_consumer_duration_moments.sql (see
-- the comments there and in 007_consumers.sql), writing the new table.
CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_minute_mv TO consumers_minute_by_hour AS
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

CREATE MATERIALIZED VIEW IF NOT EXISTS consumers_deleted_minute_mv TO consumers_minute_by_hour AS
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

-- consumers_rollup_mv as in 014_consumer_hour_blocks_sealed.sql, without single minutes: it writes a
-- block only once it has ended at the insert (`now()`), so a record of the current hour, day and
-- week adds no rollup row here.
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
    FROM consumers_minute_by_hour
    -- Only a minute whose hour has ended can be in an ended block: the rows of the current hour
    -- (nearly all of an insert's) leave the view here.
    WHERE minute < toStartOfHour(now())
)
ARRAY JOIN arrayFilter(
    l -> (intDiv(toUInt32(m), l * 60) + 1) * l * 60 <= toUInt32(now()),
    [toUInt16(60), 1440, 10080]) AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;
