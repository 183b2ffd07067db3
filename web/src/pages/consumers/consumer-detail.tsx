import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { Link } from 'wouter';
import { consumers } from '../../api/resources';
import type { ConsumerDetail, ConsumerUpdate } from '../../api/types';
import { Field, FormError } from '../../components/form';
import { RangePicker } from '../../components/range-picker';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { consumerTerm } from '../../lib/consumer';
import { count, ms, percent } from '../../lib/format';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { RecentRequests } from '../endpoints/endpoint-detail';
import { responseTimeQuery, throughputQuery } from '../../api/queries';
import { percentileSeries, throughputSeries } from '../../lib/series';

const CLASS_COLORS = { ok: '#2e9e5b', c4: '#e0a030', c5: '#d64545' } as const;

/**
 * One consumer (docs/consumers.md): its throughput, response time and error rate over the range
 * (the metrics filtered with `consumer=`), the endpoints it called, its recent errors linking to
 * the stream filtered to it, and a form that names it and sets its group.
 */
export function ConsumerDetailPage() {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const href = useSharedHref();
  const id = get('id') ?? '';
  const base = useMetricsScope();
  const scope = { ...base.scope, consumer: id };
  const detailScope = {
    bucketSid: base.scope.bucketSid,
    environmentSid: base.scope.environmentSid,
    startDate: base.scope.startDate,
    endDate: base.scope.endDate,
  };
  const opts = { placeholderData: keepPreviousData, refetchInterval: base.refetchInterval, enabled: !!id };
  const detail = useQuery({
    queryKey: ['consumer', accountSid, id, detailScope],
    queryFn: () => consumers.get(accountSid, id, detailScope),
    ...opts,
  });
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
  const c = detail.data;
  const isNew = !!c?.firstSeenAt && Date.parse(c.firstSeenAt) >= base.range.start.getTime();
  const term = consumerTerm(id);
  return (
    <div className="page">
      <div className="page-head">
        <div>
          <Link href={href('/consumers')} className="muted small">
            ← Consumers
          </Link>
          <h1 className={c?.name ? undefined : 'mono'}>
            {c?.name ?? (id || '(no consumer chosen)')}
            {isNew ? (
              <span className="badge badge-ok consumer-new" title="First seen in this range">
                new
              </span>
            ) : null}
          </h1>
          {c?.name ? <div className="muted small mono">{id}</div> : null}
        </div>
        <RangePicker />
      </div>
      {detail.error ? <ErrorBox error={detail.error} onRetry={() => void detail.refetch()} /> : null}
      <div className="tiles">
        <div className="tile">
          <div className="tile-label">Requests</div>
          <div className="tile-value">{count(c?.requestCount)}</div>
        </div>
        <div className="tile">
          <div className="tile-label">Error rate</div>
          <div className="tile-value">{percent(c?.errorRate)}</div>
        </div>
        <div className="tile">
          <div className="tile-label">p95</div>
          <div className="tile-value">{ms(c?.p95)}</div>
        </div>
        <div className="tile">
          <div className="tile-label">Group</div>
          <div className="tile-value small">{c?.group ?? <span className="muted">none</span>}</div>
        </div>
        <div className="tile">
          <div className="tile-label">First and last call</div>
          <div className="tile-value small">
            {c?.firstSeenAt ? formatDateTime(c.firstSeenAt) : '–'}
            <br />
            {c?.lastSeenAt ? formatDateTime(c.lastSeenAt) : '–'}
          </div>
        </div>
      </div>
      <div className="grid-2">
        <section className="panel">
          <h2>Throughput</h2>
          {thr.isPending ? (
            <Loading />
          ) : thr.error && !thr.data ? (
            <ErrorBox error={thr.error} />
          ) : (
            <TimeChart
              title="Throughput"
              x={series.x}
              stacked
              integer
              series={[
                { label: '2xx/3xx', color: CLASS_COLORS.ok, values: series.ok },
                { label: '4xx', color: CLASS_COLORS.c4, values: series.c4 },
                { label: '5xx', color: CLASS_COLORS.c5, values: series.c5 },
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
          ) : rt.error && !rt.data ? (
            <ErrorBox error={rt.error} />
          ) : (
            <TimeChart
              title="Response time"
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
        <section className="panel">
          <div className="panel-head">
            <h2>Error rate</h2>
            <span className="muted">4xx and 5xx, % of requests</span>
          </div>
          {thr.isPending ? (
            <Loading />
          ) : thr.error && !thr.data ? (
            <ErrorBox error={thr.error} />
          ) : (
            <TimeChart
              title="Error rate"
              x={series.x}
              series={[{ label: 'errors', color: CLASS_COLORS.c5, values: series.errorRate }]}
              format={percent}
              markers={thr.data?.events ?? []}
            />
          )}
        </section>
        {c ? <NameForm consumer={c} /> : <section className="panel" />}
      </div>
      <section className="panel">
        <h2>Endpoints used</h2>
        <QueryView
          query={detail}
          isEmpty={(d) => d.endpoints.length === 0}
          empty={<Empty title="No calls in this range" />}
        >
          {(d) => (
            <div className="table-wrap">
              <table className="table" data-testid="consumer-endpoints">
                <caption className="sr-only">
                  Endpoints the consumer called in the range, busiest first
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Endpoint</th>
                    <th scope="col" className="num">
                      Requests
                    </th>
                    <th scope="col" className="num">
                      Errors
                    </th>
                    <th scope="col" className="num">
                      p95
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.endpoints.map((e) => (
                    <tr key={`${e.method} ${e.endpoint}`}>
                      {/* Method and path in one cell that wraps anywhere: the table fits a phone's width. */}
                      <td className="cell-path">
                        <span className="mono">{e.method}</span>{' '}
                        <Link
                          href={href('/endpoints/detail', { endpoint: e.endpoint, method: e.method })}
                          className="mono"
                        >
                          {e.endpoint}
                        </Link>
                      </td>
                      <td className="num">{count(e.requestCount)}</td>
                      <td className="num">{count(e.errorCount)}</td>
                      <td className="num nowrap">{ms(e.p95)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </section>
      {bucket ? (
        <RecentRequests
          title="Recent errors"
          bucket={bucket}
          q={`${term} status:>=400`}
          refetchInterval={base.refetchInterval}
          empty="No error in this range"
        />
      ) : (
        <section className="panel">
          <h2>Recent errors</h2>
          <p className="muted">
            Pick a bucket above to see this consumer&apos;s recent errors and its requests in the stream (
            <code>{term}</code>).
          </p>
        </section>
      )}
    </div>
  );
}

/**
 * Name and group set through the API (PUT; an empty field clears the value set here, so the
 * one the records carry shows again). Save is offered once a field differs from the consumer's;
 * the API's message is shown when it refuses.
 */
function NameForm({ consumer }: { consumer: ConsumerDetail }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const [name, setName] = useState(consumer.name ?? '');
  const [group, setGroup] = useState(consumer.group ?? '');
  // A new consumer, or a change from elsewhere, refills the form.
  useEffect(() => {
    setName(consumer.name ?? '');
    setGroup(consumer.group ?? '');
  }, [consumer.id, consumer.name, consumer.group]);
  // Only the fields changed here are sent: a group the calls carry stays theirs while only the
  // name is set (the last write wins between the API and the records, docs/consumers.md).
  const changes: ConsumerUpdate = {};
  if (name.trim() !== (consumer.name ?? '')) changes.name = name.trim() || null;
  if (group.trim() !== (consumer.group ?? '')) changes.group = group.trim() || null;
  const changed = Object.keys(changes).length > 0;
  const save = useMutation({
    mutationFn: (body: ConsumerUpdate) => consumers.update(accountSid, consumer.id, body),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['consumer', accountSid, consumer.id] });
      void qc.invalidateQueries({ queryKey: ['consumers', accountSid] });
    },
  });
  const editable = can('buckets:write');
  return (
    <section className="panel">
      <h2>Name and group</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (changed) save.mutate(changes);
        }}
      >
        <Field
          id="consumer-name"
          label="Name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          disabled={!editable}
          hint="Shown instead of the id. Empty: the name the calls carry, if any."
        />
        <Field
          id="consumer-group"
          label="Group"
          value={group}
          onChange={(e) => setGroup(e.target.value)}
          disabled={!editable}
          hint="A plan, an organisation, a partner: the metrics filter by it (group=)."
        />
        <FormError error={save.error} />
        <div className="actions">
          <button type="submit" className="btn" disabled={!editable || !changed || save.isPending}>
            {save.isPending ? 'Saving…' : 'Save'}
          </button>
          {save.isSuccess && !save.isPending ? (
            <span className="muted small" role="status">
              Saved
            </span>
          ) : null}
        </div>
      </form>
    </section>
  );
}
