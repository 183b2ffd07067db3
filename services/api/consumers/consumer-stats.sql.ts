import type { ConsumerListQuery } from '../../../schemas/consumers.schema.js';
import { MERGE } from '../../shared/metrics-sql.js';
import { TABLES } from '../../shared/tables.js';
import { segmentsOf, type Segment, type Sql } from '../metrics/metrics-queries.js';
import { scopeOf, type MetricsScope, type TimeRange } from '../metrics/metrics-range.js';
import type { Sealed } from '../../shared/consumer-seal.js';
import { labelsSql, overrideParams, type Override } from './consumer-labels.js';

/**
 * The ClickHouse queries of the consumers' figures (docs/consumers.md): counts and percentiles from
 * the rollup keyed by consumer (`consumers_rollup`: 008_consumer_and_key_rollups.sql, sums of the
 * consumers' minute rows with the endpoint metrics' histograms, so the same percentile method and
 * error bound) and those minute rows, first/last seen and the effective labels (consumer-labels.ts).
 */

/** A row of consumerStatsSql. */
export interface StatsRow {
  cid: string;
  name: string;
  grp: string;
  req_n: string | number;
  err_n: string | number;
  pct: (number | null)[];
  fs: number | null;
  ls: number | null;
}

export interface ConsumerScope {
  accountSid: string;
  bucketSid?: string;
  /** any of these buckets (an MCP token limited to a bucket list) */
  bucketSids?: string[];
  environmentSid?: string;
  range: TimeRange;
  /** Where the blocks are complete (sealedThrough()); absent: nothing sealed, single minutes only. */
  sealed?: Sealed;
}

const SORT_SQL: Record<NonNullable<ConsumerListQuery['sort']>, string> = {
  requests: 'req_n',
  errorRate: 'err_n / req_n',
  p95: 'ifNull(pct[2], -1)',
  lastSeen: 'ls',
  name: "lower(if(name = '', cid, name))",
};

/** The aggregate columns the merges read (MERGE: counts, and the histogram with min/max for percentiles). */
const VALUE_COLUMNS = [
  'requests',
  'errors',
  'duration_count',
  'duration_min',
  'duration_max',
  'duration_hist',
];
/** The columns of the counts alone. */
const COUNT_COLUMNS = ['requests', 'errors'];
/** The columns a percentile's bounds read: no histogram. */
export const BOUND_COLUMNS = [
  'requests',
  'duration_count',
  'duration_sum',
  'duration_min',
  'duration_max',
  'duration_sumsq',
  'sumsq_count',
];

/*
 * Bounds of a consumer's p95 from sums of its durations (BOUND_COLUMNS; no histogram). The p95 is
 * picked at rank r = floor(0.95 n) + 1 of the n sorted durations (MERGE.percentiles): its value x
 * has k = n - r + 1 durations at or above it and r at or below it. With sum s, minimum min and
 * maximum max (durations are never negative):
 *   s >= k x + (n - k) min   ->  x <= (s - (n - k) min) / k   (Markov's inequality, sharpened)
 *   s <= r x + (n - r) max   ->  x >= (s - (n - r) max) / r
 * With the sum of squares too (mean m, standard deviation d of the n durations), Cantelli's
 * inequality bounds the share of durations at or above x > m by d^2 / (d^2 + (x - m)^2), and that
 * share is at least k / n:
 *   x <= m + d sqrt(n / k - 1)
 * Without deletions the slowest call is one of the durations, so the same bound holds for the
 * other n - 1 durations (sums less the slowest call), among which x is (k-1)-th largest: a single
 * very slow call then no longer widens the bound of a consumer with a few dozen calls.
 * The answer is x's grid value (within 0.69%: a factor 1.01 covers it) clamped into [min, max].
 * Under 21 calls k is 1 and the upper bound is max itself. The moments are used only when every
 * duration in range is in them and none was deleted (`sumsq_count` = n: rows aggregated before
 * they existed are not, and a deletion, which cannot undo max, subtracts 2^32 there;
 * 009_consumer_duration_moments.sql). A deletion leaves min and max wider and the sums exact,
 * which only loosens the first bound. test/unit/consumer-p95-bounds.test.ts checks both bounds
 * against every consumer's p95.
 */
