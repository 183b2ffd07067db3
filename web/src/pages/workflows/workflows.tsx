import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { workflows, type Workflow, type WorkflowBody } from '../../api/workflows';
import { ConfirmDialog } from '../../components/dialog';
import { FormError } from '../../components/form';
import { Empty, QueryView } from '../../components/state';
import { triggerSummary } from '../../components/workflow-trigger';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { useBuckets } from '../../api/queries';

/** The path of a workflow's editor (and, with `/executions`, of its log). */
export const workflowHref = (w: Pick<Workflow, 'bucketSid' | 'environmentSid' | 'sid'>) =>
  `/settings/workflows/${encodeURIComponent(w.bucketSid)}/${encodeURIComponent(w.environmentSid)}/${encodeURIComponent(w.sid)}`;

/** PUT body that keeps a stored workflow as it is except for the given fields. */
export function bodyOf(w: Workflow, patch: Partial<WorkflowBody> = {}): WorkflowBody {
  return {
    name: w.name,
    description: w.description,
    trigger: w.trigger as WorkflowBody['trigger'],
    actions: w.actions as WorkflowBody['actions'],
    isActive: w.isActive,
    ...patch,
  };
}

export function ExecutionStatus({ status, deadLettered }: { status: string; deadLettered?: boolean }) {
  if (deadLettered) return <span className="badge badge-off">dead-lettered</span>;
  const cls = status === 'succeeded' ? 'badge-ok' : status === 'failed' ? 'badge-off' : 'badge-pending';
  return <span className={`badge ${cls}`}>{status}</span>;
}

function LastExecution({ w }: { w: Workflow }) {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const executionQuery = useQuery({
    queryKey: ['workflowExecutions', accountSid, w.sid, 'last'],
    queryFn: () => workflows.executions(accountSid, w.environmentSid, w.bucketSid, w.sid, { limit: 1 }),
    refetchInterval: 10_000,
  });
  const lastExecution = executionQuery.data?.records[0];
  if (executionQuery.isPending) return <span className="muted">…</span>;
  if (!lastExecution) return <span className="muted">never</span>;
  return (
    <Link href={href(`${workflowHref(w)}/executions`)} className="nowrap">
      <ExecutionStatus status={lastExecution.status} deadLettered={lastExecution.deadLettered} />{' '}
      <span className="small" title={formatDateTime(lastExecution.createdAt)}>
        {relative(lastExecution.createdAt)}
      </span>
    </Link>
  );
}

