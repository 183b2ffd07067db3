import { parseEndpointPattern, patternShape } from '../../shared/endpoint-pattern.js';

/**
 * Endpoint template suggestions (docs/processing.md, "Endpoint templates"): from the endpoints of
 * a range and their request counts, the patterns that would merge endpoints differing in exactly
 * one literal segment, where that segment takes values the automatic templating kept literal
 * (coupon codes, slugs, names): `/coupons/XMAS24`, `/coupons/FREESHIP`, `/coupons/SPRING10` ->
 * `/coupons/{coupon}`.
 *
 * A position qualifies when it takes at least MIN_VALUES distinct values and either at least half
 * of them look like codes (a digit or an upper-case letter: `XMAS24`, `FREESHIP`) or there are at
 * least MANY_VALUES of them: a handful of lower-case words at one place (`/api/users`,
 * `/api/orders`, `/api/products`) are resources, not ids, and are not offered.
 */

export const MIN_VALUES = 3;
export const MANY_VALUES = 20;
export const MAX_SUGGESTIONS = 20;
export const MAX_EXAMPLES = 5;

export interface EndpointCount {
  endpoint: string;
  requests: number;
}

export interface Suggestion {
  pattern: string;
  examples: string[];
  endpoints: number;
  requests: number;
}

const CODE_LIKE = /[0-9A-Z]/;
const isPlaceholder = (seg: string) => seg.startsWith('{') && seg.endsWith('}');

/** `coupons` -> `coupon`, `categories` -> `category`; `value` when nothing usable precedes. */
export function placeholderName(previous: string | undefined): string {
  const word = (previous ?? '').replace(/[^A-Za-z0-9_]/g, '_').replace(/^[^A-Za-z_]+/, '');
  if (!word || isPlaceholder(previous ?? '')) return 'value';
  let name = word;
  if (/ies$/i.test(name) && name.length > 4) name = `${name.slice(0, -3)}y`;
  else if (/[^s]s$/i.test(name)) name = name.slice(0, -1);
  name = name.slice(0, 60);
  return name === word ? `${name}_id` : name;
}

interface Group {
  segments: string[];
  at: number;
  values: Map<string, { endpoint: string; requests: number }>;
}

/**
 * The suggestions for `counts`, the most endpoints merged first. `existing`: the shapes
 * (patternShape) of the bucket's rules, whose patterns are not offered again.
 */
export function suggestTemplates(
  counts: readonly EndpointCount[],
  existing: ReadonlySet<string>,
): Suggestion[] {
  const groups = new Map<string, Group>();
  for (const { endpoint, requests } of counts) {
    if (!endpoint.startsWith('/') || endpoint.length > 512) continue;
    const segments = endpoint.slice(1).split('/');
    if (segments.length > 32) continue;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i]!;
      if (seg === '' || isPlaceholder(seg) || seg.includes('{') || seg.includes('}')) continue;
      const key = `${segments.length}\u0000${i}\u0000${segments.map((s, j) => (j === i ? '' : s)).join('/')}`;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { segments, at: i, values: new Map() }));
      const v = g.values.get(seg);
      if (v) v.requests += requests;
      else g.values.set(seg, { endpoint, requests });
    }
  }
  const out: Suggestion[] = [];
  for (const g of groups.values()) {
    const values = [...g.values.keys()];
    if (values.length < MIN_VALUES) continue;
    const codes = values.filter((v) => CODE_LIKE.test(v)).length;
    if (codes * 2 < values.length && values.length < MANY_VALUES) continue;
    const name = placeholderName(g.at > 0 ? g.segments[g.at - 1] : undefined);
    const pattern = `/${g.segments.map((s, j) => (j === g.at ? `{${name}}` : s)).join('/')}`;
    const parsed = parseEndpointPattern(pattern);
    // Other placeholders of the endpoint (`{id}`) stay placeholders; a pattern that does not
    // parse (a segment with odd characters) is not offered.
    if (!parsed.ok || existing.has(patternShape(parsed.segments))) continue;
    const members = [...g.values.values()].sort(
      (x, y) => y.requests - x.requests || (x.endpoint < y.endpoint ? -1 : 1),
    );
    out.push({
      pattern,
      examples: members.slice(0, MAX_EXAMPLES).map((m) => m.endpoint),
      endpoints: members.length,
      requests: members.reduce((n, m) => n + m.requests, 0),
    });
  }
  return out
    .sort((x, y) => y.endpoints - x.endpoints || y.requests - x.requests || (x.pattern < y.pattern ? -1 : 1))
    .slice(0, MAX_SUGGESTIONS);
}
