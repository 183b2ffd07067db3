import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Fragment, useMemo } from 'react';
import { Link, useParams } from 'wouter';
import { buckets, events, metrics } from '../../api/resources';
import { releases, type EndpointImpact, type ReleaseImpact } from '../../api/slos';
import type { EventMarker } from '../../api/types';
import { RangePicker } from '../../components/range-picker';
import {
  releaseHref,
  ReleaseVerdict,
  useImpact,
  VerdictBadge,
  verdictSummary,
} from '../../components/release-verdict';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { count, ms, percent } from '../../lib/format';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid } from '../../lib/session';
import { formatDateTime, formatTime, intervalFor, relative, type TimeRange } from '../../lib/time';
import { useQueryState, useSharedHref } from '../../lib/url-state';

/** Deployments per page of the list: each row asks for its own verdict. */
const PAGE = 20;
/** The most endpoints the release page draws before/after charts for. */
const CHARTED = 4;

/** The buckets and environments a marker is shown on, buckets by name. */
function useScopeText(): (e: EventMarker) => string {
  const a = useAccountSid();
  const list = useQuery({ queryKey: ['buckets', a], queryFn: () => buckets.list(a) });
  const names = new Map((list.data?.records ?? []).map((b) => [b.sid, b.name]));
  return (e) => {
    const b = e.bucketSids.includes('*')
      ? 'all buckets'
      : e.bucketSids.map((s) => names.get(s) ?? s).join(', ');
    return e.environmentSids.includes('*') ? b : `${b} · ${e.environmentSids.join(', ')}`;
  };
}

/** The percentiles an impact table shows, each before → after with its ratio. */
const PERCENTILES = ['p50', 'p95', 'p99'] as const;

/**
 * The deployment events of the range, newest first, each with its verdict summary ("2 endpoints
 * regressed", or pending until its after window has passed), linking to the release page.
 */
