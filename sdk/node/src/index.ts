import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { TaplineCore } from './client.js';
import { identifyRequest } from './consumer.js';
import { captureIncoming } from './incoming.js';
import { OutgoingCapture } from './outgoing.js';
import type { ConsumerInfo, TaplineOptions, TaplineStats } from './types.js';

export type {
  ConsumerInfo,
  CapturedRecord,
  RemoteExclusionRule,
  RemoteRedactionRule,
  RemoteSettings,
  TaplineLogger,
  TaplineOptions,
  TaplineStats,
} from './types.js';
export { SDK_NAME, SDK_VERSION } from './transport.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Express request as far as the SDK reads it. */
interface ExpressLikeRequest extends IncomingMessage {
  baseUrl?: string;
  route?: { path?: unknown };
  body?: unknown;
}

/** Fastify's request/reply as far as the SDK reads them. */
interface FastifyLikeRequest {
  raw: IncomingMessage;
  body?: unknown;
  routeOptions?: { url?: string };
  routerPath?: string;
}
interface FastifyLikeReply {
  raw: ServerResponse;
}
interface FastifyLikeInstance {
  addHook(
    name: 'onRequest',
    fn: (req: FastifyLikeRequest, reply: FastifyLikeReply) => Promise<void>,
  ): unknown;
}

/** Koa's context as far as the SDK reads it. */
interface KoaLikeContext {
  req: IncomingMessage;
  res: ServerResponse;
  _matchedRoute?: unknown;
  routerPath?: unknown;
  request: { body?: unknown };
}

/**
 * The Tapline SDK for Node.js. One instance per process and bucket:
 *
 *   const tapline = new Tapline({ endpoint, bucketSid, token });
 *   app.use(tapline.express());            // or fastify.register(tapline.fastify), koa.use(tapline.koa())
 *
 * Outgoing `fetch`/undici and node:http(s) calls are captured from the start (diagnostics
 * channels). No method throws into the host; failures are counted in `stats().internalErrors`.
 */
export class Tapline {
  private readonly core: TaplineCore;
  private readonly outgoing: OutgoingCapture;
  private readonly onSigterm = () => void this.handleSigterm();
  private readonly onBeforeExit = () => void this.handleBeforeExit();
  private exitFlushTried = false;

  constructor(options: TaplineOptions) {
    this.core = new TaplineCore(options);
    this.outgoing = new OutgoingCapture(this.core);
    if (!this.core.opts.enabled) return;
    this.outgoing.start();
    if (this.core.opts.handleProcessEvents) {
      process.once('SIGTERM', this.onSigterm);
      process.on('beforeExit', this.onBeforeExit);
    }
    this.core.debug(
      { endpoint: this.core.opts.endpoint.origin, bucketSid: this.core.opts.bucketSid },
      'started',
    );
  }

  /** Express middleware (`app.use(tapline.express())`, before the routes). */
  express(): (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void {
    return (req, res, next) => {
      const r = req as ExpressLikeRequest;
      captureIncoming(this.core, req, res, {
        template: () => {
          const p = r.route?.path;
          return typeof p === 'string' ? `${r.baseUrl ?? ''}${p}` : null;
        },
        parsedBody: () => r.body,
      });
      next();
    };
  }

  /**
   * Fastify plugin (`await app.register(tapline.fastify)`): an `onRequest` hook on the whole
   * app (not encapsulated), the route template from `routeOptions.url`.
   */
  get fastify(): (app: FastifyLikeInstance, _opts: unknown) => Promise<void> {
    const core = this.core;
    const plugin = async (app: FastifyLikeInstance): Promise<void> => {
      app.addHook('onRequest', async (request, reply) => {
        captureIncoming(core, request.raw, reply.raw, {
          template: () => request.routeOptions?.url ?? request.routerPath ?? null,
          parsedBody: () => request.body,
        });
      });
    };
    // Equivalent of fastify-plugin: the hook applies outside the plugin's own context too.
    (plugin as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')] = true;
    (plugin as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')] = '@tapline/node';
    return plugin;
  }

  /** Koa middleware (`app.use(tapline.koa())`, first); templates from @koa/router. */
  koa(): (ctx: KoaLikeContext, next: () => Promise<unknown>) => Promise<unknown> {
    return (ctx, next) => {
      captureIncoming(this.core, ctx.req, ctx.res, {
        template: () => {
          const t = ctx._matchedRoute ?? ctx.routerPath;
          return typeof t === 'string' ? t : null;
        },
        parsedBody: () => ctx.request?.body,
      });
      return next();
    };
  }

  /** Wraps a plain node:http request handler: `http.createServer(tapline.httpHandler(handler))`. */
  httpHandler<H extends Handler>(handler: H): H {
    const core = this.core;
    return function (this: unknown, req: IncomingMessage, res: ServerResponse) {
      captureIncoming(core, req, res);
      return handler.call(this, req, res);
    } as H;
  }

  /** Captures every request of an existing node:http(s) server (its own `request` listener). */
  instrumentServer(server: Server): Server {
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
      captureIncoming(this.core, req, res),
    );
    return server;
  }

  /**
   * Names the consumer of an incoming request (docs/consumers.md), from a handler or middleware
   * that knows who is calling: `tapline.identify(req, { id: 'cus_42', name: 'Acme', group: 'pro' })`.
   * `req` is the request of any adapter: node:http / Express `req`, Fastify `request` (or
   * `request.raw`), Koa `ctx` (or `ctx.req`). Sent on the request's record; wins over the
   * `consumer` option. A consumer without an id (1-256 characters) is ignored.
   */
  identify(
    req: IncomingMessage | { raw: IncomingMessage } | { req: IncomingMessage },
    consumer: ConsumerInfo,
  ): void {
    this.core.guard(() => {
      const raw = 'raw' in req ? req.raw : 'req' in req ? req.req : req;
      identifyRequest(raw, consumer);
    }, undefined);
  }

  /** Sends everything queued; true when the queue is empty (false at the timeout). Never rejects. */
  flush(timeoutMs?: number): Promise<boolean> {
    return this.core.flush(timeoutMs).catch(() => false);
  }

  /** Final flush, then stops capture, timers and listeners. Never rejects. */
  async shutdown(timeoutMs?: number): Promise<boolean> {
    process.removeListener('SIGTERM', this.onSigterm);
    process.removeListener('beforeExit', this.onBeforeExit);
    this.outgoing.stop();
    return this.core.close(timeoutMs).catch(() => false);
  }

  stats(): TaplineStats {
    return this.core.stats();
  }

  /** Applies an SDK settings answer directly (the shape of `GET /v1/buckets/{b}/sdk`). */
  applySettings(body: Record<string, unknown>): void {
    this.core.guard(() => this.core.applySettings(body), undefined);
  }

  private async handleSigterm(): Promise<void> {
    await this.shutdown(this.core.opts.shutdownTimeoutMs);
    // Our listener replaced the default action; with no other listener, the default (exit) is
    // restored by raising the signal again.
    if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM');
  }

  private async handleBeforeExit(): Promise<void> {
    // One attempt: with the ingest down, a second `beforeExit` must let the process end.
    if (this.exitFlushTried) return;
    const s = this.core.stats();
    if (s.queuedRecords === 0) return;
    this.exitFlushTried = true;
    await this.flush(this.core.opts.shutdownTimeoutMs);
  }
}

/** `new Tapline(options)`. */
export function init(options: TaplineOptions): Tapline {
  return new Tapline(options);
}
