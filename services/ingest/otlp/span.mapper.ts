import { fillFromUrl } from '../record.normalizer.js';
import type { AnyValue, ExportTraceServiceRequest, Int64, KeyValue, Span } from './otlp.codec.js';

/** The resource attribute that names the bucket of a resource's spans (docs/opentelemetry.md). */
export const BUCKET_ATTRIBUTE = 'tapline.bucket';

/** SpanKind values (opentelemetry/proto/trace/v1/trace.proto). */
const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;

type Attr = string | number | boolean | null | Attr[];

/** The JS value of an AnyValue: int64 as a number, a list as an array, bytes and kvlists as null. */
function valueOf(v: AnyValue | null | undefined): Attr {
  if (!v) return null;
  switch (v.value) {
    case 'stringValue':
      return v.stringValue ?? '';
    case 'boolValue':
      return Boolean(v.boolValue);
    case 'intValue':
      return v.intValue == null ? 0 : int64(v.intValue);
    case 'doubleValue':
      return v.doubleValue ?? 0;
    case 'arrayValue':
      // One level: the semantic conventions' arrays hold plain values (header values, say).
      return (v.arrayValue?.values ?? []).map((x) => (x?.value === 'arrayValue' ? null : valueOf(x)));
    default:
      return null;
  }
}

function attributes(kvs: KeyValue[] | null | undefined): Map<string, Attr> {
  const out = new Map<string, Attr>();
  for (const kv of kvs ?? []) if (kv.key) out.set(kv.key, valueOf(kv.value));
  return out;
}

function str(a: Map<string, Attr>, ...names: string[]): string | null {
  for (const n of names) {
    const v = a.get(n);
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number') return String(v);
  }
  return null;
}

function int(a: Map<string, Attr>, ...names: string[]): number | null {
  for (const n of names) {
    const v = a.get(n);
    const x = typeof v === 'string' ? Number(v) : v;
    if (typeof x === 'number' && Number.isSafeInteger(x)) return x;
  }
  return null;
}

/** A 64-bit integer (below 2^63) as a double: exact up to 2^53, within 256 ns for today's nanoseconds. */
function int64(v: Int64): number {
  return typeof v === 'number' ? v : v.high * 4294967296 + (v.low >>> 0);
}

/** Nanoseconds since the epoch as milliseconds, to the microsecond. */
function ms(ns: Int64 | null | undefined): number | null {
  if (ns == null) return null;
  const n = int64(ns);
  // Rounded to the microsecond: a plain division leaves binary noise (…358.0002) in the last digits.
  return n > 0 ? Math.round(n / 1e3) / 1e3 : null;
}

/** end - start in milliseconds, exact for any span shorter than 2^53 ns. */
function durationMs(start: Int64 | null | undefined, end: Int64 | null | undefined): number | null {
  if (start == null || end == null) return null;
  if (typeof start === 'number' || typeof end === 'number') {
    const s = ms(start);
    const e = ms(end);
    return s !== null && e !== null && e >= s ? e - s : null;
  }
  const diff = (end.high - start.high) * 4294967296 + ((end.low >>> 0) - (start.low >>> 0));
  return diff >= 0 ? diff / 1e6 : null;
}

const hex = (b: Uint8Array | null | undefined): string | null =>
  b instanceof Uint8Array && b.length
    ? Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')
    : null;

const METHOD = /^[A-Za-z-]{1,32}$/;

/** The request method: `_OTHER` (semantic conventions: a method the instrumentation does not know) reads the original. */
function methodOf(a: Map<string, Attr>): string | null {
  const m = str(a, 'http.request.method', 'http.method');
  if (m === null) return null;
  if (METHOD.test(m)) return m.toUpperCase();
  const original = str(a, 'http.request.method_original');
  return original && METHOD.test(original) ? original.toUpperCase() : 'OTHER';
}

/** `http.request.header.<name>` / `http.response.header.<name>` attributes as a header object. */
function headersOf(a: Map<string, Attr>, prefix: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of a) {
    if (!k.startsWith(prefix) || k.length === prefix.length) continue;
    const name = k.slice(prefix.length);
    if (typeof v === 'string') out[name] = v;
    else if (Array.isArray(v)) out[name] = v.map((x) => String(x));
  }
  return out;
}

