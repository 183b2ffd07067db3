import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { slos, type Slo } from '../../api/slos';
import { RemoveDialog } from '../../components/dialog';
import { Empty, ErrorBox, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { useSharedHref } from '../../lib/url-state';
import { StatusBadge, pct, rate, sliText, sloHref, useSloStatus } from './slo-parts';
import { SloDialog } from './slo-form';
import { slosQuery } from '../../api/queries';

/**
 * The account's SLOs, each with its status now: SLI, error budget left, the 1-hour burn rate and
 * ok / warning / breaching; create, edit and delete them in a dialog.
 */
export function SlosPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const list = useQuery(slosQuery(accountSid));
  const [editing, setEditing] = useState<Slo | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Slo | null>(null);
  const mayWrite = can('workflows:write');
  return (
    <div className="page">
      <div className="page-head">
        <h1>SLOs</h1>
        {mayWrite ? (
          <button type="button" className="btn btn-primary" onClick={() => setEditing('new')}>
            New SLO
          </button>
        ) : null}
      </div>
      <p className="hint intro">
        A service level objective: the share of a bucket&apos;s calls that must be good over a rolling window.
        The error budget is the bad calls the objective allows; a burn rate of 1 spends it exactly over the
        window.
      </p>
      <section className="panel">
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No SLOs yet">
              Say which share of calls must succeed (availability) or be fast enough (latency), e.g. 99.9% of
              POST /checkout over 30 days.
            </Empty>
          }
        >
          {(d) => (
            <div className="table-wrap">
              <table className="table" data-testid="slos-table">
                <caption className="sr-only">SLOs with their status now</caption>
                <thead>
                  <tr>
                    <th scope="col">SLO</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">
                      Objective
                    </th>
                    <th scope="col" className="num">
                      SLI
                    </th>
                    <th scope="col" className="num">
                      Budget left
                    </th>
                    <th scope="col" className="num">
                      Burn rate 1h
                    </th>
                    {mayWrite || can('workflows:delete') ? (
                      <th scope="col">
                        <span className="sr-only">Actions</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {d.records.map((s) => (
                    <SloRow key={s.sid} slo={s} onEdit={setEditing} onDelete={setDeleting} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </section>
      {editing ? (
        <SloDialog existing={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} />
      ) : null}
      {deleting ? (
        <RemoveDialog
          title="Delete this SLO?"
          confirmLabel="Delete SLO"
          remove={() => slos.remove(accountSid, deleting.sid)}
          onDone={() => qc.invalidateQueries({ queryKey: slosQuery(accountSid).queryKey })}
          onClose={() => setDeleting(null)}
        >
          <p>
            “{deleting.name}” and its figures disappear. Burn-rate workflows that name it stop firing. Traffic
            data is not affected.
          </p>
        </RemoveDialog>
      ) : null}
    </div>
  );
}

function SloRow({
  slo: s,
  onEdit,
  onDelete,
}: {
  slo: Slo;
  onEdit: (s: Slo) => void;
  onDelete: (s: Slo) => void;
}) {
  const { can } = useSession();
  const href = useSharedHref();
  const st = useSloStatus(s.sid);
  const cells = st.data ? (
    <>
      <td>
        <StatusBadge status={st.data.status} />
      </td>
      <td className="num nowrap">
        {pct(s.objective)} <span className="muted small">/ {s.windowDays} d</span>
      </td>
      <td className="num">{pct(st.data.sli)}</td>
      <td className="num">{pct(st.data.errorBudget.remainingPercent)}</td>
      <td className="num">{rate(st.data.burnRates['1h'])}</td>
    </>
  ) : (
    <td colSpan={5}>
      {st.isPending ? (
        <span className="muted">Computing the status…</span>
      ) : (
        <ErrorBox error={st.error} onRetry={() => void st.refetch()} />
      )}
    </td>
  );
  return (
    <tr data-testid="slo-row">
      <td>
        <Link href={href(sloHref(s.sid))}>
          <strong>{s.name}</strong>
        </Link>
        <div className="muted small">{sliText(s)}</div>
      </td>
      {cells}
      {can('workflows:write') || can('workflows:delete') ? (
        <td>
          <div className="row-actions">
            {can('workflows:write') ? (
              <button
                type="button"
                className="btn btn-small"
                onClick={() => onEdit(s)}
                aria-label={`Edit ${s.name}`}
              >
                Edit
              </button>
            ) : null}
            {can('workflows:delete') ? (
              <button
                type="button"
                className="btn btn-small btn-danger-ghost"
                onClick={() => onDelete(s)}
                aria-label={`Delete ${s.name}`}
              >
                Delete
              </button>
            ) : null}
          </div>
        </td>
      ) : null}
    </tr>
  );
}
