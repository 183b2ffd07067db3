import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation, useParams } from 'wouter';
import { slos, type Slo } from '../../api/slos';
import { workflows, type Workflow } from '../../api/workflows';
import { RemoveDialog } from '../../components/dialog';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { ExecutionStatus, workflowHref } from '../workflows/workflows';
import { pct, sliText, useSloStatus } from './slo-parts';
import { SloDialog } from './slo-form';
import { SloFigures } from './slo-figures';
import { slosQuery, useBuckets } from '../../api/queries';

/**
 * One SLO: its SLI per day and over the window so far against the objective, the error budget's
 * burn-down, the burn rates now, the burn-rate alerts it raised and the event markers of its
 * bucket over the window.
 */
export function SloPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const href = useSharedHref();
  const [, navigate] = useLocation();
  const qc = useQueryClient();
  const { sloSid = '' } = useParams<{ sloSid: string }>();
  const slo = useQuery({
    queryKey: ['slo', accountSid, sloSid],
    queryFn: () => slos.get(accountSid, sloSid),
  });
  const status = useSloStatus(sloSid);
  const bucketList = useBuckets();
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const back = (
    <Link href={href('/slos')} className="muted small">
      ← SLOs
    </Link>
  );
  if (slo.isPending)
    return (
      <div className="page">
        {back}
        <Loading />
      </div>
    );
  if (slo.error || !slo.data)
    return (
      <div className="page">
        {back}
        <h1>SLO</h1>
        <ErrorBox error={slo.error} onRetry={() => void slo.refetch()} />
      </div>
    );
  const s = slo.data;
  const bucketName = bucketList.data?.records.find((b) => b.sid === s.bucketSid)?.name ?? s.bucketSid;
  return (
    <div className="page">
      <div className="page-head">
        <div>
          {back}
          <h1>{s.name}</h1>
          <p className="muted small">
            {sliText(s)} · objective {pct(s.objective)} over {s.windowDays} days · bucket {bucketName}
          </p>
        </div>
        <div className="row-actions">
          {can('workflows:write') ? (
            <button type="button" className="btn" onClick={() => setEditing(true)}>
              Edit
            </button>
          ) : null}
          {can('workflows:delete') ? (
            <button type="button" className="btn btn-danger-ghost" onClick={() => setDeleting(true)}>
              Delete
            </button>
          ) : null}
        </div>
      </div>
      {status.isPending ? (
        <Loading label="Computing the SLO's figures…" />
      ) : status.error && !status.data ? (
        <ErrorBox error={status.error} onRetry={() => void status.refetch()} />
      ) : (
        <SloFigures slo={s} status={status.data!} />
      )}
      {can('workflows:read') ? <SloAlerts slo={s} /> : null}
      {editing ? <SloDialog existing={s} onClose={() => setEditing(false)} /> : null}
      {deleting ? (
        <RemoveDialog
          title="Delete this SLO?"
          confirmLabel="Delete SLO"
          remove={() => slos.remove(accountSid, s.sid)}
          onDone={async () => {
            await qc.invalidateQueries({ queryKey: slosQuery(accountSid).queryKey });
            navigate(href('/slos'));
          }}
          onClose={() => setDeleting(false)}
        >
          <p>
            “{s.name}” and its figures disappear. Burn-rate workflows that name it stop firing. Traffic data
            is not affected.
          </p>
        </RemoveDialog>
      ) : null}
    </div>
  );
}

/** The slo_burn workflows that name this SLO and their latest executions. */
function SloAlerts({ slo }: { slo: Slo }) {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const wfs = useQuery({
    queryKey: ['workflows', accountSid, slo.bucketSid, 'slo'],
    queryFn: () => workflows.listAccount(accountSid, { bucketSid: slo.bucketSid }),
    select: (d) =>
      d.records.filter((w) => {
        const t = w.trigger as { type: string; sloSid?: string };
        return t.type === 'slo_burn' && t.sloSid === slo.sid;
      }),
  });
  return (
    <section className="panel" data-testid="slo-alerts">
      <h2>Burn-rate alerts</h2>
      <QueryView
        query={wfs}
        isEmpty={(d) => d.length === 0}
        empty={
          <Empty title="No burn-rate alert on this SLO">
            Create a workflow with the trigger <code>{`{"type": "slo_burn", "sloSid": "${slo.sid}"}`}</code>{' '}
            through the API to be paged when the budget burns fast.
          </Empty>
        }
      >
        {(d) => (
          <ul className="alert-list">
            {d.map((w) => (
              <SloAlert key={w.sid} workflow={w} href={href(workflowHref(w))} />
            ))}
          </ul>
        )}
      </QueryView>
    </section>
  );
}

function SloAlert({ workflow: w, href }: { workflow: Workflow; href: string }) {
  const accountSid = useAccountSid();
  const runs = useQuery({
    queryKey: ['workflowExecutions', accountSid, w.sid, 'slo'],
    queryFn: () => workflows.executions(accountSid, w.environmentSid, w.bucketSid, w.sid, { limit: 10 }),
    refetchInterval: 60_000,
  });
  return (
    <li className="alert-item" data-testid="slo-alert">
      <h3>
        <Link href={href}>{w.name}</Link>
      </h3>
      <QueryView
        query={runs}
        isEmpty={(d) => d.records.length === 0}
        empty={<p className="muted small">It has not fired.</p>}
      >
        {(d) => (
          <div className="table-wrap">
            <table className="table">
              <caption className="sr-only">Latest executions of {w.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Fired</th>
                  <th scope="col">Status</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {d.records.map((x) => (
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
      </QueryView>
    </li>
  );
}
