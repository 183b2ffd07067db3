-- API consumers (docs/consumers.md): who made each call, on the raw rows and in two aggregates.
--
-- 1. `requests` gains the consumer of each row: its id, and the name and group the record carried
--    (empty when it carried none). Rows stored before this migration read the String default ''
--    (no consumer); no DEFAULT expression, since the processor writes every one of them.
--    The processor writes the id from the record's `consumer` or from the bucket's identification
--    rules (services/processor/steps/identify.step.ts).
-- 2. `consumers_minute`: requests_minute with the consumer in its key, filled only from rows that
--    have a consumer (a bucket without consumers adds no row and no aggregation work beyond the
--    view's filter). Same counters and the same duration histogram (grid 50,
--    006_duration_grid_all_environments.sql), so percentiles per consumer have the endpoint
--    metrics' method and error bound. The consumer id comes second in the key: a consumer's page
--    and the metrics narrowed to one consumer read that consumer's rows only.
-- 3. `consumer_labels`: per bucket and consumer, the first and last time it was seen and the
--    latest name and group the records carried, with the instant of each (the API compares them
--    with a name or group set through `PUT …/consumers/{id}`: the later write wins).
--
-- Every statement can run again (IF NOT EXISTS), on chDB and on a server. Rows stored before this
-- migration have no consumer, so the new aggregates start empty.
ALTER TABLE requests ADD COLUMN IF NOT EXISTS consumer_id String;
ALTER TABLE requests ADD COLUMN IF NOT EXISTS consumer_name String;
ALTER TABLE requests ADD COLUMN IF NOT EXISTS consumer_group LowCardinality(String);
-- A deleted request is subtracted from its consumer's minute too (requests.repository.ts delete()).
ALTER TABLE requests_deleted ADD COLUMN IF NOT EXISTS consumer_id String;

CREATE TABLE IF NOT EXISTS consumers_minute
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
    duration_hist    SimpleAggregateFunction(sumMap, Map(Int16, Int64))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint)
TTL minute + toIntervalDay(${RETENTION_DAYS})
-- NOTE: as every materialized-view target (001_requests.sql): a re-sent block must not count twice.
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 1024;

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
        isNotNull(duration)) AS duration_hist
FROM requests
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

-- A deleted request with a consumer: negated counts and -1 at its duration's grid index, as
-- requests_deleted_minute_mv does for requests_minute (006).
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
        isNotNull(duration)) AS duration_hist
FROM requests_deleted
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint;

-- `name`/`grp`: the latest non-empty name and group the bucket's records carried (argMax by
-- created_at), `name_at`/`group_at` when (epoch 0: never).
CREATE TABLE IF NOT EXISTS consumer_labels
(
    account_sid  LowCardinality(String),
    bucket_sid   LowCardinality(String),
    consumer_id  String,
    first_seen   SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    last_seen    SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    name         AggregateFunction(argMax, String, DateTime64(3, 'UTC')),
    name_at      SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    grp          AggregateFunction(argMax, String, DateTime64(3, 'UTC')),
    group_at     SimpleAggregateFunction(max, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
ORDER BY (account_sid, bucket_sid, consumer_id)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS consumer_labels_mv TO consumer_labels AS
SELECT
    account_sid,
    bucket_sid,
    consumer_id,
    min(created_at) AS first_seen,
    max(created_at) AS last_seen,
    argMaxStateIf(consumer_name, created_at, consumer_name != '') AS name,
    maxIf(created_at, consumer_name != '') AS name_at,
    argMaxStateIf(toString(consumer_group), created_at, consumer_group != '') AS grp,
    maxIf(created_at, consumer_group != '') AS group_at
FROM requests
WHERE consumer_id != ''
GROUP BY account_sid, bucket_sid, consumer_id;
