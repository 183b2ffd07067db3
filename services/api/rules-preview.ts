import { validation } from '../shared/errors.js';
import { parseFieldPath } from '../shared/field-path.js';
import { normalizeRecords } from '../ingest/record.normalizer.js';
import { compileProcessorRules, forEnvironment } from '../processor/compiled-rules.js';
import { pathOnly } from '../processor/path-pattern.js';
import type { StepContext, StoredRecord } from '../processor/pipeline.js';
import type { ExclusionRule, RedactionRule, RedactionType } from '../processor/rule-snapshot.js';
import { exclusionsStep } from '../processor/steps/exclusions.step.js';
import { redactStep } from '../processor/steps/redact.step.js';
import { scopeOrNull } from './exclusions.repository.js';

/**
 * Previews of draft rules (docs/rules.md, "Previewing a rule"): one draft rule applied to one sample
 * record with the processor's own code — the rule compiled as the rule snapshot compiles it
 * (compileProcessorRules), scoped to the bucket as the processor scopes it (forBucket), and run by
 * the processor's exclusion and redaction steps. Nothing here matches or redacts by itself.
 */

const PREVIEW_SID = 'preview';

export interface RedactionDraft {
  fieldPath: string;
  redactionType: RedactionType;
  replacementValue?: string | null;
  buckets?: string[] | null;
  environments?: string[] | null;
}

export interface ExclusionDraft {
  pathPattern: string;
  method: string;
  statusCode?: number | null;
  buckets?: string[] | null;
  environments?: string[] | null;
}

/** Deepest nesting of a pasted sample: the rule steps and the diff walk records recursively. */
const MAX_SAMPLE_DEPTH = 64;

/** Levels of objects and arrays in `value`, counted without recursion (a hostile sample may nest thousands). */
function nestingDepth(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d + 1 > max) max = d + 1;
    if (max > MAX_SAMPLE_DEPTH) return max;
    for (const child of Object.values(v as Record<string, unknown>)) stack.push([child, d + 1]);
  }
  return max;
}

/**
 * A pasted sample, checked and completed as ingest does it (normalizeRecords), so the preview sees
 * what the processor would receive. Field errors name `body.record.<field>`.
 */
export function sampleFromInput(record: Record<string, unknown>, bucketSid: string): StoredRecord {
  if (nestingDepth(record) > MAX_SAMPLE_DEPTH) {
    throw validation(`The sample record nests deeper than ${MAX_SAMPLE_DEPTH} levels`, {
      'body.record': `at most ${MAX_SAMPLE_DEPTH} levels of objects and arrays`,
    });
  }
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

function context(accountSid: string, bucketSid: string, rules: ReturnType<typeof compileProcessorRules>) {
  const ctx: StepContext = { accountSid, bucketSid, rules: rules.forBucket(bucketSid) };
  return ctx;
}

/** What the redaction step checks beyond the schema, as the redactions API checks it. */
export function checkRedactionDraft(rule: RedactionDraft): void {
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

export function previewRedaction(
  accountSid: string,
  draft: RedactionDraft,
  sample: StoredRecord,
  bucketSid: string | undefined,
) {
  const rule: RedactionRule = {
    sid: PREVIEW_SID,
    accountSid,
    name: PREVIEW_SID,
    fieldPath: draft.fieldPath,
    redactionType: draft.redactionType,
    replacementValue: draft.redactionType === 'replace' ? (draft.replacementValue ?? null) : null,
    // Without a bucket to preview in, the bucket scope is not checked.
    buckets: bucketSid ? scopeOrNull(draft.buckets) : null,
    environments: scopeOrNull(draft.environments),
  };
  const rules = compileProcessorRules({
    accountSid,
    accountName: '',
    bucketNames: new Map(),
    exclusions: [],
    redactions: [rule],
    workflows: [],
  });
  const ctx = context(accountSid, bucketSid ?? sample.bucketSid, rules);
  const applies = forEnvironment(ctx.rules.redactions, sample.environmentSid).length > 0;
  const before = structuredClone(sample);
  const res = redactStep(structuredClone(sample), ctx);
  const after = res.kind === 'ok' ? res.record : before;
  const changes = diffValues(before, after);
  return { applies, changed: changes.length > 0, before, after, changes };
}

export function previewExclusion(
  accountSid: string,
  draft: ExclusionDraft,
  sample: StoredRecord,
  bucketSid: string | undefined,
) {
  const rule: ExclusionRule = {
    sid: PREVIEW_SID,
    accountSid,
    name: PREVIEW_SID,
    pathPattern: draft.pathPattern,
    method: draft.method,
    statusCode: draft.statusCode ?? null,
    buckets: bucketSid ? scopeOrNull(draft.buckets) : null,
    environments: scopeOrNull(draft.environments),
  };
  const rules = compileProcessorRules({
    accountSid,
    accountName: '',
    bucketNames: new Map(),
    exclusions: [rule],
    redactions: [],
    workflows: [],
  });
  const ctx = context(accountSid, bucketSid ?? sample.bucketSid, rules);
  const applies = forEnvironment(ctx.rules.exclusions, sample.environmentSid).length > 0;
  const res = exclusionsStep(structuredClone(sample), ctx);
  const req = sample.request;
  const sc = sample.response?.statusCode;
  return {
    excluded: res.kind === 'drop' && res.excluded === true,
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
