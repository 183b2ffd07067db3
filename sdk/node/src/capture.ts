import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { HeaderValue } from './types.js';

/** A string with a surrogate can be ill-formed UTF-16; such a chunk takes the byte path. */
const SURROGATE = /[\ud800-\udfff]/;

/**
 * Body bytes kept up to a limit; the total is counted beyond it. A body written as one
 * string without surrogates within the limit (the common `res.end(text)`) is kept as that string:
 * its text is the same as its bytes decoded, without making or copying any bytes.
 */
export class BodySink {
  chunks: Buffer[] = [];
  kept = 0;
  total = 0;
  truncated = false;
  /** the body while it is a single whole string chunk */
  private str: string | undefined = undefined;

  constructor(private readonly limit: number) {}

  /** Whether the sink keeps bytes; a sink with limit 0 only counts them (`total`). */
  get captures(): boolean {
    return this.limit > 0;
  }

  add(chunk: unknown, encoding?: unknown): void {
    let buf: Buffer;
    // A string chunk becomes a fresh buffer of its own (kept as is); a host's buffer is copied
    // below, since the host may reuse it after write() returns.
    let own = false;
    if (typeof chunk === 'string') {
      const enc = typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8';
      if (
        this.kept === 0 &&
        this.limit > 0 &&
        (enc === 'utf8' || enc === 'utf-8') &&
        !SURROGATE.test(chunk)
      ) {
        const n = Buffer.byteLength(chunk, 'utf8');
        if (n <= this.limit) {
          this.total += n;
          this.kept = n;
          if (n > 0) this.str = chunk;
          return;
        }
      }
      if (this.kept >= this.limit) {
        this.total += Buffer.byteLength(chunk, enc);
        this.truncated = true;
        return;
      }
      buf = Buffer.from(chunk, enc);
      own = true;
    } else if (chunk instanceof Uint8Array)
      buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    else return;
    this.total += buf.length;
    if (this.kept >= this.limit) {
      this.truncated = true;
      return;
    }
    if (this.str !== undefined) {
      this.chunks.push(Buffer.from(this.str, 'utf8'));
      this.str = undefined;
    }
    const room = this.limit - this.kept;
    if (buf.length > room) {
      this.truncated = true;
      buf = buf.subarray(0, room);
    }
    this.chunks.push(own ? buf : Buffer.from(buf));
    this.kept += buf.length;
  }

  text(): string | undefined {
    if (this.kept === 0) return undefined;
    if (this.str !== undefined) return this.str;
    if (this.chunks.length === 1) return this.chunks[0]!.toString('utf8');
    return Buffer.concat(this.chunks, this.kept).toString('utf8');
  }
}

let isoSecond = NaN;
let isoPrefix = '';

/**
 * `new Date(ms).toISOString()`, with the part up to the second made once per second (records of
 * the same second share it): a tenth of the cost per record.
 */
export function isoTime(ms: number): string {
  const sec = Math.floor(ms / 1000);
  if (sec !== isoSecond || !Number.isFinite(sec)) {
    const d = new Date(sec * 1000);
    // Outside the four-digit years toISOString's shape differs: no prefix reuse there.
    if (!(d.getUTCFullYear() >= 0 && d.getUTCFullYear() <= 9999)) return new Date(ms).toISOString();
    isoSecond = sec;
    isoPrefix = d.toISOString().slice(0, 20);
  }
  const r = ms - sec * 1000;
  if (!Number.isInteger(r)) return new Date(ms).toISOString();
  return isoPrefix + (r < 10 ? '00' : r < 100 ? '0' : '') + r + 'Z';
}

/** Whether a content type's body is captured (prefix match on the media type). */
export function bodyAllowed(contentType: string | null | undefined, allowed: string[]): boolean {
  if (!contentType) return false;
  const ct = contentType.toLowerCase();
  for (const a of allowed) if (ct.startsWith(a) || ct.includes(a)) return true;
  return false;
}

export const DEFAULT_BODY_TYPES = [
  'application/json',
  '+json',
  'text/',
  'application/xml',
  '+xml',
  'application/x-www-form-urlencoded',
  'application/graphql',
];

export const MAX_HEADERS = 500;
const MAX_HEADER_VALUE = 65536;

/** Headers as the ingest schema takes them: lower-case names, ≤ 500, values ≤ 64 KiB. */
export function copyHeaders(
  headers: IncomingHttpHeaders | OutgoingHttpHeaders | undefined,
  drop: Set<string> | null,
): Record<string, HeaderValue> {
  const out: Record<string, HeaderValue> = {};
  if (!headers) return out;
  let n = 0;
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined) continue;
    const key = name.toLowerCase();
    if (drop?.has(key)) continue;
    if (++n > MAX_HEADERS) break;
    out[key] = headerValue(v);
  }
  return out;
}

/** A header value as the ingest schema takes it (strings cut at 64 KiB). */
export function headerValue(v: string | number | string[] | boolean): HeaderValue {
  if (typeof v === 'string') return v.length > MAX_HEADER_VALUE ? v.slice(0, MAX_HEADER_VALUE) : v;
  if (Array.isArray(v)) return v.map((x) => String(x).slice(0, MAX_HEADER_VALUE));
  return v;
}

