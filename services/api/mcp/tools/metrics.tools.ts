import {
  intervalStart,
  nextInterval,
  previousRange,
  rangeOut,
  resolveRange,
  type GroupBy,
  type Interval,
  type Query,
  type TimeRange,
} from '../../metrics/metrics-range.js';
import { bucketFilter, bucketsInScope, ToolError, type ToolContext } from '../mcp.context.js';
import type { PERFORMANCE_SORTS } from '../mcp.inputs.js';
import {
  endpointPerformanceInput,
  errorsInput,
  listBucketsInput,
  metricsSummaryInput,
  timeseriesInput,
} from '../mcp.inputs.js';
import { fitList, type Truncation } from '../mcp.output.js';
import { defineTool } from './tool.js';

/** A timeseries answer holds at most this many points (the interval is picked to fit). */
export const MAX_POINTS = 200;
/** get_metrics_summary's per-bucket lines: at most this many buckets. */
const MAX_SUMMARY_BUCKETS = 10;
/** Event markers beside a timeseries. */
const MAX_SERIES_EVENTS = 30;
/** Groups a re-sorted performance list or a comparison reads (the REST limit's maximum). */
export const ALL_GROUPS = 1000;

/**
 * Changes (differences, percentages) are rounded to 0.001. Every `errorRate` is the /v1 metrics'
 * value as it is (percent, unrounded: docs/metrics.md "Units and rounding"), in every tool.
 */
export const r3 = (v: number): number => Math.round(v * 1000) / 1000;

/** The `truncated` field of an answer whose list was cut at `shown`. */
export const cutAt = (
  field: string,
  shown: number,
  total: number | null,
  howToGetMore: string,
): Truncation => ({
  field,
  shown,
  total,
  reason: 'limit',
  howToGetMore,
});

interface RangeArgs {
  startDate?: string;
  endDate?: string;
  bucketSid?: string;
  endpoint?: string;
  method?: string;
  consumer?: string;
}

/**
 * The token's environment, the bucket filter and the narrowing filters around a range (by default
 * the one of `args`).
 */
async function queryOf(
  ctx: ToolContext,
  args: RangeArgs,
  range: TimeRange = resolveRange(args, Date.now()),
): Promise<Query> {
  return {
    accountSid: ctx.scope.accountSid,
    environmentSid: ctx.scope.environmentSid,
    ...(await bucketFilter(ctx, args.bucketSid)),
    ...(args.endpoint !== undefined ? { endpoint: args.endpoint } : {}),
    ...(args.method !== undefined ? { method: args.method } : {}),
    ...(args.consumer !== undefined ? { consumer: args.consumer } : {}),
    range,
  };
}

interface Stats {
  requests: number;
  errorRate: number;
  averageResponseTime: number;
  p50ResponseTime: number;
  p95ResponseTime: number;
  p99ResponseTime: number;
}

/** Totals of a query: the performance list grouped by environment, narrowed to the token's one. */
export async function totalsOf(ctx: ToolContext, q: Query): Promise<Stats> {
  const res = await ctx.deps.metrics.performance(q, 'environment', 1);
  const m = res.metrics[0];
  return {
    requests: m?.requestCount ?? 0,
    errorRate: m?.errorRate ?? 0,
    averageResponseTime: m?.averageResponseTime ?? 0,
    p50ResponseTime: m?.p50ResponseTime ?? 0,
    p95ResponseTime: m?.p95ResponseTime ?? 0,
    p99ResponseTime: m?.p99ResponseTime ?? 0,
  };
}

export function changeOf(cur: Stats, prev: Stats) {
  return {
    requestsPercent: prev.requests > 0 ? r3(((cur.requests - prev.requests) / prev.requests) * 100) : null,
    errorRatePoints: r3(cur.errorRate - prev.errorRate),
    averageResponseTimeMs: r3(cur.averageResponseTime - prev.averageResponseTime),
    p95ResponseTimeMs: r3(cur.p95ResponseTime - prev.p95ResponseTime),
  };
}

export const listBuckets = defineTool<Record<string, never>>(
  {
    name: 'list_buckets',
    title: 'List buckets',
    description:
      "The buckets this token covers: sid, name, appIsConnected (an SDK has sent traffic) and lastTrafficAt (the last minute with traffic in this token's environment, null when none is kept). " +
      'Returns JSON {environmentSid, buckets, truncated}.',
    inputSchema: listBucketsInput,
  },
  async (ctx) => {
    const { buckets, more } = await bucketsInScope(ctx);
    const last = await ctx.deps.metrics.lastTraffic(
      ctx.scope.accountSid,
      ctx.scope.environmentSid,
      buckets.map((b) => b.sid),
    );
    const out = {
      environmentSid: ctx.scope.environmentSid,
      buckets: buckets.map((b) => ({
        sid: b.sid,
        name: b.name,
        appIsConnected: b.appIsConnected,
        lastTrafficAt: last.get(b.sid) ?? null,
        createdAt: b.createdAt,
      })),
      truncated: more
        ? cutAt(
            'buckets',
            buckets.length,
            null,
            'Only the oldest buckets are listed; the other tools accept any bucketSid of this token.',
          )
        : false,
    };
    return fitList(
      out,
      'buckets',
      'Only the oldest buckets are listed; pass a bucketSid to the other tools.',
    );
  },
);

