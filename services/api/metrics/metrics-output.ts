import { HIST_GRID, PERCENTILE_LEVELS } from '../../shared/metrics-sql.js';
import type { EventMarker } from '../events/events.repository.js';
import {
  MINUTE,
  iso,
  periodBounds,
  rangeOut,
  type GroupBy,
  type Interval,
  type TimeRange,
} from './metrics-range.js';

/**
 * The answers of the metrics endpoints, the plain ones and the period ones under /metrics/shapeA
 * (docs/metrics.md), built from the rows of the SQL in metrics-queries.ts. Both tables (rollups and edge
 * minutes) may answer a row for the same key: rows are added up here before anything is judged or divided.
 */

export const TOP_ENDPOINTS = 10;

type Num = number | string | null;
const n = (v: Num | undefined): number => (v === null || v === undefined ? 0 : Number(v));
const round3 = (v: number): number => Math.round(v * 1000) / 1000;
const avgOf = (sum: Num | undefined, count: Num | undefined): number =>
  n(count) > 0 ? round3(n(sum) / n(count)) : 0;
const rate = (part: number, whole: number): number => (whole > 0 ? (100 * part) / whole : 0);

interface SumsRow {
  req_n: Num;
  err_n: Num;
  dur_sum: Num;
  dur_n: Num;
}

export type SummaryRow = SumsRow & { src: Num; k: string; v: string; code: Num; blk_n: Num; byte_n: Num };
export type SeriesRow = SumsRow & { tb: Num; status_class: Num };
export type PerformanceRow = SumsRow & {
  grp: string;
  byte_n: Num;
  pct: (number | null)[];
  /** grid index -> count (JSON keys are strings), when the histogram was asked for */
  hist?: Record<string, Num>;
};
export type PerformanceSeriesRow = { key: string; tb: Num; req_n: Num };
export type ErrorsRow = { src: Num; k: string; v: string; code: Num; req_n: Num; err_n: Num };
export type ComparisonRow = SumsRow & { cur: Num; blk_n: Num };
export type ResponseTimeRow = SumsRow & { tb: Num; dur_min: Num; dur_max: Num; pct: (number | null)[] };

/** Counts of one key, added up over the rows of both tables. */
interface Totals {
  requests: number;
  errors: number;
  durSum: number;
  durCount: number;
  blocked: number;
  bytes: number;
}

const zero = (): Totals => ({ requests: 0, errors: 0, durSum: 0, durCount: 0, blocked: 0, bytes: 0 });

function add(t: Totals, r: Partial<SumsRow> & { blk_n?: Num; byte_n?: Num }): void {
  t.requests += n(r.req_n);
  t.errors += n(r.err_n);
  t.durSum += n(r.dur_sum);
  t.durCount += n(r.dur_n);
  t.blocked += n(r.blk_n);
  t.bytes += n(r.byte_n);
}

function addTo<K>(map: Map<K, Totals>, key: K, r: Partial<SumsRow> & { blk_n?: Num; byte_n?: Num }): void {
  let t = map.get(key);
  if (!t) map.set(key, (t = zero()));
  add(t, r);
}

function statusClassKey(cls: number): string {
  return cls >= 1 && cls <= 5 ? `${cls}xx` : 'unknown';
}

/** Percentile labels in the order of `MERGE.percentiles`: '50', '95', '99'. */
const PERCENTILE_KEYS = PERCENTILE_LEVELS.map((l) => String(Math.round(l * 100)));

/* ---------------------------------------------------------------- plain answers */

/**
 * Rollup rows (src 0) per dim and value; edge-minute rows (src 1) per method (k), endpoint (v)
 * and status code: each counts once under its method, its status code and its endpoint.
 */
