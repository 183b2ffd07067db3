/**
 * Realistic captured traffic for the benchmark, deterministic from a seed.
 *
 * - 50 endpoint templates with ids in their paths (numeric ids, UUIDs, short codes), each with its
 *   own method, query strings and body shape;
 * - record sizes 0.5–8 KB (log-uniform target: many small, some large), JSON request/response bodies
 *   sent as strings like the SDKs do, a dozen request and response headers;
 * - status mix with ~4% errors (4xx + 5xx), durations log-normal (median ~45 ms, p99 ~0.5 s, a tail
 *   of multi-second calls);
 * - spread over the given buckets and environments.
 *
 * The same generator feeds the HTTP load generators, the raw Kafka limit and the raw ClickHouse limit,
 * so all three measure the same bytes.
 */

export interface Rng {
  (): number;
}

/** mulberry32: small, fast, good enough for load shapes. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** Standard normal (Box–Muller). */
function normal(r: Rng): number {
  const u = Math.max(r(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r());
}

type IdKind = 'num' | 'uuid' | 'code';
export interface Endpoint {
  method: string;
  /** template with `{num}`, `{uuid}`, `{code}` placeholders */
  template: string;
  /** the processor's endpoint template for the same path (ids replaced by `{id}`) */
  endpoint: string;
  hasBody: boolean;
  query: readonly string[];
}

const RAW_ENDPOINTS: [string, string, string[]][] = [
  ['GET', '/v1/users/{num}', []],
  ['PUT', '/v1/users/{num}', []],
  ['GET', '/v1/users/{num}/orders', ['page', 'limit', 'status']],
  ['GET', '/v1/users/{num}/orders/{num}', []],
  ['POST', '/v1/users/{num}/orders', []],
  ['GET', '/v1/users/{num}/addresses', []],
  ['DELETE', '/v1/users/{num}/addresses/{num}', []],
  ['GET', '/v1/orders/{uuid}', ['expand']],
  ['PATCH', '/v1/orders/{uuid}', []],
  ['POST', '/v1/orders/{uuid}/cancel', []],
  ['GET', '/v1/orders/{uuid}/items', ['page', 'limit']],
  ['POST', '/v1/orders/{uuid}/refunds', []],
  ['GET', '/v1/products', ['q', 'category', 'page', 'limit', 'sort']],
  ['GET', '/v1/products/{num}', ['currency']],
  ['GET', '/v1/products/{num}/reviews', ['page', 'limit']],
  ['POST', '/v1/products/{num}/reviews', []],
  ['GET', '/v1/products/{num}/inventory', ['warehouse']],
  ['GET', '/v1/carts/{uuid}', []],
  ['POST', '/v1/carts/{uuid}/items', []],
  ['DELETE', '/v1/carts/{uuid}/items/{num}', []],
  ['POST', '/v1/carts/{uuid}/checkout', []],
  ['POST', '/v1/payments', []],
  ['GET', '/v1/payments/{uuid}', []],
  ['POST', '/v1/payments/{uuid}/capture', []],
  ['GET', '/v1/invoices/{code}', ['format']],
  ['GET', '/v1/invoices/{code}/pdf', []],
  ['GET', '/v1/accounts/{num}/invoices', ['from', 'to', 'page']],
  ['POST', '/v1/auth/token', []],
  ['POST', '/v1/auth/refresh', []],
  ['GET', '/v1/search', ['q', 'page', 'limit', 'lang']],
  ['GET', '/v1/categories/{num}/products', ['page', 'sort']],
  ['GET', '/v1/shipments/{uuid}', []],
  ['POST', '/v1/shipments/{uuid}/track', []],
  ['GET', '/v1/warehouses/{code}/stock', ['sku']],
  ['PUT', '/v1/warehouses/{code}/stock/{num}', []],
  ['GET', '/v1/coupons/{code}', []],
  ['POST', '/v1/coupons/{code}/redeem', []],
  ['GET', '/v2/catalog/{num}/variants', ['size', 'colour']],
  ['GET', '/v2/catalog/{num}/variants/{num}', []],
  ['POST', '/v2/events', []],
  ['POST', '/v2/events/batch', []],
  ['GET', '/v2/recommendations/{num}', ['limit']],
  ['GET', '/v2/sessions/{uuid}', []],
  ['DELETE', '/v2/sessions/{uuid}', []],
  ['POST', '/v2/webhooks/{code}/deliveries', []],
  ['GET', '/v2/webhooks/{code}/deliveries/{uuid}', []],
  ['GET', '/v2/reports/{code}', ['from', 'to', 'granularity']],
  ['POST', '/v2/uploads', []],
  ['GET', '/v2/uploads/{uuid}/status', []],
  ['GET', '/health', []],
];

export const ENDPOINTS: readonly Endpoint[] = RAW_ENDPOINTS.map(([method, template, query]) => ({
  method,
  template,
  endpoint: template.replace(/\{(num|uuid|code)\}/g, '{id}'),
  hasBody: method === 'POST' || method === 'PUT' || method === 'PATCH',
  query,
}));

/** Status mix: ~4% errors (≥ 400). */
const STATUS: [number, number][] = [
  [200, 0.7],
  [201, 0.12],
  [204, 0.05],
  [304, 0.09],
  [400, 0.012],
  [401, 0.005],
  [404, 0.013],
  [409, 0.002],
  [429, 0.003],
  [500, 0.004],
  [502, 0.001],
  [503, 0.002],
];
const STATUS_CDF = (() => {
  const total = STATUS.reduce((s, [, p]) => s + p, 0);
  let acc = 0;
  return STATUS.map(([code, p]) => [code, (acc += p / total)] as const);
})();
export const ERROR_SHARE = STATUS.filter(([c]) => c >= 400).reduce((s, [, p]) => s + p, 0);

function status(r: Rng): number {
  const u = r();
  for (const [code, c] of STATUS_CDF) if (u <= c) return code;
  return 200;
}

/** Log-normal duration in ms: median ~45 ms, sigma 1.0 (p99 ~ 0.46 s), rounded to 0.1 ms. */
function duration(r: Rng): number {
  return Math.round(Math.exp(Math.log(45) + normal(r)) * 10) / 10;
}

const HEX = '0123456789abcdef';
function uuid(r: Rng): string {
  let s = '';
  for (let i = 0; i < 32; i++) {
    s += HEX[Math.floor(r() * 16)];
    if (i === 7 || i === 11 || i === 15 || i === 19) s += '-';
  }
  return s;
}
const ALNUM = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
function code(r: Rng, n = 8): string {
  let s = '';
  for (let i = 0; i < n; i++) s += ALNUM[Math.floor(r() * ALNUM.length)];
  return s;
}

function fillPath(r: Rng, template: string): string {
  return template.replace(/\{(num|uuid|code)\}/g, (_, kind: IdKind) =>
    kind === 'num'
      ? String(1 + Math.floor(r() * 5_000_000))
      : kind === 'uuid'
        ? uuid(r)
        : `inv_${code(r, 9)}${Math.floor(r() * 10)}`,
  );
}

const WORDS =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu'.split(
    ' ',
  );
