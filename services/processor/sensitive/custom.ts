import { RE2JS, RE2JSException, RE2JSSyntaxException } from 're2js';

/**
 * Custom patterns (rule `type` not predefined, `applyTo` key or value) run in re2js: RE2 semantics,
 * matching in time linear in the input whatever the pattern, so no user pattern can stall the
 * processor (`(a+)+$` over megabytes of `aaaa…b` included; test/unit/sensitive-linear.test.ts).
 * RE2 refuses what it cannot run in linear time (backreferences, lookarounds) at compile time.
 */

/** The longest custom pattern accepted. */
export const MAX_PATTERN_LENGTH = 1024;

/**
 * A pattern re2js cannot compile. `position` is the 0-based index in the pattern of the fragment
 * RE2 names (`missing closing )` points at the unclosed group), or of the pattern's end when the
 * fragment is not found. The API answers it with a 400 (`toDetails()` gives the details object).
 */
export class SensitivePatternError extends Error {
  constructor(
    readonly pattern: string,
    readonly position: number,
    readonly reason: string,
    /** name of the input in the API's error details (`body.pattern`) */
    readonly field = 'pattern',
  ) {
    super(
      `Invalid pattern ${JSON.stringify(pattern.length > 60 ? `${pattern.slice(0, 60)}…` : pattern)} at position ${position}: ${reason}`,
    );
    this.name = 'SensitivePatternError';
  }

  toDetails(): Record<string, unknown> {
    return {
      [this.field]: this.message,
      pattern: this.pattern,
      position: this.position,
      reason: this.reason,
    };
  }
}

function positionOf(pattern: string, err: RE2JSSyntaxException): number {
  const fragment = err.input ?? '';
  if (fragment && fragment !== pattern) {
    const at = pattern.indexOf(fragment);
    if (at >= 0) return at;
  }
  if (/missing closing \)/.test(err.error)) {
    // The last `(` left open: scan depth from the end.
    let depth = 0;
    for (let i = pattern.length - 1; i >= 0; i--) {
      if (pattern[i] === ')' && pattern[i - 1] !== '\\') depth++;
      else if (pattern[i] === '(' && pattern[i - 1] !== '\\') {
        if (depth === 0) return i;
        depth--;
      }
    }
  }
  return fragment === pattern ? 0 : pattern.length;
}

/**
 * Compiles a custom pattern with RE2 semantics (syntax: https://github.com/google/re2/wiki/Syntax;
 * `(?i)` for case-insensitive matching).
 * @throws SensitivePatternError naming the pattern and the position
 */
export function compileCustomPattern(pattern: string, field = 'pattern'): RE2JS {
  if (typeof pattern !== 'string' || pattern.length === 0)
    throw new SensitivePatternError(
      String(pattern ?? ''),
      0,
      'a custom type needs a non-empty pattern',
      field,
    );
  if (pattern.length > MAX_PATTERN_LENGTH)
    throw new SensitivePatternError(
      pattern,
      MAX_PATTERN_LENGTH,
      `longer than ${MAX_PATTERN_LENGTH} characters`,
      field,
    );
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    if (err instanceof RE2JSSyntaxException)
      throw new SensitivePatternError(pattern, positionOf(pattern, err), err.error || err.message, field);
    if (err instanceof RE2JSException) throw new SensitivePatternError(pattern, 0, err.message, field);
    throw err;
  }
}

/** `[start, end)` of each non-empty match, left to right, non-overlapping. */
export function customMatches(re: RE2JS, text: string): [number, number][] {
  if (!re.test(text)) return [];
  const out: [number, number][] = [];
  for (const m of re.matchAll(text)) {
    const len = m[0].length;
    if (len > 0) out.push([m.index!, m.index! + len]);
  }
  return out;
}
