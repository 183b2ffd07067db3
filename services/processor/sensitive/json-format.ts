import {
  fullText,
  jsonCandidates,
  keyMatch,
  redactWhole,
  scanText,
  type KeyMatcher,
  type Plan,
} from './matchers.js';

/**
 * Body and URL formats: JSON here (parsed, and as text), form bodies and URLs in url-formats.ts, XML
 * in xml-format.ts. Each function takes a value and a plan and returns the redacted value (the same reference when
 * nothing changed; inputs are never mutated), reporting each redacted location through
 * `hit(path, type)`. The text formats (JSON text, XML, form, URL) rewrite only the redacted spans:
 * every other byte of the document stays as received.
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

/**
 * `text` with each edit `[start, end, replacement]` (in order, not overlapping) applied: every other
 * byte stays as it is; the same string when there is none.
 */
export function applyEdits(text: string, edits: readonly (readonly [number, number, string])[]): string {
  if (edits.length === 0) return text;
  let out = '';
  let at = 0;
  for (const [s, e, r] of edits) {
    out += text.slice(at, s) + r;
    at = e;
  }
  return out + text.slice(at);
}

export const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

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
  return applyEdits(text, edits);
}
