// What every uPlot chart of the dashboard (Chart, TimeChart, XYChart) does the same way: the
// plot fills its host and follows its size, is rebuilt in the new colours when the system
// switches between light and dark, and is destroyed with its component; the arrow keys walk the
// cursor over the points; axes share one style and tick labels carry the unit. Each chart keeps
// only what is its own: its scales, series, hooks and data attributes.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

import { maxOf, tickNumber } from './scales';
import { onSchemeChange, readChartTheme } from './theme';
import type { ChartTheme } from './theme';
import type { Num } from './types';

/** One line of a chart. */
export interface Line {
  label: string;
  color: string;
  /** Drawn as steps (a state such as "throttled"), not slopes. */
  step?: boolean;
  dash?: boolean;
  /** Line width in CSS pixels (default 1.5). */
  width?: number;
}

/** The plot's size: its host's, but never so small that uPlot cannot lay out its axes. */
function hostSize(host: HTMLElement): { width: number; height: number } {
  return { width: Math.max(100, host.clientWidth), height: Math.max(60, host.clientHeight) };
}

/** A plot's options (its size is its host's) and its first data. */
export type PlotOptions = Omit<uPlot.Options, 'width' | 'height'>;
export interface PlotSpec {
  opts: PlotOptions;
  data: uPlot.AlignedData;
}

export interface MountedPlot {
  /** The plot drawn now (null once destroyed). */
  readonly plot: uPlot | null;
  /** Builds the plot again from `make` (new lines, new options). */
  rebuild(): void;
  destroy(): void;
}

/**
 * A uPlot in `host` from the options and data `make` returns for the theme in force; `built`
 * runs after each build (the first, and each after a colour-scheme switch or rebuild()).
 */
export function mountPlot(
  host: HTMLElement,
  make: (theme: ChartTheme) => PlotSpec,
  built?: (plot: uPlot) => void,
): MountedPlot {
  let plot: uPlot | null = null;
  const build = (): void => {
    plot?.destroy();
    const { opts, data } = make(readChartTheme());
    plot = new uPlot({ ...opts, ...hostSize(host) } as uPlot.Options, data, host);
    built?.(plot);
  };
  build();
  const ro = new ResizeObserver(() => {
    if (plot && (plot.width !== host.clientWidth || plot.height !== host.clientHeight)) plot.setSize(hostSize(host));
  });
  ro.observe(host);
  const offScheme = onSchemeChange(build);
  return {
    get plot() {
      return plot;
    },
    rebuild: build,
    destroy() {
      ro.disconnect();
      offScheme();
      plot?.destroy();
      plot = null;
    },
  };
}

/**
 * Keyboard reading of a plot in `fig`: the arrows step the cursor from point to point (from the
 * last one); with `jumps`, Home and End go to the ends and Escape (and, with `blurClears`,
 * leaving the chart) hides the cursor. Returns the remover.
 */
export function bindCursorKeys(
  fig: HTMLElement,
  plot: () => uPlot | null,
  { jumps, blurClears = false }: { jumps: boolean; blurClears?: boolean },
): () => void {
  let lastIdx: number | null = null;
  const clear = (): void => {
    lastIdx = null;
    plot()?.setCursor({ left: -10, top: -10 });
  };
  const onKey = (e: KeyboardEvent): void => {
    const p = plot();
    if (!p) return;
    const n = p.data[0].length;
    if (n === 0) return;
    let idx = lastIdx ?? n - 1;
    if (e.key === 'ArrowLeft') idx = Math.max(0, idx - 1);
    else if (e.key === 'ArrowRight') idx = Math.min(n - 1, idx + 1);
    else if (jumps && e.key === 'Home') idx = 0;
    else if (jumps && e.key === 'End') idx = n - 1;
    else if (jumps && e.key === 'Escape') {
      clear();
      return;
    } else return;
    e.preventDefault();
    lastIdx = idx;
    p.setCursor({ left: p.valToPos(p.data[0][idx] as number, 'x'), top: p.over.clientHeight / 2 });
  };
  fig.addEventListener('keydown', onKey);
  if (blurClears) fig.addEventListener('blur', clear);
  return () => {
    fig.removeEventListener('keydown', onKey);
    if (blurClears) fig.removeEventListener('blur', clear);
  };
}

/** The look every axis shares: muted text, a light grid, no tick marks. */
export function axisStyle(theme: ChartTheme): uPlot.Axis {
  return { stroke: theme.text, grid: { stroke: theme.grid, width: 1 }, ticks: { show: false }, font: theme.font };
}

/** uPlot's series for a line: its label, colour, width and dash. */
export function lineSeries(l: Line, how: { points: uPlot.Series.Points; spanGaps: boolean }): uPlot.Series {
  return {
    label: l.label,
    stroke: l.color,
    width: l.width ?? 1.5,
    points: how.points,
    spanGaps: how.spanGaps,
    ...(l.dash ? { dash: [6, 4] } : {}),
  };
}

let measureCtx: CanvasRenderingContext2D | null = null;

/** The width in CSS pixels of the widest label in the given canvas font. */
export function labelWidth(font: string, labels: readonly string[]): number {
  if (!measureCtx && typeof document !== 'undefined') measureCtx = document.createElement('canvas').getContext('2d');
  if (!measureCtx) return Math.max(0, ...labels.map((l) => l.length * 7));
  measureCtx.font = font;
  return Math.ceil(Math.max(0, ...labels.map((l) => measureCtx!.measureText(l).width)));
}

/** A y axis's width: the longest of its labels, measured in the axis font, and the gap. */
export function yAxisWidth(font: string, labels: readonly string[]): number {
  return Math.max(40, 16 + labelWidth(font, labels));
}

/** The largest finite value of a chart's lines ([x, one column per line]), or null. */
export function maxOfLines(data: readonly (readonly Num[])[]): number | null {
  return maxOf(...data.slice(1));
}

/**
 * Tick labels that carry the unit, so every axis says what it measures: "%" and "°C" stick to
 * the number, words follow a thin space. `num` writes the number (default tickNumber).
 */
export function unitTicks(unit: string, num: (v: number) => string = tickNumber): (u: uPlot, splits: number[]) => string[] {
  const sep = unit === '%' || unit === '°C' || unit === '' ? '' : '\u2009';
  return (_u, splits) => splits.map((v) => `${num(v)}${sep}${unit}`);
}
