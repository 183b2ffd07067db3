/**
 * The spec's scope list (docs/auth.md) is the public contract; Tapline checks finer scopes for the
 * resources it adds beside the spec's (event markers, stream views, MCP token management). Each
 * finer scope is also granted by the spec scope of the family it belongs to, so a token created
 * with exactly the spec's scopes reaches every endpoint (docs/auth.md "Scopes").
 */

/** The scopes of the interface (docs/auth.md), in its order. */
export const SPEC_SCOPES = [
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
] as const;

/**
 * finer scope -> the spec scopes that grant it too:
 * - event markers annotate a bucket's dashboard: `buckets:*` (reading them also with `metrics:read`,
 *   whose charts draw them);
 * - stream views are saved searches of a bucket's requests: `requests:*`;
 * - MCP tokens are tokens: `tokens:*`.
 */
export const IMPLIED_BY: Readonly<Record<string, readonly string[]>> = {
  'events:read': ['buckets:read', 'metrics:read'],
  'events:write': ['buckets:write'],
  'events:delete': ['buckets:delete'],
  'streamViews:read': ['requests:read'],
  'streamViews:write': ['requests:write'],
  'streamViews:delete': ['requests:delete'],
  'mcpTokens:read': ['tokens:read'],
  'mcpTokens:write': ['tokens:write'],
  'mcpTokens:delete': ['tokens:delete'],
};

/** The scopes a set of granted scopes is worth: the granted ones plus the finer ones they imply. */
export function effectiveScopes(granted: Iterable<string>): Set<string> {
  const out = new Set(granted);
  for (const [finer, by] of Object.entries(IMPLIED_BY)) if (by.some((s) => out.has(s))) out.add(finer);
  return out;
}
