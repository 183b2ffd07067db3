import type { EventMarker } from '../../api/types';
import { useBuckets } from '../../api/queries';

/** The buckets and environments a marker is shown on, buckets by name. */
export function useScopeText(): (e: EventMarker) => string {
  const list = useBuckets();
  const names = new Map((list.data?.records ?? []).map((b) => [b.sid, b.name]));
  return (e) => {
    const b = e.bucketSids.includes('*')
      ? 'all buckets'
      : e.bucketSids.map((s) => names.get(s) ?? s).join(', ');
    return e.environmentSids.includes('*') ? b : `${b} · ${e.environmentSids.join(', ')}`;
  };
}
