import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'wouter';
import { metrics, requests } from '../../api/resources';
import { RangePicker } from '../../components/range-picker';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { withConsumer } from '../../lib/consumer';
import { count, ms, percent } from '../../lib/format';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid } from '../../lib/session';
import { formatDateTime, formatDay, formatTime, localDay, TIME_ZONE } from '../../lib/time';
import { useQueryState, useRange, useSharedHref } from '../../lib/url-state';
import { responseTimeQuery, throughputQuery } from '../../api/queries';
import { percentileSeries, throughputSeries } from '../../lib/series';

/** Rows of the recent requests and recent errors panels. */
const RECENT = 10;

/**
 * One endpoint template (and method): throughput by status class and response-time percentiles
 * over time, requests per status code, the response-time distribution, and its recent requests
 * and recent errors (with a bucket picked), each linking to the stream filtered to them.
 */
export function EndpointDetailPage() {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const href = useSharedHref();
  const endpoint = get('endpoint') ?? '';
  const method = get('method') ?? undefined;
  const base = useMetricsScope();
  const scope = { ...base.scope, endpoint, method };
  const opts = {
    placeholderData: keepPreviousData,
    refetchInterval: base.refetchInterval,
    enabled: !!endpoint,
  };
  const thr = useQuery({
    ...throughputQuery(accountSid, scope, base.interval),
    ...opts,
  });
  const rt = useQuery({
    ...responseTimeQuery(accountSid, scope, base.interval),
    ...opts,
  });
  const series = useMemo(() => {
    const t = throughputSeries(thr.data?.periods);
    const r = percentileSeries(rt.data?.periods);
    return { ...t, rx: r.x, p50: r.p50, p95: r.p95, p99: r.p99 };
  }, [thr.data, rt.data]);
  const bucket = get('bucket');
  // The stream's search for this endpoint (and method).
  const baseQ = `endpoint:"${endpoint}"${method ? ` method:${method}` : ''}`;
  const total = thr.data?.summary.total.count ?? 0;
  const errors =
    (thr.data?.summary.httpStatus['400'].count ?? 0) + (thr.data?.summary.httpStatus['500'].count ?? 0);
  return (
    <div className="page">
      <div className="page-head">
        <div>
          <Link href={href('/endpoints')} className="muted small">
            ← Endpoints
          </Link>
          <h1 className="mono">
            {method ? `${method} ` : ''}
            {endpoint || '(no endpoint chosen)'}
          </h1>
        </div>
        <RangePicker />
      </div>
      {thr.error ? <ErrorBox error={thr.error} /> : null}
      <div className="tiles">
        <div className="tile">
          <div className="tile-label">Requests</div>
          <div className="tile-value">{count(total)}</div>
        </div>
        <div className="tile">
          <div className="tile-label">Error rate</div>
          <div className="tile-value">{percent(total ? (errors / total) * 100 : null)}</div>
        </div>
        <div className="tile">
          <div className="tile-label">p95</div>
          <div className="tile-value">{ms(rt.data?.summary.percentiles?.['95']?.value)}</div>
        </div>
        <div className="tile">
          <div className="tile-label">Requests in the stream</div>
          <div className="tile-value small">
            {bucket ? (
              <Link href={href('/stream', { q: baseQ })}>Show requests →</Link>
            ) : (
              <span className="muted">pick a bucket</span>
            )}
          </div>
        </div>
      </div>
      <div className="grid-2">
        <section className="panel">
          <h2>Throughput</h2>
          {thr.isPending ? (
            <Loading />
          ) : (
            <TimeChart
              title="Endpoint throughput"
              x={series.x}
              stacked
              integer
              series={[
                { label: '2xx/3xx', color: '#2e9e5b', values: series.ok },
                { label: '4xx', color: '#e0a030', values: series.c4 },
                { label: '5xx', color: '#d64545', values: series.c5 },
              ]}
              format={count}
              markers={thr.data?.events ?? []}
            />
          )}
        </section>
        <section className="panel">
          <h2>Response time</h2>
          {rt.isPending ? (
            <Loading />
          ) : rt.error ? (
            <ErrorBox error={rt.error} />
          ) : (
            <TimeChart
              title="Endpoint response time"
              x={series.rx}
              series={[
                { label: 'p50', color: '#2563eb', values: series.p50 },
                { label: 'p95', color: '#f59e0b', values: series.p95 },
                { label: 'p99', color: '#dc2626', values: series.p99 },
              ]}
              format={ms}
              markers={rt.data?.events ?? []}
            />
          )}
        </section>
      </div>
      <div className="grid-2">
        <StatusBreakdown scope={scope} refetchInterval={base.refetchInterval} baseQ={baseQ} />
        <LatencyHistogram scope={scope} refetchInterval={base.refetchInterval} />
      </div>
      {bucket ? (
        <div className="grid-2">
          <RecentRequests
            title="Recent requests"
            bucket={bucket}
            q={baseQ}
            refetchInterval={base.refetchInterval}
            empty="No request in this range"
          />
          <RecentRequests
            title="Recent errors"
            bucket={bucket}
            q={`${baseQ} status:>=400`}
            refetchInterval={base.refetchInterval}
            empty="No error in this range"
          />
        </div>
      ) : (
        <section className="panel">
          <h2>Recent requests and errors</h2>
          <p className="muted">Pick a bucket above to see this endpoint&apos;s recent requests and errors.</p>
        </section>
      )}
    </div>
  );
}

