-- Up Migration
-- Configuration resources of spec sections 2.4-2.8 and 2.12: MCP tokens, exclusion and redaction
-- rules, event markers, workflows (+ executions), stream views. Every row carries account_sid.

CREATE TABLE mcp_tokens (
  sid             text PRIMARY KEY,
  account_sid     text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  environment_sid text NOT NULL,
  bucket_sids     text[] NOT NULL DEFAULT '{}',
  name            text NOT NULL,
  token_hash      bytea NOT NULL UNIQUE,
  token_prefix    text NOT NULL,   -- first characters, kept to show a masked value
  token_suffix    text NOT NULL,   -- last characters, kept to show a masked value
  is_revoked      boolean NOT NULL DEFAULT false,
  last_used_at    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz
);
CREATE INDEX mcp_tokens_account ON mcp_tokens (account_sid, created_at);
CREATE TRIGGER mcp_tokens_notify AFTER UPDATE OF is_revoked, bucket_sids OR DELETE ON mcp_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();

-- buckets / environments: NULL means "every bucket / environment" (Shape A scoping).
CREATE TABLE exclusions (
  sid          text PRIMARY KEY,
  account_sid  text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  name         text NOT NULL,
  description  text NOT NULL DEFAULT '',
  path_pattern text NOT NULL,
  method       text NOT NULL DEFAULT '*',
  status_code  integer,
  buckets      text[],
  environments text[],
  is_active    boolean NOT NULL DEFAULT true,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz
);
CREATE INDEX exclusions_account ON exclusions (account_sid, created_at);

CREATE TABLE redactions (
  sid               text PRIMARY KEY,
  account_sid       text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  name              text NOT NULL,
  description       text NOT NULL DEFAULT '',
  field_path        text NOT NULL,
  redaction_type    text NOT NULL CHECK (redaction_type IN ('mask', 'remove', 'hash', 'replace')),
  replacement_value text,
  redact_at         text NOT NULL DEFAULT 'server' CHECK (redact_at IN ('client', 'server')),
  buckets           text[],
  environments      text[],
  is_active         boolean NOT NULL DEFAULT true,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz
);
CREATE INDEX redactions_account ON redactions (account_sid, created_at);

CREATE TABLE events (
  sid              text PRIMARY KEY,
  account_sid      text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  bucket_sids      text[] NOT NULL DEFAULT '{*}',
  environment_sids text[] NOT NULL DEFAULT '{*}',
  type             text NOT NULL CHECK (type IN ('deployment', 'incident', 'config_change', 'scale', 'custom')),
  name             text NOT NULL,
  description      text,
  source           text,
  metadata         jsonb,
  started_at       timestamptz NOT NULL DEFAULT now(),
  ended_at         timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz
);
CREATE INDEX events_account_started ON events (account_sid, started_at DESC);

CREATE TABLE workflows (
  sid             text PRIMARY KEY,
  account_sid     text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  environment_sid text NOT NULL,
  bucket_sid      text NOT NULL REFERENCES buckets (sid) ON DELETE CASCADE,
  name            text NOT NULL,
  description     text NOT NULL DEFAULT '',
  trigger         jsonb NOT NULL,
  actions         jsonb NOT NULL,
  is_active       boolean NOT NULL DEFAULT true,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz
);
CREATE INDEX workflows_account ON workflows (account_sid, created_at);

CREATE TABLE workflow_executions (
  sid           text PRIMARY KEY,
  account_sid   text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  workflow_sid  text NOT NULL REFERENCES workflows (sid) ON DELETE CASCADE,
  bucket_sid    text NOT NULL,
  trigger_type  text NOT NULL,
  request_sid   text,
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
  attempts      integer NOT NULL DEFAULT 0,
  error         text,
  detail        jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,
  finished_at   timestamptz,
  updated_at    timestamptz
);
CREATE INDEX workflow_executions_workflow ON workflow_executions (workflow_sid, created_at DESC);
CREATE INDEX workflow_executions_request ON workflow_executions (request_sid) WHERE request_sid IS NOT NULL;

CREATE TABLE stream_views (
  sid         text PRIMARY KEY,
  account_sid text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  bucket_sid  text NOT NULL REFERENCES buckets (sid) ON DELETE CASCADE,
  name        text NOT NULL,
  criteria    text NOT NULL,
  icon        text NOT NULL CHECK (icon IN ('search', 'star', 'alert', 'check', 'bolt', 'bookmark', 'flag', 'heart')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz
);
CREATE INDEX stream_views_bucket ON stream_views (bucket_sid, created_at);

-- Rule snapshots (processor, scheduler) reload an account's rules on this notification.
CREATE FUNCTION tapline_notify_rules() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('tapline_rules', COALESCE(NEW.account_sid, OLD.account_sid));
  RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER exclusions_rules_notify AFTER INSERT OR UPDATE OR DELETE ON exclusions
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_rules();
CREATE TRIGGER redactions_rules_notify AFTER INSERT OR UPDATE OR DELETE ON redactions
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_rules();
CREATE TRIGGER workflows_rules_notify AFTER INSERT OR UPDATE OR DELETE ON workflows
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_rules();
