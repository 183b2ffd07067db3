import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { metrics } from '../api/resources';
import { RangePicker } from '../components/range-picker';
import { Empty, QueryView } from '../components/state';
import { count, ms, percent } from '../lib/format';
import { useMetricsScope } from '../lib/metrics-scope';
import { useAccountSid } from '../lib/session';
import { useQueryState, useSharedHref } from '../lib/url-state';

/** One endpoint template: its figures in the range and a way to its requests in the stream. */
export function EndpointDetailPage() {
  const a = useAccountSid();
  const { get } = useQueryState();
  const href = useSharedHref();
  const endpoint = get('endpoint') ?? '';
  const { scope, refetchInterval } = useMetricsScope();
  const perf = useQuery({
    queryKey: ['performance', a, scope],
    queryFn: () => metrics.performance(a, scope, 'endpoint', 1000),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  return (
    <div className="page">
      <div className="page-head">
        <div>
          <Link href={href('/endpoints')} className="muted small">
            ← Endpoints
          </Link>
          <h1 className="mono">{endpoint || '(no endpoint chosen)'}</h1>
        </div>
        <RangePicker />
      </div>
      <QueryView query={perf}>
        {(d) => {
          const row = d.metrics.find((m) => m.group === endpoint);
          if (!row) return <Empty title="No traffic for this endpoint in this range" />;
          return (
            <div className="tiles">
              <Tile label="Requests" value={count(row.requestCount)} />
              <Tile label="Error rate" value={percent(row.errorRate)} />
              <Tile label="Average" value={ms(row.averageResponseTime)} />
              <Tile label="p50" value={ms(row.p50ResponseTime)} />
              <Tile label="p95" value={ms(row.p95ResponseTime)} />
              <Tile label="p99" value={ms(row.p99ResponseTime)} />
            </div>
          );
        }}
      </QueryView>
      <p>
        {get('bucket') ? (
          <Link href={href('/stream', { q: `endpoint:"${endpoint}"` })}>
            Show this endpoint&apos;s requests →
          </Link>
        ) : (
          <span className="muted">Pick a bucket to see this endpoint&apos;s requests in the stream.</span>
        )}
      </p>
    </div>
  );
}

function Tile({ label, value }: { label: string; value: string }) {
  return (
    <div className="tile">
      <div className="tile-label">{label}</div>
      <div className="tile-value">{value}</div>
    </div>
  );
}
