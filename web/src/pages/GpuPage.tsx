// One GPU: what it is, its health in detail (now, and its error and violation counters over
// time), its processes, and every metric the daemon keeps over the chart window (utilization,
// memory, temperatures, power and its limit, energy, clocks, PCIe, fan, throttling), with the
// host's CPU and memory beside them. The charts share one time axis: one crosshair across all
// of them, a drag on any zooms them all (double-click or "Whole window" goes back), and the
// sessions and benchmarks that ran in the window are bands on each.

import { useEffect, useRef, useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { Chart } from '../components/Chart';
import { GpuName, healthNaNote } from '../components/GpuCard';
import type { Line } from '../lib/plot';
import { useTopics } from '../components/hooks';
import { MigTable } from '../components/MigTable';
import { ProcessTable } from '../components/ProcessTable';
import { isStale, StaleNote } from '../components/StaleNote';
import { WindowPicker } from '../components/WindowPicker';
import type { BenchList } from '../lib/bench';
import { ChartGroup } from '../lib/chartsync';
import { fmtClock, fmtKBps, fmtMHz, fmtMiB, fmtPcie, fmtPercent, fmtTemp, fmtWatts, fmtWindow, healthLine, healthUnreported, NA } from '../lib/format';
import {
  col,
  energySinceStart,
  gpuHistoryPoints,
  gpuHistoryUrls,
  gpuSampleValues,
  newGpuBuffer,
  THROTTLE_REASONS,
} from '../lib/gpuseries';
import { runMarks } from '../lib/marks';
import type { RunMark } from '../lib/marks';
import { href } from '../lib/router';
import { niceCeil, percentRange, powerRange, temperatureRange } from '../lib/scales';
import type { Range } from '../lib/scales';
import type { SeriesBuffer } from '../lib/series';
import { fmtEnergy } from '../lib/sessions';
import type { SessionList } from '../lib/sessions';
import type { Gpu, HistoryResponse, Num } from '../lib/types';

const C = {
  util: 'var(--c-util)',
  mem: 'var(--c-mem)',
  temp: 'var(--c-temp)',
  power: 'var(--c-power)',
};

/** Chart colours must be real colours for the canvas: read the CSS variables once. */
function cssColor(v: string): string {
  const m = /^var\((--[\w-]+)\)$/.exec(v);
  if (!m || typeof getComputedStyle === 'undefined') return v;
  return getComputedStyle(document.documentElement).getPropertyValue(m[1] as string).trim() || '#888';
}

const scaleCol = (c: readonly Num[], k: number): Num[] => c.map((v) => (v === null ? null : v * k));

function Row({ name, value, field }: { name: string; value: string; field?: string }) {
  return (
    <tr data-field={field}>
      <th scope="row">{name}</th>
      <td class={value === NA ? 'na' : undefined}>{value}</td>
    </tr>
  );
}

const yesNo = (b: boolean | null | undefined): string => (b === null || b === undefined ? NA : b ? 'on' : 'off');
const count = (v: Num | undefined): string => (v === null || v === undefined ? NA : String(v));

function Identity({ g }: { g: Gpu }) {
  return (
    <table class="kv">
      <tbody>
        <Row name="Name" value={g.name} />
        <Row name="UUID" value={g.uuid ?? NA} field="uuid" />
        <Row name="PCI bus" value={g.pci_bus_id ?? NA} />
        <Row name="Serial" value={g.serial ?? NA} />
        <Row name="VBIOS" value={g.vbios_version ?? NA} />
        <Row name="Compute capability" value={g.compute_capability ?? NA} />
        <Row name="Compute mode" value={g.compute_mode ?? NA} />
        <Row name="MIG mode" value={yesNo(g.mig_mode?.current)} />
        <Row name="Persistence mode" value={yesNo(g.persistence_mode)} />
        <Row name="Performance state" value={g.pstate ?? NA} />
        <Row name="PCIe link" value={`${fmtPcie(g.pcie.gen_current, g.pcie.width_current)} (max ${fmtPcie(g.pcie.gen_max, g.pcie.width_max)})`} />
        <Row name="Power limit" value={fmtWatts(g.power.limit_w)} />
        <Row name="Max clocks" value={`SM ${fmtMHz(g.clocks.max_sm_mhz)} · memory ${fmtMHz(g.clocks.max_memory_mhz)}`} />
      </tbody>
    </table>
  );
}

function Health({ g, now }: { g: Gpu; now: number }) {
  const h = g.health;
  const line = healthLine(h, now);
  const missing = line.level === 'na' ? healthUnreported(h) : [];
  return (
    <>
      <p class={`health health-${line.level}`} data-field="health" data-level={line.level}>
        {line.text}
      </p>
      {missing.length > 0 && (
        <p class="note" data-field="health-missing">
          {healthNaNote(missing)}
        </p>
      )}
      {h && (
        <table class="kv">
          <tbody>
            <Row name="Last XID" value={h.xid?.last !== null && h.xid?.last !== undefined ? `${h.xid.last}${h.xid.last_time ? ` at ${new Date(h.xid.last_time).toLocaleString()}` : ''}` : NA} />
            <Row name="XID events" value={count(h.xid?.count)} />
            <Row name="ECC mode" value={yesNo(h.ecc.mode.current)} />
            <Row name="ECC corrected (since boot / ever)" value={`${count(h.ecc.corrected_volatile)} / ${count(h.ecc.corrected_aggregate)}`} />
            <Row name="ECC uncorrected (since boot / ever)" value={`${count(h.ecc.uncorrected_volatile)} / ${count(h.ecc.uncorrected_aggregate)}`} />
            <Row name="Retired pages (single / double bit)" value={`${count(h.retired_pages.single_bit)} / ${count(h.retired_pages.double_bit)}`} />
            <Row name="Remapped rows (correctable / not)" value={`${count(h.remapped_rows.correctable)} / ${count(h.remapped_rows.uncorrectable)}`} />
            <Row name="Row remap pending / failed" value={`${yesNo(h.remapped_rows.pending)} / ${yesNo(h.remapped_rows.failure)}`} />
            <Row name="PCIe replays" value={count(h.pcie_replay_counter)} />
            <Row name="NVLink links active" value={count(h.nvlink?.links_active)} />
          </tbody>
        </table>
      )}
    </>
  );
}

export function GpuPage({ app, params }: PageProps) {
  const { store, api } = app;
  useTopics(store, 'frame', 'window', 'layout', 'link');
  const index = Number(params.index);
  const bufRef = useRef<SeriesBuffer | null>(null);
  const [version, setVersion] = useState(0);
  const [histError, setHistError] = useState<string | null>(null);
  const pollMs = store.pollMs;
  const kept = store.config?.history_seconds ?? null;
  const groupRef = useRef<ChartGroup | null>(null);
  if (!groupRef.current) groupRef.current = new ChartGroup(`gpu-page-${index}`);
  const group = groupRef.current;
  const [zoomed, setZoomed] = useState(false);
  const [runs, setRuns] = useState<{ sessions: SessionList | null; benches: BenchList | null }>({ sessions: null, benches: null });

  useEffect(() => group.onZoom((r) => setZoomed(r !== null)), [group]);

  // The runs to mark: fetched with the page and then every half minute (a run may start or end
  // meanwhile). A daemon without a database answers with an error: no marks, nothing else.
  useEffect(() => {
    let live = true;
    const load = (): void => {
      void Promise.allSettled([
        api.json<SessionList>('api/sessions?limit=200'),
        api.json<BenchList>('api/benchmarks?limit=200'),
      ]).then(([s, b]) => {
        if (!live) return;
        setRuns({ sessions: s.status === 'fulfilled' ? s.value : null, benches: b.status === 'fulfilled' ? b.value : null });
      });
    };
    load();
    const t = setInterval(load, 30_000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [index]);

  useEffect(() => {
    if (!Number.isInteger(index) || index < 0) return;
    const buf = newGpuBuffer(store.window, store.stepMs, pollMs);
    bufRef.current = buf;
    let live = true;
    const urls = gpuHistoryUrls(index, store.window, store.stepMs, kept ?? store.window);
    void Promise.allSettled(urls.map((u) => api.json<HistoryResponse>(u))).then((rs) => {
      if (!live) return;
      const ok = rs.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const bad = rs.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
      // The host's request fails alone when the daemon runs without host metrics.
      setHistError(ok.length === 0 && bad ? `history unavailable: ${String(bad.reason?.message ?? bad.reason)}` : null);
      if (ok.length) buf.merge(gpuHistoryPoints(ok, index));
      setVersion((v) => v + 1);
    });
    const off = store.onSample((s) => {
      buf.add(s.timestamp_ms, gpuSampleValues(s, index));
      setVersion((v) => v + 1);
    });
    return () => {
      live = false;
      off();
    };
  }, [index, store.window, pollMs, kept]);

  const snap = store.snapshot;
  if (!Number.isInteger(index) || index < 0) return <p class="banner">“{params.index}” is not a GPU index.</p>;
  if (!snap) return <p class="loading">Waiting for the first sample from the daemon…</p>;
  const g = snap.gpus.find((x) => x.index === index);
  if (!g)
    return (
      <section class="card" data-state="no-such-gpu">
        <h2>No GPU {index}</h2>
        <p class="note">
          The daemon reports {snap.gpus.length === 0 ? 'no GPU' : `GPUs ${snap.gpus.map((x) => x.index).join(', ')}`}.{' '}
          <a href={href('/')}>Back to all GPUs</a>
        </p>
      </section>
    );

  const buf = bufRef.current;
  const x = buf?.x ?? [];
  const c = (key: string): Num[] => buf?.cols[col(key)] ?? [];
  const end = snap.timestamp_ms / 1000;
  const xRange = (): Range => [end - store.window, end];
  const marks: RunMark[] = runMarks(runs.sessions?.sessions ?? [], runs.benches?.benchmarks ?? [], index, end - store.window, end, end);
  const lost = g.lost;
  const throttle = g.throttle_reasons?.active ?? [];
  const color = (v: string): string => cssColor(v);

  type Spec = {
    kind: string;
    title: string;
    unit: string;
    lines: Line[];
    data: Num[][];
    range: (m: number | null) => Range;
    fmt: (v: Num) => string;
    ySplits?: (m: number) => number[];
    yLabel?: (v: number) => string;
    /** The columns that say whether the GPU reports this at all (default: data). */
    raw?: Num[][];
  };
  const reasonColors = ['#c0392b', '#d35400', '#8b3fb8', '#b7950b', '#e67e22', '#6d4c41'];
  const maxClock = Math.max(g.clocks.max_sm_mhz ?? 0, g.clocks.max_memory_mhz ?? 0, g.clocks.max_graphics_mhz ?? 0);
  const memTotalGiB = g.memory.total_mib !== null ? g.memory.total_mib / 1024 : null;
  const specs: Spec[] = [
    {
      kind: 'utilization',
      title: 'Utilization',
      unit: '%',
      lines: [
        { label: 'GPU', color: color(C.util) },
        { label: 'memory controller', color: color(C.mem) },
      ],
      data: [c('utilization.gpu'), c('utilization.memory')],
      range: () => percentRange(),
      fmt: (v) => fmtPercent(v),
      ySplits: () => [0, 25, 50, 75, 100],
    },
    {
      kind: 'memory',
      title: `Memory used (of ${fmtMiB(g.memory.total_mib)})`,
      unit: 'GiB',
      lines: [{ label: 'used', color: color(C.mem) }],
      data: [scaleCol(c('memory.used'), 1 / 1024)],
      range: (m) => [0, memTotalGiB ?? niceCeil(m ?? 1)],
      fmt: (v) => fmtMiB(v === null ? null : v * 1024),
    },
    {
      kind: 'temperature',
      title: 'Temperature',
      unit: '°C',
      lines: [
        { label: 'GPU', color: color(C.temp) },
        { label: 'memory', color: '#b7950b' },
      ],
      data: [c('temperature.gpu'), c('temperature.memory')],
      range: (m) => temperatureRange(m),
      fmt: (v) => fmtTemp(v),
    },
    {
      kind: 'power',
      title: 'Power',
      unit: 'W',
      lines: [
        { label: 'draw', color: color(C.power) },
        { label: 'limit', color: '#888888', dash: true },
      ],
      data: [c('power.draw'), c('enforced.power.limit')],
      range: (m) => powerRange(g.power.limit_w, m),
      fmt: (v) => fmtWatts(v),
    },
    {
      kind: 'energy',
      title: `Energy used in the last ${fmtWindow(store.window)}`,
      unit: 'kJ',
      lines: [{ label: 'since the window start', color: color(C.power) }],
      data: [scaleCol(energySinceStart(c('energy.total')), 1 / 1000)],
      range: (m) => [0, niceCeil(Math.max(m ?? 0, 0.1))],
      fmt: (v) => fmtEnergy(v === null ? null : v * 1000),
    },
    {
      kind: 'clocks',
      title: 'Clocks',
      unit: 'MHz',
      lines: [
        { label: 'SM', color: color(C.util) },
        { label: 'memory', color: color(C.mem) },
        { label: 'graphics', color: '#0e8f9a' },
      ],
      data: [c('clocks.sm'), c('clocks.mem'), c('clocks.gr')],
      range: (m) => [0, maxClock > 0 ? Math.max(maxClock, m ?? 0) : niceCeil(m ?? 1)],
      fmt: (v) => fmtMHz(v),
    },
    {
      kind: 'pcie',
      title: 'PCIe throughput',
      unit: 'MB/s',
      lines: [
        { label: 'TX', color: color(C.util) },
        { label: 'RX', color: color(C.temp) },
      ],
      data: [scaleCol(c('pcie.tx'), 1 / 1000), scaleCol(c('pcie.rx'), 1 / 1000)],
      range: (m) => [0, niceCeil(Math.max(m ?? 0, 1))],
      fmt: (v) => fmtKBps(v === null ? null : v * 1000),
    },
    {
      kind: 'fan',
      title: 'Fan',
      unit: '%',
      lines: [{ label: 'speed', color: color(C.util) }],
      data: [c('fan.speed')],
      range: () => percentRange(),
      fmt: (v) => fmtPercent(v),
      ySplits: () => [0, 50, 100],
    },
    {
      // One row per reason: a bar while it holds the clocks down.
      kind: 'throttle',
      title: 'Throttle reasons',
      unit: '',
      lines: THROTTLE_REASONS.map((t, i) => ({ label: t.label, color: reasonColors[i] as string, step: true, width: 5 })),
      data: THROTTLE_REASONS.map((t, i) => c(`throttle.${t.name}`).map((v) => (v === 1 ? i + 1 : null))),
      raw: THROTTLE_REASONS.map((t) => c(`throttle.${t.name}`)),
      range: () => [0.4, THROTTLE_REASONS.length + 0.6],
      fmt: (v) => (v === null ? 'no' : 'active'),
      ySplits: () => THROTTLE_REASONS.map((_t, i) => i + 1),
      yLabel: (v) => THROTTLE_REASONS[Math.round(v) - 1]?.label ?? '',
    },
    {
      kind: 'host-cpu',
      title: 'Host CPU',
      unit: '%',
      lines: [{ label: 'all cores', color: color(C.util) }],
      data: [c('host.cpu.utilization')],
      range: () => percentRange(),
      fmt: (v) => fmtPercent(v),
      ySplits: () => [0, 25, 50, 75, 100],
    },
    {
      kind: 'host-memory',
      title: 'Host memory used, % of total',
      unit: '%',
      lines: [{ label: 'used', color: color(C.mem) }],
      data: [c('host.memory.percent')],
      range: () => percentRange(),
      fmt: (v) => fmtPercent(v),
      ySplits: () => [0, 25, 50, 75, 100],
    },
  ];
  const hasData = (s: Spec): boolean => (s.raw ?? s.data).some((d) => d.some((v) => v !== null));
  // Health over time: the counters the daemon keeps rings of, as steps. A counter the GPU does
  // not report is left out of its chart; a chart with none says "not reported".
  const counterRange = (m: number | null): Range => [0, niceCeil(Math.max(m ?? 0, 1))];
  const fmtCount = (v: Num): string => (v === null ? NA : String(Math.round(v)));
  const healthBase: Spec[] = [
    {
      kind: 'health-xid',
      title: 'XID errors (since gpumon started watching)',
      unit: '',
      lines: [{ label: 'XID events', color: '#c0392b', step: true }],
      data: [c('xid.count')],
      range: counterRange,
      fmt: fmtCount,
    },
    {
      kind: 'health-ecc',
      title: 'ECC errors (since the driver loaded)',
      unit: '',
      lines: [
        { label: 'corrected', color: '#b7950b', step: true },
        { label: 'uncorrected', color: '#c0392b', step: true },
      ],
      data: [c('ecc.errors.corrected.volatile.total'), c('ecc.errors.uncorrected.volatile.total')],
      range: counterRange,
      fmt: fmtCount,
    },
    {
      kind: 'health-pcie-replay',
      title: 'PCIe replays',
      unit: '',
      lines: [{ label: 'replays', color: color(C.util), step: true }],
      data: [c('pcie.replay_counter')],
      range: counterRange,
      fmt: fmtCount,
    },
    {
      kind: 'health-violation',
      title: 'Time clocks were held down (counter)',
      unit: 's',
      lines: [
        { label: 'power cap', color: color(C.power), step: true },
        { label: 'thermal', color: color(C.temp), step: true },
      ],
      data: [
        scaleCol(c('clocks_event_reasons_counters.sw_power_cap'), 1e-6),
        scaleCol(c('violation.thermal'), 1e-6),
      ],
      range: (m) => [0, niceCeil(Math.max(m ?? 0, 0.001))],
      fmt: (v) => (v === null ? NA : `${v.toPrecision(4)} s`),
    },
  ];
  const healthSpecs: Spec[] = healthBase.map((s) => {
    const keep = s.data.map((d) => d.some((v) => v !== null));
    return { ...s, lines: s.lines.filter((_l, i) => keep[i]), data: s.data.filter((_d, i) => keep[i]) };
  });
  const renderChart = (s: Spec) =>
    hasData(s) ? (
      <Chart
        key={s.kind}
        kind={s.kind}
        title={s.title}
        unit={s.unit}
        lines={s.lines}
        data={[x, ...s.data]}
        version={version}
        range={s.range}
        xRange={xRange}
        fmt={s.fmt}
        group={group}
        marks={marks}
        {...(s.ySplits ? { ySplits: s.ySplits } : {})}
        {...(s.yLabel ? { yLabel: s.yLabel } : {})}
      />
    ) : (
      <figure key={s.kind} class="chart chart-empty" data-kind={s.kind} data-points="0">
        <figcaption>
          <span class="ctitle">{s.title}</span>
        </figcaption>
        <p class="note">Not reported by this GPU{s.kind.startsWith('host') ? ' host' : ''}.</p>
      </figure>
    );
  const stale = isStale(store);

  return (
    <div class={`page page-gpu${stale ? ' is-stale' : ''}`} data-gpu-index={index} data-version={version}>
      <div class="toolbar">
        <a href={href('/')} class="back">
          ← All GPUs
        </a>
        <h2 class="page-title">
          GPU {index} <GpuName name={g.name} />
        </h2>
        {lost && <span class="badge badge-lost">lost</span>}
        <div class="spacer" />
        <WindowPicker store={store} />
      </div>
      <StaleNote store={store} />
      {histError && <p class="banner banner-soft">{histError}</p>}
      {throttle.filter((r) => r !== 'gpu_idle').length > 0 && (
        <p class="warn" data-field="throttle">
          Throttled now: {throttle.filter((r) => r !== 'gpu_idle').map((r) => r.replace(/_/g, ' ')).join(', ')}
        </p>
      )}
      {!lost && <MigTable g={g} />}
      <div class="chart-tools" data-field="chart-tools">
        <span class="hint">Drag across a chart to zoom every chart; double-click for the whole window.</span>
        {zoomed && (
          <button type="button" class="btn" data-action="unzoom" onClick={() => group.setZoom(null)}>
            Whole window
          </button>
        )}
        {marks.length > 0 && (
          <span class="runs-in-window" data-field="runs-in-window">
            In this window:{' '}
            {marks.map((m, i) => (
              <span key={m.id}>
                {i > 0 && ', '}
                <a class={`run-mark run-mark-${m.kind}`} href={href(m.path)} data-run-id={m.id} data-kind={m.kind}>
                  {m.kind} {m.label}
                </a>{' '}
                <span class="sub">
                  {fmtClock(m.start * 1000)}–{fmtClock(m.end * 1000)}
                </span>
              </span>
            ))}
          </span>
        )}
      </div>
      <div class="gpu-charts">{specs.map(renderChart)}</div>
      <div class="lower">
        <ProcessTable store={store} gpu={index} />
        <section class="card" aria-labelledby="gpu-health-title">
          <header class="card-head">
            <h2 id="gpu-health-title">Health</h2>
          </header>
          <Health g={g} now={snap.timestamp_ms} />
          <header class="card-head">
            <h2 id="gpu-health-history-title">Health over time</h2>
          </header>
          <div class="gpu-charts health-charts" data-group="health-history" aria-labelledby="gpu-health-history-title">
            {healthSpecs.map(renderChart)}
          </div>
          <header class="card-head">
            <h2>This GPU</h2>
          </header>
          <Identity g={g} />
        </section>
      </div>
    </div>
  );
}
