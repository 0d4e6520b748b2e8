// A chart as an SVG file, built from its series rather than from the canvas uPlot draws on: the
// title, the legend, both axes with their ticks and titles, one polyline per series and a dot per
// value. Vector text and lines stay sharp at any size and can be edited. No DOM here.

import { niceCeil, tickNumber } from './scales';
import type { Num } from './types';

export interface SvgLine {
  label: string;
  color: string;
  dash?: boolean;
}

export interface SvgChart {
  title: string;
  xTitle: string;
  /** The y unit, on each tick ("ms", "tok/s"). */
  unit: string;
  lines: readonly SvgLine[];
  /** [x ascending, one column per line]; null is a value not measured (no dot, the line skips it). */
  data: readonly (readonly Num[])[];
  /** The x as tick labels say it. */
  xFmt?: (x: number) => string;
  /** Ticks only at these x; default five even ones. */
  xTicks?: readonly number[];
  /** A logarithmic x axis (loads growing by factors). */
  log?: boolean;
  /** The x axis spans the data only; default from 0. */
  xFromData?: boolean;
  /** A null breaks the line (a time series with gaps); default the line joins across it. */
  breakAtNull?: boolean;
  /** A dot on each value (a sweep's few measurements); default true. */
  dots?: boolean;
  width?: number;
  height?: number;
  /** Background, text and grid colours (default black on white). */
  colors?: { bg: string; fg: string; grid: string };
}

/** The file name for a chart: "gpumon-<id>-<kind>.svg", with nothing but [A-Za-z0-9._-]. */
export function svgName(id: string, kind: string): string {
  return `gpumon-${id}-${kind}.svg`.replace(/[^A-Za-z0-9._-]+/g, '_');
}

/** Text as XML character data or an attribute value. */
export function xmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const finite = (v: Num | undefined): v is number => typeof v === 'number' && Number.isFinite(v);
const r2 = (v: number): string => String(Math.round(v * 100) / 100);

function yTick(v: number, unit: string): string {
  const n = tickNumber(v);
  return unit === '%' ? `${n}%` : `${n} ${unit}`;
}