export const getMetricsSummary = defineTool<RangeArgs>(
  {
    name: 'get_metrics_summary',
    title: 'Traffic summary',
    description:
      'Totals for a range (default: the last 24 hours): requests, error rate (percent), average and p50/p95/p99 response time (ms), ' +
      'each with the change against the previous period of equal length; requests by status class, the top endpoints, ' +
      'and (without bucketSid) one line per bucket. Returns JSON.',
    inputSchema: metricsSummaryInput,
  },
  async (ctx, args) => {
    const q = await queryOf(ctx, args);
    const range = q.range;
    const previous = previousRange(range);
    const pq = { ...q, range: previous };
    const [current, prev, summary] = await Promise.all([
      totalsOf(ctx, q),
      totalsOf(ctx, pq),
      ctx.deps.metrics.summary(q),
    ]);
    const out: Record<string, unknown> = {
      environmentSid: ctx.scope.environmentSid,
      ...rangeOut(range),
      previousStartDate: rangeOut(previous).startDate,
      previousEndDate: rangeOut(previous).endDate,
      current: { ...current, errors: summary.totalErrors },
      previous: prev,
      change: changeOf(current, prev),
      requestsByStatus: summary.requestsByStatus,
      topEndpoints: summary.topEndpoints,
    };
    if (args.bucketSid === undefined) {
      const { buckets, more } = await bucketsInScope(ctx);
      const shown = buckets.slice(0, MAX_SUMMARY_BUCKETS);
      const lines = await Promise.all(
        shown.map(async (b) => {
          const bq: Query = { ...q, bucketSid: b.sid };
          delete bq.bucketSids;
          const [c, p] = await Promise.all([totalsOf(ctx, bq), totalsOf(ctx, { ...bq, range: previous })]);
          return { bucketSid: b.sid, name: b.name, ...c, change: changeOf(c, p) };
        }),
      );
      out.byBucket = lines.sort((x, y) => y.requests - x.requests);
      out.truncated =
        more || buckets.length > shown.length
          ? cutAt(
              'byBucket',
              shown.length,
              more ? null : buckets.length,
              'Call again with bucketSid for a bucket not listed (list_buckets).',
            )
          : false;
    }
    return out;
  },
);

interface PerformanceArgs extends RangeArgs {
  groupBy: Exclude<GroupBy, 'environment'>;
  sortBy: (typeof PERFORMANCE_SORTS)[number];
  limit: number;
}

export const getEndpointPerformance = defineTool<PerformanceArgs>(
  {
    name: 'get_endpoint_performance',
    title: 'Performance per endpoint',
    description:
      'Per endpoint template (or method, or status code) over a range (default: the last 24 hours): request count, error rate (percent), ' +
      'average and p50/p95/p99 response time (ms), sorted by sortBy (largest first), top `limit`. ' +
      'The same numbers as GET /v1/accounts/{a}/metrics/performance. Returns JSON {groupBy, sortBy, metrics, truncated}.',
    inputSchema: endpointPerformanceInput,
  },
  async (ctx, args) => {
    const q = await queryOf(ctx, args);
    let metrics;
    let total: number | null = null;
    if (args.sortBy === 'requestCount') {
      // The REST order (count, then group): one more row only says whether the list was cut.
      metrics = (await ctx.deps.metrics.performance(q, args.groupBy, args.limit + 1)).metrics;
    } else {
      const all = (await ctx.deps.metrics.performance(q, args.groupBy, ALL_GROUPS)).metrics;
      const key = args.sortBy;
      metrics = all.sort((x, y) => y[key] - x[key] || (x.group < y.group ? -1 : x.group > y.group ? 1 : 0));
      total = all.length < ALL_GROUPS ? all.length : null;
    }
    const cut = metrics.length > args.limit;
    const out = {
      environmentSid: ctx.scope.environmentSid,
      ...rangeOut(q.range),
      groupBy: args.groupBy,
      sortBy: args.sortBy,
      // The REST numbers as they are: this list equals GET …/metrics/performance.
      metrics: metrics.slice(0, args.limit),
      truncated: cut
        ? cutAt(
            'metrics',
            args.limit,
            total,
            'Raise limit (≤ 100) or narrow with endpoint, method or bucketSid.',
          )
        : false,
    };
    return fitList(out, 'metrics', 'Lower limit or narrow with endpoint, method or bucketSid.');
  },
);

