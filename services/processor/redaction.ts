import { createHash } from 'node:crypto';
import {
  parseFieldPath,
  REDACTION_TYPES,
  type FieldPathRoot,
  type FieldPathSegment,
} from '../shared/rules.js';
import type { RedactionRule, RedactionType } from './rule-snapshot.js';
import { isAuthorizationKey, isSecretKey } from './sensitive/detectors.js';
import { replaceUserinfoPassword } from './url-userinfo.js';
import { copyWith } from './record-copy.js';

/**
 * Server-side redaction (docs/rules.md). A rule's `fieldPath` is parsed once (services/shared/field-path.ts)
 * into a root (which part of the record) and segments; applying it walks only the addressed
 * part of one record. What each root covers (docs/processing.md):
 * - `request.body` / `response.body` (and `bodies` = both): a JSON body given as an object/array,
 *   or as a string holding JSON (parsed, redacted, re-serialised compactly when something
 *   changed), or an `application/x-www-form-urlencoded` string (fields as keys). Any other body
 *   is left whole.
 * - `request.headers` / `response.headers`: header names case-insensitive.
 * - `request.queryString`: the parsed query object AND the query part (and the `name=value`
 *   pairs of the fragment) of `request.url`, `request.path` and a client's `endpoint`, so a
 *   redacted parameter cannot survive in the raw URL or the metrics' endpoint.
 * Whatever the root, a rule whose path ends in a named key also redacts the value of every tag
 * with that key (case-insensitive), and a rule whose last key names a credential (the `password`
 * type's names, `authorization`) also redacts the userinfo password of `request.url` and
 * `request.host` (`https://user:secret@host`).
 */

export type Part = Exclude<FieldPathRoot, 'bodies'>;
export type Action = (value: unknown) => unknown;

export interface CompiledRedaction {
  sid: string;
  parts: Part[];
  segments: FieldPathSegment[];
  /**
   * `"name"` of the path's last named key: a JSON text without backslashes can only hold a
   * matching field if it contains this literally, so most bodies skip the parse. null = no
   * named key (wildcards/indexes only), always parse.
   */
  needle: string | null;
  type: RedactionType;
  /** the new value of a matched field (not used for `remove`) */
  action: Action;
  buckets: ReadonlySet<string> | null;
  environments: ReadonlySet<string> | null;
  /** the path's last segment when it is a named key, lower-cased: tags with this key are redacted */
  tagKey: string | null;
  /** `tagKey` names a credential: the userinfo password of the URL and host is redacted too */
  credential: boolean;
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/gu;

/** `4111-1111-1111-1111` -> `****-****-****-****`: letters and digits become `*`, the rest stays. */
export function maskString(s: string): string {
  return s.replace(LETTER_OR_DIGIT, '*');
}

/** Mask keeps structure: every scalar inside an object/array is masked, keys are kept. */
export function maskValue(v: unknown): unknown {
  if (v === null || v === undefined) return v;
  if (typeof v === 'string') return maskString(v);
  // Numbers become strings of `*` with the digit count (sign and decimal point kept).
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return maskString(String(v));
  if (Array.isArray(v)) return v.map(maskValue);
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = maskValue(x);
    return out;
  }
  return v;
}

/** The string a hash is computed over: strings as they are, anything else as JSON. */
export function stringForm(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  return JSON.stringify(v) ?? String(v);
}

export function hashValue(v: unknown): string {
  return createHash('sha256').update(stringForm(v), 'utf8').digest('hex');
}

export const DEFAULT_REPLACEMENT = '[REDACTED]';

function actionOf(type: RedactionType, replacement: string | null): Action {
  switch (type) {
    case 'mask':
      return maskValue;
    case 'hash':
      return hashValue;
    case 'replace': {
      const value = replacement ?? DEFAULT_REPLACEMENT;
      return () => value;
    }
    case 'remove':
      return () => undefined;
  }
}

