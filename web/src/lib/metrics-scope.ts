import { useQueryState, useRange } from './url-state';
import { intervalFor, type TimeRange } from './time';
import type { MetricsScope } from '../api/resources';

/** The one `query` object every metrics panel gets: bucket, environment, range, interval. */
export function useMetricsScope(): {
  scope: MetricsScope;
  range: TimeRange;
  interval: string;
  refetchInterval: number | false;
} {
  const { get } = useQueryState();
  const range = useRange();
  const scope: MetricsScope = {
    bucketSid: get('bucket') ?? undefined,
    environmentSid: get('env') ?? undefined,
    startDate: range.start.toISOString(),
    endDate: range.end.toISOString(),
  };
  // Ranges that end now refresh every 10 s; a custom range in the past never changes.
  return { scope, range, interval: intervalFor(range), refetchInterval: range.live ? 10_000 : false };
}
