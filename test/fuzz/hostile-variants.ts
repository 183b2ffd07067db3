/**
 * A small generator of hostile requests for every operation of the OpenAPI document: bad path
 * parameters, bad query parameters, bad bodies. No vitest here, so the hostile-input test and
 * ad-hoc runs (`tsx`) share it. Each case says whether the service must refuse it (`reject`: a
 * 4xx) or may accept it (`any`: anything but a 5xx; SQL fragments in a name are a valid name).
 */

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  minProperties?: number;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
};

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonSchema;
}

export interface OpenApiOperation {
  parameters?: OpenApiParameter[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  security?: unknown[];
  responses?: Record<string, unknown>;
}

export interface OpenApiDoc {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export interface Endpoint {
  method: string;
  /** OpenAPI path with `{name}` placeholders */
  path: string;
  op: OpenApiOperation;
}

export interface HostileCase {
  endpoint: string;
  label: string;
  method: string;
  /** path and query, already encoded */
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  expect: 'reject' | 'any';
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Every operation of the document, `/v1/openapi.json` included. */
export function endpoints(doc: OpenApiDoc): Endpoint[] {
  const out: Endpoint[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (METHODS.includes(method)) out.push({ method: method.toUpperCase(), path, op });
    }
  }
  return out;
}

export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
}

/** A well-formed sid nobody owns, for a path parameter the context does not know. */
export function unknownSid(name: string): string {
  const prefix = name.replace(/Sid$/, '').slice(0, 3).toLowerCase() || 'xxx';
  return `${prefix}_${'Z'.repeat(27)}`;
}

/** The path with every `{name}` replaced: `raw` values are put in as they are, the rest encoded. */
export function fillPath(
  path: string,
  values: Record<string, string>,
  raw: Record<string, string> = {},
): string {
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
    name in raw ? raw[name]! : encodeURIComponent(values[name] ?? unknownSid(name)),
  );
}

export function resolve(schema: JsonSchema, doc: OpenApiDoc): JsonSchema {
  let s = schema;
  for (let i = 0; s.$ref && i < 20; i++) {
    const name = s.$ref.replace('#/components/schemas/', '');
    s = doc.components?.schemas?.[name] ?? {};
  }
  return s;
}

function types(schema: JsonSchema): string[] {
  const t = schema.type;
  return t === undefined ? [] : Array.isArray(t) ? t : [t];
}

const PATTERN_CANDIDATES = ['fuzz01', '/seed/*', '5m', '5xx', 'GET', '$.password', '*', 'abc', 'a', '1'];

/** A string value valid for `schema` (format, pattern, enum, length), or a plain word. */
function sampleString(schema: JsonSchema, name: string, ctx: Record<string, string>): string {
  if (ctx[name] !== undefined) return ctx[name]!;
  if (schema.format === 'date-time') return new Date(Date.now() - 60_000).toISOString();
  if (schema.format === 'email') return 'ops@example.test';
  if (schema.format === 'uri') return 'https://example.test/hook';
  if (schema.pattern) {
    const re = new RegExp(schema.pattern);
    const hit = PATTERN_CANDIDATES.find((c) => re.test(c));
    if (hit) return hit;
  }
  const min = schema.minLength ?? 1;
  return 'hostile'.padEnd(Math.min(Math.max(min, 7), schema.maxLength ?? 7), 'x');
}

/**
 * A value valid for `schema` with only the required properties filled. Names found in `ctx`
 * (bucketSid, environmentSid, ...) take their context value; arrays of `...Sids` take one.
 */