const BODY_PARTS: Part[] = ['request.body', 'response.body'];

function needleOf(segments: FieldPathSegment[]): string | null {
  for (let i = segments.length - 1; i >= 0; i--) {
    const s = segments[i]!;
    if (s.type === 'key' || s.type === 'recursive') return JSON.stringify(s.name);
  }
  return null;
}

/**
 * Whether a JSON text may hold a field some rule addresses. Only sound without backslashes:
 * with escapes (`\u0070assword`, `\/`) a key's text differs from its name, so then always parse.
 */
function mayMatch(json: string, rules: readonly CompiledRedaction[]): boolean {
  if (json.includes('\\')) return true;
  for (const r of rules) if (r.needle === null || json.includes(r.needle)) return true;
  return false;
}

/** The last segment's name when it is a named key (`$.a.password`, `$..password`), lower-cased. */
function tagKeyOf(segments: FieldPathSegment[]): string | null {
  const last = segments[segments.length - 1];
  return last && (last.type === 'key' || last.type === 'recursive') ? last.name.toLowerCase() : null;
}

export type CompileResult = { ok: true; rule: CompiledRedaction } | { ok: false; sid: string; error: string };

export function compileRedaction(rule: RedactionRule): CompileResult {
  const parsed = parseFieldPath(rule.fieldPath);
  if (!parsed.ok) return { ok: false, sid: rule.sid, error: parsed.error };
  if (!(REDACTION_TYPES as readonly string[]).includes(rule.redactionType))
    return { ok: false, sid: rule.sid, error: `unknown redactionType ${rule.redactionType}` };
  const tagKey = tagKeyOf(parsed.segments);
  return {
    ok: true,
    rule: {
      sid: rule.sid,
      parts: parsed.root === 'bodies' ? BODY_PARTS : [parsed.root],
      segments: parsed.segments,
      needle: needleOf(parsed.segments),
      type: rule.redactionType,
      action: actionOf(rule.redactionType, rule.replacementValue),
      buckets: rule.buckets ? new Set(rule.buckets) : null,
      environments: rule.environments ? new Set(rule.environments) : null,
      tagKey,
      credential: tagKey !== null && (isSecretKey(tagKey) || isAuthorizationKey(tagKey)),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Walking a JSON value

type Container = Record<string, unknown> | unknown[];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Matched (container, key) pairs, deduplicated: `$..a` may reach the same field twice. */
class Matches {
  readonly byContainer = new Map<Container, Set<string | number>>();
  add(c: Container, key: string | number): void {
    let s = this.byContainer.get(c);
    if (!s) this.byContainer.set(c, (s = new Set()));
    s.add(key);
  }
  get size(): number {
    return this.byContainer.size;
  }
}

/** A field reached by segment `i`: the match itself if it was the last segment, else walk on. */
function hit(c: Container, key: string | number, segs: FieldPathSegment[], i: number, out: Matches): void {
  if (i === segs.length - 1) out.add(c, key);
  else collect((c as Record<string | number, unknown>)[key], segs, i + 1, out);
}

function collect(node: unknown, segs: FieldPathSegment[], i: number, out: Matches): void {
  const seg = segs[i]!;
  switch (seg.type) {
    case 'key':
      if (isObject(node) && Object.hasOwn(node, seg.name)) hit(node, seg.name, segs, i, out);
      return;
    case 'index':
      if (Array.isArray(node) && seg.index < node.length) hit(node, seg.index, segs, i, out);
      return;
    case 'wildcard':
      if (Array.isArray(node)) for (let k = 0; k < node.length; k++) hit(node, k, segs, i, out);
      else if (isObject(node)) for (const k of Object.keys(node)) hit(node, k, segs, i, out);
      return;
    case 'recursive': {
      // Descendants-or-self with an iterative stack: deeply nested bodies cannot overflow it.
      const stack: unknown[] = [node];
      while (stack.length) {
        const n = stack.pop();
        if (Array.isArray(n)) {
          for (let k = 0; k < n.length; k++) if (typeof n[k] === 'object' && n[k] !== null) stack.push(n[k]);
        } else if (isObject(n)) {
          if (Object.hasOwn(n, seg.name)) hit(n, seg.name, segs, i, out);
          // Visit order does not matter: matches are collected first and applied afterwards.
          for (const k in n) {
            const child = n[k];
            if (typeof child === 'object' && child !== null) stack.push(child);
          }
        }
      }
      return;
    }
  }
}

function applyMatches(matches: Matches, rule: CompiledRedaction): void {
  for (const [c, keys] of matches.byContainer) {
    if (Array.isArray(c)) {
      const idx = [...keys].map(Number).sort((a, b) => b - a);
      for (const k of idx) {
        if (rule.type === 'remove') c.splice(k, 1);
        else c[k] = rule.action(c[k]);
      }
    } else {
      for (const k of keys as Set<string>) {
        if (rule.type === 'remove') delete c[k];
        else c[k] = rule.action(c[k]);
      }
    }
  }
}

/**
 * Applies rules to a JSON value in place. A rule with no segments addresses the value itself:
 * returns `{changed, value}` where value is undefined when it was removed.
 */
export function redactJson(
  value: unknown,
  rules: readonly CompiledRedaction[],
): { changed: boolean; value: unknown } {
  let changed = false;
  let current = value;
  for (const rule of rules) {
    if (rule.segments.length === 0) {
      current = rule.type === 'remove' ? undefined : rule.action(current);
      changed = true;
      if (current === undefined) break;
      continue;
    }
    const m = new Matches();
    collect(current, rule.segments, 0, m);
    if (m.size) {
      applyMatches(m, rule);
      changed = true;
    }
  }
  return { changed, value: current };
}

// ---------------------------------------------------------------------------------------------
// Flat maps: headers (case-insensitive names) and query parameters (string or list of strings)

function applyFlat(map: Record<string, unknown>, rule: CompiledRedaction, caseInsensitive: boolean): boolean {
  const seg = rule.segments[0];
  let keys: string[];
  if (!seg || seg.type === 'wildcard') keys = Object.keys(map);
  else if (seg.type === 'key' || seg.type === 'recursive')
    // Flat maps have one level, so `$..name` on a form body means the field `name`.
    keys = caseInsensitive
      ? Object.keys(map).filter((k) => k.toLowerCase() === seg.name.toLowerCase())
      : Object.hasOwn(map, seg.name)
        ? [seg.name]
        : [];
  else keys = [];
  for (const k of keys) {
    if (rule.type === 'remove') delete map[k];
    else {
      const v = map[k];
      // A header or parameter sent several times: each value is redacted on its own.
      map[k] = Array.isArray(v) ? v.map(rule.action) : rule.action(v);
    }
  }
  return keys.length > 0;
}

/** `a=1&b=2` with the query rules applied, re-encoded; null when no rule matched a parameter. */
function redactPairsText(text: string, rules: readonly CompiledRedaction[]): string | null {
  const params = new URLSearchParams(text);
  const map: Record<string, unknown> = {};
  for (const [k, v] of params) {
    const prev = map[k];
    map[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  let changed = false;
  for (const rule of rules) changed = applyFlat(map, rule, false) || changed;
  if (!changed) return null;
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(map)) {
    for (const x of Array.isArray(v) ? v : [v]) out.append(k, stringForm(x));
  }
  return out.toString();
}

/**
 * Redacts the query part of a URL or path, and the `name=value` pairs of its fragment
 * (`#access_token=…`, or after a `?` in it: `#/callback?code=…`); returns it unchanged when
 * nothing matched.
 */
function redactUrlQuery(url: string, rules: readonly CompiledRedaction[]): string {
  const hashAt = url.indexOf('#');
  let q = url.indexOf('?');
  // A `?` after the `#` is part of the fragment.
  if (hashAt >= 0 && q > hashAt) q = -1;
  let out = url;
  if (hashAt >= 0) {
    const frag = url.slice(hashAt + 1);
    const eq = frag.indexOf('=');
    if (eq >= 0) {
      const qm = frag.indexOf('?');
      const cut = qm >= 0 && qm < eq ? qm + 1 : 0;
      const pairs = redactPairsText(frag.slice(cut), rules);
      if (pairs !== null)
        out =
          cut === 0 && pairs === ''
            ? url.slice(0, hashAt)
            : url.slice(0, hashAt + 1) + frag.slice(0, cut) + pairs;
    }
  }
  if (q < 0) return out;
  const query = url.slice(q + 1, hashAt < 0 ? undefined : hashAt);
  if (!query) return out;
  const rebuilt = redactPairsText(query, rules);
  if (rebuilt === null) return out;
  return out.slice(0, q) + (rebuilt ? `?${rebuilt}` : '') + (hashAt < 0 ? '' : out.slice(hashAt));
}

/**
 * The userinfo password of a URL or a host (url-userinfo.ts) with each credential rule's action
 * applied (`remove` drops it, keeping the user name); the same string when there is none.
 */
function redactUserinfo(text: string, rules: readonly CompiledRedaction[], host: boolean): string {
  return replaceUserinfoPassword(text, host, (password) => {
    let value: unknown = password;
    for (const rule of rules) {
      if (rule.type === 'remove') return null;
      value = rule.action(value);
    }
    return stringForm(value);
  });
}

/** Tags (`[{key, value}]`) whose key a rule names: the rule's action on the value, `remove` drops the tag. */
function redactTags(tags: unknown[], rules: readonly CompiledRedaction[]): unknown[] {
  const out: unknown[] = [];
  for (const t of tags) {
    if (!isObject(t) || typeof t.key !== 'string') {
      out.push(t);
      continue;
    }
    const key = t.key.toLowerCase();
    let value: unknown = t.value;
    let removed = false;
    for (const rule of rules) {
      if (rule.tagKey !== key) continue;
      if (rule.type === 'remove') {
        removed = true;
        break;
      }
      // A tag value stays a string (the `tags` column is a map of strings).
      value = stringForm(rule.action(value));
    }
    if (!removed) out.push(value === t.value ? t : { ...t, value });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Bodies

function contentTypeOf(part: Record<string, unknown>): string {
  if (typeof part.contentType === 'string') return part.contentType.toLowerCase();
  const headers = part.headers;
  if (isObject(headers)) {
    for (const [k, v] of Object.entries(headers))
      if (k.toLowerCase() === 'content-type' && typeof v === 'string') return v.toLowerCase();
  }
  return '';
}

function looksLikeJson(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7b /* { */ || c === 0x5b; /* [ */
  }
  return false;
}

function redactBody(part: Record<string, unknown>, rules: readonly CompiledRedaction[]): void {
  const body = part.body;
  if (body === undefined || body === null) return;
  if (typeof body === 'object') {
    const res = redactJson(body, rules);
    if (res.value === undefined) delete part.body;
    else part.body = res.value;
    return;
  }
  if (typeof body !== 'string') {
    const res = redactJson(body, rules);
    if (res.changed) {
      if (res.value === undefined) delete part.body;
      else part.body = res.value;
    }
    return;
  }
  const ct = contentTypeOf(part);
  if (looksLikeJson(body)) {
    if (!mayMatch(body, rules)) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined) {
      const res = redactJson(parsed, rules);
      if (!res.changed) return;
      if (res.value === undefined) delete part.body;
      else part.body = typeof res.value === 'string' ? res.value : JSON.stringify(res.value);
      return;
    }
  }
  if (ct.startsWith('application/x-www-form-urlencoded')) {
    const redacted = redactUrlQuery(
      `?${body}`,
      rules.filter((r) => r.segments.length === 1),
    );
    if (redacted !== `?${body}`) part.body = redacted.slice(1);
    // Whole-body rules still apply below.
  }
  // A non-JSON body: only rules that address the body itself (no segments) touch it.
  const whole = rules.filter((r) => r.segments.length === 0);
  if (whole.length) {
    const res = redactJson(part.body, whole);
    if (res.value === undefined) delete part.body;
    else part.body = res.value;
  }
}

// ---------------------------------------------------------------------------------------------

export interface RedactTarget {
  request: Record<string, unknown>;
  response?: Record<string, unknown> | null;
  endpoint?: unknown;
  tags?: unknown;
}

/**
 * Applies the rules that concern this record (already filtered by bucket/environment) in rule
 * order, mutating the record. Each body is parsed and serialised at most once.
 */
export function redactRecord(record: RedactTarget, rules: readonly CompiledRedaction[]): void {
  if (rules.length === 0) return;
  const by: Record<Part, CompiledRedaction[]> = {
    'request.body': [],
    'response.body': [],
    'request.headers': [],
    'response.headers': [],
    'request.queryString': [],
  };
  for (const r of rules) for (const p of r.parts) by[p].push(r);
  const req = record.request;
  const res = record.response;
  if (by['request.body'].length) redactBody(req, by['request.body']);
  if (res && by['response.body'].length) redactBody(res, by['response.body']);
  if (by['request.headers'].length && isObject(req.headers))
    for (const r of by['request.headers']) applyFlat(req.headers, r, true);
  if (res && by['response.headers'].length && isObject(res.headers))
    for (const r of by['response.headers']) applyFlat(res.headers, r, true);
  const q = by['request.queryString'];
  if (q.length) {
    if (isObject(req.queryString)) for (const r of q) applyFlat(req.queryString, r, false);
    if (typeof req.url === 'string') req.url = redactUrlQuery(req.url, q);
    if (typeof req.path === 'string') req.path = redactUrlQuery(req.path, q);
    if (typeof record.endpoint === 'string') record.endpoint = redactUrlQuery(record.endpoint, q);
  }
  if (Array.isArray(record.tags) && record.tags.length && rules.some((r) => r.tagKey !== null))
    record.tags = redactTags(record.tags, rules);
  const credentials = rules.filter((r) => r.credential);
  if (credentials.length) {
    if (typeof req.url === 'string') req.url = redactUserinfo(req.url, credentials, false);
    if (typeof req.host === 'string') req.host = redactUserinfo(req.host, credentials, true);
  }
}

/** A part copied so that redactRecord's changes to it (and to its flat maps) land in the copy. */
function partCopy(part: Record<string, unknown>, bodyRules: boolean): Record<string, unknown> {
  const copy = copyWith(part);
  if (isObject(copy.headers)) copy.headers = { ...copy.headers };
  if (isObject(copy.queryString)) copy.queryString = { ...copy.queryString };
  // A parsed JSON body is redacted in place at any depth: it gets a deep copy when rules read it.
  if (bodyRules && typeof copy.body === 'object' && copy.body !== null)
    copy.body = structuredClone(copy.body);
  return copy;
}

/**
 * redactRecord applied to a copy of the record: the record given, its parts and everything they
 * hold stay as they are (the processor's steps are copy-on-write). The copy's `request` and
 * `response` are copies too, so the sink sees each member a rule may have replaced as a new value.
 */
export function redactedCopy<T extends RedactTarget>(record: T, rules: readonly CompiledRedaction[]): T {
  const reqBody = rules.some((r) => r.parts.includes('request.body'));
  const resBody = rules.some((r) => r.parts.includes('response.body'));
  const copy = copyWith(record, { request: partCopy(record.request, reqBody) } as Partial<T>);
  if (record.response) copy.response = partCopy(record.response, resBody);
  redactRecord(copy, rules);
  return copy;
}
