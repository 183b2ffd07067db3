import { REQUESTS_INSERTED, type RequestRow } from '../shared/requests-row.js';
import type { StoredRecord } from './pipeline.js';
import { epochMs, rowBinaryEncoder } from './row-binary.js';

export type { RequestRow };

/** The RowBinary bytes of rows, in the insert's column order (REQUESTS_INSERT_COLUMNS). */
export const rowBinary = rowBinaryEncoder(REQUESTS_INSERTED);

function size(part: Record<string, unknown> | null | undefined): number {
  const s = part?.size;
  if (typeof s === 'number' && s >= 0) return Math.floor(s);
  const body = part?.body;
  if (body == null) return 0;
  return Buffer.byteLength(typeof body === 'string' ? body : JSON.stringify(body));
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The consumer columns of a record's `consumer` (docs/consumers.md); '' when it has none. */
function consumerColumns(c: unknown): Pick<RequestRow, 'consumer_id' | 'consumer_name' | 'consumer_group'> {
  if (typeof c !== 'object' || c === null) return { consumer_id: '', consumer_name: '', consumer_group: '' };
  const { id, name, group } = c as Record<string, unknown>;
  return { consumer_id: text(id), consumer_name: text(name), consumer_group: text(group) };
}

/**
 * The ClickHouse row of a record: indexed columns for queries plus the whole record as JSON,
 * `text` when given (the record's own JSON text, as a string or its UTF-8 bytes), else serialised.
 */
export function toRow(
  r: StoredRecord,
  partition: number,
  offset: number,
  text?: Buffer | string,
): RequestRow {
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
    // Epoch ms for RowBinary; the ISO text as received for JSON formats.
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
    // A serialised record is held as UTF-8 bytes, as a received line is: the row waits for its
    // block's insert, and a Buffer's bytes stay outside the garbage-collected heap meanwhile.
    record: text ?? Buffer.from(JSON.stringify(r)),
    kafka_partition: partition,
    kafka_offset: offset,
    ...consumerColumns(r.consumer),
  };
}
