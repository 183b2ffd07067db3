import type { RE2JS } from 're2js';
import { customMatches } from './custom.js';
import { DETECTORS, maskText, type Detector } from './detectors.js';
import { PF, prefilterBits } from './prefilter.js';
import type { Level } from './types.js';

/**
 * Matchers (one per rule × role) and the text scan shared by every body format, header and URL.
 * A `Plan` is what applies to one scope: value matchers (find secrets inside a text) and key
 * matchers (a field name designates a secret; its whole value is redacted).
 */

export interface ValueMatcher {
  type: string;
  level: Level;
  /** predefined detector, or null for a custom pattern */
  detector: Detector | null;
  custom: RE2JS | null;
}

export interface KeyMatcher {
  type: string;
  level: Level;
  detector: Detector | null;
  custom: RE2JS | null;
  /** field name -> matches; names repeat across records, so each is tested once */
  cache: Map<string, boolean>;
}

export interface Plan {
  values: ValueMatcher[];
  keys: KeyMatcher[];
  /** whether any value matcher is predefined (its patterns then run, behind their gates) */
  hasPredefined: boolean;
  hasCustomValues: boolean;
  /**
   * Whether a raw body text may name a key some key matcher wants: a case-insensitive regex of
   * fragments, or null when a custom key matcher is present (then every body is walked).
   */
  keyHint: RegExp | null;
  /**
   * Short texts this plan's value matchers found nothing in (header values, query values and
   * other strings repeat from record to record), so a repeat costs a lookup, not a scan.
   */
  clean: Map<string, true>;
  /** The same for scans that also look for `name=value` pairs (header values, tag values). */
  cleanPairs: Map<string, true>;
}

export const EMPTY_PLAN: Plan = {
  values: [],
  keys: [],
  hasPredefined: false,
  hasCustomValues: false,
  keyHint: null,
  clean: new Map(),
  cleanPairs: new Map(),
};

export const isEmptyPlan = (p: Plan): boolean => p.values.length === 0 && p.keys.length === 0;

