import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'wouter';
import { metrics } from '../api/resources';
import { RangePicker } from '../components/range-picker';
import { ErrorBox, Loading } from '../components/state';
import { TimeChart } from '../components/time-chart';
import { count, ms, percent } from '../lib/format';
import { useMetricsScope } from '../lib/metrics-scope';
import { useAccountSid } from '../lib/session';
import { useQueryState, useSharedHref } from '../lib/url-state';

/** One endpoint template's own charts: throughput by status class and response-time percentiles. */
export function EndpointDetailPage() {
  const a = useAccountSid();
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
    queryKey: ['throughput', a, scope, base.interval],
    queryFn: () => metrics.throughput(a, scope, base.interval),
    ...opts,
  });
  const rt = useQuery({
    queryKey: ['responseTime', a, scope, base.interval],
    queryFn: () => metrics.responseTime(a, scope, base.interval),
    ...opts,
  });
  const series = useMemo(() => {
    const p = thr.data?.periods ?? [];
    const r = rt.data?.periods ?? [];
    return {
      x: p.map((v) => Date.parse(v.startTime)),
      ok: p.map((v) => v.httpStatus['200'].count + v.httpStatus['300'].count),
      c4: p.map((v) => v.httpStatus['400'].count),
      c5: p.map((v) => v.httpStatus['500'].count),
      rx: r.map((v) => Date.parse(v.startTime)),
      p50: r.map((v) => (v.requests ? (v.percentiles?.['50']?.value ?? null) : null)),
      p95: r.map((v) => (v.requests ? (v.percentiles?.['95']?.value ?? null) : null)),
      p99: r.map((v) => (v.requests ? (v.percentiles?.['99']?.value ?? null) : null)),
    };
  }, [thr.data, rt.data]);
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
            {get('bucket') ? (
              <Link
                href={href('/stream', { q: `endpoint:"${endpoint}"${method ? ` method:${method}` : ''}` })}
              >
                Show requests →
              </Link>
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
    </div>
  );
}
