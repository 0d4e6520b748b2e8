// Benchmarks `gpumon bench` stored (the benchmark history): one row per run with its best
// figures; pick two or more to compare them point by point.

import { useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import { FilterInput, ListBanners } from '../components/ListParts';
import type { Api } from '../lib/api';
import type { BenchBrief, BenchList, BenchPointBrief } from '../lib/bench';
import { benchMatches, bestAt, fmtFig, serverShort, validitySummary } from '../lib/bench';
import { href } from '../lib/router';
import type { SessionList } from '../lib/sessions';
import { fmtDateTime, fmtRunDuration, runTitle } from '../lib/sessions';

interface Listed {
  list: BenchList;
  /** Which benchmarks ran on simulated GPUs (their provider comes with the runs' list). */
  simulated: Set<string>;
}

async function loadList(api: Api): Promise<Listed> {
  const [list, runs] = await Promise.all([
    api.json<BenchList>('api/benchmarks?limit=500'),
    api.json<SessionList>('api/sessions?kind=bench&limit=500').catch(() => null),
  ]);
  const simulated = new Set((runs?.sessions ?? []).filter((r) => r.provider === 'sim').map((r) => r.id));
  return { list, simulated };
}

/** A best figure with the point it is from under it. */
function BestCell({ points, k, lower, digits, field }: { points: BenchPointBrief[]; k: keyof BenchPointBrief; lower?: boolean; digits: number; field: string }) {
  const b = bestAt(points, k, lower);
  return (
    <td class={b.value === null ? 'num na' : 'num'} data-field={field}>
      {fmtFig(b.value, digits)}
      {b.load && (
        <span class="range" data-field={`${field}-at`}>
          {b.load}
        </span>
      )}
    </td>
  );
}

function ValidCell({ b }: { b: BenchBrief }) {
  const v = validitySummary(b.points);
  return (
    <td
      class={`c-valid valid-${v.state}${v.state === 'none' ? ' status-bad' : v.state === 'some' ? ' status-warn' : ''}`}
      data-field="valid"
      title={b.points.map((p) => `${p.load}: ${p.valid === null ? 'unknown' : p.valid ? 'valid' : 'not valid'}`).join('\n')}
    >
      {v.text}
    </td>
  );
}

const MAX_COMPARE = 16;

export function BenchmarksPage({ app, query }: PageProps) {
  const { api } = app;
  const res = useResource(() => loadList(api), []);
  const [picked, setPicked] = useState<string[]>([]);
  const [filter, setFilter] = useState('');
  const list = res.data?.list;
  const simulated = res.data?.simulated ?? new Set<string>();
  const all = list?.benchmarks ?? [];
  const rows = all.filter((b) => benchMatches(b, filter));
  const deleted = query.get('deleted');
  const toggle = (id: string, on: boolean): void =>
    setPicked((p) => (on ? [...p.filter((x) => x !== id), id].slice(-MAX_COMPARE) : p.filter((x) => x !== id)));
  // Compared in the order of the table (newest first), the first one being the baseline.
  const ordered = rows.map((b) => b.id).filter((id) => picked.includes(id));

  return (
    <div class="page page-benchmarks">
      <div class="toolbar">
        <h2 class="page-title">Benchmarks</h2>
        <span class="note" data-field="bench-count">
          {list ? (filter.trim() ? `${rows.length} of ${all.length}` : `${all.length} stored`) : ''}
        </span>
        <div class="spacer" />
        <FilterInput label="Filter benchmarks" placeholder="Filter: label, model, server, id" value={filter} onInput={setFilter} />
        <a
          class={`btn btn-primary${ordered.length < 2 ? ' disabled' : ''}`}
          data-action="compare"
          aria-disabled={ordered.length < 2}
          href={ordered.length >= 2 ? href('/benchmarks/compare', { ids: ordered.join(',') }) : undefined}
          title="Pick two or more benchmarks in the table"
        >
          Compare{ordered.length ? ` (${ordered.length})` : ''}
        </a>
        <a class="btn" href={href('/benchmarks/jobs')} data-action="queue">
          Queue
        </a>
        <a class="btn btn-primary" href={href('/benchmarks/new')} data-action="new-benchmark">
          New benchmark
        </a>
        <button type="button" class="btn" onClick={res.reload}>
          Refresh
        </button>
      </div>
      <ListBanners what="benchmarks" deleted={deleted} error={res.error} storeError={list?.store_error} />
      {list && all.length === 0 && (
        <section class="card empty-state">
          <p>No benchmark stored yet.</p>
          <p class="note">
            Run one against an OpenAI-compatible server: <code>gpumon bench --url http://localhost:8000 --concurrency 1,8,32</code>. It is
            stored in the database this daemon reads (<code>--db</code>).
          </p>
        </section>
      )}
      {rows.length > 0 && (
        <section class="card">
          <div class="table-wrap table-tall">
            <table class="runs benches">
              <thead>
                <tr>
                  <th class="c-pick">
                    <span class="sr-only">Compare</span>
                  </th>
                  <th class="c-start">Started</th>
                  <th class="c-label">Label</th>
                  <th class="c-model">Model</th>
                  <th class="c-server">Server</th>
                  <th class="c-points num">Points</th>
                  <th class="num" title="Best output tokens per second over the points, and the point it is from">
                    Best tok/s
                  </th>
                  <th class="num" title="Lowest TTFT p50 over the points, and the point it is from">
                    Lowest TTFT p50 (ms)
                  </th>
                  <th class="num" title="Best output tokens per joule of GPU energy, and the point it is from">
                    Best tok/J
                  </th>
                  <th class="c-dur num">Duration</th>
                  <th class="c-valid" title="Valid points, of those measured">
                    Valid points
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((b) => {
                  return (
                    <tr key={b.id} data-id={b.id}>
                      <td class="c-pick">
                        <input
                          type="checkbox"
                          aria-label={`Compare ${runTitle(b)}`}
                          checked={picked.includes(b.id)}
                          onChange={(e) => toggle(b.id, (e.currentTarget as HTMLInputElement).checked)}
                        />
                      </td>
                      <td class="c-start">{fmtDateTime(b.started_at)}</td>
                      <td class="c-label">
                        <a href={href(`/benchmarks/${b.id}`)} title={b.id}>
                          {runTitle(b)}
                        </a>
                        {simulated.has(b.id) && (
                          <span class="badge badge-sim" title="Measured on simulated GPUs" data-field="sim">
                            sim
                          </span>
                        )}
                      </td>
                      <td class="c-model" title={b.model ?? undefined}>
                        {b.model ?? '—'}
                      </td>
                      <td class="c-server" title={`${b.url ?? ''}${b.api ? ` (${b.api})` : ''}`} data-field="server">
                        {serverShort(b.url)}
                      </td>
                      <td class="c-points num">{b.points.length}</td>
                      <BestCell points={b.points} k="output_tokens_per_s" digits={1} field="tps" />
                      <BestCell points={b.points} k="ttft_p50_ms" lower digits={1} field="ttft-p50" />
                      <BestCell points={b.points} k="output_tokens_per_joule" digits={3} field="tok-per-j" />
                      <td class="c-dur num">{fmtRunDuration(b.duration_seconds)}</td>
                      <ValidCell b={b} />
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </section>
      )}
    </div>
  );
}
