-- Up Migration
-- The `tapline_auth` NOTIFY names the row that changed, so each process forgets that credential
-- (or bucket) alone instead of its whole cache: on a shared install, one tenant's sign-outs and
-- token changes no longer send every other tenant's tokens back to Postgres (and into the bounded
-- authentication look-up rate). Payloads: `api_tokens:<sid>`, `mcp_tokens:<sid>`,
-- `sessions:<sid>`, `buckets:<sid>`, `memberships:<accountSid>:<userSid>`. The triggers keep
-- their column lists, so the lastUsedAt flush still raises none.

CREATE OR REPLACE FUNCTION tapline_notify_auth_row() RETURNS trigger AS $$
BEGIN
  -- A row's sid (and a membership's key) never changes, so OLD names it for UPDATE and DELETE.
  IF TG_TABLE_NAME = 'memberships' THEN
    PERFORM pg_notify('tapline_auth', 'memberships:' || OLD.account_sid || ':' || OLD.user_sid);
  ELSE
    PERFORM pg_notify('tapline_auth', TG_TABLE_NAME || ':' || OLD.sid);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS api_tokens_notify ON api_tokens;
CREATE TRIGGER api_tokens_notify AFTER UPDATE OF is_active, expires_at, scopes OR DELETE ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_auth_row();

DROP TRIGGER IF EXISTS sessions_notify ON sessions;
CREATE TRIGGER sessions_notify AFTER UPDATE OF ended_at, expires_at, account_sid OR DELETE ON sessions
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_auth_row();

DROP TRIGGER IF EXISTS buckets_notify ON buckets;
CREATE TRIGGER buckets_notify AFTER UPDATE OF account_sid, name OR DELETE ON buckets
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_auth_row();

DROP TRIGGER IF EXISTS mcp_tokens_notify ON mcp_tokens;
CREATE TRIGGER mcp_tokens_notify AFTER UPDATE OF is_revoked, bucket_sids, expires_at, scopes OR DELETE ON mcp_tokens
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_auth_row();

DROP TRIGGER IF EXISTS memberships_notify ON memberships;
CREATE TRIGGER memberships_notify AFTER UPDATE OR DELETE ON memberships
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_auth_row();
