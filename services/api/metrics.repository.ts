import type pg from 'pg';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import { validation } from '../shared/errors.js';
import { MERGE } from '../shared/metrics-sql.js';
import { TABLES } from '../shared/tables.js';

/**
 * Metrics (spec 2.10, 4.8) read from aggregates only: `requests_rollup`, requests_minute rolled up
 * per dimension into 1-minute, 10-minute, hour and day blocks (002_metrics.sql). Counts and sums
 * are exact; percentiles are picked from the duration histograms of the blocks in range, summed
 * (never averaged; 004_duration_histograms.sql). The SQL builders are exported so
 * test/bench/metrics-load.ts times exactly what the API runs.
 *
 * Time model: metrics have minute resolution. A range covers the minute containing its start
 * through the minute containing its end, both inclusive; intervals are aligned in UTC (weeks start
 * on Monday).
 */

export type Interval = 'minute' | 'hour' | 'day' | 'week' | 'month';
export type GroupBy = 'endpoint' | 'method' | 'status' | 'environment';

export const DEFAULT_RANGE_MS = 24 * 3600_000;
/** A series (throughput, response time) holds at most this many intervals; longer is a 400. */
export const MAX_INTERVALS = 1500;
export const TOP_ENDPOINTS = 10;
export const MAX_EVENTS = 100;

const MINUTE = 60_000;
/** DateTime('UTC') covers 1970-01-01 .. 2106-02-07. */
const MAX_DATETIME_S = 4_294_967_295 - 59;

export interface MetricsScope {
  accountSid: string;
  bucketSid?: string;
  /** any of these buckets (an MCP token limited to a bucket list) */
  bucketSids?: string[];
  environmentSid?: string;
  /** one endpoint template and/or HTTP method: read from `requests_minute` (the rollups lack them) */
  endpoint?: string;
  method?: string;
  /** first minute read, epoch seconds (minute aligned, inclusive) */
  from: number;
  /** last minute read, epoch seconds (minute aligned, inclusive) */
  to: number;
}

export interface Sql {
  query: string;
  query_params: Record<string, unknown>;
}

/** A requested range: `start` floored to its minute, `end` = the last minute included (ms). */
export interface TimeRange {
  start: number;
  end: number;
}

/* ---------------------------------------------------------------- range and intervals */

function parseIso(value: string, field: string, endOfDay: boolean): number {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const ms = Date.parse(dateOnly ? `${value}T00:00:00.000Z` : value);
  if (!Number.isFinite(ms))
    throw validation(`${field} is not a valid ISO 8601 date`, { [field]: 'is invalid' });
  // A bare endDate means the whole of that UTC day.
  return dateOnly && endOfDay ? ms + 24 * 3600_000 - 1 : ms;
}

const floorMinute = (ms: number): number => Math.floor(ms / MINUTE) * MINUTE;
/** 0001-01-01T00:00:00.000Z: the earliest instant toISOString() writes as a plain date-time. */
const EARLIEST_MS = -62_135_596_800_000;

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
 * The scope of an aggregate query. `retentionDays` hides minutes the TTL may have half-removed
 * (a compensating row could outlive the row it compensates by a few hours).
 */
