import { compileCustomPattern, SensitivePatternError } from './custom.js';
import { DETECTORS, isPredefinedType } from './detectors.js';
import { redactsIn } from '../rule-environment.js';
import { redactJsonText, redactJsonValue, type Hit } from './json-format.js';
import { redactForm, redactUrl, redactUserinfo } from './url-formats.js';
import { redactXml } from './xml-format.js';
import {
  buildPlan,
  EMPTY_PLAN,
  fullText,
  isEmptyPlan,
  keyMatch,
  mayHold,
  redactWhole,
  scanText,
  type KeyMatcher,
  type Plan,
  type ValueMatcher,
} from './matchers.js';
import {
  LEVELS,
  SENSITIVE_SCOPES,
  type ChangeScope,
  type SensitiveChange,
  type SensitiveRecordField,
  type SensitiveResult,
  type SensitiveRuleInput,
  type SensitiveScope,
  type SensitiveTarget,
} from './types.js';
import { copyWith } from '../record-copy.js';

/**
 * Sensitive-data redaction (docs/rules.md; docs/sensitive-data.md): compile an account's rules once,
 * then `redactSensitive(record, compiled)` per record. Pure and synchronous: no I/O, the input
 * record is never mutated (changed parts are copied, unchanged ones shared).
 */

/** A rule that cannot be compiled: the API answers it with a 400, the processor skips the rule. */
export class SensitiveRuleError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'SensitiveRuleError';
  }
}

const CUSTOM_TYPE_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

interface RuleMatchers {
  sid: string;
  scopes: ReadonlySet<SensitiveScope>;
  /** the rule's scopes are `*` (or none given): the record's own text fields too (changes: `record`) */
  everywhere: boolean;
  environments: ReadonlySet<string> | null;
  value: ValueMatcher | null;
  key: KeyMatcher | null;
}

/**
 * Checks one rule and builds its matchers.
 * @throws SensitiveRuleError (bad type, level, scope, applyTo) or SensitivePatternError (pattern)
 */
function ruleMatchers(rule: SensitiveRuleInput): RuleMatchers {
  if (!(LEVELS as readonly string[]).includes(rule.level))
    throw new SensitiveRuleError('level', `level must be one of ${LEVELS.join(', ')}`);
  const scopes = new Set<SensitiveScope>();
  const given: readonly string[] = rule.scopes && rule.scopes.length ? rule.scopes : ['*'];
  for (const s of given) {
    if (s === '*') for (const x of SENSITIVE_SCOPES) scopes.add(x);
    else if ((SENSITIVE_SCOPES as readonly string[]).includes(s)) scopes.add(s as SensitiveScope);
    else
      throw new SensitiveRuleError(
        'scopes',
        `unknown scope ${JSON.stringify(s)}; scopes: ${SENSITIVE_SCOPES.join(', ')}, *`,
      );
  }
  const environments = rule.environments && rule.environments.length ? new Set(rule.environments) : null;
  const base = { sid: rule.sid, scopes, everywhere: given.includes('*'), environments };
  if (isPredefinedType(rule.type)) {
    const d = DETECTORS[rule.type];
    return {
      ...base,
      value: d.patterns.length ? { type: d.type, level: rule.level, detector: d, custom: null } : null,
      key: d.key ? { type: d.type, level: rule.level, detector: d, custom: null, cache: new Map() } : null,
    };
  }
  if (typeof rule.type !== 'string' || !CUSTOM_TYPE_NAME.test(rule.type))
    throw new SensitiveRuleError(
      'type',
      'type must be a predefined type or a custom type name (a letter, then up to 63 letters, digits, `_`, `.` or `-`)',
    );
  if (rule.applyTo !== 'key' && rule.applyTo !== 'value')
    throw new SensitiveRuleError('applyTo', 'a custom type needs applyTo `key` or `value`');
  const re = compileCustomPattern(rule.pattern ?? '', 'pattern');
  return rule.applyTo === 'key'
    ? {
        ...base,
        value: null,
        key: { type: rule.type, level: rule.level, detector: null, custom: re, cache: new Map() },
      }
    : { ...base, value: { type: rule.type, level: rule.level, detector: null, custom: re }, key: null };
}

