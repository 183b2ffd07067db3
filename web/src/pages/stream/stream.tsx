import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Fragment, useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { Link } from 'wouter';
import { ApiError } from '../../api/client';
import { buckets, requests, streamViews } from '../../api/resources';
import type { RequestRecord, StreamView } from '../../api/types';
import { ConsumerLink } from '../../components/consumer-link';
import { Dialog, RemoveDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { IngestSnippet } from '../../components/ingest-snippet';
import { RangePicker } from '../../components/range-picker';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { withConsumer } from '../../lib/consumer';
import { ms } from '../../lib/format';
import { useAccountSid, useSession } from '../../lib/session';
import { usePageVisible } from '../../lib/visibility';
import { formatDateTime, formatDay, formatTime, localDay, TIME_ZONE, type TimeRange } from '../../lib/time';
import { useQueryState, useRange, useSharedHref } from '../../lib/url-state';

/** Rows kept in memory: the live tail prepends, the oldest fall off. */
const MAX_ROWS = 2000;
const PAGE_SIZE = 100;

/** Where the next older page starts: the oldest row's time, and a page number for equal times. */
interface PageParam {
  endDate?: string;
  page: number;
}

type LiveState = 'connecting' | 'live' | 'reconnecting' | 'paused' | 'disconnected' | 'off';

/** Newest first by createdAt, then sid; each sid once. */
function mergeRows(lists: RequestRecord[][]): RequestRecord[] {
  const seen = new Set<string>();
  const out: RequestRecord[] = [];
  for (const list of lists)
    for (const r of list) {
      if (seen.has(r.sid)) continue;
      seen.add(r.sid);
      out.push(r);
    }
  out.sort((x, y) =>
    x.createdAt === y.createdAt ? (x.sid < y.sid ? 1 : -1) : x.createdAt < y.createdAt ? 1 : -1,
  );
  return out.slice(0, MAX_ROWS);
}

/** The selected bucket's requests, newest first, with search, saved views, older pages and a live tail. */
export function StreamPage() {
  const { get } = useQueryState();
  const bucket = get('bucket');
  const q = get('q') ?? '';
  const consumer = get('consumer');
  const range = useRange();
  if (!bucket) return <PickBucket />;
  // A new bucket, search, consumer or range starts a new list and a new live connection. A preset
  // is keyed by its id, not its ends, which move with the clock.
  const rangeKey = range.live ? range.id : `${range.start.toISOString()}/${range.end.toISOString()}`;
  const search = withConsumer(q, consumer);
  return (
    <Stream
      key={`${bucket}\n${search}\n${rangeKey}`}
      bucket={bucket}
      q={q}
      search={search}
      consumer={consumer}
      range={range}
    />
  );
}

function PickBucket() {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const list = useQuery({ queryKey: ['buckets', accountSid], queryFn: () => buckets.list(accountSid) });
  return (
    <div className="page">
      <div className="page-head">
        <h1>Stream</h1>
      </div>
      <QueryView
        query={list}
        isEmpty={(d) => d.records.length === 0}
        empty={<Empty title="No buckets yet">Create a bucket to capture traffic into it.</Empty>}
      >
        {(d) => (
          <Empty title="Pick a bucket to see its requests">
            <ul className="bucket-links">
              {d.records.map((b) => (
                <li key={b.sid}>
                  <Link href={href('/stream', { bucket: b.sid })}>{b.name}</Link>
                </li>
              ))}
            </ul>
          </Empty>
        )}
      </QueryView>
    </div>
  );
}

/**
 * `q` is the person's search (the search field, saved views); `search` is what the API is asked:
 * `q` narrowed to the header's consumer filter (`consumer:<id>`), for the list and the live tail.
 */
function Stream({
  bucket,
  q,
  search,
  consumer,
  range: current,
}: {
  bucket: string;
  q: string;
  search: string;
  consumer: string | null;
  range: TimeRange;
}) {
  const accountSid = useAccountSid();
  const { get, set } = useQueryState();
  const href = useSharedHref();
  const viewSid = get('view');
  // The range as it was when the list opened: a preset's start stays put while the tail adds rows.
  const [range] = useState(current);
  const startDate = range.start.toISOString();
  // A range that ends now has no end: the newest rows and the live tail; a custom one ends at its end.
  const endDate = range.live ? undefined : range.end.toISOString();

  const history = useInfiniteQuery({
    // The range's start is part of the key: another range is another list, not this one's cache.
    queryKey: ['stream', accountSid, bucket, search, startDate, endDate],
    initialPageParam: { page: 1 } as PageParam,
    queryFn: ({ pageParam }) =>
      requests.list(accountSid, bucket, {
        q: search || undefined,
        startDate,
        endDate: pageParam.endDate ?? endDate,
        page: pageParam.page,
        limit: PAGE_SIZE,
      }),
    getNextPageParam: (last, _all, param): PageParam | undefined => {
      if (!last.hasMore || last.records.length === 0) return undefined;
      const oldest = last.records[last.records.length - 1]!.createdAt;
      // endDate is inclusive: rows at the oldest time come again and are deduplicated by sid. When
      // a whole page shares one time, the next page of that same endDate moves past them.
      return oldest === param.endDate
        ? { endDate: oldest, page: param.page + 1 }
        : { endDate: oldest, page: 1 };
    },
    staleTime: Infinity,
    refetchOnWindowFocus: false,
  });

  // The tail starts after the newest stored row of the first page, so nothing stored between that
  // page and the connection is missed (overlaps are deduplicated by sid).
  const first = history.data?.pages[0]?.records;
  const since = useMemo(() => {
    let best: RequestRecord | undefined;
    for (const r of first ?? []) if (r.storedAt && (!best || r.storedAt > best.storedAt!)) best = r;
    return best ? `${best.storedAt}|${best.sid}` : undefined;
  }, [first]);
  const live = useLiveTail(accountSid, bucket, search, since, history.isSuccess && range.live);

  const rows = useMemo(
    () => mergeRows([live.rows, ...(history.data?.pages.map((p) => p.records) ?? [])]),
    [live.rows, history.data],
  );

  const sentinel = useRef<HTMLDivElement>(null);
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = history;
  useEffect(() => {
    const el = sentinel.current;
    if (!el || !hasNextPage) return;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && !isFetchingNextPage) void fetchNextPage();
    });
    io.observe(el);
    return () => io.disconnect();
  }, [hasNextPage, isFetchingNextPage, fetchNextPage, rows.length]);

  // Times alone while every row is from today; the date too once rows span days or lie before today.
  const withDate = useMemo(() => {
    const days = new Set(rows.map((r) => localDay(r.createdAt)));
    return days.size > 1 || (days.size === 1 && !days.has(localDay(Date.now())));
  }, [rows]);

  const badSearch = history.error instanceof ApiError && history.error.status === 400 ? history.error : null;

  return (
    <div className="page">
      <div className="page-head">
        <h1>Stream</h1>
        {/* Without a first page (a refused search) or with a range in the past there is nothing to tail. */}
        <LiveControl live={history.isError || !range.live ? { ...live, state: 'off' } : live} />
        <RangePicker />
      </div>
      <SearchBar
        key={q}
        q={q}
        error={badSearch?.message}
        onSearch={(next) => set({ q: next || null, view: null })}
      />
      <SavedViews
        bucket={bucket}
        q={q}
        viewSid={viewSid}
        onPick={(v) => set({ q: v?.criteria || null, view: v?.sid ?? null })}
      />
      {history.isPending ? (
        <Loading label="Loading requests…" />
      ) : history.error && !badSearch ? (
        <ErrorBox error={history.error} onRetry={() => void history.refetch()} />
      ) : badSearch ? null : rows.length === 0 ? (
        search ? (
          <Empty
            title={
              consumer && !q
                ? 'No requests of this consumer in this range'
                : 'No requests match this search in this range'
            }
          >
            {range.live
              ? `New matching requests appear here as they arrive${live.state === 'live' ? ' (live)' : ''}.`
              : 'Pick a wider range above to look further back.'}
          </Empty>
        ) : range.live ? (
          <Empty title="No traffic in this range yet: send your first request">
            <IngestSnippet bucketSid={bucket} />
          </Empty>
        ) : (
          <Empty title="No requests in this range">Pick a wider range above to look further back.</Empty>
        )
      ) : (
        <section className="panel stream-panel" aria-label="Requests">
          <div className="table-wrap">
            <table className="table stream-table">
              <caption className="sr-only">Requests, newest first (times in {TIME_ZONE})</caption>
              <thead>
                <tr>
                  <th scope="col">
                    Time{' '}
                    <span className="tz">
                      <BreakAfterSlashes text={TIME_ZONE} />
                    </span>
                  </th>
                  <th scope="col">Method</th>
                  <th scope="col">Path</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="num">
                    Duration
                  </th>
                  <th scope="col" className="hide-narrow">
                    Consumer
                  </th>
                  <th scope="col" className="hide-narrow">
                    Environment
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <StreamRow
                    key={r.sid}
                    r={r}
                    bucket={bucket}
                    withDate={withDate}
                    to={href(`/requests/${bucket}/${r.sid}`, { q: q || undefined })}
                  />
                ))}
              </tbody>
            </table>
          </div>
          <div ref={sentinel} className="stream-end">
            {isFetchingNextPage ? (
              <Loading label="Loading older requests…" />
            ) : hasNextPage ? (
              <button type="button" className="btn btn-small" onClick={() => void fetchNextPage()}>
                Load older requests
              </button>
            ) : rows.length >= MAX_ROWS ? (
              <span className="muted">Showing the newest {MAX_ROWS.toLocaleString()} requests.</span>
            ) : (
              <span className="muted">No older requests.</span>
            )}
          </div>
        </section>
      )}
    </div>
  );
}

