import pg from 'pg';
import type { Logger } from './logger.js';

type Handler = (payload: string) => void;

/**
 * One dedicated connection LISTENing on Postgres channels, reconnecting with backoff when the
 * server goes away. `onReconnect` handlers run after a reconnect, because notifications sent
 * while disconnected are lost and caches must be reloaded in full.
 */
export class PgListener {
  private client: pg.Client | undefined;
  private handlers = new Map<string, Handler[]>();
  private reconnectHandlers: (() => void)[] = [];
  private stopped = false;
  private retryMs = 250;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  on(channel: string, handler: Handler): void {
    const list = this.handlers.get(channel) ?? [];
    list.push(handler);
    this.handlers.set(channel, list);
    if (this.client) void this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch(() => undefined);
  }

  onReconnect(handler: () => void): void {
    this.reconnectHandlers.push(handler);
  }

  async start(): Promise<void> {
    await this.connect(false);
  }

  private async connect(isReconnect: boolean): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3000 });
    client.on('error', (err) => {
      this.log.warn({ err: err.message }, 'listener connection lost');
      this.scheduleReconnect();
    });
    client.on('end', () => this.scheduleReconnect());
    client.on('notification', (msg) => {
      for (const h of this.handlers.get(msg.channel) ?? []) {
        try {
          h(msg.payload ?? '');
        } catch (err) {
          this.log.error({ err, channel: msg.channel }, 'notification handler failed');
        }
      }
    });
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    this.client = client;
    this.retryMs = 250;
    if (isReconnect) {
      this.log.info('listener reconnected');
      for (const h of this.reconnectHandlers) h();
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return;
    this.client = undefined;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.connect(true).catch((err: Error) => {
        this.log.debug({ err: err.message }, 'listener reconnect failed');
        this.retryMs = Math.min(this.retryMs * 2, 5000);
        this.scheduleReconnect();
      });
    }, this.retryMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = undefined;
    if (c) await c.end().catch(() => undefined);
  }
}
