// The Fleet page as one module: the app creates a store with browserFleetStore, shows
// <FleetNav> with its navigation and <FleetPage> when useFleetRoute() says #/fleet is open.

import type { FleetStore as FleetStoreType } from './store';
import { FleetStore } from './store';

export { FleetNav, FleetPage, FLEET_HASH, useFleetRoute } from './FleetPage';
export { FleetStore } from './store';

/** A store wired to the browser's timers and visibility, reading /api/config at once. */
export function browserFleetStore(getJson: <T>(path: string) => Promise<T>): FleetStoreType {
  const s = new FleetStore({
    getJson,
    setTimer: (fn, ms) => setTimeout(fn, ms),
    clearTimer: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
    now: () => Date.now(),
    hidden: () => document.hidden,
  });
  void s.loadConfig();
  return s;
}
