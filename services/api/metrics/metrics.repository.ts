import type pg from 'pg';
import type { ClickHouseClient } from '../../shared/clickhouse.js';
import { listEventsInRange, type EventMarker } from '../events/events.repository.js';
import {
  errorsOut,
  lastTrafficOut,
  performanceOut,
  seriesOf,
  responseTimePeriodsOut,
  comparisonSummaryOut,
  throughputPeriodsOut,
  summaryOut,
  throughputOut,
  type ComparisonRow,
  type ErrorsRow,
  type PerformanceRow,
  type PerformanceSeriesRow,
  type ResponseTimeRow,
  type SeriesRow,
  type SummaryRow,
} from './metrics-output.js';
import {
  comparisonSql,
  errorsSql,
  lastTrafficSql,
  performanceSeriesSql,
  performanceSql,
  responseTimeSql,
  seriesSql,
  summarySql,
  type Sql,
} from './metrics-queries.js';
import {
  MINUTE,
  intervalsOf,
  previousRange,
  scopeOf,
  type GroupBy,
  type Interval,
  type MetricsScope,
  type Query,
} from './metrics-range.js';

/**
 * Metrics (docs/metrics.md): each answer is one or two aggregate queries (metrics-queries.ts) and
 * their rows shaped into the answer (metrics-output.ts), over the time model of metrics-range.ts.
 */

/** Event markers beside a series, at most. */
export const MAX_EVENTS = 100;

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
      consumer: q.consumer,
      group: q.group,
      overrides: q.overrides,
      retentionDays: this.retentionDays,
      now: Date.now(),
    });
  }

  private async rows<T>(sql: Sql): Promise<T[]> {
    const rs = await this.ch.query({ ...sql, format: 'JSONEachRow' });
    return rs.json<T>();
  }

  private async series(q: Query, iv: Interval) {
    const starts = intervalsOf(q.range, iv);
    return seriesOf(starts, await this.rows<SeriesRow>(seriesSql(this.scope(q), iv)));
  }

  async summary(q: Query) {
    return summaryOut(q.range, await this.rows<SummaryRow>(summarySql(this.scope(q))));
  }

  async throughput(q: Query, iv: Interval) {
    const [series, events] = await Promise.all([this.series(q, iv), this.events(q)]);
    return throughputOut(q.range, iv, series, events);
  }

  /**
   * Per group; `interval` adds each group's requests per interval (`throughput`), `histogram` its
   * merged duration histogram in coarse bins.
   */
  async performance(
    q: Query,
    groupBy: GroupBy,
    limit: number,
    opts: { interval?: Interval; histogram?: boolean } = {},
  ) {
    const scope = this.scope(q);
    const starts = opts.interval ? intervalsOf(q.range, opts.interval) : [];
    const rows = await this.rows<PerformanceRow>(performanceSql(scope, groupBy, limit, opts.histogram));
    if (!opts.interval) return performanceOut(q.range, groupBy, rows);
    const groups = rows.map((r) => r.grp);
    const seriesRows =
      groups.length === 0
        ? []
        : await this.rows<PerformanceSeriesRow>(performanceSeriesSql(scope, groupBy, opts.interval, groups));
    return performanceOut(q.range, groupBy, rows, { interval: opts.interval, starts, rows: seriesRows });
  }

  async errors(q: Query, statusCode: number | undefined, limit: number) {
    return errorsOut(q.range, await this.rows<ErrorsRow>(errorsSql(this.scope(q))), statusCode, limit);
  }

  async comparisonSummary(q: Query) {
    const previous = previousRange(q.range);
    const scope = this.scope(q);
    const prevScope = this.scope({ ...q, range: previous });
    const rows = await this.rows<ComparisonRow>(
      comparisonSql(scope, { ...prevScope, to: Math.min(prevScope.to, scope.from - 60) }),
    );
    return comparisonSummaryOut(q.range, previous, rows);
  }

  async throughputPeriods(q: Query, iv: Interval, units: 'rpm' | 'rps') {
    const [series, events] = await Promise.all([this.series(q, iv), this.events(q)]);
    return throughputPeriodsOut(q.range, iv, units, series, events);
  }

  async responseTimePeriods(q: Query, iv: Interval) {
    const starts = intervalsOf(q.range, iv);
    const [rows, events] = await Promise.all([
      this.rows<ResponseTimeRow>(responseTimeSql(this.scope(q), iv)),
      this.events(q),
    ]);
    return responseTimePeriodsOut(q.range, iv, starts, rows, events);
  }

  /** The last minute with traffic per bucket of an account in one environment (MCP `list_buckets`). */
  async lastTraffic(
    accountSid: string,
    environmentSid: string,
    bucketSids: string[],
  ): Promise<Map<string, string>> {
    if (bucketSids.length === 0) return new Map();
    return lastTrafficOut(await this.rows(lastTrafficSql(accountSid, environmentSid, bucketSids)));
  }

  /**
   * Event markers overlapping the range (docs/events-mcp.md), scoped like the events list: an event for
   * `*` or for the requested bucket / environment. Without a bucket filter every event of the
   * account counts.
   */
  events(q: Query): Promise<EventMarker[]> {
    return listEventsInRange(
      this.pool,
      q.accountSid,
      {
        start: new Date(q.range.start),
        end: new Date(q.range.end + MINUTE - 1),
        bucketSid: q.bucketSid,
        environmentSid: q.environmentSid,
        anyOfBuckets: q.bucketSids,
      },
      MAX_EVENTS,
    );
  }
}
