import { useQueryState, useRange } from './url-state';
import { intervalFor, type TimeRange } from './time';
import type { MetricsScope } from '../api/resources';

/**
 * The one `query` object every metrics panel gets: bucket, environment, consumer (`?consumer=`,
 * the header's consumer filter), range, interval.
 */
export function useMetricsScope(): {
  scope: MetricsScope;
  /** the same scope over the period just before the range, of the same length */
  previousScope: MetricsScope;
  range: TimeRange;
  interval: string;
  refetchInterval: number | false;
} {
  const { get } = useQueryState();
  const range = useRange();
  const scope: MetricsScope = {
    bucketSid: get('bucket') ?? undefined,
    environmentSid: get('env') ?? undefined,
    consumer: get('consumer') ?? undefined,
    startDate: range.start.toISOString(),
    endDate: range.end.toISOString(),
  };
  const span = range.end.getTime() - range.start.getTime();
  const previousScope: MetricsScope = {
    ...scope,
    startDate: new Date(range.start.getTime() - span).toISOString(),
    endDate: range.start.toISOString(),
  };
  // Ranges that end now refresh every 10 s while the tab is shown (the query client pauses the
  // interval of a hidden tab and catches up when it is shown again); a custom range in the past
  // never changes.
  return {
    scope,
    previousScope,
    range,
    interval: intervalFor(range),
    refetchInterval: range.live ? 10_000 : false,
  };
}

/**
 * The previous period's values placed on the current period's bucket starts: a previous bucket
 * at `t` belongs to the current bucket at `t + span` (the nearest whole interval step).
 */
export function alignPrevious(
  x: number[],
  prevX: number[],
  prevValues: (number | null)[],
  span: number,
  step: number,
): (number | null)[] {
  const byStep = new Map<number, number | null>();
  prevX.forEach((t, i) => byStep.set(Math.round((t + span) / step), prevValues[i] ?? null));
  return x.map((t) => byStep.get(Math.round(t / step)) ?? null);
}