export function summaryOut(range: TimeRange, rows: SummaryRow[]) {
  const total = zero();
  const methods = new Map<string, Totals>();
  const statuses = new Map<string, Totals>();
  const byEndpoint = new Map<string, Totals>();
  for (const r of rows) {
    if (n(r.src) === 0) {
      if (r.k === 'method') addTo(methods, r.v, r);
      else if (r.k === 'status') {
        addTo(statuses, r.v, r);
        add(total, r);
      } else if (r.k === 'endpoint') addTo(byEndpoint, r.v, r);
    } else {
      addTo(methods, r.k, r);
      addTo(statuses, String(n(r.code)), r);
      addTo(byEndpoint, r.v, r);
      add(total, r);
    }
  }
  const requestsByMethod: Record<string, number> = {};
  for (const [method, t] of methods) if (t.requests > 0) requestsByMethod[method || 'UNKNOWN'] = t.requests;
  const requestsByStatus: Record<string, number> = {};
  for (const [code, t] of statuses) {
    if (t.requests <= 0) continue;
    const key = statusClassKey(Math.floor(Number(code) / 100));
    requestsByStatus[key] = (requestsByStatus[key] ?? 0) + t.requests;
  }
  const endpoints: { path: string; count: number; averageResponseTime: number }[] = [];
  for (const [path, t] of byEndpoint)
    if (t.requests > 0)
      endpoints.push({ path, count: t.requests, averageResponseTime: avgOf(t.durSum, t.durCount) });
  endpoints.sort((x, y) => y.count - x.count || (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  return {
    ...rangeOut(range),
    totalRequests: total.requests,
    totalErrors: total.errors,
    totalBlocked: total.blocked,
    errorRate: rate(total.errors, total.requests),
    averageResponseTime: avgOf(total.durSum, total.durCount),
    totalDataTransferred: total.bytes,
    requestsByMethod,
    requestsByStatus,
    topEndpoints: endpoints.slice(0, TOP_ENDPOINTS),
  };
}

/** One interval of a series: its start (ms) and its counts per status class. */
export interface SeriesPoint {
  start: number;
  classes: Map<number, Totals>;
}

/** Per interval and status class, every interval of `starts` present (no classes when empty). */
export function seriesOf(starts: number[], rows: SeriesRow[]): SeriesPoint[] {
  const byStart = new Map<number, Map<number, Totals>>();
  for (const r of rows) {
    const t = n(r.tb) * 1000;
    let m = byStart.get(t);
    if (!m) byStart.set(t, (m = new Map()));
    addTo(m, n(r.status_class), r);
  }
  return starts.map((t) => ({ start: t, classes: byStart.get(t) ?? new Map<number, Totals>() }));
}

export function throughputOut(range: TimeRange, iv: Interval, series: SeriesPoint[], events: EventMarker[]) {
  return {
    ...rangeOut(range),
    interval: iv,
    data: series.map(({ start, classes }) => {
      const t = zero();
      for (const c of classes.values()) {
        t.requests += c.requests;
        t.errors += c.errors;
        t.durSum += c.durSum;
        t.durCount += c.durCount;
      }
      return {
        timestamp: iso(start),
        requestCount: t.requests,
        errorCount: t.errors,
        averageResponseTime: avgOf(t.durSum, t.durCount),
      };
    }),
    events,
  };
}

/** Histogram bins per doubling of the duration: each bin spans a factor of about 1.41. */
const BINS_PER_DOUBLING = 2;
const HIST_ZERO_INDEX = -32768;

/**
 * A merged duration histogram (grid index -> count, `HIST_GRID` indexes per doubling) in coarse
 * bins of [from, to) milliseconds, from the first bin with a duration to the last, empty bins
 * between included; durations of 0 ms are the bin [0, 0].
 */
export function histogramBins(hist: Record<string, Num>): { from: number; to: number; count: number }[] {
  const per = HIST_GRID / BINS_PER_DOUBLING;
  const counts = new Map<number, number>();
  let zero = 0;
  for (const [key, value] of Object.entries(hist)) {
    const index = Number(key);
    const c = n(value);
    if (c <= 0) continue;
    if (index === HIST_ZERO_INDEX) zero += c;
    else {
      const bin = Math.floor(index / per);
      counts.set(bin, (counts.get(bin) ?? 0) + c);
    }
  }
  const out = zero > 0 ? [{ from: 0, to: 0, count: zero }] : [];
  if (counts.size === 0) return out;
  const bins = [...counts.keys()];
  const bound = (bin: number) => round3(2 ** (bin / BINS_PER_DOUBLING));
  for (let b = Math.min(...bins); b <= Math.max(...bins); b++)
    out.push({ from: bound(b), to: bound(b + 1), count: counts.get(b) ?? 0 });
  return out;
}

export function performanceOut(
  range: TimeRange,
  groupBy: GroupBy,
  rows: PerformanceRow[],
  series?: { interval: Interval; starts: number[]; rows: PerformanceSeriesRow[] },
) {
  const counts = new Map<string, Map<number, number>>();
  for (const r of series?.rows ?? []) {
    let m = counts.get(r.key);
    if (!m) counts.set(r.key, (m = new Map()));
    const t = n(r.tb) * 1000;
    m.set(t, (m.get(t) ?? 0) + n(r.req_n));
  }
  return {
    ...rangeOut(range),
    groupBy,
    ...(series ? { interval: series.interval } : {}),
    metrics: rows.map((r) => {
      const sp = r.grp.indexOf(' ');
      return {
        group: r.grp,
        ...(groupBy === 'route' ? { method: r.grp.slice(0, sp), endpoint: r.grp.slice(sp + 1) } : {}),
        requestCount: n(r.req_n),
        errorRate: rate(n(r.err_n), n(r.req_n)),
        averageResponseTime: avgOf(r.dur_sum, r.dur_n),
        p50ResponseTime: round3(n(r.pct[0])),
        p95ResponseTime: round3(n(r.pct[1])),
        p99ResponseTime: round3(n(r.pct[2])),
        bytes: n(r.byte_n),
        averageBytes: n(r.req_n) > 0 ? Math.round(n(r.byte_n) / n(r.req_n)) : 0,
        ...(series ? { throughput: series.starts.map((t) => counts.get(r.grp)?.get(t) ?? 0) } : {}),
        ...(r.hist ? { histogram: histogramBins(r.hist) } : {}),
      };
    }),
  };
}

/**
 * Rollup rows (src 0): dim `endpoint` (requests per endpoint; their sum is the total) and `error`
 * (value "<status> <endpoint>"); edge-minute rows (src 1) per status code and endpoint.
 */
export function errorsOut(
  range: TimeRange,
  rows: ErrorsRow[],
  statusCode: number | undefined,
  limit: number,
) {
  let totalRequests = 0;
  const byEndpoint = new Map<string, { requests: number; errors: number; statuses: Map<number, number> }>();
  const endpoint = (path: string) => {
    let e = byEndpoint.get(path);
    if (!e) byEndpoint.set(path, (e = { requests: 0, errors: 0, statuses: new Map() }));
    return e;
  };
  // Errors per (status, endpoint), added up over both tables before they are judged.
  const errorCounts = new Map<string, { status: number; path: string; errors: number }>();
  const addErrors = (status: number, path: string, errors: number) => {
    const key = `${status} ${path}`;
    const e = errorCounts.get(key);
    if (e) e.errors += errors;
    else errorCounts.set(key, { status, path, errors });
  };
  for (const r of rows) {
    if (n(r.src) === 0) {
      if (r.k === 'endpoint') {
        // Every request has one endpoint row: their sum is the total.
        totalRequests += n(r.req_n);
        endpoint(r.v).requests += n(r.req_n);
      } else if (r.k === 'error') {
        const sp = r.v.indexOf(' ');
        addErrors(Number(r.v.slice(0, sp)), r.v.slice(sp + 1), n(r.err_n));
      }
    } else {
      totalRequests += n(r.req_n);
      endpoint(r.v).requests += n(r.req_n);
      if (n(r.code) >= 400) addErrors(n(r.code), r.v, n(r.err_n));
    }
  }
  let totalErrors = 0;
  const errorsByStatus: Record<string, number> = {};
  for (const { status, path, errors } of errorCounts.values()) {
    // A statusCode filter narrows the errors counted, not the requests they are a rate of.
    if (errors <= 0 || (statusCode !== undefined && status !== statusCode)) continue;
    totalErrors += errors;
    errorsByStatus[String(status)] = (errorsByStatus[String(status)] ?? 0) + errors;
    const e = endpoint(path);
    e.errors += errors;
    e.statuses.set(status, (e.statuses.get(status) ?? 0) + errors);
  }
  const errorsByEndpoint = [...byEndpoint.entries()]
    .filter(([, e]) => e.errors > 0)
    .map(([path, e]) => ({
      endpoint: path,
      errorCount: e.errors,
      errorRate: rate(e.errors, e.requests),
      mostCommonErrors: [...e.statuses.entries()].sort((x, y) => y[1] - x[1] || x[0] - y[0]).map(([c]) => c),
    }))
    .sort((x, y) => y.errorCount - x.errorCount || (x.endpoint < y.endpoint ? -1 : 1))
    .slice(0, limit);
  return {
    ...rangeOut(range),
    totalErrors,
    errorRate: rate(totalErrors, totalRequests),
    errorsByStatus,
    errorsByEndpoint,
  };
}

/* --------------------------------------------- comparison and period answers (/metrics/shapeA) */

/** The range against `previous` (rows with `cur` 1 / 0). */
export function comparisonSummaryOut(range: TimeRange, previous: TimeRange, rows: ComparisonRow[]) {
  const period = (c: number): Totals | undefined => {
    const own = rows.filter((r) => n(r.cur) === c);
    if (own.length === 0) return undefined;
    const t = zero();
    for (const r of own) add(t, r);
    return t;
  };
  const cur = period(1);
  const prev = period(0);
  const counted = (get: (t: Totals | undefined) => number) => {
    const c = get(cur);
    const p = get(prev);
    return {
      current: { amount: c, units: 'requests' },
      previous: { amount: p, units: 'requests' },
      change: { amount: p > 0 ? ((c - p) / p) * 100 : null, units: 'percent' },
    };
  };
  const avg = (t: Totals | undefined): number | null =>
    t !== undefined && t.durCount > 0 ? avgOf(t.durSum, t.durCount) : null;
  const c = avg(cur);
  const p = avg(prev);
  return {
    ...rangeOut(range),
    previousStartDate: iso(previous.start),
    previousEndDate: iso(previous.end + MINUTE - 1),
    requests: counted((t) => t?.requests ?? 0),
    responseTime: {
      current: { amount: c, units: 'milliseconds' },
      previous: { amount: p, units: 'milliseconds' },
      change: { amount: c !== null && p !== null ? round3(c - p) : null, units: 'milliseconds' },
    },
    errors: counted((t) => t?.errors ?? 0),
    blocked: counted((t) => t?.blocked ?? 0),
  };
}

export function throughputPeriodsOut(
  range: TimeRange,
  iv: Interval,
  units: 'rpm' | 'rps',
  series: SeriesPoint[],
  events: EventMarker[],
) {
  const per = units === 'rps' ? 1000 : MINUTE;
  const block = (byClass: Map<number, number>, ms: number) => {
    let total = 0;
    for (const c of byClass.values()) total += c;
    const ca = (count: number) => ({ count, average: ms > 0 ? (count * per) / ms : 0 });
    return {
      averageUnits: units,
      total: ca(total),
      httpStatus: {
        '200': ca(byClass.get(2) ?? 0),
        '300': ca(byClass.get(3) ?? 0),
        '400': ca(byClass.get(4) ?? 0),
        '500': ca(byClass.get(5) ?? 0),
      },
    };
  };
  const starts = series.map((x) => x.start);
  const overall = new Map<number, number>();
  const periods = series.map(({ classes }, i) => {
    const byClass = new Map<number, number>();
    for (const [cls, t] of classes) {
      byClass.set(cls, t.requests);
      overall.set(cls, (overall.get(cls) ?? 0) + t.requests);
    }
    const b = periodBounds(range, starts, iv, i);
    return { startTime: b.startTime, endTime: b.endTime, ...block(byClass, b.ms) };
  });
  const rangeMs = range.end + MINUTE - range.start;
  return {
    interval: iv,
    summary: {
      startTime: iso(range.start),
      endTime: iso(range.end + MINUTE),
      ...block(overall, rangeMs),
    },
    periods,
    events,
  };
}

/** Rows per interval start (tb) plus one for the whole range (tb NULL). */
export function responseTimePeriodsOut(
  range: TimeRange,
  iv: Interval,
  starts: number[],
  rows: ResponseTimeRow[],
  events: EventMarker[],
) {
  const byStart = new Map<number, ResponseTimeRow>();
  let total: ResponseTimeRow | undefined;
  for (const r of rows) {
    if (r.tb === null) total = r;
    else byStart.set(n(r.tb) * 1000, r);
  }
  const periodOf = (r: ResponseTimeRow | undefined) => ({
    requests: n(r?.req_n),
    maximum: round3(n(r?.dur_max)),
    minimum: round3(n(r?.dur_min)),
    average: avgOf(r?.dur_sum, r?.dur_n),
  });
  const periods = starts.map((t, i) => {
    const r = byStart.get(t);
    const b = periodBounds(range, starts, iv, i);
    return {
      startTime: b.startTime,
      endTime: b.endTime,
      ...periodOf(r),
      percentiles: Object.fromEntries(PERCENTILE_KEYS.map((l, k) => [l, { value: round3(n(r?.pct[k])) }])),
    };
  });
  // Maximum, minimum and median of each percentile over the periods that had durations.
  const measured = starts.map((t) => byStart.get(t)).filter((r) => r !== undefined && n(r.dur_n) > 0);
  const spread = (k: number) => {
    const v = measured.map((r) => round3(n(r!.pct[k]))).sort((x, y) => x - y);
    if (v.length === 0) return { maximum: 0, minimum: 0, median: 0 };
    const mid = Math.floor(v.length / 2);
    const median = v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
    return { maximum: v[v.length - 1]!, minimum: v[0]!, median: round3(median) };
  };
  return {
    interval: iv,
    summary: {
      startTime: iso(range.start),
      endTime: iso(range.end + MINUTE),
      ...periodOf(total),
      percentiles: Object.fromEntries(
        PERCENTILE_KEYS.map((l, k) => [l, { value: round3(n(total?.pct[k])), ...spread(k) }]),
      ),
    },
    periods,
    events,
  };
}

/** `last` (epoch s) per bucket as an ISO date-time. */
export function lastTrafficOut(rows: { b: string; last: Num }[]): Map<string, string> {
  return new Map(rows.map((r) => [r.b, iso(n(r.last) * 1000)]));
}
