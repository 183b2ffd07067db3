import { AppError } from '../shared/errors.js';
import {
  MAX_CRITERIA_LENGTH,
  SearchLanguageError,
  globMatches,
  parseCriteria,
  type Condition,
  type NumberCond,
  type ParsedTerm,
  type TextPattern,
} from '../shared/search-language.js';
import { endpointTemplate } from './steps/endpoint.step.js';

/**
 * Criteria exclusions (docs/rules.md): `criteria` in the stream-view search language
 * (docs/search.md), evaluated on one record in memory. The same parser as the SQL compiler
 * (services/shared/search-language.ts) and the same semantics as its SQL over the `requests`
 * columns, which services/processor/row.mapper.ts derives from the record:
 *
 * | field | column value from the record |
 * |---|---|
 * | method | `request.method` upper-cased, else '' |
 * | status | `response.statusCode` when a number, else 0 |
 * | path, bare word | `request.path` as stored (query included when the path holds one), else '' |
 * | endpoint | `record.endpoint`, else the template of the path (the endpoint step runs after exclusions) |
 * | duration | `timings.duration` when a finite number, else null (never matches; a negated term does) |
 * | env, context | `environmentSid`, `contextSid`, else '' |
 * | host | `request.host`, else '' |
 * | direction | `direction`, else 'in' |
 * | tag | `tags` as a map (a repeated key: the last value wins, as in the row) |
 * | blocked | `firewall.blocked` truthy |
 * | consumer, group | the record's own `consumer.id` / `consumer.group`, else '' (identification runs after exclusions) |
 *
 * Pure: no I/O. `compileExclusionCriteria` parses once (at rule load); `matches` runs per record.
 */

export interface CriteriaRecord {
  request: Record<string, unknown>;
  response?: Record<string, unknown> | null;
  timings?: Record<string, unknown> | null;
  endpoint?: string;
  [key: string]: unknown;
}

export interface CompiledExclusionCriteria {
  /** the criteria text as given */
  text: string;
  terms: readonly ParsedTerm[];
  /** whether the record matches every term (no terms: every record) */
  matches(record: CriteriaRecord): boolean;
}

export interface CriteriaParseFailure {
  message: string;
  /** 0-based character index in the criteria text */
  position: number;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** ClickHouse `lower()` lower-cases ASCII letters only; the evaluator does the same. */
const asciiLower = (s: string): string => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

function numberMatches(v: number, c: NumberCond): boolean {
  if (c.kind === 'range') return v >= c.lo && v <= c.hi;
  switch (c.op) {
    case '=':
      return v === c.value;
    case '!=':
      return v !== c.value;
    case '>':
      return v > c.value;
    case '>=':
      return v >= c.value;
    case '<':
      return v < c.value;
    case '<=':
      return v <= c.value;
  }
}

const textMatches = (v: string, p: TextPattern): boolean =>
  p.wildcard ? globMatches(v, p.value) : v === p.value;

/** Per-record values, computed on first use: most criteria read two or three fields. */
class View {
  private tagMap: Map<string, string> | null = null;
  private endpointValue: string | null = null;
  constructor(readonly r: CriteriaRecord) {}

