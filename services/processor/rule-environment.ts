/**
 * Whether a redaction limited to `environments` (null = every environment) applies to a record of
 * `env`. A record without an environment ('' or null) may be any environment's: every
 * environment's workflows evaluate it (docs/workflows.md), so every redaction applies to it, and
 * nothing a rule of one environment hides reaches that environment's actions in clear. Exclusions
 * do not follow this (dropping cannot be undone): docs/rules.md, Scoping. Shared by the processor's
 * redaction step, the sensitive-data engine, the rule preview and the Node.js SDK.
 */
export function redactsIn(environments: ReadonlySet<string> | null, env: string | null): boolean {
  return env === null || env === '' || environments === null || environments.has(env);
}
