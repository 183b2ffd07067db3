/**
 * The stream-view search language (docs/search.md): tokenizer and parser into typed conditions.
 * One language, two back ends: services/api/requests/criteria.compiler.ts turns the conditions into a
 * ClickHouse WHERE fragment, services/processor/exclusion-criteria.ts evaluates them on a record in
 * memory. Pure: no I/O, no state. Errors are `SearchLanguageError` with the position (0-based
 * character index in the criteria text) of the term at fault.
 */

export const MAX_CRITERIA_LENGTH = 4096;
export const MAX_TERMS = 50;
const MAX_ALTERNATIVES = 20;

export const CRITERIA_FIELDS = [
  'method',
  'status',
  'path',
  'endpoint',
  'duration',
  'env',
  'host',
  'direction',
  'context',
  'tag',
  'blocked',
  'consumer',
  'group',
] as const;
export type CriteriaField = (typeof CRITERIA_FIELDS)[number];

export interface Term {
  negated: boolean;
  /** null for a bare word (substring of the path) */
  field: string | null;
  value: string;
  quoted: boolean;
  position: number;
}

export class SearchLanguageError extends Error {
  constructor(
    message: string,
    /** 0-based index in the criteria text of the term (or character) at fault */
    readonly position: number,
  ) {
    super(message);
    this.name = 'SearchLanguageError';
  }
}

/** Shortens input echoed in an error message. */
const show = (s: string) => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);

const isSpace = (c: string) => /\s/.test(c);

/** Splits the text into terms: `[-]field:value`, `[-]field:"quoted value"`, `[-]word`, `[-]"quoted word"`. */
export function tokenize(text: string): Term[] {
  const terms: Term[] = [];
  let i = 0;
  const n = text.length;

  const readQuoted = (): string => {
    const start = i;
    i++; // opening quote
    let out = '';
    while (i < n) {
      const c = text[i]!;
      if (c === '\\' && i + 1 < n) {
        out += text[i + 1];
        i += 2;
        continue;
      }
      if (c === '"') {
        i++;
        if (i < n && !isSpace(text[i]!))
          throw new SearchLanguageError(`Unexpected character after the quoted value at position ${i}`, i);
        return out;
      }
      out += c;
      i++;
    }
    throw new SearchLanguageError(`Unterminated quote starting at position ${start}`, start);
  };
  const readBare = (): string => {
    const start = i;
    while (i < n && !isSpace(text[i]!)) i++;
    return text.slice(start, i);
  };

  while (i < n) {
    if (isSpace(text[i]!)) {
      i++;
      continue;
    }
    const position = i;
    let negated = false;
    if (text[i] === '-') {
      negated = true;
      i++;
      if (i >= n || isSpace(text[i]!))
        throw new SearchLanguageError(`A "-" at position ${position} must be followed by a term`, position);
    }
    if (text[i] === '"') {
      terms.push({ negated, field: null, value: readQuoted(), quoted: true, position });
    } else {
      // A field name is letters only; anything else before a colon makes the term a bare word.
      const m = /^([A-Za-z]+):/.exec(text.slice(i, i + 40));
      if (m) {
        i += m[0].length;
        const field = m[1]!;
        if (i < n && text[i] === '"')
          terms.push({ negated, field, value: readQuoted(), quoted: true, position });
        else terms.push({ negated, field, value: readBare(), quoted: false, position });
      } else {
        const word = readBare();
        // `foo_bar:x` or `x.y:z` look like a mistyped field: say so rather than search the path.
        const colon = /^([\w.-]{1,40}):/.exec(word);
        if (colon) throw new SearchLanguageError(`Unknown search field ${show(colon[1]!)}`, position);
        terms.push({ negated, field: null, value: word, quoted: false, position });
      }
    }
    if (terms.length > MAX_TERMS)
      throw new SearchLanguageError(`Search criteria have more than ${MAX_TERMS} terms`, position);
  }
  return terms;
}

// ---------------------------------------------------------------------------------------------
// Typed conditions

export type CompareOp = '=' | '!=' | '>' | '>=' | '<' | '<=';