/** Headers from undici's flat `[name, value, name, value…]` arrays (strings or Buffers). */
export function headersFromPairs(pairs: unknown, drop: Set<string> | null): Record<string, HeaderValue> {
  const out: Record<string, HeaderValue> = {};
  if (typeof pairs === 'string') {
    // older undici: "name: value\r\n…"
    for (const line of pairs.split('\r\n')) {
      const i = line.indexOf(':');
      if (i > 0) add(out, line.slice(0, i), line.slice(i + 1).trim(), drop);
    }
    return out;
  }
  if (!Array.isArray(pairs)) return out;
  for (let i = 0; i + 1 < pairs.length; i += 2) add(out, String(pairs[i]), String(pairs[i + 1]), drop);
  return out;
}

function add(out: Record<string, HeaderValue>, name: string, value: string, drop: Set<string> | null): void {
  const key = name.toLowerCase();
  if (drop?.has(key)) return;
  const prev = out[key];
  const v = value.length > MAX_HEADER_VALUE ? value.slice(0, MAX_HEADER_VALUE) : value;
  if (prev === undefined) {
    if (Object.keys(out).length >= MAX_HEADERS) return;
    out[key] = v;
  } else out[key] = Array.isArray(prev) ? [...prev, v] : [String(prev), v];
}

/** Characters that need URLSearchParams' decoding (`%xx`, `+`) or its leading-`?` rule. */
const QUERY_DECODE = /[%+]|^\?/;

/**
 * A query string as URLSearchParams reads it (repeated keys become arrays, at most 500 keys).
 * Plain queries (no `%`, no `+`) are split directly, which is several times cheaper than
 * URLSearchParams and yields the same pairs; the rest go through URLSearchParams.
 */
export function parseQuery(search: string): Record<string, string | string[]> {
  const qs: Record<string, string | string[]> = {};
  if (!search) return qs;
  let n = 0;
  if (QUERY_DECODE.test(search)) {
    for (const [k, v] of new URLSearchParams(search)) {
      const prev = qs[k];
      if (prev === undefined) {
        if (++n > 500) break;
        qs[k] = v;
      } else qs[k] = Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    return qs;
  }
  let start = 0;
  const len = search.length;
  while (start <= len) {
    let end = search.indexOf('&', start);
    if (end < 0) end = len;
    if (end > start) {
      const eq = search.indexOf('=', start);
      const hasEq = eq >= 0 && eq < end;
      const k = search.slice(start, hasEq ? eq : end);
      const v = hasEq ? search.slice(eq + 1, end) : '';
      const prev = qs[k];
      if (prev === undefined) {
        if (++n > 500) break;
        qs[k] = v;
      } else if (Array.isArray(prev)) prev.push(v);
      else qs[k] = [prev, v];
    }
    start = end + 1;
  }
  return qs;
}

export function splitUrl(raw: string): { path: string; search: string } {
  const q = raw.indexOf('?');
  const h = raw.indexOf('#');
  const end = h < 0 ? raw.length : h;
  if (q < 0 || q > end) return { path: raw.slice(0, end), search: '' };
  return { path: raw.slice(0, q), search: raw.slice(q + 1, end) };
}

export function firstString(v: HeaderValue | string | string[] | number | undefined): string | null {
  if (v === undefined || v === null) return null;
  if (Array.isArray(v)) return v[0] !== undefined ? String(v[0]) : null;
  return String(v);
}

/** `host[:port]` → [hostname, port]. IPv6 literals in brackets are kept whole; no regex for plain hosts. */
export function splitHost(host: string | null | undefined): [string | null, number | null] {
  if (!host) return [null, null];
  if (host.charCodeAt(0) === 91 /* [ */) {
    const m = /^(\[[^\]]+\])(?::(\d+))?$/.exec(host);
    if (m) return [m[1]!, m[2] ? Number(m[2]) : null];
  }
  const c = host.indexOf(':');
  if (c < 0) return [host, null];
  // `name:digits` only; anything else (`a:b:c`, `name:`, `:80`) is kept whole.
  if (c === 0 || c === host.length - 1) return [host, null];
  for (let i = c + 1; i < host.length; i++) {
    const d = host.charCodeAt(i);
    if (d < 48 || d > 57) return [host, null];
  }
  return [host.slice(0, c), Number(host.slice(c + 1))];
}

/** The body as a record holds it: text (JSON stays text; the server parses it for redaction). */
export function bodyText(sink: BodySink | undefined): string | undefined {
  return sink?.text();
}

export function isEncoded(res: ServerResponse | IncomingMessage): boolean {
  const enc =
    'getHeader' in res
      ? (res as ServerResponse).getHeader('content-encoding')
      : (res as IncomingMessage).headers['content-encoding'];
  return typeof enc === 'string' && enc !== '' && enc.toLowerCase() !== 'identity';
}

/**
 * Sees a readable's data without changing how it flows: the `data` listener is added only once
 * the host starts reading (its own `data`/`readable` listener, or `resume()`/`pipe()`), so a
 * stream nobody reads stays paused and no chunk is consumed on the host's behalf.
 */
export function tapReadable(
  stream: NodeJS.ReadableStream & { readableFlowing?: boolean | null },
  onData: (c: unknown) => void,
): void {
  if (stream.readableFlowing !== null && stream.readableFlowing !== undefined) {
    stream.on('data', onData);
    return;
  }
  let attached = false;
  const attach = () => {
    if (attached) return;
    attached = true;
    stream.removeListener('newListener', onNew);
    stream.removeListener('resume', attach);
    stream.on('data', onData);
  };
  const onNew = (ev: string | symbol) => {
    if (ev === 'data' || ev === 'readable') attach();
  };
  stream.on('newListener', onNew);
  stream.once('resume', attach);
}