export function sample(
  schema: JsonSchema,
  doc: OpenApiDoc,
  ctx: Record<string, string>,
  name = '',
  depth = 0,
): unknown {
  const s = resolve(schema, doc);
  if (depth > 8) return null;
  if (s.const !== undefined) return s.const;
  if (s.enum && s.enum.length) return s.enum.find((v) => v !== null) ?? s.enum[0];
  if (s.default !== undefined && typeof s.default !== 'object') return s.default;
  const branches = s.oneOf ?? s.anyOf;
  if (branches && branches.length) {
    const merged: JsonSchema = { ...s, ...resolve(branches[0]!, doc), oneOf: undefined, anyOf: undefined };
    merged.properties = { ...s.properties, ...resolve(branches[0]!, doc).properties };
    merged.required = [...new Set([...(s.required ?? []), ...(resolve(branches[0]!, doc).required ?? [])])];
    if (!merged.type && s.type) merged.type = s.type;
    return sample(merged, doc, ctx, name, depth + 1);
  }
  const t = types(s).find((x) => x !== 'null') ?? (s.properties ? 'object' : 'string');
  switch (t) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of s.required ?? []) {
        out[key] = sample(s.properties?.[key] ?? {}, doc, ctx, key, depth + 1);
      }
      if (s.minProperties && Object.keys(out).length < s.minProperties) {
        for (const [key, sub] of Object.entries(s.properties ?? {})) {
          if (Object.keys(out).length >= s.minProperties) break;
          out[key] ??= sample(sub, doc, ctx, key, depth + 1);
        }
      }
      return out;
    }
    case 'array': {
      const single = name.endsWith('Sids') ? ctx[name.replace(/s$/, '')] : undefined;
      const item = single ?? sample(s.items ?? {}, doc, ctx, name.replace(/s$/, ''), depth + 1);
      return Array.from({ length: Math.max(s.minItems ?? 0, name.endsWith('Sids') ? 1 : 0) }, () => item);
    }
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    default:
      return sampleString(s, name, ctx);
  }
}

/** Valid values (already encoded) for the operation's required query parameters. */
export function requiredQuery(
  ep: Endpoint,
  doc: OpenApiDoc,
  ctx: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of ep.op.parameters ?? []) {
    if (p.in !== 'query' || !p.required) continue;
    out[p.name] = encodeURIComponent(String(sample(p.schema ?? {}, doc, ctx, p.name)));
  }
  return out;
}

