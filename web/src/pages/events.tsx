import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { events } from '../api/resources';
import type { EventMarker } from '../api/types';
import { ConfirmDialog } from '../components/dialog';
import { EVENT_TYPES, EventDialog } from '../components/event-dialog';
import { RangePicker } from '../components/range-picker';
import { Empty, QueryView } from '../components/state';
import { markerColor } from '../components/time-chart';
import { formatDateTime } from '../lib/time';
import { useMetricsScope } from '../lib/metrics-scope';
import { useAccountSid, useSession } from '../lib/session';
import { useQueryState } from '../lib/url-state';

/** Event markers in the range, filtered by type and source; create, edit and delete. */
export function EventsPage() {
  const a = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const { get, set } = useQueryState();
  const { scope } = useMetricsScope();
  const type = get('type') ?? '';
  const source = get('source') ?? '';
  const [editing, setEditing] = useState<EventMarker | 'new' | null>(null);
  const [deleting, setDeleting] = useState<EventMarker | null>(null);
  const query = {
    bucketSid: scope.bucketSid,
    environmentSid: scope.environmentSid,
    type: type || undefined,
    source: source || undefined,
    start_date: scope.startDate,
    end_date: scope.endDate,
    limit: 100,
  };
  const list = useQuery({
    queryKey: ['events', a, query],
    queryFn: () => events.list(a, query),
    placeholderData: keepPreviousData,
  });
  const remove = useMutation({
    mutationFn: (sid: string) => events.remove(a, sid),
    onSuccess: async () => {
      setDeleting(null);
      await qc.invalidateQueries();
    },
  });
  return (
    <div className="page">
      <div className="page-head">
        <h1>Events</h1>
        <RangePicker />
      </div>
      <div className="toolbar">
        <label>
          Type{' '}
          <select value={type} onChange={(e) => set({ type: e.target.value || null }, { replace: true })}>
            <option value="">All</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          Source{' '}
          <input
            type="search"
            placeholder="dashboard, ci, mcp…"
            value={source}
            onChange={(e) => set({ source: e.target.value || null }, { replace: true })}
          />
        </label>
        {can('events:write') ? (
          <button type="button" className="btn btn-primary" onClick={() => setEditing('new')}>
            Add event
          </button>
        ) : null}
      </div>
      <section className="panel">
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No event markers in this range">
              Mark deployments, incidents and config changes to see them on the charts: click a chart on the
              overview, or send <code>POST /v1/accounts/…/events</code> from your CI pipeline.
            </Empty>
          }
        >
          {(d) => (
            <div className="table-wrap">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Type</th>
                    <th scope="col">Title</th>
                    <th scope="col">When</th>
                    <th scope="col">Scope</th>
                    <th scope="col">Source</th>
                    <th scope="col">
                      <span className="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.records.map((e) => (
                    <tr key={e.sid}>
                      <td>
                        <span className="badge" style={{ background: markerColor(e.type) }}>
                          {e.type.replace('_', ' ')}
                        </span>
                      </td>
                      <td>
                        <strong>{e.name}</strong>
                        {e.description ? <div className="muted small">{e.description}</div> : null}
                      </td>
                      <td className="nowrap">
                        {formatDateTime(e.startedAt)}
                        {e.endedAt ? (
                          <div className="muted small">until {formatDateTime(e.endedAt)}</div>
                        ) : null}
                      </td>
                      <td className="small">
                        {e.bucketSids.includes('*') ? 'all buckets' : e.bucketSids.join(', ')}
                        {e.environmentSids.includes('*') ? '' : ` · ${e.environmentSids.join(', ')}`}
                      </td>
                      <td className="small">{e.source ?? '–'}</td>
                      <td>
                        <div className="row-actions">
                          {can('events:write') ? (
                            <button type="button" className="btn btn-small" onClick={() => setEditing(e)}>
                              Edit
                            </button>
                          ) : null}
                          {can('events:delete') ? (
                            <button
                              type="button"
                              className="btn btn-small btn-danger-ghost"
                              onClick={() => setDeleting(e)}
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
          )}
        </QueryView>
      </section>
      {editing ? (
        <EventDialog
          existing={editing === 'new' ? undefined : editing}
          bucketSid={scope.bucketSid}
          onClose={() => setEditing(null)}
        />
      ) : null}
      {deleting ? (
        <ConfirmDialog
          title="Delete this event marker?"
          confirmLabel="Delete marker"
          busy={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(deleting.sid)}
          onClose={() => setDeleting(null)}
        >
          <p>“{deleting.name}” disappears from every chart. Traffic data is not affected.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}
