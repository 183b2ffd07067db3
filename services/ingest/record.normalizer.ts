import type { ErrorObject, ValidateFunction } from 'ajv';
import { errorDetails, validator } from '../shared/schemas.js';
import { newSid } from '../shared/ids.js';
import { depthField, depthPhrase, tooDeepAt } from '../shared/json-depth.js';

export interface Rejection {
  index: number;
  error: { code: string; message: string; details: Record<string, unknown> };
}

export type IngestRecord = Record<string, unknown> & {
  sid: string;
  createdAt: string;
  receivedAt: string;
  request: Record<string, unknown>;
};

let validate: ValidateFunction | undefined;

function reject(index: number, message: string, details: Record<string, unknown>): Rejection {
  return { index, error: { code: 'VALIDATION_ERROR', message, details } };
}

/**
 * Validates each record on its own (a bad record rejects only itself) and fills the fields the
 * server owns when absent: sid, createdAt, receivedAt, direction, environmentSid, firewall.
 * `receivedAt` is always the server's receive time unless the client sent one. A record nesting
 * deeper than MAX_JSON_DEPTH levels (counted from the record) is rejected before anything walks
 * it. `acceptedIndex[i]` is the position in `input` of `accepted[i]`.
 */
export function normalizeRecords(
  input: unknown[],
  bucketSid: string,
  now = new Date(),
  window?: CreatedAtWindow,
): { accepted: IngestRecord[]; rejected: Rejection[]; acceptedIndex: number[] } {
  validate ??= validator('ingestRecord');
  const receivedAt = now.toISOString();
  const accepted: IngestRecord[] = [];
  const acceptedIndex: number[] = [];
  const rejected: Rejection[] = [];
  input.forEach((raw, index) => {
    const deep = tooDeepAt(raw);
    if (deep) {
      rejected.push(
        reject(index, `Record ${depthPhrase()}`, { [depthField(deep, '') || '(body)']: depthPhrase() }),
      );
      return;
    }
    if (!validate!(raw)) {
      rejected.push(reject(index, 'Record is invalid', errorDetails(validate!.errors as ErrorObject[])));
      return;
    }
    const r = raw as Record<string, unknown>;
    if (r.bucketSid !== undefined && r.bucketSid !== bucketSid) {
      rejected.push(
        reject(index, 'Record names another bucket', { bucketSid: 'must match the bucket in the path' }),
      );
      return;
    }
    const request = r.request as Record<string, unknown>;
    if (request.path == null && typeof request.url === 'string') fillFromUrl(request, request.url);
    r.sid ??= newSid('request');
    r.bucketSid = bucketSid;
    // Every instant is stored and answered as UTC `YYYY-MM-DDTHH:mm:ss.sssZ`, whatever RFC 3339
    // form (offset, no or more fractional digits) the client sent.
    r.receivedAt = typeof r.receivedAt === 'string' ? utcIso(r.receivedAt) : receivedAt;
    r.createdAt = typeof r.createdAt === 'string' ? utcIso(r.createdAt) : r.receivedAt;
    const outside = window && outsideWindow(r.createdAt as string, now, window);
    if (outside) {
      rejected.push(reject(index, 'Record createdAt is outside the accepted window', { createdAt: outside }));
      return;
    }
    r.direction ??= 'in';
    r.environmentSid ??= null;
    r.contextSid ??= null;
    r.firewall ??= { blocked: false };
    accepted.push(r as IngestRecord);
    acceptedIndex.push(index);
  });
  return { accepted, rejected, acceptedIndex };
}

/**
 * The instants ingest accepts for `createdAt`: from `retentionDays` before now (older rows would be
 * dropped by the TTL at once) to one day ahead (clock skew). Every month stored is a ClickHouse
 * partition, so far-away dates would make a partition each.
 */
export interface CreatedAtWindow {
  retentionDays: number;
}

const FUTURE_MS = 86_400_000;

/** Why `createdAt` is outside the window, or undefined when it is inside. */
function outsideWindow(createdAt: string, now: Date, window: CreatedAtWindow): string | undefined {
  const t = Date.parse(createdAt);
  const oldest = now.getTime() - window.retentionDays * 86_400_000;
  if (!Number.isFinite(t) || t < oldest)
    return `must not be older than the retention (${window.retentionDays} days, ${new Date(oldest).toISOString()})`;
  if (t > now.getTime() + FUTURE_MS) return 'must not be more than 1 day in the future';
  return undefined;
}

/** An RFC 3339 instant (already schema-checked) in UTC with milliseconds. */
function utcIso(v: string): string {
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : v;
}

/** host, path, port and queryString from an absolute URL, for clients that only send `url`. */
export function fillFromUrl(request: Record<string, unknown>, url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  request.host ??= u.hostname;
  request.path = u.pathname;
  request.port ??= u.port
    ? Number(u.port)
    : u.protocol === 'https:'
      ? 443
      : u.protocol === 'http:'
        ? 80
        : null;
  if (request.queryString == null) {
    const qs: Record<string, string | string[]> = {};
    for (const [k, v] of u.searchParams) {
      const prev = qs[k];
      qs[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    request.queryString = qs;
  }
  return true;
}
