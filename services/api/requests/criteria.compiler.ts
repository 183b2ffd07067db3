import { AppError } from '../../shared/errors.js';
import {
  MAX_CRITERIA_LENGTH,
  SearchLanguageError,
  parseCriteria,
  type Condition,
  type NumberCond,
  type TextPattern,
} from '../../shared/search-language.js';

export { CRITERIA_FIELDS, MAX_CRITERIA_LENGTH, MAX_TERMS, tokenize } from '../../shared/search-language.js';

/**
 * The stream-view search language (docs/search.md) compiled to a ClickHouse WHERE fragment over the
 * `requests` table. The language itself (tokenizer, parser, typed conditions) lives in
 * services/shared/search-language.ts, shared with the processor's in-memory evaluator
 * (services/processor/exclusion-criteria.ts). Pure: no I/O, no state.
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

function numberSql(
  b: Builder,
  column: string,
  type: 'UInt16' | 'Float64',
  cond: NumberCond,
  nullable: boolean,
): string {
  const wrap = (sql: string) => (nullable ? `ifNull(${sql}, 0)` : sql);
  if (cond.kind === 'range')
    return wrap(`${column} >= ${b.p(cond.lo, type)} AND ${column} <= ${b.p(cond.hi, type)}`);
  return wrap(`${column} ${cond.op} ${b.p(cond.value, type)}`);
}

function anyOf(conds: string[]): string {
  return conds.length === 1 ? conds[0]! : conds.map((c) => `(${c})`).join(' OR ');
}

/** Exact match, or LIKE when the value has a `*` wildcard. */
function glob(b: Builder, column: string, p: TextPattern): string {
  return p.wildcard
    ? `${column} LIKE ${b.p(likePattern(p.value), 'String')}`
    : `${column} = ${b.p(p.value, 'String')}`;
}

function conditionSql(b: Builder, c: Condition): string {
  switch (c.field) {
    case 'word':
      return `positionCaseInsensitiveUTF8(path, ${b.p(c.value, 'String')}) > 0`;
    case 'method':
      return anyOf(c.values.map((v) => `method = ${b.p(v, 'String')}`));
    case 'status':
      return anyOf(c.alternatives.map((a) => numberSql(b, 'status_code', 'UInt16', a, false)));
    case 'duration':
      return numberSql(b, 'duration', 'Float64', c.cond, true);
    case 'path':
      return glob(b, 'path', c.pattern);
    case 'endpoint':
      return glob(b, 'endpoint', c.pattern);
    case 'host':
      return anyOf(
        c.alternatives.map((v) =>
          v.wildcard
            ? `host ILIKE ${b.p(likePattern(v.value), 'String')}`
            : `lower(host) = ${b.p(v.value, 'String')}`,
        ),
      );
    case 'env':
      return anyOf(c.values.map((v) => `environment_sid = ${b.p(v, 'String')}`));
    case 'context':
      return anyOf(c.values.map((v) => `context_sid = ${b.p(v, 'String')}`));
    case 'consumer':
      return anyOf(c.values.map((v) => `consumer_id = ${b.p(v, 'String')}`));
    case 'group':
      return anyOf(c.values.map((v) => `consumer_group = ${b.p(v, 'String')}`));
    case 'direction':
      return `direction = ${b.p(c.value, 'String')}`;
    case 'blocked':
      return `blocked = ${b.p(c.value ? 1 : 0, 'UInt8')}`;
    case 'tag': {
      if (c.value === null) return `mapContains(tags, ${b.p(c.key, 'String')})`;
      const k = b.p(c.key, 'String');
      return c.value.wildcard
        ? `mapContains(tags, ${k}) AND tags[${k}] LIKE ${b.p(likePattern(c.value.value), 'String')}`
        : `mapContains(tags, ${k}) AND tags[${k}] = ${b.p(c.value.value, 'String')}`;
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
    const parts = parseCriteria(text).map((t) => {
      const cond = conditionSql(b, t.condition);
      return t.negated ? `NOT (${cond})` : `(${cond})`;
    });
    return { sql: parts.length ? parts.join(' AND ') : '1', params: b.params };
  } catch (err) {
    if (err instanceof SearchLanguageError) {
      throw new AppError(400, 'VALIDATION_ERROR', `Invalid search criteria: ${err.message}`, {
        [field]: err.message,
      });
    }
    throw err;
  }
}
