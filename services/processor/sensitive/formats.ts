import {
  fullText,
  jsonCandidates,
  keyMatch,
  mayHold,
  redactWhole,
  scanText,
  type KeyMatcher,
  type Plan,
} from './matchers.js';
import { userinfoPassword } from '../url-userinfo.js';

/**
 * Body and URL formats. Each function takes a value and a plan and returns the redacted value (the
 * same reference when nothing changed; inputs are never mutated), reporting each redacted location
 * through `hit(path, type)`. The text formats (JSON text, XML, form, URL) rewrite only the redacted
 * spans: every other byte of the document stays as received.
 */

export type Hit = (path: string, type: string) => void;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const member = (path: string, key: string): string =>
  IDENT.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;

/** Deeper than this, a JSON value is replaced whole (`[REDACTED:depth]`) rather than walked. */
export const MAX_DEPTH = 256;

// ---------------------------------------------------------------------------------------------
// Parsed JSON (a body given as an object or array)

/** Numbers are scanned in their decimal form when long enough to hold a card or a phone number. */
const scanNumber = (n: number): boolean => Number.isInteger(n) && Math.abs(n) >= 1e6;

export function redactJsonValue(v: unknown, plan: Plan, path: string, hit: Hit, depth = 0): unknown {
  if (typeof v === 'string') {
    const r = scanText(v, plan);
    if (!r) return v;
    for (const t of r.types) hit(path, t);
    return r.text;
  }
  if (typeof v === 'number') {
    if (!scanNumber(v)) return v;
    const r = scanText(String(v), plan);
    if (!r) return v;
    for (const t of r.types) hit(path, t);
    return r.text;
  }
  if (v === null || typeof v !== 'object') return v;
  if (depth >= MAX_DEPTH) {
    hit(path, 'depth');
    return fullText('depth');
  }
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      const y = redactJsonValue(x, plan, `${path}[${i}]`, hit, depth + 1);
      if (y !== x) (out ??= v.slice())[i] = y;
    }
    return out ?? v;
  }
  let out: Record<string, unknown> | null = null;
  for (const k of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[k];
    const km = plan.keys.length ? keyMatch(plan, k) : null;
    let y: unknown;
    if (km) {
      y = redactWhole(x, km);
      if (y !== x) hit(member(path, k), km.type);
    } else y = redactJsonValue(x, plan, member(path, k), hit, depth + 1);
    if (y !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = y;
  }
  return out ?? v;
}

// ---------------------------------------------------------------------------------------------
// JSON text, rewritten in place

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Index just past the string token starting at `i` (a `"`). */
function stringEnd(t: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = t.indexOf('"', j);
    if (q < 0) return t.length;
    let bs = 0;
    for (let k = q - 1; k > i && t.charCodeAt(k) === 0x5c; k--) bs++;
    if (bs % 2 === 0) return q + 1;
    j = q + 1;
  }
}

const decodeString = (tok: string): string =>
  tok.includes('\\') ? (JSON.parse(tok) as string) : tok.slice(1, -1);

/** Index just past the value starting at `i` (already known to be valid JSON). */
function valueEnd(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if (c === 0x22) return stringEnd(t, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    let j = i;
    while (j < t.length) {
      const d = t.charCodeAt(j);
      if (d === 0x22) {
        j = stringEnd(t, j);
        continue;
      }
      if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
      j++;
    }
    return t.length;
  }
  let j = i;
  while (j < t.length) {
    const d = t.charCodeAt(j);
    if (isWs(d) || d === 0x2c || d === 0x7d || d === 0x5d) break;
    j++;
  }
  return j;
}

interface Frame {
  arr: boolean;
  key: string;
  index: number;
  keyHit: KeyMatcher | null;
}

function framesPath(stack: Frame[]): string {
  let p = '$';
  for (const f of stack) p = f.arr ? `${p}[${f.index}]` : member(p, f.key);
  return p;
}

/**
 * Redacts a JSON document given as text, rewriting only the tokens that change: a string or number
 * value with a match, or the whole value of a claimed key. Returns the same string when nothing
 * changed and null when the text is not JSON (the caller scans it as text).
 */