function queryOf(query: string): Record<string, string | string[]> {
  const qs: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(query)) {
    const prev = qs[k];
    qs[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return qs;
}

/** A Host header value as its name (IPv6 without brackets) and port, if it names one. */
function splitHostHeader(value: string | null): { name: string; port: number | null } | null {
  if (value === null) return null;
  const m = /^\[([^\]]*)\](?::(\d{1,5}))?$/.exec(value) ?? /^([^:]*)(?::(\d{1,5}))?$/.exec(value);
  // Anything else (a bare IPv6 address, say) is kept whole.
  if (!m || m[1] === '') return { name: value, port: null };
  return { name: m[1]!, port: m[2] !== undefined ? Number(m[2]) : null };
}

const tag = (key: string, value: string) => ({ key, value: value.slice(0, 4096) });

const ENVIRONMENT_SID = /^[a-z0-9]{6}$/;

/** Tags and environment every record of a resource carries. */
export interface ResourceContext {
  tags: { key: string; value: string }[];
  environmentSid: string | null;
}

export function resourceContext(resource: Map<string, Attr>): ResourceContext {
  const tags: { key: string; value: string }[] = [];
  const service = str(resource, 'service.name');
  if (service) tags.push(tag('service.name', service));
  const env = str(resource, 'deployment.environment.name', 'deployment.environment');
  if (env) tags.push(tag('deployment.environment', env));
  // An environment value that is an environment sid of Tapline's form is the record's environment.
  return { tags, environmentSid: env && ENVIRONMENT_SID.test(env) ? env : null };
}

/**
 * One HTTP span as a request record (docs/opentelemetry.md has the mapping table), or null when
 * the span is not an HTTP server or client span (no request method, or another kind). Both the
 * current semantic conventions and the older `http.*` / `net.*` names are read; the current
 * name wins when a span carries both.
 */
