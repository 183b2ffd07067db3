import { hostname } from 'node:os';
import { DEFAULT_BODY_TYPES } from './capture.js';
import { SDK_NAME } from './transport.js';
import type { TaplineOptions } from './types.js';

/**
 * The SDK's options, checked and completed with their defaults once at start (docs/sdk.md lists
 * them): a value out of range is clamped, a value of the wrong type falls back to the default, so
 * a configuration mistake never throws into the host.
 */

/** An environment sid; any other `environment` travels as a tag. */
const ENV_SID = /^[a-z0-9]{6}$/;

export interface ResolvedOptions {
  endpoint: URL;
  settingsEndpoint: URL;
  bucketSid: string;
  token: string;
  environment: string | null;
  tags: { key: string; value: string }[];
  clientId: string;
  captureOutgoing: boolean;
  maxBodyBytes: number;
  bodyContentTypes: string[];
  dropHeaders: Set<string> | null;
  sampling: Record<string, number> | undefined;
  maxQueueBytes: number;
  batchSize: number;
  batchBytes: number;
  flushIntervalMs: number;
  settingsRefreshMs: number;
  requestTimeoutMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  handleProcessEvents: boolean;
  shutdownTimeoutMs: number;
  enabled: boolean;
  consumer: TaplineOptions['consumer'];
  circuitThreshold: number;
  circuitOpenMs: number;
  circuitMaxOpenMs: number;
}

/** `v` clamped to [min, max] when it is a finite number, else `dflt`. */
export const num = (v: unknown, dflt: number, min: number, max: number): number =>
  typeof v === 'number' && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : dflt;

/** Validated options with defaults; bad values fall back to the default instead of throwing. */
export function resolveOptions(o: TaplineOptions): ResolvedOptions {
  const base = (s: string | undefined): URL => {
    try {
      return new URL(s ?? 'http://127.0.0.1:8081');
    } catch {
      return new URL('http://127.0.0.1:8081');
    }
  };
  const endpoint = base(o.endpoint);
  const env = typeof o.environment === 'string' ? o.environment : null;
  const tags = Object.entries(o.tags ?? {})
    .filter(([k, v]) => typeof k === 'string' && k.length > 0 && typeof v === 'string')
    .map(([key, value]) => ({ key: key.slice(0, 256), value: value.slice(0, 4096) }));
  tags.push({ key: 'sdk', value: SDK_NAME });
  // An environment that is not an environment sid still travels, as a tag.
  if (env !== null && !ENV_SID.test(env)) tags.push({ key: 'environment', value: env.slice(0, 4096) });
  const batchBytes = num(o.batchBytes, 1_048_576, 1024, 4 * 1_048_576);
  return {
    endpoint,
    settingsEndpoint: o.settingsEndpoint ? base(o.settingsEndpoint) : endpoint,
    bucketSid: String(o.bucketSid ?? ''),
    token: String(o.token ?? ''),
    environment: env !== null && ENV_SID.test(env) ? env : null,
    tags,
    clientId: (o.clientId ?? `node-${hostname()}-${process.pid}`).slice(0, 200),
    captureOutgoing: o.captureOutgoing !== false,
    maxBodyBytes: num(o.maxBodyBytes, 65_536, 0, 1_048_576),
    bodyContentTypes: Array.isArray(o.bodyContentTypes)
      ? o.bodyContentTypes.map((s) => String(s).toLowerCase())
      : DEFAULT_BODY_TYPES,
    dropHeaders: Array.isArray(o.dropHeaders)
      ? new Set(o.dropHeaders.map((h) => String(h).toLowerCase()))
      : null,
    sampling: o.sampling,
    maxQueueBytes: num(o.maxQueueBytes, 16 * 1_048_576, 16 * 1024, 1024 * 1_048_576),
    batchSize: num(o.batchSize, 500, 1, 1000),
    batchBytes,
    flushIntervalMs: num(o.flushIntervalMs, 1000, 10, 600_000),
    settingsRefreshMs: num(o.settingsRefreshMs, 60_000, 100, 86_400_000),
    requestTimeoutMs: num(o.requestTimeoutMs, 10_000, 100, 600_000),
    retryBaseMs: num(o.retryBaseMs, 500, 1, 600_000),
    retryMaxMs: num(o.retryMaxMs, 30_000, 1, 3_600_000),
    handleProcessEvents: o.handleProcessEvents !== false,
    shutdownTimeoutMs: num(o.shutdownTimeoutMs, 5000, 0, 600_000),
    enabled: o.enabled !== false,
    consumer: typeof o.consumer === 'function' ? o.consumer : undefined,
    circuitThreshold: num(o.circuitThreshold, 5, 1, 1000),
    circuitOpenMs: num(o.circuitOpenMs, 5000, 1, 3_600_000),
    circuitMaxOpenMs: num(o.circuitMaxOpenMs, 60_000, 1, 3_600_000),
  };
}
