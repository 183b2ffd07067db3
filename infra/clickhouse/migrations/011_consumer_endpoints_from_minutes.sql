-- One consumer's figures without a rollup of its own: `consumer_endpoints_rollup` and its view are
-- dropped.
--
-- With a consumer on every record, consumer_endpoints_rollup_mv writes two rows (an hour and a UTC
-- day block) per consumers_minute row, ~10 µs of chDB CPU per stored record at the insert and its
-- merges (bench/README.md). What the table serves is read from the other tables instead:
-- 1. A consumer's totals, and those of the list's page of consumers, come from consumers_rollup.
--    Its key is the block, then the consumer: within each block the rows are sorted by consumer,
--    so the primary index finds a consumer's granule in each block read (ClickHouse's generic
--    exclusion search; test/unit/consumer-key.test.ts).
-- 2. The endpoints a consumer called in a range come from consumers_minute, keyed by consumer
--    first: its index reads that consumer's minute rows of the range only.
--
-- No aggregate that is read changes; the dropped table's rows are gone with it.
DROP VIEW IF EXISTS consumer_endpoints_rollup_mv;
DROP TABLE IF EXISTS consumer_endpoints_rollup;
