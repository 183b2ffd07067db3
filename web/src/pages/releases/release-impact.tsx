import { Fragment } from 'react';
import { Link } from 'wouter';
import type { EndpointImpact, ReleaseImpact } from '../../api/slos';
import type { EventMarker } from '../../api/types';
import { VerdictBadge, verdictSummary } from '../../components/release-verdict';
import { Empty } from '../../components/state';
import { count, ms, percent } from '../../lib/format';
import { formatTime } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { EndpointCharts } from './release-charts';

/** The most endpoints the release page draws before/after charts for. */
const CHARTED = 4;

/** The percentiles an impact table shows, each before → after with its ratio. */
const PERCENTILES = ['p50', 'p95', 'p99'] as const;

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

/** The release page's verdict per endpoint, the consumers it hits first and the charts of the endpoints that changed. */
export function ImpactView({ event, impact }: { event: EventMarker; impact: ReleaseImpact }) {
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