export function scopeOf(
  accountSid: string,
  range: TimeRange,
  opts: {
    bucketSid?: string;
    bucketSids?: string[];
    environmentSid?: string;
    endpoint?: string;
    method?: string;
    retentionDays: number;
    now: number;
  },
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

/* ---------------------------------------------------------------- SQL builders */

/**
 * Block lengths in minutes: 10, 60 and 1440 are rows of `requests_rollup` (002_metrics.sql);
 * 1 is `requests_minute` itself, used for the single minutes at the edges of a range.
 */
export const LEVELS = [1440, 60, 10, 1] as const;
const LEVEL_OF: Record<Interval, number> = { minute: 1, hour: 60, day: 1440, week: 1440, month: 1440 };

/** A run of blocks of one level: starts of the first and last block, epoch seconds, inclusive. */
export interface Segment {
  level: number;
  from: number;
  to: number;
}

/**
 * Covers the minutes [from, to] (epoch seconds, inclusive) with the largest whole blocks inside
 * and finer blocks at both edges: at most 7 segments, each block inside the range. `maxLevel`
 * keeps blocks from straddling a series' interval boundaries.
 */
export function segmentsOf(from: number, to: number, maxLevel = 1440): Segment[] {
  const levels = LEVELS.filter((l) => l <= maxLevel);
  const cover = (s: number, e: number, i: number): Segment[] => {
    if (s >= e) return [];
    const level = levels[i]!;
    if (i === levels.length - 1) return [{ level, from: s * 60, to: (e - level) * 60 }];
    const a = Math.ceil(s / level) * level;
    const b = Math.floor(e / level) * level;
    if (a >= b) return cover(s, e, i + 1);
    return [...cover(s, a, i + 1), { level, from: a * 60, to: (b - level) * 60 }, ...cover(b, e, i + 1)];
  };
  return cover(Math.floor(from / 60), Math.floor(to / 60) + 1, 0);
}

/** The interval start of a block starting at `col` (a rollup block never straddles an interval). */
const BUCKET_EXPR: Record<Interval, (col: string) => string> = {
  minute: (c) => c,
  hour: (c) => `toStartOfHour(${c})`,
  day: (c) => `toStartOfDay(${c})`,
  week: (c) => `toDateTime(toMonday(${c}), 'UTC')`,
  month: (c) => `toDateTime(toStartOfMonth(${c}), 'UTC')`,
};

type Dim = 'all' | 'method' | 'status' | 'endpoint' | 'error';

/** groupBy -> (rollup dimension and group expression, the same group from a requests_minute row). */
const GROUPS: Record<GroupBy, { dim: Dim; rollup: string; minute: string }> = {
  endpoint: { dim: 'endpoint', rollup: 'value', minute: 'endpoint' },
  method: { dim: 'method', rollup: 'value', minute: 'toString(method)' },
  status: { dim: 'status', rollup: 'value', minute: 'toString(status_code)' },
  environment: { dim: 'all', rollup: 'environment_sid', minute: 'toString(environment_sid)' },
};

/**
 * Settings of every metrics query. The implicit min/max/count projection is analysed for every
 * table a query reads, with the old interpreter (chDB 26.7 logs it); none of these queries can use
 * it, and skipping it saves ~0.5-2 ms of planning per query (docs/metrics.md, "Query time").
 */
const QUERY_SETTINGS = 'SETTINGS optimize_use_implicit_projections = 0';

/**
 * The blocks covering a scope's minutes: whole 10-minute, hour and day blocks of `requests_rollup`
 * (`rollup`, a condition on level and t) and the single edge minutes of `requests_minute`
 * (`minutes`, a condition on minute); '' when a table has no block in range. `filters` scopes
 * both tables (account, bucket, environment). `also`: more ranges read the same way (the previous
 * period of a comparison).
 */
interface Blocks {
  params: Record<string, unknown>;
  filters: string;
  rollup: string;
  minutes: string;
}

function blocksOf(s: MetricsScope, maxLevel = 1440, also: MetricsScope[] = []): Blocks {
  const params: Record<string, unknown> = { a: s.accountSid };
  const filters = ['account_sid = {a:String}'];
  if (s.bucketSid !== undefined) {
    filters.push('bucket_sid = {b:String}');
    params.b = s.bucketSid;
  }
  if (s.bucketSids !== undefined) {
    filters.push('bucket_sid IN {bs:Array(String)}');
    params.bs = s.bucketSids;
  }
  if (s.environmentSid !== undefined) {
    filters.push('environment_sid = {e:String}');
    params.e = s.environmentSid;
  }
  // The rollups have no endpoint or method column: a scope narrowed to them reads every minute of
  // `requests_minute` (one segment), which costs more than the rollups (docs/metrics.md).
  if (s.endpoint !== undefined || s.method !== undefined) maxLevel = 1;
  if (s.endpoint !== undefined) {
    filters.push('endpoint = {ep:String}');
    params.ep = s.endpoint;
  }
  if (s.method !== undefined) {
    filters.push('toString(method) = {mt:String}');
    params.mt = s.method;
  }
  const rollup: string[] = [];
  const minutes: string[] = [];
  let k = 0;
  for (const scope of [s, ...also]) {
    if (scope.from > scope.to) continue;
    for (const seg of segmentsOf(scope.from, scope.to, maxLevel)) {
      params[`f${k}`] = seg.from;
      params[`t${k}`] = seg.to;
      const range = (col: string) =>
        `${col} >= toDateTime({f${k}:UInt32}, 'UTC') AND ${col} <= toDateTime({t${k}:UInt32}, 'UTC')`;
      if (seg.level === 1) minutes.push(`(${range('minute')})`);
      else rollup.push(`(level = ${seg.level} AND ${range('t')})`);
      k++;
    }
  }
  return {
    params,
    filters: filters.join(' AND '),
    rollup: rollup.join(' OR '),
    minutes: minutes.join(' OR '),
  };
}

/**
 * Each table aggregated on its own, `UNION ALL`: a rollup SELECT over `b.rollup` and a
 * requests_minute SELECT over `b.minutes`, each `GROUP BY` its own keys; a branch without blocks is
 * left out (an empty range answers no rows). The two results are added up by the caller: in
 * JavaScript for counts (summary, throughput, errors), in an outer query for duration histograms.
 *
 * Measured (docs/metrics.md, "Query time"): 10-15% cheaper for the count endpoints than one
 * GROUP BY over the rows of both tables with an `ARRAY JOIN` turning every requests_minute row into
 * one row per rollup dimension. chDB's cost is mostly per query, per table, per part and per key
 * range read, not per row: keep the SELECTs and their key ranges few.
 */
function branches(
  b: Blocks,
  rollup: { select: string; where: string; groupBy: string },
  minute: { select: string; groupBy: string },
): string {
  const parts: string[] = [];
  if (b.rollup !== '')
    parts.push(`SELECT ${rollup.select}
      FROM ${TABLES.requestsRollup}
      WHERE ${b.filters} AND ${rollup.where} AND (${b.rollup})
      GROUP BY ${rollup.groupBy}`);
  // An empty range still needs one valid SELECT: requests_minute has every filter's column
  // (the rollups lack endpoint and method), and `0` makes it read nothing.
  if (b.minutes !== '' || b.rollup === '')
    parts.push(`SELECT ${minute.select}
      FROM ${TABLES.requestsMinute}
      WHERE ${b.filters} AND (${b.minutes || '0'})
      GROUP BY ${minute.groupBy}`);
  return parts.join('\n      UNION ALL ');
}

// NOTE: result aliases never reuse a column name (`sum(errors) AS errors` would make
// MERGE.errorRate's `sum(errors)` an aggregate inside an aggregate).
const SUMS = `${MERGE.requests} AS req_n, ${MERGE.errors} AS err_n, ${MERGE.durationSum} AS dur_sum,
  ${MERGE.durationCount} AS dur_n`;

/**
 * Summary: `src` 0 rows are rollup rows per (dim, value) for dims method, status and endpoint;
 * `src` 1 rows are the edge minutes per (method, status code, endpoint). Totals are the sum of
 * every status row (each request has exactly one status row), so the `all` rows are not read.
 */
export function summarySql(s: MetricsScope): Sql {
  const b = blocksOf(s);
  const sums = `${SUMS}, ${MERGE.blocked} AS blk_n, ${MERGE.bytes} AS byte_n`;
  return {
    query: `${branches(
      b,
      {
        select: `0 AS src, dim AS k, value AS v, toUInt16(0) AS code, ${sums}`,
        where: "dim IN ('method', 'status', 'endpoint')",
        groupBy: 'dim, value',
      },
      { select: `1, method, endpoint, status_code, ${sums}`, groupBy: 'method, status_code, endpoint' },
    )}
      ${QUERY_SETTINGS}`,
    query_params: b.params,
  };
}

/** Per interval start (epoch s) and status class: counts and duration sums (throughput, both shapes). */
export function seriesSql(s: MetricsScope, iv: Interval): Sql {
  const b = blocksOf(s, LEVEL_OF[iv]);
  return {
    query: `${branches(
      b,
      {
        select: `toUInt32(${BUCKET_EXPR[iv]('t')}) AS tb, intDiv(toUInt16OrZero(value), 100) AS status_class, ${SUMS}`,
        where: "dim = 'status'",
        groupBy: 'tb, status_class',
      },
      {
        select: `toUInt32(${BUCKET_EXPR[iv]('minute')}) AS tb, intDiv(status_code, 100) AS status_class, ${SUMS}`,
        groupBy: 'tb, status_class',
      },
    )}
      ${QUERY_SETTINGS}`,
    query_params: b.params,
  };
}

/**
 * Duration histograms are summed in ClickHouse, not in JavaScript: the two tables' rows of the
 * blocks go through one outer GROUP BY (`key`), which sums every histogram once.
 */
function digestSource(
  b: Blocks,
  dim: Dim,
  columns: string,
  key?: { rollup: string; minute: string },
): string {
  const parts: string[] = [];
  if (b.rollup !== '')
    parts.push(`SELECT ${key ? `${key.rollup} AS key, ` : ''}t, ${columns}
      FROM ${TABLES.requestsRollup}
      WHERE ${b.filters} AND dim = '${dim}' AND (${b.rollup})`);
  // An empty range still needs one valid SELECT: requests_minute has every filter's column
  // (the rollups lack endpoint and method), and `0` makes it read nothing.
  if (b.minutes !== '' || b.rollup === '')
    parts.push(`SELECT ${key ? `${key.minute} AS key, ` : ''}minute AS t, ${columns}
      FROM ${TABLES.requestsMinute}
      WHERE ${b.filters} AND (${b.minutes || '0'})`);
  return `(${parts.join('\n      UNION ALL ')})`;
}

const COUNT_COLUMNS = 'requests, errors, duration_sum, duration_count';

/** Per interval plus the whole range (tb NULL): counts, min/max/avg and merged percentiles. */
export function responseTimeSql(s: MetricsScope, iv: Interval): Sql {
  const b = blocksOf(s, LEVEL_OF[iv]);
  const src = digestSource(b, 'all', `${COUNT_COLUMNS}, duration_hist, duration_min, duration_max`);
  return {
    query: `SELECT toUInt32(${BUCKET_EXPR[iv]('t')}) AS tb, ${SUMS},
              ${MERGE.min} AS dur_min, ${MERGE.max} AS dur_max, ${MERGE.percentiles} AS pct
            FROM ${src}
            GROUP BY GROUPING SETS ((tb), ())
            ORDER BY tb
            SETTINGS group_by_use_nulls = 1, optimize_use_implicit_projections = 0`,
    query_params: b.params,
  };
}

export function performanceSql(s: MetricsScope, groupBy: GroupBy, limit: number): Sql {
  const g = GROUPS[groupBy];
  const b = blocksOf(s);
  const src = digestSource(b, g.dim, `${COUNT_COLUMNS}, duration_hist, duration_min, duration_max`, g);
  return {
    query: `SELECT key AS grp, ${SUMS}, ${MERGE.percentiles} AS pct
            FROM ${src}
            GROUP BY grp
            HAVING req_n > 0
            ORDER BY req_n DESC, grp
            LIMIT {limit:UInt32}
            ${QUERY_SETTINGS}`,
    query_params: { ...b.params, limit },
  };
}

/**
 * Errors: `src` 0 rows are rollup rows per (dim, value) for dims endpoint (requests per endpoint;
 * their sum is the total) and error (value "<status> <endpoint>", status >= 400 only); `src` 1
 * rows are the edge minutes per (status code, endpoint).
 */
export function errorsSql(s: MetricsScope): Sql {
  const b = blocksOf(s);
  const sums = `${MERGE.requests} AS req_n, ${MERGE.errors} AS err_n`;
  return {
    query: `${branches(
      b,
      {
        select: `0 AS src, dim AS k, value AS v, toUInt16(0) AS code, ${sums}`,
        where: "dim IN ('endpoint', 'error')",
        groupBy: 'dim, value',
      },
      { select: `1, '', endpoint, status_code, ${sums}`, groupBy: 'status_code, endpoint' },
    )}
      ${QUERY_SETTINGS}`,
    query_params: b.params,
  };
}

/** Totals of the range and of `previous`, the preceding range of equal length (`cur` 1 / 0). */
export function comparisonSql(s: MetricsScope, previous: MetricsScope): Sql {
  const b = blocksOf(s, 1440, [previous]);
  const sums = `${SUMS}, ${MERGE.blocked} AS blk_n`;
  // A block belongs to one period: each period is covered on its own and the previous one ends
  // before the current one starts.
  const cur = (col: string) => `${col} >= toDateTime({cur:UInt32}, 'UTC')`;
  return {
    query: `${branches(
      b,
      { select: `${cur('t')} AS cur, ${sums}`, where: "dim = 'all'", groupBy: 'cur' },
      { select: `${cur('minute')} AS cur, ${sums}`, groupBy: 'cur' },
    )}
      ${QUERY_SETTINGS}`,
    query_params: { ...b.params, cur: s.from },
  };
}

/* ---------------------------------------------------------------- results */

type Num = number | string | null;
const n = (v: Num | undefined): number => (v === null || v === undefined ? 0 : Number(v));
const round3 = (v: number): number => Math.round(v * 1000) / 1000;
const avgOf = (sum: Num | undefined, count: Num | undefined): number =>
  n(count) > 0 ? round3(n(sum) / n(count)) : 0;
const rate = (part: number, whole: number): number => (whole > 0 ? (100 * part) / whole : 0);
const iso = (ms: number): string => new Date(ms).toISOString();

interface SumsRow {
  req_n: Num;
  err_n: Num;
  dur_sum: Num;
  dur_n: Num;
}

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

function addTo(
  map: Map<string, Totals>,
  key: string,
  r: Partial<SumsRow> & { blk_n?: Num; byte_n?: Num },
): void {
  let t = map.get(key);
  if (!t) map.set(key, (t = zero()));
  add(t, r);
}

function add(t: Totals, r: Partial<SumsRow> & { blk_n?: Num; byte_n?: Num }): void {
  t.requests += n(r.req_n);
  t.errors += n(r.err_n);
  t.durSum += n(r.dur_sum);
  t.durCount += n(r.dur_n);
  t.blocked += n(r.blk_n);
  t.bytes += n(r.byte_n);
}

export interface EventMarker {
  sid: string;
  type: string;
  name: string;
  description: string | null;
  source: string | null;
  metadata: Record<string, unknown> | null;
  bucketSids: string[];
  environmentSids: string[];
  startedAt: string;
  endedAt: string | null;
}

export interface Query {
  accountSid: string;
  bucketSid?: string;
  /** any of these buckets (an MCP token limited to a bucket list) */
  bucketSids?: string[];
  environmentSid?: string;
  endpoint?: string;
  method?: string;
  range: TimeRange;
}

export class MetricsRepository {
  constructor(
    private readonly ch: ClickHouseClient,
    private readonly pool: pg.Pool,
    private readonly retentionDays: number,
  ) {}

  private scope(q: Query): MetricsScope {
    return scopeOf(q.accountSid, q.range, {
      bucketSid: q.bucketSid,
      bucketSids: q.bucketSids,
      environmentSid: q.environmentSid,
      endpoint: q.endpoint,
      method: q.method,
      retentionDays: this.retentionDays,
      now: Date.now(),
    });
  }

  private async rows<T>(sql: Sql): Promise<T[]> {
    const rs = await this.ch.query({ ...sql, format: 'JSONEachRow' });
    return rs.json<T>();
  }

  private rangeOut(r: TimeRange): { startDate: string; endDate: string } {
    return { startDate: iso(r.start), endDate: iso(r.end + MINUTE - 1) };
  }

  async summary(q: Query) {
    type Row = SumsRow & { src: Num; k: string; v: string; code: Num; blk_n: Num; byte_n: Num };
    const rows = await this.rows<Row>(summarySql(this.scope(q)));
    // Rollup rows (src 0) per dim and value; edge-minute rows (src 1) per method (k), endpoint (v)
    // and status code: each counts once under its method, its status code and its endpoint.
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
      ...this.rangeOut(q.range),
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

  /** Per interval and status class, every interval of the range present (zeros when empty). */
  private async series(q: Query, iv: Interval) {
    const starts = intervalsOf(q.range, iv);
    const rows = await this.rows<SumsRow & { tb: Num; status_class: Num }>(seriesSql(this.scope(q), iv));
    // Both tables answer rows for the same interval and class: add them up.
    const byStart = new Map<number, Map<number, SumsRow>>();
    for (const r of rows) {
      const t = n(r.tb) * 1000;
      let m = byStart.get(t);
      if (!m) byStart.set(t, (m = new Map()));
      const cls = n(r.status_class);
      const prev = m.get(cls);
      m.set(
        cls,
        prev
          ? {
              req_n: n(prev.req_n) + n(r.req_n),
              err_n: n(prev.err_n) + n(r.err_n),
              dur_sum: n(prev.dur_sum) + n(r.dur_sum),
              dur_n: n(prev.dur_n) + n(r.dur_n),
            }
          : r,
      );
    }
    return starts.map((t) => ({ start: t, classes: byStart.get(t) ?? new Map<number, SumsRow>() }));
  }

  async throughput(q: Query, iv: Interval) {
    const [series, events] = await Promise.all([this.series(q, iv), this.events(q)]);
    return {
      ...this.rangeOut(q.range),
      interval: iv,
      data: series.map(({ start, classes }) => {
        let req = 0;
        let err = 0;
        let sum = 0;
        let cnt = 0;
        for (const r of classes.values()) {
          req += n(r.req_n);
          err += n(r.err_n);
          sum += n(r.dur_sum);
          cnt += n(r.dur_n);
        }
        return {
          timestamp: iso(start),
          requestCount: req,
          errorCount: err,
          averageResponseTime: avgOf(sum, cnt),
        };
      }),
      events,
    };
  }

  async performance(q: Query, groupBy: GroupBy, limit: number) {
    const rows = await this.rows<SumsRow & { grp: string; pct: (number | null)[] }>(
      performanceSql(this.scope(q), groupBy, limit),
    );
    return {
      ...this.rangeOut(q.range),
      groupBy,
      metrics: rows.map((r) => ({
        group: r.grp,
        requestCount: n(r.req_n),
        errorRate: rate(n(r.err_n), n(r.req_n)),
        averageResponseTime: avgOf(r.dur_sum, r.dur_n),
        p50ResponseTime: round3(n(r.pct[0])),
        p95ResponseTime: round3(n(r.pct[1])),
        p99ResponseTime: round3(n(r.pct[2])),
      })),
    };
  }

  async errors(q: Query, statusCode: number | undefined, limit: number) {
    type Row = { src: Num; k: string; v: string; code: Num; req_n: Num; err_n: Num };
    const rows = await this.rows<Row>(errorsSql(this.scope(q)));
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
          // value = "<status> <endpoint>"
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
        mostCommonErrors: [...e.statuses.entries()]
          .sort((x, y) => y[1] - x[1] || x[0] - y[0])
          .map(([c]) => c),
      }))
      .sort((x, y) => y.errorCount - x.errorCount || (x.endpoint < y.endpoint ? -1 : 1))
      .slice(0, limit);
    return {
      ...this.rangeOut(q.range),
      totalErrors,
      errorRate: rate(totalErrors, totalRequests),
      errorsByStatus,
      errorsByEndpoint,
    };
  }

  /* ---- Shape A ---- */

  async shapeASummary(q: Query) {
    const length = q.range.end - q.range.start + MINUTE;
    // NOTE: clamped to year 1: a very long range would otherwise put the previous period before
    // year 0, which toISOString() writes as "-001544-…", not a date-time (found by `npm run fuzz`).
    const previous: TimeRange = {
      start: Math.max(q.range.start - length, EARLIEST_MS),
      end: q.range.start - MINUTE,
    };
    const scope = this.scope(q);
    const prevScope = this.scope({ ...q, range: previous });
    const rows = await this.rows<SumsRow & { cur: Num; blk_n: Num }>(
      comparisonSql(scope, { ...prevScope, to: Math.min(prevScope.to, scope.from - 60) }),
    );
    // Both tables may answer a row for each period: add them up.
    const period = (c: number): (SumsRow & { blk_n: Num }) | undefined => {
      const own = rows.filter((r) => n(r.cur) === c);
      if (own.length === 0) return undefined;
      const t = zero();
      for (const r of own) add(t, r);
      return { req_n: t.requests, err_n: t.errors, dur_sum: t.durSum, dur_n: t.durCount, blk_n: t.blocked };
    };
    const cur = period(1);
    const prev = period(0);
    const counted = (get: (r: typeof cur) => number) => {
      const c = get(cur);
      const p = get(prev);
      return {
        current: { amount: c, units: 'requests' },
        previous: { amount: p, units: 'requests' },
        change: { amount: p > 0 ? ((c - p) / p) * 100 : null, units: 'percent' },
      };
    };
    const avg = (r: typeof cur): number | null => (n(r?.dur_n) > 0 ? avgOf(r?.dur_sum, r?.dur_n) : null);
    const c = avg(cur);
    const p = avg(prev);
    return {
      ...this.rangeOut(q.range),
      previousStartDate: iso(previous.start),
      previousEndDate: iso(previous.end + MINUTE - 1),
      requests: counted((r) => n(r?.req_n)),
      responseTime: {
        current: { amount: c, units: 'milliseconds' },
        previous: { amount: p, units: 'milliseconds' },
        change: { amount: c !== null && p !== null ? round3(c - p) : null, units: 'milliseconds' },
      },
      errors: counted((r) => n(r?.err_n)),
      blocked: counted((r) => n(r?.blk_n)),
    };
  }

  /** Period bounds clipped to the range: [startTime, endTime) with endTime exclusive. */
  private periodBounds(q: Query, starts: number[], iv: Interval, i: number) {
    const s = Math.max(starts[i]!, q.range.start);
    const e = Math.min(nextInterval(starts[i]!, iv), q.range.end + MINUTE);
    return { startTime: iso(s), endTime: iso(e), ms: e - s };
  }

  async shapeAThroughput(q: Query, iv: Interval, units: 'rpm' | 'rps') {
    const [series, events] = await Promise.all([this.series(q, iv), this.events(q)]);
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
      for (const [cls, r] of classes) {
        byClass.set(cls, n(r.req_n));
        overall.set(cls, (overall.get(cls) ?? 0) + n(r.req_n));
      }
      const b = this.periodBounds(q, starts, iv, i);
      return { startTime: b.startTime, endTime: b.endTime, ...block(byClass, b.ms) };
    });
    const rangeMs = q.range.end + MINUTE - q.range.start;
    return {
      interval: iv,
      summary: {
        startTime: iso(q.range.start),
        endTime: iso(q.range.end + MINUTE),
        ...block(overall, rangeMs),
      },
      periods,
      events,
    };
  }

  async shapeAResponseTime(q: Query, iv: Interval) {
    const starts = intervalsOf(q.range, iv);
    const [rows, events] = await Promise.all([
      this.rows<SumsRow & { tb: Num; dur_min: Num; dur_max: Num; pct: (number | null)[] }>(
        responseTimeSql(this.scope(q), iv),
      ),
      this.events(q),
    ]);
    const byStart = new Map<number, (typeof rows)[number]>();
    let total: (typeof rows)[number] | undefined;
    for (const r of rows) {
      if (r.tb === null) total = r;
      else byStart.set(n(r.tb) * 1000, r);
    }
    const LEVELS = ['50', '95', '99'] as const;
    const periodOf = (r: (typeof rows)[number] | undefined) => ({
      requests: n(r?.req_n),
      maximum: round3(n(r?.dur_max)),
      minimum: round3(n(r?.dur_min)),
      average: avgOf(r?.dur_sum, r?.dur_n),
    });
    const periods = starts.map((t, i) => {
      const r = byStart.get(t);
      const b = this.periodBounds(q, starts, iv, i);
      return {
        startTime: b.startTime,
        endTime: b.endTime,
        ...periodOf(r),
        percentiles: Object.fromEntries(LEVELS.map((l, k) => [l, { value: round3(n(r?.pct[k])) }])),
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
        startTime: iso(q.range.start),
        endTime: iso(q.range.end + MINUTE),
        ...periodOf(total),
        percentiles: Object.fromEntries(
          LEVELS.map((l, k) => [l, { value: round3(n(total?.pct[k])), ...spread(k) }]),
        ),
      },
      periods,
      events,
    };
  }

  /**
   * The last minute with traffic per bucket of an account in one environment (MCP `list_buckets`),
   * read from `requests_minute`.
   */
  async lastTraffic(
    accountSid: string,
    environmentSid: string,
    bucketSids: string[],
  ): Promise<Map<string, string>> {
    if (bucketSids.length === 0) return new Map();
    const rows = await this.rows<{ b: string; last: Num }>({
      query: `SELECT bucket_sid AS b, toUInt32(max(minute)) AS last FROM ${TABLES.requestsMinute}
              WHERE account_sid = {a:String} AND bucket_sid IN {bs:Array(String)} AND environment_sid = {e:String}
              GROUP BY bucket_sid
              ${QUERY_SETTINGS}`,
      query_params: { a: accountSid, bs: bucketSids, e: environmentSid },
    });
    return new Map(rows.map((r) => [r.b, iso(n(r.last) * 1000)]));
  }

  /* ---- event markers (spec 2.7, 6) ---- */

  /**
   * Markers overlapping the range, scoped like the events list: an event for `*` or for the
   * requested bucket / environment. Without a bucketSid filter every event of the account counts.
   */
  async events(q: Query): Promise<EventMarker[]> {
    const r = await this.pool.query<{
      sid: string;
      type: string;
      name: string;
      description: string | null;
      source: string | null;
      metadata: Record<string, unknown> | null;
      bucket_sids: string[];
      environment_sids: string[];
      started_at: Date;
      ended_at: Date | null;
    }>(
      `SELECT sid, type, name, description, source, metadata, bucket_sids, environment_sids,
              started_at, ended_at
       FROM events
       WHERE account_sid = $1
         AND started_at <= $3
         AND COALESCE(ended_at, started_at) >= $2
         AND ($4::text IS NULL OR bucket_sids && ARRAY['*', $4::text])
         AND ($5::text IS NULL OR environment_sids && ARRAY['*', $5::text])
         AND ($6::text[] IS NULL OR bucket_sids && array_append($6::text[], '*'))
       ORDER BY started_at, sid
       LIMIT ${MAX_EVENTS}`,
      [
        q.accountSid,
        new Date(q.range.start),
        new Date(q.range.end + MINUTE - 1),
        q.bucketSid ?? null,
        q.environmentSid ?? null,
        q.bucketSids ?? null,
      ],
    );
    return r.rows.map((e) => ({
      sid: e.sid,
      type: e.type,
      name: e.name,
      description: e.description,
      source: e.source,
      metadata: e.metadata,
      bucketSids: e.bucket_sids,
      environmentSids: e.environment_sids,
      startedAt: e.started_at.toISOString(),
      endedAt: e.ended_at ? e.ended_at.toISOString() : null,
    }));
  }
}

function statusClassKey(cls: number): string {
  return cls >= 1 && cls <= 5 ? `${cls}xx` : 'unknown';
}