const N = 'sum(duration_count)';
const P95_RANK = `(toInt64(floor(0.95 * ${N})) + 1)`;
const K = `(${N} - ${P95_RANK} + 1)`;
const S = 'sum(duration_sum)';
const SS = 'sum(duration_sumsq)';
const MAX = 'ifNull(max(duration_max), 0)';
/** Cantelli's bound of the k-th largest of n values with sum s and sum of squares ss. */
const cantelli = (n: string, s: string, ss: string, k: string) =>
  `((${s}) / (${n}) + sqrt(greatest((${ss}) / (${n}) - pow((${s}) / (${n}), 2), 0)) * sqrt(greatest((${n}) / (${k}) - 1, 0)))`;
const MOMENTS = `sum(sumsq_count) = ${N}`;
const NONE = '1e308';
/** An upper bound of the consumer's p95 (an aggregate over rows of BOUND_COLUMNS); -1 without durations. */
export const P95_UPPER_BOUND = `if(${N} > 0,
  least(ifNull(max(duration_max), 1e308),
        least((${S} - (${P95_RANK} - 1) * ifNull(min(duration_min), 0)) / ${K},
              if(${MOMENTS},
                 least(${cantelli(N, S, SS, K)},
                       if(${K} >= 2, ${cantelli(`(${N} - 1)`, `${S} - ${MAX}`, `${SS} - pow(${MAX}, 2)`, `(${K} - 1)`)}, ${NONE})),
                 ${NONE})) * 1.01),
  -1)`;
/** A lower bound of the consumer's p95; -1 without durations. */
export const P95_LOWER_BOUND = `if(${N} > 0,
  greatest(ifNull(min(duration_min), -1),
           (${S} - (${N} - ${P95_RANK}) * ifNull(max(duration_max), 1e300)) / ${P95_RANK} / 1.01),
  -1)`;

/**
 * Block lengths (minutes): single minutes (blockRows), and consumers_rollup's hour, UTC day
 * and week (7 UTC days from an epoch-aligned Thursday; 009_consumer_duration_moments.sql). Hour
 * blocks are complete up to the hours' seal only, day and week blocks up to the days' seal
 * (012_consumer_day_blocks_sealed.sql, 014_consumer_hour_blocks_sealed.sql): after them the range
 * is covered by hours and minutes, then by minutes alone.
 */
const CONSUMER_LEVELS = [10080, 1440, 60, 1] as const;
const HOUR_LEVELS = [60, 1] as const;
const MINUTE_LEVEL = [1] as const;

/**
 * The blocks covering a scope's minutes: every level before the days' seal, hours and single
 * minutes from it to the hours' seal, single minutes after that (unix seconds; null: not sealed).
 */
export function consumerSegments(scope: MetricsScope, sealed: Sealed): Segment[] {
  const clamp = (t: number | null) => Math.max(scope.from, Math.min(t ?? 0, scope.to + 1));
  const dayCut = clamp(sealed.days);
  const hourCut = Math.max(dayCut, clamp(sealed.hours));
  return [
    ...(dayCut > scope.from ? segmentsOf(scope.from, dayCut - 1, 10080, CONSUMER_LEVELS) : []),
    ...(hourCut > dayCut ? segmentsOf(dayCut, hourCut - 1, 60, HOUR_LEVELS) : []),
    ...(hourCut <= scope.to ? segmentsOf(hourCut, scope.to, 1, MINUTE_LEVEL) : []),
  ];
}