/**
 * Validates a rule the way the API must before storing it.
 * @throws SensitiveRuleError | SensitivePatternError
 */
export function validateSensitiveRule(rule: SensitiveRuleInput): void {
  ruleMatchers(rule);
}

type Plans = Record<SensitiveScope, Plan> & { urlQuery: Plan; record: Plan };

export interface CompiledSensitiveRules {
  /** rules skipped because they do not compile (a stored rule the engine no longer accepts) */
  errors: { sid: string; error: string }[];
  /** number of rules applied (enabled, not deleted, compiled) */
  size: number;
  /** plans for a record of this environment (cached per environment) */
  plansFor(environmentSid: string): Plans | null;
}

/** The plans of the rules that apply to a record of `env` (redactsIn, rule-environment.ts). */
function plansOf(rules: RuleMatchers[], env: string | null): Plans | null {
  const applicable = rules.filter((r) => redactsIn(r.environments, env));
  if (applicable.length === 0) return null;
  const planOf = (chosen: RuleMatchers[]): Plan =>
    chosen.length === 0
      ? EMPTY_PLAN
      : buildPlan(
          chosen.flatMap((r) => (r.value ? [r.value] : [])),
          chosen.flatMap((r) => (r.key ? [r.key] : [])),
        );
  const plan = (scopes: SensitiveScope[]) =>
    planOf(applicable.filter((r) => scopes.some((s) => r.scopes.has(s))));
  const out = {} as Plans;
  for (const s of SENSITIVE_SCOPES) out[s] = plan([s]);
  // The query part of `request.url`/`request.path`/`endpoint` belongs to both scopes.
  out.urlQuery = plan(['request.query', 'request.url']);
  out.record = planOf(applicable.filter((r) => r.everywhere));
  return out;
}

/**
 * Compiles an account's sensitive-data rules (already limited to the bucket; rules with `enabled: false`
 * or a `deletedAt` are left out). Rules apply in the given order: where two match overlapping text,
 * the leftmost match wins, then a key's value over a value match, then the longer, then the earlier rule.
 */
export function compileSensitiveRules(rules: readonly SensitiveRuleInput[]): CompiledSensitiveRules {
  const errors: { sid: string; error: string }[] = [];
  const compiled: RuleMatchers[] = [];
  for (const r of rules) {
    if (r.enabled === false || r.deletedAt) continue;
    try {
      compiled.push(ruleMatchers(r));
    } catch (err) {
      if (err instanceof SensitiveRuleError || err instanceof SensitivePatternError)
        errors.push({ sid: r.sid, error: err.message });
      else throw err;
    }
  }
  const anyEnv = compiled.some((r) => r.environments !== null);
  const shared = anyEnv ? null : plansOf(compiled, null);
  const byEnv = new Map<string, Plans | null>();
  return {
    errors,
    size: compiled.length,
    plansFor(env) {
      if (!anyEnv) return shared;
      let p = byEnv.get(env);
      if (p === undefined) {
        if (byEnv.size > 1000) byEnv.clear();
        p = plansOf(compiled, env);
        byEnv.set(env, p);
      }
      return p;
    },
  };
}

// ---------------------------------------------------------------------------------------------

type BodyKind = 'json' | 'form' | 'xml' | 'text';

function contentTypeOf(part: Record<string, unknown>): string {
  if (typeof part.contentType === 'string' && part.contentType) return part.contentType.toLowerCase();
  const headers = part.headers;
  if (headers && typeof headers === 'object')
    for (const [k, v] of Object.entries(headers))
      if (k.toLowerCase() === 'content-type' && typeof v === 'string') return v.toLowerCase();
  return '';
}

