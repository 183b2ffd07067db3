import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Link } from 'wouter';
import { metrics } from '../../api/resources';
import {
  MergeDialog,
  proposePattern,
  TemplateRules,
  TemplateSuggestions,
  type ListedEndpoint,
} from './endpoint-templates';
import { RangePicker } from '../../components/range-picker';
import { Sparkline } from '../../components/sparkline';
import { Empty, QueryView } from '../../components/state';
import { bytes, count, ms, percent } from '../../lib/format';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid, useSession } from '../../lib/session';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { useBuckets } from '../../api/queries';

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
 * request; sortable, filterable by method and text. With a bucket chosen (or the account's only
 * one), rows can be selected and merged into an endpoint template rule, the range's suggestions
 * are offered above the table and the bucket's rules listed below it.
 */
export function EndpointsPage() {
  const accountSid = useAccountSid();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const { scope, interval, refetchInterval } = useMetricsScope();
  const sort = (get('sort') ?? 'requestCount') as SortKey;
  const order = get('order') === 'asc' ? 'asc' : 'desc';
  const method = get('method') ?? '';
  const filter = get('filter') ?? '';
  const { can } = useSession();
  const bucketList = useBuckets({ enabled: !scope.bucketSid });
  const only = bucketList.data?.records.length === 1 ? bucketList.data.records[0]!.sid : undefined;
  const bucket = scope.bucketSid ?? only;
  const mayMerge = bucket !== undefined && can('buckets:write');
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [merging, setMerging] = useState<string | null>(null);
  const perf = useQuery({
    queryKey: ['performance', accountSid, scope, method, 'route', interval],
    queryFn: () =>
      metrics.performance(accountSid, { ...scope, method: method || undefined }, 'route', 1000, { interval }),
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
  const listed = useMemo<ListedEndpoint[]>(
    () =>
      (perf.data?.metrics ?? []).map((m) => ({ method: m.method ?? '', endpoint: m.endpoint ?? m.group })),
    [perf.data],
  );
  const picked = rows.filter((m) => selected.has(m.group));
  const tick = (group: string, on: boolean) =>
    setSelected((prev) => {
      const next = new Set(prev);
      if (on) next.add(group);
      else next.delete(group);
      return next;
    });
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
        {mayMerge ? (
          <button
            type="button"
            className="btn"
            disabled={picked.length === 0}
            onClick={() => setMerging(proposePattern(picked.map((m) => m.endpoint ?? m.group)))}
          >
            Merge into template{picked.length ? ` (${picked.length})` : ''}
          </button>
        ) : null}
        {mayMerge && picked.length === 0 ? (
          <span className="muted small">Tick the endpoints to merge in the Merge column.</span>
        ) : !bucket && can('buckets:write') && bucketList.data ? (
          <span className="muted small">Choose a bucket to merge endpoints into a template rule.</span>
        ) : null}
      </div>
      {bucket ? <TemplateSuggestions bucket={bucket} scope={scope} listed={listed} /> : null}
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
                      {mayMerge ? (
                        <th scope="col" className="select-cell actions-col nowrap">
                          <span aria-hidden="true">Merge </span>
                          <input
                            type="checkbox"
                            aria-label="Select every endpoint listed to merge them"
                            checked={rows.length > 0 && rows.every((m) => selected.has(m.group))}
                            onChange={(ev) =>
                              setSelected(ev.target.checked ? new Set(rows.map((m) => m.group)) : new Set())
                            }
                          />
                        </th>
                      ) : null}
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
                        {mayMerge ? (
                          <td className="select-cell">
                            {/* In a row-actions box: kept in view when the table scrolls at 390 px. */}
                            <div className="row-actions">
                              <input
                                type="checkbox"
                                aria-label={`Select ${m.method ?? ''} ${m.endpoint ?? m.group} to merge`}
                                checked={selected.has(m.group)}
                                onChange={(ev) => tick(m.group, ev.target.checked)}
                              />
                            </div>
                          </td>
                        ) : null}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </QueryView>
      </section>
      {bucket ? <TemplateRules bucket={bucket} /> : null}
      {merging !== null && bucket ? (
        <MergeDialog
          bucket={bucket}
          initialPattern={merging}
          listed={listed}
          onClose={() => setMerging(null)}
          onSaved={() => setSelected(new Set())}
        />
      ) : null}
    </div>
  );
}
