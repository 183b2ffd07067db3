import { useContext, type ReactNode } from 'react';
import { ApiError } from '../api/client';
import { formatTime } from '../lib/time';
import { RateLimitNoticeShown } from './rate-limit';

/** Loading, empty and error states: every panel shows one of them instead of blank space. */
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className="state state-loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="state state-empty">
      <strong>{title}</strong>
      {children ? <div className="state-body">{children}</div> : null}
    </div>
  );
}

/** Shows the API envelope's message as the API wrote it. */
export function ErrorBox({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const message = error instanceof Error ? error.message : 'Something went wrong';
  const code = error instanceof ApiError ? error.code : undefined;
  // A 429 says when the quota resets (the client reads it from the response's headers), unless
  // the frame's notice above says it already.
  const noticeShown = useContext(RateLimitNoticeShown);
  const resetAt =
    !noticeShown &&
    error instanceof ApiError &&
    error.status === 429 &&
    typeof error.details.resetAt === 'string'
      ? error.details.resetAt
      : undefined;
  return (
    <div className="state state-error" role="alert">
      <strong>{message}</strong>
      {code ? <span className="muted"> ({code})</span> : null}
      {resetAt ? <span> It resets at {formatTime(resetAt)}.</span> : null}
      {onRetry ? (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}

/** One query's three states around its content. */
export function QueryView<T>({
  query,
  children,
  empty,
  isEmpty,
}: {
  query: { data?: T; error: unknown; isPending: boolean; refetch: () => unknown };
  children: (data: T) => ReactNode;
  empty?: ReactNode;
  isEmpty?: (data: T) => boolean;
}) {
  if (query.isPending) return <Loading />;
  if (query.error && query.data === undefined)
    return <ErrorBox error={query.error} onRetry={() => void query.refetch()} />;
  const data = query.data as T;
  if (empty && isEmpty?.(data)) return <>{empty}</>;
  return <>{children(data)}</>;
}
