-- The cluster form of ../migrations/013_requests_compact_inserts.sql
-- (CLICKHOUSE_CLUSTER, docs/scaling.md), applied in its place and recorded under the same name;
-- the comments there say what each statement is for.
-- test/unit/clickhouse-cluster.test.ts checks that this file and the single-server one describe
-- the same schema.
ALTER TABLE requests_local ON CLUSTER '${CLUSTER}' MODIFY SETTING min_bytes_for_wide_part = 268435456;
