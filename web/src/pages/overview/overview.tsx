import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Link } from 'wouter';
import { consumers, metrics } from '../../api/resources';
import type { MetricsEvent, ComparisonSummary } from '../../api/types';
import { EventDialog } from '../../components/event-dialog';
import { IngestSnippet } from '../../components/ingest-snippet';
import { RangePicker } from '../../components/range-picker';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { describeChange, type ChangeInput } from '../../lib/change';
import { count, ms, percent } from '../../lib/format';
import { INTERVAL_MS } from '../../lib/time';
import { alignPrevious, useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid, useSession } from '../../lib/session';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { responseTimeQuery, throughputQuery } from '../../api/queries';
import { percentileOf, percentileSeries, throughputSeries } from '../../lib/series';

const CLASS_COLORS = { '200': '#2e9e5b', '300': '#3b82c4', '400': '#e0a030', '500': '#d64545' } as const;

const P95_COLOR = '#f59e0b';
/** The previous period's line: a grey readable on the light and the dark panel, drawn at half opacity. */
const PREVIOUS_COLOR = '#8a93a3';

/** One empty list for every render: a new [] each time would re-run the charts' marker effect. */
const NO_MARKERS: MetricsEvent[] = [];

/**
 * Overview of a bucket (or all buckets): summary tiles, throughput, response time, error rate and
 * the top consumers.
 */
