import { ServerResponse, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import {
  BodySink,
  bodyAllowed,
  copyHeaders,
  headerValue,
  isoTime,
  MAX_HEADERS,
  firstString,
  headersFromPairs,
  parseQuery,
  splitHost,
  splitUrl,
  tapReadable,
} from './capture.js';
import type { TaplineCore } from './client.js';
import { newRecordSid } from './sid.js';
import type { CapturedRecord, ConsumerInfo, HeaderValue } from './types.js';

/** Marks a request already captured, so a framework adapter and a server hook never both record it. */
const CAPTURED = Symbol.for('tapline.captured');

/** The consumer `identify` set on a request. */
const CONSUMER = Symbol.for('tapline.consumer');

type Identified = IncomingMessage & { [CONSUMER]?: ConsumerInfo };

/** Marks `req` as made by `consumer` (Tapline.identify); a value the schema would refuse is ignored. */
export function identifyRequest(req: IncomingMessage, consumer: unknown): void {
  const c = cleanConsumer(consumer);
  if (c) (req as Identified)[CONSUMER] = c;
}

/** The consumer in the record schema's bounds (id 1-256 characters), or undefined. */
function cleanConsumer(v: unknown): ConsumerInfo | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { id, name, group } = v as Record<string, unknown>;
  const sid = typeof id === 'number' ? String(id) : id;
  if (typeof sid !== 'string' || sid === '') return undefined;
  const out: ConsumerInfo = { id: sid.slice(0, 256) };
  if (typeof name === 'string') out.name = name.slice(0, 256);
  if (typeof group === 'string') out.group = group.slice(0, 256);
  return out;
}

/** The request's consumer: the one `identify` set, else the `consumer` option's answer. */
function consumerOf(core: TaplineCore, req: IncomingMessage): ConsumerInfo | undefined {
  const set = (req as Identified)[CONSUMER];
  if (set) return set;
  const fn = core.opts.consumer;
  if (!fn) return undefined;
  try {
    return cleanConsumer(fn(req));
  } catch (err) {
    core.internalError(err);
    return undefined;
  }
}

export interface IncomingContext {
  /** the route template, asked when the response has finished */
  template?: () => string | null | undefined;
  /** a parsed body the framework holds, used when the raw stream was not seen */
  parsedBody?: () => unknown;
}

/** The capture state of one response, found by the shared wrappers and listeners through it. */
const STATE = Symbol('tapline.incoming');

type Fn = (...a: unknown[]) => unknown;
type Tapped = ServerResponse & { [STATE]?: IncomingCapture };

/**
 * One request's capture: a single object per request instead of a set of closures, so the
 * response wrappers and `finish`/`close` listeners are shared functions (less to allocate and
 * collect per request).
 */
class IncomingCapture {
  startedAt = Date.now();
  t0 = performance.now();
  firstByte: number | undefined = undefined;
  reqSink: BodySink | undefined = undefined;
  resSink: BodySink | undefined = undefined;
  headHeaders: Record<string, HeaderValue> | undefined = undefined;
  decided = false;
  done = false;
  origWrite: Fn;
  origEnd: Fn;
  origWriteHead: Fn;
  /** taken when the response finished (or closed) */
  t1 = 0;
  status: number | null = null;
  aborted = false;
  ip: string | null = null;
  localPort: number | null = null;
  encrypted = false;

  constructor(
    readonly core: TaplineCore,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** the URL as it arrived: routers rewrite req.url while they dispatch */
    readonly rawUrl: string,
    readonly ctx: IncomingContext,
    readonly resLimit: number,
  ) {
    this.origWrite = res.write as Fn;
    this.origEnd = res.end as Fn;
    this.origWriteHead = res.writeHead as Fn;
  }

  headerOf(name: string): string | null {
    const v = this.res.getHeader(name) ?? this.headHeaders?.[name];
    return v === undefined ? null : firstString(v as HeaderValue);
  }

  /** Builds and queues the record (called by `TaplineCore.buildDeferred`). */
  build(): void {
    if (this.core.directLines) {
      const line = incomingLine(this);
      if (line !== undefined) this.core.enqueueLine(line);
    } else {
      const record = buildIncoming(this);
      if (record) this.core.enqueue(record);
    }
  }

  /**
   * A chunk the host writes: the first-byte time, and the body when its type is captured. A body
   * that is not captured is still counted when the host set no `content-length` (Node adds that
   * header itself to a single-chunk response, after the SDK read the headers), so the record's
   * size is the bytes sent.
   */
  take(chunk: unknown, encoding: unknown): void {
    if (this.firstByte === undefined) this.firstByte = performance.now();
    if (!this.decided) {
      this.decided = true;
      const enc = this.resLimit > 0 ? this.headerOf('content-encoding') : null;
      if (
        this.resLimit > 0 &&
        bodyAllowed(this.headerOf('content-type'), this.core.opts.bodyContentTypes) &&
        (!enc || enc.toLowerCase() === 'identity')
      )
        this.resSink = new BodySink(this.resLimit);
      else if (this.headerOf('content-length') === null) this.resSink = new BodySink(0);
    }
    if (this.resSink && chunk !== undefined && chunk !== null && typeof chunk !== 'function')
      this.resSink.add(chunk, encoding);
  }
}

