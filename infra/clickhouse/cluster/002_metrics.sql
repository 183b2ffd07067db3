-- The cluster form of ../migrations/002_metrics.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- Each table `t` is `t_local` on every node (ON CLUSTER), with the Replicated engine (Keeper path
-- and `{replica}` first, `replicated_deduplication_window` for the insert deduplication tokens),
-- behind a Distributed table `t` sharded by cityHash64(bucket_sid) where the table has a bucket
-- (one bucket's rows, aggregates and deletions on one shard), by rand() otherwise. Views read and
-- write the local tables of their node; ALTER and DROP run ON CLUSTER on the local
-- tables (column changes on the Distributed table too). test/unit/clickhouse-cluster.test.ts
-- checks that this file and the single-server one describe the same schema.
CREATE TABLE IF NOT EXISTS requests_minute_local ON CLUSTER '${CLUSTER}'
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
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/requests_minute_local', '{replica}')
PARTITION BY toYYYYMM(minute)
ORDER BY (account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint)
TTL minute + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 1024;

CREATE TABLE IF NOT EXISTS requests_minute ON CLUSTER '${CLUSTER}' AS requests_minute_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), requests_minute_local, cityHash64(bucket_sid));

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_minute_mv ON CLUSTER '${CLUSTER}' TO requests_minute_local AS
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
FROM requests_local
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;

CREATE TABLE IF NOT EXISTS requests_rollup_local ON CLUSTER '${CLUSTER}'
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
ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/requests_rollup_local', '{replica}')
PARTITION BY toYYYYMM(t)
ORDER BY (account_sid, dim, level, t, bucket_sid, environment_sid, value)
TTL t + toIntervalDay(${RETENTION_DAYS})
SETTINGS replicated_deduplication_window = 10000, index_granularity = 256;

CREATE TABLE IF NOT EXISTS requests_rollup ON CLUSTER '${CLUSTER}' AS requests_rollup_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), requests_rollup_local, cityHash64(bucket_sid));

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_rollup_mv ON CLUSTER '${CLUSTER}' TO requests_rollup_local AS
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
    FROM requests_local
    ARRAY JOIN arrayConcat(
        [('all', ''), ('method', toString(method)), ('status', toString(status_code)), ('endpoint', endpoint)],
        if(status_code >= 400, [('error', concat(toString(status_code), ' ', endpoint))], [])) AS d
    GROUP BY account_sid, dim, t10, bucket_sid, environment_sid, value
)
ARRAY JOIN [toUInt16(10), 60, 1440] AS lv
GROUP BY account_sid, dim, level, t, bucket_sid, environment_sid, value;

CREATE TABLE IF NOT EXISTS requests_deleted_local ON CLUSTER '${CLUSTER}'
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

CREATE TABLE IF NOT EXISTS requests_deleted ON CLUSTER '${CLUSTER}' AS requests_deleted_local
ENGINE = Distributed('${CLUSTER}', currentDatabase(), requests_deleted_local, cityHash64(bucket_sid));

CREATE MATERIALIZED VIEW IF NOT EXISTS requests_deleted_minute_mv ON CLUSTER '${CLUSTER}' TO requests_minute_local AS
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
FROM requests_deleted_local
GROUP BY account_sid, bucket_sid, minute, environment_sid, method, status_code, endpoint;
