// The page: header, then either the GPU grid or the no-GPU state, then processes and host.
// App itself re-renders only when the set of GPUs changes, never per sample.

import { FleetNav, FleetPage, useFleetRoute } from '../fleet';
import type { FleetStore } from '../fleet';
import type { Store } from '../lib/store';
import { GpuCard } from './GpuCard';
import { Header } from './Header';
import { HostPanel } from './HostPanel';
import { NoGpu } from './NoGpu';
import { ProcessTable } from './ProcessTable';
import { useTopics } from './hooks';

export interface AppProps {
  store: Store;
  onRetry: () => void;
  /** A problem that stops the page from working at all (e.g. a missing token), or null. */
  fatal: string | null;
  /** The Fleet page (#/fleet), offered when the daemon runs with --prometheus. */
  fleet: FleetStore;
}

export function App({ store, onRetry, fatal, fleet }: AppProps) {
  useTopics(store, 'layout', 'series');
  const onFleet = useFleetRoute();
  const s = store.snapshot;
  const n = s?.gpus.length ?? 0;
  if (onFleet)
    return (
      <>
        <Header store={store} onRetry={onRetry} />
        <FleetNav fleet={fleet} onFleet />
        <FleetPage fleet={fleet} />
      </>
    );
  return (
    <>
      <Header store={store} onRetry={onRetry} />
      <FleetNav fleet={fleet} onFleet={false} />
      <main data-gpu-count={n} data-ready={s ? 'yes' : 'no'}>
        {fatal && (
          <p class="banner" role="alert">
            {fatal}
          </p>
        )}
        {store.historyError && <p class="banner banner-soft">{store.historyError}</p>}
        {!s && !fatal && <p class="loading">Waiting for the first sample from the daemon…</p>}
        {s && n === 0 && <NoGpu store={store} />}
        {s && n > 0 && (
          <div class={`grid grid-${Math.min(n, 4)}`}>
            {s.gpus.map((g) => (
              <GpuCard key={g.uuid ?? g.index} store={store} index={g.index} />
            ))}
          </div>
        )}
        {s && (
          <div class="lower">
            {n > 0 && <ProcessTable store={store} />}
            <HostPanel store={store} />
          </div>
        )}
      </main>
    </>
  );
}
