/**
 * SQL expressions that merge the columns of the per-minute aggregate table
 * (`TABLES.requestsMinute`, infra/clickhouse/migrations/002_metrics.sql and 004). Use them inside a
 * `SELECT ... FROM requests_minute WHERE ... GROUP BY ...`: every expression is an aggregate over
 * the matching minute rows, so percentiles are picked from the merged duration histograms (never
 * averaged) and counts are exact.
 *
 * Times are in milliseconds; rates are percent 0-100. `avg`, `errorRate`, `min`, `max` and the
 * percentiles are NULL when there is nothing to measure (no request / no duration).
 */

/**
 * `duration_hist` counts durations per index of a geometric grid (a Map(Int16, Int64) summed by
 * sumMap): index = round(log2(ms) * HIST_GRID), 0 ms (and below) = HIST_ZERO_INDEX. Reading an index back
 * gives the duration within 2^(1/(2 HIST_GRID)) - 1 = 0.69% (the bound asked for is 1%). The views that
 * fill the histograms use the same constant
 * (infra/clickhouse/migrations/006_duration_grid_all_environments.sql).
 */
export const HIST_GRID = 50;
const HIST_ZERO_INDEX = -32768;
/** The percentiles every metrics answer carries: p50, p95, p99. */
export const PERCENTILE_LEVELS = [0.5, 0.95, 0.99] as const;

/** Grid index -> milliseconds (an Int16 SQL expression in, Float64 out). */
const gridValue = (index: string): string =>
  `if(${index} = ${HIST_ZERO_INDEX}, 0., exp2(${index} / ${HIST_GRID}))`;

const hasDurations = 'sum(duration_count) > 0';
/** The merged histogram: its keys come back sorted (sumMap), its counts are net of deletions. */
const HIST = 'sumMap(duration_hist)';
/**
 * quantileExact's answer (and the exact figures users compare with) is the value at sorted index
 * floor(level * n), i.e. the first grid index whose cumulative count reaches floor(level * n) + 1.
 * The same aggregate `sumMap(duration_hist)` appears several times: ClickHouse computes it once.
 */
const merged = (levels: readonly number[]): string =>
  `arrayMap(r -> ${gridValue(`mapKeys(${HIST})[arrayFirstIndex(c -> c >= r, arrayCumSum(mapValues(${HIST})))]`)},
    arrayMap(l -> toInt64(floor(l * arraySum(mapValues(${HIST})))) + 1, [${levels.join(', ')}]))`;

/**
 * Each picked value clamped into the group's observed [min, max] (`duration_min`/`duration_max`,
 * which every source row of a percentile query must select): a grid value is within 0.69% of the
 * durations it counts, so without the clamp a constant 42 ms would read back as 42.224, a value
 * never sent. Clamping only moves a value towards durations that were seen, never away from them.
 * min/max remember deleted requests (they cannot be undone), so after a deletion the bounds may
 * be wider than the remaining durations, never narrower.
 */
const clamped = (levels: readonly number[]): string =>
  `arrayMap(v -> greatest(ifNull(min(duration_min), v), least(ifNull(max(duration_max), v), v)), ${merged(levels)})`;

/** Any levels in (0, 1) picked from the same merged histogram: an Array(Nullable(Float64)) in level order. */
export function percentiles(levels: readonly number[]): string {
  for (const l of levels) if (!(l > 0 && l < 1)) throw new RangeError(`percentile level ${l} not in (0, 1)`);
  const nulls = levels.map(() => 'NULL').join(', ');
  return `if(${hasDurations}, CAST(${clamped(levels)} AS Array(Nullable(Float64))), CAST([${nulls}] AS Array(Nullable(Float64))))`;
}

/** One percentile level in (0, 1), e.g. `percentile(0.9)`: Nullable(Float64). */
export function percentile(level: number): string {
  return `${percentiles([level])}[1]`;
}

/**
 * A result is never aliased with a column name (`sum(errors) AS errors`): `errorRate` would then
 * contain an aggregate inside an aggregate. `p95` merges the whole histogram; a query needing
 * several percentiles uses `percentiles` (one merge, [p50, p95, p99]).
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
  percentiles: percentiles(PERCENTILE_LEVELS),
  /** the merged duration histogram itself: grid index -> count (see HIST_GRID) */
  histogram: HIST,
  p95: percentile(0.95),
  avg: 'sum(duration_sum) / nullIf(sum(duration_count), 0)',
  errorRate: '100 * sum(errors) / nullIf(sum(requests), 0)',
} as const;
