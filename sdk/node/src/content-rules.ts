import { tryCompileExclusionCriteria } from '../../../services/processor/exclusion-criteria.js';
import {
  compileSensitiveRules,
  redactSensitive,
  SENSITIVE_RECORD_FIELDS,
  type CompiledSensitiveRules,
  type SensitiveRuleInput,
} from '../../../services/processor/sensitive/index.js';
import type { CapturedRecord, RemoteExclusionCriteria } from './types.js';

/**
 * Criteria exclusions and sensitive-data redactions in the host (docs/sdk.md, "Settings and rules"):
 * `exclusionCriteria` (the stream-view search language) and `sensitiveRules` (predefined and custom
 * sensitive-data types) from the bucket's SDK settings. The evaluators are the processor's own
 * (services/processor/exclusion-criteria.ts, services/processor/sensitive/), bundled into the SDK's dist by
 * tsup, so a record is judged and redacted in the host exactly as the server would. Nothing here throws: a
 * rule that does not compile is reported and skipped.
 */

export interface CompiledCriteria {
  sid: string;
  /** rule identity: the same rule is never applied twice to one record */
  key: string;
  environments: Set<string> | null;
  matches: (record: CapturedRecord) => boolean;
}

export interface SkippedRule {
  sid: string;
  error: string;
}

const sidOf = (v: unknown, i: number): string => (typeof v === 'string' && v ? v : `#${i}`);

/** Compiles the criteria exclusions; those that do not parse are returned in `skipped`. */
export function compileCriteria(list: readonly RemoteExclusionCriteria[]): {
  rules: CompiledCriteria[];
  skipped: SkippedRule[];
} {
  const rules: CompiledCriteria[] = [];
  const skipped: SkippedRule[] = [];
  list.forEach((x, i) => {
    const sid = sidOf(x?.sid, i);
    try {
      if (!x || typeof x.criteria !== 'string') throw new Error('criteria must be a string');
      const res = tryCompileExclusionCriteria(x.criteria);
      if (!res.ok) throw new Error(`at position ${res.error.position}: ${res.error.message}`);
      const envs = Array.isArray(x.environments) && x.environments.length ? new Set(x.environments) : null;
      rules.push({
        sid,
        key: JSON.stringify(['criteria', x.criteria, x.environments ?? null]),
        environments: envs,
        matches: (r) => res.compiled.matches(r as unknown as Parameters<typeof res.compiled.matches>[0]),
      });
    } catch (err) {
      skipped.push({ sid, error: (err as Error)?.message ?? String(err) });
    }
  });
  return { rules, skipped };
}

/** The first criteria exclusion matching the record (of its environment), or undefined. */
export function excludedByCriteria(
  rules: readonly CompiledCriteria[],
  record: CapturedRecord,
  env: string,
): CompiledCriteria | undefined {
  for (const x of rules) {
    if (x.environments !== null && !x.environments.has(env)) continue;
    if (x.matches(record)) return x;
  }
  return undefined;
}

export interface CompiledSensitive {
  /** one key per rule, in the order given (the compiled set applies them in that order) */
  keys: string[];
  inputs: SensitiveRuleInput[];
  compiled: CompiledSensitiveRules | null;
  skipped: SkippedRule[];
}

const keyOf = (r: SensitiveRuleInput): string =>
  JSON.stringify([
    'sensitive',
    r.sid,
    r.type,
    r.pattern ?? null,
    r.applyTo ?? null,
    r.level,
    r.scopes ?? null,
    r.environments ?? null,
  ]);

/**
 * Compiles the sensitive-data redactions with the server's engine. Rules the engine refuses (an unknown
 * type, a pattern RE2 cannot compile) are left out and listed in `skipped`; `compiled` is null
 * when no rule remains.
 */
export function compileSensitive(list: readonly unknown[]): CompiledSensitive {
  const inputs: SensitiveRuleInput[] = [];
  const skipped: SkippedRule[] = [];
  list.forEach((r, i) => {
    if (r && typeof r === 'object' && typeof (r as { type?: unknown }).type === 'string')
      inputs.push({ ...(r as SensitiveRuleInput), sid: sidOf((r as { sid?: unknown }).sid, i) });
    else skipped.push({ sid: sidOf((r as { sid?: unknown } | null)?.sid, i), error: 'not a rule' });
  });
  return withInputs(inputs, skipped);
}

function withInputs(inputs: SensitiveRuleInput[], skipped: SkippedRule[] = []): CompiledSensitive {
  if (inputs.length === 0) return { keys: [], inputs, compiled: null, skipped };
  let compiled: CompiledSensitiveRules | null = null;
  try {
    compiled = compileSensitiveRules(inputs);
    for (const e of compiled.errors) skipped.push(e);
    if (compiled.size === 0) compiled = null;
  } catch (err) {
    // The engine throws only on a bug of its own: every rule is skipped rather than the host hurt.
    for (const r of inputs) skipped.push({ sid: r.sid, error: (err as Error)?.message ?? String(err) });
    compiled = null;
  }
  return { keys: inputs.map(keyOf), inputs, compiled, skipped };
}

/** The same rules without those whose key is in `applied` (for a record redacted under older rules). */
export function sensitiveWithout(set: CompiledSensitive, applied: ReadonlySet<string>): CompiledSensitive {
  const rest = set.inputs.filter((_, i) => !applied.has(set.keys[i]!));
  return rest.length === set.inputs.length ? set : withInputs(rest);
}

/** A body's byte size as the server's row mapper computes it when a record gives none. */
export const byteSize = (body: unknown): number =>
  body == null ? 0 : Buffer.byteLength(typeof body === 'string' ? body : (JSON.stringify(body) ?? ''));

export const hasSize = (n: unknown): boolean => typeof n === 'number' && n >= 0;

/**
 * Applies sensitive-data redactions to a record in place: its `request` / `response` parts (and the
 * record fields the engine rewrites: `endpoint`, `tags`) are replaced by the engine's redacted
 * copies, the record is marked `redacted: true`, and a part without a
 * size gets the byte size of its body as received (sizes stay as received, as on the server,
 * services/processor/steps/redact.step.ts). `received` gives those sizes when an earlier rule
 * (a field rule) has already rewritten a body. True when something was redacted.
 */
export function redactSensitiveRules(
  record: CapturedRecord,
  set: CompiledSensitive,
  received: { request?: number; response?: number } = {},
): boolean {
  if (set.compiled === null) return false;
  const res = redactSensitive(record as unknown as Parameters<typeof redactSensitive>[0], set.compiled);
  if (!res.redacted) return false;
  const request = res.record.request as unknown as CapturedRecord['request'];
  const response = (res.record.response ?? null) as unknown as CapturedRecord['response'];
  if (request !== record.request && !hasSize(record.request.size))
    request.size = received.request ?? byteSize(record.request.body);
  if (response && record.response && response !== record.response && !hasSize(record.response.size))
    response.size = received.response ?? byteSize(record.response.body);
  record.request = request;
  record.response = response;
  const target = record as unknown as Record<string, unknown>;
  const redacted = res.record as unknown as Record<string, unknown>;
  for (const f of SENSITIVE_RECORD_FIELDS) if (redacted[f] !== target[f]) target[f] = redacted[f];
  (record as CapturedRecord & { redacted?: boolean }).redacted = true;
  return true;
}
