import type { ErrorObject } from 'ajv';

/**
 * Human wording of the schema patterns the API declares (schemas/), keyed by the pattern's source:
 * a person reads "6 lowercase letters or digits", not the regular expression. A pattern missing
 * here reads as "does not have the expected format".
 */
const PATTERNS: Record<string, string> = {
  '^[a-z0-9]{6}$': 'must be 6 lowercase letters or digits (e.g. "prod01")',
  '^[A-Za-z0-9]{6}$': 'must be 6 letters or digits (e.g. "prod01")',
  '^(\\*|[A-Za-z0-9]{6})$': 'must be "*" or 6 letters or digits (e.g. "prod01")',
  '^[1-9][0-9]*[smhd]$': 'must be a whole number followed by s, m, h or d (e.g. "15m")',
  "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$":
    "must be an HTTP header name (letters, digits and !#$%&'*+.^_`|~-, no spaces or colons)",
  '^[1-9][0-9]{0,5}[mhd]$': 'must be a whole number (at most 6 digits) followed by m, h or d (e.g. "1h")',
  '^[45]([xX]{2}|\\*\\*)$': 'must be "4xx" or "5xx"',
  '^[1-5]([xX]{2}|\\*\\*)$': 'must be a status class from "1xx" to "5xx"',
  '^[A-Za-z-]{1,32}$': 'must be an HTTP method (letters only, e.g. "GET")',
  '^[/*]\\S*$': 'must start with / or * and contain no spaces',
  '^\\$': 'must start with "$"',
  '\\S': 'must not be blank',
  '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#]+': 'must be an http:// or https:// URL',
  '^wfx_[A-Za-z0-9]{27}$': 'must be an execution sid (wfx_ and 27 letters or digits)',
  '^req_[A-Za-z0-9]{27}$': 'must be a request sid (req_ and 27 letters or digits)',
};

const FORMATS: Record<string, string> = {
  'date-time': 'must be a date and time in ISO 8601 (e.g. "2025-01-31T09:30:00.000Z")',
  date: 'must be a date (YYYY-MM-DD)',
  email: 'must be an email address',
  uri: 'must be a URL',
};

const TYPES: Record<string, string> = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  null: 'null',
};

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** `a`, `a or b`, `a, b or c` */
function orList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/**
 * What is wrong with one value, as a phrase that follows the field's name ("must be a whole
 * number", "is required"). `required` and `additionalProperties` name a field below the error's
 * path: their phrase is about that field.
 */
export function describeAjvError(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known field';
    case 'type': {
      const types = String(p.type).split(',');
      return `must be ${orList(types.map((t) => TYPES[t] ?? t))}`;
    }
    case 'pattern':
      return PATTERNS[String(p.pattern)] ?? 'does not have the expected format';
    case 'format':
      return FORMATS[String(p.format)] ?? `must be a valid ${String(p.format)}`;
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]).map((v) => JSON.stringify(v));
      return allowed.length === 1 ? `must be ${allowed[0]}` : `must be one of ${orList(allowed)}`;
    }
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'minLength':
      return p.limit === 1
        ? 'must not be empty'
        : `must be at least ${plural(Number(p.limit), 'character', 'characters')}`;
    case 'maxLength':
      return `must be at most ${plural(Number(p.limit), 'character', 'characters')} long`;
    case 'minimum':
      return `must be at least ${String(p.limit)}`;
    case 'maximum':
      return `must be at most ${String(p.limit)}`;
    case 'exclusiveMinimum':
      return `must be greater than ${String(p.limit)}`;
    case 'exclusiveMaximum':
      return `must be less than ${String(p.limit)}`;
    case 'multipleOf':
      return `must be a multiple of ${String(p.multipleOf)}`;
    case 'minItems':
      return p.limit === 1
        ? 'must not be empty'
        : `must list at least ${plural(Number(p.limit), 'item', 'items')}`;
    case 'maxItems':
      return `must list at most ${plural(Number(p.limit), 'item', 'items')}`;
    case 'uniqueItems':
      return 'must not list the same value twice';
    case 'minProperties':
      return `must have at least ${plural(Number(p.limit), 'field', 'fields')}`;
    case 'maxProperties':
      return `must have at most ${plural(Number(p.limit), 'field', 'fields')}`;
    case 'propertyNames':
      return 'has a field name that is not allowed';
    case 'not':
      return 'is not allowed here';
    case 'discriminator':
      // a `oneOf` picked by a property (`type`): the property is missing or names no branch
      return p.error === 'mapping'
        ? `has an unknown ${String(p.tag)} ${JSON.stringify(p.tagValue)}`
        : `needs a ${String(p.tag)}`;
    default:
      // anyOf, oneOf, if/then and the like: the branch errors (reported too) say more; this is the
      // fallback when they are all that names the field.
      return 'is not valid';
  }
}

const PARTS: Record<string, string> = {
  body: 'The body',
  querystring: 'The query string',
  params: 'The path',
  headers: 'The headers',
};

/**
 * The envelope's message for a request that failed its schema: each failing field by its name as
 * the API spells it, with what is wrong (`environmentSid must be 6 lowercase letters or digits
 * (e.g. "prod01")`), from the `details` map (`body.environmentSid` -> phrase). At most three are
 * spelt out; `details` names them all.
 */
export function validationMessage(details: Record<string, string>, part = 'body'): string {
  const entries = Object.entries(details);
  if (entries.length === 0) return `${PARTS[part] ?? 'The request'} is not valid`;
  const sentences = entries.slice(0, 3).map(([key, phrase]) => {
    const field = key.replace(/^(body|querystring|params|headers)\.?/, '');
    return `${field || PARTS[key] || 'The request'} ${phrase}`;
  });
  const more = entries.length - sentences.length;
  return sentences.join('; ') + (more > 0 ? `; and ${plural(more, 'more field', 'more fields')}` : '');
}