export function spanToRecord(span: Span, ctx: ResourceContext): Record<string, unknown> | null {
  const kind = span.kind ?? 0;
  if (kind !== SPAN_KIND_SERVER && kind !== SPAN_KIND_CLIENT) return null;
  const a = attributes(span.attributes);
  const method = methodOf(a);
  if (method === null) return null;
  const server = kind === SPAN_KIND_SERVER;

  const named = server ? str(a, 'server.address') : str(a, 'server.address', 'net.peer.name');
  // The older `http.host` is the Host header: `name[:port]`, an IPv6 name in brackets.
  const hostHeader = named === null ? splitHostHeader(str(a, 'http.host')) : null;
  const host = named ?? hostHeader?.name ?? (server ? str(a, 'net.host.name') : null);
  const port =
    (server ? int(a, 'server.port', 'net.host.port') : int(a, 'server.port', 'net.peer.port')) ??
    hostHeader?.port ??
    null;
  const scheme = str(a, 'url.scheme', 'http.scheme');
  let url = str(a, 'url.full', 'http.url');
  let path = str(a, 'url.path');
  let query = str(a, 'url.query');
  const target = str(a, 'http.target');
  if (path === null && target !== null) {
    const q = target.indexOf('?');
    path = q < 0 ? target : target.slice(0, q);
    query ??= q < 0 ? null : target.slice(q + 1);
  }
  // A server span names its parts, not the URL: rebuild it when the host is known.
  if (url === null && host !== null && path !== null) {
    const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
    url = `${scheme ?? 'http'}://${hostPart}${port !== null ? `:${port}` : ''}${path}${query ? `?${query}` : ''}`;
  }

  const requestHeaders = headersOf(a, 'http.request.header.');
  const userAgent = str(a, 'user_agent.original', 'http.user_agent');
  if (userAgent !== null && requestHeaders['user-agent'] === undefined)
    requestHeaders['user-agent'] = userAgent;
  const request: Record<string, unknown> = {
    method,
    url: url?.slice(0, 16384) ?? null,
    host: host?.slice(0, 1024) ?? null,
    port: port !== null && port >= 0 && port <= 65535 ? port : null,
    ip: server
      ? (str(a, 'client.address', 'http.client_ip', 'net.peer.ip', 'net.sock.peer.addr')?.slice(0, 64) ??
        null)
      : null,
    headers: requestHeaders,
    size: int(a, 'http.request.body.size', 'http.request_content_length'),
  };
  if (url === null || !fillFromUrl(request, url)) {
    request.path = path?.slice(0, 8192) ?? null;
    request.queryString = query ? queryOf(query) : null;
  }
  if (typeof request.path === 'string') request.path = request.path.slice(0, 8192);

  const status = int(a, 'http.response.status_code', 'http.status_code');
  const responseSize = int(a, 'http.response.body.size', 'http.response_content_length');
  const responseHeaders = headersOf(a, 'http.response.header.');
  const response =
    status !== null || responseSize !== null || Object.keys(responseHeaders).length
      ? {
          statusCode: status !== null && status >= 100 && status <= 599 ? status : null,
          headers: responseHeaders,
          size: responseSize,
        }
      : null;

  const start = ms(span.startTimeUnixNano);
  const end = ms(span.endTimeUnixNano);
  const tags = [...ctx.tags];
  const traceId = hex(span.traceId);
  const spanId = hex(span.spanId);
  const parentSpanId = hex(span.parentSpanId);
  if (traceId) tags.push(tag('otel.trace_id', traceId));
  if (spanId) tags.push(tag('otel.span_id', spanId));
  if (parentSpanId) tags.push(tag('otel.parent_span_id', parentSpanId));

  const record: Record<string, unknown> = {
    direction: server ? 'in' : 'out',
    environmentSid: ctx.environmentSid,
    request,
    response,
    timings: { duration: durationMs(span.startTimeUnixNano, span.endTimeUnixNano), start, end },
    tags,
  };
  // The caller, when the app recorded it (docs/consumers.md): `enduser.id`, with `enduser.name`
  // and `enduser.group` as its label; cut to the record schema's bounds.
  const consumerId = str(a, 'enduser.id');
  if (consumerId !== null && consumerId !== '') {
    const consumer: Record<string, string> = { id: consumerId.slice(0, 256) };
    const name = str(a, 'enduser.name');
    const group = str(a, 'enduser.group');
    if (name !== null) consumer.name = name.slice(0, 256);
    if (group !== null) consumer.group = group.slice(0, 256);
    record.consumer = consumer;
  }
  const route = str(a, 'http.route', 'url.template');
  if (route !== null) record.endpoint = route.slice(0, 2048);
  if (start !== null) record.createdAt = new Date(Math.floor(start)).toISOString();
  return record;
}

/** The records of an export, grouped by bucket, and what was left out. */
export interface MappedExport {
  /** bucket sid -> records */
  byBucket: Map<string, Record<string, unknown>[]>;
  spans: number;
  /** spans that are not HTTP server/client spans */
  notHttp: number;
  /** HTTP spans of resources that name no bucket (no header and no `tapline.bucket`) */
  noBucket: number;
}

/**
 * Maps every span of an export. A resource's `tapline.bucket` attribute names the bucket of its
 * spans; `headerBucket` (the `X-Tapline-Bucket` header) is the bucket of resources without one.
 */
export function mapExport(req: ExportTraceServiceRequest, headerBucket: string | null): MappedExport {
  const out: MappedExport = { byBucket: new Map(), spans: 0, notHttp: 0, noBucket: 0 };
  for (const rs of req.resourceSpans ?? []) {
    const resource = attributes(rs.resource?.attributes);
    const bucket = str(resource, BUCKET_ATTRIBUTE) ?? headerBucket;
    const ctx = resourceContext(resource);
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        out.spans++;
        const record = spanToRecord(span, ctx);
        if (record === null) out.notHttp++;
        else if (bucket === null) out.noBucket++;
        else {
          let records = out.byBucket.get(bucket);
          if (!records) out.byBucket.set(bucket, (records = []));
          records.push(record);
        }
      }
    }
  }
  return out;
}

/** Spans in an export, counted before mapping (the per-request limit). */
export function countSpans(req: ExportTraceServiceRequest): number {
  let n = 0;
  for (const rs of req.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) n += ss.spans?.length ?? 0;
  return n;
}
