-- Rollups keyed by consumer (1, 2) and by requests_minute's whole key (3).
--
-- Keyed by consumer, so the consumers list and a consumer's page read rows in proportion
-- to consumers x time blocks, not x endpoints x methods x status codes as in `consumers_minute`
-- (007_consumers.sql), which with many rare consumers holds about one row per request (the
-- figures: bench/README.md "API consumers").
--
-- 1. `consumers_rollup`: per consumer and environment, single minutes and whole blocks of 10
--    minutes, an hour and a UTC day (`level` = block length in minutes, `t` = block start, epoch
--    aligned, as in requests_rollup, 002_metrics.sql). The list and a consumer's totals read the
--    largest whole blocks inside their range and level-1 rows for the single minutes at its edges
--    (at most 9 at each end; services/api/consumers/consumer-stats.sql.ts). The key starts with the
--    block, so a list over a range reads that range's rows only (consumers_minute, keyed by
--    consumer first, has to be scanned whole for a range of every consumer); within a block the
--    consumer comes first, so one consumer's totals are found by the key too.
-- 2. `consumer_endpoints_rollup`: per consumer, environment, method and endpoint, hour and day
--    blocks (status codes summed: errors are a count): a consumer's page lists the endpoints it
--    called from these, its edge minutes from consumers_minute. The consumer comes before the
--    block in the key: the page reads that consumer's rows only.
-- Both hold the same counters and duration histogram (grid 50, 006) as consumers_minute, summed
-- over its rows, so every answer (counts, error rates, percentiles by the same method and bound) is
-- the one the minute rows give. Both are filled from the rows written into consumers_minute (views
-- on consumers_minute, as requests_rollup_mv is on requests_minute): a bucket without consumers
-- writes no consumers_minute row, so no rollup row and no rollup work. A deleted request reaches
-- them the same way (requests_deleted -> consumers_deleted_minute_mv -> consumers_minute -> these
-- views).
--
-- 3. `requests_key_rollup`: requests_minute with its whole key (environment, method, status code,
--    endpoint) in hour and UTC-day blocks. requests_rollup keeps one dimension per row, so a
--    figure narrowed to an endpoint AND a method, or an error count per endpoint, could only be
--    summed from minute rows. SLOs (services/slo/slo.query.ts) read their 6-hour and 3-day burn
--    windows and their daily series from these blocks, and only the edge minutes (and the 5-minute
--    to 1-hour windows) from requests_minute. Filled by a view on requests_minute like
--    requests_rollup_mv; a deletion reaches it the same way.
--
-- Schema only: the three views are dropped (a run interrupted before they were all created
-- leaves none half-made), the tables and the views are created. Blocks aggregated before this
-- migration have no rows in the three tables; `npm run admin -- rebuild-metrics` writes them
-- (docs/operations.md "Rebuilding the metrics").
-- NOTE: the views are created anew, not changed with `ALTER TABLE … MODIFY QUERY` (005 says why).
DROP VIEW IF EXISTS consumers_rollup_mv;
DROP VIEW IF EXISTS consumer_endpoints_rollup_mv;
DROP VIEW IF EXISTS requests_key_rollup_mv;

CREATE TABLE IF NOT EXISTS consumers_rollup
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    level            UInt16,
    t                DateTime('UTC'),
    consumer_id      String,
    environment_sid  LowCardinality(String),
    requests         SimpleAggregateFunction(sum, Int64),
    errors           SimpleAggregateFunction(sum, Int64),
    blocked          SimpleAggregateFunction(sum, Int64),
    bytes            SimpleAggregateFunction(sum, Int64),
    duration_sum     SimpleAggregateFunction(sum, Float64),
    duration_count   SimpleAggregateFunction(sum, Int64),
    duration_min     SimpleAggregateFunction(min, Nullable(Float64)),
    duration_max     SimpleAggregateFunction(max, Nullable(Float64)),
    duration_hist    SimpleAggregateFunction(sumMap, Map(Int16, Int64))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, bucket_sid, level, t, consumer_id, environment_sid)
