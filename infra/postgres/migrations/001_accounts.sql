-- Up Migration
-- Accounts, users, sessions, API tokens and buckets: the tenancy core.
-- Every tenant-owned row carries account_sid; every query filters by it.

CREATE TABLE accounts (
  sid           text PRIMARY KEY,
  name          text NOT NULL,
  plan          text NOT NULL DEFAULT 'standard' CHECK (plan IN ('standard', 'pro', 'enterprise')),
  rate_limit    integer,             -- enterprise plans: custom requests per hour
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  sid                 text PRIMARY KEY,
  email               text NOT NULL UNIQUE,
  first_name          text NOT NULL DEFAULT '',
  last_name           text NOT NULL DEFAULT '',
  timezone            text NOT NULL DEFAULT 'UTC',
  default_account_sid text REFERENCES accounts (sid) ON DELETE SET NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
  account_sid text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  user_sid    text NOT NULL REFERENCES users (sid) ON DELETE CASCADE,
  role        text NOT NULL DEFAULT 'administrator' CHECK (role IN ('administrator', 'user', 'ingest')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_sid, user_sid)
);

-- Session tokens: only the SHA-256 of the value is kept.
CREATE TABLE sessions (
  sid          text PRIMARY KEY,
  user_sid     text NOT NULL REFERENCES users (sid) ON DELETE CASCADE,
  account_sid  text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  token_hash   bytea NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  ended_at     timestamptz,
  last_used_at timestamptz
);

CREATE TABLE api_tokens (
  sid            text PRIMARY KEY,
  account_sid    text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  environment_sid text,
  name           text NOT NULL,
  description    text NOT NULL DEFAULT '',
  scopes         text[] NOT NULL,
  token_hash     bytea NOT NULL UNIQUE,
  token_prefix   text NOT NULL,
  is_active      boolean NOT NULL DEFAULT true,
  expires_at     timestamptz,
  last_used_at   timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz
);
CREATE INDEX api_tokens_account ON api_tokens (account_sid, created_at);

CREATE TABLE buckets (
  sid              text PRIMARY KEY,
  account_sid      text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  name             text NOT NULL,
  verify_ssl_certs boolean NOT NULL DEFAULT true,
  app_is_connected boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz
);
CREATE INDEX buckets_account ON buckets (account_sid, created_at);

-- Notes on request records live here, not in ClickHouse: a note is a small mutable field and
-- ClickHouse rows are immutable by design.
CREATE TABLE request_notes (
  account_sid text NOT NULL,
  bucket_sid  text NOT NULL REFERENCES buckets (sid) ON DELETE CASCADE,
  request_sid text NOT NULL,
  note        text,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (bucket_sid, request_sid)
);

-- Cache invalidation for credentials and buckets held in memory by ingest/api.
-- Column lists keep the lastUsedAt flush (UPDATE ... SET last_used_at) from clearing caches.
CREATE FUNCTION tapline_notify_auth() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('tapline_auth', TG_TABLE_NAME);
  RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER api_tokens_notify AFTER UPDATE OF is_active, expires_at, scopes OR DELETE ON api_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();
CREATE TRIGGER sessions_notify AFTER UPDATE OF ended_at, expires_at OR DELETE ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();
CREATE TRIGGER buckets_notify AFTER UPDATE OR DELETE ON buckets
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();
