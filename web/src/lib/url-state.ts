import { useCallback, useMemo } from 'react';
import { useLocation, useSearch } from 'wouter';
import { resolveRange, type TimeRange } from './time';

/**
 * The dashboard's state lives in the URL query (as in Plausible): bucket, environment, consumer,
 * range and each page's own filters, so every view is a deep link and a reload keeps it.
 */
export const SHARED_KEYS = ['bucket', 'env', 'consumer', 'range', 'from', 'to'] as const;

export function useQueryState(): {
  params: URLSearchParams;
  get: (key: string) => string | null;
  set: (changes: Record<string, string | null | undefined>, opts?: { replace?: boolean }) => void;
} {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = useMemo(() => new URLSearchParams(search), [search]);
  const set = useCallback(
    (changes: Record<string, string | null | undefined>, opts?: { replace?: boolean }) => {
      const next = new URLSearchParams(search);
      for (const [k, v] of Object.entries(changes)) {
        if (v === null || v === undefined || v === '') next.delete(k);
        else next.set(k, v);
      }
      const qs = next.toString();
      navigate(qs ? `${location}?${qs}` : location, { replace: opts?.replace ?? false });
    },
    [search, location, navigate],
  );
  return { params, get: (k) => params.get(k), set };
}

/** A link target that keeps the shared keys (bucket, env, consumer, range) of the current URL. */
export function useSharedHref(): (path: string, extra?: Record<string, string | undefined>) => string {
  const search = useSearch();
  return useCallback(
    (path, extra) => {
      const cur = new URLSearchParams(search);
      const next = new URLSearchParams();
      for (const k of SHARED_KEYS) {
        const v = cur.get(k);
        if (v) next.set(k, v);
      }
      for (const [k, v] of Object.entries(extra ?? {})) if (v) next.set(k, v);
      const qs = next.toString();
      return qs ? `${path}?${qs}` : path;
    },
    [search],
  );
}

export function useRange(): TimeRange {
  const { get } = useQueryState();
  const range = get('range');
  const from = get('from');
  const to = get('to');
  // Recomputed on every render: a preset's end moves with the clock (minute-aligned).
  return resolveRange(range, from, to);
}