/** A number condition: a comparison, or an inclusive range `lo..hi`. */
export type NumberCond =
  { kind: 'compare'; op: CompareOp; value: number } | { kind: 'range'; lo: number; hi: number };

/** A text pattern: exact, or with `*` wildcards (any run of characters). */
export interface TextPattern {
  value: string;
  wildcard: boolean;
}

export type Condition =
  /** bare word: case-insensitive substring of the path */
  | { field: 'word'; value: string }
  /** methods upper-cased, OR-ed */
  | { field: 'method'; values: string[] }
  /** status code alternatives, OR-ed (a class `5xx` is a range) */
  | { field: 'status'; alternatives: NumberCond[] }
  /** milliseconds; a record without a duration never matches */
  | { field: 'duration'; cond: NumberCond }
  | { field: 'path'; pattern: TextPattern }
  | { field: 'endpoint'; pattern: TextPattern }
  /** exact values are lower-cased (compared with the ASCII-lower-cased host); wildcards are case-insensitive */
  | { field: 'host'; alternatives: TextPattern[] }
  | { field: 'env'; values: string[] }
  | { field: 'context'; values: string[] }
  | { field: 'direction'; value: 'in' | 'out' }
  | { field: 'blocked'; value: boolean }
  /** `tag:key` (present) or `tag:key=value` (value exact or with wildcards) */
  | { field: 'tag'; key: string; value: TextPattern | null }
  /** consumer ids (docs/consumers.md), exact, OR-ed */
  | { field: 'consumer'; values: string[] }
  /** consumer groups as the records carried them, exact, OR-ed */
  | { field: 'group'; values: string[] };

export interface ParsedTerm {
  negated: boolean;
  position: number;
  condition: Condition;
}

const COMPARISON = /^(>=|<=|!=|>|<|=)?(.+)$/;

function numberCond(raw: string, parse: (s: string) => number, position: number): NumberCond {
  const range = /^(.+?)\.\.(.+)$/.exec(raw);
  if (range) {
    const lo = parse(range[1]!);
    const hi = parse(range[2]!);
    if (lo > hi) throw new SearchLanguageError(`Range ${show(raw)} has its bounds reversed`, position);
    return { kind: 'range', lo, hi };
  }
  const m = COMPARISON.exec(raw)!;
  return { kind: 'compare', op: (m[1] ?? '=') as CompareOp, value: parse(m[2]!) };
}

/** `a,b,c` alternatives; quoted values are never split. */
function alternatives(t: Term): string[] {
  if (t.quoted) return [t.value];
  const parts = t.value.split(',');
  if (parts.length > MAX_ALTERNATIVES)
    throw new SearchLanguageError(`Too many alternatives for ${t.field ?? 'a word'}`, t.position);
  if (parts.some((p) => p === ''))
    throw new SearchLanguageError(`Empty alternative in ${show(t.value)}`, t.position);
  return parts;
}

const pattern = (value: string): TextPattern => ({ value, wildcard: value.includes('*') });

