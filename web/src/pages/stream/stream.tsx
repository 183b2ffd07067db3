import { useInfiniteQuery } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link } from 'wouter';
import { ApiError } from '../../api/client';
import { requests } from '../../api/resources';
import type { RequestRecord } from '../../api/types';
import { IngestSnippet } from '../../components/ingest-snippet';
import { RangePicker } from '../../components/range-picker';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { withConsumer } from '../../lib/consumer';
import { useAccountSid } from '../../lib/session';
import { localDay, TIME_ZONE, type TimeRange } from '../../lib/time';
import { useQueryState, useRange, useSharedHref } from '../../lib/url-state';
import { BreakAfterSlashes, StreamRow } from './stream-row';
import { SearchBar } from './search-bar';
import { SavedViews } from './saved-views';
import { LiveControl, MAX_ROWS, mergeRows, useLiveTail } from './live-tail';
import { useBuckets } from '../../api/queries';

const PAGE_SIZE = 100;

/** Where the next older page starts: the oldest row's time, and a page number for equal times. */
interface PageParam {
  endDate?: string;
  page: number;
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
  const href = useSharedHref();
  const list = useBuckets();
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
