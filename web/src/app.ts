// What every page is given: the live store (stream samples), the REST client, and its place
// (route parameters and query). A page is a Preact component of PageProps; src/pages.ts lists
// them.

import type { ComponentType } from 'preact';

import type { FleetStore } from './fleet/store';
import type { Api } from './lib/api';
import type { Store } from './lib/store';

export interface AppContext {
  store: Store;
  api: Api;
  /** The fleet view's state (the Fleet page; on with the daemon's --prometheus). */
  fleet: FleetStore;
}

export interface PageProps {
  app: AppContext;
  /** The route's ":name" segments, decoded. */
  params: Record<string, string>;
  /** The fragment's query ("#/benchmarks/compare?ids=a,b"). */
  query: URLSearchParams;
}

export type Page = ComponentType<PageProps>;
