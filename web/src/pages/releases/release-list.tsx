import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { RangePicker } from '../../components/range-picker';
import { releaseHref, ReleaseVerdict } from '../../components/release-verdict';
import { Empty, QueryView } from '../../components/state';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { useScopeText } from './release-parts';
import { eventsQuery } from '../../api/queries';

/** Deployments per page of the list: each row asks for its own verdict. */
const PAGE = 20;

/**
 * The deployment events of the range, newest first, each with its verdict summary ("2 endpoints
 * regressed", or pending until its after window has passed), linking to the release page.
 */
export function ReleasesPage() {
  const accountSid = useAccountSid();
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
    ...eventsQuery(accountSid, query),
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