function firstChar(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t' && c !== '\uFEFF') return c;
  }
  return '';
}

/** The declared type of a text body; without a content type, the first character decides. */
export function bodyKind(contentType: string, body: string): BodyKind {
  const ct = contentType.split(';')[0]!.trim();
  if (ct === 'application/x-www-form-urlencoded') return 'form';
  if (/(?:^|[/+])json$/.test(ct)) return 'json';
  if (/(?:^|[/+])xml$/.test(ct)) return 'xml';
  if (ct) return 'text';
  const c = firstChar(body);
  return c === '{' || c === '[' ? 'json' : c === '<' ? 'xml' : 'text';
}

/** Runs a format with its hits held back until it succeeds (a format that fails reports nothing). */
function attempt(hit: Hit, f: (h: Hit) => string | null): string | null {
  const held: [string, string][] = [];
  const out = f((p, t) => held.push([p, t]));
  if (out !== null) for (const [p, t] of held) hit(p, t);
  return out;
}

function redactBody(body: unknown, contentType: string, plan: Plan, hit: Hit): unknown {
  if (body === null || body === undefined) return body;
  if (typeof body !== 'string') return redactJsonValue(body, plan, '$', hit);
  if (body.length === 0) return body;
  const kind = bodyKind(contentType, body);
  if (!mayHold(plan, body, kind === 'json')) return body;
  let out: string | null = null;
  if (kind === 'json') out = attempt(hit, (h) => redactJsonText(body, plan, h));
  else if (kind === 'xml') out = attempt(hit, (h) => redactXml(body, plan, h));
  else if (kind === 'form') out = attempt(hit, (h) => redactForm(body, plan, h));
  if (out !== null) return out;
  // Plain text, or a body that is not valid in its declared type.
  const r = scanText(body, plan, true);
  if (!r) return body;
  for (const t of r.types) hit('$', t);
  return r.text;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The label a claimed header's value reads as: `Cookie` and `Set-Cookie` hold session cookies, not
 * a password, so the `password` key rule labels them `[REDACTED:cookie]`; the change keeps the
 * rule's type.
 */
function headerLabel(km: KeyMatcher, name: string): string {
  return km.detector?.type === 'password' && /(?:^|-)cookie$/i.test(name) ? 'cookie' : km.type;
}

function redactHeaders(headers: Record<string, unknown>, plan: Plan, hit: Hit): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const name of Object.keys(headers)) {
    const v = headers[name];
    const km = plan.keys.length ? keyMatch(plan, name) : null;
    let next: unknown = v;
    if (km) {
      const label = headerLabel(km, name);
      next = Array.isArray(v) ? v.map((x) => redactWhole(x, km, label)) : redactWhole(v, km, label);
      if (next !== v) hit(name, km.type);
    } else if (typeof v === 'string') next = scanFree(v, plan, name, hit);
    else if (Array.isArray(v))
      next = scanList(
        v,
        plan,
        () => name,
        (_, t) => hit(name, t),
      );
    if (next !== v) (out ??= { ...headers })[name] = next;
  }
  return out ?? headers;
}

/**
 * A free text (a header value, a trace, a note, a tag value): value matchers, and `name=value` /
 * `name: value` pairs whose name a key matcher claims (`X-Debug: token=…`, `password=…` in a note).
 */
function scanFree(v: string, plan: Plan, path: string, hit: Hit): string {
  const r = scanText(v, plan, true);
  if (!r) return v;
  for (const t of r.types) hit(path, t);
  return r.text;
}

/** A list of free texts (a header sent several times, `traces`); other items are walked as JSON. */
function scanList(list: unknown[], plan: Plan, pathOf: (i: number) => string, hit: Hit): unknown[] {
  let out: unknown[] | null = null;
  for (let i = 0; i < list.length; i++) {
    const x = list[i];
    const y =
      typeof x === 'string' ? scanFree(x, plan, pathOf(i), hit) : redactJsonValue(x, plan, pathOf(i), hit);
    if (y !== x) (out ??= list.slice())[i] = y;
  }
  return out ?? list;
}

