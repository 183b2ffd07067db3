import {
  fullText,
  keyMatch,
  mayHold,
  redactWhole,
  scanText,
  type KeyMatcher,
  type Plan,
} from './matchers.js';
import { userinfoPassword } from '../url-userinfo.js';
import type { Hit } from './json-format.js';

/**
 * Form bodies (`a=1&b=2`) and URLs (path, query string, userinfo password), redacted as the JSON
 * formats are (json-format.ts): the same string when nothing changed, only the redacted spans rewritten.
 */

/** Percent-encodes a replacement, leaving the redaction marks readable (`[REDACTED:email]`, `****`). */
function encodeComponent(s: string): string {
  return encodeURIComponent(s)
    .replace(/%5B/g, '[')
    .replace(/%5D/g, ']')
    .replace(/%3A/g, ':')
    .replace(/%20/g, '+');
}

function decodeComponent(s: string): string | null {
  if (!s.includes('%') && !s.includes('+')) return s;
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/**
 * `a=1&b=2` pairs: a claimed name redacts its whole value, other values are scanned decoded.
 * Returns the same string when nothing changed, null when a pair does not decode (not a form).
 * `pathOf` names the change of a parameter.
 */
export function redactPairs(
  text: string,
  plan: Plan,
  hit: Hit,
  pathOf: (name: string) => string,
): string | null {
  const pieces = text.split('&');
  let changed = false;
  for (let idx = 0; idx < pieces.length; idx++) {
    const piece = pieces[idx]!;
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    const rawName = eq < 0 ? piece : piece.slice(0, eq);
    const rawValue = eq < 0 ? '' : piece.slice(eq + 1);
    const name = decodeComponent(rawName);
    const value = decodeComponent(rawValue);
    if (name === null || value === null) return null;
    if (eq < 0 || rawValue === '') continue;
    const km = plan.keys.length ? keyMatch(plan, name) : null;
    let next: string | null = null;
    let types: readonly string[] = [];
    if (km) {
      const red = redactWhole(value, km);
      next = typeof red === 'string' ? red : fullText(km.type);
      types = [km.type];
    } else {
      const r = scanText(value, plan);
      if (r) {
        next = r.text;
        types = r.types;
      }
    }
    // A value already in its redacted form (`token=[REDACTED:password]`) is no change.
    if (next !== null && next !== value) {
      pieces[idx] = `${rawName}=${encodeComponent(next)}`;
      changed = true;
      for (const t of types) hit(pathOf(name), t);
    }
  }
  return changed ? pieces.join('&') : text;
}

/** A form body: no white space and every pair decodes; null otherwise (scanned as text). */
export function redactForm(text: string, plan: Plan, hit: Hit): string | null {
  if (/\s/.test(text.trim())) return null;
  return redactPairs(text, plan, hit, (name) => name);
}

/**
 * A URL or a path with its query. The part before `?` (scheme, host, path) is scanned piece by
 * piece between `/` with `pathPlan` (percent-decoded when encoded); the query is pairs with
 * `queryPlan` (a query that does not decode is scanned as text, reported under `name`). The
 * fragment belongs to `pathPlan`: its `name=value` pairs (`#access_token=…`, or after a `?` in
 * it: `#/callback?code=…`) go through the key rules as a query's do, the rest is scanned as path
 * pieces. Either plan may be null (that part is left as it is).
 */
export function redactUrl(
  url: string,
  pathPlan: Plan | null,
  queryPlan: Plan | null,
  pathHit: (type: string) => void,
  queryHit: Hit,
  name: string,
): string {
  const h = url.indexOf('#');
  let q = url.indexOf('?');
  // A `?` after the `#` is part of the fragment.
  if (h >= 0 && q > h) q = -1;
  const headEnd = q >= 0 ? q : h >= 0 ? h : url.length;
  let head = url.slice(0, headEnd);
  let query = q >= 0 ? url.slice(q + 1, h >= 0 ? h : url.length) : null;
  let frag = h >= 0 ? url.slice(h + 1) : null;
  let changed = false;
  const scanPieces = (s: string): string => {
    const parts = s.split('/');
    let any = false;
    for (let i = 0; i < parts.length; i++) {
      const raw = parts[i]!;
      if (raw.length < 3) continue;
      const decoded = raw.includes('%') ? decodeComponent(raw) : raw;
      const r = scanText(decoded ?? raw, pathPlan!, false);
      if (!r) continue;
      for (const t of r.types) pathHit(t);
      parts[i] = decoded !== null && decoded !== raw ? encodeComponent(r.text) : r.text;
      any = true;
    }
    return any ? parts.join('/') : s;
  };
  const scanFragment = (s: string): string => {
    const eq = s.indexOf('=');
    if (eq < 0) return s.includes('%') || mayHold(pathPlan!, s) ? scanPieces(s) : s;
    const qm = s.indexOf('?');
    const cut = qm >= 0 && qm < eq ? qm + 1 : 0;
    const lead = s.slice(0, cut);
    const pairs = s.slice(cut);
    const nl = lead && (lead.includes('%') || mayHold(pathPlan!, lead)) ? scanPieces(lead) : lead;
    let np = redactPairs(
      pairs,
      pathPlan!,
      (_, t) => pathHit(t),
      (p) => p,
    );
    if (np === null) {
      const r = scanText(pairs, pathPlan!, true);
      if (r) for (const t of r.types) pathHit(t);
      np = r ? r.text : pairs;
    }
    return nl === lead && np === pairs ? s : nl + np;
  };
  // A head without escapes and without any candidate is left as it is without splitting it.
  if (pathPlan && (head.includes('%') || mayHold(pathPlan, head))) {
    const nh = scanPieces(head);
    if (nh !== head) {
      head = nh;
      changed = true;
    }
  }
  if (pathPlan && frag) {
    const nf = scanFragment(frag);
    if (nf !== frag) {
      frag = nf;
      changed = true;
    }
  }
  if (queryPlan && query) {
    const held: [string, string][] = [];
    const nq = redactPairs(
      query,
      queryPlan,
      (p, t) => held.push([p, t]),
      (p) => p,
    );
    if (nq === null) {
      const r = scanText(query, queryPlan, true);
      if (r) {
        for (const t of r.types) queryHit(name, t);
        query = r.text;
        changed = true;
      }
    } else if (nq !== query) {
      for (const [p, t] of held) queryHit(p, t);
      query = nq;
      changed = true;
    }
  }
  if (!changed) return url;
  return head + (query !== null ? `?${query}` : '') + (frag !== null ? `#${frag}` : '');
}

/**
 * The userinfo password of a URL (`host` false) or of a host (`host` true), redacted as the value
 * of a field the key matcher claims (url-userinfo.ts); the same string when there is none.
 */
export function redactUserinfo(text: string, km: KeyMatcher, host: boolean): string {
  const span = userinfoPassword(text, host);
  if (!span) return text;
  const raw = text.slice(span[0], span[1]);
  const red = redactWhole(decodeComponent(raw) ?? raw, km);
  const next = encodeComponent(typeof red === 'string' ? red : fullText(km.type));
  return next === raw ? text : text.slice(0, span[0]) + next + text.slice(span[1]);
}