/** Workflows of the account (narrowed by the header's bucket and environment): state, trigger, last run. */
export function WorkflowsPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const bucket = get('bucket');
  const env = get('env');
  const state = get('state') ?? '';
  const list = useQuery({
    queryKey: ['workflows', accountSid, bucket, env],
    queryFn: () => workflows.listAccount(accountSid, { bucketSid: bucket, environmentSid: env }),
  });
  const bucketList = useBuckets();
  const bucketName = (sid: string) => bucketList.data?.records.find((b) => b.sid === sid)?.name ?? sid;
  const [deleting, setDeleting] = useState<Workflow | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: ['workflows', accountSid] });
  const toggle = useMutation({
    mutationFn: (w: Workflow) =>
      workflows.update(
        accountSid,
        w.environmentSid,
        w.bucketSid,
        w.sid,
        bodyOf(w, { isActive: !w.isActive }),
      ),
    onSuccess: refresh,
  });

  return (
    <div className="page">
      <div className="page-head">
        <h1>Workflows</h1>
        {can('workflows:write') ? (
          <Link href={href('/settings/workflows/new')} className="btn btn-primary">
            New workflow
          </Link>
        ) : null}
      </div>
      <p className="hint intro">
        A workflow runs its actions (webhook, email, chat, automation) when its trigger fires: a matching
        request or error, a metric threshold, or a schedule. It belongs to one bucket and one environment.
      </p>
      <div className="toolbar">
        <label className="wf-inline">
          Show
          <select value={state} onChange={(e) => set({ state: e.target.value || null })}>
            <option value="">all workflows</option>
            <option value="active">active only</option>
            <option value="paused">paused only</option>
          </select>
        </label>
        <span className="muted small">
          {bucket ? `bucket ${bucketName(bucket)}` : 'every bucket'} ·{' '}
          {env ? `environment ${env}` : 'every environment'} (header switchers)
        </span>
      </div>
      <section className="panel" aria-label="Workflows">
        {toggle.error ? <FormError error={toggle.error} /> : null}
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No workflow yet">
              Create one to be told about errors, slow endpoints or anything a request shows.
            </Empty>
          }
        >
          {(d) => {
            const rows = d.records.filter((w) =>
              state === 'active' ? w.isActive : state === 'paused' ? !w.isActive : true,
            );
            return rows.length === 0 ? (
              <Empty title="No workflow matches">Change the filter above.</Empty>
            ) : (
              <div className="table-wrap wf-table">
                <table className="table">
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Bucket · environment</th>
                      <th scope="col">Trigger</th>
                      <th scope="col">Actions</th>
                      <th scope="col">State</th>
                      <th scope="col">Last execution</th>
                      <th scope="col">
                        <span className="sr-only">Row actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((w) => (
                      <tr key={w.sid}>
                        <td>
                          <Link href={href(workflowHref(w))}>
                            <strong>{w.name}</strong>
                          </Link>
                          {w.description ? <div className="muted small">{w.description}</div> : null}
                        </td>
                        <td className="small">
                          {bucketName(w.bucketSid)} · <span className="mono">{w.environmentSid}</span>
                        </td>
                        <td className="small">{triggerSummary(w.trigger)}</td>
                        <td className="small">{w.actions.map((x) => x.type).join(', ')}</td>
                        <td>
                          {w.isActive ? (
                            <span className="badge badge-ok">active</span>
                          ) : (
                            <span className="badge badge-pending">paused</span>
                          )}
                        </td>
                        <td>
                          <LastExecution w={w} />
                        </td>
                        <td>
                          <div className="row-actions">
                            <Link
                              className="btn btn-small"
                              href={href(`${workflowHref(w)}/executions`)}
                              aria-label={`Executions of ${w.name}`}
                            >
                              Executions
                            </Link>
                            {can('workflows:write') ? (
                              <button
                                type="button"
                                className="btn btn-small"
                                disabled={toggle.isPending}
                                aria-label={`${w.isActive ? 'Pause' : 'Activate'} ${w.name}`}
                                onClick={() => toggle.mutate(w)}
                              >
                                {w.isActive ? 'Pause' : 'Activate'}
                              </button>
                            ) : null}
                            {can('workflows:delete') ? (
                              <button
                                type="button"
                                className="btn btn-small btn-danger-ghost"
                                aria-label={`Delete ${w.name}`}
                                onClick={() => setDeleting(w)}
                              >
                                Delete
                              </button>
                            ) : null}
                          </div>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            );
          }}
        </QueryView>
      </section>
      {deleting ? (
        <DeleteWorkflow workflow={deleting} onClose={() => setDeleting(null)} onDone={refresh} />
      ) : null}
    </div>
  );
}

export function DeleteWorkflow({
  workflow,
  onClose,
  onDone,
}: {
  workflow: Workflow;
  onClose: () => void;
  onDone: () => Promise<unknown> | void;
}) {
  const accountSid = useAccountSid();
  const del = useMutation({
    mutationFn: () => workflows.remove(accountSid, workflow.environmentSid, workflow.bucketSid, workflow.sid),
    onSuccess: async () => {
      await onDone();
      onClose();
    },
  });
  return (
    <ConfirmDialog
      title={`Delete “${workflow.name}”?`}
      confirmLabel="Delete workflow"
      busy={del.isPending}
      error={del.error}
      onConfirm={() => del.mutate()}
      onClose={onClose}
    >
      <p>
        The workflow and its execution log are removed for good. An action already queued may still run once.
        To stop it only for a while, pause it instead.
      </p>
    </ConfirmDialog>
  );
}
