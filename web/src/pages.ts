// The dashboard's pages, one entry each: adding a page is adding a line here (its component
// takes PageProps, see app.ts). Entries with `nav` appear in the header, in this order;
// `section` says which of those stays highlighted on a page reached through links. Static
// path segments beat ":params" whatever the order (lib/router.ts).

import type { Page } from './app';
import { FleetRoutePage } from './fleet';
import type { Route } from './lib/router';
import { BenchmarkPage } from './pages/BenchmarkPage';
import { BenchmarksPage } from './pages/BenchmarksPage';
import { ComparePage } from './pages/ComparePage';
import { GpuPage } from './pages/GpuPage';
import { JobFormPage } from './pages/JobFormPage';
import { JobPage } from './pages/JobPage';
import { JobsPage } from './pages/JobsPage';
import { LivePage } from './pages/LivePage';
import { SessionPage } from './pages/SessionPage';
import { SessionsPage } from './pages/SessionsPage';

export const PAGES: readonly Route<Page>[] = [
  { path: '/', page: LivePage, nav: 'Live' },
  { path: '/gpu/:index', page: GpuPage, section: '/' },
  { path: '/sessions', page: SessionsPage, nav: 'Sessions' },
  { path: '/sessions/:id', page: SessionPage, section: '/sessions' },
  { path: '/benchmarks', page: BenchmarksPage, nav: 'Benchmarks' },
  { path: '/benchmarks/compare', page: ComparePage, section: '/benchmarks' },
  { path: '/benchmarks/new', page: JobFormPage, section: '/benchmarks' },
  { path: '/benchmarks/jobs', page: JobsPage, section: '/benchmarks' },
  { path: '/benchmarks/jobs/:id', page: JobPage, section: '/benchmarks' },
  { path: '/benchmarks/:id', page: BenchmarkPage, section: '/benchmarks' },
  { path: '/fleet', page: FleetRoutePage, nav: 'Fleet' },
];

/** The header's pages: Fleet only while the daemon has the fleet view. */
export function navPages(fleetOn: boolean): readonly Route<Page>[] {
  return fleetOn ? PAGES : PAGES.filter((r) => r.path !== '/fleet');
}
