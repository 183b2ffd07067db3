-- An exact path search (`path:/v1/users/42`, `path = …`) skips the granules that cannot hold the
-- path: a bloom filter of the whole value per granule of 8,192 rows (~10 bits a row at a 1% false
-- positive rate). The token bloom filter it replaces (4,096 bytes per 32,768 rows) filled up on
-- paths with ids in them, as nearly every path has: with every bit set it skipped nothing, so a
-- month of 100 million records was read whole for one path (bench/README.md).
--
-- Schema only: new parts get the index as they are written; the parts already stored get it in the
-- background (MATERIALIZE INDEX is a mutation: the start does not wait for it, and a search reads
-- a part without the index as before until it is done).
ALTER TABLE requests ADD INDEX IF NOT EXISTS idx_path_value path TYPE bloom_filter(0.01) GRANULARITY 1;
ALTER TABLE requests MATERIALIZE INDEX idx_path_value;
ALTER TABLE requests DROP INDEX IF EXISTS idx_path;