/** One term's condition; throws `SearchLanguageError` at the term's position. */
export function parseTerm(t: Term): Condition {
  const at = t.position;
  if (t.field === null) {
    if (t.value === '') throw new SearchLanguageError('Empty quoted word', at);
    return { field: 'word', value: t.value };
  }
  const field = t.field.toLowerCase() as CriteriaField;
  if (!(CRITERIA_FIELDS as readonly string[]).includes(field))
    throw new SearchLanguageError(
      `Unknown search field ${show(t.field)}; known fields: ${CRITERIA_FIELDS.join(', ')}`,
      at,
    );
  if (t.value === '') throw new SearchLanguageError(`The field ${field} needs a value`, at);
  switch (field) {
    case 'method':
      return {
        field,
        values: alternatives(t).map((v) => {
          if (!/^[A-Za-z-]{1,32}$/.test(v)) throw new SearchLanguageError(`Invalid method ${show(v)}`, at);
          return v.toUpperCase();
        }),
      };
    case 'status': {
      const parseStatus = (s: string): number => {
        if (!/^\d{1,3}$/.test(s)) throw new SearchLanguageError(`Invalid status code ${show(s)}`, at);
        return Number(s);
      };
      return {
        field,
        alternatives: alternatives(t).map((v): NumberCond => {
          const cls = /^([1-5])(\d|x)x$/i.exec(v);
          if (cls) {
            const lo = Number(cls[1]) * 100 + (/\d/.test(cls[2]!) ? Number(cls[2]) * 10 : 0);
            const hi = lo + (/\d/.test(cls[2]!) ? 9 : 99);
            return { kind: 'range', lo, hi };
          }
          return numberCond(v, parseStatus, at);
        }),
      };
    }
    case 'duration': {
      const parseDuration = (s: string): number => {
        const m = /^(\d{1,9}(?:\.\d{1,6})?)(ms|s)?$/i.exec(s);
        if (!m)
          throw new SearchLanguageError(
            `Invalid duration ${show(s)} (milliseconds, or a number with ms or s)`,
            at,
          );
        const v = Number(m[1]);
        return m[2]?.toLowerCase() === 's' ? v * 1000 : v;
      };
      return { field, cond: numberCond(t.value, parseDuration, at) };
    }
    case 'path':
    case 'endpoint':
      return { field, pattern: pattern(t.value) };
    case 'host':
      return {
        field,
        alternatives: alternatives(t).map((v) =>
          v.includes('*') ? { value: v, wildcard: true } : { value: v.toLowerCase(), wildcard: false },
        ),
      };
    case 'env':
    case 'context':
    case 'consumer':
    case 'group':
      return { field, values: alternatives(t) };
    case 'direction': {
      const v = t.value.toLowerCase();
      if (v !== 'in' && v !== 'out')
        throw new SearchLanguageError(`direction must be in or out, not ${show(t.value)}`, at);
      return { field, value: v };
    }
    case 'blocked': {
      const v = t.value.toLowerCase();
      if (v !== 'true' && v !== 'false')
        throw new SearchLanguageError(`blocked must be true or false, not ${show(t.value)}`, at);
      return { field, value: v === 'true' };
    }
    case 'tag': {
      const eq = t.value.indexOf('=');
      const key = eq < 0 ? t.value : t.value.slice(0, eq);
      if (key === '') throw new SearchLanguageError('tag needs a key: tag:key or tag:key=value', at);
      if (eq < 0) return { field, key, value: null };
      return { field, key, value: pattern(t.value.slice(eq + 1)) };
    }
  }
}

/**
 * Parses criteria into AND-ed terms (empty text = no terms = everything matches).
 * @throws SearchLanguageError naming the problem, with its position
 */
export function parseCriteria(text: string): ParsedTerm[] {
  if (text.length > MAX_CRITERIA_LENGTH)
    throw new SearchLanguageError(
      `Search criteria are longer than ${MAX_CRITERIA_LENGTH} characters`,
      MAX_CRITERIA_LENGTH,
    );
  return tokenize(text).map((t) => ({ negated: t.negated, position: t.position, condition: parseTerm(t) }));
}

/**
 * Whether `text` matches a `*` glob over the whole string (`*` = any run, possibly empty, of any
 * characters; every other character literal), with the semantics of SQL `LIKE` on the pattern
 * `likePattern(glob)`. Iterative with one backtrack point: O(text × pattern) at worst, no regex.
 */
export function globMatches(text: string, glob: string, caseInsensitive = false): boolean {
  const t = caseInsensitive ? text.toLowerCase() : text;
  const p = caseInsensitive ? glob.toLowerCase() : glob;
  let ti = 0;
  let pi = 0;
  let star = -1;
  let mark = 0;
  while (ti < t.length) {
    if (pi < p.length && p[pi] !== '*' && p[pi] === t[ti]) {
      ti++;
      pi++;
    } else if (pi < p.length && p[pi] === '*') {
      star = pi++;
      mark = ti;
    } else if (star >= 0) {
      pi = star + 1;
      ti = ++mark;
    } else return false;
  }
  while (pi < p.length && p[pi] === '*') pi++;
  return pi === p.length;
}
