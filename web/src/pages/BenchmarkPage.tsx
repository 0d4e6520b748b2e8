// One benchmark: what was measured against what and with which settings, each point (a
// concurrency or a request rate) with its throughput, latency percentiles, energy and tokens per
// joule, whether the point can be trusted and why not, and the GPUs' utilization and power over
// the run; the sweep as curves (figures over the load, the latency-throughput curve, each
// point's percentile ladder, tokens per joule over the load), each chart savable as PNG or SVG;
// an audited run's verdict (did the machine change while it ran) beside each point's validity.
// Export, the HTML report and delete.

import { useState } from 'preact/hooks';

import type { PageProps } from '../app';
import type { Api } from '../lib/api';
import { Chart } from '../components/Chart';
import { PngButton } from '../components/PngButton';
import { SvgButton } from '../components/SvgButton';
import { XYChart } from '../components/XYChart';
import { RunActions } from '../components/RunActions';
import { useResource } from '../components/hooks';
import type { BenchDoc, Dist } from '../lib/bench';
import { auditBadge, auditChanges, benchSettings, benchTimelineColumns, fmtFig, invalidLines, loadLabel } from '../lib/bench';
import { saveBlob } from '../lib/download';
import { fmtClock, fmtPercent, fmtWatts, NA } from '../lib/format';
import { href } from '../lib/router';
import { percentRange, powerRange } from '../lib/scales';
import { fmtDateTime, fmtEnergy, fmtRunDuration, gpuColor, gpuSummary, runTitle } from '../lib/sessions';
import { hasDist, ladderColumns, latencyThroughput, LADDER, pct, sweepAxis, sweepColumns } from '../lib/sweep';
import type { Num } from '../lib/types';

const CHARTS = [
  { metric: 'utilization', title: 'GPU utilization', unit: '%', fmt: (v: Num) => fmtPercent(v) },
  { metric: 'power_draw_w', title: 'Power draw', unit: 'W', fmt: (v: Num) => fmtWatts(v) },
] as const;

const p = (d: Dist | null | undefined, k: 'p50' | 'p90' | 'p99', digits = 1): string => fmtFig(d ? d[k] : null, digits);

function Num_({ v, field }: { v: string; field?: string }) {
  return (
    <td class={v === NA ? 'num na' : 'num'} data-field={field}>
      {v}
    </td>
  );
}

/** The report page's address, relative to the daemon. */
export const reportPath = (id: string): string => `api/benchmarks/${encodeURIComponent(id)}/report.html`;

/**
 * "Download report": the self-contained HTML page of GET /api/benchmarks/{id}/report.html. A
 * link, so it can be copied; clicked, it is fetched with the token (a daemon with --token
 * refuses a plain link) and saved under the daemon's name for it.
 */
