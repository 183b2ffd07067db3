/**
 * SQL expressions that merge the columns of the per-minute aggregate table
 * (`TABLES.requestsMinute`, infra/clickhouse/migrations/002_metrics.sql). Use them inside a
 * `SELECT ... FROM requests_minute WHERE ... GROUP BY ...`: every expression is an aggregate over
 * the matching minute rows, so percentiles are merged from quantile states (never averaged) and
 * counts are exact.
 *
 * Times are in milliseconds; rates are percent 0-100. `avg`, `errorRate`, `min`, `max` and the
 * percentiles are NULL when there is nothing to measure (no request / no duration).
 */

/**
 * `duration_digest` counts durations per index of a geometric grid: index = round(log2(ms) * GRID),
 * 0 ms (and below) = ZERO_INDEX. Reading an index back gives the duration within 0.1%.
 */
export const DIGEST_GRID = 347;
export const DIGEST_ZERO_INDEX = -32768;
export const DIGEST_LEVELS = [0.5, 0.95, 0.99] as const;

/** Grid index -> milliseconds (an Int16 SQL expression in, Float64 out). */
export const digestValue = (index: string): string =>
  `if(${index} = ${DIGEST_ZERO_INDEX}, 0., exp2(${index} / ${DIGEST_GRID}))`;

/** Milliseconds -> grid index, the mapping the materialized view applies (for compensating rows). */
export const digestIndex = (ms: string): string =>
  `if(${ms} > 0, toInt16(greatest(-32767, least(32767, round(log2(${ms}) * ${DIGEST_GRID})))), toInt16(${DIGEST_ZERO_INDEX}))`;

/**
 * quantileExactWeighted answers the smallest value whose cumulative count reaches ceil(level * n);
 * quantileExact (and the exact figures users compare with) the value at sorted index
 * floor(level * n), i.e. cumulative count floor(level * n) + 1. The two differ by one rank when
 * level * n is a whole number, which in a sparse tail can be a 1% jump. Asking for level + 1e-9
 * makes them the same rank for every group below 10 million durations.
 */
export const RANK_NUDGE = 1e-9;

const hasDurations = 'sum(duration_count) > 0';
const merged = (levels: readonly number[]): string =>
  `arrayMap(i -> ${digestValue('i')}, quantilesExactWeightedMerge(${levels.map((l) => l + RANK_NUDGE).join(', ')})(duration_digest))`;

/** Any levels in (0, 1) merged from the same states: an Array(Nullable(Float64)) in level order. */
export function percentiles(levels: readonly number[]): string {
  for (const l of levels) if (!(l > 0 && l < 1)) throw new RangeError(`percentile level ${l} not in (0, 1)`);
  const nulls = levels.map(() => 'NULL').join(', ');
  return `if(${hasDurations}, CAST(${merged(levels)} AS Array(Nullable(Float64))), CAST([${nulls}] AS Array(Nullable(Float64))))`;
}

/** One percentile level in (0, 1), e.g. `percentile(0.9)`: Nullable(Float64). */
export function percentile(level: number): string {
  return `${percentiles([level])}[1]`;
}

/**
 * NOTE: never alias a result with a column name (`sum(errors) AS errors`): `errorRate` would then
 * contain an aggregate inside an aggregate.
 * NOTE: each `p*` expression merges the whole digest; a query needing several percentiles should use
 * `MERGE.percentiles` (one merge, [p50, p95, p99]) instead of three merges.
 */
export const MERGE = {
  requests: 'sum(requests)',
  errors: 'sum(errors)',
  blocked: 'sum(blocked)',
  bytes: 'sum(bytes)',
  durationSum: 'sum(duration_sum)',
  durationCount: 'sum(duration_count)',
  min: 'min(duration_min)',
  max: 'max(duration_max)',
  percentiles: percentiles(DIGEST_LEVELS),
  p50: percentile(0.5),
  p95: percentile(0.95),
  p99: percentile(0.99),
  avg: 'sum(duration_sum) / nullIf(sum(duration_count), 0)',
  errorRate: '100 * sum(errors) / nullIf(sum(requests), 0)',
} as const;
