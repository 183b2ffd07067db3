-- The cluster form of ../migrations/011_consumer_endpoints_from_minutes.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- The view, the Distributed table and the local tables behind it are dropped ON CLUSTER.
-- test/unit/clickhouse-cluster.test.ts checks that this file and the single-server one describe
-- the same schema.
DROP VIEW IF EXISTS consumer_endpoints_rollup_mv ON CLUSTER '${CLUSTER}' SYNC;

DROP TABLE IF EXISTS consumer_endpoints_rollup ON CLUSTER '${CLUSTER}' SYNC;

DROP TABLE IF EXISTS consumer_endpoints_rollup_local ON CLUSTER '${CLUSTER}' SYNC;
