import { MERGE } from '../../shared/metrics-sql.js';
import { TABLES } from '../../shared/tables.js';
import { IN_GROUP, labelsSql, overrideParams } from '../consumers/consumer-labels.js';
import type { GroupBy, Interval, MetricsScope } from './metrics-range.js';

/**
 * The SQL of metrics, read from aggregates only: `requests_rollup`, requests_minute rolled up per
 * dimension into 10-minute, hour, 6-hour and day blocks (002_metrics.sql, 005_six_hour_rollup.sql),
 * and `requests_minute` for the single minutes at the edges of a range. Counts and sums are exact;
 * percentiles are picked from the duration histograms of the blocks in range, summed (never
 * averaged; 004_duration_histograms.sql). The builders are exported so test/bench/metrics-load.ts
 * times exactly what the API runs.
 */

export interface Sql {
  query: string;
  query_params: Record<string, unknown>;
}

/**
 * Block lengths in minutes: 10, 60, 360 and 1440 are rows of `requests_rollup` (002_metrics.sql,
 * 005_six_hour_rollup.sql); 1 is `requests_minute` itself, used for the single minutes at the
 * edges of a range. The 6-hour level is what the default range (the last 24 hours, across two UTC
 * days, so no whole day) is mostly read from: at most 3 six-hour and 10 hour blocks instead of 23
 * hour blocks, so a percentile query sums fewer histograms (docs/metrics.md, "Query time").
 */
const LEVELS = [1440, 360, 60, 10, 1] as const;
const LEVEL_OF: Record<Interval, number> = { minute: 1, hour: 60, day: 1440, week: 1440, month: 1440 };

/** A run of blocks of one level: starts of the first and last block, epoch seconds, inclusive. */
export interface Segment {
  level: number;
  from: number;
  to: number;
}

/**
 * Covers the minutes [from, to] (epoch seconds, inclusive) with the largest whole blocks inside
 * and finer blocks at both edges: at most 9 segments, each block inside the range. `maxLevel`
 * keeps blocks from straddling a series' interval boundaries. `blockLevels`: the block lengths a
 * table holds, largest first, each a multiple of the next (1, single minutes, is always added).
 */