/** The SVG document of a chart (a string starting with "<svg"). */
export function chartSvg(c: SvgChart): string {
  const W = c.width ?? 720;
  const H = c.height ?? 400;
  const col = c.colors ?? { bg: '#ffffff', fg: '#1f2328', grid: '#d0d7de' };
  const xFmt = c.xFmt ?? ((x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(2)));
  const xs = (c.data[0] ?? []).map((x) => (finite(x) ? x : null));
  const ys = c.data.slice(1);
  const all = ys.flatMap((s) => s.filter(finite));
  const yMax = niceCeil(all.length ? Math.max(...all) : 1) || 1;
  const xv = xs.filter((x): x is number => x !== null);
  const lo = xv.length ? Math.min(...xv) : 0;
  const hi = xv.length ? Math.max(...xv) : 1;
  const log = c.log === true && lo > 0;
  let x0: number;
  let x1: number;
  if (log) {
    x0 = lo / 1.25;
    x1 = hi * 1.25;
  } else {
    x0 = c.xFromData ? lo - (hi - lo || 1) * 0.06 : Math.min(0, lo);
    x1 = hi + (hi - x0 || 1) * 0.06;
  }
  const yLabels = [0, 1, 2, 3, 4].map((i) => (yMax * i) / 4);
  const left = 16 + Math.max(...yLabels.map((v) => yTick(v, c.unit).length)) * 7;
  const top = 52;
  const right = 16;
  const bottom = 48;
  const pw = W - left - right;
  const ph = H - top - bottom;
  const px = (x: number): number =>
    left + (log ? (Math.log(x) - Math.log(x0)) / (Math.log(x1) - Math.log(x0)) : (x - x0) / (x1 - x0 || 1)) * pw;
  const py = (y: number): number => top + ph - (y / yMax) * ph;
  const xTicks = (c.xTicks ? [...c.xTicks] : [0, 1, 2, 3, 4].map((i) => x0 + ((x1 - x0) * i) / 4)).filter((x) => x >= x0 && x <= x1);

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`,
  );
  out.push(`<title>${xmlEscape(c.title)}</title>`);
  out.push(`<rect width="${W}" height="${H}" fill="${xmlEscape(col.bg)}"/>`);
  out.push(`<text x="${left}" y="20" font-weight="600" font-size="14" fill="${xmlEscape(col.fg)}">${xmlEscape(c.title)}</text>`);
  // Legend: a swatch and a label per series, in one row under the title.
  let lx = left;
  c.lines.forEach((l) => {
    out.push(
      `<g class="legend"><line x1="${r2(lx)}" y1="36" x2="${r2(lx + 14)}" y2="36" stroke="${xmlEscape(l.color)}" stroke-width="3"${
        l.dash ? ' stroke-dasharray="6 4"' : ''
      }/><text x="${r2(lx + 18)}" y="40" fill="${xmlEscape(col.fg)}">${xmlEscape(l.label)}</text></g>`,
    );
    lx += 18 + l.label.length * 7 + 14;
  });
  // Axes: the y grid at five even values from 0, the x grid at the ticks.
  out.push(`<g class="y-axis" fill="${xmlEscape(col.fg)}" text-anchor="end">`);
  for (const v of yLabels)
    out.push(
      `<line x1="${left}" y1="${r2(py(v))}" x2="${left + pw}" y2="${r2(py(v))}" stroke="${xmlEscape(col.grid)}"/><text x="${left - 6}" y="${r2(py(v) + 4)}">${xmlEscape(yTick(v, c.unit))}</text>`,
    );
  out.push('</g>');
  out.push(`<g class="x-axis" fill="${xmlEscape(col.fg)}" text-anchor="middle">`);
  for (const x of xTicks)
    out.push(
      `<line x1="${r2(px(x))}" y1="${top}" x2="${r2(px(x))}" y2="${top + ph}" stroke="${xmlEscape(col.grid)}"/><text x="${r2(px(x))}" y="${top + ph + 16}">${xmlEscape(xFmt(x))}</text>`,
    );
  out.push(`<text class="x-title" x="${r2(left + pw / 2)}" y="${H - 8}">${xmlEscape(c.xTitle)}</text>`);
  out.push('</g>');
  out.push(`<rect x="${left}" y="${top}" width="${pw}" height="${ph}" fill="none" stroke="${xmlEscape(col.grid)}"/>`);
  // Series: the values joined across gaps (as the chart on the page draws them), a dot on each.
  ys.forEach((s, i) => {
    const l = c.lines[i];
    if (!l) return;
    const segs: [number, number][][] = [[]];
    s.forEach((y, j) => {
      const x = xs[j];
      if (finite(y) && x !== null && x !== undefined && (!log || x > 0)) (segs[segs.length - 1] as [number, number][]).push([px(x), py(y)]);
      else if (c.breakAtNull && (segs[segs.length - 1] as [number, number][]).length > 0) segs.push([]);
    });
    const color = xmlEscape(l.color);
    out.push(`<g class="series" data-label="${xmlEscape(l.label)}">`);
    for (const pts of segs) {
      if (pts.length > 1)
        out.push(
          `<polyline fill="none" stroke="${color}" stroke-width="1.5"${l.dash ? ' stroke-dasharray="6 4"' : ''} points="${pts
            .map(([a, b]) => `${r2(a)},${r2(b)}`)
            .join(' ')}"/>`,
        );
      if (c.dots !== false) for (const [a, b] of pts) out.push(`<circle cx="${r2(a)}" cy="${r2(b)}" r="3" fill="${color}"/>`);
    }
    out.push('</g>');
  });
  out.push('</svg>');
  return out.join('\n');
}
