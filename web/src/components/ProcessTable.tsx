// GPU processes of every GPU: sortable columns (buttons in the headers, aria-sort for screen
// readers) and a filter box. Rows are capped so a box with thousands of processes stays smooth.

import { useState } from 'preact/hooks';

import { fmtMiB, fmtPercent, NA } from '../lib/format';
import { allProcesses, filterProcesses, sortProcesses } from '../lib/processes';
import type { ProcKey, SortDir } from '../lib/processes';
import type { Store } from '../lib/store';
import { useTopics } from './hooks';
import { FilterInput } from './ListParts';

/** `short`: the header on a phone, where the columns are narrow. */
const COLUMNS: { key: ProcKey; label: string; short: string; num: boolean }[] = [
  { key: 'gpu', label: 'GPU', short: 'GPU', num: true },
  { key: 'pid', label: 'PID', short: 'PID', num: true },
  { key: 'user', label: 'User', short: 'User', num: false },
  { key: 'command', label: 'Command', short: 'Command', num: false },
  { key: 'sm', label: 'SM %', short: 'SM', num: true },
  { key: 'memory', label: 'GPU memory', short: 'Memory', num: true },
];

const MAX_ROWS = 200;

export function ProcessTable({ store, gpu }: { store: Store; gpu?: number }) {
  useTopics(store, 'frame');
  const [sortKey, setSortKey] = useState<ProcKey>('memory');
  const [dir, setDir] = useState<SortDir>('desc');
  const [query, setQuery] = useState('');

  const snap = store.snapshot;
  const all = allProcesses(snap).filter((p) => gpu === undefined || p.gpu === gpu);
  const rows = sortProcesses(filterProcesses(all, query), sortKey, dir);
  const shown = rows.slice(0, MAX_ROWS);

  const sortBy = (k: ProcKey): void => {
    if (k === sortKey) setDir(dir === 'asc' ? 'desc' : 'asc');
    else {
      setSortKey(k);
      // Numbers read best largest first, names alphabetically.
      setDir(k === 'memory' || k === 'sm' ? 'desc' : 'asc');
    }
  };

  return (
    <section class="card procs" aria-labelledby="procs-title">
      <header class="card-head">
        <h2 id="procs-title">Processes</h2>
        <span class="count" data-field="process-count">
          {query ? `${rows.length} of ${all.length}` : all.length}
        </span>
        <FilterInput label="Filter processes" placeholder="Filter: PID, user, command" value={query} onInput={setQuery} />
      </header>
      {snap && snap.processes_dropped > 0 && (
        <p class="note">{snap.processes_dropped} more processes were not listed by the daemon (limit reached).</p>
      )}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              {COLUMNS.map((c) => (
                <th
                  key={c.key}
                  class={c.num ? 'num' : undefined}
                  aria-sort={sortKey === c.key ? (dir === 'asc' ? 'ascending' : 'descending') : 'none'}
                  data-key={c.key}
                >
                  <button type="button" onClick={() => sortBy(c.key)} aria-label={c.label}>
                    <span class="l-long">{c.label}</span>
                    <span class="l-short" aria-hidden="true">
                      {c.short}
                    </span>
                    <span class="arrow" aria-hidden="true">
                      {sortKey === c.key ? (dir === 'asc' ? '▲' : '▼') : ''}
                    </span>
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((p) => (
              <tr key={`${p.gpu}:${p.pid}`} data-pid={p.pid} data-gpu={p.gpu} title={p.user ? `user ${p.user}` : undefined}>
                <td class="num">{p.gpu}</td>
                <td class="num">{p.pid}</td>
                <td class={p.user ? undefined : 'na'}>{p.user ?? NA}</td>
                <td class={p.command ? 'cmd' : 'cmd na'} title={p.command ?? undefined}>
                  {p.command ?? NA}
                </td>
                <td
                  class={(p.utilization?.sm ?? null) === null ? 'num na' : 'num'}
                  data-field="sm"
                  title={p.mig_device ? `MIG device ${p.mig_device}` : undefined}
                >
                  {fmtPercent(p.utilization?.sm ?? null)}
                </td>
                <td class={p.used_memory_mib === null ? 'num na' : 'num'}>{fmtMiB(p.used_memory_mib)}</td>
              </tr>
            ))}
            {shown.length === 0 && (
              <tr class="empty">
                <td colSpan={COLUMNS.length}>
                  {all.length === 0 ? 'No process is using a GPU.' : 'No process matches the filter.'}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {rows.length > MAX_ROWS && (
        <p class="note">
          Showing {MAX_ROWS} of {rows.length}; narrow the filter to see the rest.
        </p>
      )}
    </section>
  );
}