function ReportLink({ api, id }: { api: Api; id: string }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const download = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const f = await api.file(reportPath(id));
      saveBlob(f.blob, f.filename ?? `gpumon-${id}.html`);
    } catch (err) {
      setError(`Report failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <a
        class={busy ? 'btn busy' : 'btn'}
        data-action="report"
        href={api.url(reportPath(id))}
        download={`gpumon-${id}.html`}
        title="One HTML file with this benchmark's figures and charts, to share"
        onClick={(e) => void download(e)}
      >
        Download report
      </a>
      {error && (
        <p class="banner" role="alert">
          {error}
        </p>
      )}
    </>
  );
}

const fmtMs = (v: Num): string => (v === null ? NA : `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ms`);
const fmtTps = (v: Num): string => (v === null ? NA : `${v.toFixed(v >= 100 ? 0 : 1)} tok/s`);
const fmtTpj = (v: Num): string => (v === null ? NA : `${v.toFixed(v >= 10 ? 1 : 3)} tok/J`);

/** The sweep's curves: what changes with the load, and how latency trades for throughput. */
function SweepCharts({ doc }: { doc: BenchDoc }) {
  const pts = doc.points;
  if (pts.length === 0) return null;
  const axis = sweepAxis(pts);
  const xFmt = (x: number): string => axis.names?.get(x) ?? (Number.isInteger(x) ? String(x) : x.toFixed(2));
  const xTicks = [...new Set(axis.xs)].sort((a, b) => a - b);
  const curve = latencyThroughput(pts);
  const ladders = (['ttft_ms', 'itl_ms', 'e2e_ms'] as const).filter((m) => hasDist(pts, m));
  const LADDER_TITLE = { ttft_ms: 'TTFT', itl_ms: 'ITL', e2e_ms: 'End-to-end latency' } as const;
  return (
    <section class="card" data-field="sweep">
      <header class="card-head">
        <h2>Sweep</h2>
        <span class="note">one dot per point; hover or arrow keys read the values</span>
      </header>
      <div class="session-charts sweep-charts">
        <XYChart
          id={doc.id}
          kind="sweep-throughput"
          title={`Output tokens per second by ${axis.title.toLowerCase()}`}
          xTitle={axis.title}
          unit="tok/s"
          lines={[{ label: 'output tokens/s', color: gpuColor(0) }]}
          data={sweepColumns(pts, axis, [(p) => p.output_tokens_per_s])}
          fmt={fmtTps}
          xFmt={xFmt}
          xTicks={xTicks}
          log={axis.log}
        />
        {pts.some((p) => typeof p.output_tokens_per_joule === 'number') && (
          <XYChart
            id={doc.id}
            kind="sweep-tokens-per-joule"
            title={`Output tokens per joule by ${axis.title.toLowerCase()}`}
            xTitle={axis.title}
            unit="tok/J"
            lines={[{ label: 'output tokens/J', color: gpuColor(5) }]}
            data={sweepColumns(pts, axis, [(p) => p.output_tokens_per_joule])}
            fmt={fmtTpj}
            xFmt={xFmt}
            xTicks={xTicks}
            log={axis.log}
          />
        )}
        <XYChart
          id={doc.id}
          kind="sweep-latency"
          title={`TTFT and ITL by ${axis.title.toLowerCase()}`}
          xTitle={axis.title}
          unit="ms"
          lines={[
            { label: 'TTFT p50', color: gpuColor(1) },
            { label: 'TTFT p99', color: gpuColor(2) },
            { label: 'ITL p50', color: gpuColor(3), dash: true },
            { label: 'ITL p99', color: gpuColor(4), dash: true },
          ]}
          data={sweepColumns(pts, axis, [
            (p) => pct(p.ttft_ms, 'p50'),
            (p) => pct(p.ttft_ms, 'p99'),
            (p) => pct(p.itl_ms, 'p50'),
            (p) => pct(p.itl_ms, 'p99'),
          ])}
          fmt={fmtMs}
          xFmt={xFmt}
          xTicks={xTicks}
          log={axis.log}
        />
        {curve.data[0].length > 0 && (
          <XYChart
            id={doc.id}
            kind="latency-throughput"
            title="Throughput against TTFT p99"
            xTitle="TTFT p99 (ms)"
            unit="tok/s"
            lines={[{ label: 'output tokens/s', color: gpuColor(0) }]}
            data={curve.data}
            fmt={fmtTps}
            xFmt={(x) => (Number.isInteger(x) ? String(x) : x.toFixed(1))}
            xTip={(x) => {
              const i = curve.data[0].indexOf(x);
              return `TTFT p99 ${x.toFixed(1)} ms${i >= 0 ? ` (${curve.loads[i]})` : ''}`;
            }}
          />
        )}
        {ladders.map((m) => (
          <XYChart
            key={m}
            id={doc.id}
            kind={`ladder-${m}`}
            title={`${LADDER_TITLE[m]} percentiles per point`}
            xTitle="Percentile"
            unit="ms"
            lines={pts.map((p, i) => ({ label: loadLabel(p), color: gpuColor(i) }))}
            data={ladderColumns(pts, m)}
            fmt={fmtMs}
            xFmt={(x) => `p${x}`}
            xTicks={LADDER}
            xFromData
          />
        ))}
      </div>
    </section>
  );
}

export function BenchmarkPage({ app, params }: PageProps) {
  const { api } = app;
  const id = params.id ?? '';
  const res = useResource(() => api.json<BenchDoc>(`api/benchmarks/${encodeURIComponent(id)}`), [id]);
  const doc = res.data;
  if (res.error && !doc)
    return (
      <section class="card" data-state={res.status === 404 ? 'not-found' : 'error'}>
        <h2>{res.status === 404 ? `No benchmark ${id}` : `Cannot read benchmark ${id}`}</h2>
        <p class="note">
          {res.error} · <a href={href('/benchmarks')}>All benchmarks</a>
        </p>
      </section>
    );
  if (!doc) return <p class="loading">Loading benchmark {id}…</p>;
  const energy = (v: Num): string => fmtEnergy(v);
  const settings = benchSettings(doc);
  const invalid = invalidLines(doc.points);
  const gpus = (doc.gpus ?? []).map((g) => g.index).sort((a, b) => a - b);
  const charted = gpus.length > 0 && doc.points.some((pt) => (pt.gpu_timeline?.t_s.length ?? 0) > 0);
  const unreliable = doc.points.some((pt) => pt.idle_power_unreliable === true);
  const audit = auditBadge(doc.audit);
  const auditLines = auditChanges(doc.audit);

  return (
    <div class="page page-benchmark" data-id={doc.id}>
      <div class="toolbar">
        <a href={href('/benchmarks')} class="back">
          ← Benchmarks
        </a>
        <h2 class="page-title">
          {runTitle(doc)} {doc.label && <span class="name">{doc.id}</span>}
        </h2>
        {doc.provider === 'sim' && <span class="badge badge-sim">simulated GPUs</span>}
        {doc.interrupted && <span class="badge badge-warn">interrupted</span>}
        <div class="spacer" />
        <ReportLink api={api} id={doc.id} />
        <RunActions
          api={api}
          id={doc.id}
          what="benchmark"
          canDelete
          onDeleted={() => {
            location.hash = href('/benchmarks', { deleted: runTitle(doc) });
          }}
        />
      </div>
      <section class="summary" data-field="summary" aria-label="Summary">
        <div>
          <span class="k">Model</span>
          <span class="v">{doc.model ?? NA}</span>
        </div>
        <div>
          <span class="k">Started</span>
          <span class="v">{fmtDateTime(doc.started)}</span>
        </div>
        <div>
          <span class="k">Duration</span>
          <span class="v">{fmtRunDuration(doc.duration_s)}</span>
        </div>
        <div>
          <span class="k">Points</span>
          <span class="v" data-field="points">
            {doc.points.length}
          </span>
        </div>
        <div class="wide">
          <span class="k">GPUs</span>
          <span class="v">{gpuSummary(doc.gpus)}</span>
        </div>
        <div>
          <span class="k">Idle power</span>
          <span class="v" data-field="idle-power">
            {fmtWatts(doc.idle_power_w ?? null)}
            {unreliable ? ' (not reliable)' : ''}
          </span>
        </div>
      </section>
      {settings.length > 0 && (
        <section class="summary settings" data-field="settings" aria-label="Settings">
          {settings.map((x) => (
            <div key={x.key} class={x.key === 'server' || x.key === 'image' ? 'wide' : undefined} data-setting={x.key}>
              <span class="k">{x.label}</span>
              {x.key === 'server' || x.key === 'image' ? <code class="v">{x.value}</code> : <span class="v">{x.value}</span>}
            </div>
          ))}
        </section>
      )}
      <section class="card">
        <header class="card-head">
          <h2>Points</h2>
          <span class="note">latencies in ms; energy of the benchmarked GPUs over each point</span>
        </header>
        <div class="table-wrap table-tall">
          <table class="points" data-field="points-table">
            <thead>
              <tr>
                <th class="c-load" rowSpan={2}>
                  Load
                </th>
                <th class="num" rowSpan={2}>
                  Req/s
                </th>
                <th class="num" rowSpan={2}>
                  Out tok/s
                </th>
                <th class="grp" colSpan={3}>
                  TTFT
                </th>
                <th class="grp" colSpan={2}>
                  TPOT
                </th>
                <th class="grp" colSpan={2}>
                  ITL
                </th>
                <th class="grp" colSpan={2}>
                  E2E
                </th>
                <th class="num" rowSpan={2}>
                  Failed
                </th>
                <th class="num" rowSpan={2}>
                  Energy
                </th>
                <th class="num" rowSpan={2} title="Output tokens per joule of GPU energy">
                  Tok/J
                </th>
                <th class="num" rowSpan={2}>
                  J/req
                </th>
                <th rowSpan={2}>Valid</th>
              </tr>
              <tr>
                <th class="num">p50</th>
                <th class="num">p90</th>
                <th class="num">p99</th>
                <th class="num">p50</th>
                <th class="num">p99</th>
                <th class="num">p50</th>
                <th class="num">p99</th>
                <th class="num">p50</th>
                <th class="num">p99</th>
              </tr>
            </thead>
            <tbody>
              {doc.points.map((pt, i) => (
                <tr key={i} data-load={loadLabel(pt)}>
                  <td class="c-load">{loadLabel(pt)}</td>
                  <Num_ v={fmtFig(pt.requests_per_s, 2)} field="rps" />
                  <Num_ v={fmtFig(pt.output_tokens_per_s, 1)} field="tps" />
                  <Num_ v={p(pt.ttft_ms, 'p50')} field="ttft-p50" />
                  <Num_ v={p(pt.ttft_ms, 'p90')} field="ttft-p90" />
                  <Num_ v={p(pt.ttft_ms, 'p99')} field="ttft-p99" />
                  <Num_ v={p(pt.tpot_ms, 'p50', 2)} />
                  <Num_ v={p(pt.tpot_ms, 'p99', 2)} />
                  <Num_ v={p(pt.itl_ms, 'p50', 2)} />
                  <Num_ v={p(pt.itl_ms, 'p99', 2)} />
                  <Num_ v={p(pt.e2e_ms, 'p50')} />
                  <Num_ v={p(pt.e2e_ms, 'p99')} />
                  <Num_ v={String(pt.failed)} />
                  <Num_ v={energy(pt.energy_j)} field="energy" />
                  <Num_ v={fmtFig(pt.output_tokens_per_joule, 3)} field="tok-per-j" />
                  <Num_ v={fmtFig(pt.joules_per_request, 1)} />
                  <td class={pt.valid ? 'status-ok' : 'status-bad'} title={pt.invalid_reasons.join('\n')} data-field="valid">
                    {pt.valid ? 'yes' : `no: ${pt.invalid_reasons.map((r) => r.split(':')[0]).join(', ')}`}
                    {audit && (
                      <span
                        class={`badge badge-audit badge-${audit.state}`}
                        data-field="audit"
                        data-verdict={doc.audit?.verdict}
                        title={auditLines.join('\n') || doc.audit?.reason || undefined}
                      >
                        {audit.text}
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      {invalid.length > 0 && (
        <section class="card" data-field="invalid-reasons">
          <header class="card-head">
            <h2>Why points are not valid</h2>
          </header>
          <ul class="reasons">
            {invalid.map((r, i) => (
              <li key={i} data-load={r.load}>
                <b>{r.load}</b>: <code>{r.reason}</code>
              </li>
            ))}
          </ul>
        </section>
      )}
      {doc.audit?.verdict === 'changed' && (
        <section class="card" data-field="audit-changes">
          <header class="card-head">
            <h2>The machine changed during the run</h2>
            <span class="note">system snapshots before the first point and after the last differ</span>
          </header>
          <ul class="reasons">
            {auditLines.map((r, i) => (
              <li key={i}>
                <code>{r}</code>
              </li>
            ))}
          </ul>
        </section>
      )}
      {doc.audit?.verdict === 'unknown' && (
        <p class="banner banner-soft" data-field="audit-unknown">
          The machine was to be audited but a snapshot could not be read{doc.audit.reason ? `: ${doc.audit.reason}` : ''}.
        </p>
      )}
      {unreliable && (
        <p class="banner banner-soft" data-field="idle-unreliable">
          The GPUs drew more power during the idle measurement than under load (something else ran on them then): the energy above
          idle is not given.
        </p>
      )}
      <SweepCharts doc={doc} />
      {charted && (
        <div class="session-charts bench-charts" data-field="gpu-charts">
          {CHARTS.map((ch) => (
            <div class="chart-box" key={ch.metric}>
              <Chart
                kind={ch.metric}
                title={`${ch.title} over the run`}
                unit={ch.unit}
                lines={gpus.map((g, i) => ({ label: `GPU ${g}`, color: gpuColor(i) }))}
                data={benchTimelineColumns(doc, gpus, ch.metric)}
                range={(m) => (ch.metric === 'utilization' ? percentRange() : powerRange(null, m))}
                fmt={ch.fmt}
              />
              <SvgButton
                id={doc.id}
                kind={ch.metric}
                chart={() => ({
                  title: `${ch.title} over the run`,
                  xTitle: 'Time',
                  unit: ch.unit,
                  lines: gpus.map((g, i) => ({ label: `GPU ${g}`, color: gpuColor(i) })),
                  data: benchTimelineColumns(doc, gpus, ch.metric),
                  xFmt: (x) => fmtClock(x * 1000),
                  xFromData: true,
                  breakAtNull: true,
                  dots: false,
                })}
              />
              <PngButton id={doc.id} kind={ch.metric} />
            </div>
          ))}
        </div>
      )}
      <p class="note">
        The same figures as <code>gpumon history show {doc.id}</code>; docs/BENCH.md says how each is measured.
      </p>
    </div>
  );
}