function StreamRow({
  r,
  bucket,
  to,
  withDate,
}: {
  r: RequestRecord;
  bucket: string;
  to: string;
  withDate: boolean;
}) {
  const status = r.response?.statusCode ?? null;
  const target = r.request.path ?? r.request.url ?? '–';
  return (
    <tr>
      <td className="nowrap mono small stream-time" title={formatDateTime(r.createdAt)}>
        {withDate ? <span className="stream-date">{formatDay(r.createdAt)} </span> : null}
        {formatTime(r.createdAt)}
      </td>
      <td className="mono">{r.request.method ?? '–'}</td>
      <td className="mono stream-path">
        <Link href={to} title={r.request.url ?? target}>
          <BreakAfterSlashes text={target} />
        </Link>
      </td>
      <td>
        {status ? (
          <span className={`status status-${String(status)[0]}xx`}>{status}</span>
        ) : (
          <span className="muted">none</span>
        )}
      </td>
      <td className="num nowrap">
        {ms(typeof r.timings?.duration === 'number' ? r.timings.duration : null)}
      </td>
      <td className="small hide-narrow stream-consumer">
        <ConsumerLink consumer={r.consumer} bucketSid={bucket} />
      </td>
      <td className="mono small hide-narrow">{r.environmentSid ?? '–'}</td>
    </tr>
  );
}

