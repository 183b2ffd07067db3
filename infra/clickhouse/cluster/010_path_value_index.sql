-- The cluster form of ../migrations/010_path_value_index.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- The raw requests are `requests_local` on every node (ON CLUSTER), behind the Distributed table
-- `requests`, which holds no data and no index. test/unit/clickhouse-cluster.test.ts checks that
-- this file and the single-server one describe the same schema.
ALTER TABLE requests_local ON CLUSTER '${CLUSTER}' ADD INDEX IF NOT EXISTS idx_path_value path TYPE bloom_filter(0.01) GRANULARITY 1;
ALTER TABLE requests_local ON CLUSTER '${CLUSTER}' MATERIALIZE INDEX idx_path_value;
ALTER TABLE requests_local ON CLUSTER '${CLUSTER}' DROP INDEX IF EXISTS idx_path;