interface ErrorsArgs extends RangeArgs {
  statusCode?: number;
  limit: number;
}

export const getErrors = defineTool<ErrorsArgs>(
  {
    name: 'get_errors',
    title: 'Errors',
    description:
      'Errors (status ≥ 400) over a range (default: the last 24 hours): total and rate (percent), counts by status code, and per endpoint ' +
      'the error count, rate and most common status codes, most errors first. Returns JSON.',
    inputSchema: errorsInput,
  },
  async (ctx, args) => {
    const q = await queryOf(ctx, args);
    const res = await ctx.deps.metrics.errors(q, args.statusCode, args.limit + 1);
    const cut = res.errorsByEndpoint.length > args.limit;
    const out = {
      environmentSid: ctx.scope.environmentSid,
      ...res,
      errorsByEndpoint: res.errorsByEndpoint
        .slice(0, args.limit)
        .map((e) => ({ ...e, mostCommonErrors: e.mostCommonErrors.slice(0, 5) })),
      truncated: cut
        ? cutAt(
            'errorsByEndpoint',
            args.limit,
            null,
            'Raise limit (≤ 100) or narrow with statusCode, endpoint or method.',
          )
        : false,
    };
    return fitList(out, 'errorsByEndpoint', 'Lower limit or narrow with statusCode, endpoint or method.');
  },
);

/** Intervals of `iv` in `range`, counted up to `max + 1`. */
function countIntervals(range: TimeRange, iv: Interval, max: number): number {
  let n = 0;
  for (let t = intervalStart(range.start, iv); t <= range.end && n <= max; t = nextInterval(t, iv)) n++;
  return n;
}

const INTERVALS: Interval[] = ['minute', 'hour', 'day', 'week', 'month'];

interface TimeseriesArgs extends RangeArgs {
  interval?: Interval;
}

export const getTimeseries = defineTool<TimeseriesArgs>(
  {
    name: 'get_timeseries',
    title: 'Throughput and response-time series',
    description:
      'Per interval over a range (default: the last 24 hours): requests, errors, average and p50/p95/p99 response time (ms), ' +
      `at most ${MAX_POINTS} points (without interval the finest that fits is picked), plus the event markers in range ` +
      '(deployments, incidents…). Returns JSON {interval, columns, points, events}: each point is a row in `columns` order.',
    inputSchema: timeseriesInput,
  },
  async (ctx, args) => {
    const range = resolveRange(args, Date.now());
    const fits = (iv: Interval) => countIntervals(range, iv, MAX_POINTS) <= MAX_POINTS;
    const fitting = INTERVALS.find(fits) ?? 'month';
    const iv = args.interval ?? fitting;
    if (!fits(iv))
      throw new ToolError(
        `A ${iv} series of this range has more than ${MAX_POINTS} points: use interval ${fitting} or a shorter range`,
        { interval: `at most ${MAX_POINTS} points; ${fitting} fits this range` },
      );
    const q = await queryOf(ctx, args, range);
    const [tp, rt] = await Promise.all([
      ctx.deps.metrics.throughput(q, iv),
      ctx.deps.metrics.responseTimePeriods(q, iv),
    ]);
    const points = tp.data.map((d, i) => {
      const p = rt.periods[i]?.percentiles as Record<string, { value: number }> | undefined;
      return [
        d.timestamp,
        d.requestCount,
        d.errorCount,
        d.averageResponseTime,
        p?.['50']?.value ?? 0,
        p?.['95']?.value ?? 0,
        p?.['99']?.value ?? 0,
      ];
    });
    const events = tp.events.slice(0, MAX_SERIES_EVENTS).map((e) => ({
      sid: e.sid,
      type: e.type,
      name: e.name,
      startedAt: e.startedAt,
      endedAt: e.endedAt,
    }));
    const out = {
      environmentSid: ctx.scope.environmentSid,
      ...rangeOut(range),
      interval: iv,
      columns: ['start', 'requests', 'errors', 'avgMs', 'p50Ms', 'p95Ms', 'p99Ms'],
      points,
      events,
      truncated:
        tp.events.length > events.length
          ? cutAt(
              'events',
              events.length,
              tp.events.length,
              'list_events with startTime and endTime lists every marker of the range.',
            )
          : false,
    };
    return fitList(out, 'events', 'list_events with startTime and endTime lists every marker of the range.');
  },
);

export const METRICS_TOOLS = [
  listBuckets,
  getMetricsSummary,
  getEndpointPerformance,
  getErrors,
  getTimeseries,
];
