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
 * numbers) to the first object or array at level `max + 1`, or null when it stays within `max`.
 * Counted without recursion (a hostile value may nest thousands of levels) and stopping at the
 * first level too deep.
 */
export function tooDeepAt(value: unknown, max = MAX_JSON_DEPTH): (string | number)[] | null {
  if (value === null || typeof value !== 'object') return null;
  // Each frame links to its parent, so the path is built only for the value that is too deep.
  interface Frame {
    v: object;
    level: number;
    key: string | number;
    parent: Frame | null;
  }
  const stack: Frame[] = [{ v: value, level: 1, key: '', parent: null }];
  while (stack.length) {
    const f = stack.pop()!;
    if (f.level > max) {
      const path: (string | number)[] = [];
      for (let at: Frame | null = f; at?.parent; at = at.parent) path.unshift(at.key);
      return path;
    }
    if (Array.isArray(f.v)) {
      for (let i = f.v.length - 1; i >= 0; i--) {
        const child: unknown = f.v[i];
        if (child !== null && typeof child === 'object')
          stack.push({ v: child, level: f.level + 1, key: i, parent: f });
      }
    } else {
      for (const k of Object.keys(f.v)) {
        const child: unknown = (f.v as Record<string, unknown>)[k];
        if (child !== null && typeof child === 'object')
          stack.push({ v: child, level: f.level + 1, key: k, parent: f });
      }
    }
  }
  return null;
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
