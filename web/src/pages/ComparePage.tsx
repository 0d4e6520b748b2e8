// Two or more benchmarks side by side, point by point (matched by load), each figure with its
// change from the first one's, coloured by whether it got better or worse: the daemon's GET
// /api/benchmarks/compare, the same as `gpumon history compare`.

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import type { BenchCompare } from '../lib/bench';
import { changeVerdict, comparedMetrics, fmtChange, fmtFig, settingsDiffer } from '../lib/bench';
import { NA } from '../lib/format';
import { href } from '../lib/router';
import { runTitle } from '../lib/sessions';

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
  const metrics = c ? comparedMetrics(c) : [];
  // Runs asked to do different things differ for that reason: their changes are shown, not judged.
  const differ = c ? settingsDiffer(c) : [];

  return (
    <div class="page page-compare">
      <div class="toolbar">
        <a href={href('/benchmarks')} class="back">
          ← Benchmarks
        </a>
        <h2 class="page-title">Compare {ids.length} benchmarks</h2>
      </div>
      {res.error && <p class="banner">Cannot compare: {res.error}</p>}
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
