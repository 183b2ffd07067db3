/**
 * Syntax of a redaction rule's `fieldPath` (docs/rules.md): a small, strict JSONPath subset.
 *
 *   $.a.b            key steps (dot form: letters, digits, `_` and `-`)
 *   $['quoted key']  key in brackets, single or double quotes, `\` escapes the quote and itself
 *   $.a[0]           array index (non-negative integer, no leading zeros)
 *   $.list[*].x      wildcard: every element of an array / every member of an object (`.*` too)
 *   $..password      recursive descent to a named key, at any depth
 *
 * The first two keys may name a part of the captured record (`request.body`, `response.body`,
 * `request.headers`, `response.headers`, `request.queryString`); without one the path applies to
 * both JSON bodies (root `bodies`). Header names are case-insensitive and returned lower-cased.
 *
 * Hand-written on purpose: an RFC 9535 library accepts a far larger language (filters, slices,
 * unions, functions) that the processor cannot apply, and rejects hyphenated dot names such as
 * `$.request.headers.x-api-key`, which are the common case here. No business rules live here.
 */

export type FieldPathRoot =
  | 'request.body'
  | 'response.body'
  | 'request.headers'
  | 'response.headers'
  | 'request.queryString'
  | 'bodies';

export type FieldPathSegment =
  | { type: 'key'; name: string }
  | { type: 'index'; index: number }
  | { type: 'wildcard' }
  | { type: 'recursive'; name: string };

export type FieldPathResult =
  { ok: true; root: FieldPathRoot; segments: FieldPathSegment[] } | { ok: false; error: string };

export const FIELD_PATH_MAX_LENGTH = 1024;
export const FIELD_PATH_MAX_SEGMENTS = 32;
const MAX_INDEX = 1_000_000;
const DOT_NAME = /[A-Za-z0-9_-]/;

class PathSyntaxError extends Error {}

function fail(message: string): never {
  throw new PathSyntaxError(message);
}

/** Tokenises `path` into raw segments (no root interpretation). Throws PathSyntaxError. */
function scan(path: string): FieldPathSegment[] {
  const out: FieldPathSegment[] = [];
  let i = 1; // after `$`
  const at = () => `at position ${i}`;
  const char = (c: string | undefined) => (c === undefined ? 'end of path' : `'${c}'`);

  const readDotName = (): string => {
    const start = i;
    while (i < path.length && DOT_NAME.test(path[i]!)) i++;
    if (i === start) fail(`expected a key name ${at()}, found ${char(path[i])}`);
    return path.slice(start, i);
  };

  const readQuoted = (): string => {
    const quote = path[i]!;
    i++;
    let name = '';
    for (;;) {
      const c = path[i];
      if (c === undefined) fail(`unterminated quoted key (missing ${quote})`);
      if (c === '\\') {
        const next = path[i + 1];
        if (next !== quote && next !== '\\')
          fail(`invalid escape ${at()}: only \\${quote} and \\\\ are allowed`);
        name += next;
        i += 2;
        continue;
      }
      if (c === quote) {
        i++;
        break;
      }
      if (c < ' ') fail(`control character in quoted key ${at()}`);
      name += c;
      i++;
    }
    if (name === '') fail('a quoted key must not be empty');
    return name;
  };

  /** `[...]` after the opening bracket: returns the segment and consumes the closing bracket. */
  const readBracket = (recursive: boolean): FieldPathSegment => {
    i++; // [
    const c = path[i];
    let seg: FieldPathSegment;
    if (c === "'" || c === '"') {
      const name = readQuoted();
      seg = recursive ? { type: 'recursive', name } : { type: 'key', name };
    } else if (c === '*') {
      if (recursive) fail(`recursive descent needs a key name, not a wildcard ${at()}`);
      i++;
      seg = { type: 'wildcard' };
    } else if (c !== undefined && c >= '0' && c <= '9') {
      if (recursive) fail(`recursive descent needs a key name, not an index ${at()}`);
      const start = i;
      while (i < path.length && path[i]! >= '0' && path[i]! <= '9') i++;
      const digits = path.slice(start, i);
      if (digits.length > 1 && digits.startsWith('0')) fail(`index ${digits} has a leading zero`);
      const index = Number(digits);
      if (index > MAX_INDEX) fail(`index ${digits} is larger than ${MAX_INDEX}`);
      seg = { type: 'index', index };
    } else if (c === '-') {
      fail(`negative indexes are not supported ${at()}`);
    } else {
      fail(`expected a quoted key, an index or * ${at()}, found ${char(c)}`);
    }
    if (path[i] !== ']') fail(`expected ']' ${at()}, found ${char(path[i])}`);
    i++;
    return seg;
  };

  while (i < path.length) {
    const c = path[i]!;
    if (c === '.' && path[i + 1] === '.') {
      i += 2;
      const n = path[i];
      if (n === '[') out.push(readBracket(true));
      else if (n === '*') fail(`recursive descent needs a key name, not a wildcard ${at()}`);
      else out.push({ type: 'recursive', name: readDotName() });
    } else if (c === '.') {
      i++;
      if (path[i] === '*') {
        i++;
        out.push({ type: 'wildcard' });
      } else {
        out.push({ type: 'key', name: readDotName() });
      }
    } else if (c === '[') {
      out.push(readBracket(false));
    } else {
      fail(`expected '.', '..' or '[' ${at()}, found ${char(c)}`);
    }
    if (out.length > FIELD_PATH_MAX_SEGMENTS) fail(`more than ${FIELD_PATH_MAX_SEGMENTS} segments`);
  }
  return out;
}

