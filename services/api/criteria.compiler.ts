import { AppError } from '../shared/errors.js';

/**
 * The stream-view search language (docs/search.md) compiled to a ClickHouse WHERE fragment over the
 * `requests` table. Pure: no I/O, no state.
 *
 * Safety rule: the SQL text is assembled only from constants of this file (column names, operators,
 * function names) and placeholder names `{<prefix><n>:<Type>}` numbered here; every byte of user
 * input reaches ClickHouse as a bound parameter value, never as SQL.
 */

export interface CompiledCriteria {
  sql: string;
  params: Record<string, string | number>;
}

export interface CompileOptions {
  /** placeholder prefix; two fragments combined in one query need different prefixes */
  paramPrefix?: string;
  /** name of the input in the error details (`querystring.q`, `body.criteria`) */
  field?: string;
}

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
] as const;
type Field = (typeof CRITERIA_FIELDS)[number];

interface Term {
  negated: boolean;
  /** null for a bare word (substring of the path) */
  field: string | null;
  value: string;
  quoted: boolean;
  position: number;
}

class CriteriaError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
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
          throw new CriteriaError(`Unexpected character after the quoted value at position ${i}`, i);
        return out;
      }
      out += c;
      i++;
    }
    throw new CriteriaError(`Unterminated quote starting at position ${start}`, start);
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
        throw new CriteriaError(`A "-" at position ${position} must be followed by a term`, position);
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
        if (colon) throw new CriteriaError(`Unknown search field ${show(colon[1]!)}`, position);
        terms.push({ negated, field: null, value: word, quoted: false, position });
      }
    }
    if (terms.length > MAX_TERMS)
      throw new CriteriaError(`Search criteria have more than ${MAX_TERMS} terms`, position);
  }
  return terms;
}

/** `*` wildcards to a LIKE pattern; LIKE's own metacharacters in the input are escaped. */
export function likePattern(glob: string): string {
  return glob.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll('*', '%');
}

type ParamType = 'String' | 'UInt16' | 'Float64' | 'UInt8';

class Builder {
  readonly params: Record<string, string | number> = {};
  private n = 0;
  constructor(private readonly prefix: string) {}

  /** Registers a value and returns its placeholder. */
  p(value: string | number, type: ParamType): string {
    const name = `${this.prefix}${this.n++}`;
    this.params[name] = value;
    return `{${name}:${type}}`;
  }
}

const COMPARISON = /^(>=|<=|!=|>|<|=)?(.+)$/;

function numberRange(
  b: Builder,
  column: string,
  type: 'UInt16' | 'Float64',
  raw: string,
  parse: (s: string) => number,
  nullable: boolean,
): string {
  const wrap = (cond: string) => (nullable ? `ifNull(${cond}, 0)` : cond);
  const range = /^(.+?)\.\.(.+)$/.exec(raw);
  if (range) {
    const lo = parse(range[1]!);
    const hi = parse(range[2]!);
    if (lo > hi) throw new CriteriaError(`Range ${show(raw)} has its bounds reversed`, 0);
    return wrap(`${column} >= ${b.p(lo, type)} AND ${column} <= ${b.p(hi, type)}`);
  }
  const m = COMPARISON.exec(raw)!;
  const op = m[1] ?? '=';
  return wrap(`${column} ${op} ${b.p(parse(m[2]!), type)}`);
}

function parseStatus(s: string): number {
  if (!/^\d{1,3}$/.test(s)) throw new CriteriaError(`Invalid status code ${show(s)}`, 0);
  return Number(s);
}

function parseDuration(s: string): number {
  const m = /^(\d{1,9}(?:\.\d{1,6})?)(ms|s)?$/i.exec(s);
  if (!m) throw new CriteriaError(`Invalid duration ${show(s)} (milliseconds, or a number with ms or s)`, 0);
  const v = Number(m[1]);
  return m[2]?.toLowerCase() === 's' ? v * 1000 : v;
}

/** `a,b,c` alternatives OR-ed; quoted values are never split. */
function alternatives(t: Term): string[] {
  if (t.quoted) return [t.value];
  const parts = t.value.split(',');
  if (parts.length > MAX_ALTERNATIVES)
    throw new CriteriaError(`Too many alternatives for ${t.field ?? 'a word'}`, t.position);
  if (parts.some((p) => p === ''))
    throw new CriteriaError(`Empty alternative in ${show(t.value)}`, t.position);
  return parts;
}

function anyOf(conds: string[]): string {
  return conds.length === 1 ? conds[0]! : conds.map((c) => `(${c})`).join(' OR ');
}

/** Exact match, or LIKE when the value has a `*` wildcard. */
function glob(b: Builder, column: string, value: string): string {
  return value.includes('*')
    ? `${column} LIKE ${b.p(likePattern(value), 'String')}`
    : `${column} = ${b.p(value, 'String')}`;
}

