import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import {
  BodySink,
  bodyAllowed,
  copyHeaders,
  firstString,
  headersFromPairs,
  parseQuery,
  splitHost,
  splitUrl,
  tapReadable,
} from './capture.js';
import type { TaplineCore } from './client.js';
import { newRecordSid } from './sid.js';
import type { CapturedRecord, HeaderValue } from './types.js';

/** Marks a request already captured, so a framework adapter and a server hook never both record it. */
const CAPTURED = Symbol.for('tapline.captured');

export interface IncomingContext {
  /** the route template, asked when the response has finished */
  template?: () => string | null | undefined;
  /** a parsed body the framework holds, used when the raw stream was not seen */
  parsedBody?: () => unknown;
}

type Writable = ServerResponse['write'];
type Ending = ServerResponse['end'];

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
  ctx: IncomingContext = {},
): void {
  try {
    if (!core.active) return;
    const r = req as IncomingMessage & { [CAPTURED]?: true };
    if (r[CAPTURED]) return;
    r[CAPTURED] = true;
    const startedAt = Date.now();
    const t0 = performance.now();
    // The URL as it arrived: routers rewrite req.url while they dispatch.
    const rawUrl = req.url ?? '/';
    const allowed = core.opts.bodyContentTypes;

    let reqSink: BodySink | undefined;
    const reqLimit = core.bodyLimit('request');
    if (reqLimit > 0 && bodyAllowed(req.headers['content-type'], allowed)) {
      const sink = (reqSink = new BodySink(reqLimit));
      tapReadable(req, (c) => sink.add(c));
    }

    let resSink: BodySink | undefined;
    let firstByte: number | undefined;
    const resLimit = core.bodyLimit('response');
    const origWrite = res.write;
    const origEnd = res.end;
    let decided = resLimit === 0;
    // Headers passed to writeHead (Fastify does) are not visible through getHeaders().
    const origWriteHead = res.writeHead;
    let headHeaders: Record<string, HeaderValue> | undefined;
    res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      try {
        const h = typeof args[1] === 'object' && args[1] !== null ? args[1] : args[2];
        if (h && typeof h === 'object') headHeaders = headersOfWriteHead(h);
      } catch (err) {
        core.internalError(err);
      }
      return (origWriteHead as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse['writeHead'];
    const headerOf = (name: string): string | null => {
      const v = res.getHeader(name) ?? headHeaders?.[name];
      return v === undefined ? null : firstString(v as HeaderValue);
    };
    const take = (chunk: unknown, encoding: unknown) => {
      if (firstByte === undefined) firstByte = performance.now();
      if (!decided) {
        decided = true;
        const enc = headerOf('content-encoding');
        if (bodyAllowed(headerOf('content-type'), allowed) && (!enc || enc.toLowerCase() === 'identity'))
          resSink = new BodySink(resLimit);
      }
      if (resSink && chunk !== undefined && chunk !== null && typeof chunk !== 'function')
        resSink.add(chunk, encoding);
    };
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      try {
        take(chunk, rest[0]);
      } catch (err) {
        core.internalError(err);
      }
      return (origWrite as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as Writable;
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      try {
        take(chunk, rest[0]);
      } catch (err) {
        core.internalError(err);
      }
      return (origEnd as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    } as Ending;

    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      res.removeListener('finish', finish);
      res.removeListener('close', finish);
      const t1 = performance.now();
      core.guard(() => {
        const record = buildIncoming(
          core,
          req,
          res,
          rawUrl,
          startedAt,
          t0,
          t1,
          firstByte,
          reqSink,
          resSink,
          ctx,
          headHeaders,
        );
        if (record) core.enqueue(record);
      }, undefined);
    };
    res.once('finish', finish);
    res.once('close', finish);
  } catch (err) {
    core.internalError(err);
  }
}

function buildIncoming(
  core: TaplineCore,
  req: IncomingMessage,
  res: ServerResponse,
  rawUrl: string,
  startedAt: number,
  t0: number,
  t1: number,
  firstByte: number | undefined,
  reqSink: BodySink | undefined,
  resSink: BodySink | undefined,
  ctx: IncomingContext,
  headHeaders: Record<string, HeaderValue> | undefined,
): CapturedRecord | undefined {
  const method = (req.method ?? 'GET').toUpperCase();
  const { path, search } = splitUrl(rawUrl);
  // A response that never sent its headers (the client went away first) has no status.
  const status = res.headersSent ? res.statusCode : null;
  let template: string | null = null;
  if (ctx.template) {
    const t = ctx.template();
    if (typeof t === 'string' && t) template = t.slice(0, 2048);
  }
  if (!core.shouldCapture(method, path, template, status)) return undefined;

  const drop = core.opts.dropHeaders;
  const hostHeader = firstString(req.headers.host);
  const [hostName, hostPort] = splitHost(hostHeader);
  const encrypted = (req.socket as { encrypted?: boolean } | null)?.encrypted === true;
  const port = hostPort ?? req.socket?.localPort ?? null;
  const scheme = encrypted ? 'https' : 'http';
  const reqCt = firstString(req.headers['content-type']);
  let reqBody: unknown = reqSink?.text();
  if (reqBody === undefined && ctx.parsedBody && reqSink) {
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
    createdAt: new Date(startedAt).toISOString(),
    request: {
      host: hostName,
      ip: req.socket?.remoteAddress ?? null,
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
  if (reqBody !== undefined) record.request.body = reqBody;
  const resBody = resSink?.text();
  if (resBody !== undefined) record.response!.body = resBody;
  if (!res.writableFinished) record.tags.push({ key: 'aborted', value: 'true' });
  return record;
}

/** writeHead's headers: an object, or a flat `[name, value, …]` array. */
function headersOfWriteHead(h: object): Record<string, HeaderValue> {
  if (Array.isArray(h)) return headersFromPairs(h, null);
  return copyHeaders(h as Record<string, string | string[] | number>, null);
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
