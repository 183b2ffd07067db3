import type { IncomingMessage } from 'node:http';
import type { RedactionType } from '../../../services/shared/rules.js';

/** A logger the host passes in (pino, console, winston all fit). Only `debug`/`warn` are used. */
export interface TaplineLogger {
  debug?: (obj: unknown, msg?: string) => void;
  info?: (obj: unknown, msg?: string) => void;
  warn?: (obj: unknown, msg?: string) => void;
  error?: (obj: unknown, msg?: string) => void;
}

export type HeaderValue = string | number | boolean | string[];

export interface RecordTag {
  key: string;
  value: string;
}

export interface RequestPart {
  host: string | null;
  ip?: string | null;
  method: string;
  path: string;
  port: number | null;
  url: string;
  queryString: Record<string, string | string[]>;
  headers: Record<string, HeaderValue>;
  body?: unknown;
  contentType: string | null;
  size: number | null;
}

export interface ResponsePart {
  statusCode: number | null;
  headers: Record<string, HeaderValue>;
  body?: unknown;
  contentType: string | null;
  size: number | null;
}

export interface TimingPhases {
  dns?: number | null;
  tcp?: number | null;
  tls?: number | null;
  wait?: number | null;
  total?: number | null;
  request?: number | null;
  download?: number | null;
  firstByte?: number | null;
}

/** Who made a call (docs/consumers.md): an id of the app's choosing, with an optional label. */
export interface ConsumerInfo {
  /** 1 to 256 characters: a customer, partner app or API key id */
  id: string;
  name?: string;
  group?: string;
}

/** One captured call in the shape of `POST /v1/buckets/{b}/ingest` (schemas/request-record.schema.ts). */
export interface CapturedRecord {
  sid: string;
  direction: 'in' | 'out';
  createdAt: string;
  environmentSid?: string | null;
  /** the route template when the framework knows it (`/users/:id`) */
  endpoint?: string | null;
  request: RequestPart;
  response: ResponsePart | null;
  timings: { duration: number; phases?: TimingPhases } | null;
  tags: RecordTag[];
  consumer?: ConsumerInfo;
}

/** Redaction rule as `GET /v1/buckets/{b}/sdk` serves it (docs/rules.md). */
export interface RemoteRedactionRule {
  sid?: string;
  field: string;
  /** `mask`, `remove`, `hash` or `replace` (the rules module's REDACTION_TYPES) */
  action: RedactionType;
  replacement?: string;
  environments?: string[] | null;
}

/** Exclusion rule as `GET /v1/buckets/{b}/sdk` serves it. */
export interface RemoteExclusionRule {
  sid?: string;
  path: string;
  method?: string | null;
  statusCode?: number | null;
  environments?: string[] | null;
}

/** A criteria exclusion from the SDK settings: `criteria` in the stream-view search language. */
export interface RemoteExclusionCriteria {
  sid?: string;
  criteria: string;
  environments?: string[] | null;
}

/** The bucket's SDK settings (`settings` of `GET /v1/buckets/{b}/sdk`). Every field may be missing. */
export interface RemoteSettings {
  enabled?: boolean;
  captureRequestBody?: boolean;
  captureResponseBody?: boolean;
  maxBodyBytes?: number;
  sampleRate?: number;
  interceptOutbound?: boolean;
  debug?: boolean;
}

export interface TaplineOptions {
  /** ingest listener base URL, e.g. `https://tapline.example.com:8081` */
  endpoint: string;
  /** bucket sid the records go to */
  bucketSid: string;
  /** an ingest token (scope `requests:write`) */
  token: string;
  /** where `GET /v1/buckets/{b}/sdk` is asked; default: `endpoint` */
  settingsEndpoint?: string;
  /** `environmentSid` of every record (6 lower-case letters/digits), e.g. `prod01` */
  environment?: string;
  /** tags added to every record */
  tags?: Record<string, string>;
  /**
   * The consumer of an incoming request, asked once its response has finished (so an auth
   * middleware has run): e.g. `(req) => req.user && { id: req.user.id, name: req.user.email }`.
   * `tapline.identify(req, …)` wins over it for the requests it names.
   */
  consumer?: (req: IncomingMessage) => ConsumerInfo | null | undefined;
  /** id of this SDK instance, sent to the settings endpoint; default: `node-<hostname>-<pid>` */
  clientId?: string;
  /** capture outgoing `fetch`/undici and `node:http(s)` calls (AND the bucket's `interceptOutbound`) */
  captureOutgoing?: boolean;
  /** body capture limit in bytes (the bucket's `maxBodyBytes` wins when smaller); default 65536 */
  maxBodyBytes?: number;
  /** content types whose bodies are captured (prefix match); default JSON, text, XML, form */
  bodyContentTypes?: string[];
  /** header names (lower case) never captured; default none (use client redactions instead) */
  dropHeaders?: string[];
  /** per-endpoint sampling: `{'/health': 0, 'GET /users/:id': 0.1}` (template or `METHOD template`) */
  sampling?: Record<string, number>;
  /** queue bound in bytes (estimated size of captured records); oldest dropped beyond. Default 16 MiB */
  maxQueueBytes?: number;
  /** records per batch; default 500 (ingest allows 1000) */
  batchSize?: number;
  /** bytes per batch before gzip; default 1 MiB (ingest allows 5 MiB) */
  batchBytes?: number;
  /** longest a record waits before its batch is sent; default 1000 ms */
  flushIntervalMs?: number;
  /** settings refresh period; default 60000 ms */
  settingsRefreshMs?: number;
  /** per-attempt HTTP timeout; default 10000 ms */
  requestTimeoutMs?: number;
  /** retry backoff base and cap; default 500 ms / 30000 ms */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** consecutive failures that open the circuit; default 5. Open time: 5 s doubling to 60 s */
  circuitThreshold?: number;
  circuitOpenMs?: number;
  circuitMaxOpenMs?: number;
  /** flush on SIGTERM and `beforeExit`; default true */
  handleProcessEvents?: boolean;
  /** longest the flush on SIGTERM/beforeExit waits; default 5000 ms */
  shutdownTimeoutMs?: number;
  /** the host's logger; debug lines only when `debug` (or the bucket's `debug`) is true */
  logger?: TaplineLogger;
  debug?: boolean;
  /** false: no capture, no network at all (e.g. in tests of the host) */
  enabled?: boolean;
}

export interface TaplineStats {
  captured: number;
  /** records not captured: sampled out, excluded, or disabled */
  skipped: number;
  excluded: number;
  /** records dropped because the queue was full (oldest first) */
  dropped: number;
  /** records sent and accepted (202) */
  sent: number;
  /** records the ingest refused (its `rejected` list, or a 4xx for the whole batch) */
  rejected: number;
  /** batches sent successfully, attempts that failed */
  batches: number;
  failures: number;
  retries: number;
  queuedRecords: number;
  queuedBytes: number;
  circuit: 'closed' | 'open' | 'half-open';
  settingsLoaded: boolean;
  /** client redaction and exclusion rules in force (from the last settings answer) */
  redactionRules: number;
  exclusionRules: number;
  /** Content rules in force: sensitive-data redactions and criteria exclusions that compiled */
  sensitiveRules: number;
  exclusionCriteria: number;
  /** errors caught inside the SDK (never thrown to the host) */
  internalErrors: number;
}
