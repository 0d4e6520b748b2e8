// A uPlot chart of one quantity over time with any number of lines (one per GPU, or a value and
// its limit): the GPU page and a recorded run's timeline use it. The frame renders once; data
// changes go through setData. Axes start at 0 (see lib/scales.ts), every tick carries its unit,
// and hovering or the arrow keys read exact values. Charts of one group (lib/chartsync.ts) share
// a crosshair and a zoom (drag to zoom, double-click for the whole window); runs given as marks
// are drawn as bands under the lines. Axes are sized from their measured labels, so none is cut.

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

import type { ChartGroup } from '../lib/chartsync';
import { fmtClock } from '../lib/format';
import type { RunMark } from '../lib/marks';
import { axisStyle, bindCursorKeys, labelWidth, lineSeries, maxOfLines, mountPlot, unitTicks } from '../lib/plot';
import type { Line, PlotOptions, PlotSpec } from '../lib/plot';
import type { Range } from '../lib/scales';
import type { ChartTheme } from '../lib/theme';
import { showTip as showChartTip } from '../lib/tooltip';
import type { Num } from '../lib/types';


export interface ChartProps {
  title: string;
  /** The unit on the axis ticks ("%", "°C", "W", "MHz", "MB/s"...). */
  unit: string;
  lines: readonly Line[];
  /** [x in epoch seconds, one column per line]. */
  data: readonly (readonly Num[])[];
  /** Bumped when the arrays behind `data` changed in place (live buffers). */
  version?: number;
  /** The y axis for the largest value drawn (null when none). */
  range: (dataMax: number | null) => Range;
  /** The time span shown, in epoch seconds; default: the data's own. */
  xRange?: () => Range | null;
  fmt: (v: Num) => string;
  /** Ticks for the y axis; default uPlot's. */
  ySplits?: (max: number) => number[];
  /** Tick labels for the y axis; default: the number with the unit. */
  yLabel?: (v: number) => string;
  /** data-kind, for tests and inspection. */
  kind: string;
  /** Show dates on the time axis (runs longer than a day). */
  dates?: boolean;
  /** Charts sharing a crosshair and a zoom. */
  group?: ChartGroup;
  /** Runs to mark as bands on the time axis. */
  marks?: readonly RunMark[];
}

const MARK_FILL: Record<RunMark['kind'], string> = {
  session: 'rgba(29, 111, 216, 0.10)',
  benchmark: 'rgba(211, 84, 0, 0.12)',
};
const MARK_EDGE: Record<RunMark['kind'], string> = {
  session: 'rgba(29, 111, 216, 0.55)',
  benchmark: 'rgba(211, 84, 0, 0.6)',
};

/** The title and each line's swatch and name above a chart (the PNG export draws them too). */
export function ChartCaption({ title, lines }: { title: string; lines: readonly Line[] }) {
  return (
    <figcaption>
      <span class="ctitle">{title}</span>
      {lines.map((l) => (
        <span key={l.label} class="lg">
          <span class="sw" style={{ background: l.color }} />
          {l.label}
        </span>
      ))}
    </figcaption>
  );
}

