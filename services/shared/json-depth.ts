import { validation, type AppError } from './errors.js';

/**
 * The deepest nesting of objects and arrays accepted in any JSON input (docs/security.md
 * "Limits"): a value is level 1, each object or array inside it one level more. Every JSON body
 * of the API, OTLP/JSON export and rule preview sample is counted from the body; an ingest record
 * (batch item or SDK wire-format call) is counted from the record, so one deep record is rejected
 * alone. Serialising, redacting and diffing walk values recursively: beyond this a hostile
 * value could exhaust the call stack.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Where `value` first nests deeper than `max` levels: the path of keys (array indexes as
 * numbers) to the first object or array at level `max + 1`, in document order, or null when it
 * stays within `max`. The walk recurses at most `max + 1` calls deep (it stops at the first level
 * too deep), so a hostile value nesting thousands of levels cannot exhaust the stack; it allocates
 * nothing on the way (the path is built only for a value that is too deep).
 */
export function tooDeepAt(value: unknown, max = MAX_JSON_DEPTH): (string | number)[] | null {
  if (value === null || typeof value !== 'object') return null;
  const path: (string | number)[] = [];
  return deeperThan(value, 1, max, path) ? path.reverse() : null;
}

/** Whether `v` (at `level`) holds a value deeper than `max`; fills `path` leaf first when it does. */
function deeperThan(v: object, level: number, max: number, path: (string | number)[]): boolean {
  if (level > max) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const child: unknown = v[i];
      if (child !== null && typeof child === 'object' && deeperThan(child, level + 1, max, path)) {
        path.push(i);
        return true;
      }
    }
    return false;
  }
  for (const k in v) {
    const child: unknown = (v as Record<string, unknown>)[k];
    if (child !== null && typeof child === 'object' && deeperThan(child, level + 1, max, path)) {
      path.push(k);
      return true;
    }
  }
  return false;
}

/**
 * The field a too-deep path is reported under: its first four segments without trailing array
 * indexes, after `root` (e.g. `request.body`, `body.actions.0.config.body`); `root` alone when
 * the path starts with an array index.
 */
export function depthField(path: (string | number)[], root: string): string {
  const head = path.slice(0, 4);
  while (head.length && typeof head[head.length - 1] === 'number') head.pop();
  return [root, ...head].filter((p) => p !== '').join('.');
}

export const depthPhrase = (max = MAX_JSON_DEPTH) => `nests deeper than ${max} levels of objects and arrays`;

/**
 * A 400 `VALIDATION_ERROR` when `value` nests deeper than MAX_JSON_DEPTH, else null. `what` names
 * the input in the message ("The body"), `root` prefixes the field in `details` (`body`).
 */
export function depthError(value: unknown, what: string, root: string): AppError | null {
  const path = tooDeepAt(value);
  if (!path) return null;
  return validation(`${what} ${depthPhrase()}`, { [depthField(path, root)]: depthPhrase() });
}
