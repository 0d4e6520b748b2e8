// The live page: every GPU as a card, or as a dense overview tile above 8 GPUs (switchable),
// then the GPU processes and the host.

import { useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { GpuCard } from '../components/GpuCard';
import { HostPanel } from '../components/HostPanel';
import { NoGpu } from '../components/NoGpu';
import { Overview } from '../components/Overview';
import { ProcessTable } from '../components/ProcessTable';
import { useTopics } from '../components/hooks';
import { WindowPicker } from '../components/WindowPicker';
import { chooseView, VIEW_KEY } from '../lib/overview';
import type { View } from '../lib/overview';

function savedView(): string | null {
  try {
    return localStorage.getItem(VIEW_KEY);
  } catch {
    return null;
  }
}

export function LivePage({ app }: PageProps) {
  const { store } = app;
  useTopics(store, 'layout', 'series');
  const [chosen, setChosen] = useState<string | null>(savedView);
  const s = store.snapshot;
  const n = s?.gpus.length ?? 0;
  const view = chooseView(chosen, n);
  const pick = (v: View): void => {
    setChosen(v);
    try {
      localStorage.setItem(VIEW_KEY, v);
    } catch {
      // kept for this page view only
    }
  };
  return (
    <div class="page page-live" data-gpu-count={n} data-ready={s ? 'yes' : 'no'} data-view-current={view}>
      {store.historyError && <p class="banner banner-soft">{store.historyError}</p>}
      {!s && <p class="loading">Waiting for the first sample from the daemon…</p>}
      {s && n === 0 && <NoGpu store={store} />}
      {s && n > 0 && (
        <div class="toolbar">
          <div class="seg" role="group" aria-label="View">
            <button type="button" data-view="cards" aria-pressed={view === 'cards'} onClick={() => pick('cards')}>
              Cards
            </button>
            <button type="button" data-view="overview" aria-pressed={view === 'overview'} onClick={() => pick('overview')}>
              Overview
            </button>
          </div>
          <span class="note">
            {n} GPU{n === 1 ? '' : 's'}
            {chosen === null && n > 8 ? ' · overview chosen for more than 8 GPUs' : ''}
          </span>
          <div class="spacer" />
          <WindowPicker store={store} />
        </div>
      )}
      {s && n > 0 && view === 'cards' && (
        <div class={`grid grid-${Math.min(n, 4)}`}>
          {s.gpus.map((g) => (
            <GpuCard key={g.uuid ?? g.index} store={store} index={g.index} />
          ))}
        </div>
      )}
      {s && n > 0 && view === 'overview' && <Overview store={store} />}
      {s && (
        <div class="lower">
          {n > 0 && <ProcessTable store={store} />}
          <HostPanel store={store} />
        </div>
      )}
    </div>
  );
}