type Scope = ReturnType<typeof useMetricsScope>['scope'];

/** Requests per status code of the endpoint, each linking to the stream of those requests. */
function StatusBreakdown({
  scope,
  refetchInterval,
  baseQ,
}: {
  scope: Scope;
  refetchInterval: number | false;
  baseQ: string;
}) {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const href = useSharedHref();
  const statuses = useQuery({
    queryKey: ['performance', accountSid, scope, 'status'],
    queryFn: () => metrics.performance(accountSid, scope, 'status', 100),
    placeholderData: keepPreviousData,
    refetchInterval,
    enabled: !!scope.endpoint,
  });
  return (
    <section className="panel">
      <h2>Status codes</h2>
      <QueryView
        query={statuses}
        isEmpty={(d) => d.metrics.length === 0}
        empty={<Empty title="No requests in this range" />}
      >
        {(d) => {
          const total = d.metrics.reduce((sum, m) => sum + m.requestCount, 0);
          const rows = [...d.metrics].sort((x, y) => Number(x.group) - Number(y.group));
          return (
            <div className="table-wrap">
              <table className="table" data-testid="status-breakdown">
                <thead>
                  <tr>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">
                      Requests
                    </th>
                    <th scope="col">Share</th>
                    <th scope="col" className="num">
                      p95
                    </th>
                    {get('bucket') ? <th scope="col">In the stream</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((m) => {
                    const share = total ? (m.requestCount / total) * 100 : 0;
                    return (
                      <tr key={m.group}>
                        <td>
                          <span className={`status status-${m.group[0]}xx`}>{m.group}</span>
                        </td>
                        <td className="num">{count(m.requestCount)}</td>
                        <td>
                          <span className="share">
                            <span className="share-track" aria-hidden="true">
                              <span className="share-bar" style={{ width: `${share}%` }} />
                            </span>
                            {percent(share)}
                          </span>
                        </td>
                        <td className="num nowrap">{ms(m.p95ResponseTime)}</td>
                        {get('bucket') ? (
                          <td>
                            <Link href={href('/stream', { q: `${baseQ} status:${m.group}` })}>
                              {m.group} requests →
                            </Link>
                          </td>
                        ) : null}
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          );
        }}
      </QueryView>
    </section>
  );
}

/**
 * How the endpoint's response times are spread over the range: the stored duration histograms,
 * merged, in bins that each span a factor of about 1.41 (bars), with the same figures in a table
 * for screen readers.
 */
function LatencyHistogram({ scope, refetchInterval }: { scope: Scope; refetchInterval: number | false }) {
  const accountSid = useAccountSid();
  const hist = useQuery({
    queryKey: ['performance', accountSid, scope, 'histogram'],
    queryFn: () => metrics.performance(accountSid, scope, 'endpoint', 1, { histogram: true }),
    placeholderData: keepPreviousData,
    refetchInterval,
    enabled: !!scope.endpoint,
  });
  return (
    <section className="panel">
      <h2>Response time distribution</h2>
      <QueryView
        query={hist}
        isEmpty={(d) => (d.metrics[0]?.histogram ?? []).length === 0}
        empty={<Empty title="No response times in this range" />}
      >
        {(d) => {
          const m = d.metrics[0]!;
          const bins = m.histogram ?? [];
          const max = Math.max(1, ...bins.map((b) => b.count));
          const label = (b: (typeof bins)[number]) => (b.to === 0 ? '0 ms' : `${ms(b.from)} – ${ms(b.to)}`);
          const marks = [
            { name: 'p50', value: m.p50ResponseTime },
            { name: 'p95', value: m.p95ResponseTime },
            { name: 'p99', value: m.p99ResponseTime },
          ];
          return (
            <figure className="histogram" data-testid="latency-histogram">
              <div className="histogram-bars" aria-hidden="true">
                {bins.map((b) => (
                  <div
                    key={b.from}
                    className={`histogram-bar${marks.some((k) => k.value >= b.from && k.value < b.to) ? ' marked' : ''}`}
                    style={{ height: `${Math.max(b.count ? 2 : 0, (b.count / max) * 100)}%` }}
                    title={`${label(b)}: ${count(b.count)} requests`}
                  />
                ))}
              </div>
              <div className="histogram-axis muted small" aria-hidden="true">
                <span>{label(bins[0]!).split(' – ')[0]}</span>
                <span>{ms(bins[bins.length - 1]!.to)}</span>
              </div>
              <figcaption className="muted small">
                Requests per response time (bins grow by a factor of about 1.41); the bars in full colour hold{' '}
                {marks.map((k) => `${k.name} ${ms(k.value)}`).join(', ')}.
              </figcaption>
              <table className="sr-only">
                <caption>Requests per response time</caption>
                <thead>
                  <tr>
                    <th scope="col">Response time</th>
                    <th scope="col">Requests</th>
                  </tr>
                </thead>
                <tbody>
                  {bins.map((b) => (
                    <tr key={b.from}>
                      <td>{label(b)}</td>
                      <td>{b.count}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </figure>
          );
        }}
      </QueryView>
    </section>
  );
}

/**
 * The newest requests matching `q` in the page's range (an endpoint's, a consumer's), linking to
 * each and to the stream filtered with `q`.
 */
export function RecentRequests({
  title,
  bucket,
  q,
  refetchInterval,
  empty,
}: {
  title: string;
  bucket: string;
  q: string;
  refetchInterval: number | false;
  empty: string;
}) {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const range = useRange();
  const { get } = useQueryState();
  const startDate = range.start.toISOString();
  const endDate = range.live ? undefined : range.end.toISOString();
  // Narrowed to the header's consumer filter, as the stream the link opens is.
  const search = withConsumer(q, get('consumer'));
  // Times alone for today's rows, with their day before (as in the stream).
  const today = localDay(Date.now());
  const list = useQuery({
    queryKey: ['requests', accountSid, bucket, search, startDate, endDate, 'recent'],
    queryFn: () => requests.list(accountSid, bucket, { q: search, startDate, endDate, limit: RECENT }),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  return (
    <section className="panel" data-testid={`recent-${title}`}>
      <div className="panel-head">
        <h2>{title}</h2>
        <Link href={href('/stream', { q })}>All in the stream →</Link>
      </div>
      <QueryView query={list} isEmpty={(d) => d.records.length === 0} empty={<Empty title={empty} />}>
        {(d) => (
          <div className="table-wrap">
            <table className="table">
              <caption className="sr-only">
                {title}, newest first (times in {TIME_ZONE})
              </caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Path</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="num">
                    Duration
                  </th>
                </tr>
              </thead>
              <tbody>
                {d.records.map((r) => {
                  const status = r.response?.statusCode ?? null;
                  return (
                    <tr key={r.sid}>
                      <td className="nowrap mono small" title={formatDateTime(r.createdAt)}>
                        {localDay(r.createdAt) === today ? '' : `${formatDay(r.createdAt)} `}
                        {formatTime(r.createdAt)}
                      </td>
                      <td className="mono">
                        <Link href={href(`/requests/${bucket}/${r.sid}`)}>{r.request.path ?? '–'}</Link>
                      </td>
                      <td>
                        {status ? (
                          <span className={`status status-${String(status)[0]}xx`}>{status}</span>
                        ) : (
                          <span className="muted">none</span>
                        )}
                      </td>
                      <td className="num nowrap">
                        {ms(typeof r.timings?.duration === 'number' ? r.timings.duration : null)}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </QueryView>
    </section>
  );
}