export function redactJsonText(text: string, plan: Plan, hit: Hit): string | null {
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  const edits: [number, number, string][] = [];
  const stack: Frame[] = [];
  const n = text.length;
  let i = 0;
  // Only string values overlapping a raw candidate are scanned (jsonCandidates): most of a large
  // document is then walked without running a pattern.
  const hot = plan.values.length ? jsonCandidates(text, plan) : [];
  let h = 0;
  const mayMatch = (start: number, end: number): boolean => {
    if (hot === null) return true;
    while (h < hot.length && hot[h]![1] <= start) h++;
    return h < hot.length && hot[h]![0] < end;
  };
  const ws = () => {
    while (i < n && isWs(text.charCodeAt(i))) i++;
  };
  ws();
  let state: 'value' | 'key' | 'after' = 'value';
  while (i < n) {
    if (state === 'value') {
      const top = stack[stack.length - 1];
      const km = top && !top.arr ? top.keyHit : null;
      const c = text.charCodeAt(i);
      if (km) {
        const end = valueEnd(text, i);
        const raw = text.slice(i, end);
        const v = JSON.parse(raw) as unknown;
        const red = redactWhole(v, km);
        if (red !== v) {
          edits.push([i, end, JSON.stringify(red)]);
          hit(framesPath(stack), km.type);
        }
        i = end;
        state = 'after';
      } else if (c === 0x7b || c === 0x5b) {
        if (stack.length >= MAX_DEPTH) {
          const end = valueEnd(text, i);
          edits.push([i, end, JSON.stringify(fullText('depth'))]);
          hit(framesPath(stack), 'depth');
          i = end;
          state = 'after';
          continue;
        }
        const arr = c === 0x5b;
        stack.push({ arr, key: '', index: 0, keyHit: null });
        i++;
        ws();
        if (text.charCodeAt(i) === (arr ? 0x5d : 0x7d)) {
          stack.pop();
          i++;
          state = 'after';
        } else state = arr ? 'value' : 'key';
      } else if (c === 0x22) {
        const end = stringEnd(text, i);
        const r = mayMatch(i, end) ? scanText(decodeString(text.slice(i, end)), plan) : null;
        if (r) {
          edits.push([i, end, JSON.stringify(r.text)]);
          const p = framesPath(stack);
          for (const t of r.types) hit(p, t);
        }
        i = end;
        state = 'after';
      } else {
        const end = valueEnd(text, i);
        if (end - i >= 7 && c !== 0x74 && c !== 0x66 && c !== 0x6e) {
          // A number: scanned as its digits (always: in `[4111…,5]` the raw text's lookahead sees
          // the next number); a match turns it into a string.
          const r = scanText(text.slice(i, end), plan);
          if (r) {
            edits.push([i, end, JSON.stringify(r.text)]);
            const p = framesPath(stack);
            for (const t of r.types) hit(p, t);
          }
        }
        i = end;
        state = 'after';
      }
    } else if (state === 'key') {
      const end = stringEnd(text, i);
      const key = decodeString(text.slice(i, end));
      const top = stack[stack.length - 1]!;
      top.key = key;
      top.keyHit = plan.keys.length ? keyMatch(plan, key) : null;
      i = end;
      ws();
      i++; // ':'
      ws();
      state = 'value';
    } else {
      ws();
      if (i >= n || stack.length === 0) break;
      const c = text.charCodeAt(i);
      const top = stack[stack.length - 1]!;
      i++;
      if (c === 0x2c) {
        ws();
        if (top.arr) {
          top.index++;
          state = 'value';
        } else state = 'key';
      } else {
        stack.pop();
        state = 'after';
      }
    }
    if (state !== 'value') ws();
  }
  if (edits.length === 0) return text;
  let out = '';
  let at = 0;
  for (const [s, e, r] of edits) {
    out += text.slice(at, s) + r;
    at = e;
  }
  return out + text.slice(at);
}

// ---------------------------------------------------------------------------------------------
// Form bodies and URL query strings

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

// ---------------------------------------------------------------------------------------------
// XML

const XML_ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeXml(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9A-Fa-f]{1,6}|#[0-9]{1,7}|lt|gt|amp|quot|apos);/g, (m, e: string) => {
    if (e[0] !== '#') return XML_ENTITIES[e]!;
    const cp = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
  });
}