const AGENTS = [
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
  'okhttp/4.12.0',
  'python-requests/2.32.3',
  'axios/1.7.2',
  'Go-http-client/2.0',
];

/** A JSON document of at most `bytes` characters (at least `{}`): nested items, like API payloads. */
function jsonBody(r: Rng, bytes: number): string {
  const head = `{"id":${Math.floor(r() * 1e9)},"type":"${pick(r, WORDS)}","items":[`;
  let out = head;
  let n = 0;
  for (;;) {
    const item = JSON.stringify({
      sku: code(r, 10),
      name: `${pick(r, WORDS)} ${pick(r, WORDS)} ${pick(r, WORDS)}`,
      qty: 1 + Math.floor(r() * 5),
      price: Math.round(r() * 100000) / 100,
      tags: [pick(r, WORDS), pick(r, WORDS)],
      meta: { warehouse: code(r, 4), fragile: r() < 0.1 },
    });
    const tail = `],"total":${n + 1}}`;
    if (out.length + item.length + 1 + tail.length > bytes) break;
    out += (n ? ',' : '') + item;
    n++;
  }
  return n === 0
    ? bytes >= 40
      ? `{"id":${Math.floor(r() * 1e9)},"ok":true}`
      : '{}'
    : `${out}],"total":${n}}`;
}

export interface GenOptions {
  environments: readonly string[];
  /** createdAt of generated records (ms); default now */
  now?: number;
}

/** Log-uniform record size target between 0.5 and 8 KB. */
function targetSize(r: Rng): number {
  return Math.round(500 * Math.pow(16, r()));
}

interface Call {
  ep: Endpoint;
  method: string;
  host: string;
  path: string;
  queryString: Record<string, string>;
  url: string;
  reqHeaders: Record<string, string>;
  reqBody: string | null;
  status: number;
  resHeaders: Record<string, string>;
  resBody: string | null;
  duration: number;
  createdAt: number;
  environmentSid: string;
}