export function ReleasesPage() {
  const a = useAccountSid();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const { scope } = useMetricsScope();
  const scopeText = useScopeText();
  const page = Number(get('page') ?? '1') || 1;
  const query = {
    bucketSid: scope.bucketSid,
    environmentSid: scope.environmentSid,
    type: 'deployment',
    startTime: scope.startDate,
    endTime: scope.endDate,
    limit: PAGE,
    page,
  };
  const list = useQuery({
    queryKey: ['events', a, query],
    queryFn: () => events.list(a, query),
    placeholderData: keepPreviousData,
  });
  return (
    <div className="page">
      <div className="page-head">
        <h1>Releases</h1>
        <RangePicker />
      </div>
      <p className="hint intro">
        Every deployment marker gets a verdict per endpoint: the minutes before it against the minutes after
        it, for response time and errors (30 and 30, the first 2 after the marker skipped, unless the bucket
        sets other windows). A verdict is pending until its after window has passed.
      </p>
      <section className="panel">
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0 && page === 1}
          empty={
            <Empty title="No deployments in this range">
              Mark a deployment from your CI pipeline with{' '}
              <code>POST /v1/accounts/…/events {'{"type": "deployment", …}'}</code>, on the{' '}
              <Link href={href('/events')}>Events</Link> page, or by clicking a chart on the overview.
            </Empty>
          }
        >
          {(d) => (
            <>
              <div className="table-wrap">
                <table className="table" data-testid="releases-table">
                  <caption className="sr-only">
                    Deployments in the range, newest first, with their verdict
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Release</th>
                      <th scope="col">Verdict</th>
                      <th scope="col">Deployed</th>
                      <th scope="col">Scope</th>
                      <th scope="col">Source</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.records.map((e) => (
                      <tr key={e.sid} data-testid="release-row">
                        <td>
                          <Link href={href(releaseHref(e.sid))}>
                            <strong>{e.name}</strong>
                          </Link>
                          {e.description ? <div className="muted small">{e.description}</div> : null}
                        </td>
                        <td>
                          <ReleaseVerdict eventSid={e.sid} />
                        </td>
                        <td className="nowrap">
                          <time dateTime={e.startedAt}>{formatDateTime(e.startedAt)}</time>
                          <div className="muted small">{relative(e.startedAt)}</div>
                        </td>
                        <td className="small">{scopeText(e)}</td>
                        <td className="small">{e.source ?? '–'}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              {page > 1 || d.hasMore ? (
                <div className="toolbar">
                  <button
                    type="button"
                    className="btn btn-small"
                    disabled={page <= 1}
                    onClick={() => set({ page: page > 2 ? String(page - 1) : null })}
                  >
                    Newer
                  </button>
                  <span className="muted small">page {page}</span>
                  <button
                    type="button"
                    className="btn btn-small"
                    disabled={!d.hasMore}
                    onClick={() => set({ page: String(page + 1) })}
                  >
                    Older
                  </button>
                </div>
              ) : null}
            </>
          )}
        </QueryView>
      </section>
    </div>
  );
}

const ratio = (r: number | null) => (r === null ? '' : ` (×${r >= 10 ? Math.round(r) : r.toFixed(2)})`);

/** "40 ms → 121 ms (×3.03)": a before/after pair in one cell. */
function Pair({
  before,
  after,
  fmt,
  change,
}: {
  before: number | null;
  after: number | null;
  fmt: (v: number | null) => string;
  change?: string;
}) {
  return (
    <span className="nowrap">
      {fmt(before)} → {fmt(after)}
      {change ? <span className="muted">{change}</span> : null}
    </span>
  );
}

/**
 * One deployment: its verdict per endpoint (sorted by severity, with before/after p50, p95, p99
 * and error rate) and before/after charts of the endpoints that regressed or improved, around
 * the marker.
 */
export function ReleasePage() {
  const a = useAccountSid();
  const href = useSharedHref();
  const { eventSid = '' } = useParams<{ eventSid: string }>();
  const event = useQuery({ queryKey: ['event', a, eventSid], queryFn: () => releases.event(a, eventSid) });
  const impact = useImpact(eventSid, { enabled: event.data?.type === 'deployment' });
  const scopeText = useScopeText();
  const back = (
    <Link href={href('/releases')} className="muted small">
      ← Releases
    </Link>
  );
  if (event.isPending)
    return (
      <div className="page">
        {back}
        <Loading />
      </div>
    );
  if (event.error || !event.data)
    return (
      <div className="page">
        {back}
        <h1>Release</h1>
        <ErrorBox error={event.error} onRetry={() => void event.refetch()} />
      </div>
    );
  const e = event.data;
  return (
    <div className="page">
      <div className="page-head">
        <div>
          {back}
          <h1>{e.name}</h1>
          <p className="muted small">
            Deployed {formatDateTime(e.startedAt)} ({relative(e.startedAt)}) · {scopeText(e)}
            {e.source ? ` · from ${e.source}` : ''}
          </p>
          {e.description ? <p>{e.description}</p> : null}
        </div>
      </div>
      {e.type !== 'deployment' ? (
        <Empty title="Not a deployment">
          This marker is of type {e.type}: only deployment markers get a verdict.
        </Empty>
      ) : impact.isPending ? (
        <Loading label="Comparing the windows before and after the deployment…" />
      ) : impact.error && !impact.data ? (
        <ErrorBox error={impact.error} onRetry={() => void impact.refetch()} />
      ) : (
        <ImpactView event={e} impact={impact.data!} />
      )}
    </div>
  );
}

function ImpactView({ event, impact }: { event: EventMarker; impact: ReleaseImpact }) {
  const href = useSharedHref();
  const w = impact.window;
  const charted = impact.endpoints
    .filter((x) => x.verdict === 'regressed' || x.verdict === 'improved')
    .slice(0, CHARTED);
  const tiles: [string, number][] = [
    ['Regressed', impact.summary.regressed],
    ['Improved', impact.summary.improved],
    ['Unchanged', impact.summary.unchanged],
    ['Too few calls', impact.summary.insufficient],
  ];
  return (
    <>
      {impact.status === 'pending' ? (
        <div className="state state-empty" role="status" data-testid="impact-pending">
          <strong>Pending: the after window runs until {formatTime(w.after.to)}.</strong>
          <div className="state-body">The figures below are the calls so far; the verdict is final then.</div>
        </div>
      ) : null}
      <div className="tiles" data-testid="impact-summary">
        {tiles.map(([label, n]) => (
          <div className="tile" key={label}>
            <div className="tile-label">{label}</div>
            <div className="tile-value">{n}</div>
          </div>
        ))}
      </div>
      <p className="muted small" data-testid="impact-windows">
        Before: {formatTime(w.before.from)}–{formatTime(w.before.to)} · after: {formatTime(w.after.from)}–
        {formatTime(w.after.to)} (the first {w.settleMinutes} minute{w.settleMinutes === 1 ? '' : 's'} after
        the marker are skipped)
        {w.shortenedBy.length
          ? ` · shortened by ${w.shortenedBy.length} other deployment${w.shortenedBy.length === 1 ? '' : 's'} inside a window`
          : ''}
        . <span className="sr-only">Verdict: </span>
        {verdictSummary(impact)}.
      </p>
      <section className="panel">
        <h2>Endpoints</h2>
        {impact.endpoints.length === 0 ? (
          <Empty title="No calls in either window">
            The deployment&apos;s buckets had no traffic in the windows before or after it.
          </Empty>
        ) : (
          <div className="table-wrap">
            <table className="table" data-testid="impact-table">
              <caption className="sr-only">
                Per endpoint, before → after the deployment, most severe first
              </caption>
              <thead>
                <tr>
                  <th scope="col">Endpoint</th>
                  <th scope="col">Verdict</th>
                  <th scope="col" className="num">
                    Calls
                  </th>
                  <th scope="col">p50</th>
                  <th scope="col">p95</th>
                  <th scope="col">p99</th>
                  <th scope="col">Error rate</th>
                  <th scope="col">Why</th>
                </tr>
              </thead>
              <tbody>
                {impact.endpoints.map((x) => (
                  <Fragment key={`${x.method} ${x.endpoint}`}>
                    <tr data-testid="impact-row">
                      <td className="mono nowrap">
                        <Link href={href('/endpoints/detail', { endpoint: x.endpoint, method: x.method })}>
                          {x.method} {x.endpoint}
                        </Link>
                      </td>
                      <td>
                        <VerdictBadge verdict={x.verdict} />
                      </td>
                      <td className="num nowrap">
                        {count(x.before.count)} → {count(x.after.count)}
                      </td>
                      {PERCENTILES.map((q) => (
                        <td key={q}>
                          <Pair
                            before={x.before[q]}
                            after={x.after[q]}
                            fmt={ms}
                            change={ratio(x.change[q])}
                          />
                        </td>
                      ))}
                      <td>
                        <Pair before={x.before.errorRate} after={x.after.errorRate} fmt={percent} />
                      </td>
                      <td className="small">{x.change.reasons.join('; ') || '–'}</td>
                    </tr>
                    {x.consumers?.length ? (
                      <tr className="subrow">
                        <td colSpan={8}>
                          <ConsumersHit event={event} x={x} consumers={x.consumers} />
                        </td>
                      </tr>
                    ) : null}
                  </Fragment>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {charted.length ? (
        charted.map((x) => (
          <EndpointCharts key={`${x.method} ${x.endpoint}`} event={event} impact={impact} x={x} />
        ))
      ) : impact.endpoints.length ? (
        <p className="muted">No endpoint regressed or improved: nothing to chart.</p>
      ) : null}
    </>
  );
}

/**
 * The consumers of a regressed endpoint (at most 10, most severe first), each judged on its own
 * calls: the ones the regression hits first, each linking to the consumer's page.
 */
function ConsumersHit({
  event,
  x,
  consumers,
}: {
  event: EventMarker;
  x: EndpointImpact;
  consumers: NonNullable<EndpointImpact['consumers']>;
}) {
  const href = useSharedHref();
  const total = x.consumersTotal ?? consumers.length;
  const hit = x.consumersHit ?? 0;
  const bucket =
    event.bucketSids.length === 1 && event.bucketSids[0] !== '*' ? event.bucketSids[0] : undefined;
  const rest = total - consumers.length;
  return (
    <div className="impact-consumers" data-testid="impact-consumers">
      <p className="small">
        <strong>
          {count(hit)} of {count(total)} consumer{total === 1 ? '' : 's'} hit
        </strong>
        <span className="muted">
          {hit === 0 ? ': none regressed on its own calls' : ''} · {x.method} {x.endpoint}
        </span>
      </p>
      <div className="table-wrap">
        <table className="table table-compact" data-testid="impact-consumers-table">
          <caption className="sr-only">
            Consumers of {x.method} {x.endpoint}, before → after the deployment, most severe first
          </caption>
          <thead>
            <tr>
              <th scope="col">Consumer</th>
              <th scope="col">Verdict</th>
              <th scope="col" className="num">
                Calls
              </th>
              <th scope="col">p50</th>
              <th scope="col">p95</th>
              <th scope="col">Error rate</th>
            </tr>
          </thead>
          <tbody>
            {consumers.map((c) => (
              <tr key={c.consumer} data-testid="impact-consumer-row">
                <td className="nowrap">
                  <Link
                    href={href('/consumers/detail', { id: c.consumer, ...(bucket ? { bucket } : {}) })}
                    className={c.name ? undefined : 'mono'}
                    title={c.group ? `${c.consumer} · group ${c.group}` : c.consumer}
                  >
                    {c.name ?? c.consumer}
                  </Link>
                  {c.group ? <span className="muted small"> · {c.group}</span> : null}
                </td>
                <td>
                  <VerdictBadge verdict={c.verdict} />
                </td>
                <td className="num nowrap">
                  {count(c.before.count)} → {count(c.after.count)}
                </td>
                <td>
                  <Pair before={c.before.p50} after={c.after.p50} fmt={ms} change={ratio(c.change.p50)} />
                </td>
                <td>
                  <Pair before={c.before.p95} after={c.after.p95} fmt={ms} change={ratio(c.change.p95)} />
                </td>
                <td>
                  <Pair before={c.before.errorRate} after={c.after.errorRate} fmt={percent} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rest > 0 ? (
        <p className="muted small">
          and {count(rest)} more consumer{rest === 1 ? '' : 's'} of this endpoint, after these in severity
          order
        </p>
      ) : null}
    </div>
  );
}

/**
 * Response time and error rate of one endpoint from the start of the before window to the end of
 * the after window, with the deployment marker between them.
 */
function EndpointCharts({
  event,
  impact,
  x,
}: {
  event: EventMarker;
  impact: ReleaseImpact;
  x: EndpointImpact;
}) {
  const a = useAccountSid();
  const { get } = useQueryState();
  const range = useMemo<TimeRange>(
    () => ({
      id: 'custom',
      start: new Date(impact.window.before.from),
      end: new Date(impact.window.after.to),
      live: false,
    }),
    [impact.window.before.from, impact.window.after.to],
  );
  const interval = intervalFor(range);
  const bucketSid =
    event.bucketSids.length === 1 && event.bucketSids[0] !== '*' ? event.bucketSids[0] : undefined;
  const scope = {
    bucketSid: bucketSid ?? get('bucket') ?? undefined,
    environmentSid:
      event.environmentSids.length === 1 && event.environmentSids[0] !== '*'
        ? event.environmentSids[0]
        : (get('env') ?? undefined),
    startDate: range.start.toISOString(),
    endDate: range.end.toISOString(),
    endpoint: x.endpoint,
    method: x.method,
  };
  const refetchInterval = impact.status === 'pending' ? 30_000 : false;
  const rt = useQuery({
    queryKey: ['responseTime', a, scope, interval],
    queryFn: () => metrics.responseTime(a, scope, interval),
    refetchInterval,
  });
  const thr = useQuery({
    queryKey: ['throughput', a, scope, interval],
    queryFn: () => metrics.throughput(a, scope, interval),
    refetchInterval,
  });
  const markers = useMemo(() => [event], [event]);
  const series = useMemo(() => {
    const r = rt.data?.periods ?? [];
    const p = thr.data?.periods ?? [];
    return {
      rx: r.map((v) => Date.parse(v.startTime)),
      p50: r.map((v) => (v.requests ? (v.percentiles?.['50']?.value ?? null) : null)),
      p95: r.map((v) => (v.requests ? (v.percentiles?.['95']?.value ?? null) : null)),
      tx: p.map((v) => Date.parse(v.startTime)),
      errors: p.map((v) => {
        const n = v.total.count;
        return n ? ((v.httpStatus['400'].count + v.httpStatus['500'].count) / n) * 100 : null;
      }),
    };
  }, [rt.data, thr.data]);
  const name = `${x.method} ${x.endpoint}`;
  return (
    <section className="panel" data-testid="impact-charts">
      <div className="panel-head">
        <h2 className="mono">{name}</h2>
        <span className="muted small">
          <VerdictBadge verdict={x.verdict} /> before and after the marker, per {interval}
        </span>
      </div>
      <div className="grid-2">
        <div>
          <h3 className="small">Response time</h3>
          {rt.isPending ? (
            <Loading />
          ) : rt.error && !rt.data ? (
            <ErrorBox error={rt.error} onRetry={() => void rt.refetch()} />
          ) : (
            <TimeChart
              title={`${name} response time around the release`}
              x={series.rx}
              series={[
                { label: 'p50', color: '#2563eb', values: series.p50 },
                { label: 'p95', color: '#f59e0b', values: series.p95 },
              ]}
              format={ms}
              markers={markers}
              range={range}
              interval={interval}
              height={180}
            />
          )}
        </div>
        <div>
          <h3 className="small">Error rate</h3>
          {thr.isPending ? (
            <Loading />
          ) : thr.error && !thr.data ? (
            <ErrorBox error={thr.error} onRetry={() => void thr.refetch()} />
          ) : (
            <TimeChart
              title={`${name} error rate around the release`}
              x={series.tx}
              series={[{ label: 'errors', color: '#d64545', values: series.errors }]}
              format={percent}
              markers={markers}
              range={range}
              interval={interval}
              height={180}
            />
          )}
        </div>
      </div>
    </section>
  );
}