/** `tags` (`[{key, value}]`): a key a key matcher claims redacts its value whole, other values are free text. */
function redactTags(tags: unknown[], plan: Plan, hit: Hit): unknown[] {
  let out: unknown[] | null = null;
  for (let i = 0; i < tags.length; i++) {
    const t = tags[i];
    if (!isObject(t) || typeof t.key !== 'string') continue;
    const v = t.value;
    const km = plan.keys.length ? keyMatch(plan, t.key) : null;
    let next: unknown = v;
    if (km) {
      const red = redactWhole(v, km);
      // A tag value stays a string (the `tags` column is a map of strings).
      next = typeof red === 'string' || red === v ? red : fullText(km.type);
      if (next !== v) hit(`tags.${t.key}`, km.type);
    } else if (typeof v === 'string') {
      const r = scanText(v, plan, true);
      if (r) {
        next = r.text;
        for (const type of r.types) hit(`tags.${t.key}`, type);
      }
    }
    if (next !== v) (out ??= tags.slice())[i] = { ...t, value: next };
  }
  return out ?? tags;
}

/**
 * The key matcher that hides a userinfo password (`https://user:secret@host`): the one that claims
 * a field named `password`, else `authorization` (the credentials such a URL sends).
 */
function userinfoMatcher(plan: Plan): KeyMatcher | null {
  if (plan.keys.length === 0) return null;
  return keyMatch(plan, 'password') ?? keyMatch(plan, 'authorization');
}

/** The parsed query object: a claimed name redacts its values, other values are scanned. */
function redactQueryObject(q: Record<string, unknown>, plan: Plan, hit: Hit): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const name of Object.keys(q)) {
    const v = q[name];
    const km = plan.keys.length ? keyMatch(plan, name) : null;
    let next: unknown;
    if (km) {
      next = Array.isArray(v) ? v.map((x) => redactWhole(x, km)) : redactWhole(v, km);
      if (next !== v) hit(name, km.type);
    } else next = redactJsonValue(v, plan, name, (_, t) => hit(name, t));
    if (next !== v) (out ??= { ...q })[name] = next;
  }
  return out ?? q;
}

/**
 * Applies compiled sensitive-data rules to one record. Returns the record (a copy where something changed,
 * the same object otherwise), the list of redacted locations and the `redacted` flag. Sizes
 * (`request.size`, `response.size`) are kept as received.
 */
