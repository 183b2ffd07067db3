import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import { ApiError } from '../../api/client';
import { requests } from '../../api/resources';
import type { RequestRecord } from '../../api/types';
import { ConsumerLink } from '../../components/consumer-link';
import { ConfirmDialog } from '../../components/dialog';
import { BodyView, KeyValueTable } from './json-view';
import { ErrorBox, Loading } from '../../components/state';
import { bytes, ms } from '../../lib/format';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime, TIME_ZONE } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';

const PHASES = [
  ['dns', 'DNS'],
  ['tcp', 'TCP connect'],
  ['tls', 'TLS'],
  ['request', 'Request sent'],
  ['wait', 'Waiting'],
  ['firstByte', 'First byte'],
  ['download', 'Download'],
] as const;

/** One stored request: what was sent and answered, its timing phases, note, delete. */
export function RequestPage({ params }: { params: { bucketSid: string; requestSid: string } }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const href = useSharedHref();
  const [, navigate] = useLocation();
  const qc = useQueryClient();
  const { bucketSid, requestSid } = params;
  const requestQuery = useQuery({
    queryKey: ['request', accountSid, bucketSid, requestSid],
    queryFn: () => requests.get(accountSid, bucketSid, requestSid),
  });
  const [confirm, setConfirm] = useState(false);
  const remove = useMutation({
    mutationFn: () => requests.remove(accountSid, bucketSid, requestSid),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ['requests'] });
      navigate(href('/stream', { bucket: bucketSid }));
    },
  });
  const back = (
    <Link href={href('/stream', { bucket: bucketSid })} className="muted small">
      ← Stream
    </Link>
  );
  if (requestQuery.isPending) return <Loading />;
  if (requestQuery.error)
    return (
      <div className="page">
        {back}
        {requestQuery.error instanceof ApiError && requestQuery.error.status === 404 ? (
          <ErrorBox
            error={new Error('Request not found: it may be outside the retention period or deleted.')}
          />
        ) : (
          <ErrorBox error={requestQuery.error} onRetry={() => void requestQuery.refetch()} />
        )}
      </div>
    );
  const record = requestQuery.data;
  const status = record.response?.statusCode ?? null;
  const timings = (record.timings ?? {}) as {
    duration?: number | null;
    phases?: Record<string, number | null> | null;
  };
  return (
    <div className="page">
      <div className="page-head">
        <div>
          {back}
          <h1 className="request-title">
            <span className="method">{record.request.method ?? '?'}</span>{' '}
            <span className="mono break">{record.request.url ?? record.request.path}</span>
          </h1>
        </div>
        {can('requests:delete') ? (
          <button type="button" className="btn btn-danger-ghost" onClick={() => setConfirm(true)}>
            Delete request
          </button>
        ) : null}
      </div>
      <div className="tiles">
        <Fact label="Status">
          <span className={`status status-${status ? String(status)[0] : '0'}xx`}>{status ?? 'none'}</span>
        </Fact>
        <Fact label="Duration">{ms(timings.duration)}</Fact>
        <Fact label={`Time (${TIME_ZONE})`}>{formatDateTime(record.createdAt)}</Fact>
        <Fact label="Endpoint">
          <span className="mono">{record.endpoint ?? '–'}</span>
        </Fact>
        <Fact label="Environment">{record.environmentSid ?? '–'}</Fact>
        <Fact label="Consumer">
          <ConsumerLink consumer={record.consumer} bucketSid={bucketSid} />
        </Fact>
        <Fact label="Direction">{record.direction === 'out' ? 'outgoing' : 'incoming'}</Fact>
      </div>
      {timings.phases ? <Waterfall phases={timings.phases} total={timings.duration ?? null} /> : null}
      <div className="grid-2">
        <section className="panel">
          <h2>Request</h2>
          <p className="muted small">
            {partsLine([record.request.host, sized(record.request.size), record.request.contentType])}
          </p>
          <h3>Headers</h3>
          <KeyValueTable
            values={record.request.headers as Record<string, unknown> | null}
            label="Request headers"
          />
          {record.request.queryString && Object.keys(record.request.queryString).length ? (
            <>
              <h3>Query</h3>
              <KeyValueTable
                values={record.request.queryString as Record<string, unknown>}
                label="Query parameters"
              />
            </>
          ) : null}
          <h3>Body</h3>
          <BodyView body={record.request.body} />
        </section>
        <section className="panel">
          <h2>Response</h2>
          <p className="muted small">
            {partsLine([sized(record.response?.size), record.response?.contentType])}
          </p>
          <h3>Headers</h3>
          <KeyValueTable
            values={record.response?.headers as Record<string, unknown> | null}
            label="Response headers"
          />
          <h3>Body</h3>
          <BodyView body={record.response?.body} />
        </section>
      </div>
      <div className="grid-2">
        <section className="panel">
          <h2>Tags</h2>
          {record.tags?.length ? (
            <div className="tags">
              {record.tags.map((t, i) => (
                <span key={i} className="tag">
                  {String(t.key)}={String(t.value)}
                </span>
              ))}
            </div>
          ) : (
            <p className="muted">No tags</p>
          )}
          <h2>Workflows that ran</h2>
          {record.workflowExecutions?.length ? (
            <ul>
              {record.workflowExecutions.map((w, i) => (
                <li key={i} className="mono small">
                  {JSON.stringify(w)}
                </li>
              ))}
            </ul>
          ) : (
            <p className="muted">No workflow ran for this request.</p>
          )}
        </section>
        <NoteEditor record={record} bucketSid={bucketSid} canEdit={can('requests:write')} />
      </div>
      {confirm ? (
        <ConfirmDialog
          title="Delete this request?"
          confirmLabel="Delete request"
          busy={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate()}
          onClose={() => setConfirm(false)}
        >
          <p>The stored record is removed and taken out of the metrics. This cannot be undone.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function Fact({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="tile">
      <div className="tile-label">{label}</div>
      <div className="tile-value small">{children}</div>
    </div>
  );
}

/** The timing phases the client measured, as bars on one time axis. */
function Waterfall({ phases, total }: { phases: Record<string, number | null>; total: number | null }) {
  const rows = PHASES.filter(([k]) => typeof phases[k] === 'number' && (phases[k] ?? 0) >= 0);
  if (rows.length === 0) return null;
  const sum = rows.reduce((s, [k]) => s + (phases[k] ?? 0), 0);
  const span = Math.max(total ?? 0, sum, 1);
  let at = 0;
  return (
    <section className="panel">
      <h2>Timing</h2>
      <div className="waterfall" role="list" aria-label="Timing phases">
        {rows.map(([k, label]) => {
          const v = phases[k] ?? 0;
          const left = (at / span) * 100;
          at += v;
          return (
            <div key={k} className="wf-row" role="listitem">
              <span className="wf-label">{label}</span>
              <span className="wf-track">
                <span
                  className="wf-bar"
                  style={{ left: `${left}%`, width: `${Math.max((v / span) * 100, 0.5)}%` }}
                />
              </span>
              <span className="wf-value">{ms(v)}</span>
            </div>
          );
        })}
      </div>
    </section>
  );
}

function NoteEditor({
  record,
  bucketSid,
  canEdit,
}: {
  record: RequestRecord;
  bucketSid: string;
  canEdit: boolean;
}) {
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const [note, setNote] = useState(record.note ?? '');
  const save = useMutation({
    mutationFn: () => requests.setNote(accountSid, bucketSid, record.sid, note || null),
    onSuccess: (r) => qc.setQueryData(['request', accountSid, bucketSid, record.sid], r),
  });
  return (
    <section className="panel">
      <h2>Note</h2>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <label htmlFor="note" className="sr-only">
          Note
        </label>
        <textarea
          id="note"
          rows={4}
          value={note}
          disabled={!canEdit}
          placeholder="What happened here? Notes are visible to everyone in the account."
          onChange={(e) => setNote(e.target.value)}
        />
        {save.error ? (
          <div className="form-error" role="alert">
            {save.error.message}
          </div>
        ) : null}
        {save.isSuccess ? <div className="hint">Note saved.</div> : null}
        {canEdit ? (
          <div className="actions">
            <button type="submit" className="btn btn-primary" disabled={save.isPending}>
              Save note
            </button>
          </div>
        ) : null}
      </form>
    </section>
  );
}

/** The size when it was captured, else nothing. */
function sized(n: number | null | undefined): string | null {
  return n === null || n === undefined ? null : bytes(n);
}

/** The known parts joined by a dot; a note when none was captured. */
function partsLine(parts: (string | null | undefined)[]): string {
  const known = parts.filter((p): p is string => Boolean(p));
  return known.length ? known.join(' · ') : 'No host, size or content type captured';
}