/** Text with a line-break opportunity after each `/`: paths and zone names where the stream wraps. */
function BreakAfterSlashes({ text }: { text: string }) {
  const parts = text.split('/');
  return (
    <>
      {parts.map((p, i) => (
        <Fragment key={i}>
          {p}
          {i < parts.length - 1 ? (
            <>
              /<wbr />
            </>
          ) : null}
        </Fragment>
      ))}
    </>
  );
}

function SearchBar({ q, error, onSearch }: { q: string; error?: string; onSearch: (q: string) => void }) {
  const [draft, setDraft] = useState(q);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSearch(draft.trim());
  };
  return (
    <form className="stream-search" role="search" onSubmit={submit}>
      <div className="stream-search-row">
        <label htmlFor="stream-q" className="sr-only">
          Search requests
        </label>
        <input
          id="stream-q"
          type="search"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          placeholder="status:>=500 method:POST path:/api/* duration:>250"
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? 'stream-q-error' : 'stream-q-help'}
          spellCheck={false}
          autoComplete="off"
        />
        <button type="submit" className="btn btn-primary">
          Search
        </button>
        {q ? (
          <button type="button" className="btn" onClick={() => onSearch('')}>
            Clear
          </button>
        ) : null}
        <details className="syntax-help">
          <summary>Syntax</summary>
          <div id="stream-q-help" className="syntax-pop">
            <p>
              Terms separated by spaces; every term must match. A leading <code>-</code> negates.
            </p>
            <ul>
              <li>
                <code>status:5xx</code> <code>status:&gt;=400</code> <code>status:200..299</code>
              </li>
              <li>
                <code>method:POST</code> <code>method:PUT,PATCH</code>
              </li>
              <li>
                <code>path:/api/*</code> <code>endpoint:/users/{'{id}'}</code> <code>-path:/health</code>
              </li>
              <li>
                <code>duration:&gt;250</code> <code>duration:1s..5s</code>
              </li>
              <li>
                <code>env:prod01</code> <code>host:*.example.com</code> <code>direction:out</code>
              </li>
              <li>
                <code>tag:team=core</code> <code>blocked:true</code> <code>&quot;two words&quot;</code>
              </li>
              <li>A bare word matches the path, ignoring case.</li>
            </ul>
          </div>
        </details>
      </div>
      {error ? (
        <div id="stream-q-error" className="field-error" role="alert">
          {error}
        </div>
      ) : null}
    </form>
  );
}

type ViewDialog =
  { kind: 'save' } | { kind: 'rename'; view: StreamView } | { kind: 'delete'; view: StreamView };

function SavedViews({
  bucket,
  q,
  viewSid,
  onPick,
}: {
  bucket: string;
  q: string;
  viewSid: string | null;
  onPick: (v: StreamView | null) => void;
}) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const key = ['streamViews', accountSid, bucket];
  const views = useQuery({ queryKey: key, queryFn: () => streamViews.list(accountSid, bucket) });
  const [dialog, setDialog] = useState<ViewDialog | null>(null);
  const current = views.data?.records.find((v) => v.sid === viewSid);
  const close = () => setDialog(null);
  const done = () => {
    void qc.invalidateQueries({ queryKey: key });
    close();
  };

  return (
    <div className="toolbar stream-views">
      <label htmlFor="stream-view">Saved view</label>
      <select
        id="stream-view"
        value={current?.sid ?? ''}
        onChange={(e) => onPick(views.data?.records.find((v) => v.sid === e.target.value) ?? null)}
        disabled={!views.data}
      >
        <option value="">{views.data?.records.length ? 'None' : 'No saved views'}</option>
        {views.data?.records.map((v) => (
          <option key={v.sid} value={v.sid}>
            {v.name}
          </option>
        ))}
      </select>
      {views.error ? <span className="field-error">{(views.error as Error).message}</span> : null}
      {can('streamViews:write') ? (
        <button
          type="button"
          className="btn btn-small"
          onClick={() => setDialog({ kind: 'save' })}
          disabled={!q}
        >
          Save search as view
        </button>
      ) : null}
      {current && can('streamViews:write') ? (
        <button
          type="button"
          className="btn btn-small"
          onClick={() => setDialog({ kind: 'rename', view: current })}
        >
          Rename view
        </button>
      ) : null}
      {current && can('streamViews:delete') ? (
        <button
          type="button"
          className="btn btn-small btn-danger-ghost"
          onClick={() => setDialog({ kind: 'delete', view: current })}
        >
          Delete view
        </button>
      ) : null}
      {dialog?.kind === 'save' ? (
        <NameDialog
          title="Save search as view"
          initial=""
          hint={
            <>
              Criteria: <code>{q}</code>
            </>
          }
          save={(name) => streamViews.create(accountSid, bucket, { name, criteria: q })}
          onClose={close}
          onSaved={(v) => {
            done();
            onPick(v);
          }}
        />
      ) : null}
      {dialog?.kind === 'rename' ? (
        <NameDialog
          title="Rename view"
          initial={dialog.view.name}
          save={(name) => streamViews.update(accountSid, bucket, dialog.view.sid, { name })}
          onClose={close}
          onSaved={done}
        />
      ) : null}
      {dialog?.kind === 'delete' ? (
        <DeleteViewDialog
          view={dialog.view}
          bucket={bucket}
          onClose={close}
          onDeleted={() => {
            done();
            onPick(null);
          }}
        />
      ) : null}
    </div>
  );
}

function NameDialog({
  title,
  initial,
  hint,
  save,
  onClose,
  onSaved,
}: {
  title: string;
  initial: string;
  hint?: ReactNode;
  save: (name: string) => Promise<StreamView>;
  onClose: () => void;
  onSaved: (v: StreamView) => void;
}) {
  const [name, setName] = useState(initial);
  const saving = useMutation({ mutationFn: save, onSuccess: onSaved });
  return (
    <Dialog title={title} onClose={onClose}>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          saving.mutate(name.trim());
        }}
      >
        <Field
          id="view-name"
          label="Name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          required
          maxLength={200}
          autoFocus
          hint={hint}
        />
        <FormError error={saving.error} />
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={saving.isPending || !name.trim()}>
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteViewDialog({
  view,
  bucket,
  onClose,
  onDeleted,
}: {
  view: StreamView;
  bucket: string;
  onClose: () => void;
  onDeleted: () => void;
}) {
  const accountSid = useAccountSid();
  return (
    <RemoveDialog
      title="Delete view"
      confirmLabel="Delete view"
      remove={() => streamViews.remove(accountSid, bucket, view.sid)}
      onDone={onDeleted}
      onClose={onClose}
    >
      <p>
        Deletes the saved view <strong>{view.name}</strong>. The requests it matches stay.
      </p>
    </RemoveDialog>
  );
}

interface LiveTail {
  state: LiveState;
  rows: RequestRecord[];
  waiting: number;
  paused: boolean;
  setPaused: (p: boolean) => void;
  reconnect: () => void;
}

/**
 * The live tail: server-sent events of requests stored after the connection opened (EventSource
 * reconnects by itself and resumes with Last-Event-ID). Paused, new requests wait in a buffer and
 * are counted; resuming shows them. While the tab is hidden the connection is closed; shown again,
 * it reopens after the last event it received, so nothing stored meanwhile is missed.
 */
