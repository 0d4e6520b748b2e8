// Recorded runs: sessions started over the API, `gpumon record` and `gpumon run` entries (seed
// 003's experiments), newest first, with what each measured. A row opens the run.

import { useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import { FilterInput, ListBanners } from '../components/ListParts';
import { fmtPercent, NA } from '../lib/format';
import { href } from '../lib/router';
import type { SessionList } from '../lib/sessions';
import { fmtDateTime, fmtEnergy, fmtRunDuration, gpuSummary, isSessionKind, runPath, runTitle } from '../lib/sessions';

const LIMIT = 500;

export function SessionsPage({ app, query }: PageProps) {
  const { api } = app;
  const res = useResource(() => api.json<SessionList>(`api/sessions?limit=${LIMIT}`), []);
  const [filter, setFilter] = useState('');
  const deleted = query.get('deleted');
  const list = res.data;
  const rows = (list?.sessions ?? []).filter((r) => isSessionKind(r.kind));
  const q = filter.trim().toLowerCase();
  const shown = q
    ? rows.filter((r) => [r.id, r.label ?? '', r.command ?? '', r.kind].some((s) => s.toLowerCase().includes(q)))
    : rows;

  return (
    <div class="page page-sessions">
      <div class="toolbar">
        <h2 class="page-title">Sessions</h2>
        <span class="note" data-field="session-count">
          {list ? (q ? `${shown.length} of ${rows.length}` : `${rows.length} recorded`) : ''}
        </span>
        <div class="spacer" />
        <FilterInput label="Filter sessions" placeholder="Filter: label, command, id" value={filter} onInput={setFilter} />
        <button type="button" class="btn" onClick={res.reload}>
          Refresh
        </button>
      </div>
      <ListBanners what="sessions" deleted={deleted} error={res.error} storeError={list?.store_error} />
      {list && rows.length === 0 && (
        <section class="card empty-state">
          <p>No run recorded yet.</p>
          <p class="note">
            Record one with <code>gpumon record -- python train.py</code> (or <code>gpumon run</code>), or start a session with{' '}
            <code>curl -X POST {location.origin}/api/sessions</code>. They are kept in the daemon's database
            {list.stored ? '' : ' (this daemon runs with --db none: only its own sessions, in memory)'}.
          </p>
        </section>
      )}
      {rows.length > 0 && (
        <section class="card">
          <div class="table-wrap table-tall">
            <table class="runs">
              <thead>
                <tr>
                  <th class="c-start">Started</th>
                  <th class="c-label">Label</th>
                  <th class="c-cmd">Command</th>
                  <th class="c-dur num">Duration</th>
                  <th class="c-gpus">GPUs</th>
                  <th class="c-util num" title="Mean over every sample of every GPU, and the largest value">
                    Util. mean / max
                  </th>
                  <th class="c-energy num">Energy</th>
                  <th class="c-status">Status</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((r) => (
                  <tr key={r.id} data-id={r.id} data-kind={r.kind}>
                    <td class="c-start">{fmtDateTime(r.started_at)}</td>
                    <td class="c-label">
                      <a href={href(runPath(r))} title={r.id}>
                        {runTitle(r)}
                      </a>
                      {r.kind !== 'session' && <span class="badge">{r.kind}</span>}
                      {r.provider === 'sim' && (
                        <span class="badge badge-sim" title="Recorded from simulated GPUs">
                          sim
                        </span>
                      )}
                    </td>
                    <td class={r.command ? 'c-cmd cmd' : 'c-cmd na'} title={r.command ?? undefined}>
                      {r.command ?? '—'}
                    </td>
                    <td class="c-dur num">{fmtRunDuration(r.monitoring_duration_seconds)}</td>
                    <td class="c-gpus" title={(r.gpus ?? []).map((g) => `GPU ${g.index}: ${g.name ?? NA}`).join('\n')}>
                      {gpuSummary(r.gpus)}
                    </td>
                    <td class="c-util num" data-field="util">
                      {fmtPercent(r.utilization_mean)} / {fmtPercent(r.utilization_max)}
                    </td>
                    <td class="c-energy num" data-field="energy">
                      {fmtEnergy(r.energy_j)}
                    </td>
                    <td class={`c-status status-${r.status}`}>{r.status}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {list && list.sessions.length >= LIMIT && <p class="note">The newest {LIMIT} entries are listed.</p>}
        </section>
      )}
    </div>
  );
}
