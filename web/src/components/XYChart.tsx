// A uPlot chart of figures against a number other than time: a sweep's throughput or latency
// over the load, the latency-throughput curve, a percentile ladder. Every point is drawn as a
// dot on its line (a sweep has a few points, each a measurement); the y axis starts at 0; the
// x axis is the load (logarithmic when it grows by factors) or named ticks. Hover or the arrow
// keys read the values; "PNG" saves the chart as drawn, "SVG" as vector graphics from its series.

import { useEffect, useRef } from 'preact/hooks';
import type uPlot from 'uplot';

import { axisStyle, bindCursorKeys, lineSeries, maxOfLines, mountPlot, unitTicks, yAxisWidth } from '../lib/plot';
import type { Line, PlotOptions, PlotSpec } from '../lib/plot';
import { niceCeil } from '../lib/scales';
import type { Range } from '../lib/scales';
import type { ChartTheme } from '../lib/theme';
import { showTip } from '../lib/tooltip';
import type { Num } from '../lib/types';
import { ChartCaption } from './Chart';
import { PngButton } from './PngButton';
import { SvgButton } from './SvgButton';

export interface XYChartProps {
  title: string;
  /** data-kind, and the PNG's name. */
  kind: string;
  /** The run the chart belongs to (the PNG's name). */
  id: string;
  xTitle: string;
  /** The y unit on its ticks ("ms", "tok/s"). */
  unit: string;
  lines: readonly Line[];
  /** [x ascending, one column per line]. */
  data: readonly (readonly Num[])[];
  fmt: (v: Num) => string;
  /** The x as the readout and the ticks say it. */
  xFmt: (x: number) => string;
  /** The readout's heading for a point at x; default the x title and xFmt. */
  xTip?: (x: number) => string;
  /** Ticks only at these x (the loads, the percentiles); default uPlot's. */
  xTicks?: readonly number[];
  log?: boolean;
  /** The x axis spans the data only (a percentile ladder); default from 0. */
  xFromData?: boolean;
}

export function XYChart(props: XYChartProps) {
  const figRef = useRef<HTMLElement>(null);
  const plotRef = useRef<HTMLDivElement>(null);
  const tipRef = useRef<HTMLDivElement>(null);
  const propsRef = useRef(props);
  propsRef.current = props;
  const key = `${props.lines.map((l) => `${l.label}|${l.color}`).join(',')}|${props.log ? 1 : 0}|${props.unit}`;

  useEffect(() => {
    const fig = figRef.current;
    const host = plotRef.current;
    const tip = tipRef.current;
    if (!fig || !host || !tip) return undefined;
    const make = (theme: ChartTheme): PlotSpec => {
      const p = propsRef.current;
      const xs = (p.data[0] ?? []).filter((x): x is number => x !== null);
      const lo = xs.length ? Math.min(...xs) : 0;
      const hi = xs.length ? Math.max(...xs) : 1;
      // From 0, as every axis of the dashboard (a log axis cannot), with a margin past the last
      // dot so the frame does not cut it.
      const xRange = (): Range => {
        if (p.log) return [lo / 1.25, hi * 1.25];
        const from = p.xFromData ? lo - (hi - lo || 1) * 0.06 : Math.min(0, lo);
        return [from, hi + (hi - from || 1) * 0.06];
      };
      const opts: PlotOptions = {
        legend: { show: false },
        padding: [8, 16, 0, 0],
        cursor: { y: false, points: { size: 8 }, drag: { x: false, y: false } },
        scales: {
          x: { time: false, ...(p.log ? { distr: 3, log: 2 } : {}), range: () => xRange() },
          y: { auto: true, range: (): Range => [0, niceCeil(maxOfLines(propsRef.current.data) ?? 1)] },
        },
        series: [
          {},
          ...p.lines.map((l) => lineSeries(l, { points: { show: true, size: 6, fill: l.color }, spanGaps: true })),
        ],
        axes: [
          {
            ...axisStyle(theme),
            size: 34,
            label: p.xTitle,
            labelSize: 14,
            labelFont: theme.font,
            ...(p.xTicks ? { splits: () => [...(propsRef.current.xTicks ?? [])] } : {}),
            values: (_u: uPlot, splits: number[]) => splits.map((v) => propsRef.current.xFmt(v)),
          },
          {
            ...axisStyle(theme),
            size: (_u: uPlot, values: string[] | null) => yAxisWidth(theme.font, values ?? []),
            space: 24,
            values: unitTicks(p.unit),
          },
        ],
        hooks: {
          setCursor: [
            (u) =>
              showTip(
                u,
                tip,
                host,
                propsRef.current.lines.map((l) => ({ label: l.label, color: l.color, fmt: propsRef.current.fmt })),
                (x) => propsRef.current.xTip?.(x) ?? `${propsRef.current.xTitle} ${propsRef.current.xFmt(x)}`,
              ),
          ],
          draw: [
            (u) => {
              fig.dataset.xMin = String(u.scales.x?.min ?? '');
              fig.dataset.xMax = String(u.scales.x?.max ?? '');
              fig.dataset.yMax = String(u.scales.y?.max ?? '');
            },
          ],
        },
      };
      return { opts, data: p.data as uPlot.AlignedData };
    };
    const mounted = mountPlot(host, make);
    const offKeys = bindCursorKeys(fig, () => mounted.plot, { jumps: false });
    return () => {
      offKeys();
      mounted.destroy();
    };
  }, [key, props.data]);

  const xs = props.data[0] ?? [];
  return (
    <div class="chart-box">
      <figure
        class="chart xy-chart"
        ref={figRef}
        tabIndex={0}
        data-kind={props.kind}
        data-points={String(xs.length)}
        data-lines={String(props.lines.length)}
        data-x={xs.join(',')}
        data-log={props.log ? 'yes' : 'no'}
        aria-label={`${props.title}. Arrow keys read values.`}
      >
        <ChartCaption title={props.title} lines={props.lines} />
        <div class="plot" ref={plotRef}>
          <div class="tip" ref={tipRef} hidden role="status" />
        </div>
      </figure>
      <SvgButton
        id={props.id}
        kind={props.kind}
        chart={() => {
          const p = propsRef.current;
          return {
            title: p.title,
            xTitle: p.xTitle,
            unit: p.unit,
            lines: p.lines,
            data: p.data,
            xFmt: p.xFmt,
            ...(p.xTicks ? { xTicks: p.xTicks } : {}),
            log: p.log === true,
            xFromData: p.xFromData === true,
          };
        }}
      />
      <PngButton id={props.id} kind={props.kind} />
    </div>
  );
}
