// The age of a card's data while the stream is down: the values stay on screen, greyed, with
// how old they are, never passed off as live.

import { fmtAge } from '../lib/format';
import type { Store } from '../lib/store';
import { useTicker, useTopics } from './hooks';

/** Whether the page shows data it can no longer refresh (the link is not live). */
export function isStale(store: Store): boolean {
  return store.receivedAt > 0 && store.link.kind !== 'live';
}

export function StaleNote({ store }: { store: Store }) {
  useTopics(store, 'link');
  useTicker(1000);
  if (!isStale(store)) return null;
  return (
    <p class="stale-note" data-field="stale" role="note">
      Not live: values from {fmtAge(Date.now() - store.receivedAt)} ago
    </p>
  );
}
