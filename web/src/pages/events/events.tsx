import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { events } from '../../api/resources';
import { eventsBulk } from '../../api/settings';
import type { EventMarker } from '../../api/types';
import { ConfirmDialog } from '../../components/dialog';
import { EVENT_TYPES, EventDialog } from '../../components/event-dialog';
import { RangePicker } from '../../components/range-picker';
import { Empty, QueryView } from '../../components/state';
import { markerColor } from '../../components/time-chart';
import { formatDateTime } from '../../lib/time';
import { useMetricsScope } from '../../lib/metrics-scope';
import { useAccountSid, useSession } from '../../lib/session';
import { useQueryState } from '../../lib/url-state';
import { eventsQuery } from '../../api/queries';

/** Event markers in the range, filtered by type and source; create, edit and delete. */
export function EventsPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const { get, set } = useQueryState();
  const { scope } = useMetricsScope();
  const type = get('type') ?? '';
  const source = get('source') ?? '';
  const [editing, setEditing] = useState<EventMarker | 'new' | null>(null);
  const [deleting, setDeleting] = useState<EventMarker | null>(null);
  // Rows ticked for "Delete selected": transient, so kept in memory rather than in the URL.
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [bulkOpen, setBulkOpen] = useState(false);
  const query = {
    bucketSid: scope.bucketSid,
    environmentSid: scope.environmentSid,
    type: type || undefined,
    source: source || undefined,
    startTime: scope.startDate,
    endTime: scope.endDate,
    limit: 100,
  };
  const list = useQuery({
    ...eventsQuery(accountSid, query),
    placeholderData: keepPreviousData,
  });
  const remove = useMutation({
    mutationFn: (sid: string) => events.remove(accountSid, sid),
    onSuccess: async () => {
      setDeleting(null);
      await qc.invalidateQueries();
    },
  });
  const visible = list.data?.records ?? [];
  const picked = visible.filter((e) => selected.has(e.sid)).map((e) => e.sid);
  const bulk = useMutation({
    mutationFn: (sids: string[]) => eventsBulk.remove(accountSid, sids),
    onSuccess: () => {
      setBulkOpen(false);
      setSelected(new Set());
    },
    // Some markers may be gone even when one delete failed: the list is reloaded either way.
    onSettled: () => qc.invalidateQueries(),
  });
  const tick = (sid: string, on: boolean) =>
    setSelected((cur) => {
      const next = new Set(cur);
      if (on) next.add(sid);
      else next.delete(sid);
      return next;
    });
  const mayDelete = can('events:delete');
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
        <span className="muted small" data-testid="events-scope">
          {scope.bucketSid ? 'This bucket' : 'All buckets'}
          {scope.environmentSid ? `, environment ${scope.environmentSid}` : ', all environments'} (bucket and
          environment are chosen in the header)
        </span>
        {mayDelete && picked.length > 0 ? (
          <button type="button" className="btn btn-danger" onClick={() => setBulkOpen(true)}>
            Delete selected ({picked.length})
          </button>
        ) : null}
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
                    {mayDelete ? (
                      <th scope="col" className="select-cell">
                        <input
                          type="checkbox"
                          aria-label="Select every event on this page"
                          checked={d.records.length > 0 && d.records.every((e) => selected.has(e.sid))}
                          onChange={(ev) =>
                            setSelected(ev.target.checked ? new Set(d.records.map((e) => e.sid)) : new Set())
                          }
                        />
                      </th>
                    ) : null}
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
                      {mayDelete ? (
                        <td className="select-cell">
                          <input
                            type="checkbox"
                            aria-label={`Select ${e.name}`}
                            checked={selected.has(e.sid)}
                            onChange={(ev) => tick(e.sid, ev.target.checked)}
                          />
                        </td>
                      ) : null}
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
      {bulkOpen ? (
        <ConfirmDialog
          title={`Delete ${picked.length} event marker${picked.length === 1 ? '' : 's'}?`}
          confirmLabel={`Delete ${picked.length} marker${picked.length === 1 ? '' : 's'}`}
          busy={bulk.isPending || picked.length === 0}
          error={bulk.error}
          onConfirm={() => bulk.mutate(picked)}
          onClose={() => setBulkOpen(false)}
        >
          <p>
            The {picked.length} selected marker{picked.length === 1 ? '' : 's'} disappear from every chart.
            Traffic data is not affected. This cannot be undone.
          </p>
          <ul className="small">
            {visible
              .filter((e) => selected.has(e.sid))
              .map((e) => (
                <li key={e.sid}>{e.name}</li>
              ))}
          </ul>
        </ConfirmDialog>
      ) : null}
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