function call(r: Rng, opts: GenOptions): Call {
  const ep = pick(r, ENDPOINTS);
  const host = pick(r, ['api.shop.example.com', 'api.eu.shop.example.com', 'partners.example.com']);
  const path = fillPath(r, ep.template);
  const queryString: Record<string, string> = {};
  for (const q of ep.query)
    if (r() < 0.6) queryString[q] = q === 'q' ? pick(r, WORDS) : String(1 + Math.floor(r() * 50));
  const qs = new URLSearchParams(queryString).toString();
  const url = `https://${host}${path}${qs ? `?${qs}` : ''}`;
  const st = status(r);
  const target = targetSize(r);
  // Small records are the terse ones (few headers); bodies fill the rest of the size target.
  // Fixed fields and headers take ~450 B (terse) or ~850 B; a body string grows ~15% when escaped.
  const terse = target < 1500;
  const reqHeaders: Record<string, string> = terse
    ? { accept: 'application/json', 'user-agent': 'okhttp/4.12.0', 'x-request-id': code(r, 12) }
    : {
        accept: 'application/json',
        'accept-encoding': 'gzip, br',
        'user-agent': pick(r, AGENTS),
        'x-request-id': uuid(r),
        'x-forwarded-for': `10.${Math.floor(r() * 255)}.${Math.floor(r() * 255)}.${Math.floor(r() * 255)}`,
        authorization: 'Bearer [redacted by sdk]',
        host,
      };
  const resHeaders: Record<string, string> = terse
    ? { 'content-type': 'application/json' }
    : {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        'x-ratelimit-remaining': String(Math.floor(r() * 1000)),
        server: 'nginx',
        date: new Date(opts.now ?? Date.now()).toUTCString(),
      };
  const bodyBytes = Math.max(0, (target - (terse ? 450 : 950)) / 1.15);
  const reqBody = ep.hasBody ? jsonBody(r, bodyBytes * 0.4) : null;
  if (reqBody !== null) reqHeaders['content-type'] = 'application/json';
  const resBody =
    st === 204 || st === 304
      ? null
      : st >= 400
        ? JSON.stringify({ error: { code: `E${st}`, message: `${pick(r, WORDS)} failed`, traceId: uuid(r) } })
        : jsonBody(r, ep.hasBody ? bodyBytes * 0.6 : bodyBytes);
  const dur = duration(r);
  return {
    ep,
    method: ep.method,
    host,
    path,
    queryString,
    url,
    reqHeaders,
    reqBody,
    status: st,
    resHeaders,
    resBody,
    duration: dur,
    createdAt: (opts.now ?? Date.now()) - Math.ceil(dur),
    environmentSid: pick(r, opts.environments),
  };
}

/** One record in the ingest API's shape (POST /v1/buckets/{b}/ingest). */
export function ingestRecord(r: Rng, opts: GenOptions): Record<string, unknown> {
  const c = call(r, opts);
  return {
    environmentSid: c.environmentSid,
    direction: 'in',
    createdAt: new Date(c.createdAt).toISOString(),
    request: {
      host: c.host,
      method: c.method,
      path: c.path,
      port: 443,
      url: c.url,
      queryString: c.queryString,
      headers: c.reqHeaders,
      body: c.reqBody,
      contentType: c.reqBody === null ? null : 'application/json',
      size: c.reqBody === null ? 0 : Buffer.byteLength(c.reqBody),
    },
    response: {
      statusCode: c.status,
      headers: c.resHeaders,
      size: c.resBody === null ? 0 : Buffer.byteLength(c.resBody),
      body: c.resBody,
      contentType: c.resBody === null ? null : 'application/json',
    },
    timings: { duration: c.duration, start: c.createdAt, end: c.createdAt + c.duration },
    tags: [{ key: 'release', value: `2026.11.${1 + Math.floor(r() * 9)}` }],
  };
}

/** One call in the existing SDKs' wire format (POST / of the ingest listener). */
export function sdkCall(r: Rng, opts: GenOptions): Record<string, unknown> {
  const c = call(r, opts);
  return {
    request: {
      received: new Date(c.createdAt).toISOString(),
      url: c.url,
      method: c.method,
      headers: c.reqHeaders,
      body: c.reqBody,
    },
    response: {
      headers: c.resHeaders,
      status: c.status,
      responseTime: c.duration,
      size: c.resBody === null ? 0 : Buffer.byteLength(c.resBody),
      body: c.resBody,
    },
  };
}
