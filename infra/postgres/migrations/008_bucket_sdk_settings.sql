-- Up Migration
-- The SDK settings of a bucket (docs/rules.md, "SDK settings"): what `GET /v1/buckets/{b}/sdk`
-- hands an SDK besides the rules. Only the values someone changed are stored; a missing row or
-- key means the default, which lives in code (schemas/rules.schema.ts, SDK_SETTING_DEFAULTS), so
-- a default can change without rewriting rows. A table of its own rather than a column of
-- `buckets`: every UPDATE of `buckets` raises the auth NOTIFY that empties credential caches.

CREATE TABLE IF NOT EXISTS bucket_sdk_settings (
  bucket_sid   text PRIMARY KEY REFERENCES buckets (sid) ON DELETE CASCADE,
  account_sid  text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  settings     jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(settings) = 'object'),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS bucket_sdk_settings_account ON bucket_sdk_settings (account_sid);
