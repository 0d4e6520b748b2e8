// The Fleet page as one module: the app creates a store with browserFleetStore and keeps it in
// its context; src/pages.ts routes #/fleet to FleetRoutePage, and the header offers the page
// only while the store says the daemon has the fleet view (--prometheus).

import type { FleetStore as FleetStoreType } from './store';
import { FleetStore } from './store';

export { FleetPage, FleetRoutePage } from './FleetPage';
export { FleetStore } from './store';

/** A store wired to the browser's timers and visibility; the app hands it /api/config
 * (FleetStore.setConfig). */
export function browserFleetStore(getJson: <T>(path: string) => Promise<T>): FleetStoreType {
  const s = new FleetStore({
    getJson,
    setTimer: (fn, ms) => setTimeout(fn, ms),
    clearTimer: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
    now: () => Date.now(),
    hidden: () => document.hidden,
  });
  return s;
}
