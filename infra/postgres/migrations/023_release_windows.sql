-- Up Migration
-- Release impact windows per bucket (docs/releases.md "Windows"): the minutes before and after a
-- deployment marker that its impact analysis compares, and the settling minutes after the marker
-- it skips. A bucket without a row uses the defaults (30, 30, 2).
CREATE TABLE bucket_release_settings (
  bucket_sid      text PRIMARY KEY REFERENCES buckets (sid) ON DELETE CASCADE,
  account_sid     text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  before_minutes  integer NOT NULL CHECK (before_minutes BETWEEN 5 AND 1440),
  after_minutes   integer NOT NULL CHECK (after_minutes BETWEEN 5 AND 1440),
  settle_minutes  integer NOT NULL CHECK (settle_minutes BETWEEN 0 AND 120),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bucket_release_settings_account ON bucket_release_settings (account_sid);