function useLiveTail(
  accountSid: string,
  bucket: string,
  q: string,
  since: string | undefined,
  enabled: boolean,
): LiveTail {
  const [rows, setRows] = useState<RequestRecord[]>([]);
  const [waitingRows, setWaitingRows] = useState<RequestRecord[]>([]);
  const [paused, setPausedState] = useState(false);
  const [conn, setConn] = useState<'connecting' | 'live' | 'reconnecting' | 'disconnected'>('connecting');
  const [attempt, setAttempt] = useState(0);
  const pausedRef = useRef(false);
  const visible = usePageVisible();
  // The resume cursor of the last event received (its SSE id), for a reconnection after hiding.
  const lastId = useRef<string | undefined>(undefined);

  useEffect(() => {
    if (!enabled || !visible) return;
    setConn('connecting');
    const es = new EventSource(requests.liveUrl(accountSid, bucket, q || undefined, lastId.current ?? since));
    es.onopen = () => setConn('live');
    es.addEventListener('request', (e) => {
      if ((e as MessageEvent<string>).lastEventId) lastId.current = (e as MessageEvent<string>).lastEventId;
      let rec: RequestRecord;
      try {
        rec = JSON.parse((e as MessageEvent<string>).data) as RequestRecord;
      } catch {
        return;
      }
      const add = (list: RequestRecord[]) =>
        list.some((r) => r.sid === rec.sid) ? list : [rec, ...list].slice(0, MAX_ROWS);
      if (pausedRef.current) setWaitingRows(add);
      else setRows(add);
    });
    // NOTE: the server's own `event: error` (a failed poll it retries) arrives as a MessageEvent on
    // the same listener as a connection error; only the latter changes the connection state.
    es.addEventListener('error', (e) => {
      if (e instanceof MessageEvent) return;
      setConn(es.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting');
    });
    return () => es.close();
  }, [accountSid, bucket, q, since, enabled, attempt, visible]);

  const setPaused = (p: boolean) => {
    pausedRef.current = p;
    setPausedState(p);
    if (!p) {
      setRows((cur) => mergeRows([waitingRows, cur]));
      setWaitingRows([]);
    }
  };

  return {
    state: paused ? 'paused' : conn,
    rows,
    waiting: waitingRows.length,
    paused,
    setPaused,
    reconnect: () => {
      setConn('connecting');
      setAttempt((n) => n + 1);
    },
  };
}

const LIVE_LABEL: Record<LiveState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  paused: 'Paused',
  disconnected: 'Disconnected',
  off: 'Not live',
};

function LiveControl({ live }: { live: LiveTail }) {
  return (
    <div className="tail-control">
      <span
        className={`tail-state tail-${live.state}`}
        role="status"
        aria-live="polite"
        data-testid="live-state"
      >
        <span className="tail-dot" aria-hidden="true" />
        {LIVE_LABEL[live.state]}
        {live.paused && live.waiting > 0 ? ` · ${live.waiting.toLocaleString()} new` : ''}
      </span>
      {live.state === 'disconnected' ? (
        <button type="button" className="btn btn-small" onClick={live.reconnect}>
          Reconnect
        </button>
      ) : null}
      {/* No tail to pause while it is off (an invalid search): no "Pause live" beside "Not live". */}
      {live.state === 'off' ? null : (
        <button
          type="button"
          className="btn btn-small"
          aria-pressed={!live.paused}
          onClick={() => live.setPaused(!live.paused)}
        >
          {live.paused ? (live.waiting > 0 ? `Resume (show ${live.waiting})` : 'Resume live') : 'Pause live'}
        </button>
      )}
    </div>
  );
}