/** Escapes `&` and `<` (and the attribute's quote); `&name;` entities of a DTD are kept as they are. */
function encodeXml(s: string, quote: string | null): string {
  let out = s
    .replace(/&(?![A-Za-z_][A-Za-z0-9._-]{0,31};)/g, '&amp;')
    .replace(/&(lt|gt|amp|quot|apos);/g, '&amp;$1;');
  out = out.replace(/</g, '&lt;').replace(/>/g, '&gt;');
  if (quote === '"') out = out.replace(/"/g, '&quot;');
  else if (quote === "'") out = out.replace(/'/g, '&apos;');
  return out;
}

const XML_NAME = /[A-Za-z_:\u00C0-\uFFFF][A-Za-z0-9_.:\u00B7\u00C0-\uFFFF-]{0,255}/y;

function xmlKeyMatch(plan: Plan, name: string): KeyMatcher | null {
  if (plan.keys.length === 0) return null;
  const direct = keyMatch(plan, name);
  if (direct) return direct;
  const colon = name.indexOf(':');
  return colon >= 0 ? keyMatch(plan, name.slice(colon + 1)) : null;
}

interface XmlFrame {
  name: string;
  /** the key matcher of this element or of an enclosing one: its text is redacted whole */
  claimed: KeyMatcher | null;
}

/**
 * Redacts an XML document with a tokenizer-level scan: text nodes and CDATA sections are scanned
 * (decoded), attribute values likewise, an element or attribute whose name a key matcher claims has
 * its text (all text inside the element) redacted whole. Only the changed spans are rewritten.
 * Returns null when the text is not a well-formed document (one root, tags balanced, attributes
 * quoted): the caller scans it as text.
 */
export function redactXml(text: string, plan: Plan, hit: Hit): string | null {
  const n = text.length;
  const edits: [number, number, string][] = [];
  const stack: XmlFrame[] = [];
  let rootSeen = false;
  let i = 0;
  const pathOf = () => `/${stack.map((f) => f.name).join('/')}`;

  const textNode = (start: number, end: number, cdata: boolean): boolean => {
    const raw = text.slice(start, end);
    if (stack.length === 0) return /^\s*$/.test(raw);
    if (/^\s*$/.test(raw)) return true;
    const value = cdata ? raw : decodeXml(raw);
    const top = stack[stack.length - 1]!;
    let next: string | null = null;
    if (top.claimed) {
      const red = redactWhole(value, top.claimed);
      next = typeof red === 'string' ? red : fullText(top.claimed.type);
      hit(pathOf(), top.claimed.type);
    } else {
      const r = scanText(value, plan);
      if (r) {
        next = r.text;
        const p = pathOf();
        for (const t of r.types) hit(p, t);
      }
    }
    if (next !== null)
      edits.push([start, end, cdata ? next.replaceAll(']]>', ']]&gt;') : encodeXml(next, null)]);
    return true;
  };

  while (i < n) {
    const lt = text.indexOf('<', i);
    if (lt < 0) {
      if (!textNode(i, n, false)) return null;
      break;
    }
    if (lt > i && !textNode(i, lt, false)) return null;
    if (text.startsWith('<?', lt)) {
      const end = text.indexOf('?>', lt + 2);
      if (end < 0) return null;
      i = end + 2;
    } else if (text.startsWith('<!--', lt)) {
      const end = text.indexOf('-->', lt + 4);
      if (end < 0) return null;
      i = end + 3;
    } else if (text.startsWith('<![CDATA[', lt)) {
      const end = text.indexOf(']]>', lt + 9);
      if (end < 0 || stack.length === 0) return null;
      textNode(lt + 9, end, true);
      i = end + 3;
    } else if (text.startsWith('<!', lt)) {
      if (rootSeen) return null;
      const bracket = text.indexOf('[', lt);
      let end = text.indexOf('>', lt);
      if (bracket >= 0 && bracket < end) {
        const close = text.indexOf(']', bracket);
        if (close < 0) return null;
        end = text.indexOf('>', close);
      }
      if (end < 0) return null;
      i = end + 1;
    } else if (text.charCodeAt(lt + 1) === 0x2f) {
      XML_NAME.lastIndex = lt + 2;
      const m = XML_NAME.exec(text);
      if (!m) return null;
      let j = lt + 2 + m[0].length;
      while (j < n && isWs(text.charCodeAt(j))) j++;
      if (text[j] !== '>') return null;
      const top = stack.pop();
      if (!top || top.name !== m[0]) return null;
      i = j + 1;
    } else {
      XML_NAME.lastIndex = lt + 1;
      const m = XML_NAME.exec(text);
      if (!m) return null;
      if (stack.length === 0 && rootSeen) return null;
      const name = m[0];
      const parent = stack[stack.length - 1];
      const frame: XmlFrame = { name, claimed: parent?.claimed ?? xmlKeyMatch(plan, name) };
      let j = lt + 1 + name.length;
      let selfClosing = false;
      for (;;) {
        const before = j;
        while (j < n && isWs(text.charCodeAt(j))) j++;
        if (j >= n) return null;
        if (text[j] === '>') {
          j++;
          break;
        }
        if (text[j] === '/' && text[j + 1] === '>') {
          selfClosing = true;
          j += 2;
          break;
        }
        if (j === before) return null; // attributes are separated by white space
        XML_NAME.lastIndex = j;
        const a = XML_NAME.exec(text);
        if (!a) return null;
        j += a[0].length;
        while (j < n && isWs(text.charCodeAt(j))) j++;
        if (text[j] !== '=') return null;
        j++;
        while (j < n && isWs(text.charCodeAt(j))) j++;
        const quote = text[j];
        if (quote !== '"' && quote !== "'") return null;
        const vEnd = text.indexOf(quote, j + 1);
        if (vEnd < 0) return null;
        const raw = text.slice(j + 1, vEnd);
        if (raw.includes('<')) return null;
        if (raw.length > 0) {
          const value = decodeXml(raw);
          const km = frame.claimed ?? xmlKeyMatch(plan, a[0]);
          const path = `/${[...stack.map((f) => f.name), name].join('/')}/@${a[0]}`;
          let next: string | null = null;
          if (km) {
            const red = redactWhole(value, km);
            next = typeof red === 'string' ? red : fullText(km.type);
            hit(path, km.type);
          } else {
            const r = scanText(value, plan);
            if (r) {
              next = r.text;
              for (const t of r.types) hit(path, t);
            }
          }
          if (next !== null) edits.push([j + 1, vEnd, encodeXml(next, quote)]);
        }
        j = vEnd + 1;
      }
      rootSeen = true;
      if (!selfClosing) stack.push(frame);
      i = j;
    }
  }
  if (stack.length !== 0 || !rootSeen) return null;
  if (edits.length === 0) return text;
  let out = '';
  let at = 0;
  for (const [s, e, r] of edits) {
    out += text.slice(at, s) + r;
    at = e;
  }
  return out + text.slice(at);
}
