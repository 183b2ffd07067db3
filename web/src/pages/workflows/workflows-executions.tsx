import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'wouter';
import { workflows, type WorkflowExecution } from '../../api/workflows';
import { FormError } from '../../components/form';
import { Empty, QueryView } from '../../components/state';
import { triggerSummary } from '../../components/workflow-trigger';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { ExecutionStatus, workflowHref } from './workflows';

type Params = { bucketSid: string; environmentSid: string; workflowSid: string };

/** What the receivers answered: each action's HTTP status or error. */
function Answers({ x }: { x: WorkflowExecution }) {
  const actions = x.actions ?? [];
  if (actions.length === 0)
    return x.error ? <span className="wf-wrap">{x.error}</span> : <span className="muted">—</span>;
  return (
    <ul className="wf-answers">
      {actions.map((r) => (
        <li key={r.index}>
          <span className="muted">
            {r.index + 1}. {r.type}
          </span>{' '}
          {r.statusCode !== null ? <span className="mono nowrap">HTTP {r.statusCode}</span> : null}{' '}
          {r.status === 'failed' && r.error ? (
            <span className="wf-wrap small" title={r.error}>
              {r.error.length > 120 ? `${r.error.slice(0, 120)}…` : r.error}
            </span>
          ) : r.status === 'pending' ? (
            <span className="muted small">pending</span>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

/** The executions log of one workflow, with filters in the URL and re-runs of failed executions. */
export function WorkflowExecutionsPage({ params }: { params: Params }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const { bucketSid: b, environmentSid: e, workflowSid: w } = params;
  const status = get('status');
  const triggerType = get('trigger');
  const dead = get('dead');
  const requestSid = get('request');
  const page = Number(get('page') ?? '1') || 1;
  const wf = useQuery({
    queryKey: ['workflow', accountSid, b, e, w],
    queryFn: () => workflows.get(accountSid, e, b, w),
  });
  const list = useQuery({
    queryKey: ['workflowExecutions', accountSid, w, status, triggerType, dead, requestSid, page],
    queryFn: () =>
      workflows.executions(accountSid, e, b, w, {
        status,
        triggerType,
        deadLettered: dead === 'yes' ? 'true' : dead === 'no' ? 'false' : null,
        requestSid,
        page,
      }),
    // The log fills while actions run and retry: keep it current without a reload.
    refetchInterval: 2000,
  });
  const retry = useMutation({
    mutationFn: (x: WorkflowExecution) => workflows.retry(accountSid, e, b, w, x.sid),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['workflowExecutions', accountSid, w] }),
  });
  const filter = (changes: Record<string, string | null>) => set({ ...changes, page: null });

  return (
    <div className="page">
      <div className="page-head">
        <h1>Executions{wf.data ? `: ${wf.data.name}` : ''}</h1>
        {wf.data ? (
          <Link className="btn" href={href(workflowHref(wf.data))}>
            Edit workflow
          </Link>
        ) : null}
      </div>
      <p className="hint intro">
        <Link href={href('/settings/workflows')}>← All workflows</Link>
        {wf.data ? <> · {triggerSummary(wf.data.trigger)}</> : null}. Failed actions are retried with backoff;
        after the last attempt the execution is dead-lettered and can be re-run here.
      </p>
      <div className="toolbar wf-filters" role="group" aria-label="Filters">
        <label className="wf-inline">
          Status
          <select value={status ?? ''} onChange={(ev) => filter({ status: ev.target.value || null })}>
            <option value="">any</option>
            <option value="pending">pending</option>
            <option value="running">running</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
          </select>
        </label>
        <label className="wf-inline">
          Trigger
          <select value={triggerType ?? ''} onChange={(ev) => filter({ trigger: ev.target.value || null })}>
            <option value="">any</option>
            <option value="request">request</option>
            <option value="error">error</option>
            <option value="threshold">threshold</option>
            <option value="schedule">schedule</option>
          </select>
        </label>
        <label className="wf-inline">
          Dead letter
          <select value={dead ?? ''} onChange={(ev) => filter({ dead: ev.target.value || null })}>
            <option value="">any</option>
            <option value="yes">dead-lettered only</option>
            <option value="no">not dead-lettered</option>
          </select>
        </label>
        <label className="wf-inline">
          Request
          <input
            className="mono wf-req-filter"
            placeholder="req_…"
            defaultValue={requestSid ?? ''}
            onKeyDown={(ev) => {
              if (ev.key === 'Enter') filter({ request: ev.currentTarget.value.trim() || null });
            }}
            onBlur={(ev) => {
              const v = ev.currentTarget.value.trim() || null;
              if (v !== requestSid) filter({ request: v });
            }}
          />
        </label>
        {status || triggerType || dead || requestSid ? (
          <button
            type="button"
            className="btn btn-small btn-ghost"
            onClick={() => filter({ status: null, trigger: null, dead: null, request: null })}
          >
            Clear filters
          </button>
        ) : null}
      </div>
      <section className="panel" aria-label="Executions">
        {retry.error ? <FormError error={retry.error} /> : null}
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0 && page === 1}
          empty={
            <Empty title="No execution yet">
              {status || triggerType || dead || requestSid
                ? 'None matches these filters.'
                : 'Executions appear here when the trigger fires.'}
            </Empty>
          }
        >
          {(d) => (
            <>
              <div className="table-wrap wf-table">
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Time</th>
                      <th scope="col">Trigger</th>
                      <th scope="col">Status</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Response or error</th>
                      <th scope="col">Request</th>
                      <th scope="col">
                        <span className="sr-only">Row actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.records.map((x) => (
                      <tr key={x.sid} data-testid={`execution-${x.sid}`}>
                        <td className="nowrap small">
                          <span title={formatDateTime(x.createdAt)}>{relative(x.createdAt)}</span>
                          <div className="muted">{formatDateTime(x.createdAt)}</div>
                        </td>
                        <td className="small">
                          <strong>{x.triggerType}</strong>
                          {x.trigger?.message ? (
                            <div className="muted wf-wrap">{x.trigger.message}</div>
                          ) : null}
                        </td>
                        <td className="nowrap">
                          <ExecutionStatus status={x.status} deadLettered={x.deadLettered} />
                        </td>
                        <td className="num">{x.attempts}</td>
                        <td className="small">
                          <Answers x={x} />
                        </td>
                        <td className="small mono">
                          {x.requestSid ? (
                            <Link
                              href={href(
                                `/requests/${encodeURIComponent(b)}/${encodeURIComponent(x.requestSid)}`,
                              )}
                            >
                              {x.requestSid}
                            </Link>
                          ) : (
                            <span className="muted">—</span>
                          )}
                        </td>
                        <td>
                          {x.status === 'failed' && can('workflows:write') ? (
                            <button
                              type="button"
                              className="btn btn-small"
                              disabled={retry.isPending}
                              aria-label={`Re-run execution ${x.sid}`}
                              onClick={() => retry.mutate(x)}
                            >
                              Re-run
                            </button>
                          ) : null}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
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
            </>
          )}
        </QueryView>
      </section>
    </div>
  );
}
