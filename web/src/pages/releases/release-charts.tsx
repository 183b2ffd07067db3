import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import type { EndpointImpact, ReleaseImpact } from '../../api/slos';
import type { EventMarker } from '../../api/types';
import { VerdictBadge } from '../../components/release-verdict';
import { ErrorBox, Loading } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { ms, percent } from '../../lib/format';
import { useAccountSid } from '../../lib/session';
import { intervalFor, type TimeRange } from '../../lib/time';
import { useQueryState } from '../../lib/url-state';
import { responseTimeQuery, throughputQuery } from '../../api/queries';
import { percentileSeries, throughputSeries } from '../../lib/series';

/**
 * Response time and error rate of one endpoint from the start of the before window to the end of
 * the after window, with the deployment marker between them.
 */
export function EndpointCharts({
  event,
  impact,
  x,
}: {
  event: EventMarker;
  impact: ReleaseImpact;
  x: EndpointImpact;
}) {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const range = useMemo<TimeRange>(
    () => ({
      id: 'custom',
      start: new Date(impact.window.before.from),
      end: new Date(impact.window.after.to),
      live: false,
    }),
    [impact.window.before.from, impact.window.after.to],
  );
  const interval = intervalFor(range);
  const bucketSid =
    event.bucketSids.length === 1 && event.bucketSids[0] !== '*' ? event.bucketSids[0] : undefined;
  const scope = {
    bucketSid: bucketSid ?? get('bucket') ?? undefined,
    environmentSid:
      event.environmentSids.length === 1 && event.environmentSids[0] !== '*'
        ? event.environmentSids[0]
        : (get('env') ?? undefined),
    startDate: range.start.toISOString(),
    endDate: range.end.toISOString(),
    endpoint: x.endpoint,
    method: x.method,
  };
  const refetchInterval = impact.status === 'pending' ? 30_000 : false;
  const rt = useQuery({
    ...responseTimeQuery(accountSid, scope, interval),
    refetchInterval,
  });
  const thr = useQuery({
    ...throughputQuery(accountSid, scope, interval),
    refetchInterval,
  });
  const markers = useMemo(() => [event], [event]);
  const series = useMemo(() => {
    const t = throughputSeries(thr.data?.periods);
    const r = percentileSeries(rt.data?.periods);
    return { rx: r.x, p50: r.p50, p95: r.p95, tx: t.x, errors: t.errorRate };
  }, [rt.data, thr.data]);
  const name = `${x.method} ${x.endpoint}`;
  return (
    <section className="panel" data-testid="impact-charts">
      <div className="panel-head">
        <h2 className="mono">{name}</h2>
        <span className="muted small">
          <VerdictBadge verdict={x.verdict} /> before and after the marker, per {interval}
        </span>
      </div>
      <div className="grid-2">
        <div>
          <h3 className="small">Response time</h3>
          {rt.isPending ? (
            <Loading />
          ) : rt.error && !rt.data ? (
            <ErrorBox error={rt.error} onRetry={() => void rt.refetch()} />
          ) : (
            <TimeChart
              title={`${name} response time around the release`}
              x={series.rx}
              series={[
                { label: 'p50', color: '#2563eb', values: series.p50 },
                { label: 'p95', color: '#f59e0b', values: series.p95 },
              ]}
              format={ms}
              markers={markers}
              range={range}
              interval={interval}
              height={180}
            />
          )}
        </div>
        <div>
          <h3 className="small">Error rate</h3>
          {thr.isPending ? (
            <Loading />
          ) : thr.error && !thr.data ? (
            <ErrorBox error={thr.error} onRetry={() => void thr.refetch()} />
          ) : (
            <TimeChart
              title={`${name} error rate around the release`}
              x={series.tx}
              series={[{ label: 'errors', color: '#d64545', values: series.errors }]}
              format={percent}
              markers={markers}
              range={range}
              interval={interval}
              height={180}
            />
          )}
        </div>
      </div>
    </section>
  );
}
