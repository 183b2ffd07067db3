import { createHash } from 'node:crypto';
import {
  compilePathPattern,
  parseFieldPath,
  type FieldPathRoot,
  type FieldPathSegment,
} from '../../../services/shared/rules.js';
import { redactsIn } from '../../../services/processor/rule-environment.js';
import { isAuthorizationKey, isSecretKey } from '../../../services/processor/sensitive/detectors.js';
import { replaceUserinfoPassword } from '../../../services/processor/url-userinfo.js';
import type { CapturedRecord, RecordTag, RemoteExclusionRule, RemoteRedactionRule } from './types.js';

/**
 * Client-side rules: exclusions and `redactAt: client` redactions from the bucket's SDK settings,
 * applied in the host so excluded traffic is never sent and redacted values never leave it. The
 * field path language is the server's, parsed by the server's parser (services/shared/rules.ts;
 * docs/rules.md, "Field path syntax"): `$.a.b`, `$['k']`,
 * `$.a[0]`, `[*]`/`.*`, `$..name`, with the record-part roots `request.body`, `response.body`,
 * `request.headers`, `response.headers`, `request.queryString`, or both bodies without one. As on
 * the server (services/processor/redaction.ts): query rules also reach the fragment's
 * `name=value` pairs and a given `endpoint`'s query; a rule whose path ends in a named key also
 * redacts the tags with that key; a rule whose last key names a credential also redacts the
 * userinfo password of the URL and the host.
 */

/** A part of the record a rule reaches; a path without one reaches both bodies. */
type Root = Exclude<FieldPathRoot, 'bodies'>;

export interface CompiledRedaction {
  sid: string;
  /** identity of the rule's content: the same rule is never applied twice to one record */
  key: string;
  roots: Root[];
  segments: FieldPathSegment[];
  action: (v: unknown) => unknown;
  remove: boolean;
  environments: Set<string> | null;
  /** the path's last segment when it is a named key, lower-cased: tags with this key are redacted */
  tagKey: string | null;
  /** `tagKey` names a credential: the userinfo password of the URL and host is redacted too */
  credential: boolean;
}

export interface CompiledExclusion {
  sid: string;
  path: (p: string) => boolean;
  method: string | null;
  statusCode: number | null;
  environments: Set<string> | null;
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/gu;

function maskValue(v: unknown): unknown {
  if (v === null || v === undefined) return v;
  if (typeof v === 'string') return v.replace(LETTER_OR_DIGIT, '*');
  if (typeof v === 'number' || typeof v === 'boolean') return String(v).replace(LETTER_OR_DIGIT, '*');
  if (Array.isArray(v)) return v.map(maskValue);
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = maskValue(x);
    return out;
  }
  return v;
}