/** `?a=b&...` with valid values for the required query parameters, or ''. */
export function requiredQueryString(ep: Endpoint, doc: OpenApiDoc, ctx: Record<string, string>): string {
  const parts = Object.entries(requiredQuery(ep, doc, ctx)).map(([k, v]) => `${encodeURIComponent(k)}=${v}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

// ---- the hostile values ----------------------------------------------------------------------

export const SQL_FRAGMENTS = [
  "' OR '1'='1",
  "'; DROP TABLE buckets; --",
  '1 UNION SELECT token_hash FROM api_tokens --',
  '") OR 1=1 --',
  "x' AND sleep(3) --",
  '{q1:String}',
  '$1',
];

export const TRAVERSAL = ['../', '../../etc/passwd', '..\\..\\windows', '%2e%2e%2f', '..%2f..%2f', '....//'];

/** Raw (already encoded) path segments a client can put in the URL. */
const PATH_VALUES: Record<string, string> = {
  nul: '%00',
  'nul-inside': 'bkt_%00abc',
  traversal: '..%2F..%2Fetc%2Fpasswd',
  'dot-dot': '..',
  'encoded-traversal': '%2e%2e%2f%2e%2e%2f',
  'double-encoded': '%252e%252e%252f',
  'sql-quote': encodeURIComponent("' OR '1'='1"),
  'sql-drop': encodeURIComponent('x; DROP TABLE buckets; --'),
  'invalid-utf8': '%C3%28',
  'invalid-utf8-ff': '%FF%FE',
  'lone-surrogate': '%ED%A0%80',
  'long-300': 'a'.repeat(300),
  'long-5000': 'b'.repeat(5000),
  'malformed-sid': 'bkt_short',
  unicode: encodeURIComponent('ü√🙂'),
  space: '%20',
};

function queryValues(schema: JsonSchema): { label: string; value: string; expect: 'reject' | 'any' }[] {
  const t = types(schema);
  const numeric = t.includes('integer') || t.includes('number');
  const out: { label: string; value: string; expect: 'reject' | 'any' }[] = [
    { label: 'nul', value: '%00', expect: 'any' },
    { label: 'nul-inside', value: 'a%00b', expect: 'any' },
    { label: 'invalid-utf8', value: '%C3%28', expect: 'any' },
    { label: 'lone-surrogate', value: '%ED%A0%80', expect: 'any' },
    { label: 'long-10000', value: 'q'.repeat(10_000), expect: 'any' },
    { label: 'traversal', value: encodeURIComponent('../../etc/passwd'), expect: 'any' },
    { label: 'encoded-traversal', value: '%252e%252e%252f', expect: 'any' },
    { label: 'empty', value: '', expect: 'any' },
    { label: 'array', value: '1&__SELF__=2', expect: 'any' },
    ...SQL_FRAGMENTS.map((f, i) => ({
      label: `sql-${i}`,
      value: encodeURIComponent(f),
      expect: 'any' as const,
    })),
  ];
  if (numeric) {
    const lo = schema.minimum;
    const hi = schema.maximum;
    for (const [label, v] of [
      ['negative', '-1'],
      ['zero', '0'],
      ['huge', '99999999999999999999999'],
      ['2^53', '9007199254740993'],
      ['float', '1.5'],
      ['exp', '1e400'],
      ['nan', 'NaN'],
      ['infinity', 'Infinity'],
      ['word', 'abc'],
    ] as const) {
      const n = Number(v);
      const outOfRange =
        !/^-?\d+(\.\d+)?$/.test(v) ||
        (t.includes('integer') && !Number.isSafeInteger(n)) ||
        (lo !== undefined && n < lo) ||
        (hi !== undefined && n > hi);
      out.push({ label, value: v, expect: outOfRange ? 'reject' : 'any' });
    }
  }
  if (schema.enum) out.push({ label: 'not-in-enum', value: 'zz-not-allowed', expect: 'reject' });
  if (schema.format === 'date-time') {
    out.push(
      { label: 'bad-date', value: 'not-a-date', expect: 'reject' },
      { label: 'bad-date-fields', value: '2024-13-45T99:99:99Z', expect: 'reject' },
      { label: 'feb-30', value: '2024-02-30T00:00:00Z', expect: 'any' },
      { label: 'year-0', value: '0000-01-01T00:00:00Z', expect: 'any' },
      { label: 'year-9999', value: '9999-12-31T23:59:59.999Z', expect: 'any' },
      { label: 'offset', value: encodeURIComponent('2024-01-01T00:00:00+14:00'), expect: 'any' },
    );
  }
  if (schema.type === 'boolean') out.push({ label: 'not-bool', value: 'maybe', expect: 'reject' });
  return out;
}

/** A value of a JSON type the field's schema does not allow (bodies are validated without coercion). */
function wrongTypeValue(schema: JsonSchema): unknown {
  const t = types(schema);
  if (!t.length) return undefined;
  const allowed = (v: unknown) => {
    if (Array.isArray(v)) return t.includes('array');
    if (v === null) return t.includes('null') || schema.nullable === true;
    if (typeof v === 'object') return t.includes('object');
    if (typeof v === 'number') return t.includes('number') || (t.includes('integer') && Number.isInteger(v));
    return t.includes(typeof v);
  };
  return [{ nested: 'object' }, 'text', 12345, true, ['x']].find((v) => !allowed(v));
}

const DEEP = 10_000;
/** Nesting of a hostile field value: about 10 KB, deep enough to exhaust a recursive walk. */
const FIELD_DEEP = 5_000;
export const deepArrays = (n = DEEP) => '['.repeat(n) + ']'.repeat(n);
export const deepObjects = (n = DEEP) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

export interface CaseContext {
  /** path parameter values (accountSid, bucketSid, resource sids) */
  params: Record<string, string>;
  /** values for body fields by name (bucketSid, environmentSid, ...) */
  fields?: Record<string, string>;
  /** API body limit in bytes (413 above it) */
  bodyLimit: number;
}

/**
 * The hostile cases for one operation. DELETE operations only get hostile path parameters, so a
 * case can never delete a real resource.
 */
export function hostileCases(ep: Endpoint, doc: OpenApiDoc, ctx: CaseContext): HostileCase[] {
  const name = `${ep.method} ${ep.path}`;
  const cases: HostileCase[] = [];
  const json = { 'content-type': 'application/json' };
  const bodySchema = ep.op.requestBody?.content['application/json']?.schema;
  const resolved = bodySchema ? resolve(bodySchema, doc) : undefined;
  const base = resolved ? sample(resolved, doc, { ...ctx.params, ...ctx.fields }) : undefined;
  const baseText = base === undefined ? undefined : JSON.stringify(base);
  const add = (
    label: string,
    expect: 'reject' | 'any',
    url: string,
    body?: string | Buffer,
    headers: Record<string, string> = {},
  ) =>
    cases.push({
      endpoint: name,
      label,
      method: ep.method,
      url,
      headers: body !== undefined && !('content-type' in headers) ? { ...json, ...headers } : headers,
      body,
      expect,
    });
  const required = requiredQuery(ep, doc, { ...ctx.params, ...ctx.fields });
  const query = (extra: Record<string, string> = {}) => {
    const all = { ...required, ...extra };
    const parts = Object.entries(all).map(([k, v]) => `${encodeURIComponent(k)}=${v}`);
    return parts.length ? `?${parts.join('&')}` : '';
  };
  const goodPath = fillPath(ep.path, ctx.params) + query();

  // Path parameters: every hostile value names nothing, so each is a 4xx.
  for (const p of pathParams(ep.path)) {
    for (const [label, raw] of Object.entries(PATH_VALUES)) {
      add(`path ${p}=${label}`, 'reject', fillPath(ep.path, ctx.params, { [p]: raw }) + query(), baseText);
    }
  }
  if (ep.method === 'DELETE') return cases;

  // Query parameters, one at a time (the required others valid).
  const bare = fillPath(ep.path, ctx.params);
  for (const q of ep.op.parameters?.filter((x) => x.in === 'query') ?? []) {
    for (const v of queryValues(q.schema ?? {})) {
      const value = v.value.replace('__SELF__', encodeURIComponent(q.name));
      add(`query ${q.name}=${v.label}`, v.expect, bare + query({ [q.name]: value }), baseText);
    }
  }
  add(
    'query unknown parameter',
    'any',
    bare + query({ zzUnknown: encodeURIComponent("' OR 1=1 --") }),
    baseText,
  );

  if (!resolved || base === undefined) return cases;

  // Whole bodies.
  const malformed = [
    '{',
    '{"a":}',
    '[1,2',
    'nul',
    '{"a":1}}',
    "{'a':1}",
    '{"a":1,}',
    '\u0000',
    '{"a":"\u0000"}',
  ];
  malformed.forEach((text, i) => add(`body malformed-${i}`, 'reject', goodPath, text));
  add('body empty', 'reject', goodPath, '');
  for (const [label, text] of [
    ['null', 'null'],
    ['array', '[]'],
    ['string', '"text"'],
    ['number', '42'],
    ['boolean', 'true'],
  ] as const) {
    add(`body ${label}`, 'reject', goodPath, text);
  }
  if (resolved.required?.length) add('body {}', 'reject', goodPath, '{}');
  add('body text/plain', 'reject', goodPath, baseText, { 'content-type': 'text/plain' });
  add('body form', 'reject', goodPath, 'name=x', { 'content-type': 'application/x-www-form-urlencoded' });
  add('body deep arrays', 'reject', goodPath, deepArrays());
  add('body deep objects', 'reject', goodPath, deepObjects());
  add('body over the limit', 'reject', goodPath, JSON.stringify({ name: 'x'.repeat(ctx.bodyLimit + 1024) }));
  add(
    'body invalid utf-8',
    'any',
    goodPath,
    Buffer.concat([
      Buffer.from(baseText!.slice(0, -1) + (baseText!.length > 2 ? ',' : '') + '"zzBad":"'),
      Buffer.from([0xff, 0xfe, 0xc3, 0x28]),
      Buffer.from('"}'),
    ]),
  );
  if (resolved.additionalProperties === false) {
    add('body extra field', 'reject', goodPath, JSON.stringify({ ...(base as object), zzExtra: 1 }));
  }

  // Field by field.
  const obj = (base ?? {}) as Record<string, unknown>;
  for (const key of resolved.required ?? []) {
    const { [key]: _dropped, ...rest } = obj;
    void _dropped;
    add(`body missing ${key}`, 'reject', goodPath, JSON.stringify(rest));
  }
  for (const [key, raw] of Object.entries(resolved.properties ?? {})) {
    const field = resolve(raw, doc);
    const with_ = (v: unknown) => JSON.stringify({ ...obj, [key]: v });
    const wrong = wrongTypeValue(field);
    if (wrong !== undefined) add(`body ${key} wrong type`, 'reject', goodPath, with_(wrong));
    // Every body nests at most MAX_JSON_DEPTH (64) levels, free-form fields (event metadata,
    // webhook bodies, automation data, preview samples) included: 5,000 levels is refused.
    const deep = (text: string) => with_('__DEEP__').replace('"__DEEP__"', text);
    add(`body ${key} deep arrays`, 'reject', goodPath, deep(deepArrays(FIELD_DEEP)));
    add(`body ${key} deep objects`, 'reject', goodPath, deep(deepObjects(FIELD_DEEP)));
    const t = types(field);
    if (t.includes('string') || !t.length) {
      add(`body ${key} nul`, 'any', goodPath, with_('a\u0000b'));
      add(`body ${key} long`, 'any', goodPath, with_('L'.repeat(100_000)));
      add(`body ${key} lone surrogate`, 'any', goodPath, with_('\ud800x'));
      SQL_FRAGMENTS.slice(0, 3).forEach((f, i) => add(`body ${key} sql-${i}`, 'any', goodPath, with_(f)));
      add(`body ${key} traversal`, 'any', goodPath, with_(TRAVERSAL[1]));
    }
    if (t.includes('integer') || t.includes('number')) {
      for (const v of [-1, 0, 2 ** 63, -(2 ** 63), 1.5, 1e308])
        add(`body ${key}=${v}`, 'any', goodPath, with_(v));
    }
    if (t.includes('array')) {
      add(`body ${key} nul item`, 'any', goodPath, with_(['a\u0000b']));
      add(`body ${key} sql item`, 'any', goodPath, with_([SQL_FRAGMENTS[0]]));
      add(
        `body ${key} 10000 items`,
        'any',
        goodPath,
        with_(Array.from({ length: 10_000 }, (_, i) => `i${i}`)),
      );
    }
    if (t.includes('object')) {
      add(`body ${key} nul key`, 'any', goodPath, with_({ 'k\u0000': 'v\u0000' }));
      add(
        `body ${key} proto`,
        'any',
        goodPath,
        `{"${key}":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}`,
      );
    }
  }
  return cases;
}

/** One hostile request to the ingest listener (not in the OpenAPI document) and what it must get. */
export interface IngestDeepCase {
  label: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  /** 400 in the envelope, or 202 with exactly these indexes rejected (the others accepted) */
  expect: { status: 400 } | { status: 202; rejected: number[]; accepted: number };
}

/**
 * Deep nesting (FIELD_DEEP levels) in every JSON input of the ingest listener: each free-form
 * place of a batch record and of an SDK wire-format call, and an OTLP/JSON export. `good` is a
 * valid batch record, `call` a valid SDK call, `otlp` a valid OTLP/JSON export (as values); the
 * deep value is put in place of a marker in their JSON text, since JSON.stringify cannot write it.
 */
export function ingestDeepCases(
  bucketSid: string,
  good: Record<string, unknown>,
  call: Record<string, unknown>,
  otlp: Record<string, unknown>,
): IngestDeepCase[] {
  const MARK = '__deep__';
  const text = (v: unknown, deep: string) => JSON.stringify(v).replaceAll(`"${MARK}"`, deep);
  const json = { 'content-type': 'application/json' };
  const sdkHeaders = { ...json, 'api-traffic-bucket-sid': bucketSid };
  const at = (v: Record<string, unknown>, part: string, key: string) => ({
    ...v,
    [part]: { ...(v[part] as Record<string, unknown>), [key]: MARK },
  });
  const places: [string, Record<string, unknown>][] = [
    ['request.body', at(good, 'request', 'body')],
    ['response.body', at(good, 'response', 'body')],
    ['request.headers value', at(good, 'request', 'headers')],
    ['request.queryString', at(good, 'request', 'queryString')],
    ['tags', { ...good, tags: MARK }],
    ['unknown field', { ...good, zzDeep: MARK }],
    ['the record itself', MARK as unknown as Record<string, unknown>],
  ];
  const cases: IngestDeepCase[] = [];
  for (const [where, record] of places) {
    for (const [kind, deep] of [
      ['arrays', deepArrays(FIELD_DEEP)],
      ['objects', deepObjects(FIELD_DEEP)],
    ] as const) {
      cases.push({
        label: `batch: ${where}, deep ${kind}`,
        url: `/v1/buckets/${bucketSid}/ingest`,
        headers: json,
        body: text({ records: [good, record] }, deep),
        expect: { status: 202, rejected: [1], accepted: 1 },
      });
    }
  }
  const callPlaces: [string, Record<string, unknown>][] = [
    ['request.body', at(call, 'request', 'body')],
    ['response.body', at(call, 'response', 'body')],
    ['request.headers', at(call, 'request', 'headers')],
    ['tags', { ...call, tags: MARK }],
    ['traces', { ...call, traces: [MARK] }],
  ];
  for (const [where, deepCall] of callPlaces) {
    cases.push({
      label: `SDK call: ${where}`,
      url: '/',
      headers: sdkHeaders,
      body: text(deepCall, deepArrays(FIELD_DEEP)),
      expect: { status: 400 },
    });
    cases.push({
      label: `SDK call array: ${where}`,
      url: '/',
      headers: sdkHeaders,
      body: text([deepCall, call], deepArrays(FIELD_DEEP)),
      expect: { status: 202, rejected: [0], accepted: 1 },
    });
  }
  const otlpHeaders = { ...json, 'x-tapline-bucket': bucketSid };
  // An attribute value nesting arrayValue in arrayValue (three JSON levels per step).
  const anyValue =
    '{"arrayValue":{"values":['.repeat(FIELD_DEEP / 2) + '{"stringValue":"x"}' + ']}}'.repeat(FIELD_DEEP / 2);
  cases.push(
    {
      label: 'OTLP/JSON: unknown field',
      url: '/v1/traces',
      headers: otlpHeaders,
      body: text({ ...otlp, zzDeep: MARK }, deepArrays(FIELD_DEEP)),
      expect: { status: 400 },
    },
    {
      label: 'OTLP/JSON: attribute value',
      url: '/v1/traces',
      headers: otlpHeaders,
      body: JSON.stringify(otlp).replace(
        '"attributes":[',
        `"attributes":[{"key":"zz.deep","value":${anyValue}},`,
      ),
      expect: { status: 400 },
    },
  );
  return cases;
}
