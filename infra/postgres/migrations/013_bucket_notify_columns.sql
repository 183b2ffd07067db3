-- Up Migration
-- The bucket caches (ingest's BucketDirectory, the API's credential caches) hold a bucket's
-- owner and name. A change of those, or a deletion, clears them; the first record of a bucket
-- (UPDATE ... SET app_is_connected) leaves them, where it would empty every process's caches.

DROP TRIGGER IF EXISTS buckets_notify ON buckets;
CREATE TRIGGER buckets_notify AFTER UPDATE OF account_sid, name OR DELETE ON buckets
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();