// The wrappers and listeners below run with `this` the response (the host calls res.write(…),
// the emitter calls listeners on it). Called on anything else, they pass straight through.

function tappedWriteHead(this: Tapped, ...args: unknown[]): unknown {
  const st = this?.[STATE];
  if (!st) return (ServerResponse.prototype.writeHead as Fn).apply(this, args);
  // Headers passed to writeHead (Fastify does) are not visible through getHeaders().
  try {
    const h = typeof args[1] === 'object' && args[1] !== null ? args[1] : args[2];
    if (h && typeof h === 'object') st.headHeaders = headersOfWriteHead(h);
  } catch (err) {
    st.core.internalError(err);
  }
  return st.origWriteHead.apply(this, args);
}

function tappedWrite(this: Tapped, ...args: unknown[]): unknown {
  const st = this?.[STATE];
  if (!st) return (ServerResponse.prototype.write as Fn).apply(this, args);
  try {
    st.take(args[0], args[1]);
  } catch (err) {
    st.core.internalError(err);
  }
  return st.origWrite.apply(this, args);
}

function tappedEnd(this: Tapped, ...args: unknown[]): unknown {
  const st = this?.[STATE];
  if (!st) return (ServerResponse.prototype.end as Fn).apply(this, args);
  try {
    st.take(args[0], args[1]);
  } catch (err) {
    st.core.internalError(err);
  }
  return st.origEnd.apply(this, args);
}

/**
 * `finish` or `close`, whichever comes first: what can change once the response is over (the
 * end time, the status, whether it finished, the socket's addresses) is taken now; the record is
 * built and queued later in the same turn of the event loop, after the turn's other responses
 * (`TaplineCore.defer`).
 */
function onFinished(this: Tapped): void {
  const st = this[STATE];
  if (!st || st.done) return;
  st.done = true;
  this.removeListener('finish', onFinished);
  this.removeListener('close', onFinished);
  try {
    st.t1 = performance.now();
    st.status = this.headersSent ? this.statusCode : null;
    st.aborted = !this.writableFinished;
    const socket = st.req.socket as (IncomingMessage['socket'] & { encrypted?: boolean }) | null;
    st.ip = socket?.remoteAddress ?? null;
    st.localPort = socket?.localPort ?? null;
    st.encrypted = socket?.encrypted === true;
    st.core.defer(st);
  } catch (err) {
    st.core.internalError(err);
  }
}

/**
 * Starts capturing one incoming request: the request body is tapped passively (a `data` listener
 * added only when the host starts reading, so the stream's mode is the host's), the response body
 * through this response object's own `write`/`end` (no global is patched), and the record is
 * built after the response finished, off the host's latency path.
 */
export function captureIncoming(
  core: TaplineCore,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: IncomingContext = NO_CONTEXT,
): void {
  try {
    if (!core.active) return;
    const r = req as IncomingMessage & { [CAPTURED]?: true };
    if (r[CAPTURED]) return;
    r[CAPTURED] = true;
    const st = new IncomingCapture(core, req, res, req.url ?? '/', ctx, core.bodyLimit('response'));

    const reqLimit = core.bodyLimit('request');
    if (reqLimit > 0 && bodyAllowed(req.headers['content-type'], core.opts.bodyContentTypes)) {
      const sink = (st.reqSink = new BodySink(reqLimit));
      tapReadable(req, (c) => sink.add(c));
    } else if (
      req.headers['content-length'] === undefined &&
      req.headers['transfer-encoding'] !== undefined
    ) {
      // A chunked body that is not captured: its bytes are counted for the record's size.
      const counter = (st.reqSink = new BodySink(0));
      tapReadable(req, (c) => counter.add(c));
    }

    (res as Tapped)[STATE] = st;
    res.writeHead = tappedWriteHead as ServerResponse['writeHead'];
    res.write = tappedWrite as ServerResponse['write'];
    res.end = tappedEnd as ServerResponse['end'];
    res.on('finish', onFinished);
    res.on('close', onFinished);
  } catch (err) {
    core.internalError(err);
  }
}

const NO_CONTEXT: IncomingContext = {};

