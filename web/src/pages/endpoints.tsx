import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'wouter';
import { metrics } from '../api/resources';
import { RangePicker } from '../components/range-picker';
import { Sparkline } from '../components/sparkline';
import { Empty, QueryView } from '../components/state';
import { bytes, count, ms, percent } from '../lib/format';
import { useMetricsScope } from '../lib/metrics-scope';
import { useAccountSid } from '../lib/session';
import { useQueryState, useSharedHref } from '../lib/url-state';

const COLUMNS = [
  { key: 'requestCount', label: 'Requests', fmt: count },
  { key: 'errorRate', label: 'Error rate', fmt: percent },
  { key: 'averageResponseTime', label: 'Average', fmt: ms },
  { key: 'p50ResponseTime', label: 'p50', fmt: ms },
  { key: 'p95ResponseTime', label: 'p95', fmt: ms },
  { key: 'p99ResponseTime', label: 'p99', fmt: ms },
  { key: 'averageBytes', label: 'Size', fmt: bytes },
] as const;
type SortKey = (typeof COLUMNS)[number]['key'] | 'group' | 'method';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

/**
 * One row per HTTP method and endpoint template: requests with a sparkline of them over the
 * range, error rate, average and p50/p95/p99 response time, and request plus response size per
 * request; sortable, filterable by method and text.
 */
export function EndpointsPage() {
  const a = useAccountSid();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const { scope, interval, refetchInterval } = useMetricsScope();
  const sort = (get('sort') ?? 'requestCount') as SortKey;
  const order = get('order') === 'asc' ? 'asc' : 'desc';
  const method = get('method') ?? '';
  const filter = get('filter') ?? '';
  const perf = useQuery({
    queryKey: ['performance', a, scope, method, 'route', interval],
    queryFn: () =>
      metrics.performance(a, { ...scope, method: method || undefined }, 'route', 1000, { interval }),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const rows = useMemo(() => {
    const list = (perf.data?.metrics ?? []).filter(
      (m) => !filter || (m.endpoint ?? m.group).toLowerCase().includes(filter.toLowerCase()),
    );
    const dir = order === 'asc' ? 1 : -1;
    const text = (m: (typeof list)[number]) =>
      sort === 'method' ? `${m.method ?? ''} ${m.endpoint ?? ''}` : `${m.endpoint ?? ''} ${m.method ?? ''}`;
    return list.sort((x, y) =>
      sort === 'group' || sort === 'method'
        ? dir * text(x).localeCompare(text(y))
        : dir * ((x[sort] ?? 0) - (y[sort] ?? 0)),
    );
  }, [perf.data, filter, sort, order]);
  const header = (key: SortKey, label: string) => (
    <th
      key={key}
      scope="col"
      aria-sort={sort === key ? (order === 'asc' ? 'ascending' : 'descending') : 'none'}
    >
      <button
        type="button"
        className="th-sort"
        onClick={() =>
          set({ sort: key, order: sort === key && order === 'desc' ? 'asc' : 'desc' }, { replace: true })
        }
      >
        {label}
        {sort === key ? (order === 'asc' ? ' ▲' : ' ▼') : ''}
      </button>
    </th>
  );
  return (
    <div className="page">
      <div className="page-head">
        <h1>Endpoints</h1>
        <RangePicker />
      </div>
      <div className="toolbar">
        <label>
          Method{' '}
          <select value={method} onChange={(e) => set({ method: e.target.value || null }, { replace: true })}>
            <option value="">All</option>
            {METHODS.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
        <label>
          Filter{' '}
          <input
            type="search"
            placeholder="/users/{id}"
            value={filter}
            onChange={(e) => set({ filter: e.target.value || null }, { replace: true })}
          />
        </label>
      </div>
      <section className="panel">
        <QueryView
          query={perf}
          isEmpty={(d) => d.metrics.length === 0}
          empty={
            <Empty title="No endpoints in this range">Traffic shows up here once requests arrive.</Empty>
          }
        >
          {() =>
            rows.length === 0 ? (
              <Empty title="No endpoint matches the filter" />
            ) : (
              <div className="table-wrap">
                <table className="table">
                  <caption className="sr-only">
                    Endpoints per method; Size is request plus response size per request
                  </caption>
                  <thead>
                    <tr>
                      {header('method', 'Method')}
                      {header('group', 'Endpoint')}
                      <th scope="col">Throughput</th>
                      {COLUMNS.map((c) => header(c.key, c.label))}
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((m) => (
                      <tr key={m.group} data-testid="endpoint-row">
                        <td className="mono">{m.method}</td>
                        <td>
                          <Link
                            href={href('/endpoints/detail', { endpoint: m.endpoint, method: m.method })}
                            className="mono"
                          >
                            {m.endpoint}
                          </Link>
                        </td>
                        <td className="spark-cell">
                          <Sparkline
                            values={m.throughput ?? []}
                            interval={interval}
                            label={`${m.method ?? ''} ${m.endpoint ?? ''} requests per ${interval}`}
                          />
                        </td>
                        {COLUMNS.map((c) => (
                          <td
                            key={c.key}
                            className="num"
                            title={c.key === 'averageBytes' ? `${bytes(m.bytes)} in all` : undefined}
                          >
                            {c.fmt(m[c.key])}
                          </td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </QueryView>
      </section>
    </div>
  );
}