function compileTerm(b: Builder, t: Term): string {
  if (t.field === null) {
    if (t.value === '') throw new CriteriaError('Empty quoted word', t.position);
    return `positionCaseInsensitiveUTF8(path, ${b.p(t.value, 'String')}) > 0`;
  }
  const field = t.field.toLowerCase() as Field;
  if (!(CRITERIA_FIELDS as readonly string[]).includes(field))
    throw new CriteriaError(
      `Unknown search field ${show(t.field)}; known fields: ${CRITERIA_FIELDS.join(', ')}`,
      t.position,
    );
  if (t.value === '') throw new CriteriaError(`The field ${field} needs a value`, t.position);
  switch (field) {
    case 'method':
      return anyOf(
        alternatives(t).map((v) => {
          if (!/^[A-Za-z-]{1,32}$/.test(v)) throw new CriteriaError(`Invalid method ${show(v)}`, t.position);
          return `method = ${b.p(v.toUpperCase(), 'String')}`;
        }),
      );
    case 'status':
      return anyOf(
        alternatives(t).map((v) => {
          const cls = /^([1-5])(\d|x)x$/i.exec(v);
          if (cls) {
            const lo = Number(cls[1]) * 100 + (/\d/.test(cls[2]!) ? Number(cls[2]) * 10 : 0);
            const hi = lo + (/\d/.test(cls[2]!) ? 9 : 99);
            return `status_code >= ${b.p(lo, 'UInt16')} AND status_code <= ${b.p(hi, 'UInt16')}`;
          }
          return numberRange(b, 'status_code', 'UInt16', v, parseStatus, false);
        }),
      );
    case 'duration':
      return numberRange(b, 'duration', 'Float64', t.value, parseDuration, true);
    case 'path':
      return glob(b, 'path', t.value);
    case 'endpoint':
      return glob(b, 'endpoint', t.value);
    case 'host':
      return anyOf(
        alternatives(t).map((v) =>
          v.includes('*')
            ? `host ILIKE ${b.p(likePattern(v), 'String')}`
            : `lower(host) = ${b.p(v.toLowerCase(), 'String')}`,
        ),
      );
    case 'env':
      return anyOf(alternatives(t).map((v) => `environment_sid = ${b.p(v, 'String')}`));
    case 'context':
      return anyOf(alternatives(t).map((v) => `context_sid = ${b.p(v, 'String')}`));
    case 'direction': {
      const v = t.value.toLowerCase();
      if (v !== 'in' && v !== 'out')
        throw new CriteriaError(`direction must be in or out, not ${show(t.value)}`, t.position);
      return `direction = ${b.p(v, 'String')}`;
    }
    case 'blocked': {
      const v = t.value.toLowerCase();
      if (v !== 'true' && v !== 'false')
        throw new CriteriaError(`blocked must be true or false, not ${show(t.value)}`, t.position);
      return `blocked = ${b.p(v === 'true' ? 1 : 0, 'UInt8')}`;
    }
    case 'tag': {
      const eq = t.value.indexOf('=');
      const key = eq < 0 ? t.value : t.value.slice(0, eq);
      if (key === '') throw new CriteriaError('tag needs a key: tag:key or tag:key=value', t.position);
      if (eq < 0) return `mapContains(tags, ${b.p(key, 'String')})`;
      const value = t.value.slice(eq + 1);
      const k = b.p(key, 'String');
      return value.includes('*')
        ? `mapContains(tags, ${k}) AND tags[${k}] LIKE ${b.p(likePattern(value), 'String')}`
        : `mapContains(tags, ${k}) AND tags[${k}] = ${b.p(value, 'String')}`;
    }
  }
}

/**
 * Compiles search criteria to `{sql, params}`: terms AND-ed, `-` negates, placeholders
 * `{<prefix>N:Type}`. Empty criteria match everything (`1`).
 * @throws AppError 400 VALIDATION_ERROR naming the problem (and the unknown field, if any)
 */
export function compileCriteria(text: string, opts: CompileOptions = {}): CompiledCriteria {
  const prefix = opts.paramPrefix ?? 'c';
  const field = opts.field ?? 'criteria';
  if (typeof text !== 'string')
    throw new AppError(400, 'VALIDATION_ERROR', 'Search criteria must be text', {
      [field]: 'must be a string',
    });
  if (text.length > MAX_CRITERIA_LENGTH) {
    const message = `Search criteria are longer than ${MAX_CRITERIA_LENGTH} characters`;
    throw new AppError(400, 'VALIDATION_ERROR', message, { [field]: message });
  }
  try {
    const b = new Builder(prefix);
    const parts = tokenize(text).map((t) => {
      const cond = compileTerm(b, t);
      return t.negated ? `NOT (${cond})` : `(${cond})`;
    });
    return { sql: parts.length ? parts.join(' AND ') : '1', params: b.params };
  } catch (err) {
    if (err instanceof CriteriaError) {
      throw new AppError(400, 'VALIDATION_ERROR', `Invalid search criteria: ${err.message}`, {
        [field]: err.message,
      });
    }
    throw err;
  }
}
