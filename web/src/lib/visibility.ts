import { useSyncExternalStore } from 'react';

function subscribe(cb: () => void): () => void {
  document.addEventListener('visibilitychange', cb);
  return () => document.removeEventListener('visibilitychange', cb);
}

/**
 * Whether the tab is shown (Page Visibility API). A hidden tab makes no polling calls: the query
 * client skips the refresh intervals of a hidden tab and the stream's live tail disconnects; both
 * catch up as soon as the tab is shown again.
 */
export function usePageVisible(): boolean {
  return useSyncExternalStore(
    subscribe,
    () => document.visibilityState !== 'hidden',
    () => true,
  );
}
