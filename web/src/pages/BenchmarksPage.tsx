// Benchmarks `gpumon bench` stored (seed 000's Benchmark History): one row per run with its best
// figures; pick two or more to compare them point by point.

import { useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import type { BenchList } from '../lib/bench';
import { allValid, best, fmtFig } from '../lib/bench';
import { href } from '../lib/router';
import { fmtDateTime, fmtRunDuration, runTitle } from '../lib/sessions';

const MAX_COMPARE = 16;

export function BenchmarksPage({ app, query }: PageProps) {
  const { api } = app;
  const res = useResource(() => api.json<BenchList>('api/benchmarks?limit=500'), []);
  const [picked, setPicked] = useState<string[]>([]);
  const list = res.data;
  const rows = list?.benchmarks ?? [];
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
          {list ? `${rows.length} stored` : ''}
        </span>
        <div class="spacer" />
        <a
          class={`btn btn-primary${ordered.length < 2 ? ' disabled' : ''}`}
          data-action="compare"
          aria-disabled={ordered.length < 2}
          href={ordered.length >= 2 ? href('/benchmarks/compare', { ids: ordered.join(',') }) : undefined}
          title="Pick two or more benchmarks in the table"
        >
          Compare{ordered.length ? ` (${ordered.length})` : ''}
        </a>
        <button type="button" class="btn" onClick={res.reload}>
          Refresh
        </button>
      </div>
      {deleted && (
        <p class="banner banner-ok" role="status" data-field="deleted">
          Deleted {deleted}.
        </p>
      )}
      {res.error && <p class="banner">Cannot list the benchmarks: {res.error}</p>}
      {list?.store_error && <p class="banner banner-soft">The store could not be read: {list.store_error}</p>}
      {list && rows.length === 0 && (
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
                  <th class="c-points num">Points</th>
                  <th class="num" title="Best output tokens per second over the points">
                    Best tok/s
                  </th>
                  <th class="num" title="Lowest TTFT p50 over the points">
                    TTFT p50 (ms)
                  </th>
                  <th class="num" title="Best output tokens per joule of GPU energy">
                    Best tok/J
                  </th>
                  <th class="c-dur num">Duration</th>
                  <th class="c-valid">Valid</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((b) => {
                  const valid = allValid(b.points);
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
                      </td>
                      <td class="c-model" title={b.url ?? undefined}>
                        {b.model ?? '—'}
                      </td>
                      <td class="c-points num">{b.points.length}</td>
                      <td class="num">{fmtFig(best(b.points, 'output_tokens_per_s'), 1)}</td>
                      <td class="num">{fmtFig(best(b.points, 'ttft_p50_ms', true), 1)}</td>
                      <td class="num" data-field="tok-per-j">
                        {fmtFig(best(b.points, 'output_tokens_per_joule'), 3)}
                      </td>
                      <td class="c-dur num">{fmtRunDuration(b.duration_seconds)}</td>
                      <td class={`c-valid${valid === false ? ' status-bad' : ''}`}>{valid === null ? '—' : valid ? 'yes' : 'no'}</td>
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
