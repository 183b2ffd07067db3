import { useEffect, useRef, useState } from 'react';
import { requests } from '../../api/resources';
import type { RequestRecord } from '../../api/types';
import { usePageVisible } from '../../lib/visibility';

/** Rows kept in memory: the live tail prepends, the oldest fall off. */
export const MAX_ROWS = 2000;

type LiveState = 'connecting' | 'live' | 'reconnecting' | 'paused' | 'disconnected' | 'off';

/** Newest first by createdAt, then sid; each sid once. */
export function mergeRows(lists: RequestRecord[][]): RequestRecord[] {
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
export function useLiveTail(
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

/** The live tail's state and its pause / resume button. */
export function LiveControl({ live }: { live: LiveTail }) {
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
