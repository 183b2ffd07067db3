-- `requests` is written in granules of at most 1 MiB of columns instead of ClickHouse's default
-- 10 MiB, which is what bounds the memory of its background merges.
--
-- A merge reads one granule of every column from each part it merges at once. At ~3 KB per record a
-- 10 MiB granule holds ~3,300 records, so merging eight parts of a processor's blocks held
-- ~300 MB in flight (sixteen parts ~480 MB), whatever `merge_max_block_size` said: with chDB inside
-- the service process that was its peak memory. With 1 MiB granules the same merges add 25-60 MB
-- (eight parts in the same time, sixteen ~30 % slower; bench/README.md). A granule of small
-- records still ends at 8,192 rows.
--
-- `index_granularity_bytes` cannot be changed on a table, so the table is replaced by a copy with
-- the setting: the copy takes every stored part by hard link (no data is rewritten; old parts keep
-- their granules until merges rewrite them), the two swap names, and the old table is dropped. The
-- materialized views read `requests` by name and follow the swap. The migrator holds the view
-- inserts' lock meanwhile, so no block reaches the old table after the copy. Interrupted at any
-- step, the file runs again from its first statement and ends the same way.
DROP TABLE IF EXISTS requests_regranulated;

CREATE TABLE requests_regranulated AS requests
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(created_at)
ORDER BY (account_sid, bucket_sid, created_at, sid)
TTL toDateTime(created_at) + toIntervalDay(${RETENTION_DAYS})
SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 8192, min_bytes_for_wide_part = 268435456, index_granularity_bytes = 1048576;

ALTER TABLE requests_regranulated ATTACH PARTITION ALL FROM requests;

EXCHANGE TABLES requests AND requests_regranulated;

DROP TABLE IF EXISTS requests_regranulated;