export function redactSensitive<T extends SensitiveTarget>(
  record: T,
  compiled: CompiledSensitiveRules,
): SensitiveResult<T> {
  const env = typeof record.environmentSid === 'string' ? record.environmentSid : '';
  const plans = compiled.plansFor(env);
  if (!plans) return { record, changes: [], redacted: false };
  const changes: SensitiveChange[] = [];
  const seen = new Set<string>();
  const hitFor =
    (scope: ChangeScope): Hit =>
    (path, type) => {
      const k = `${scope}\u0000${path}\u0000${type}`;
      if (seen.has(k)) return;
      seen.add(k);
      changes.push({ scope, path, type });
    };

  let req = record.request;
  const setReq = (k: string, v: unknown) => {
    if (req[k] === v) return;
    if (req === record.request) req = copyWith(req);
    req[k] = v;
  };
  const reqCt = () => contentTypeOf(record.request);

  if (!isEmptyPlan(plans['request.headers']) && isObject(req.headers))
    setReq('headers', redactHeaders(req.headers, plans['request.headers'], hitFor('request.headers')));
  if (!isEmptyPlan(plans['request.query']) && isObject(req.queryString))
    setReq(
      'queryString',
      redactQueryObject(req.queryString, plans['request.query'], hitFor('request.query')),
    );
  const pathPlan = isEmptyPlan(plans['request.url']) ? null : plans['request.url'];
  const queryPlan = isEmptyPlan(plans.urlQuery) ? null : plans.urlQuery;
  // Fields of the record itself that change (endpoint, traces, tags, note, contextSid).
  const top: Partial<Record<SensitiveRecordField, unknown>> = {};
  if (pathPlan || queryPlan) {
    const urlHit = hitFor('request.url');
    // The query of the raw URL is reported under `request.query` when that scope asked for it.
    const qScope: SensitiveScope = isEmptyPlan(plans['request.query']) ? 'request.url' : 'request.query';
    const userinfo = pathPlan ? userinfoMatcher(pathPlan) : null;
    const asUrl = (v: string, field: string): string => {
      const u = userinfo && field === 'url' ? redactUserinfo(v, userinfo, false) : v;
      if (u !== v) urlHit(field, userinfo!.type);
      return redactUrl(u, pathPlan, queryPlan, (t) => urlHit(field, t), hitFor(qScope), field);
    };
    for (const field of ['url', 'path'] as const) {
      const v = req[field];
      if (typeof v === 'string' && v.length > 0) setReq(field, asUrl(v, field));
    }
    // The host is the URL's authority: its userinfo password and what the head's scan finds.
    const host = req.host;
    if (pathPlan && typeof host === 'string' && host.length > 0) {
      let h = userinfo ? redactUserinfo(host, userinfo, true) : host;
      if (h !== host) urlHit('host', userinfo!.type);
      const r = scanText(h, pathPlan);
      if (r) {
        h = r.text;
        for (const t of r.types) urlHit('host', t);
      }
      setReq('host', h);
    }
    // A client's endpoint template is redacted as a path (with the query a client may put in it).
    if (typeof record.endpoint === 'string' && record.endpoint.length > 0) {
      const e = asUrl(record.endpoint, 'endpoint');
      if (e !== record.endpoint) top.endpoint = e;
    }
  }
  const recordPlan = isEmptyPlan(plans.record) ? null : plans.record;
  if (recordPlan) {
    const hit = hitFor('record');
    for (const field of ['note', 'contextSid'] as const) {
      const v = record[field];
      if (typeof v !== 'string' || v.length === 0) continue;
      const next = scanFree(v, recordPlan, field, hit);
      if (next !== v) top[field] = next;
    }
    if (Array.isArray(record.tags) && record.tags.length) {
      const next = redactTags(record.tags, recordPlan, hit);
      if (next !== record.tags) top.tags = next;
    }
    if (Array.isArray(record.traces) && record.traces.length) {
      const next = scanList(record.traces, recordPlan, (i) => `traces[${i}]`, hit);
      if (next !== record.traces) top.traces = next;
    }
  }
  if (!isEmptyPlan(plans['request.body']) && req.body !== undefined)
    setReq('body', redactBody(req.body, reqCt(), plans['request.body'], hitFor('request.body')));

  let res = record.response;
  if (isObject(res)) {
    const original = res;
    const setRes = (k: string, v: unknown) => {
      if (res![k] === v) return;
      if (res === original) res = copyWith(original);
      res![k] = v;
    };
    if (!isEmptyPlan(plans['response.headers']) && isObject(res.headers))
      setRes('headers', redactHeaders(res.headers, plans['response.headers'], hitFor('response.headers')));
    if (!isEmptyPlan(plans['response.body']) && res.body !== undefined)
      setRes(
        'body',
        redactBody(res.body, contentTypeOf(original), plans['response.body'], hitFor('response.body')),
      );
  }

  if (changes.length === 0) return { record, changes, redacted: false };
  const out = copyWith(record, { request: req, ...top } as Partial<T>);
  if (res !== record.response) out.response = res;
  return { record: out, changes, redacted: true };
}
