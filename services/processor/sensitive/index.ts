/**
 * Sensitive-data redaction (docs/sensitive-data.md): predefined detectors and
 * custom RE2 patterns applied to headers, query, URL, host, endpoint and bodies (JSON, form, XML,
 * text) of a record, and with `*` to its traces, tags, note and contextSid.
 * Pure, no I/O, one entry point: the processor's redaction step (steps/redact.step.ts), the rules API
 * (validation, the catalogue of predefined types) and the rule preview use it.
 */
export {
  compileSensitiveRules,
  redactSensitive,
  validateSensitiveRule,
  bodyKind,
  SensitiveRuleError,
  type CompiledSensitiveRules,
} from './engine.js';
export { compileCustomPattern, SensitivePatternError, MAX_PATTERN_LENGTH } from './custom.js';
export { PREDEFINED_TYPES, isPredefinedType, type PredefinedType } from './detectors.js';
export {
  predefinedTypes,
  sensitiveCatalogue,
  type PredefinedTypeInfo,
  type SensitiveCatalogue,
} from './catalogue.js';
export * from './types.js';