export function OverviewPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const { get, set } = useQueryState();
  const { scope, previousScope, range, interval, refetchInterval } = useMetricsScope();
  const [pick, setPick] = useState<Date | null>(null);
  const common = { placeholderData: keepPreviousData, refetchInterval };
  const summary = useQuery({
    queryKey: ['summary', accountSid, scope],
    queryFn: () => metrics.summary(accountSid, scope),
    ...common,
  });
  const throughput = useQuery({
    ...throughputQuery(accountSid, scope, interval),
    ...common,
  });
  const rt = useQuery({
    ...responseTimeQuery(accountSid, scope, interval),
    ...common,
  });
  // The period before the range, drawn faintly behind throughput and response time. It lies in
  // the past, so it is read again only when the range moves (each minute on a live range).
  const prevThroughput = useQuery({
    ...throughputQuery(accountSid, previousScope, interval),
    placeholderData: keepPreviousData,
  });
  const prevRt = useQuery({
    ...responseTimeQuery(accountSid, previousScope, interval),
    placeholderData: keepPreviousData,
  });
  const span = range.end.getTime() - range.start.getTime();
  const step = INTERVAL_MS[interval as keyof typeof INTERVAL_MS] ?? 60_000;

  const throughputChart = useMemo(() => throughputSeries(throughput.data?.periods), [throughput.data]);
  const responseTimeChart = useMemo(() => percentileSeries(rt.data?.periods), [rt.data]);
  const prevTotal = useMemo(() => {
    const periods = prevThroughput.data?.periods ?? [];
    const values = alignPrevious(
      throughputChart.x,
      periods.map((p) => Date.parse(p.startTime)),
      periods.map((p) => p.total.count),
      span,
      step,
    );
    return [{ label: 'previous period', color: PREVIOUS_COLOR, values }];
  }, [prevThroughput.data, throughputChart.x, span, step]);
  const prevP95 = useMemo(() => {
    const periods = prevRt.data?.periods ?? [];
    const values = alignPrevious(
      responseTimeChart.x,
      periods.map((p) => Date.parse(p.startTime)),
      periods.map((p) => percentileOf(p, '95')),
      span,
      step,
    );
    return [{ label: 'p95, previous period', color: P95_COLOR, values }];
  }, [prevRt.data, responseTimeChart.x, span, step]);
  const markers = throughput.data?.events ?? NO_MARKERS;
  const noTraffic = !!summary.data && (summary.data.requests.current.amount ?? 0) === 0;
  // A quiet range is not a new bucket: whether the scope had any traffic in the last 30 days
  // decides between "send your first request" and "nothing in this range", read only when the
  // range is empty.
  const recentEnd = Math.ceil(Date.now() / 60_000) * 60_000;
  const recentScope = {
    ...scope,
    startDate: new Date(recentEnd - 30 * 86_400_000).toISOString(),
    endDate: new Date(recentEnd).toISOString(),
  };
  const recent = useQuery({
    queryKey: ['summary', accountSid, recentScope],
    queryFn: () => metrics.summary(accountSid, recentScope),
    enabled: noTraffic,
  });
  const everTraffic = (recent.data?.requests.current.amount ?? 0) > 0;
  const bucket = get('bucket');

  return (
    <div className="page">
      <div className="page-head">
        <h1>Overview</h1>
        <RangePicker />
      </div>
      <Tiles
        summary={summary.data}
        error={summary.error}
        pending={summary.isPending}
        stale={summary.isPlaceholderData}
      />
      {noTraffic && recent.isPending ? null : noTraffic && everTraffic ? (
        <Empty title="No traffic in this range">
          <p>
            {range.id === 'custom'
              ? 'Nothing was received between these times.'
              : 'Nothing was received lately.'}{' '}
            Requests of the last 30 days are there in a wider range.
          </p>
          <div className="actions">
            {range.id === 'custom' ? (
              <button type="button" className="btn" onClick={() => window.history.back()}>
                ← Back to the previous range
              </button>
            ) : null}
            <button type="button" className="btn" onClick={() => set({ range: '30d', from: null, to: null })}>
              Show the last 30 days
            </button>
          </div>
        </Empty>
      ) : noTraffic ? (
        <Empty title="No traffic yet: send your first request">
          {bucket ? (
            <IngestSnippet bucketSid={bucket} />
          ) : (
            <p>Pick a bucket above to see how to send traffic to it.</p>
          )}
        </Empty>
      ) : null}
      <section className="panel" aria-busy={throughput.isPlaceholderData}>
        <div className="panel-head">
          <h2>Throughput</h2>
          <span className="muted">
            requests per {interval} · dashed: the previous period
            {can('events:write') ? ' · click the chart to add an event marker' : ''}
          </span>
        </div>
        {throughput.isPending ? (
          <Loading />
        ) : throughput.error && !throughput.data ? (
          <ErrorBox error={throughput.error} onRetry={() => void throughput.refetch()} />
        ) : (
          <TimeChart
            title="Throughput"
            x={throughputChart.x}
            stacked
            integer
            series={[
              { label: '2xx', color: CLASS_COLORS['200'], values: throughputChart.c2 },
              { label: '3xx', color: CLASS_COLORS['300'], values: throughputChart.c3 },
              { label: '4xx', color: CLASS_COLORS['400'], values: throughputChart.c4 },
              { label: '5xx', color: CLASS_COLORS['500'], values: throughputChart.c5 },
            ]}
            format={count}
            previous={prevTotal}
            markers={markers}
            onPickTime={can('events:write') ? setPick : undefined}
          />
        )}
      </section>
      <div className="grid-2">
        <section className="panel" aria-busy={rt.isPlaceholderData}>
          <div className="panel-head">
            <h2>Response time</h2>
            <span className="muted">percentiles · dashed: p95 of the previous period</span>
          </div>
          {rt.isPending ? (
            <Loading />
          ) : rt.error && !rt.data ? (
            <ErrorBox error={rt.error} onRetry={() => void rt.refetch()} />
          ) : (
            <TimeChart
              title="Response time"
              x={responseTimeChart.x}
              series={[
                { label: 'p50', color: '#2563eb', values: responseTimeChart.p50 },
                { label: 'p95', color: P95_COLOR, values: responseTimeChart.p95 },
                { label: 'p99', color: '#dc2626', values: responseTimeChart.p99 },
              ]}
              format={ms}
              previous={prevP95}
              markers={markers}
              onPickTime={can('events:write') ? setPick : undefined}
            />
          )}
        </section>
        <section className="panel" aria-busy={throughput.isPlaceholderData}>
          <div className="panel-head">
            <h2>Error rate</h2>
            <span className="muted">4xx and 5xx, % of requests</span>
          </div>
          {throughput.isPending ? (
            <Loading />
          ) : throughput.error && !throughput.data ? (
            <ErrorBox error={throughput.error} />
          ) : (
            <TimeChart
              title="Error rate"
              x={throughputChart.x}
              series={[{ label: 'errors', color: '#d64545', values: throughputChart.errorRate }]}
              format={percent}
              markers={markers}
              onPickTime={can('events:write') ? setPick : undefined}
            />
          )}
        </section>
      </div>
      {noTraffic || scope.consumer ? null : <TopConsumers />}
      {pick ? <EventDialog at={pick} bucketSid={bucket} onClose={() => setPick(null)} /> : null}
    </div>
  );
}

/**
 * The summary tiles. `stale`: the figures shown are the previous scope's while the new scope's
 * load (a bucket, environment or range just picked): dimmed and marked busy, so that they are
 * never read as the new scope's.
 */
