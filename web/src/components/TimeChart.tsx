// One live uPlot chart of a GPU's series buffer. Preact renders the frame once; after that the
// chart is fed imperatively with setData on each store flush (skipped while it is off-screen),
// so a new sample never re-renders the component tree.

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

import { fmtClock, fmtPercent, fmtTemp, fmtWatts, fmtWindow } from '../lib/format';
import { COL_MEM, COL_POWER, COL_TEMP, COL_UTIL } from '../lib/history';
import { percentRange, powerRange, temperatureRange } from '../lib/scales';
import type { Range } from '../lib/scales';
import type { Store } from '../lib/store';
import { onSchemeChange, readChartTheme } from '../lib/theme';
import type { ChartTheme } from '../lib/theme';
import { showTip as showChartTip } from '../lib/tooltip';
import type { Num } from '../lib/types';

export type ChartKind = 'load' | 'thermal';

interface SeriesSpec {
  label: string;
  col: number;
  scale: string;
  color: keyof ChartTheme;
  fmt: (v: Num) => string;
}

interface ChartSpec {
  title: string;
  series: [SeriesSpec, SeriesSpec];
}

const SPECS: Record<ChartKind, ChartSpec> = {
  load: {
    title: 'Utilization and memory',
    series: [
      { label: 'Utilization', col: COL_UTIL, scale: '%', color: 'util', fmt: (v) => fmtPercent(v) },
      { label: 'Memory used', col: COL_MEM, scale: '%', color: 'mem', fmt: (v) => fmtPercent(v) },
    ],
  },
  thermal: {
    title: 'Temperature and power',
    series: [
      { label: 'Temperature', col: COL_TEMP, scale: '°C', color: 'temp', fmt: (v) => fmtTemp(v) },
      { label: 'Power', col: COL_POWER, scale: 'W', color: 'power', fmt: (v) => fmtWatts(v) },
    ],
  },
};

/** Tick labels carry the unit, so every axis says what it measures. */
function unitTicks(unit: string): (u: uPlot, splits: number[]) => string[] {
  const sep = unit === '%' || unit === '°C' ? '' : '\u2009';
  return (_u, splits) => splits.map((v) => `${Number.isInteger(v) ? v : v.toFixed(1)}${sep}${unit}`);
}

interface Props {
  store: Store;
  gpu: number;
  kind: ChartKind;
}