export function segmentsOf(
  from: number,
  to: number,
  maxLevel = 1440,
  blockLevels: readonly number[] = LEVELS,
): Segment[] {
  const levels = [...blockLevels.filter((l) => l !== 1), 1].filter((l) => l <= maxLevel);
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

/**
 * groupBy -> (rollup dimension and group expression, the same group from a requests_minute row).
 * A consumer or group has no rollup row: those groupings read the consumers' minute rows only, the group
 * from the effective labels joined as `lb` (consumer-labels.ts).
 */
const GROUPS: Record<GroupBy, { dim: Dim; rollup: string; minute: string }> = {
  endpoint: { dim: 'endpoint', rollup: 'value', minute: 'endpoint' },
  method: { dim: 'method', rollup: 'value', minute: 'toString(method)' },
  status: { dim: 'status', rollup: 'value', minute: 'toString(status_code)' },
  environment: { dim: 'all', rollup: 'environment_sid', minute: 'toString(environment_sid)' },
  // requests_rollup has no method-and-endpoint dimension: read from requests_key_rollup (blocksOf).
  route: { dim: 'all', rollup: "''", minute: "concat(toString(method), ' ', endpoint)" },
  consumer: { dim: 'all', rollup: "''", minute: 'consumer_id' },
  group: { dim: 'all', rollup: "''", minute: 'lb.grp' },
};

/** Block lengths (minutes) of `requests_key_rollup` (008_consumer_and_key_rollups.sql): hours and UTC days. */
const KEY_LEVELS = [1440, 60] as const;

/**
 * Settings of every metrics query. The implicit min/max/count projection is analysed for every
 * table a query reads, with the old interpreter (chDB 26.7 logs it); none of these queries can use
 * it, and skipping it saves planning time per query (docs/metrics.md, "Query time").
 */
const QUERY_SETTINGS = 'SETTINGS optimize_use_implicit_projections = 0';

/**
 * The blocks covering a scope's minutes: whole 10-minute, hour, 6-hour and day blocks of
 * `requests_rollup` (`rollup`, a condition on level and t) and the single edge minutes of
 * `requests_minute` (`minutes`, a condition on minute); '' when a table has no block in range.
 * A scope narrowed to an endpoint or a method, or grouped by route, needs the whole key, which
 * requests_rollup (one dimension per row) lacks: it reads whole hour and day blocks of
 * `requests_key_rollup` instead (`keyed`, a condition on level and t), so a month of one
 * endpoint reads about 30 day rows per key instead of 43,200 minutes. `filters` scopes
 * both tables (account, bucket, environment); `rollupFilters` scope `requests_rollup`, which
 * without an environment in scope is read in its rows for all environments together
 * (environment_sid '*', 006_duration_grid_all_environments.sql: one row per group and block
 * instead of one per environment), and with `perEnvironment` (a grouping by environment) in every
 * environment's own rows. `also`: more ranges read the same way (the previous period of a
 * comparison).
 */
interface Blocks {
  params: Record<string, unknown>;
  /** the single minutes' table: requests_minute, or consumers_minute_all for a consumer scope */
  minuteTable: string;
  filters: string;
  rollupFilters: string;
  rollup: string;
  /** blocks of requests_key_rollup (scopes that need method and endpoint together) */
  keyed: string;
  minutes: string;
}

function blocksOf(
  s: MetricsScope,
  maxLevel = 1440,
  also: MetricsScope[] = [],
  perEnvironment = false,
  groupBy?: GroupBy,
): Blocks {
  const params: Record<string, unknown> = { a: s.accountSid };
  const filters = ['account_sid = {a:String}'];
  /** A condition on the parameter `name`, set when the scope has a value for it. */
  const filter = (condition: string, name: string, value: unknown) => {
    if (value === undefined) return;
    filters.push(condition);
    params[name] = value;
  };
  filter('bucket_sid = {b:String}', 'b', s.bucketSid);
  filter('bucket_sid IN {bs:Array(String)}', 'bs', s.bucketSids);
  filter('environment_sid = {e:String}', 'e', s.environmentSid);
  filter('endpoint = {ep:String}', 'ep', s.endpoint);
  filter('toString(method) = {mt:String}', 'mt', s.method);
  // A consumer scope (a consumer, a group, or a grouping by either) reads the consumers' minute
  // rows, which hold only the calls with a consumer (007_consumers.sql, 015).
  filter('consumer_id = {cid:String}', 'cid', s.consumer);
  filter(IN_GROUP, 'grp', s.group);
  const byConsumer =
    s.consumer !== undefined || s.group !== undefined || groupBy === 'consumer' || groupBy === 'group';
  if (byConsumer) {
    maxLevel = 1;
    Object.assign(params, overrideParams(s.overrides ?? []));
  }
  const wholeKey = !byConsumer && (s.endpoint !== undefined || s.method !== undefined || groupBy === 'route');
  const rollup: string[] = [];
  const keyed: string[] = [];
  const minutes: string[] = [];
  let k = 0;
  for (const scope of [s, ...also]) {
    if (scope.from > scope.to) continue;
    for (const seg of segmentsOf(scope.from, scope.to, maxLevel, wholeKey ? KEY_LEVELS : LEVELS)) {
      params[`f${k}`] = seg.from;
      params[`t${k}`] = seg.to;
      const range = (col: string) =>
        `${col} >= toDateTime({f${k}:UInt32}, 'UTC') AND ${col} <= toDateTime({t${k}:UInt32}, 'UTC')`;
      if (seg.level === 1) minutes.push(`(${range('minute')})`);
      else (wholeKey ? keyed : rollup).push(`(level = ${seg.level} AND ${range('t')})`);
      k++;
    }
  }
  return {
    params,
    minuteTable: byConsumer ? TABLES.consumersMinute : TABLES.requestsMinute,
    filters: filters.join(' AND '),
    // With an environment, `filters` already names it.
    rollupFilters: [
      ...filters,
      ...(s.environmentSid === undefined ? [`environment_sid ${perEnvironment ? '!=' : '='} '*'`] : []),
    ].join(' AND '),
    rollup: rollup.join(' OR '),
    keyed: keyed.join(' OR '),
    minutes: minutes.join(' OR '),
  };
}

/**
 * Each table aggregated on its own, `UNION ALL`: a rollup SELECT over `b.rollup`, a
 * requests_key_rollup SELECT over `b.keyed` and a requests_minute SELECT over `b.minutes`, each
 * `GROUP BY` its own keys; a branch without blocks is left out (an empty range answers no rows).
 * requests_key_rollup has requests_minute's columns with `t` for `minute`, so its SELECT is the
 * minute one (`minute.select` takes the time column). A UNION ALL takes its column names from its first
 * SELECT, and either branch may be the first (or the only) one, so both name every column with the
 * same aliases: a range without a whole 10-minute block, or one narrowed by endpoint or method,
 * reads only requests_minute. The two results are added up by the caller: in
 * JavaScript for counts (summary, throughput, errors), in an outer query for duration histograms.
 * It is cheaper for the count endpoints than one GROUP BY over the rows of both tables with an
 * `ARRAY JOIN` turning every requests_minute row into one row per rollup dimension (docs/metrics.md,
 * "Query time"). chDB's cost is mostly per query, per table, per part and per key range read, not
 * per row: keep the SELECTs and their key ranges few.
 */
function branches(
  b: Blocks,
  rollup: { select: string; where: string; groupBy: string },
  minute: { select: (time: string) => string; groupBy: string; join?: string },
): string {
  const parts: string[] = [];
  if (b.rollup !== '')
    parts.push(`SELECT ${rollup.select}
      FROM ${TABLES.requestsRollup}
      WHERE ${b.rollupFilters} AND ${rollup.where} AND (${b.rollup})
      GROUP BY ${rollup.groupBy}`);
  if (b.keyed !== '')
    parts.push(`SELECT ${minute.select('t')}
      FROM ${TABLES.requestsKeyRollup}
      WHERE ${b.filters} AND (${b.keyed})
      GROUP BY ${minute.groupBy}`);
  // An empty range still needs one valid SELECT: requests_minute has every filter's column
  // (requests_rollup lacks endpoint and method), and `0` makes it read nothing.
  if (b.minutes !== '' || (b.rollup === '' && b.keyed === ''))
    parts.push(`SELECT ${minute.select('minute')}
      FROM ${b.minuteTable}${minute.join ?? ''}
      WHERE ${b.filters} AND (${b.minutes || '0'})
      GROUP BY ${minute.groupBy}`);
  return parts.join('\n      UNION ALL ');
}

// Result aliases never reuse a column name (`sum(errors) AS errors` would make
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
      {
        select: () => `1 AS src, method AS k, endpoint AS v, status_code AS code, ${sums}`,
        groupBy: 'method, status_code, endpoint',
      },
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
        select: (m) =>
          `toUInt32(${BUCKET_EXPR[iv](m)}) AS tb, intDiv(status_code, 100) AS status_class, ${SUMS}`,
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
function histogramSource(
  b: Blocks,
  dim: Dim,
  columns: string,
  key?: { rollup: string; minute: string },
  withLabels = false,
): string {
  const parts: string[] = [];
  if (b.rollup !== '')
    parts.push(`SELECT ${key ? `${key.rollup} AS key, ` : ''}t, ${columns}
      FROM ${TABLES.requestsRollup}
      WHERE ${b.rollupFilters} AND dim = '${dim}' AND (${b.rollup})`);
  if (b.keyed !== '')
    parts.push(`SELECT ${key ? `${key.minute} AS key, ` : ''}t, ${columns}
      FROM ${TABLES.requestsKeyRollup}
      WHERE ${b.filters} AND (${b.keyed})`);
  // An empty range still needs one valid SELECT: requests_minute has every filter's column
  // (requests_rollup lacks endpoint and method), and `0` makes it read nothing.
  if (b.minutes !== '' || (b.rollup === '' && b.keyed === ''))
    parts.push(`SELECT ${key ? `${key.minute} AS key, ` : ''}minute AS t, ${columns}
      FROM ${b.minuteTable}${withLabels ? LABELS_JOIN : ''}
      WHERE ${b.filters} AND (${b.minutes || '0'})`);
  return `(${parts.join('\n      UNION ALL ')})`;
}

const COUNT_COLUMNS = 'requests, errors, duration_sum, duration_count';

/** Each consumer minute row's consumer labels (`lb.grp`: its group), for groupBy=group. */
const LABELS_JOIN = ` LEFT JOIN (${labelsSql('account_sid = {a:String}')}) AS lb ON lb.cid = consumer_id`;

/** Per interval plus the whole range (tb NULL): counts, min/max/avg and merged percentiles. */
export function responseTimeSql(s: MetricsScope, iv: Interval): Sql {
  const b = blocksOf(s, LEVEL_OF[iv]);
  const src = histogramSource(b, 'all', `${COUNT_COLUMNS}, duration_hist, duration_min, duration_max`);
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

/**
 * Per group: counts, bytes and merged percentiles; with `histogram` also the merged duration
 * histogram (`hist`, grid index -> count).
 */
export function performanceSql(s: MetricsScope, groupBy: GroupBy, limit: number, histogram = false): Sql {
  const g = GROUPS[groupBy];
  const b = blocksOf(s, 1440, [], groupBy === 'environment', groupBy);
  const src = histogramSource(
    b,
    g.dim,
    `${COUNT_COLUMNS}, bytes, duration_hist, duration_min, duration_max`,
    g,
    groupBy === 'group',
  );
  return {
    query: `SELECT key AS grp, ${SUMS}, ${MERGE.bytes} AS byte_n, ${MERGE.percentiles} AS pct
              ${histogram ? `, ${MERGE.histogram} AS hist` : ''}
            FROM ${src}
            GROUP BY grp
            HAVING req_n > 0
            ORDER BY req_n DESC, grp
            LIMIT {limit:UInt32}
            ${QUERY_SETTINGS}`,
    query_params: { ...b.params, limit },
  };
}

/** Requests per group and interval start (epoch s), for the groups named in `groups`. */
export function performanceSeriesSql(s: MetricsScope, groupBy: GroupBy, iv: Interval, groups: string[]): Sql {
  const g = GROUPS[groupBy];
  const b = blocksOf(s, LEVEL_OF[iv], [], groupBy === 'environment', groupBy);
  return {
    query: `${branches(
      b,
      {
        select: `${g.rollup} AS key, toUInt32(${BUCKET_EXPR[iv]('t')}) AS tb, ${MERGE.requests} AS req_n`,
        where: `dim = '${g.dim}' AND ${g.rollup} IN {groups:Array(String)}`,
        groupBy: 'key, tb',
      },
      {
        select: (m) =>
          `${g.minute} AS key, toUInt32(${BUCKET_EXPR[iv](m)}) AS tb, ${MERGE.requests} AS req_n`,
        groupBy: 'key, tb HAVING key IN {groups:Array(String)}',
        ...(groupBy === 'group' ? { join: LABELS_JOIN } : {}),
      },
    )}
      ${QUERY_SETTINGS}`,
    query_params: { ...b.params, groups },
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
      {
        select: () => `1 AS src, '' AS k, endpoint AS v, status_code AS code, ${sums}`,
        groupBy: 'status_code, endpoint',
      },
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
      { select: (m) => `${cur(m)} AS cur, ${sums}`, groupBy: 'cur' },
    )}
      ${QUERY_SETTINGS}`,
    query_params: { ...b.params, cur: s.from },
  };
}

/** The last minute with traffic per bucket of an account in one environment (MCP `list_buckets`). */
export function lastTrafficSql(accountSid: string, environmentSid: string, bucketSids: string[]): Sql {
  return {
    query: `SELECT bucket_sid AS b, toUInt32(max(minute)) AS last FROM ${TABLES.requestsMinute}
              WHERE account_sid = {a:String} AND bucket_sid IN {bs:Array(String)} AND environment_sid = {e:String}
              GROUP BY bucket_sid
              ${QUERY_SETTINGS}`,
    query_params: { a: accountSid, bs: bucketSids, e: environmentSid },
  };
}

/**
 * Requests per endpoint template over the range (the endpoint template suggestions): the
 * rollups' endpoint rows and the edge minutes, summed per endpoint in one outer GROUP BY.
 */
export function endpointCountsSql(s: MetricsScope, limit: number): Sql {
  const b = blocksOf(s);
  return {
    query: `SELECT ep, sum(n) AS req_n FROM (${branches(
      b,
      { select: `value AS ep, ${MERGE.requests} AS n`, where: "dim = 'endpoint'", groupBy: 'value' },
      { select: () => `endpoint AS ep, ${MERGE.requests} AS n`, groupBy: 'endpoint' },
    )})
            GROUP BY ep
            HAVING req_n > 0
            ORDER BY req_n DESC, ep
            LIMIT {limit:UInt32}
            ${QUERY_SETTINGS}`,
    query_params: { ...b.params, limit },
  };
}
