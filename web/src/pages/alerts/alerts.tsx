import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { alerts, type Alert } from '../../api/workflows';
import { Empty, QueryView } from '../../components/state';
import { triggerSummary } from '../../components/workflow-trigger';
import { useAccountSid } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { ExecutionStatus, workflowHref } from '../workflows/workflows';

const STATE_LABEL: Record<Alert['state'], string> = {
  firing: 'Firing',
  resolved: 'Resolved',
  paused: 'Paused',
};
const STATE_CLASS: Record<Alert['state'], string> = {
  firing: 'badge-off',
  resolved: 'badge-ok',
  paused: 'badge-pending',
};

/**
 * Threshold and error workflows as alerts (GET /v1/accounts/{a}/alerts): firing ones first, each
 * with since when, its condition and its latest executions. Alerts are made and changed as
 * workflows: each links to its editor and execution log.
 */
export function AlertsPage() {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const href = useSharedHref();
  const alertList = useQuery({
    queryKey: ['alerts', accountSid, get('bucket'), get('env')],
    queryFn: () => alerts.list(accountSid, { bucketSid: get('bucket'), environmentSid: get('env') }),
    refetchInterval: 30_000,
  });
  const order: Alert['state'][] = ['firing', 'resolved', 'paused'];
  return (
    <div className="page">
      <div className="page-head">
        <h1>Alerts</h1>
        <Link className="btn" href={href('/settings/workflows/new')}>
          New alert workflow
        </Link>
      </div>
      <p className="hint intro">
        Threshold and error workflows. A threshold alert fires while its last evaluation holds; an error alert
        while errors keep coming (its last execution is less than 5 minutes old).
      </p>
      <QueryView
        query={alertList}
        isEmpty={(d) => d.records.length === 0}
        empty={
          <Empty title="No alerts yet">
            <p>
              An alert is a workflow with a threshold or error trigger:{' '}
              <Link href={href('/settings/workflows/new')}>create one</Link>.
            </p>
          </Empty>
        }
      >
        {(d) => (
          <ul className="alert-list">
            {[...d.records]
              .sort((x, y) => order.indexOf(x.state) - order.indexOf(y.state))
              .map((al) => (
                <AlertItem key={al.workflowSid} alert={al} />
              ))}
          </ul>
        )}
      </QueryView>
    </div>
  );
}

function AlertItem({ alert: al }: { alert: Alert }) {
  const href = useSharedHref();
  const wf = { bucketSid: al.bucketSid, environmentSid: al.environmentSid, sid: al.workflowSid };
  const since = al.since ? (
    <>
      {' '}
      since <time dateTime={al.since}>{formatDateTime(al.since)}</time> ({relative(al.since)})
    </>
  ) : null;
  return (
    <li className={`panel alert-item alert-${al.state}`} data-testid="alert">
      <div className="alert-head">
        <span className={`badge ${STATE_CLASS[al.state]}`}>{STATE_LABEL[al.state]}</span>
        <h2>
          <Link href={href(workflowHref(wf))}>{al.name}</Link>
        </h2>
      </div>
      <p className="alert-state" data-testid="alert-state">
        {STATE_LABEL[al.state]}
        {since}
        {al.state !== 'paused' && !al.since
          ? al.triggerType === 'error'
            ? ': never fired'
            : ': not evaluated yet'
          : ''}
        {al.lastValue !== null ? ` · last value ${Math.round(al.lastValue * 1000) / 1000}` : ''}
      </p>
      <p className="muted small">
        Trigger: {triggerSummary(al.trigger)} · bucket <span className="mono">{al.bucketSid}</span> ·
        environment <span className="mono">{al.environmentSid}</span>
      </p>
      {al.executions.length === 0 ? (
        <p className="muted small">No executions yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <caption className="sr-only">Latest executions of {al.name}</caption>
            <thead>
              <tr>
                <th scope="col">Fired</th>
                <th scope="col">Status</th>
                <th scope="col">What fired it</th>
              </tr>
            </thead>
            <tbody>
              {al.executions.map((x) => (
                <tr key={x.sid}>
                  <td className="nowrap">
                    <time dateTime={x.createdAt} title={formatDateTime(x.createdAt)}>
                      {relative(x.createdAt)}
                    </time>
                  </td>
                  <td>
                    <ExecutionStatus status={x.status} />
                  </td>
                  <td className="small">{x.trigger?.message ?? x.error ?? '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p className="small">
        <Link href={href(`${workflowHref(wf)}/executions`)}>All executions of {al.name}</Link>
      </p>
    </li>
  );
}
