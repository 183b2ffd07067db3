import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'wouter';
import { metrics } from '../api/resources';
import { RangePicker } from '../components/range-picker';
import { Empty, QueryView } from '../components/state';
import { count, ms, percent } from '../lib/format';
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
] as const;
type SortKey = (typeof COLUMNS)[number]['key'] | 'group';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

/** Endpoint templates with count, error rate and percentiles; sortable, filterable by method. */
export function EndpointsPage() {
  const a = useAccountSid();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const { scope, refetchInterval } = useMetricsScope();
  const sort = (get('sort') ?? 'requestCount') as SortKey;
  const order = get('order') === 'asc' ? 'asc' : 'desc';
  const method = get('method') ?? '';
  const filter = get('filter') ?? '';
  const perf = useQuery({
    queryKey: ['performance', a, scope, method],
    queryFn: () => metrics.performance(a, { ...scope, method: method || undefined }, 'endpoint', 1000),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const rows = useMemo(() => {
    const list = (perf.data?.metrics ?? []).filter(
      (m) => !filter || m.group.toLowerCase().includes(filter.toLowerCase()),
    );
    const dir = order === 'asc' ? 1 : -1;
    return list.sort((x, y) =>
      sort === 'group' ? dir * x.group.localeCompare(y.group) : dir * ((x[sort] ?? 0) - (y[sort] ?? 0)),
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
                  <thead>
                    <tr>
                      {header('group', 'Endpoint')}
                      {COLUMNS.map((c) => header(c.key, c.label))}
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((m) => (
                      <tr key={m.group}>
                        <td>
                          <Link
                            href={href('/endpoints/detail', {
                              endpoint: m.group,
                              method: method || undefined,
                            })}
                            className="mono"
                          >
                            {m.group}
                          </Link>
                        </td>
                        {COLUMNS.map((c) => (
                          <td key={c.key} className="num">
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
