import { validation } from '../../shared/errors.js';
import { normalizeRecords } from '../../ingest/record.normalizer.js';
import { compileProcessorRules } from '../../processor/compiled-rules.js';
import { compileExclusionCriteria } from '../../processor/exclusion-criteria.js';
import { parseFieldPath, pathOnly } from '../../shared/rules.js';
import type { StepContext, StoredRecord } from '../../processor/pipeline.js';
import {
  emptyRules,
  type AccountRules,
  type ExclusionRule,
  type RedactionRule,
  type RedactionType,
} from '../../processor/rule-snapshot.js';
import {
  SensitivePatternError,
  SensitiveRuleError,
  validateSensitiveRule,
  type Level,
  type RuleScope,
} from '../../processor/sensitive/index.js';
import { exclusionsStep } from '../../processor/steps/exclusions.step.js';
import { redactStep } from '../../processor/steps/redact.step.js';
import { redactsIn } from '../../processor/rule-environment.js';

/**
 * Previews of draft rules (docs/rules.md, "Previewing a rule"), both shapes: one draft rule applied
 * to one sample record with the processor's own code — the rule compiled as the rule snapshot
 * compiles it (compileProcessorRules), scoped to the bucket as the processor scopes it (forBucket),
 * and run by the processor's exclusion and redaction steps. Nothing here matches or redacts by
 * itself. A draft is a content rule when it has `type` (redactions) or `criteria` (exclusions).
 */

const PREVIEW_SID = 'preview';

/** null, omitted or [] = every bucket / environment / scope, as the rules APIs store it. */
const scopeOrNull = <T extends string>(v: T[] | null | undefined): T[] | null => (v && v.length ? v : null);

interface Scoping {
  buckets?: string[] | null;
  environments?: string[] | null;
}

/** Field redaction draft: a field path. */
export interface FieldRedactionDraft extends Scoping {
  fieldPath: string;
  redactionType: RedactionType;
  replacementValue?: string | null;
}

/** Sensitive-data redaction draft: a predefined or custom type (docs/sensitive-data.md). */
export interface SensitiveRedactionDraft extends Scoping {
  type: string;
  level: Level;
  pattern?: string | null;
  applyTo?: 'key' | 'value' | null;
  scopes?: RuleScope[] | null;
}

export type RedactionDraft = FieldRedactionDraft | SensitiveRedactionDraft;

/** Path exclusion draft: path x method x status. */
export interface PathExclusionDraft extends Scoping {
  pathPattern: string;
  method: string;
  statusCode?: number | null;
}

/** Criteria exclusion draft: search-language criteria. */
export interface CriteriaExclusionDraft extends Scoping {
  criteria: string;
}

export type ExclusionDraft = PathExclusionDraft | CriteriaExclusionDraft;

const isSensitiveDraft = (d: RedactionDraft): d is SensitiveRedactionDraft =>
  typeof (d as Partial<SensitiveRedactionDraft>).type === 'string';
const isCriteriaDraft = (d: ExclusionDraft): d is CriteriaExclusionDraft =>
  typeof (d as Partial<CriteriaExclusionDraft>).criteria === 'string';

/**
 * A pasted sample, checked and completed as ingest does it (normalizeRecords), so the preview sees
 * what the processor would receive. Field errors name `body.record.<field>`; a sample nesting
 * deeper than MAX_JSON_DEPTH levels is refused there too (the rule steps and the diff walk
 * records recursively).
 */
export function sampleFromInput(record: Record<string, unknown>, bucketSid: string): StoredRecord {
  const { accepted, rejected } = normalizeRecords([structuredClone(record)], bucketSid);
  if (!accepted[0]) {
    const details: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(rejected[0]?.error.details ?? {}))
      details[k === '(body)' ? 'body.record' : `body.record.${k}`] = v;
    throw validation('The sample record is invalid', details);
  }
  // The processor receives the record through Kafka as JSON: the same round trip here.
  return JSON.parse(JSON.stringify(accepted[0])) as StoredRecord;
}

/** The processor's step context for one draft rule, in the bucket the sample is previewed in. */
function context(accountSid: string, bucketSid: string, rules: AccountRules): StepContext {
  return { accountSid, bucketSid, rules: compileProcessorRules(rules).forBucket(bucketSid) };
}

const inEnvironment = (x: { environments: ReadonlySet<string> | null }, env: string) =>
  x.environments === null || x.environments.has(env);

const environmentOf = (sample: StoredRecord) =>
  typeof sample.environmentSid === 'string' ? sample.environmentSid : '';

/** Sensitive-data draft as the engine reads it (the checks of validateSensitiveRule). */
function sensitiveInput(rule: SensitiveRedactionDraft) {
  return {
    sid: PREVIEW_SID,
    type: rule.type,
    pattern: rule.pattern ?? null,
    applyTo: rule.applyTo ?? null,
    level: rule.level,
    scopes: scopeOrNull(rule.scopes),
    environments: scopeOrNull(rule.environments),
  };
}

/**
 * What the redaction step checks beyond the schema, as the redactions API checks it: the field
 * path (field rules); the type, level, scopes, applyTo and RE2 pattern (sensitive-data rules).
 */
export function checkRedactionDraft(rule: RedactionDraft): void {
  if (isSensitiveDraft(rule)) {
    try {
      validateSensitiveRule(sensitiveInput(rule));
    } catch (err) {
      if (err instanceof SensitivePatternError)
        throw validation(err.message, {
          'body.rule.pattern': err.message,
          position: err.position,
          reason: err.reason,
        });
      if (err instanceof SensitiveRuleError)
        throw validation('Request body is invalid', { [`body.rule.${err.field}`]: err.message });
      throw err;
    }
    return;
  }
  const details: Record<string, string> = {};
  const parsed = parseFieldPath(rule.fieldPath);
  if (!parsed.ok) details['body.rule.fieldPath'] = parsed.error;
  if (rule.redactionType === 'replace' && typeof rule.replacementValue !== 'string')
    details['body.rule.replacementValue'] = 'is required when redactionType is replace';
  if (Object.keys(details).length) throw validation('Request body is invalid', details);
}