export function TimeChart({ store, gpu, kind }: Props) {
  const figRef = useRef<HTMLElement>(null);
  const plotRef = useRef<HTMLDivElement>(null);
  const tipRef = useRef<HTMLDivElement>(null);
  const spec = SPECS[kind];

  useEffect(() => {
    const fig = figRef.current;
    const host = plotRef.current;
    const tip = tipRef.current;
    if (!fig || !host || !tip) return;
    let plot: uPlot | null = null;
    let visible = true;
    let pending = true;
    let lastIdx: number | null = null;

    const data = (): uPlot.AlignedData => {
      const b = store.buffer(gpu);
      return [b.x, b.cols[spec.series[0].col] ?? [], b.cols[spec.series[1].col] ?? []] as uPlot.AlignedData;
    };
    const viewEnd = (): number | null => (store.snapshot ? store.snapshot.timestamp_ms / 1000 : null);
    const powerLimit = (): number | null =>
      store.snapshot?.gpus.find((g) => g.index === gpu)?.power.limit_w ?? null;

    const yRange = (scale: string) => (_u: uPlot, _min: number | null, max: number | null): Range => {
      if (scale === '%') return percentRange();
      if (scale === '°C') return temperatureRange(max);
      return powerRange(powerLimit(), max);
    };

    const showTip = (u: uPlot): void =>
      showChartTip(u, tip, host, spec.series.map((s) => ({ label: s.label, color: theme[s.color], fmt: s.fmt })), (x) => fmtClock(x * 1000));

    let theme = readChartTheme();
    const options = (width: number, height: number): uPlot.Options => ({
      width,
      height,
      legend: { show: false },
      padding: [8, 4, 0, 0],
      cursor: {
        y: false, // a horizontal hair means nothing on a chart with two scales
        sync: { key: 'gpumon-time' },
        points: { size: 6 },
        drag: { x: false, y: false, setScale: false },
      },
      scales: {
        x: {
          time: true,
          range: (_u, _min, max): Range => {
            const end = viewEnd() ?? max;
            return [end - store.window, end] as Range;
          },
        },
        [spec.series[0].scale]: { auto: true, range: yRange(spec.series[0].scale) },
        [spec.series[1].scale]: { auto: true, range: yRange(spec.series[1].scale) },
      },
      series: [
        { value: (_u, v) => (v === null ? '' : fmtClock(v * 1000)) },
        ...spec.series.map((s) => ({
          label: s.label,
          scale: s.scale,
          stroke: theme[s.color],
          width: 1.5,
          points: { show: false },
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => s.fmt(v),
        })),
      ],
      axes: [
        {
          stroke: theme.text,
          grid: { stroke: theme.grid, width: 1 },
          ticks: { show: false },
          font: theme.font,
          space: 64,
          size: 22,
          // One line of local clock time; seconds only where the window is short enough to need them.
          values: (_u: uPlot, splits: number[]) =>
            splits.map((v) => (store.window >= 900 ? fmtClock(v * 1000).slice(0, 5) : fmtClock(v * 1000))),
        },
        {
          scale: spec.series[0].scale,
          stroke: theme.text,
          grid: { stroke: theme.grid, width: 1 },
          ticks: { show: false },
          font: theme.font,
          size: 48,
          space: 24,
          values: unitTicks(spec.series[0].scale),
          ...(spec.series[0].scale === '%' ? { splits: () => [0, 25, 50, 75, 100] } : {}),
        },
        ...(spec.series[1].scale !== spec.series[0].scale
          ? [
              {
                scale: spec.series[1].scale,
                side: 1 as const,
                stroke: theme.text,
                grid: { show: false },
                ticks: { show: false },
                font: theme.font,
                size: 52,
                space: 24,
                values: unitTicks(spec.series[1].scale),
                // Power: 0, half and the full limit, so the cap is always labelled.
                splits: (u: uPlot) => {
                  const max = u.scales[spec.series[1].scale]?.max ?? 0;
                  return max > 0 ? [0, max / 2, max] : [0];
                },
              },
            ]
          : [
              {
                // An empty right axis as wide as the power axis, so both charts of a card share
                // one time scale position and the last time label is not clipped.
                scale: spec.series[0].scale,
                side: 1 as const,
                grid: { show: false },
                ticks: { show: false },
                size: 52,
                values: (_u: uPlot, splits: number[]) => splits.map(() => ''),
              },
            ]),
      ],
      hooks: {
        setCursor: [(u) => showTip(u)],
      },
    });

    const describe = (): void => {
      if (!plot) return;
      const sc = plot.scales[spec.series[0].scale];
      fig.dataset.yMin = String(sc?.min ?? '');
      fig.dataset.yMax = String(sc?.max ?? '');
      // What the first series holds, for tests and for anyone inspecting the page.
      const col = plot.data[1] ?? [];
      let n = 0;
      let max: number | null = null;
      for (const v of col)
        if (v !== null && v !== undefined) {
          n++;
          if (max === null || v > max) max = v;
        }
      fig.dataset.points = String(n);
      fig.dataset.max = max === null ? '' : String(max);
      fig.dataset.generation = String(store.seriesGeneration);
    };

    const build = (): void => {
      plot?.destroy();
      const w = Math.max(100, host.clientWidth);
      const h = Math.max(60, host.clientHeight);
      plot = new uPlot(options(w, h), data(), host);
      pending = false;
      describe();
    };

    const update = (): void => {
      if (!visible || !plot) {
        pending = true;
        return;
      }
      pending = false;
      plot.setData(data());
      describe();
      if (!tip.hidden) showTip(plot);
    };

    build();
    const offFrame = store.subscribe('frame', update);
    const offSeries = store.subscribe('series', update);
    const offWindow = store.subscribe('window', update);
    const ro = new ResizeObserver(() => {
      if (plot && (plot.width !== host.clientWidth || plot.height !== host.clientHeight))
        plot.setSize({ width: Math.max(100, host.clientWidth), height: Math.max(60, host.clientHeight) });
    });
    ro.observe(host);
    const io = new IntersectionObserver((entries) => {
      visible = entries.some((e) => e.isIntersecting);
      if (visible && pending) update();
    });
    io.observe(fig);
    const offScheme = onSchemeChange(() => {
      theme = readChartTheme();
      build();
    });

    // Keyboard: arrows walk the samples, Home/End jump, Escape hides the readout.
    const onKey = (e: KeyboardEvent): void => {
      if (!plot) return;
      const n = plot.data[0].length;
      if (n === 0) return;
      let idx = lastIdx ?? n - 1;
      if (e.key === 'ArrowLeft') idx = Math.max(0, idx - 1);
      else if (e.key === 'ArrowRight') idx = Math.min(n - 1, idx + 1);
      else if (e.key === 'Home') idx = 0;
      else if (e.key === 'End') idx = n - 1;
      else if (e.key === 'Escape') {
        lastIdx = null;
        plot.setCursor({ left: -10, top: -10 });
        return;
      } else return;
      e.preventDefault();
      lastIdx = idx;
      const x = plot.data[0][idx] as number;
      plot.setCursor({ left: plot.valToPos(x, 'x'), top: plot.over.clientHeight / 2 });
    };
    const onBlur = (): void => {
      lastIdx = null;
      plot?.setCursor({ left: -10, top: -10 });
    };
    fig.addEventListener('keydown', onKey);
    fig.addEventListener('blur', onBlur);

    return () => {
      offFrame();
      offSeries();
      offWindow();
      offScheme();
      ro.disconnect();
      io.disconnect();
      fig.removeEventListener('keydown', onKey);
      fig.removeEventListener('blur', onBlur);
      plot?.destroy();
      plot = null;
    };
  }, [store, gpu, kind]);

  const [a, b] = spec.series;
  return (
    <figure
      class={`chart chart-${kind}`}
      ref={figRef}
      tabIndex={0}
      data-kind={kind}
      aria-label={`GPU ${gpu} ${spec.title.toLowerCase()}, last ${fmtWindow(store.window)}. Arrow keys read values.`}
    >
      <figcaption>
        <span class="sw" style={{ background: `var(--c-${a.color})` }} />
        {a.label} ({a.scale})
        <span class="sw" style={{ background: `var(--c-${b.color})` }} />
        {b.label} ({b.scale})
      </figcaption>
      <div class="plot" ref={plotRef}>
        <div class="tip" ref={tipRef} hidden role="status" />
      </div>
    </figure>
  );
}