TTL t + toIntervalDay(${RETENTION_DAYS})
-- NOTE: as every materialized-view target (001_requests.sql): a re-sent block must not count twice.
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS consumer_endpoints_rollup
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    consumer_id      String,
    level            UInt16,
    t                DateTime('UTC'),
    environment_sid  LowCardinality(String),
    method           LowCardinality(String),
    endpoint         String,
    requests         SimpleAggregateFunction(sum, Int64),
    errors           SimpleAggregateFunction(sum, Int64),
    blocked          SimpleAggregateFunction(sum, Int64),
    bytes            SimpleAggregateFunction(sum, Int64),
    duration_sum     SimpleAggregateFunction(sum, Float64),
    duration_count   SimpleAggregateFunction(sum, Int64),
    duration_min     SimpleAggregateFunction(min, Nullable(Float64)),
    duration_max     SimpleAggregateFunction(max, Nullable(Float64)),
    duration_hist    SimpleAggregateFunction(sumMap, Map(Int16, Int64))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, bucket_sid, consumer_id, level, t, environment_sid, method, endpoint)
TTL t + toIntervalDay(${RETENTION_DAYS})
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS requests_key_rollup
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
    level            UInt16,
    t                DateTime('UTC'),
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
    duration_hist    SimpleAggregateFunction(sumMap, Map(Int16, Int64))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, bucket_sid, level, t, environment_sid, method, status_code, endpoint)
TTL t + toIntervalDay(${RETENTION_DAYS})
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 1024;

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
    sumMap(h) AS duration_hist
FROM
(
    SELECT account_sid, bucket_sid, consumer_id, environment_sid, minute AS m, requests AS n, errors AS e,
        blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc, duration_min AS dmin,
        duration_max AS dmax, duration_hist AS h
    FROM consumers_minute
)
ARRAY JOIN [toUInt16(1), 10, 60, 1440] AS lv
GROUP BY account_sid, bucket_sid, level, t, consumer_id, environment_sid;

CREATE MATERIALIZED VIEW IF NOT EXISTS consumer_endpoints_rollup_mv TO consumer_endpoints_rollup AS
SELECT
    account_sid,
    bucket_sid,
    consumer_id,
    lv AS level,
    toDateTime(intDiv(toUInt32(m), lv * 60) * lv * 60, 'UTC') AS t,
    environment_sid,
    method,
    endpoint,
    sum(n) AS requests,
    sum(e) AS errors,
    sum(b) AS blocked,
    sum(bt) AS bytes,
    sum(ds) AS duration_sum,
    sum(dc) AS duration_count,
    min(dmin) AS duration_min,
    max(dmax) AS duration_max,
    sumMap(h) AS duration_hist
FROM
(
    SELECT account_sid, bucket_sid, consumer_id, environment_sid, method, endpoint, minute AS m, requests AS n,
        errors AS e, blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc, duration_min AS dmin,
        duration_max AS dmax, duration_hist AS h
    FROM consumers_minute
)
ARRAY JOIN [toUInt16(60), 1440] AS lv
GROUP BY account_sid, bucket_sid, consumer_id, level, t, environment_sid, method, endpoint;

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_key_rollup_mv TO requests_key_rollup AS
SELECT
    account_sid,
    bucket_sid,
    lv AS level,
    toDateTime(intDiv(toUInt32(m), lv * 60) * lv * 60, 'UTC') AS t,
    environment_sid,
    method,
    status_code,
    endpoint,
    sum(n) AS requests,
    sum(e) AS errors,
    sum(b) AS blocked,
    sum(bt) AS bytes,
    sum(ds) AS duration_sum,
    sum(dc) AS duration_count,
    min(dmin) AS duration_min,
    max(dmax) AS duration_max,
    sumMap(h) AS duration_hist
FROM
(
    SELECT account_sid, bucket_sid, environment_sid, method, status_code, endpoint, minute AS m, requests AS n,
        errors AS e, blocked AS b, bytes AS bt, duration_sum AS ds, duration_count AS dc, duration_min AS dmin,
        duration_max AS dmax, duration_hist AS h
    FROM requests_minute
)
ARRAY JOIN [toUInt16(60), 1440] AS lv
GROUP BY account_sid, bucket_sid, level, t, environment_sid, method, status_code, endpoint;