const PARTS: Record<string, Record<string, FieldPathRoot>> = {
  request: { body: 'request.body', headers: 'request.headers', queryString: 'request.queryString' },
  response: { body: 'response.body', headers: 'response.headers' },
};

function keyName(s: FieldPathSegment | undefined): string | undefined {
  return s?.type === 'key' ? s.name : undefined;
}

/** Parses a field path. Never throws: any input gives either the AST or an error message. */
export function parseFieldPath(path: unknown): FieldPathResult {
  if (typeof path !== 'string') return { ok: false, error: 'must be a string' };
  if (path.length > FIELD_PATH_MAX_LENGTH)
    return { ok: false, error: `must be at most ${FIELD_PATH_MAX_LENGTH} characters` };
  if (!path.startsWith('$')) return { ok: false, error: "must start with '$'" };
  try {
    const raw = scan(path);
    if (raw.length === 0) fail('must address a field, not the whole record (for example $.password)');

    const first = keyName(raw[0]);
    // NOTE: `request` / `response` as the first key always name a record part, also when quoted:
    // `$.request.id` is an error, not a body key (use `$.request.body.request.id` or `$..id`).
    const parts = first !== undefined && Object.hasOwn(PARTS, first) ? PARTS[first] : undefined;
    if (!parts) return { ok: true, root: 'bodies', segments: raw };
    const part = keyName(raw[1]);
    const root = part !== undefined && Object.hasOwn(parts, part) ? parts[part] : undefined;
    if (!root)
      fail(
        `$.${first} must be followed by one of ${Object.keys(parts)
          .map((p) => `.${p}`)
          .join(', ')}`,
      );
    const rest = raw.slice(2);
    if (rest.length === 0) fail(`$.${first}.${part} must be followed by the field to redact`);
    if (root === 'request.body' || root === 'response.body') return { ok: true, root, segments: rest };

    // headers / queryString are flat maps: exactly one name or a wildcard.
    const [only] = rest;
    if (rest.length !== 1 || (only!.type !== 'key' && only!.type !== 'wildcard'))
      fail(`$.${first}.${part} takes exactly one name (or *), for example $.${first}.${part}.x-api-key`);
    const segments: FieldPathSegment[] =
      only!.type === 'key' && root !== 'request.queryString'
        ? [{ type: 'key', name: only!.name.toLowerCase() }]
        : [only!];
    return { ok: true, root, segments };
  } catch (err) {
    if (err instanceof PathSyntaxError) return { ok: false, error: err.message };
    throw err;
  }
}