function hashValue(v: unknown): string {
  const s = typeof v === 'string' ? v : v === undefined ? '' : (JSON.stringify(v) ?? String(v));
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/** A redaction rule ready to apply, or null when its path or action is not understood. */
export function compileRedaction(rule: RemoteRedactionRule): CompiledRedaction | null {
  if (!rule || typeof rule.field !== 'string') return null;
  // The server's parser: the part of the record the path addresses (header names lower-cased, one
  // name for a headers or query-string part) and the segments inside it; an invalid path is skipped.
  const parsed = parseFieldPath(rule.field);
  if (!parsed.ok) return null;
  const roots: Root[] = parsed.root === 'bodies' ? ['request.body', 'response.body'] : [parsed.root];
  const { segments } = parsed;
  let action: (v: unknown) => unknown;
  switch (rule.action) {
    case 'mask':
      action = maskValue;
      break;
    case 'hash':
      action = hashValue;
      break;
    case 'replace': {
      const value = typeof rule.replacement === 'string' ? rule.replacement : '[REDACTED]';
      action = () => value;
      break;
    }
    case 'remove':
      action = () => undefined;
      break;
    default:
      return null;
  }
  const last = segments[segments.length - 1]!;
  const tagKey = last.type === 'key' || last.type === 'recursive' ? last.name.toLowerCase() : null;
  return {
    sid: typeof rule.sid === 'string' ? rule.sid : rule.field,
    key: JSON.stringify([rule.field, rule.action, rule.replacement ?? null, rule.environments ?? null]),
    roots,
    segments,
    action,
    remove: rule.action === 'remove',
    environments: Array.isArray(rule.environments) ? new Set(rule.environments) : null,
    tagKey,
    credential: tagKey !== null && (isSecretKey(tagKey) || isAuthorizationKey(tagKey)),
  };
}

type Container = Record<string, unknown> | unknown[];
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every (container, key) the segments reach from `value`. */
function collect(
  value: unknown,
  segments: FieldPathSegment[],
  at: number,
  out: [Container, string | number][],
): void {
  if (at >= segments.length) return;
  const seg = segments[at]!;
  const last = at === segments.length - 1;
  const visit = (c: Container, k: string | number) => {
    if (last) out.push([c, k]);
    else collect((c as Record<string | number, unknown>)[k], segments, at + 1, out);
  };
  if (seg.type === 'key') {
    if (isObject(value) && Object.hasOwn(value, seg.name)) visit(value, seg.name);
  } else if (seg.type === 'index') {
    if (Array.isArray(value) && seg.index < value.length) visit(value, seg.index);
  } else if (seg.type === 'wildcard') {
    if (Array.isArray(value)) for (let i = 0; i < value.length; i++) visit(value, i);
    else if (isObject(value)) for (const k of Object.keys(value)) visit(value, k);
  } else {
    // recursive descent: the named key at this level and below
    const walk = (v: unknown, depth: number) => {
      if (depth > 64) return;
      if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
      else if (isObject(v)) {
        for (const [k, x] of Object.entries(v)) {
          if (k === seg.name) visit(v, k);
          else walk(x, depth + 1);
        }
      }
    };
    walk(value, 0);
  }
}

/** Applies one rule to a JSON value in place; true when something changed. */
function applyToValue(value: unknown, rule: CompiledRedaction): boolean {
  const hits: [Container, string | number][] = [];
  collect(value, rule.segments, 0, hits);
  for (const [c, k] of hits) {
    if (rule.remove) {
      if (Array.isArray(c)) c[k as number] = null;
      else delete c[k as string];
    } else
      (c as Record<string | number, unknown>)[k] = rule.action((c as Record<string | number, unknown>)[k]);
  }
  return hits.length > 0;
}

/** A body as a JSON value to redact: objects as they are, strings holding JSON parsed. */
function redactBody(body: unknown, rules: CompiledRedaction[]): unknown {
  if (body === null || body === undefined || rules.length === 0) return body;
  if (typeof body === 'string') {
    const t = body.trimStart();
    if (t[0] !== '{' && t[0] !== '[') return body;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return body;
    }
    let changed = false;
    for (const r of rules) changed = applyToValue(parsed, r) || changed;
    return changed ? JSON.stringify(parsed) : body;
  }
  if (typeof body === 'object') for (const r of rules) applyToValue(body, r);
  return body;
}

const stringOf = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined ? '' : (JSON.stringify(v) ?? String(v));

/** `a=1&b=2` with the query rules applied to its parameters, re-encoded; null when none matched. */
function redactPairsText(text: string, rules: CompiledRedaction[]): string | null {
  const map: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(text)) {
    const prev = map[k];
    map[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  let changed = false;
  for (const r of rules) changed = applyToValue(map, r) || changed;
  if (!changed) return null;
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(map))
    for (const x of Array.isArray(v) ? v : [v]) out.append(k, stringOf(x));
  return out.toString();
}

/**
 * The `name=value` pairs of a URL's fragment (`#access_token=…`, or after a `?` in it), and with
 * `query` its query part, with the query rules applied; the same string when nothing matched.
 */
function redactUrlPairs(url: string, rules: CompiledRedaction[], query: boolean): string {
  const h = url.indexOf('#');
  let q = url.indexOf('?');
  if (h >= 0 && q > h) q = -1;
  let out = url;
  if (h >= 0) {
    const frag = url.slice(h + 1);
    const eq = frag.indexOf('=');
    const qm = frag.indexOf('?');
    const cut = qm >= 0 && qm < eq ? qm + 1 : 0;
    const pairs = eq < 0 ? null : redactPairsText(frag.slice(cut), rules);
    if (pairs !== null)
      out = cut === 0 && pairs === '' ? url.slice(0, h) : url.slice(0, h + 1) + frag.slice(0, cut) + pairs;
  }
  if (!query || q < 0) return out;
  const rebuilt = redactPairsText(url.slice(q + 1, h < 0 ? undefined : h), rules);
  if (rebuilt === null) return out;
  return out.slice(0, q) + (rebuilt ? `?${rebuilt}` : '') + (h < 0 ? '' : out.slice(h));
}

/** The userinfo password of a URL or host with each credential rule applied (`remove` drops it). */
function redactUserinfo(text: string, rules: CompiledRedaction[], host: boolean): string {
  return replaceUserinfoPassword(text, host, (password) => {
    let value: unknown = password;
    for (const r of rules) {
      if (r.remove) return null;
      value = r.action(value);
    }
    return stringOf(value);
  });
}