/**
 * The aggregate rows of `segments` (consumerSegments), as one subquery of `keys` plus the columns
 * the merges read (MERGE: counts, and the histogram with min/max for percentiles): whole blocks of
 * consumers_rollup, and single minutes from consumers_rollup's own level-1 rows (every insert before
 * 015_consumer_minutes_by_hour.sql wrote one per consumer, environment and minute) and from
 * consumers_minute_by_hour (every insert since). Both are keyed by time first, so a minute range
 * of every consumer reads that range only; the minute rows written before 015 are in both
 * consumers_minute and the level-1 rows, and only the latter are read here. Every row is a sum of
 * minute rows, each minute of the range is in exactly one block read, so the merged figures equal
 * those of the minute rows. `where` scopes both tables; the block bounds are added to `params`.
 */
export function blockRows(
  segments: readonly Segment[],
  where: string,
  params: Record<string, unknown>,
  keys: readonly string[],
  values: readonly string[] = VALUE_COLUMNS,
): string {
  const cols = [...keys, ...values].join(', ');
  const blocks: string[] = [];
  const minutes: string[] = [];
  segments.forEach((seg, k) => {
    params[`sf${k}`] = seg.from;
    params[`st${k}`] = seg.to;
    const range = (col: string) =>
      `${col} >= toDateTime({sf${k}:UInt32}, 'UTC') AND ${col} <= toDateTime({st${k}:UInt32}, 'UTC')`;
    blocks.push(`(level = ${seg.level} AND ${range('t')})`);
    if (seg.level === 1) minutes.push(`(${range('minute')})`);
  });
  // An empty range still needs one SELECT: `0` reads nothing.
  const parts = [
    `SELECT ${cols} FROM ${TABLES.consumersRollup} WHERE ${where} AND (${blocks.join(' OR ') || '0'})`,
  ];
  if (minutes.length)
    parts.push(
      `SELECT ${cols} FROM ${TABLES.consumersMinuteByHour} WHERE ${where} AND (${minutes.join(' OR ')})`,
    );
  return parts.join('\n          UNION ALL ');
}

/** The account (and bucket) condition and parameters of a scope, for both ClickHouse tables. */
export function scopeFilter(s: ConsumerScope): { where: string; params: Record<string, unknown> } {
  const where = ['account_sid = {a:String}'];
  const params: Record<string, unknown> = { a: s.accountSid };
  if (s.bucketSid !== undefined) {
    where.push('bucket_sid = {b:String}');
    params.b = s.bucketSid;
  }
  if (s.bucketSids !== undefined) {
    where.push('bucket_sid IN {bs:Array(String)}');
    params.bs = s.bucketSids;
  }
  return { where: where.join(' AND '), params };
}

/**
 * The block and minute rows of a scope (blockRows), narrowed to one consumer (`id`) or a list
 * (`ids`), with the aggregate columns `values`; `labelsWhere` scopes consumer_labels the same way.
 */
export function consumerSource(
  s: ConsumerScope,
  retentionDays: number,
  opts: { id?: string; ids?: readonly string[] },
  values: readonly string[] = VALUE_COLUMNS,
): { source: string; params: Record<string, unknown>; labelsWhere: string } {
  const scope = scopeOf(s.accountSid, s.range, {
    bucketSid: s.bucketSid,
    bucketSids: s.bucketSids,
    environmentSid: s.environmentSid,
    retentionDays,
    now: Date.now(),
  });
  const { where, params } = scopeFilter(s);
  const filters = [where];
  if (s.environmentSid !== undefined) {
    filters.push('environment_sid = {e:String}');
    params.e = s.environmentSid;
  }
  const labelsWhere = [where];
  if (opts.id !== undefined) {
    filters.push('consumer_id = {cid:String}');
    labelsWhere.push('consumer_id = {cid:String}');
    params.cid = opts.id;
  }
  if (opts.ids !== undefined) {
    filters.push('consumer_id IN {ids:Array(String)}');
    labelsWhere.push('consumer_id IN {ids:Array(String)}');
    params.ids = opts.ids;
  }
  // One consumer or a list of them: consumers_rollup's key is the block, then the consumer, and
  // the minute rows' the hour, then the consumer, so the primary index keeps in each block or
  // hour read only the granules whose span of ids holds them (011_consumer_endpoints_from_minutes.sql,
  // 015_consumer_minutes_by_hour.sql, test/unit/consumer-key.test.ts).
  const source = blockRows(
    consumerSegments(scope, s.sealed ?? { days: null, hours: null }),
    filters.join(' AND '),
    params,
    ['consumer_id'],
    values,
  );
  return { source, params, labelsWhere: labelsWhere.join(' AND ') };
}

