-- Up Migration
-- The management API's per-account rate counters (docs/auth.md), shared by every API replica: one row
-- per key with the start of its current window; the counting is one UPSERT per request.

CREATE TABLE IF NOT EXISTS api_rate_windows (
  key           text PRIMARY KEY,
  window_start  timestamptz NOT NULL,
  count         integer NOT NULL
);
