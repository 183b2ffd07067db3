import type { IncomingMessage } from 'node:http';
import {
  copyHeaders,
  firstString,
  headerValue,
  isoTime,
  MAX_HEADERS,
  parseQuery,
  splitHost,
} from './capture.js';
import { consumerOf } from './consumer.js';
import type { IncomingCapture } from './incoming.js';
import { newRecordSid } from './sid.js';
import type { CapturedRecord, ConsumerInfo, HeaderValue } from './types.js';

/**
 * The record of a finished incoming request (its capture state is an IncomingCapture, incoming.ts),
 * made one of two ways: built as an object for the client rules to read and rewrite
 * (`buildIncoming`), or written straight as its JSON line when no rule needs the object
 * (`incomingLine`). Both read the request once through `incomingParts`.
 */

/**
 * What a finished request's record holds beside its timings, read once for both ways of making
 * it (`buildIncoming`, `incomingLine`); undefined when sampling or an exclusion skips the request.
 */
interface IncomingParts {
  method: string;
  path: string;
  /** the query string without `?` ('' when there is none) */
  search: string;
  /** the route template, up to 2048 characters */
  template: string | null;
  /** a status code in 100-599, else null */
  status: number | null;
  host: string | null;
  /** a port in 0-65535, else null */
  port: number | null;
  url: string;
  reqContentType: string | null;
  reqSize: number;
  reqBody: string | undefined;
  resHeaders: Record<string, HeaderValue>;
  resContentType: string | null;
  resSize: number;
  resBody: string | undefined;
  consumer: ConsumerInfo | undefined;
}

function incomingParts(st: IncomingCapture): IncomingParts | undefined {
  const { core, req, res, rawUrl, reqSink, resSink, ctx, headHeaders } = st;
  const method = (req.method ?? 'GET').toUpperCase();
  const q = rawUrl.indexOf('?');
  const h = rawUrl.indexOf('#');
  const end = h < 0 ? rawUrl.length : h;
  const path = q < 0 || q > end ? rawUrl.slice(0, end) : rawUrl.slice(0, q);
  const search = q < 0 || q > end ? '' : rawUrl.slice(q + 1, end);
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
  let reqBody = reqSink?.text();
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
  // No `content-length` (a chunked response): NaN, so the size is the bytes seen.
  const resLenHeader = firstString(resHeaders['content-length']);
  const resLen = resLenHeader ? Number(resLenHeader) : NaN;
  const consumer = consumerOf(core, req);
  return {
    method,
    path,
    search,
    template,
    status: status !== null && status >= 100 && status <= 599 ? status : null,
    host: hostName,
    port: port !== null && port >= 0 && port <= 65535 ? port : null,
    url: `${st.encrypted ? 'https' : 'http'}://${hostHeader ?? 'localhost'}${rawUrl}`.slice(0, 16384),
    reqContentType: firstString(req.headers['content-type']),
    reqSize: Number.isFinite(reqLen) && reqLen >= 0 ? reqLen : (reqSink?.total ?? 0),
    reqBody,
    resHeaders,
    resContentType: firstString(resHeaders['content-type']),
    resSize: Number.isFinite(resLen) && resLen >= 0 ? resLen : (resSink?.total ?? 0),
    resBody: resSink?.text(),
    consumer,
  };
}

export function buildIncoming(st: IncomingCapture): CapturedRecord | undefined {
  const p = incomingParts(st);
  if (!p) return undefined;
  const { t0, t1, firstByte } = st;
  const record: CapturedRecord = {
    sid: newRecordSid(),
    direction: 'in',
    createdAt: isoTime(st.startedAt),
    request: {
      host: p.host,
      ip: st.ip,
      method: p.method,
      path: p.path,
      port: p.port,
      url: p.url,
      queryString: parseQuery(p.search),
      headers: copyHeaders(st.req.headers, st.core.opts.dropHeaders),
      contentType: p.reqContentType,
      size: p.reqSize,
    },
    response: {
      statusCode: p.status,
      headers: p.resHeaders,
      contentType: p.resContentType,
      size: p.resSize,
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
  if (p.template) record.endpoint = p.template;
  if (p.consumer) record.consumer = p.consumer;
  if (p.reqBody !== undefined) record.request.body = p.reqBody;
  if (p.resBody !== undefined) record.response!.body = p.resBody;
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
export function incomingLine(st: IncomingCapture): string | undefined {
  const p = incomingParts(st);
  if (!p) return undefined;
  const { t0, t1, firstByte, aborted } = st;
  return (
    '{"sid":"' +
    newRecordSid() +
    '","direction":"in","createdAt":"' +
    isoTime(st.startedAt) +
    '","request":{"host":' +
    jstr(p.host) +
    ',"ip":' +
    jstr(st.ip) +
    ',"method":' +
    JSON.stringify(p.method) +
    ',"path":' +
    JSON.stringify(p.path) +
    ',"port":' +
    (p.port !== null ? jnum(p.port) : 'null') +
    ',"url":' +
    JSON.stringify(p.url) +
    ',"queryString":' +
    (p.search ? JSON.stringify(parseQuery(p.search)) : '{}') +
    partJson(headersJson(st.req.headers, st.core.opts.dropHeaders), p.reqContentType, p.reqSize, p.reqBody) +
    '},"response":{"statusCode":' +
    (p.status !== null ? jnum(p.status) : 'null') +
    partJson(JSON.stringify(p.resHeaders), p.resContentType, p.resSize, p.resBody) +
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
    st.core.lineTail(aborted, p.template, p.consumer)
  );
}

/** The members a request and a response part share: headers (given as JSON), type, size and body. */
function partJson(
  headers: string,
  contentType: string | null,
  size: number,
  body: string | undefined,
): string {
  const s = ',"headers":' + headers + ',"contentType":' + jstr(contentType) + ',"size":' + jnum(size);
  return body === undefined ? s : s + ',"body":' + JSON.stringify(body);
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

const round = (ms: number) => Math.round(ms * 1000) / 1000;