export interface Change {
  path: string;
  kind: 'changed' | 'removed';
  before?: unknown;
  after?: unknown;
}

const isPlain = (v: unknown): v is Record<string, unknown> | unknown[] => typeof v === 'object' && v !== null;

function jsonOf(v: unknown): unknown {
  if (typeof v !== 'string' || !/^\s*[[{]/.test(v)) return undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The values that differ between `before` and `after`, by dotted path (array items as `[i]`). A
 * JSON body held as a string is compared inside, so a masked field shows as that field, not as
 * the whole body. Only a report of what changed: the change itself came from the processor.
 */
export function diffValues(before: unknown, after: unknown, path = '', out: Change[] = []): Change[] {
  if (Object.is(before, after)) return out;
  const bj = jsonOf(before);
  const aj = jsonOf(after);
  if (bj !== undefined && aj !== undefined) return diffValues(bj, aj, path, out);
  if (isPlain(before) && isPlain(after) && Array.isArray(before) === Array.isArray(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    for (const k of keys) {
      const b = (before as Record<string, unknown>)[k];
      const a = (after as Record<string, unknown>)[k];
      const sub = Array.isArray(before) ? `${path}[${k}]` : path ? `${path}.${k}` : k;
      if (!(k in after)) out.push({ path: sub, kind: 'removed', before: b });
      else diffValues(b, a, sub, out);
    }
    return out;
  }
  out.push({ path: path || '(record)', kind: after === undefined ? 'removed' : 'changed', before, after });
  return out;
}

/** Fields the redaction step adds for bookkeeping (`redacted`, sizes kept as received): not changed values. */
function isBookkeeping(c: Change): boolean {
  return (
    c.before === undefined &&
    (c.path === 'redacted' || c.path === 'request.size' || c.path === 'response.size')
  );
}

export function previewRedaction(
  accountSid: string,
  draft: RedactionDraft,
  sample: StoredRecord,
  bucketSid: string | undefined,
) {
  // Without a bucket to preview in, the bucket scope is not checked.
  const buckets = bucketSid ? scopeOrNull(draft.buckets) : null;
  const rules = emptyRules(accountSid);
  if (isSensitiveDraft(draft))
    rules.sensitiveRedactions.push({ ...sensitiveInput(draft), accountSid, buckets });
  else {
    const rule: RedactionRule = {
      sid: PREVIEW_SID,
      accountSid,
      name: PREVIEW_SID,
      fieldPath: draft.fieldPath,
      redactionType: draft.redactionType,
      replacementValue: draft.redactionType === 'replace' ? (draft.replacementValue ?? null) : null,
      buckets,
      environments: scopeOrNull(draft.environments),
    };
    rules.redactions.push(rule);
  }
  const ctx = context(accountSid, bucketSid ?? sample.bucketSid, rules);
  const env = environmentOf(sample);
  const sensitive = ctx.rules.sensitive;
  const applies =
    ctx.rules.redactions.some((r) => redactsIn(r.environments, env)) ||
    (sensitive !== null && sensitive.plansFor(env) !== null);
  const before = structuredClone(sample);
  const res = redactStep(structuredClone(sample), ctx);
  const after = res.kind === 'ok' ? res.record : before;
  const changes = diffValues(before, after).filter((c) => !isBookkeeping(c));
  return { applies, changed: changes.length > 0, before, after, changes };
}

export function previewExclusion(
  accountSid: string,
  draft: ExclusionDraft,
  sample: StoredRecord,
  bucketSid: string | undefined,
) {
  const buckets = bucketSid ? scopeOrNull(draft.buckets) : null;
  const environments = scopeOrNull(draft.environments);
  const rules = emptyRules(accountSid);
  if (isCriteriaDraft(draft)) {
    // A criteria text that does not parse is a 400 naming its position, as on create.
    compileExclusionCriteria(draft.criteria, 'body.rule.criteria');
    rules.criteriaExclusions.push({
      sid: PREVIEW_SID,
      accountSid,
      criteria: draft.criteria,
      buckets,
      environments,
    });
  } else {
    const rule: ExclusionRule = {
      sid: PREVIEW_SID,
      accountSid,
      name: PREVIEW_SID,
      pathPattern: draft.pathPattern,
      method: draft.method,
      statusCode: draft.statusCode ?? null,
      buckets,
      environments,
    };
    rules.exclusions.push(rule);
  }
  const ctx = context(accountSid, bucketSid ?? sample.bucketSid, rules);
  const env = environmentOf(sample);
  const applies =
    ctx.rules.exclusions.some((x) => inEnvironment(x, env)) ||
    ctx.rules.criteriaExclusions.some((x) => inEnvironment(x, env));
  const res = exclusionsStep(structuredClone(sample), ctx);
  const req = sample.request;
  const sc = sample.response?.statusCode;
  return {
    excluded: res.kind === 'exclude',
    applies,
    compared: {
      method: typeof req.method === 'string' ? req.method.toUpperCase() : '',
      path: typeof req.path === 'string' ? pathOnly(req.path) : '',
      statusCode: typeof sc === 'number' ? sc : null,
      environmentSid: typeof sample.environmentSid === 'string' ? sample.environmentSid : null,
    },
    record: sample,
  };
}