function buildIncoming(st: IncomingCapture): CapturedRecord | undefined {
  const { core, req, res, rawUrl, startedAt, t0, t1, firstByte, reqSink, resSink, ctx, headHeaders } = st;
  const method = (req.method ?? 'GET').toUpperCase();
  const { path, search } = splitUrl(rawUrl);
  // A response that never sent its headers (the client went away first) has no status.
  const status = st.status;
  let template: string | null = null;
  if (ctx.template) {
    const t = ctx.template();
    if (typeof t === 'string' && t) template = t.slice(0, 2048);
  }
  if (!core.shouldCapture(method, path, template, status)) return undefined;

  const drop = core.opts.dropHeaders;
  const hostHeader = firstString(req.headers.host);
  const [hostName, hostPort] = splitHost(hostHeader);
  const port = hostPort ?? st.localPort;
  const scheme = st.encrypted ? 'https' : 'http';
  const reqCt = firstString(req.headers['content-type']);
  let reqBody: unknown = reqSink?.text();
  if (reqBody === undefined && ctx.parsedBody && reqSink?.captures) {
    const b = ctx.parsedBody();
    if (b !== undefined && b !== null && (typeof b !== 'object' || Object.keys(b).length > 0)) {
      // The framework read the stream before the capture started: its parsed body, as text.
      const text = typeof b === 'string' ? b : JSON.stringify(b);
      if (typeof text === 'string') reqBody = text.slice(0, core.bodyLimit('request'));
    }
  }
  const reqLen = Number(req.headers['content-length']);
  const resHeaders = copyHeaders(res.getHeaders(), drop);
  if (headHeaders)
    for (const k in headHeaders)
      if (!drop?.has(k) && resHeaders[k] === undefined) resHeaders[k] = headHeaders[k]!;
  const resCt = firstString(resHeaders['content-type']);
  // No `content-length` (a chunked response): NaN, so the size is the bytes seen.
  const resLenHeader = firstString(resHeaders['content-length']);
  const resLen = resLenHeader ? Number(resLenHeader) : NaN;
  const record: CapturedRecord = {
    sid: newRecordSid(),
    direction: 'in',
    createdAt: isoTime(startedAt),
    request: {
      host: hostName,
      ip: st.ip,
      method,
      path,
      port: port !== null && port >= 0 && port <= 65535 ? port : null,
      url: `${scheme}://${hostHeader ?? 'localhost'}${rawUrl}`.slice(0, 16384),
      queryString: parseQuery(search),
      headers: copyHeaders(req.headers, drop),
      contentType: reqCt,
      size: Number.isFinite(reqLen) && reqLen >= 0 ? reqLen : (reqSink?.total ?? 0),
    },
    response: {
      statusCode: status !== null && status >= 100 && status <= 599 ? status : null,
      headers: resHeaders,
      contentType: resCt,
      size: Number.isFinite(resLen) && resLen >= 0 ? resLen : (resSink?.total ?? 0),
    },
    timings: {
      duration: round(t1 - t0),
      phases: {
        firstByte: firstByte !== undefined ? round(firstByte - t0) : null,
        download: firstByte !== undefined ? round(t1 - firstByte) : null,
        total: round(t1 - t0),
      },
    },
    tags: [],
  };
  if (template) record.endpoint = template;
  const consumer = consumerOf(core, req);
  if (consumer) record.consumer = consumer;
  if (reqBody !== undefined) record.request.body = reqBody;
  const resBody = resSink?.text();
  if (resBody !== undefined) record.response!.body = resBody;
  if (st.aborted) record.tags.push({ key: 'aborted', value: 'true' });
  return record;
}

/**
 * The record `buildIncoming` makes, written straight as the JSON line `enqueue` would queue for
 * it (same fields, same order, same text), without building the record's objects first: the
 * request's headers are read from `req.headers` as they are serialised. Used while the client
 * rules need no record object (`core.directLines`); undefined when sampling or an exclusion
 * skips the request.
 */
