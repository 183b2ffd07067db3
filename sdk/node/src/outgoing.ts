import diagnostics from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import {
  BodySink,
  bodyAllowed,
  copyHeaders,
  firstString,
  headersFromPairs,
  isoTime,
  parseQuery,
  splitHost,
  splitUrl,
  tapReadable,
} from './capture.js';
import type { TaplineCore } from './client.js';
import { newRecordSid } from './sid.js';
import { SDK_HEADER } from './transport.js';
import type { CapturedRecord, HeaderValue } from './types.js';

/**
 * Outgoing calls through Node's diagnostics channels, no global patched:
 * - `undici:request:create|headers|trailers|error`: `fetch` and undici (request body when it is a
 *   string or bytes; undici's channels do not carry the response body).
 * - `http.client.request.start|error`, `http.client.response.finish`: node:http(s) clients; the
 *   response body is tapped passively like an incoming request's.
 * The SDK's own calls carry the `x-tapline-sdk` header and are skipped.
 */

interface OutCall {
  startedAt: number;
  t0: number;
  method: string;
  url: string;
  host: string | null;
  port: number | null;
  path: string;
  search: string;
  reqHeaders: Record<string, HeaderValue>;
  reqBody?: string;
  reqSize: number | null;
  /** a body the channels do not carry (a `fetch` stream): its size is unknown */
  reqBodyOpaque?: boolean;
  status: number | null;
  resHeaders: Record<string, HeaderValue>;
  firstByte?: number;
  resSink?: BodySink;
  error?: string;
}

type UndiciRequest = {
  origin?: unknown;
  method?: string;
  path?: string;
  headers?: unknown;
  body?: unknown;
};

function hasSdkHeader(headers: unknown): boolean {
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2)
      if (String(headers[i]).toLowerCase() === SDK_HEADER) return true;
    return false;
  }
  return typeof headers === 'string' && headers.toLowerCase().includes(`${SDK_HEADER}:`);
}

export class OutgoingCapture {
  private readonly calls = new WeakMap<object, OutCall>();
  /** request bodies seen by `httpCreated`, taken over by `httpStart` */
  private readonly bodies = new WeakMap<object, BodySink>();
  private readonly subs: [string, (msg: unknown) => void][] = [];

  constructor(private readonly core: TaplineCore) {}

  start(): void {
    const on = (name: string, fn: (msg: never) => void) => {
      const safe = (msg: unknown) => {
        try {
          (fn as (m: unknown) => void)(msg);
        } catch (err) {
          this.core.internalError(err);
        }
      };
      diagnostics.subscribe(name, safe);
      this.subs.push([name, safe]);
    };
    on('undici:request:create', (m: { request: UndiciRequest }) => this.undiciCreate(m.request));
    on(
      'undici:request:headers',
      (m: { request: object; response: { statusCode: number; headers: unknown } }) =>
        this.undiciHeaders(m.request, m.response),
    );
    on('undici:request:trailers', (m: { request: object }) => this.end(m.request));
    on('undici:request:error', (m: { request: object; error: Error }) => this.fail(m.request, m.error));
    // Published by the ClientRequest constructor from Node 22.12 / 23.2 on, before any body is
    // written; Node 20 has no such channel (then request bodies are not captured).
    on('http.client.request.created', (m: { request: ClientRequest }) => this.httpCreated(m.request));
    on('http.client.request.start', (m: { request: ClientRequest }) => this.httpStart(m.request));
    on('http.client.response.finish', (m: { request: ClientRequest; response: IncomingMessage }) =>
      this.httpResponse(m.request, m.response),
    );
    on('http.client.request.error', (m: { request: ClientRequest; error: Error }) =>
      this.fail(m.request, m.error),
    );
  }

  stop(): void {
    for (const [name, fn] of this.subs) diagnostics.unsubscribe(name, fn);
    this.subs.length = 0;
  }

