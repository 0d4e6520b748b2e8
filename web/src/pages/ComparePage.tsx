// Two or more benchmarks side by side, point by point (matched by load), each figure with its
// change from the first one's, coloured by whether it got better or worse: the daemon's GET
// /api/benchmarks/compare, the same as `gpumon history compare`. Above the table, their sweeps
// as curves: one chart per figure, one line per benchmark in its colour.

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import { XYChart } from '../components/XYChart';
import type { BenchCompare, BenchDoc, BenchPoint } from '../lib/bench';
import { changeVerdict, comparedMetrics, fmtChange, fmtFig, settingsDiffer } from '../lib/bench';
import { NA } from '../lib/format';
import { href } from '../lib/router';
import { gpuColor, runTitle } from '../lib/sessions';
import { compareSweep, pct } from '../lib/sweep';
import type { Num } from '../lib/types';

const runColor = (i: number): string => gpuColor(i);

const CURVES: { kind: string; title: string; unit: string; f: (p: BenchPoint) => Num; fmt: (v: Num) => string }[] = [
  {
    kind: 'compare-throughput',
    title: 'Output tokens per second',
    unit: 'tok/s',
    f: (p) => p.output_tokens_per_s,
    fmt: (v) => (v === null ? NA : `${v.toFixed(v >= 100 ? 0 : 1)} tok/s`),
  },
  { kind: 'compare-ttft-p50', title: 'TTFT p50', unit: 'ms', f: (p) => pct(p.ttft_ms, 'p50'), fmt: (v) => (v === null ? NA : `${v.toFixed(1)} ms`) },
  { kind: 'compare-ttft-p99', title: 'TTFT p99', unit: 'ms', f: (p) => pct(p.ttft_ms, 'p99'), fmt: (v) => (v === null ? NA : `${v.toFixed(1)} ms`) },
  {
    kind: 'compare-tokens-per-joule',
    title: 'Output tokens per joule',
    unit: 'tok/J',
    f: (p) => p.output_tokens_per_joule,
    fmt: (v) => (v === null ? NA : `${v.toFixed(3)} tok/J`),
  },
];

/** The compared benchmarks' sweeps side by side: a chart per figure, a line per benchmark. */
function CompareCurves({ docs, differ }: { docs: BenchDoc[]; differ: boolean }) {
  const runs = docs.map((d) => d.points);
  const lines = docs.map((d, i) => ({ label: runTitle(d), color: runColor(i) }));
  const key = docs.map((d) => d.id).join('-');
  const charts = CURVES.map((c) => ({ c, s: compareSweep(runs, c.f) })).filter(({ s }) => s.data.slice(1).some((col) => col.some((v) => v !== null)));
  if (charts.length === 0) return null;
  return (
    <section class="card" data-field="compare-sweep">
      <header class="card-head">
        <h2>Sweeps</h2>
        <span class="note">
          {differ ? 'these benchmarks ran with different settings (below): their curves are not like for like' : 'one line per benchmark, one dot per point'}
        </span>
      </header>
      <div class="session-charts sweep-charts">
        {charts.map(({ c, s }) => {
          const xFmt = (x: number): string => s.axis.names?.get(x) ?? (Number.isInteger(x) ? String(x) : x.toFixed(2));
          return (
            <XYChart
              key={c.kind}
              id={key}
              kind={c.kind}
              title={`${c.title} by ${s.axis.title.toLowerCase()}`}
              xTitle={s.axis.title}
              unit={c.unit}
              lines={lines}
              data={s.data}
              fmt={c.fmt}
              xFmt={xFmt}
              xTicks={s.data[0] as number[]}
              log={s.axis.log}
            />
          );
        })}
      </div>
    </section>
  );
}

export function ComparePage({ app, query }: PageProps) {
  const { api } = app;
  const ids = (query.get('ids') ?? '').split(',').filter(Boolean);
  const key = ids.join(',');
  const res = useResource(
    () =>
      ids.length < 2
        ? Promise.reject(new Error('pick two or more benchmarks to compare'))
        : api.json<BenchCompare>(`api/benchmarks/compare?ids=${ids.map(encodeURIComponent).join(',')}`),
    [key],
  );
  const c = res.data;
  const docs = useResource(
    () => (ids.length < 2 ? Promise.resolve([]) : Promise.all(ids.map((id) => api.json<BenchDoc>(`api/benchmarks/${encodeURIComponent(id)}`)))),
    [key],
  );
  const metrics = c ? comparedMetrics(c) : [];
  // Runs asked to do different things differ for that reason: their changes are shown, not judged.
  const differ = c ? settingsDiffer(c) : [];
  // In the table's order, so that a line's colour is its column's.
  const byId = new Map((docs.data ?? []).map((d) => [d.id, d]));
  const ordered = c ? c.benchmarks.map((b) => byId.get(b.id)) : [];
  const curveDocs = c && ordered.every((d) => d !== undefined) ? (ordered as BenchDoc[]) : null;

  return (
    <div class="page page-compare">
      <div class="toolbar">
        <a href={href('/benchmarks')} class="back">
          ← Benchmarks
        </a>
        <h2 class="page-title">Compare {ids.length} benchmarks</h2>
      </div>
      {res.error && <p class="banner">Cannot compare: {res.error}</p>}
      {curveDocs && <CompareCurves docs={curveDocs} differ={differ.length > 0} />}
      {c && (
        <section class="card">
          {differ.length > 0 ? (
            <div class="banner banner-soft" data-field="settings-differ">
              <p>These benchmarks ran with different settings, so their changes are not better or worse:</p>
              <ul>
                {differ.map((d) => (
                  <li key={d}>{d}</li>
                ))}
              </ul>
            </div>
          ) : (
            <p class="note">
              Changes are from the first benchmark's figure; green is better, red worse (lower latency, energy and failures are
              better).
            </p>
          )}
          <div class="table-wrap table-tall">
            <table class="compare" data-field="compare-table">
              <thead>
                <tr>
                  <th class="c-metric">Figure</th>
                  {c.benchmarks.map((b, i) => (
                    <th key={b.id} class="num" data-bench={b.id}>
                      <span class="sw" style={{ background: runColor(i) }} />
                      <a href={href(`/benchmarks/${b.id}`)} title={`${b.id}\n${b.model ?? ''} ${b.url ?? ''}`}>
                        {runTitle(b)}
                      </a>
                      {i === 0 && <span class="note"> (baseline)</span>}
                    </th>
                  ))}
                </tr>
              </thead>
              {c.points.map((pt) => (
                <tbody key={pt.load} data-load={pt.load}>
                  <tr class="group">
                    <th colSpan={c.benchmarks.length + 1}>{pt.load}</th>
                  </tr>
                  {metrics.map((m) => (
                    <tr key={m.key} data-metric={m.key}>
                      <th scope="row" class="c-metric">
                        {m.label}
                      </th>
                      {c.benchmarks.map((b, i) => {
                        const v = pt.values[m.key]?.[i] ?? null;
                        const pct = pt.change_percent[m.key]?.[i] ?? null;
                        const verdict = i === 0 || differ.length > 0 ? 'same' : changeVerdict(m, pct);
                        const text = fmtFig(v, m.digits);
                        return (
                          <td key={b.id} class={`num${text === NA ? ' na' : ''} change-${verdict}`}>
                            {text}
                            <span class="chg">{fmtChange(pct, i === 0)}</span>
                          </td>
                        );
                      })}
                    </tr>
                  ))}
                </tbody>
              ))}
            </table>
          </div>
        </section>
      )}
    </div>
  );
}
