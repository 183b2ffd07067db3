import type { ResponseTimePeriods, ThroughputPeriods } from '../api/types';

type ThroughputPeriod = ThroughputPeriods['periods'][number];
type ResponseTimePeriod = ResponseTimePeriods['periods'][number];

/**
 * A throughput answer as chart series: each period's time, its requests by status class, 2xx and
 * 3xx together (`ok`), and the error rate (4xx and 5xx, % of requests). A period without requests
 * has no error rate: a gap, as the response-time chart leaves one, so that no traffic (an outage,
 * say) never reads as "0 % errors".
 */
export function throughputSeries(periods: ThroughputPeriod[] = []) {
  const cls = (k: '200' | '300' | '400' | '500') => periods.map((p) => p.httpStatus[k].count);
  return {
    x: periods.map((p) => Date.parse(p.startTime)),
    c2: cls('200'),
    c3: cls('300'),
    c4: cls('400'),
    c5: cls('500'),
    ok: periods.map((p) => p.httpStatus['200'].count + p.httpStatus['300'].count),
    errorRate: periods.map((p) =>
      p.total.count ? ((p.httpStatus['400'].count + p.httpStatus['500'].count) / p.total.count) * 100 : null,
    ),
  };
}

/** One percentile of a period; no requests, no response time: a gap in the line, not a 0 ms dip. */
export const percentileOf = (p: ResponseTimePeriod, k: '50' | '95' | '99'): number | null =>
  p.requests ? (p.percentiles?.[k]?.value ?? null) : null;

/** A response-time answer as chart series: each period's time and its p50, p95 and p99. */
export function percentileSeries(periods: ResponseTimePeriod[] = []) {
  return {
    x: periods.map((p) => Date.parse(p.startTime)),
    p50: periods.map((p) => percentileOf(p, '50')),
    p95: periods.map((p) => percentileOf(p, '95')),
    p99: periods.map((p) => percentileOf(p, '99')),
  };
}
