import { ServerResponse, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { BodySink, bodyAllowed, copyHeaders, firstString, headersFromPairs, tapReadable } from './capture.js';
import type { TaplineCore } from './client.js';
import { buildIncoming, incomingLine } from './incoming-record.js';
import type { HeaderValue } from './types.js';

/** Marks a request already captured, so a framework adapter and a server hook never both record it. */
const CAPTURED = Symbol.for('tapline.captured');

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
export class IncomingCapture {
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

/**
 * A response method that writes a chunk (`write`, `end`), wrapped: the capture takes the chunk
 * first, then the response's own method runs.
 */
function tapChunks(name: 'write' | 'end', orig: 'origWrite' | 'origEnd'): Fn {
  return function (this: Tapped, ...args: unknown[]): unknown {
    const st = this?.[STATE];
    if (!st) return (ServerResponse.prototype[name] as Fn).apply(this, args);
    try {
      st.take(args[0], args[1]);
    } catch (err) {
      st.core.internalError(err);
    }
    return st[orig].apply(this, args);
  };
}

const tappedWrite = tapChunks('write', 'origWrite');
const tappedEnd = tapChunks('end', 'origEnd');

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

/** writeHead's headers: an object, or a flat `[name, value, …]` array. */
function headersOfWriteHead(h: object): Record<string, HeaderValue> {
  if (Array.isArray(h)) return headersFromPairs(h, null);
  return copyHeaders(h as Record<string, string | string[] | number>, null);
}
