/**
 * Shapes the sensitive-data engine works on. The engine reads a record through `SensitiveTarget`:
 * the `request` / `response` parts of a stored record (schemas/request-record.schema.ts, the
 * `StoredRecord` the processor's steps receive), the record's own text fields
 * (SENSITIVE_RECORD_FIELDS), and `environmentSid` for rules limited to some environments. Nothing
 * else of the record is read or written.
 */

import { LEVELS, SENSITIVE_SCOPES, type ApplyTo, type Level, type RedactAt } from '../../shared/rules.js';

// The scope and level lists are the rules module's (services/shared/rules.ts).
export { LEVELS, SENSITIVE_SCOPES, type Level };
/**
 * A concrete scope; a rule may also say `*`: all of them, and the record's own text fields
 * `traces`, `tags`, `note`, `contextSid` (reported under the scope `record`).
 */
export type SensitiveScope = (typeof SENSITIVE_SCOPES)[number];
export type RuleScope = SensitiveScope | '*';
/** Where a change is reported: a scope, or `record` for the record's own text fields. */
export type ChangeScope = SensitiveScope | 'record';

/**
 * Top-level fields of a record the engine may rewrite besides `request` / `response`: `endpoint`
 * (scope `request.url`, as a path) and the free-text fields only `*` covers. A caller that keeps
 * the record's parts copies these too when the engine changed them.
 */
export const SENSITIVE_RECORD_FIELDS = ['endpoint', 'traces', 'tags', 'note', 'contextSid'] as const;
export type SensitiveRecordField = (typeof SENSITIVE_RECORD_FIELDS)[number];

/** A sensitive-data redaction rule as stored (docs/rules.md); the engine reads these fields only. */
export interface SensitiveRuleInput {
  sid: string;
  /** a predefined type (detectors.ts) or the name of a custom type */
  type: string;
  /** custom types: the RE2 pattern; predefined types: null (ignored) */
  pattern?: string | null;
  /** custom types: `key` (field names) or `value` (any text); predefined types: null (ignored) */
  applyTo?: ApplyTo | null;
  level: Level;
  /** empty or absent = every scope */
  scopes?: readonly RuleScope[] | null;
  /** null/absent/empty = every environment */
  environments?: readonly string[] | null;
  /** `client` rules are served to SDKs and applied here again as a safety net */
  redactAt?: RedactAt;
  enabled?: boolean;
  deletedAt?: string | null;
}

/** The parts of a record the engine reads and rewrites. */
export interface SensitiveTarget {
  request: Record<string, unknown>;
  response?: Record<string, unknown> | null;
  environmentSid?: unknown;
  endpoint?: unknown;
  traces?: unknown;
  tags?: unknown;
  note?: unknown;
  contextSid?: unknown;
}

/**
 * One redacted location: `path` is a header or parameter name, `url`/`path`/`host`/`endpoint`, a
 * JSONPath (`$.a[0].b`), an XPath-like `/a/b/@c`, `$` for a whole text body, or for the scope
 * `record`: `note`, `contextSid`, `tags.<key>`, `traces[<i>]` (and a JSONPath below it).
 */
export interface SensitiveChange {
  scope: ChangeScope;
  path: string;
  type: string;
}

export interface SensitiveResult<T extends SensitiveTarget> {
  /** the record with its secrets redacted: the input object itself when nothing changed (never mutated) */
  record: T;
  /** each redacted location once, in scope order */
  changes: SensitiveChange[];
  /** whether anything was redacted (sizes stay as received: mark the stored record with it) */
  redacted: boolean;
}
