-- Metrics aggregates, filled by materialized views on every insert into `requests`:
-- requests_minute (full key per minute: threshold workflows, any ad-hoc breakdown) and
-- requests_rollup (per dimension and time block: the metrics API's read path). Nothing reads raw
-- rows for metrics. Merging expressions for the columns live in services/shared/metrics-sql.ts.
--
-- Key: one row per (account, bucket, minute, environment, method, status code, endpoint template)
-- after merges. Status class, error and per-dimension breakdowns are all derived from the key.
--
-- Counters are signed Int64 on purpose: deleting one request writes compensating rows with
-- negative counts, bytes and duration sum (requests_deleted below).
-- duration_min/max are Nullable so rows without a duration (and compensating rows) leave them alone.
--
-- Quantile state (docs/metrics.md "Percentiles: the quantile function" compares it with the
-- sketches ClickHouse offers): a log-bucketed histogram. Each duration d > 0 ms is mapped to the
-- Int16 grid index round(log2(d) * 347) (grid ratio 2^(1/347) = 1.002, so the value read back,
-- exp2(index / 347), is within 0.1% of d; 0 and negative durations map to -32768 = 0 ms) and
-- counted exactly per index by quantilesExactWeighted. Percentiles merged from any set of minutes
-- therefore pick exactly quantileExact's rank (floor(level * n); metrics-sql.ts RANK_NUDGE) and are
-- within 0.1% of its value; merges never degrade that. A deleted request is subtracted exactly:
-- its compensating row carries weight 2^64-1, which is -1 in the UInt64 modular counts (see
-- delete()).
--
-- NOTE: non_replicated_deduplication_window must be set on this MV target too: without it a block
-- re-sent with the same insert_deduplication_token is dropped from `requests` but counted again here.
CREATE TABLE IF NOT EXISTS requests_minute
(
    account_sid      LowCardinality(String),
    bucket_sid       LowCardinality(String),
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
    duration_digest  AggregateFunction(quantilesExactWeighted(0.5, 0.95, 0.99), Int16, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint)
TTL minute + toIntervalDay(${RETENTION_DAYS})
-- Small granules: queries read a few minutes of one bucket, and every row read costs a state.
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 1024;

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
    quantilesExactWeightedStateIf(0.5, 0.95, 0.99)(
        if(assumeNotNull(duration) > 0,
           toInt16(greatest(-32767, least(32767, round(log2(assumeNotNull(duration)) * 347)))),
           toInt16(-32768)),
        toUInt64(1),
        isNotNull(duration)) AS duration_digest
FROM requests
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

-- Read path of the metrics API: the same aggregates per dimension and per time block, so a query
-- merges few states whatever the key cardinality (requests_minute can hold about one row per
-- request, and every row read costs a state merge).
--   level: block length in minutes, 10, 60 or 1440 (a UTC day); t: block start (epoch aligned).
--   dim/value: 'all' '' | 'method' 'GET' | 'status' '404' | 'endpoint' '/users/{id}'
--              | 'error' '404 /users/{id}' (rows with status >= 400 only, and no digest: errors by
--              endpoint and status code are counts).
-- A range is covered by the largest whole blocks inside it plus finer blocks at its edges, the
-- single minutes (at most 9 at each end) read from requests_minute
-- (services/api/metrics/metrics.repository.ts), so answers keep minute resolution.
-- Built from the raw rows: per dimension and 10-minute block first (states from values), then
-- those few rows merged into the 10-minute, hour and day levels, rather than every raw row
-- expanded to every level or the per-minute states merged again (the costs of each:
-- docs/metrics.md "Storage"). Levels and dimensions are kept few because each one multiplies the
-- work of every insert.
CREATE TABLE IF NOT EXISTS requests_rollup
(
    account_sid      LowCardinality(String),
    dim              LowCardinality(String),
    level            UInt16,
    t                DateTime('UTC'),
    bucket_sid       LowCardinality(String),
    environment_sid  LowCardinality(String),
    value            String,
    requests         SimpleAggregateFunction(sum, Int64),
    errors           SimpleAggregateFunction(sum, Int64),
    blocked          SimpleAggregateFunction(sum, Int64),
    bytes            SimpleAggregateFunction(sum, Int64),
    duration_sum     SimpleAggregateFunction(sum, Float64),
    duration_count   SimpleAggregateFunction(sum, Int64),
    duration_min     SimpleAggregateFunction(min, Nullable(Float64)),
    duration_max     SimpleAggregateFunction(max, Nullable(Float64)),
    duration_digest  AggregateFunction(quantilesExactWeighted(0.5, 0.95, 0.99), Int16, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, dim, level, t, bucket_sid, environment_sid, value)
TTL t + toIntervalDay(${RETENTION_DAYS})
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_rollup_mv TO requests_rollup AS
SELECT
    account_sid,
    dim,
    lv AS level,
    toDateTime(intDiv(toUInt32(t10), lv * 60) * lv * 60, 'UTC') AS t,
    bucket_sid,
    environment_sid,
    value,
    sum(n) AS requests,
    sum(e) AS errors,
    sum(b) AS blocked,
    sum(bt) AS bytes,
    sum(ds) AS duration_sum,
    sum(dc) AS duration_count,
    min(dmin) AS duration_min,
    max(dmax) AS duration_max,
    quantilesExactWeightedMergeState(0.5, 0.95, 0.99)(dg) AS duration_digest
FROM
(
    SELECT
        account_sid,
        d.1 AS dim,
        toDateTime(intDiv(toUInt32(toDateTime(created_at)), 600) * 600, 'UTC') AS t10,
        bucket_sid,
        environment_sid,
        d.2 AS value,
        toInt64(count()) AS n,
        toInt64(countIf(status_code >= 400)) AS e,
        toInt64(sum(blocked)) AS b,
        toInt64(sum(request_size + response_size)) AS bt,
        sumIf(assumeNotNull(duration), isNotNull(duration)) AS ds,
        toInt64(countIf(isNotNull(duration))) AS dc,
        min(duration) AS dmin,
        max(duration) AS dmax,
        quantilesExactWeightedStateIf(0.5, 0.95, 0.99)(
            if(assumeNotNull(duration) > 0,
               toInt16(greatest(-32767, least(32767, round(log2(assumeNotNull(duration)) * 347)))),
               toInt16(-32768)),
            toUInt64(1),
            isNotNull(duration) AND d.1 != 'error') AS dg
    FROM requests
    ARRAY JOIN arrayConcat(
        [('all', ''), ('method', toString(method)), ('status', toString(status_code)), ('endpoint', endpoint)],
        if(status_code >= 400, [('error', concat(toString(status_code), ' ', endpoint))], [])) AS d
    GROUP BY account_sid, dim, t10, bucket_sid, environment_sid, value
)
ARRAY JOIN [toUInt16(10), 60, 1440] AS lv
GROUP BY account_sid, dim, level, t, bucket_sid, environment_sid, value;

-- Deleting a request (services/api/requests/requests.repository.ts delete()) inserts its stored row here;
-- these views write it negated into both aggregate tables: counts, bytes and duration sum with
-- the opposite sign, and its duration with weight 2^64-1, i.e. -1 in the digest's UInt64 modular
-- counts, so percentiles forget it exactly. min/max cannot be undone (documented).
-- NOTE: the insert carries a deduplication token naming the stored row: a retried or concurrent
-- delete of the same request is compensated once (the targets' deduplication window).
CREATE TABLE IF NOT EXISTS requests_deleted
(
    account_sid      String,
    bucket_sid       String,
    environment_sid  String,
    created_at       DateTime64(3, 'UTC'),
    method           String,
    endpoint         String,
    status_code      UInt16,
    duration         Nullable(Float64),
    request_size     UInt64,
    response_size    UInt64,
    blocked          UInt8
)
ENGINE = Null;

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
    quantilesExactWeightedStateIf(0.5, 0.95, 0.99)(
        if(assumeNotNull(duration) > 0,
           toInt16(greatest(-32767, least(32767, round(log2(assumeNotNull(duration)) * 347)))),
           toInt16(-32768)),
        toUInt64(18446744073709551615),
        isNotNull(duration)) AS duration_digest
FROM requests_deleted
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

-- A deletion reaches requests_rollup through requests_minute (requests_rollup_mv, 004), so no
-- view writes requests_deleted into requests_rollup. Creating one here would break a second run
-- of this file after 004 (it would select the digest column 004 removes).
