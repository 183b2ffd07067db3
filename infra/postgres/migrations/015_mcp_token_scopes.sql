-- Up Migration
-- An MCP token's reach (docs/auth.md "MCP tokens"): the tool scopes its creator held when it was
-- made. Each tool checks the scope it needs in this list. Tokens that exist before this column
-- keep every tool (their creator is no longer known); the API always writes the column itself.

ALTER TABLE mcp_tokens ADD COLUMN IF NOT EXISTS scopes text[] NOT NULL
  DEFAULT ARRAY['events:read', 'events:write', 'buckets:read', 'metrics:read', 'requests:read', 'workflows:read']::text[];