  get path(): string {
    return str(this.r.request.path);
  }
  get endpoint(): string {
    if (this.endpointValue === null)
      this.endpointValue =
        typeof this.r.endpoint === 'string' ? this.r.endpoint : this.path ? endpointTemplate(this.path) : '';
    return this.endpointValue;
  }
  get tags(): Map<string, string> {
    if (this.tagMap === null) {
      this.tagMap = new Map();
      if (Array.isArray(this.r.tags))
        for (const t of this.r.tags as unknown[])
          if (t && typeof t === 'object') {
            const { key, value } = t as { key?: unknown; value?: unknown };
            if (typeof key === 'string') this.tagMap.set(key, str(value));
          }
    }
    return this.tagMap;
  }
}

function conditionMatches(c: Condition, v: View): boolean {
  const r = v.r;
  switch (c.field) {
    case 'word':
      return v.path.toLowerCase().includes(c.value.toLowerCase());
    case 'method': {
      const m = str(r.request.method).toUpperCase();
      return c.values.includes(m);
    }
    case 'status': {
      const sc = r.response?.statusCode;
      const status = typeof sc === 'number' ? sc : 0;
      return c.alternatives.some((a) => numberMatches(status, a));
    }
    case 'duration': {
      const d = r.timings?.duration;
      return typeof d === 'number' && Number.isFinite(d) && numberMatches(d, c.cond);
    }
    case 'path':
      return textMatches(v.path, c.pattern);
    case 'endpoint':
      return textMatches(v.endpoint, c.pattern);
    case 'host': {
      const host = str(r.request.host);
      return c.alternatives.some((a) =>
        a.wildcard ? globMatches(host, a.value, true) : asciiLower(host) === a.value,
      );
    }
    case 'env':
      return c.values.includes(str(r.environmentSid));
    case 'context':
      return c.values.includes(str(r.contextSid));
    case 'consumer':
    case 'group': {
      // The record's own consumer: exclusions run before server-side identification.
      const consumer = r.consumer as Record<string, unknown> | null | undefined;
      return c.values.includes(str(consumer?.[c.field === 'consumer' ? 'id' : 'group']));
    }
    case 'direction':
      return (typeof r.direction === 'string' ? r.direction : 'in') === c.value;
    case 'blocked':
      return Boolean((r.firewall as { blocked?: unknown } | null | undefined)?.blocked) === c.value;
    case 'tag': {
      const tags = v.tags;
      if (!tags.has(c.key)) return false;
      return c.value === null || textMatches(tags.get(c.key)!, c.value);
    }
  }
}

/** Evaluates parsed terms on a record: every term must hold (a negated term must not). */
export function evaluateTerms(terms: readonly ParsedTerm[], record: CriteriaRecord): boolean {
  if (terms.length === 0) return true;
  const view = new View(record);
  for (const t of terms) if (conditionMatches(t.condition, view) === t.negated) return false;
  return true;
}

/**
 * Parses criteria for in-memory evaluation; `{ok: false}` carries the message and position.
 * Used where a stored rule is loaded (a rule that no longer parses is skipped, not fatal).
 */
export function tryCompileExclusionCriteria(
  text: string,
): { ok: true; compiled: CompiledExclusionCriteria } | { ok: false; error: CriteriaParseFailure } {
  try {
    const terms = parseCriteria(text);
    return { ok: true, compiled: { text, terms, matches: (record) => evaluateTerms(terms, record) } };
  } catch (err) {
    if (err instanceof SearchLanguageError)
      return { ok: false, error: { message: err.message, position: err.position } };
    throw err;
  }
}

/**
 * Parses criteria for in-memory evaluation.
 * @throws AppError 400 VALIDATION_ERROR whose message and details give the position, e.g.
 *   `{[field]: 'Unknown search field "colour"; …', position: 11}`
 */
export function compileExclusionCriteria(text: string, field = 'body.criteria'): CompiledExclusionCriteria {
  if (typeof text !== 'string')
    throw new AppError(400, 'VALIDATION_ERROR', 'Exclusion criteria must be text', {
      [field]: 'must be a string',
    });
  if (text.length > MAX_CRITERIA_LENGTH) {
    const message = `Exclusion criteria are longer than ${MAX_CRITERIA_LENGTH} characters`;
    throw new AppError(400, 'VALIDATION_ERROR', message, { [field]: message, position: MAX_CRITERIA_LENGTH });
  }
  const res = tryCompileExclusionCriteria(text);
  if (!res.ok)
    throw new AppError(
      400,
      'VALIDATION_ERROR',
      `Invalid exclusion criteria at position ${res.error.position}: ${res.error.message}`,
      { [field]: res.error.message, position: res.error.position },
    );
  return res.compiled;
}
