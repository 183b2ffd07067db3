import type { ResolvedOptions } from './options.js';
import { classify, request } from './transport.js';
import type { RemoteSettings } from './types.js';

/** The settings of a `GET /v1/buckets/{b}/sdk` answer; a missing or malformed field is left out. */
export function remoteSettingsOf(body: Record<string, unknown>): RemoteSettings {
  const s = (body?.settings ?? {}) as Record<string, unknown>;
  const remote: RemoteSettings = {};
  if (typeof s.enabled === 'boolean') remote.enabled = s.enabled;
  if (typeof s.captureRequestBody === 'boolean') remote.captureRequestBody = s.captureRequestBody;
  if (typeof s.captureResponseBody === 'boolean') remote.captureResponseBody = s.captureResponseBody;
  if (typeof s.maxBodyBytes === 'number') remote.maxBodyBytes = s.maxBodyBytes;
  if (typeof s.sampleRate === 'number') remote.sampleRate = s.sampleRate;
  if (typeof s.interceptOutbound === 'boolean') remote.interceptOutbound = s.interceptOutbound;
  if (typeof s.debug === 'boolean') remote.debug = s.debug;
  return remote;
}

/** What the poller hands its answers to. */
export interface SettingsTarget {
  /** takes a 200 answer's body (and marks the settings loaded) */
  apply(body: Record<string, unknown>): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  debug(obj: Record<string, unknown>, msg: string): void;
  /** after each answer or failure: queued records may have become sendable */
  polled(): void;
}

/**
 * Polls the bucket's SDK settings (`GET /v1/buckets/{b}/sdk?redactAt=client`): until they arrive
 * once (client redactions must be known before anything is sent) it retries with backoff; after
 * that it refreshes them every `settingsRefreshMs`.
 */
export class SettingsPoller {
  /** true once settings (or an answer meaning there are none) arrived */
  loaded = false;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly opts: ResolvedOptions,
    private readonly target: SettingsTarget,
  ) {}

  start(): void {
    const o = this.opts;
    const url = new URL(`/v1/buckets/${encodeURIComponent(o.bucketSid)}/sdk`, o.settingsEndpoint);
    url.searchParams.set('redactAt', 'client');
    url.searchParams.set('clientId', o.clientId);
    if (o.environment) url.searchParams.set('environmentSid', o.environment);
    request(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${o.token}`, accept: 'application/json' },
      timeoutMs: o.requestTimeoutMs,
    })
      .then((res) => {
        if (res.status === 200) {
          this.target.apply(JSON.parse(res.body) as Record<string, unknown>);
          this.failures = 0;
        } else if (classify(res.status) === 'drop') {
          // Answered, but no settings (an older server, a token without the scope): defaults,
          // so delivery does not wait forever; asked again at the next refresh.
          if (!this.loaded)
            this.target.warn({ status: res.status }, 'tapline: SDK settings unavailable, defaults used');
          this.loaded = true;
          this.failures = 0;
        } else throw new Error(`settings answered ${res.status}`);
      })
      .catch((err: unknown) => {
        this.failures++;
        this.target.debug({ err: (err as Error).message }, 'settings fetch failed');
      })
      .finally(() => {
        if (this.stopped) return;
        const wait = this.loaded
          ? o.settingsRefreshMs
          : Math.min(o.settingsRefreshMs, 250 * 2 ** Math.min(this.failures, 8));
        this.timer = setTimeout(() => this.start(), wait);
        this.timer.unref();
        this.target.polled();
      });
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