/**
 * Requests, errors, percentiles and (unless `labels` is false) the effective labels and first/last
 * seen per consumer of a scope, one row per consumer (StatsRow), filtered by `q`, sorted and paged.
 */
export function consumerStatsSql(
  s: ConsumerScope,
  retentionDays: number,
  overrides: readonly Override[],
  opts: {
    id?: string;
    /** only these consumers */
    ids?: readonly string[];
    q?: string;
    sort?: string;
    order?: 'asc' | 'desc';
    limit?: number;
    offset?: number;
    /** false: no percentiles (NULLs), the histograms are not merged */
    percentiles?: boolean;
    /** false: no labels joined (name and group '', first/last seen NULL) */
    labels?: boolean;
  },
): Sql {
  // Without percentiles only the counts are read: the histogram column is most of a row's bytes.
  const { source, params, labelsWhere } = consumerSource(
    s,
    retentionDays,
    opts,
    opts.percentiles === false ? COUNT_COLUMNS : VALUE_COLUMNS,
  );
  const labels = opts.labels !== false;
  const pct =
    opts.percentiles === false ? 'CAST([NULL, NULL, NULL] AS Array(Nullable(Float64)))' : MERGE.percentiles;
  const outer: string[] = [];
  if (opts.q) {
    outer.push(
      '(positionCaseInsensitiveUTF8(cid, {q:String}) > 0 OR positionCaseInsensitiveUTF8(name, {q:String}) > 0 OR positionCaseInsensitiveUTF8(grp, {q:String}) > 0)',
    );
    params.q = opts.q;
  }
  const dir = opts.order === 'asc' ? 'ASC' : 'DESC';
  const page = opts.limit !== undefined ? `LIMIT {lim:UInt32} OFFSET {off:UInt64}` : '';
  if (opts.limit !== undefined) {
    params.lim = opts.limit;
    params.off = opts.offset ?? 0;
  }
  return {
    query: `SELECT st.cid AS cid, ${labels ? 'lb.name' : "''"} AS name, ${labels ? 'lb.grp' : "''"} AS grp,
              st.req_n AS req_n, st.err_n AS err_n, st.pct AS pct,
              ${labels ? 'lb.fs' : 'CAST(NULL AS Nullable(Int64))'} AS fs, ${labels ? 'lb.ls' : 'CAST(NULL AS Nullable(Int64))'} AS ls
      FROM (
        SELECT consumer_id AS cid, ${MERGE.requests} AS req_n, ${MERGE.errors} AS err_n, ${pct} AS pct
        FROM (${source})
        GROUP BY consumer_id
        HAVING req_n > 0
      ) AS st
      ${labels ? `LEFT JOIN (${labelsSql(labelsWhere)}) AS lb ON lb.cid = st.cid` : ''}
      ${outer.length ? `WHERE ${outer.join(' AND ')}` : ''}
      ORDER BY ${SORT_SQL[(opts.sort ?? 'requests') as keyof typeof SORT_SQL]} ${dir}, cid ASC
      ${page}
      SETTINGS join_use_nulls = 0, optimize_use_implicit_projections = 0`,
    query_params: { ...params, ...overrideParams(overrides) },
  };
}