/** Fragments every predefined secret key name contains (isSecretKey, isAuthorizationKey). */
const KEY_HINT = /pass|pwd|secret|token|key|credential|cookie|session|pin|cvv|cvc|otp|auth/i;
/** The same fragments inside a JSON property name (`"…key…":`), not in a value (`"whiskey"`). */
export const JSON_KEY_HINT =
  /(?:pass|pwd|secret|token|key|credential|cookie|session|pin|cvv|cvc|otp|auth)[^"\\]{0,128}"[ \t\r\n]{0,16}:/i;

export function buildPlan(values: ValueMatcher[], keys: KeyMatcher[]): Plan {
  // One regex joining every pattern (`a|b|c…`) costs more than the sum of the gated patterns
  // (irregexp tries each alternative at each position), so each pattern runs on its own.
  return {
    values,
    keys,
    hasPredefined: values.some((v) => v.detector !== null),
    hasCustomValues: values.some((v) => v.custom !== null),
    keyHint: keys.some((k) => k.custom !== null) ? null : keys.length ? KEY_HINT : null,
    clean: new Map(),
    cleanPairs: new Map(),
  };
}

const CACHE_LIMIT = 10_000;

/** The first key matcher that claims `name`, or null. */
export function keyMatch(plan: Plan, name: string): KeyMatcher | null {
  for (const k of plan.keys) {
    let hit = k.cache.get(name);
    if (hit === undefined) {
      hit = k.detector ? (k.detector.key?.(name) ?? false) : k.custom!.test(name);
      if (k.cache.size >= CACHE_LIMIT) k.cache.clear();
      k.cache.set(name, hit);
    }
    if (hit) return k;
  }
  return null;
}

/**
 * Whether a raw body text may hold something for this plan (false = certainly nothing). `json`:
 * the text is JSON, so a key can only be a property name; a JSON text with a backslash may hide
 * anything behind escapes (`\u0040`) and always counts as a candidate.
 */
export function mayHold(plan: Plan, text: string, json = false): boolean {
  if (json && text.includes('\\')) return true;
  // A custom pattern may be anchored (`^…$`) or refuse quotes: run on the raw document it may miss
  // what it finds in a decoded value, so a plan with one always walks the body.
  if (plan.hasCustomValues) return true;
  const bits = prefilterBits(text);
  if (
    plan.keys.length &&
    (plan.keyHint === null ||
      (json ? (bits & PF.jsonKey) !== 0 && JSON_KEY_HINT.test(text) : plan.keyHint.test(text)))
  )
    return true;
  if (plan.hasPredefined)
    for (const v of plan.values)
      if (v.detector)
        for (const p of v.detector.patterns) {
          if ((bits & p.bit) === 0 || text.length < p.minLength || (p.gate && !p.gate(text))) continue;
          p.re.lastIndex = 0;
          if (p.re.test(text)) return true;
        }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Levels

const fullTexts = new Map<string, string>();
/**
 * The replacement of a fully redacted value, one string per type: a body with many matches keeps
 * a span per match until it is rewritten, and a new string for each would be that much more
 * garbage to carry through the young generation.
 */
export const fullText = (type: string): string => {
  let t = fullTexts.get(type);
  if (t === undefined) {
    t = `[REDACTED:${type}]`;
    if (fullTexts.size < 1024) fullTexts.set(type, t);
  }
  return t;
};

/** Custom `partial`: the last 4 letters/digits stay when there are at least 8, else all are masked. */
function customPartial(s: string): string {
  const chars = [...s];
  const alnum = chars.filter((c) => /[\p{L}\p{N}]/u.test(c)).length;
  if (alnum < 8) return maskText(s);
  let seen = 0;
  for (let i = chars.length - 1; i >= 0; i--) {
    if (!/[\p{L}\p{N}]/u.test(chars[i]!)) continue;
    if (seen++ >= 4) chars[i] = '*';
  }
  return chars.join('');
}

/** The replacement of a matched text. */
export function applyLevel(text: string, type: string, level: Level, detector: Detector | null): string {
  if (level === 'full') return fullText(type);
  if (level === 'mask') return maskText(text);
  if (!detector) return customPartial(text);
  if (detector.type === 'password') return fullText(type);
  return detector.keepPartial(text);
}

/** Every scalar masked, keys kept (the `mask` level of a whole object or array). */
function maskDeep(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return maskText(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return maskText(String(v));
  if (v === null || typeof v !== 'object') return v;
  if (depth > 256) return fullText('depth');
  if (Array.isArray(v)) return v.map((x) => maskDeep(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = maskDeep(x, depth + 1);
  return out;
}

/**
 * The redacted form of a whole field value claimed by a key matcher: null/undefined stay (nothing
 * to hide). `full` gives the string `[REDACTED:type]` whatever the value; `mask` keeps the shape
 * (scalars become masked strings); `partial` applies the type's partial rule to a string value
 * (`password` and custom key types: the same as `full`) and masks anything else. `label` names
 * the value in `[REDACTED:label]` when it is more precise than the rule's type (a cookie header).
 */
export function redactWhole(v: unknown, m: KeyMatcher, label = m.type): unknown {
  if (v === null || v === undefined) return v;
  if (m.level === 'full') return fullText(label);
  if (m.level === 'mask') return maskDeep(v);
  if (m.detector === null || m.detector.type === 'password') return fullText(label);
  return typeof v === 'string' ? m.detector.keepPartial(v) : maskDeep(v);
}

// ---------------------------------------------------------------------------------------------
// Scanning a text

interface Span {
  start: number;
  end: number;
  /** 0 = a key's value (wins a tie), 1 = a value match */
  priority: number;
  replacement: string;
  type: string;
}

function valueSpans(text: string, plan: Plan, out: Span[]): void {
  const bits = plan.hasPredefined ? prefilterBits(text) : 0;
  for (const m of plan.values) {
    if (m.detector) {
      for (const p of m.detector.patterns) {
        if ((bits & p.bit) === 0 || text.length < p.minLength || (p.gate && !p.gate(text))) continue;
        const re = p.re;
        re.lastIndex = 0;
        let x: RegExpExecArray | null;
        while ((x = re.exec(text)) !== null) {
          const s = x[0];
          if (p.validate && !p.validate(s)) {
            // A rejected candidate: look again one character later (another shape may start inside).
            re.lastIndex = x.index + 1;
            continue;
          }
          out.push({
            start: x.index,
            end: x.index + s.length,
            priority: 1,
            replacement: applyLevel(s, m.type, m.level, m.detector),
            type: m.type,
          });
        }
      }
    } else {
      for (const [start, end] of customMatches(m.custom!, text))
        out.push({
          start,
          end,
          priority: 1,
          replacement: applyLevel(text.slice(start, end), m.type, m.level, null),
          type: m.type,
        });
    }
  }
}

/**
 * `name=value`, `name: value`, `"name": "value"` in free text (a text body, a JSON body that does
 * not parse): the value of a name a key matcher claims. An unquoted value ends at white space or
 * `& , ; " ' < > = :`; an `Authorization` value runs to the end of its line (`Bearer <token>`).
 * Bounded quantifiers and a lookbehind on the name keep it linear (detectors.ts).
 */
const TEXT_PAIR =
  /(?<![A-Za-z0-9_.-])(["']?)([A-Za-z_][A-Za-z0-9_.-]{0,63})\1[ \t]{0,3}[:=][ \t]{0,3}("(?:[^"\\\n]|\\.){0,1024}"|'[^'\n]{0,1024}'|[^\s&,;"'<>=:]{1,1024})/g;

/** A redaction mark (`[REDACTED]`, `[REDACTED:password]`) where a pair's value starts. */
const MARK = /\[REDACTED(?::[^\]\s]{1,100})?\]/y;

function pairSpans(text: string, plan: Plan, out: Span[]): void {
  if (plan.keys.length === 0) return;
  // A pair needs a separator: most header values (ids, addresses, agents) stop at these two scans.
  if (!text.includes('=') && !text.includes(':')) return;
  if (plan.keyHint !== null && !plan.keyHint.test(text)) return;
  TEXT_PAIR.lastIndex = 0;
  let x: RegExpExecArray | null;
  while ((x = TEXT_PAIR.exec(text)) !== null) {
    const k = keyMatch(plan, x[2]!);
    if (!k) {
      // The value may itself hold a `name=value`: continue right after the separator.
      TEXT_PAIR.lastIndex = x.index + x[0].length - x[3]!.length;
      continue;
    }
    const raw = x[3]!;
    let start = x.index + x[0].length - raw.length;
    let end = start + raw.length;
    if (raw[0] === '[') {
      // A value already redacted stays as it is (the unquoted value would end at the mark's `:`).
      MARK.lastIndex = start;
      if (MARK.test(text)) {
        TEXT_PAIR.lastIndex = MARK.lastIndex;
        continue;
      }
    }
    const quoted = raw[0] === '"' || raw[0] === "'";
    if (quoted) {
      start++;
      end--;
    } else if (k.detector?.type === 'authorization') {
      const eol = text.slice(end, end + 4096).search(/[\r\n]/);
      end = eol < 0 ? Math.min(text.length, end + 4096) : end + eol;
    }
    if (end <= start) continue;
    // A full redaction does not read the value: no slice of it then.
    const red = redactWhole(k.level === 'full' ? '' : text.slice(start, end), k);
    out.push({
      start,
      end,
      priority: 0,
      replacement: typeof red === 'string' ? red : fullText(k.type),
      type: k.type,
    });
    TEXT_PAIR.lastIndex = Math.max(TEXT_PAIR.lastIndex, end);
  }
}

/**
 * `[start, end)` of every validated predefined match in a raw JSON text, sorted by start, or null
 * when the text cannot be pre-scanned soundly (a backslash: escapes hide text; a custom value
 * pattern: it may be anchored). Sound otherwise because no predefined pattern can match a `"` nor
 * look at one: a string value holds a match exactly when the raw text holds one inside it.
 */
export function jsonCandidates(text: string, plan: Plan): [number, number][] | null {
  if (plan.hasCustomValues || text.includes('\\')) return null;
  const spans: Span[] = [];
  valueSpans(text, plan, spans);
  return spans.map((x): [number, number] => [x.start, x.end]).sort((a, b) => a[0] - b[0]);
}

/** Non-overlapping spans: leftmost first, then a key's value, then the longest, then rule order. */
function resolve(spans: Span[]): Span[] {
  if (spans.length <= 1) return spans;
  const order = (a: Span, b: Span) => a.start - b.start || a.priority - b.priority || b.end - a.end;
  // Each matcher finds its spans left to right, so a text one matcher claims (a long run of
  // `name=value` pairs, say) comes in order already: no index wrappers and no sort then, which
  // keeps a large body's spans few enough objects for the young generation.
  let inOrder = true;
  for (let i = 1; i < spans.length && inOrder; i++) inOrder = order(spans[i - 1]!, spans[i]!) <= 0;
  const sorted = inOrder
    ? spans
    : spans
        .map((s, i) => ({ s, i }))
        .sort((a, b) => order(a.s, b.s) || a.i - b.i)
        .map((x) => x.s);
  const out: Span[] = [];
  let reach = -1;
  for (const s of sorted) {
    if (s.start < reach) continue;
    out.push(s);
    reach = s.end;
  }
  return out;
}

/** Texts up to this length are remembered when clean, at most CLEAN_LIMIT of them per plan. */
const CLEAN_MAX_LENGTH = 128;
const CLEAN_LIMIT = 512;

export interface ScanResult {
  text: string;
  /** the types redacted, in order of first appearance */
  types: string[];
}

/**
 * Scans one text with the plan's value matchers (and, with `pairs`, `name=value` pairs for the key
 * matchers). Returns null when nothing matched, else the text with each match replaced.
 */
export function scanText(text: string, plan: Plan, pairs = false): ScanResult | null {
  if (text.length === 0) return null;
  // Without key matchers a pair scan finds what a value scan finds: one cache serves both.
  const clean = pairs && plan.keys.length ? plan.cleanPairs : plan.clean;
  const cacheable = text.length <= CLEAN_MAX_LENGTH;
  if (cacheable && clean.has(text)) return null;
  const spans: Span[] = [];
  if (pairs) pairSpans(text, plan, spans);
  valueSpans(text, plan, spans);
  if (spans.length === 0) {
    if (cacheable) {
      if (clean.size >= CLEAN_LIMIT) clean.clear();
      clean.set(text, true);
    }
    return null;
  }
  const chosen = resolve(spans);
  let out = '';
  let at = 0;
  const types: string[] = [];
  for (const s of chosen) {
    // A key's value already in its redacted form (`Authorization: Bearer ****`) is no change.
    if (
      s.priority === 0 &&
      s.end - s.start === s.replacement.length &&
      text.startsWith(s.replacement, s.start)
    )
      continue;
    out += text.slice(at, s.start) + s.replacement;
    at = s.end;
    if (!types.includes(s.type)) types.push(s.type);
  }
  if (types.length === 0) return null;
  return { text: out + text.slice(at), types };
}

export { DETECTORS };
