import { validation } from '../../shared/errors.js';
import type { Override } from '../consumers/consumer-labels.js';

/**
 * The time model of metrics (docs/metrics.md): minute resolution. A range covers the minute
 * containing its start through the minute containing its end, both inclusive; intervals are
 * aligned in UTC (weeks start on Monday).
 */

export type Interval = 'minute' | 'hour' | 'day' | 'week' | 'month';
/** `route`: one group per HTTP method and endpoint template ("GET /orders/{id}"). */
export type GroupBy = 'endpoint' | 'method' | 'status' | 'environment' | 'route' | 'consumer' | 'group';

export const MINUTE = 60_000;
export const DEFAULT_RANGE_MS = 24 * 3600_000;
/** A series (throughput, response time) holds at most this many intervals; longer is a 400. */
export const MAX_INTERVALS = 1500;
/** DateTime('UTC') covers 1970-01-01 .. 2106-02-07. */
const MAX_DATETIME_S = 4_294_967_295 - 59;
/** 0001-01-01T00:00:00.000Z: the earliest instant toISOString() writes as a plain date-time. */
const EARLIEST_MS = -62_135_596_800_000;

/** What a metrics query is narrowed to, besides its time range. */
export interface MetricsFilters {
  accountSid: string;
  bucketSid?: string;
  /** any of these buckets (an MCP token limited to a bucket list) */
  bucketSids?: string[];
  environmentSid?: string;
  /** one endpoint template and/or HTTP method: read from `requests_minute` (the rollups lack them) */
  endpoint?: string;
  method?: string;
  /**
   * one consumer id and/or the consumers of one group (docs/consumers.md): read from
   * the consumers' minute rows, like a grouping by consumer or group
   */
  consumer?: string;
  group?: string;
  /** the names and groups set through the API, for `group` and a grouping by group */
  overrides?: readonly Override[];
}

/** A requested range: `start` floored to its minute, `end` = the last minute included (ms). */
export interface TimeRange {
  start: number;
  end: number;
}

/** A metrics question: its filters and its range. */
export interface Query extends MetricsFilters {
  range: TimeRange;
}

/** The filters and the minutes an aggregate query reads. */
export interface MetricsScope extends MetricsFilters {
  /** first minute read, epoch seconds (minute aligned, inclusive) */
  from: number;
  /** last minute read, epoch seconds (minute aligned, inclusive) */
  to: number;
}

function parseIso(value: string, field: string, endOfDay: boolean): number {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const ms = Date.parse(dateOnly ? `${value}T00:00:00.000Z` : value);
  if (!Number.isFinite(ms))
    throw validation(`${field} is not a valid ISO 8601 date`, { [field]: 'is invalid' });
  // A bare endDate means the whole of that UTC day.
  return dateOnly && endOfDay ? ms + 24 * 3600_000 - 1 : ms;
}

export const floorMinute = (ms: number): number => Math.floor(ms / MINUTE) * MINUTE;
export const iso = (ms: number): string => new Date(ms).toISOString();

/** The range as answers carry it: its first and its last millisecond. */
export const rangeOut = (r: TimeRange): { startDate: string; endDate: string } => ({
  startDate: iso(r.start),
  endDate: iso(r.end + MINUTE - 1),
});

/**
 * startDate/endDate (ISO 8601) to a minute range. Defaults: endDate = now, startDate = endDate
 * minus 24 hours. startDate after endDate is a 400.
 */
export function resolveRange(
  q: { startDate?: string; endDate?: string; start_date?: string; end_date?: string },
  now: number,
): TimeRange {
  const startRaw = q.startDate ?? q.start_date;
  const endRaw = q.endDate ?? q.end_date;
  const end = endRaw !== undefined ? parseIso(endRaw, 'endDate', true) : now;
  const start = startRaw !== undefined ? parseIso(startRaw, 'startDate', false) : end - DEFAULT_RANGE_MS;
  if (start > end) {
    throw validation('startDate is after endDate', {
      startDate: 'must not be after endDate',
      endDate: endRaw === undefined ? 'defaults to now' : 'must not be before startDate',
    });
  }
  return { start: floorMinute(start), end: floorMinute(end) };
}

/**
 * The range of equal length just before `r`, clamped to year 1: a very long range would otherwise
 * put it before year 0, which toISOString() writes as "-001544-…", not a date-time.
 */
export function previousRange(r: TimeRange): TimeRange {
  const length = r.end - r.start + MINUTE;
  return { start: Math.max(r.start - length, EARLIEST_MS), end: r.start - MINUTE };
}

/**
 * The scope of an aggregate query. `retentionDays` hides minutes the TTL may have half-removed
 * (a compensating row could outlive the row it compensates by a few hours).
 */
export function scopeOf(
  accountSid: string,
  range: TimeRange,
  opts: Omit<MetricsFilters, 'accountSid'> & { retentionDays: number; now: number },
): MetricsScope {
  const oldest = floorMinute(opts.now - opts.retentionDays * 24 * 3600_000) + MINUTE;
  const clamp = (s: number) => Math.min(Math.max(s, 0), MAX_DATETIME_S);
  return {
    accountSid,
    bucketSid: opts.bucketSid,
    ...(opts.bucketSids !== undefined ? { bucketSids: opts.bucketSids } : {}),
    environmentSid: opts.environmentSid,
    ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}),
    ...(opts.method !== undefined ? { method: opts.method.toUpperCase() } : {}),
    ...(opts.consumer !== undefined ? { consumer: opts.consumer } : {}),
    ...(opts.group !== undefined ? { group: opts.group } : {}),
    ...(opts.overrides !== undefined ? { overrides: opts.overrides } : {}),
    from: clamp(Math.max(range.start, oldest) / 1000),
    to: clamp(range.end / 1000),
  };
}

/** Start of the UTC interval containing `ms`. */
export function intervalStart(ms: number, iv: Interval): number {
  const d = new Date(ms);
  switch (iv) {
    case 'minute':
      return floorMinute(ms);
    case 'hour':
      return Math.floor(ms / 3600_000) * 3600_000;
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    case 'week':
      // ISO weeks: Monday 00:00 UTC.
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
}

export function nextInterval(startMs: number, iv: Interval): number {
  const d = new Date(startMs);
  switch (iv) {
    case 'minute':
      return startMs + MINUTE;
    case 'hour':
      return startMs + 3600_000;
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
    case 'week':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 7);
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
}

/** Every interval start from the one containing `range.start` to the one containing `range.end`. */
export function intervalsOf(range: TimeRange, iv: Interval): number[] {
  const out: number[] = [];
  for (let t = intervalStart(range.start, iv); t <= range.end; t = nextInterval(t, iv)) {
    if (out.length >= MAX_INTERVALS) {
      throw validation(`The range holds more than ${MAX_INTERVALS} ${iv} intervals`, {
        interval: `at most ${MAX_INTERVALS} intervals per series: shorten the range or use a longer interval`,
      });
    }
    out.push(t);
  }
  return out;
}

/** Period `i` of a series clipped to the range: [startTime, endTime) with endTime exclusive. */
export function periodBounds(range: TimeRange, starts: number[], iv: Interval, i: number) {
  const s = Math.max(starts[i]!, range.start);
  const e = Math.min(nextInterval(starts[i]!, iv), range.end + MINUTE);
  return { startTime: iso(s), endTime: iso(e), ms: e - s };
}
