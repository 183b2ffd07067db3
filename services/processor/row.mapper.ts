import type { StoredRecord } from './pipeline.js';
import { epochMs } from './row-binary.js';

export interface RequestRow {
  account_sid: string;
  bucket_sid: string;
  sid: string;
  environment_sid: string;
  context_sid: string;
  direction: string;
  created_at: string;
  received_at: string;
  /** the two instants as epoch milliseconds (the RowBinary insert writes DateTime64 as Int64) */
  created_at_ms: number;
  received_at_ms: number;
  method: string;
  host: string;
  path: string;
  endpoint: string;
  status_code: number;
  duration: number | null;
  request_size: number;
  response_size: number;
  blocked: number;
  tags: Record<string, string>;
  /**
   * JSON text of the stored record (always an object); UTF-8 bytes when it is the record's line of
   * a version 2 Kafka message, stored as it came (the API fills accountSid, bucketSid and endpoint
   * from their columns).
   */
  record: string | Buffer;
  kafka_partition: number;
  kafka_offset: number;
}

function size(part: Record<string, unknown> | null | undefined): number {
  const s = part?.size;
  if (typeof s === 'number' && s >= 0) return Math.floor(s);
  const body = part?.body;
  if (body == null) return 0;
  return Buffer.byteLength(typeof body === 'string' ? body : JSON.stringify(body));
}

/**
 * The ClickHouse row of a record: indexed columns for queries plus the whole record as JSON,
 * `text` when given (the record's own JSON text, unchanged by the steps), else serialised.
 */
export function toRow(r: StoredRecord, partition: number, offset: number, text?: Buffer): RequestRow {
  const tags: Record<string, string> = {};
  if (Array.isArray(r.tags))
    for (const t of r.tags as { key: string; value: string }[]) tags[t.key] = t.value;
  const duration = r.timings?.duration;
  const method = r.request.method;
  // Sizes are written back so the stored record and the byte counters agree.
  const requestSize = size(r.request);
  const responseSize = size(r.response);
  const createdMs = epochMs(r.createdAt);
  const receivedMs = epochMs(r.receivedAt);
  if (Number.isNaN(createdMs) || Number.isNaN(receivedMs))
    throw new Error('createdAt or receivedAt is not a date-time');
  return {
    account_sid: r.accountSid,
    bucket_sid: r.bucketSid,
    sid: r.sid,
    environment_sid: typeof r.environmentSid === 'string' ? r.environmentSid : '',
    context_sid: typeof r.contextSid === 'string' ? r.contextSid : '',
    direction: typeof r.direction === 'string' ? r.direction : 'in',
    // ISO strings for a ClickHouse server (JSONEachRow, best_effort); epoch ms for RowBinary.
    created_at: r.createdAt,
    received_at: r.receivedAt,
    created_at_ms: createdMs,
    received_at_ms: receivedMs,
    method: typeof method === 'string' ? method.toUpperCase() : '',
    host: typeof r.request.host === 'string' ? r.request.host : '',
    path: typeof r.request.path === 'string' ? r.request.path : '',
    endpoint: r.endpoint ?? '',
    status_code: typeof r.response?.statusCode === 'number' ? r.response.statusCode : 0,
    duration: typeof duration === 'number' && Number.isFinite(duration) ? duration : null,
    request_size: requestSize,
    response_size: responseSize,
    blocked: (r.firewall as { blocked?: boolean } | undefined)?.blocked ? 1 : 0,
    tags,
    record: text ?? JSON.stringify(r),
    kafka_partition: partition,
    kafka_offset: offset,
  };
}
