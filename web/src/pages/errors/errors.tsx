import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link, useLocation } from 'wouter';
import { metrics } from '../../api/resources';
import type { MetricsEvent } from '../../api/types';
import { RangePicker } from '../../components/range-picker';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { count, percent } from '../../lib/format';
import { INTERVAL_MS } from '../../lib/time';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid } from '../../lib/session';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { throughputQuery } from '../../api/queries';
import { DataTable } from '../../components/data-table';

/** One empty list for every render: a new [] each time would re-run the chart's marker effect. */
const NO_MARKERS: MetricsEvent[] = [];

/**
 * Errors over time by status class, errors by status code and by endpoint with their most common
 * codes; each links to the stream.
 */
export function ErrorsPage() {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const href = useSharedHref();
  const [, navigate] = useLocation();
  const { scope, interval, refetchInterval } = useMetricsScope();
  const bucket = get('bucket');
  const overTime = useQuery({
    ...throughputQuery(accountSid, scope, interval),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const classes = useMemo(() => {
    const periods = overTime.data?.periods ?? [];
    return {
      x: periods.map((p) => Date.parse(p.startTime)),
      c4: periods.map((p) => p.httpStatus['400'].count),
      c5: periods.map((p) => p.httpStatus['500'].count),
    };
  }, [overTime.data]);
  const step = INTERVAL_MS[interval as keyof typeof INTERVAL_MS] ?? 60_000;
  // A point opens the stream for its bucket (that minute, hour or day) and its status class.
  const openPoint = (start: Date, label: string) =>
    navigate(
      href('/stream', {
        q: `status:${label}`,
        range: 'custom',
        from: start.toISOString(),
        to: new Date(start.getTime() + step).toISOString(),
      }),
    );
  const errors = useQuery({
    queryKey: ['errors', accountSid, scope],
    queryFn: () => metrics.errors(accountSid, scope, 200),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const streamLink = (q: string) => (bucket ? href('/stream', { q }) : undefined);
  return (
    <div className="page">
      <div className="page-head">
        <h1>Errors</h1>
        <RangePicker />
      </div>
      {!bucket ? <p className="hint">Pick a bucket to click through to the matching requests.</p> : null}
      <section className="panel">
        <div className="panel-head">
          <h2>Errors over time</h2>
          <span className="muted">
            errors per {interval} by status class
            {bucket ? ` · click a point to see its requests` : ''}
          </span>
        </div>
        {overTime.isPending ? (
          <Loading />
        ) : overTime.error && !overTime.data ? (
          <ErrorBox error={overTime.error} onRetry={() => void overTime.refetch()} />
        ) : (
          <TimeChart
            title="Errors over time"
            x={classes.x}
            integer
            series={[
              { label: '4xx', color: '#e0a030', values: classes.c4 },
              { label: '5xx', color: '#d64545', values: classes.c5 },
            ]}
            format={count}
            markers={overTime.data?.events ?? NO_MARKERS}
            onPickPoint={bucket ? openPoint : undefined}
          />
        )}
      </section>
      <QueryView
        query={errors}
        isEmpty={(d) => d.totalErrors === 0}
        empty={
          <Empty title="No errors in this range">Requests with a status of 400 or more show up here.</Empty>
        }
      >
        {(d) => (
          <>
            <div className="tiles">
              <div className="tile">
                <div className="tile-label">Errors</div>
                <div className="tile-value">{count(d.totalErrors)}</div>
              </div>
              <div className="tile">
                <div className="tile-label">Error rate</div>
                <div className="tile-value">{percent(d.errorRate)}</div>
              </div>
            </div>
            <div className="grid-2">
              <section className="panel">
                <h2>By status</h2>
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Status</th>
                      <th scope="col" className="num">
                        Errors
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {Object.entries(d.errorsByStatus)
                      .sort((x, y) => (y[1] as number) - (x[1] as number))
                      .map(([status, n]) => {
                        const to = streamLink(`status:${status}`);
                        return (
                          <tr key={status}>
                            <td>
                              <span className={`status status-${status[0]}xx`}>{status}</span>{' '}
                              {to ? <Link href={to}>requests →</Link> : null}
                            </td>
                            <td className="num">{count(n as number)}</td>
                          </tr>
                        );
                      })}
                  </tbody>
                </table>
              </section>
              <section className="panel">
                <h2>By endpoint</h2>
                <DataTable
                  columns={[
                    'Endpoint',
                    { label: 'Errors', numeric: true },
                    { label: 'Rate', numeric: true },
                    'Most common',
                  ]}
                >
                  {d.errorsByEndpoint.map((e) => {
                    const to = streamLink(`endpoint:"${e.endpoint}" status:>=400`);
                    return (
                      <tr key={e.endpoint}>
                        <td className="mono">{to ? <Link href={to}>{e.endpoint}</Link> : e.endpoint}</td>
                        <td className="num">{count(e.errorCount)}</td>
                        <td className="num">{percent(e.errorRate)}</td>
                        <td>
                          {e.mostCommonErrors.map((c) => (
                            <span key={c} className={`status status-${String(c)[0]}xx`}>
                              {c}
                            </span>
                          ))}
                        </td>
                      </tr>
                    );
                  })}
                </DataTable>
              </section>
            </div>
          </>
        )}
      </QueryView>
    </div>
  );
}
