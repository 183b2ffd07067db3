import { useQueryClient } from '@tanstack/react-query';
import { createContext, useEffect, useState, useSyncExternalStore } from 'react';
import { clearRateLimit, rateLimitedUntil, subscribeRateLimit } from '../api/client';
import { formatTime } from '../lib/time';

/** When the API quota resets after a refused call (epoch ms), or null. */
export function useRateLimitedUntil(): number | null {
  return useSyncExternalStore(subscribeRateLimit, rateLimitedUntil, () => null);
}

/** "in 12 min", "in 40 s": how long until `at`. */
export function untilText(at: number, now = Date.now()): string {
  const s = Math.max(0, Math.ceil((at - now) / 1000));
  return s < 60 ? `in ${s} s` : `in ${Math.ceil(s / 60)} min`;
}

/**
 * True inside the app's frame, whose RateLimitNotice already says when the quota resets: an error
 * box there leaves the reset time out instead of saying it a second time.
 */
export const RateLimitNoticeShown = createContext(false);

/**
 * Shown at the top of every page while the API refuses calls with 429: when the quota resets. The
 * pages keep what they last showed; at the reset time every query is read again.
 */
export function RateLimitNotice() {
  const until = useRateLimitedUntil();
  const qc = useQueryClient();
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (until === null) return;
    const tick = setInterval(() => setNow(Date.now()), 1000);
    const reset = setTimeout(
      () => {
        clearRateLimit();
        void qc.invalidateQueries();
      },
      Math.max(0, until - Date.now()) + 1000,
    );
    return () => {
      clearInterval(tick);
      clearTimeout(reset);
    };
  }, [until, qc]);
  if (until === null) return null;
  return (
    <div className="rate-limit-notice" role="alert" data-testid="rate-limit-notice">
      <strong>You have used up this hour&apos;s dashboard requests.</strong> They reset at{' '}
      <time dateTime={new Date(until).toISOString()}>{formatTime(until)}</time> ({untilText(until, now)}
      ). Pages keep what they last showed and refresh by themselves then.
    </div>
  );
}
