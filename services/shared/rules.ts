/**
 * The rules module (docs/rules.md): the one place the processor, the API and the Node.js SDK take
 * the rule vocabulary and the rule languages from, so the three cannot drift apart. The SDK bundles
 * it into its build like the rest of the server code it imports (sdk/node/tsup.config.ts).
 *
 * - Path patterns of path exclusions and workflow conditions: `compilePathPattern`, `pathOnly`
 *   (services/processor/path-pattern.ts).
 * - Field paths of field redactions: `parseFieldPath` (services/shared/field-path.ts), which gives
 *   the part of the record a path addresses and the segments inside it.
 * - The value lists below: field redaction types, who applies a redaction, and the scopes, levels
 *   and `applyTo` of sensitive-data redactions. The API's schemas (schemas/rules.schema.ts) and the
 *   sensitive-data engine (services/processor/sensitive/) use these lists.
 */
export { compilePathPattern, pathOnly, type PathMatcher } from '../processor/path-pattern.js';
export {
  FIELD_PATH_MAX_LENGTH,
  FIELD_PATH_MAX_SEGMENTS,
  parseFieldPath,
  type FieldPathResult,
  type FieldPathRoot,
  type FieldPathSegment,
} from './field-path.js';

/** What a field redaction does to the field its path addresses (docs/rules.md). */
export const REDACTION_TYPES = ['mask', 'remove', 'hash', 'replace'] as const;
export type RedactionType = (typeof REDACTION_TYPES)[number];

/** Who applies a redaction: the SDK in the host (`client`) or the processor (`server`). */
export const REDACT_AT = ['client', 'server'] as const;
export type RedactAt = (typeof REDACT_AT)[number];

/** The parts of a record a sensitive-data redaction may be limited to. */
export const SENSITIVE_SCOPES = [
  'request.headers',
  'request.query',
  'request.body',
  'request.url',
  'response.headers',
  'response.body',
] as const;

/**
 * The scopes a sensitive-data rule may name: the parts above and `*` (all of them, and the
 * record's own text fields, see services/processor/sensitive/types.ts).
 */
export const REDACTION_SCOPES = [...SENSITIVE_SCOPES, '*'] as const;

/** How much of a found value a sensitive-data redaction hides (docs/sensitive-data.md). */
export const LEVELS = ['full', 'mask', 'partial'] as const;
export type Level = (typeof LEVELS)[number];

/** Where a custom type's pattern is searched: field names (`key`) or values (`value`). */
export const APPLY_TO = ['key', 'value'] as const;
export type ApplyTo = (typeof APPLY_TO)[number];
