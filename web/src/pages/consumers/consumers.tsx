import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { Link } from 'wouter';
import { consumers, metrics, type ConsumerQuery } from '../../api/resources';
import type { ConsumerSummary } from '../../api/types';
import { RangePicker } from '../../components/range-picker';
import { Sparkline } from '../../components/sparkline';
import { Empty, QueryView } from '../../components/state';
import { count, ms, percent } from '../../lib/format';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { useQueryState, useSharedHref } from '../../lib/url-state';

/** Rows of one page of the table (the API's default page size). */
const PAGE_SIZE = 25;
/**
 * The busiest consumers whose requests per interval come in one call for the sparklines; a row
 * outside them asks for its own series.
 */
const SPARK_BATCH = 1000;

type SortKey = NonNullable<ConsumerQuery['sort']>;
const SORTS: readonly SortKey[] = ['requests', 'errorRate', 'p95', 'lastSeen', 'name'];

/**
 * Who is calling (docs/consumers.md): one row per consumer with traffic in the range, with its
 * requests and a sparkline of them, error rate, p95 and the last call; sorted, searched (`q`) and
 * paged by the API. A consumer first seen inside the range is marked "new".
 */
export function ConsumersPage() {
  const accountSid = useAccountSid();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const metricsScope = useMetricsScope();
  const { range, interval, refetchInterval } = metricsScope;
  // The list is where consumers are found: the header's consumer filter does not narrow it.
  const scope = { ...metricsScope.scope, consumer: undefined };
  const sortParam = get('sort') as SortKey | null;
  const sort: SortKey = sortParam && SORTS.includes(sortParam) ? sortParam : 'requests';
  const order = get('order') === 'asc' ? 'asc' : 'desc';
  const q = get('q') ?? '';
  const page = Math.max(1, Number(get('page')) || 1);
  // The search box answers as one types; the URL (and the call) follow after a short pause.
  const [text, setText] = useState(q);
  useEffect(() => setText(q), [q]);
  useEffect(() => {
    if (text === q) return;
    const t = setTimeout(() => set({ q: text || null, page: null }, { replace: true }), 250);
    return () => clearTimeout(t);
  }, [text, q, set]);
  const listScope = {
    bucketSid: scope.bucketSid,
    environmentSid: scope.environmentSid,
    startDate: scope.startDate,
    endDate: scope.endDate,
  };
  const list = useQuery({
    queryKey: ['consumers', accountSid, listScope, sort, order, q, page],
    queryFn: () =>
      consumers.list(accountSid, { ...listScope, sort, order, q: q || undefined, page, limit: PAGE_SIZE }),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const series = useQuery({
    queryKey: ['performance', accountSid, scope, 'consumer', interval],
    queryFn: () => metrics.performance(accountSid, scope, 'consumer', SPARK_BATCH, { interval }),
    placeholderData: keepPreviousData,
    refetchInterval,
  });
  const byId = useMemo(
    () => new Map((series.data?.metrics ?? []).map((m) => [m.group, m.throughput ?? []])),
    [series.data],
  );
  const start = range.start.getTime();
  const header = (key: SortKey, label: string, numeric = false) => (
    <th
      key={key}
      scope="col"
      className={numeric ? 'num' : undefined}
      aria-sort={sort === key ? (order === 'asc' ? 'ascending' : 'descending') : 'none'}
    >
      <button
        type="button"
        className="th-sort"
        onClick={() =>
          set(
            { sort: key, order: sort === key && order === 'desc' ? 'asc' : 'desc', page: null },
            { replace: true },
          )
        }
      >
        {label}
        {sort === key ? (order === 'asc' ? ' ▲' : ' ▼') : ''}
      </button>
    </th>
  );
  const bucket = get('bucket');
  return (
    <div className="page">
      <div className="page-head">
        <h1>Consumers</h1>
        <RangePicker />
      </div>
      <div className="toolbar">
        <label>
          Search{' '}
          <input
            type="search"
            placeholder="id, name or group"
            maxLength={256}
            value={text}
            onChange={(e) => setText(e.target.value)}
          />
        </label>
      </div>
      <section className="panel">
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0 && !q && page === 1}
          empty={
            <Empty title="No consumers in this range">
              A consumer is whoever made a call: a customer, a partner app, an API key. Calls get one from the
              record&apos;s <code>consumer</code> field (the Node SDK&apos;s <code>tapline.identify</code>,
              OpenTelemetry&apos;s <code>enduser.id</code>) or from the bucket&apos;s identification rules (an
              API key header, a bearer token, a JWT claim, a query parameter), set on the{' '}
              <Link href={bucket ? `/settings/buckets/${encodeURIComponent(bucket)}` : '/settings/buckets'}>
                bucket&apos;s setup page
              </Link>
              . docs/consumers.md describes both.
            </Empty>
          }
        >
          {(d) =>
            d.records.length === 0 ? (
              <Empty title="No consumer matches the search" />
            ) : (
              <>
                <div className="table-wrap">
                  <table className="table" data-testid="consumers-table">
                    <caption className="sr-only">
                      Consumers with traffic in the range; &quot;new&quot; marks one first seen in it
                    </caption>
                    <thead>
                      <tr>
                        {header('name', 'Consumer')}
                        <th scope="col">Group</th>
                        {header('requests', 'Requests', true)}
                        <th scope="col">Throughput</th>
                        {header('errorRate', 'Error rate', true)}
                        {header('p95', 'p95', true)}
                        {header('lastSeen', 'Last seen')}
                      </tr>
                    </thead>
                    <tbody>
                      {d.records.map((c) => (
                        <ConsumerRow
                          key={c.id}
                          consumer={c}
                          href={href('/consumers/detail', { id: c.id })}
                          isNew={c.firstSeenAt !== null && Date.parse(c.firstSeenAt) >= start}
                          values={byId.get(c.id)}
                          seriesReady={!series.isPending}
                          interval={interval}
                        />
                      ))}
                    </tbody>
                  </table>
                </div>
                {page > 1 || d.hasMore ? (
                  <nav className="toolbar" aria-label="Pages">
                    <button
                      type="button"
                      className="btn btn-small"
                      disabled={page <= 1}
                      onClick={() => set({ page: page > 2 ? String(page - 1) : null }, { replace: true })}
                    >
                      ← Previous
                    </button>
                    <span className="muted small">Page {page}</span>
                    <button
                      type="button"
                      className="btn btn-small"
                      disabled={!d.hasMore}
                      onClick={() => set({ page: String(page + 1) }, { replace: true })}
                    >
                      Next →
                    </button>
                  </nav>
                ) : null}
              </>
            )
          }
        </QueryView>
      </section>
    </div>
  );
}

function ConsumerRow({
  consumer: c,
  href,
  isNew,
  values,
  seriesReady,
  interval,
}: {
  consumer: ConsumerSummary;
  href: string;
  isNew: boolean;
  values: number[] | undefined;
  seriesReady: boolean;
  interval: string;
}) {
  const label = c.name ?? c.id;
  return (
    <tr data-testid="consumer-row">
      <td>
        <Link href={href} className={c.name ? undefined : 'mono'}>
          {label}
        </Link>
        {c.name ? <div className="muted small mono">{c.id}</div> : null}
        {isNew ? (
          <span className="badge badge-ok consumer-new" title="First seen in this range">
            new
          </span>
        ) : null}
      </td>
      <td>{c.group ?? <span className="muted">–</span>}</td>
      <td className="num">{count(c.requestCount)}</td>
      <td className="spark-cell">
        {values ? (
          <Sparkline values={values} interval={interval} label={`${label} requests per ${interval}`} />
        ) : seriesReady ? (
          <OwnSparkline id={c.id} label={label} />
        ) : null}
      </td>
      <td className="num">{percent(c.errorRate)}</td>
      <td className="num nowrap">{ms(c.p95)}</td>
      <td className="nowrap small">{c.lastSeenAt ? formatDateTime(c.lastSeenAt) : '–'}</td>
    </tr>
  );
}

/** The sparkline of a consumer outside the busiest ones, read for that consumer alone. */
function OwnSparkline({ id, label }: { id: string; label: string }) {
  const accountSid = useAccountSid();
  const { scope, interval } = useMetricsScope();
  const one = { ...scope, consumer: id };
  const perf = useQuery({
    queryKey: ['performance', accountSid, one, 'consumer', interval],
    queryFn: () => metrics.performance(accountSid, one, 'consumer', 1, { interval }),
    placeholderData: keepPreviousData,
  });
  const values = perf.data?.metrics[0]?.throughput;
  return values ? (
    <Sparkline values={values} interval={interval} label={`${label} requests per ${interval}`} />
  ) : null;
}
