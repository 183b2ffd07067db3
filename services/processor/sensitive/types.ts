/**
 * Shapes the sensitive-data engine works on. The engine reads a record through `SensitiveTarget`:
 * the `request` / `response` parts of a stored record (schemas/request-record.schema.ts, the
 * `StoredRecord` the processor's steps receive), and `environmentSid` for rules limited to some
 * environments. Nothing else of the record is read or written.
 */

export const SENSITIVE_SCOPES = [
  'request.headers',
  'request.query',
  'request.body',
  'request.url',
  'response.headers',
  'response.body',
] as const;
/** A concrete scope; a rule may also say `*` (all of them). */
export type SensitiveScope = (typeof SENSITIVE_SCOPES)[number];
export type RuleScope = SensitiveScope | '*';

export const LEVELS = ['full', 'mask', 'partial'] as const;
export type Level = (typeof LEVELS)[number];

/** A Shape A redaction rule as stored (spec 2.6); the engine reads these fields only. */
export interface SensitiveRuleInput {
  sid: string;
  /** a predefined type (detectors.ts) or the name of a custom type */
  type: string;
  /** custom types: the RE2 pattern; predefined types: null (ignored) */
  pattern?: string | null;
  /** custom types: `key` (field names) or `value` (any text); predefined types: null (ignored) */
  applyTo?: 'key' | 'value' | null;
  level: Level;
  /** empty or absent = every scope */
  scopes?: readonly RuleScope[] | null;
  /** null/absent/empty = every environment */
  environments?: readonly string[] | null;
  /** `client` rules are served to SDKs and applied here again as a safety net */
  redactAt?: 'client' | 'server';
  enabled?: boolean;
  deletedAt?: string | null;
}

/** The parts of a record the engine reads and rewrites. */
export interface SensitiveTarget {
  request: Record<string, unknown>;
  response?: Record<string, unknown> | null;
  environmentSid?: unknown;
}

/** One redacted location: `path` is a header or parameter name, `url`/`path`, a JSONPath (`$.a[0].b`), an XPath-like `/a/b/@c`, or `$` for a whole text body. */
export interface SensitiveChange {
  scope: SensitiveScope;
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
