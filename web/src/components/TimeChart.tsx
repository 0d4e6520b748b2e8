// One live uPlot chart of a GPU's series buffer. Preact renders the frame once; after that the
// chart is fed imperatively with setData on each store flush (skipped while it is off-screen),
// so a new sample never re-renders the component tree.

import { useEffect, useRef } from 'preact/hooks';
import type uPlot from 'uplot';

import { fmtClock, fmtPercent, fmtTemp, fmtWatts, fmtWindow } from '../lib/format';
import { COL_MEM, COL_POWER, COL_TEMP, COL_UTIL } from '../lib/history';
import { axisStyle, bindCursorKeys, lineSeries, mountPlot, unitTicks } from '../lib/plot';
import type { PlotOptions } from '../lib/plot';
import { percentRange, powerRange, temperatureRange } from '../lib/scales';
import type { Range } from '../lib/scales';
import type { Store } from '../lib/store';
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

/** The live axes keep one decimal at any size (half a power limit such as 131.3 W). */
const oneDecimal = (v: number): string => (Number.isInteger(v) ? String(v) : v.toFixed(1));

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

    // The colours of the last build (set before its plot exists, so before any readout).
    let theme!: ChartTheme;
    const showTip = (u: uPlot): void =>
      showChartTip(u, tip, host, spec.series.map((s) => ({ label: s.label, color: theme[s.color], fmt: s.fmt })), (x) => fmtClock(x * 1000));

    const options = (): PlotOptions => ({
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
          ...lineSeries({ label: s.label, color: theme[s.color] }, { points: { show: false }, spanGaps: false }),
          scale: s.scale,
          value: (_u: uPlot, v: number | null) => s.fmt(v),
        })),
      ],
      axes: [
        {
          ...axisStyle(theme),
          space: 64,
          size: 22,
          // One line of local clock time; seconds only where the window is short enough to need them.
          values: (_u: uPlot, splits: number[]) =>
            splits.map((v) => (store.window >= 900 ? fmtClock(v * 1000).slice(0, 5) : fmtClock(v * 1000))),
        },
        {
          ...axisStyle(theme),
          scale: spec.series[0].scale,
          size: 48,
          space: 24,
          values: unitTicks(spec.series[0].scale, oneDecimal),
          ...(spec.series[0].scale === '%' ? { splits: () => [0, 25, 50, 75, 100] } : {}),
        },
        ...(spec.series[1].scale !== spec.series[0].scale
          ? [
              {
                ...axisStyle(theme),
                scale: spec.series[1].scale,
                side: 1 as const,
                grid: { show: false },
                size: 52,
                space: 24,
                values: unitTicks(spec.series[1].scale, oneDecimal),
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

    const mounted = mountPlot(
      host,
      (th) => {
        theme = th;
        return { opts: options(), data: data() };
      },
      (built) => {
        plot = built;
        pending = false;
        describe();
      },
    );
    const offFrame = store.subscribe('frame', update);
    const offSeries = store.subscribe('series', update);
    const offWindow = store.subscribe('window', update);
    const io = new IntersectionObserver((entries) => {
      visible = entries.some((e) => e.isIntersecting);
      if (visible && pending) update();
    });
    io.observe(fig);
    // Keyboard: arrows walk the samples, Home/End jump, Escape or leaving hides the readout.
    const offKeys = bindCursorKeys(fig, () => plot, { jumps: true, blurClears: true });

    return () => {
      offFrame();
      offSeries();
      offWindow();
      io.disconnect();
      offKeys();
      mounted.destroy();
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