  private begin(key: object, method: string, url: string, reqHeaders: Record<string, HeaderValue>): OutCall {
    let host: string | null = null;
    let port: number | null = null;
    let path = '/';
    let search = '';
    try {
      const u = new URL(url);
      host = u.hostname;
      port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
      path = u.pathname;
      search = u.search.slice(1);
    } catch {
      ({ path, search } = splitUrl(url));
    }
    const call: OutCall = {
      startedAt: Date.now(),
      t0: performance.now(),
      method: method.toUpperCase(),
      url,
      host,
      port,
      path,
      search,
      reqHeaders,
      reqSize: null,
      status: null,
      resHeaders: {},
    };
    this.calls.set(key, call);
    return call;
  }

  private undiciCreate(req: UndiciRequest): void {
    if (!this.core.outgoingEnabled || hasSdkHeader(req.headers)) return;
    const origin = typeof req.origin === 'string' ? req.origin : String(req.origin ?? '');
    const call = this.begin(
      req,
      req.method ?? 'GET',
      `${origin.replace(/\/$/, '')}${req.path ?? '/'}`,
      headersFromPairs(req.headers, this.core.opts.dropHeaders),
    );
    const body = req.body;
    if (body !== null && body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array))
      call.reqBodyOpaque = true;
    if (typeof body === 'string' || body instanceof Uint8Array) {
      const size = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
      call.reqSize = size;
      const limit = this.core.bodyLimit('request');
      if (
        limit > 0 &&
        bodyAllowed(firstString(call.reqHeaders['content-type']), this.core.opts.bodyContentTypes)
      ) {
        const sink = new BodySink(limit);
        sink.add(body);
        call.reqBody = sink.text();
      }
    }
  }

  private undiciHeaders(req: object, response: { statusCode: number; headers: unknown }): void {
    const call = this.calls.get(req);
    if (!call) return;
    call.firstByte = performance.now();
    call.status = response.statusCode;
    call.resHeaders = headersFromPairs(response.headers, this.core.opts.dropHeaders);
  }

  private httpStart(req: ClientRequest): void {
    if (!this.core.outgoingEnabled || req.getHeader(SDK_HEADER) !== undefined) return;
    const protocol = (req as ClientRequest & { protocol?: string }).protocol ?? 'http:';
    const hostHeader = firstString(req.getHeader('host') as string | undefined) ?? req.host;
    const call = this.begin(
      req,
      req.method,
      `${protocol}//${hostHeader}${req.path}`,
      copyHeaders(req.getHeaders(), this.core.opts.dropHeaders),
    );
    const sink = this.bodies.get(req);
    if (sink) {
      this.bodies.delete(req);
      const text = sink.text();
      if (text !== undefined) call.reqBody = text;
      call.reqSize = sink.total;
    } else if (req.chunkedEncoding) {
      // A chunked body the SDK did not see (Node 20 has no `created` channel): size unknown.
      call.reqBodyOpaque = true;
    }
  }

  /**
   * A node:http(s) request just made (`http.client.request.created`): this request object's own
   * write/end are wrapped, nothing global, so its body is seen as the host writes it. The
   * `start` channel comes only once the request has ended (`ClientRequest._finish`), when the
   * body has already been handed to the socket. Whether the body is kept is decided at the first
   * write, once the headers are final: its content type is captured, or, without a
   * content-length, its bytes are counted for the size.
   */
  private httpCreated(req: ClientRequest): void {
    if (!this.core.outgoingEnabled) return;
    const core = this.core;
    const bodies = this.bodies;
    const origWrite = req.write;
    const origEnd = req.end;
    let sink: BodySink | null | undefined;
    const take = (chunk: unknown, encoding: unknown) => {
      if (sink === undefined) {
        sink = null;
        if (req.getHeader(SDK_HEADER) !== undefined) return;
        const limit = core.bodyLimit('request');
        const type = firstString(req.getHeader('content-type') as HeaderValue | undefined);
        if (limit > 0 && bodyAllowed(type, core.opts.bodyContentTypes)) sink = new BodySink(limit);
        else if (req.getHeader('content-length') === undefined) sink = new BodySink(0);
        if (sink) bodies.set(req, sink);
      }
      if (sink && chunk !== undefined && chunk !== null && typeof chunk !== 'function')
        sink.add(chunk, encoding);
    };
    req.write = function (this: ClientRequest, chunk: unknown, ...rest: unknown[]) {
      core.guard(() => take(chunk, rest[0]), undefined);
      return (origWrite as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as ClientRequest['write'];
    req.end = function (this: ClientRequest, chunk?: unknown, ...rest: unknown[]) {
      core.guard(() => take(chunk, rest[0]), undefined);
      return (origEnd as (...a: unknown[]) => ClientRequest).call(this, chunk, ...rest);
    } as ClientRequest['end'];
  }

  private httpResponse(req: ClientRequest, res: IncomingMessage): void {
    const call = this.calls.get(req);
    if (!call) return;
    call.firstByte = performance.now();
    call.status = res.statusCode ?? null;
    call.resHeaders = copyHeaders(res.headers, this.core.opts.dropHeaders);
    const limit = this.core.bodyLimit('response');
    const enc = res.headers['content-encoding'];
    if (
      limit > 0 &&
      bodyAllowed(res.headers['content-type'], this.core.opts.bodyContentTypes) &&
      (!enc || enc === 'identity')
    ) {
      const sink = (call.resSink = new BodySink(limit));
      tapReadable(res, (c) => sink.add(c));
    } else if (res.headers['content-length'] === undefined) {
      // A body that is not captured and has no content-length: its bytes are counted for the size.
      const counter = (call.resSink = new BodySink(0));
      tapReadable(res, (c) => counter.add(c));
    }
    const done = () => this.end(req);
    res.once('end', done);
    res.once('close', done);
  }

  private fail(key: object, error: Error | undefined): void {
    const call = this.calls.get(key);
    if (!call) return;
    call.error = (error?.message ?? 'error').slice(0, 4096);
    this.end(key);
  }

  private end(key: object): void {
    const call = this.calls.get(key);
    if (!call) return;
    this.calls.delete(key);
    const t1 = performance.now();
    const core = this.core;
    core.guard(() => {
      if (!core.shouldCapture(call.method, call.path, null, call.status)) return;
      // No content-length (a chunked response): NaN, so the size is the bytes seen.
      const resLenHeader = firstString(call.resHeaders['content-length']);
      const resLen = resLenHeader ? Number(resLenHeader) : NaN;
      const [, hostPort] = splitHost(firstString(call.reqHeaders.host));
      const record: CapturedRecord = {
        sid: newRecordSid(),
        direction: 'out',
        createdAt: isoTime(call.startedAt),
        request: {
          host: call.host,
          method: call.method,
          path: call.path,
          port: call.port ?? hostPort,
          url: call.url.slice(0, 16384),
          queryString: parseQuery(call.search),
          headers: call.reqHeaders,
          contentType: firstString(call.reqHeaders['content-type']),
          // content-length, else the bytes seen; null for a body the SDK cannot see (a fetch stream)
          size:
            call.reqSize ??
            (Number(firstString(call.reqHeaders['content-length'])) || (call.reqBodyOpaque ? null : 0)),
        },
        response:
          call.status === null
            ? null
            : {
                statusCode: call.status >= 100 && call.status <= 599 ? call.status : null,
                headers: call.resHeaders,
                contentType: firstString(call.resHeaders['content-type']),
                size: Number.isFinite(resLen) && resLen >= 0 ? resLen : (call.resSink?.total ?? null),
              },
        timings: {
          duration: round(t1 - call.t0),
          phases: {
            wait: call.firstByte !== undefined ? round(call.firstByte - call.t0) : null,
            firstByte: call.firstByte !== undefined ? round(call.firstByte - call.t0) : null,
            download: call.firstByte !== undefined ? round(t1 - call.firstByte) : null,
            total: round(t1 - call.t0),
          },
        },
        tags: [],
      };
      if (call.reqBody !== undefined) record.request.body = call.reqBody;
      const resBody = call.resSink?.text();
      if (resBody !== undefined && record.response) record.response.body = resBody;
      if (call.error) record.tags.push({ key: 'error', value: call.error });
      core.enqueue(record);
    }, undefined);
  }
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
