-- Up Migration
-- MCP tokens may expire (docs/auth.md "MCP tokens"): `expires_at` null = never. An expired token
-- is refused like a revoked one. A change of expiry raises the auth NOTIFY, so cached credentials
-- follow at once.

ALTER TABLE mcp_tokens ADD COLUMN IF NOT EXISTS expires_at timestamptz;

DROP TRIGGER IF EXISTS mcp_tokens_notify ON mcp_tokens;
CREATE TRIGGER mcp_tokens_notify AFTER UPDATE OF is_revoked, bucket_sids, expires_at OR DELETE ON mcp_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION tapline_notify_auth();