/** Tags whose key a rule names (case-insensitive): the rule's action on the value, `remove` drops the tag. */
function redactTags(tags: RecordTag[], rules: CompiledRedaction[]): RecordTag[] {
  const out: RecordTag[] = [];
  for (const t of tags) {
    const key = typeof t?.key === 'string' ? t.key.toLowerCase() : null;
    let value = t?.value;
    let removed = false;
    for (const r of rules) {
      if (key === null || r.tagKey !== key) continue;
      if (r.remove) {
        removed = true;
        break;
      }
      value = stringOf(r.action(value));
    }
    if (!removed) out.push(value === t?.value ? t : { ...t, value });
  }
  return out;
}

/** Applies the client redaction rules to a record in place. */
export function redactRecord(record: CapturedRecord, rules: CompiledRedaction[], env: string): void {
  if (rules.length === 0) return;
  const active = rules.filter((r) => redactsIn(r.environments, env));
  if (active.length === 0) return;
  const of = (root: Root) => active.filter((r) => r.roots.includes(root));
  const reqBody = of('request.body');
  if (reqBody.length) record.request.body = redactBody(record.request.body, reqBody);
  const resBody = of('response.body');
  if (resBody.length && record.response) record.response.body = redactBody(record.response.body, resBody);
  for (const r of of('request.headers')) applyToValue(record.request.headers, r);
  if (record.response) for (const r of of('response.headers')) applyToValue(record.response.headers, r);
  const qs = of('request.queryString');
  if (qs.length) {
    if (typeof record.request.url === 'string')
      record.request.url = redactUrlPairs(record.request.url, qs, false);
    if (typeof record.endpoint === 'string') record.endpoint = redactUrlPairs(record.endpoint, qs, true);
    let changed = false;
    for (const r of qs) changed = applyToValue(record.request.queryString, r) || changed;
    if (changed) {
      // The raw URL carries the same parameters: rebuilt from the redacted ones.
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(record.request.queryString))
        for (const x of Array.isArray(v) ? v : [v]) search.append(k, String(x));
      const q = search.toString();
      const base = record.request.url.split('?')[0]!;
      record.request.url = q ? `${base}?${q}` : base;
      record.request.path = record.request.path.split('?')[0]!;
    }
  }
  if (Array.isArray(record.tags) && record.tags.length && active.some((r) => r.tagKey !== null))
    record.tags = redactTags(record.tags, active);
  const credentials = active.filter((r) => r.credential);
  if (credentials.length) {
    if (typeof record.request.url === 'string')
      record.request.url = redactUserinfo(record.request.url, credentials, false);
    if (typeof record.request.host === 'string')
      record.request.host = redactUserinfo(record.request.host, credentials, true);
  }
}

export function compileExclusion(rule: RemoteExclusionRule): CompiledExclusion | null {
  if (!rule || typeof rule.path !== 'string' || !rule.path) return null;
  const method = typeof rule.method === 'string' && rule.method !== '*' ? rule.method.toUpperCase() : null;
  return {
    sid: typeof rule.sid === 'string' ? rule.sid : rule.path,
    path: compilePathPattern(rule.path),
    method,
    statusCode: typeof rule.statusCode === 'number' ? rule.statusCode : null,
    environments: Array.isArray(rule.environments) ? new Set(rule.environments) : null,
  };
}

/** The first exclusion rule matching the call, or undefined. `status` null = not known yet. */
export function excludedBy(
  rules: CompiledExclusion[],
  method: string,
  path: string,
  status: number | null,
  env: string,
): CompiledExclusion | undefined {
  if (rules.length === 0) return undefined;
  const q = path.indexOf('?');
  const p = q < 0 ? path : path.slice(0, q);
  const m = method.toUpperCase();
  for (const x of rules) {
    if (x.environments !== null && !x.environments.has(env)) continue;
    if (x.method !== null && x.method !== m) continue;
    if (x.statusCode !== null && x.statusCode !== status) continue;
    if (x.path(p)) return x;
  }
  return undefined;
}

/**
 * The sampling rate of a call: the host's per-endpoint rate (`METHOD template` first, then
 * `template`, then the raw path) times the bucket's `sampleRate`.
 */
export function sampleRateOf(
  sampling: Record<string, number> | undefined,
  bucketRate: number,
  method: string,
  endpoint: string | null,
  path: string,
): number {
  let rate = 1;
  if (sampling) {
    const key = endpoint ?? path;
    const r = sampling[`${method.toUpperCase()} ${key}`] ?? sampling[key] ?? sampling[path];
    if (typeof r === 'number' && Number.isFinite(r)) rate = r;
  }
  const b = Number.isFinite(bucketRate) ? bucketRate : 1;
  return Math.max(0, Math.min(1, rate)) * Math.max(0, Math.min(1, b));
}