export function Chart(props: ChartProps) {
  const figRef = useRef<HTMLElement>(null);
  const plotRef = useRef<HTMLDivElement>(null);
  const tipRef = useRef<HTMLDivElement>(null);
  const plotObj = useRef<uPlot | null>(null);
  const propsRef = useRef(props);
  propsRef.current = props;
  const linesKey = props.lines.map((l) => `${l.label}|${l.color}|${l.step ? 1 : 0}`).join(',');

  const describe = (): void => {
    const fig = figRef.current;
    const plot = plotObj.current;
    if (!fig || !plot) return;
    const d = propsRef.current.data;
    let n = 0;
    for (const v of d[1] ?? []) if (v !== null && v !== undefined) n++;
    fig.dataset.points = String(n);
    fig.dataset.lines = String(Math.max(0, d.length - 1));
    const m = maxOfLines(d);
    fig.dataset.max = m === null ? '' : String(m);
    const y = plot.scales.y;
    fig.dataset.yMin = String(y?.min ?? '');
    fig.dataset.yMax = String(y?.max ?? '');
    const xs = plot.scales.x;
    fig.dataset.xMin = String(xs?.min ?? '');
    fig.dataset.xMax = String(xs?.max ?? '');
    fig.dataset.marks = String(visibleMarks(plot).length);
  };

  const visibleMarks = (plot: uPlot): readonly RunMark[] => {
    const lo = plot.scales.x?.min ?? -Infinity;
    const hi = plot.scales.x?.max ?? Infinity;
    return (propsRef.current.marks ?? []).filter((m) => m.end >= lo && m.start <= hi);
  };

  // The runs as bands under the lines, each with its name at the top left.
  const drawMarks = (u: uPlot): void => {
    const marks = visibleMarks(u);
    if (!marks.length) return;
    const { ctx, bbox } = u;
    ctx.save();
    ctx.beginPath();
    ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
    ctx.clip();
    const dpr = typeof devicePixelRatio === 'number' ? devicePixelRatio : 1;
    ctx.font = `${Math.round(10 * dpr)}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    // A name only where it fits its band and clears the one before: the list above the charts
    // names every run.
    let free = -Infinity;
    for (const m of marks) {
      const x0 = Math.max(bbox.left, u.valToPos(m.start, 'x', true));
      const x1 = Math.min(bbox.left + bbox.width, Math.max(u.valToPos(m.end, 'x', true), x0 + dpr));
      ctx.fillStyle = MARK_FILL[m.kind];
      ctx.fillRect(x0, bbox.top, x1 - x0, bbox.height);
      ctx.fillStyle = MARK_EDGE[m.kind];
      ctx.fillRect(x0, bbox.top, dpr, bbox.height);
      const w = ctx.measureText(m.label).width;
      if (x0 + 3 * dpr + w <= x1 && x0 >= free) {
        ctx.fillText(m.label, x0 + 3 * dpr, bbox.top + 2 * dpr);
        free = x0 + 3 * dpr + w + 6 * dpr;
      }
    }
    ctx.restore();
  };

  useEffect(() => {
    const fig = figRef.current;
    const host = plotRef.current;
    const tip = tipRef.current;
    if (!fig || !host || !tip) return;

    // The readout: each line's value under the cursor, with the date on runs longer than a day.
    const showTip = (u: uPlot): void => {
      const p = propsRef.current;
      const time = (x: number): string => (p.dates ? new Date(x * 1000).toLocaleString() : fmtClock(x * 1000));
      showChartTip(u, tip, host, p.lines.map((l) => ({ label: l.label, color: l.color, fmt: p.fmt })), time);
    };

    const make = (theme: ChartTheme): PlotSpec => {
      const p = propsRef.current;
      const group = p.group;
      const stepped = uPlot.paths.stepped?.({ align: 1 });
      // The last time label is centred on the right edge: half of it must fit in the padding.
      const rightPad = Math.ceil(labelWidth(theme.font, [p.dates ? '00/00 00:00' : '00:00:00']) / 2) + 4;
      const opts: PlotOptions = {
        legend: { show: false },
        padding: [8, rightPad, 0, 0],
        cursor: {
          y: false,
          points: { size: 6 },
          // Dragging across a chart of a group selects the span to zoom to.
          drag: { x: !!group, y: false, setScale: false },
          ...(group ? { sync: { key: group.key, setSeries: false } } : {}),
        },
        scales: {
          x: {
            time: true,
            range: (_u, min, max): Range => propsRef.current.group?.zoom ?? propsRef.current.xRange?.() ?? [min, max],
          },
          y: { auto: true, range: (_u, _min, _max): Range => propsRef.current.range(maxOfLines(propsRef.current.data)) },
        },
        series: [
          {},
          ...p.lines.map((l) => ({
            ...lineSeries(l, { points: { show: false }, spanGaps: false }),
            ...(l.step && stepped ? { paths: stepped } : {}),
          })),
        ],
        axes: [
          {
            ...axisStyle(theme),
            space: 70,
            size: 22,
            ...(propsRef.current.dates
              ? {}
              : {
                  // Seconds only where the span is short enough to need them.
                  values: (u: uPlot, splits: number[]) => {
                    const span = (u.scales.x?.max ?? 0) - (u.scales.x?.min ?? 0);
                    return splits.map((v) => (span >= 900 ? fmtClock(v * 1000).slice(0, 5) : fmtClock(v * 1000)));
                  },
                }),
          },
          {
            ...axisStyle(theme),
            // Wide enough for the longest label, measured in the axis font, and the gap.
            size: (_u: uPlot, values: string[] | null) => {
              const w = labelWidth(theme.font, values ?? []);
              const size = Math.max(40, 16 + w);
              fig.dataset.yLabelPx = String(w);
              fig.dataset.yAxisPx = String(size);
              return size;
            },
            space: 24,
            values: p.yLabel
              ? (_u: uPlot, splits: number[]) => splits.map((v) => (propsRef.current.yLabel as (v: number) => string)(v))
              : unitTicks(p.unit),
            ...(p.ySplits
              ? {
                  splits: (u: uPlot) => (propsRef.current.ySplits as (m: number) => number[])(u.scales.y?.max ?? 0),
                }
              : {}),
          },
        ],
        // The data attributes describe what was drawn: uPlot sets the scales as it draws,
        // which can come after setData returns (a hidden tab, the first layout).
        hooks: {
          setCursor: [
            (u) => {
              fig.dataset.cursorIdx = u.cursor.idx === null || u.cursor.idx === undefined ? '' : String(u.cursor.idx);
              // The readout on the chart under the pointer (or the keys) only; the others of
              // the group show the crosshair alone.
              if (p.group && !fig.matches(':hover') && !fig.contains(document.activeElement)) tip.hidden = true;
              else showTip(u);
            },
          ],
          drawAxes: [(u) => drawMarks(u)],
          draw: [() => describe()],
          setSelect: [
            (u) => {
              const sel = u.select;
              if (!group || sel.width < 4) return;
              const lo = u.posToVal(sel.left, 'x');
              const hi = u.posToVal(sel.left + sel.width, 'x');
              u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
              group.setZoom([lo, hi]);
            },
          ],
        },
      };
      return { opts, data: p.data as uPlot.AlignedData };
    };

    const mounted = mountPlot(host, make, (plot) => {
      plotObj.current = plot;
      plot.over.addEventListener('dblclick', () => propsRef.current.group?.setZoom(null));
      describe();
    });
    const offKeys = bindCursorKeys(fig, () => mounted.plot, { jumps: true });
    // A zoom of the group, from any of its charts: this one's time axis follows.
    const offZoom = propsRef.current.group?.onZoom((r) => {
      const plot = plotObj.current;
      if (!plot) return;
      const xs = plot.data[0];
      const span = r ?? propsRef.current.xRange?.() ?? (xs.length ? [xs[0] as number, xs[xs.length - 1] as number] : null);
      if (span) plot.setScale('x', { min: span[0], max: span[1] });
      fig.dataset.zoomed = r ? 'yes' : 'no';
    });
    fig.dataset.zoomed = propsRef.current.group?.zoom ? 'yes' : 'no';
    return () => {
      offZoom?.();
      offKeys();
      mounted.destroy();
      plotObj.current = null;
    };
  }, [linesKey, props.unit, props.group]);

  // Marks that came later (the runs are fetched after the page): redraw with them.
  useEffect(() => {
    plotObj.current?.redraw(false, false);
    const plot = plotObj.current;
    if (plot) describe();
  }, [props.marks]);

  // New data (or the same arrays grown in place): one setData, no re-creation.
  useEffect(() => {
    const plot = plotObj.current;
    if (!plot) return;
    plot.setData(props.data as uPlot.AlignedData);
    describe();
  }, [props.data, props.version]);

  return (
    <figure class="chart" ref={figRef} tabIndex={0} data-kind={props.kind} aria-label={`${props.title}. Arrow keys read values.`}>
      <ChartCaption title={props.title} lines={props.lines} />
      <div class="plot" ref={plotRef}>
        <div class="tip" ref={tipRef} hidden role="status" />
      </div>
    </figure>
  );
}
