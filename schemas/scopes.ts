/**
 * Every scope of the interface (docs/auth.md) plus the finer ones of the resources Tapline adds (docs/auth.md). The
 * schemas and the services both read them from here: `schemas/` imports nothing from `services/`.
 */
export const ALL_SCOPES = [
  'buckets:read',
  'buckets:write',
  'buckets:delete',
  'requests:read',
  'requests:write',
  'requests:delete',
  'metrics:read',
  'redactions:read',
  'redactions:write',
  'redactions:delete',
  'exclusions:read',
  'exclusions:write',
  'exclusions:delete',
  'workflows:read',
  'workflows:write',
  'workflows:delete',
  'tokens:read',
  'tokens:write',
  'tokens:delete',
  'events:read',
  'events:write',
  'events:delete',
  'streamViews:read',
  'streamViews:write',
  'streamViews:delete',
  'mcpTokens:read',
  'mcpTokens:write',
  'mcpTokens:delete',
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/** Scopes only a signed-in administrator holds: managing the account's members (docs/auth.md). */
export const SESSION_ONLY_SCOPES = ['users:read', 'users:write', 'users:delete'] as const;

/**
 * The scopes the MCP tools use (docs/auth.md "MCP tokens"). An MCP token records the ones its
 * creator held, and each tool answers only when the token holds the scope it needs.
 */
export const MCP_TOOL_SCOPES = [
  'events:read',
  'events:write',
  'buckets:read',
  'metrics:read',
  'requests:read',
  'workflows:read',
] as const;