function incomingLine(st: IncomingCapture): string | undefined {
  const { core, req, res, rawUrl, startedAt, t0, t1, firstByte, reqSink, resSink, ctx, headHeaders } = st;
  const method = (req.method ?? 'GET').toUpperCase();
  const q = rawUrl.indexOf('?');
  const h = rawUrl.indexOf('#');
  const end = h < 0 ? rawUrl.length : h;
  const path = q < 0 || q > end ? rawUrl.slice(0, end) : rawUrl.slice(0, q);
  const search = q < 0 || q > end ? '' : rawUrl.slice(q + 1, end);
  const status = st.status;
  let template: string | null = null;
  if (ctx.template) {
    const t = ctx.template();
    if (typeof t === 'string' && t) template = t.slice(0, 2048);
  }
  if (!core.shouldCapture(method, path, template, status)) return undefined;

  const drop = core.opts.dropHeaders;
  const hostHeader = firstString(req.headers.host);
  const [hostName, hostPort] = splitHost(hostHeader);
  const port = hostPort ?? st.localPort;
  const reqCt = firstString(req.headers['content-type']);
  let reqBody: string | undefined = reqSink?.text();
  if (reqBody === undefined && ctx.parsedBody && reqSink?.captures) {
    const b = ctx.parsedBody();
    if (b !== undefined && b !== null && (typeof b !== 'object' || Object.keys(b).length > 0)) {
      const text = typeof b === 'string' ? b : JSON.stringify(b);
      if (typeof text === 'string') reqBody = text.slice(0, core.bodyLimit('request'));
    }
  }
  const reqLen = Number(req.headers['content-length']);
  const resHeaders = copyHeaders(res.getHeaders(), drop);
  if (headHeaders)
    for (const k in headHeaders)
      if (!drop?.has(k) && resHeaders[k] === undefined) resHeaders[k] = headHeaders[k]!;
  const resCt = firstString(resHeaders['content-type']);
  const resLenHeader = firstString(resHeaders['content-length']);
  const resLen = resLenHeader ? Number(resLenHeader) : NaN;
  const url = `${st.encrypted ? 'https' : 'http'}://${hostHeader ?? 'localhost'}${rawUrl}`.slice(0, 16384);
  const size = Number.isFinite(reqLen) && reqLen >= 0 ? reqLen : (reqSink?.total ?? 0);
  const rsize = Number.isFinite(resLen) && resLen >= 0 ? resLen : (resSink?.total ?? 0);
  const ip = st.ip;
  const aborted = st.aborted;
  const consumer = consumerOf(core, req);

  let line =
    '{"sid":"' +
    newRecordSid() +
    '","direction":"in","createdAt":"' +
    isoTime(startedAt) +
    '","request":{"host":' +
    jstr(hostName) +
    ',"ip":' +
    jstr(ip) +
    ',"method":' +
    JSON.stringify(method) +
    ',"path":' +
    JSON.stringify(path) +
    ',"port":' +
    (port !== null && port >= 0 && port <= 65535 ? jnum(port) : 'null') +
    ',"url":' +
    JSON.stringify(url) +
    ',"queryString":' +
    (search ? JSON.stringify(parseQuery(search)) : '{}') +
    ',"headers":' +
    headersJson(req.headers, drop) +
    ',"contentType":' +
    jstr(reqCt) +
    ',"size":' +
    jnum(size);
  if (reqBody !== undefined) line += ',"body":' + JSON.stringify(reqBody);
  line +=
    '},"response":{"statusCode":' +
    (status !== null && status >= 100 && status <= 599 ? jnum(status) : 'null') +
    ',"headers":' +
    JSON.stringify(resHeaders) +
    ',"contentType":' +
    jstr(resCt) +
    ',"size":' +
    jnum(rsize);
  const resBody = resSink?.text();
  if (resBody !== undefined) line += ',"body":' + JSON.stringify(resBody);
  line +=
    '},"timings":{"duration":' +
    jnum(round(t1 - t0)) +
    ',"phases":{"firstByte":' +
    (firstByte !== undefined ? jnum(round(firstByte - t0)) : 'null') +
    ',"download":' +
    (firstByte !== undefined ? jnum(round(t1 - firstByte)) : 'null') +
    ',"total":' +
    jnum(round(t1 - t0)) +
    '}},"tags":[' +
    (aborted ? '{"key":"aborted","value":"true"}' : '') +
    core.lineTail(aborted, template, consumer);
  return line;
}

const jstr = (s: string | null): string => (s === null ? 'null' : JSON.stringify(s));
/** A number as JSON.stringify writes it (non-finite → null). */
const jnum = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

/**
 * Headers as `copyHeaders` copies them, written as JSON directly. Node's `req.headers` has
 * unique lower-case names; a name that is not lower case (set by a middleware) could merge with
 * another once lowered, so then the object is copied first, as `copyHeaders` does.
 */
function headersJson(headers: IncomingMessage['headers'], drop: Set<string> | null): string {
  let out = '{';
  let n = 0;
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined) continue;
    const key = name.toLowerCase();
    if (key !== name || key === '__proto__') return JSON.stringify(copyHeaders(headers, drop));
    if (drop?.has(key)) continue;
    if (++n > MAX_HEADERS) break;
    out += (n > 1 ? ',' : '') + JSON.stringify(key) + ':' + JSON.stringify(headerValue(v));
  }
  return out + '}';
}

/** writeHead's headers: an object, or a flat `[name, value, …]` array. */
function headersOfWriteHead(h: object): Record<string, HeaderValue> {
  if (Array.isArray(h)) return headersFromPairs(h, null);
  return copyHeaders(h as Record<string, string | string[] | number>, null);
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
