/**
 * Endpoint template rules (docs/processing.md, "Endpoint templates"): a pattern such as
 * `/coupons/{code}` names the endpoint every matching path is stored under. A pattern is a list
 * of `/`-separated segments, each either a literal (matched exactly, case-sensitively) or a
 * placeholder `{name}` that matches any one non-empty path segment. The API validates patterns
 * with `parseEndpointPattern`; the processor compiles the stored ones with `compileEndpointTemplates`.
 */

/** The most segments a pattern holds, and its longest text. */
export const MAX_PATTERN_SEGMENTS = 32;
export const MAX_PATTERN_LENGTH = 512;

const PLACEHOLDER = /^\{([A-Za-z_][A-Za-z0-9_]{0,63})\}$/;
const FORBIDDEN = /[\s?#*]/;

/** A parsed pattern: its segments after the leading `/`, null for a placeholder. */
export type PatternSegments = readonly (string | null)[];

export type ParsedPattern = { ok: true; segments: PatternSegments } | { ok: false; error: string };

/** Checks a pattern and splits it into segments; the error is a phrase that follows "pattern". */
export function parseEndpointPattern(pattern: string): ParsedPattern {
  if (!pattern.startsWith('/')) return { ok: false, error: 'must start with /' };
  if (pattern.length > MAX_PATTERN_LENGTH)
    return { ok: false, error: `must be at most ${MAX_PATTERN_LENGTH} characters` };
  const bad = FORBIDDEN.exec(pattern);
  if (bad)
    return {
      ok: false,
      error: `must not contain ${bad[0] === '*' ? '*' : bad[0] === '?' ? 'a query string (?)' : bad[0] === '#' ? '#' : 'spaces'}`,
    };
  const parts = pattern.slice(1).split('/');
  if (parts.length > MAX_PATTERN_SEGMENTS)
    return { ok: false, error: `must have at most ${MAX_PATTERN_SEGMENTS} segments` };
  const segments: (string | null)[] = [];
  const names = new Set<string>();
  for (const part of parts) {
    if (part === '') return { ok: false, error: 'must not have an empty segment (// or a trailing /)' };
    const m = PLACEHOLDER.exec(part);
    if (m) {
      if (names.has(m[1]!)) return { ok: false, error: `names the placeholder {${m[1]}} twice` };
      names.add(m[1]!);
      segments.push(null);
    } else if (part.includes('{') || part.includes('}')) {
      return {
        ok: false,
        error: `has a segment "${part}" that is neither a literal nor a whole {placeholder} (letters, digits and _ in braces)`,
      };
    } else segments.push(part);
  }
  if (!segments.includes(null))
    return { ok: false, error: 'must have at least one {placeholder} segment (e.g. /coupons/{code})' };
  return { ok: true, segments };
}

/**
 * The part of a pattern that decides what it matches: placeholders without their names
 * (`/coupons/{code}` and `/coupons/{id}` match the same paths). Two rules of a bucket with the
 * same shape and method are duplicates.
 */
export function patternShape(segments: PatternSegments): string {
  return '/' + segments.map((s) => (s === null ? '{}' : s)).join('/');
}

/** A stored rule as the processor reads it. */
export interface EndpointTemplateRule {
  sid: string;
  pattern: string;
  /** upper-case method, or null for every method */
  method: string | null;
}

interface CompiledTemplate {
  pattern: string;
  method: string | null;
  segments: PatternSegments;
}

/**
 * A bucket's rules compiled: `match(path, method)` answers the first rule (in list order) whose
 * segments all match the path's (same count; a placeholder matches any non-empty segment), or
 * null. Rules are grouped by segment count, so a path is compared only with rules of its length.
 */
export interface CompiledEndpointTemplates {
  match(path: string, method: string): string | null;
}

export function compileEndpointTemplates(
  rules: readonly EndpointTemplateRule[],
): CompiledEndpointTemplates | null {
  const bySize = new Map<number, CompiledTemplate[]>();
  for (const r of rules) {
    const p = parseEndpointPattern(r.pattern);
    if (!p.ok) continue;
    const list = bySize.get(p.segments.length) ?? [];
    list.push({ pattern: r.pattern, method: r.method, segments: p.segments });
    bySize.set(p.segments.length, list);
  }
  if (bySize.size === 0) return null;
  return {
    match(path, method) {
      if (!path.startsWith('/')) return null;
      const parts = path.slice(1).split('/');
      const candidates = bySize.get(parts.length);
      if (!candidates) return null;
      for (const c of candidates) {
        if (c.method !== null && c.method !== method) continue;
        let hit = true;
        for (let i = 0; i < parts.length; i++) {
          const want = c.segments[i];
          const got = parts[i]!;
          if (want === null ? got === '' : want !== got) {
            hit = false;
            break;
          }
        }
        if (hit) return c.pattern;
      }
      return null;
    },
  };
}