function Tiles({
  summary,
  error,
  pending,
  stale,
}: {
  summary?: ComparisonSummary;
  error: unknown;
  pending: boolean;
  stale: boolean;
}) {
  if (pending) return <Loading />;
  if (error && !summary) return <ErrorBox error={error} />;
  if (!summary) return null;
  const errRate = (s: 'current' | 'previous') => {
    const req = summary.requests[s].amount ?? 0;
    return req ? ((summary.errors[s].amount ?? 0) / req) * 100 : null;
  };
  const cur = errRate('current');
  const prev = errRate('previous');
  const requests = {
    previousBase: summary.requests.previous.amount,
    currentBase: summary.requests.current.amount,
  };
  return (
    <div className="tiles" aria-busy={stale}>
      <Tile
        label="Requests"
        value={count(summary.requests.current.amount)}
        change={{ ...summary.requests.change, ...requests }}
      />
      <Tile
        label="Avg response time"
        value={ms(summary.responseTime.current.amount)}
        change={{ ...summary.responseTime.change, ...requests, lowerIsBetter: true }}
      />
      <Tile
        label="Error rate"
        value={percent(cur)}
        sub={`${count(summary.errors.current.amount)} ${summary.errors.current.amount === 1 ? 'error' : 'errors'}`}
        change={{
          amount: cur !== null && prev !== null ? cur - prev : null,
          units: 'points',
          ...requests,
          lowerIsBetter: true,
        }}
      />
      <Tile
        label="Blocked"
        value={count(summary.blocked.current.amount)}
        change={{
          ...summary.blocked.change,
          previousBase: summary.blocked.previous.amount,
          currentBase: summary.blocked.current.amount,
          lowerIsBetter: true,
        }}
      />
    </div>
  );
}

function Tile({
  label,
  value,
  sub,
  change,
}: {
  label: string;
  value: string;
  sub?: string;
  change: ChangeInput;
}) {
  const { text, tone } = describeChange(change);
  return (
    <div className="tile">
      <div className="tile-label">{label}</div>
      <div className="tile-value" data-testid={`tile-${label}`}>
        {value}
      </div>
      <div className={`tile-change${tone ? ` ${tone}` : ''}`} data-testid={`tile-change-${label}`}>
        {text}
      </div>
      {sub ? (
        <div className="muted small" data-testid={`tile-sub-${label}`}>
          {sub}
        </div>
      ) : null}
    </div>
  );
}

/** Consumers in the overview's table: the busiest of the range. */
const TOP_CONSUMERS = 5;

/**
 * The busiest consumers of the range (the consumers list sorted by requests), each linking to its
 * page; without any, how a bucket identifies them. Not shown while the consumer filter narrows the
 * page to one consumer.
 */
function TopConsumers() {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const { get } = useQueryState();
  const { scope, refetchInterval } = useMetricsScope();
  const query = {
    bucketSid: scope.bucketSid,
    environmentSid: scope.environmentSid,
    startDate: scope.startDate,
    endDate: scope.endDate,
    sort: 'requests' as const,
    limit: TOP_CONSUMERS,
  };
  const top = useQuery({
    queryKey: ['consumers', accountSid, 'top', query],
    queryFn: () => consumers.list(accountSid, query),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const bucket = get('bucket');
  return (
    <section className="panel" data-testid="top-consumers">
      <div className="panel-head">
        <h2>Top consumers</h2>
        <Link href={href('/consumers')}>All consumers →</Link>
      </div>
      <QueryView
        query={top}
        isEmpty={(d) => d.records.length === 0}
        empty={
          <Empty title="No consumers identified in this range">
            Calls name their consumer in the record (the Node SDK&apos;s <code>tapline.identify</code>,
            OpenTelemetry&apos;s <code>enduser.id</code>) or get one from the bucket&apos;s identification
            rules (an API key header, a bearer token, a JWT claim, a query parameter) on the{' '}
            <Link href={bucket ? `/settings/buckets/${encodeURIComponent(bucket)}` : '/settings/buckets'}>
              bucket&apos;s setup page
            </Link>
            .
          </Empty>
        }
      >
        {(d) => (
          <div className="table-wrap">
            <table className="table">
              <caption className="sr-only">The busiest consumers of the range</caption>
              <thead>
                <tr>
                  <th scope="col">Consumer</th>
                  <th scope="col" className="num">
                    Requests
                  </th>
                  <th scope="col" className="num">
                    Error rate
                  </th>
                  <th scope="col" className="num">
                    p95
                  </th>
                </tr>
              </thead>
              <tbody>
                {d.records.map((c) => (
                  <tr key={c.id} data-testid="top-consumer">
                    <td>
                      <Link
                        href={href('/consumers/detail', { id: c.id })}
                        className={c.name ? undefined : 'mono'}
                      >
                        {c.name ?? c.id}
                      </Link>
                      {c.group ? <span className="muted small"> · {c.group}</span> : null}
                    </td>
                    <td className="num">{count(c.requestCount)}</td>
                    <td className="num">{percent(c.errorRate)}</td>
                    <td className="num nowrap">{ms(c.p95)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryView>
    </section>
  );
}
