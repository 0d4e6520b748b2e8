// The readout box of a uPlot chart (hover or arrow keys): the time of the point under the
// cursor and each line's value, placed beside the cursor inside the plot. Shared by every chart:
// the live cards' (TimeChart), the GPU and run pages' (Chart) and the sweeps' (XYChart).

import type { Num } from './types';

/** One line of the chart as the box shows it. */
export interface TipLine {
  label: string;
  /** A CSS colour for the swatch. */
  color: string;
  fmt: (v: Num) => string;
}

/** The parts of a uPlot instance the box reads (a plain object in unit tests). */
export interface TipPlot {
  cursor: { idx?: number | null; left?: number };
  data: readonly ArrayLike<number | null | undefined>[];
  over: { clientWidth: number; getBoundingClientRect(): { left: number } };
}

/** The parts of the box element it writes. */
export interface TipBox {
  hidden: boolean;
  innerHTML: string;
  offsetWidth: number;
  style: { transform: string };
}

/** The box's HTML: the time, then a row per line with its swatch and formatted value. */
export function tipHtml(time: string, lines: readonly TipLine[], values: readonly Num[]): string {
  const rows = lines
    .map((l, i) => `<div><i style="background:${l.color}"></i>${l.label} <b>${l.fmt(values[i] ?? null)}</b></div>`)
    .join('');
  return `<time>${time}</time>${rows}`;
}

/**
 * The box's x in the plot's host: right of the cursor on the plot's left half, left of it on
 * the right half, so it stays inside the plot. `overLeft` is where the drawing area starts.
 */
export function tipX(cursorLeft: number, plotWidth: number, overLeft: number, boxWidth: number): number {
  const at = cursorLeft > plotWidth / 2 ? cursorLeft - boxWidth - 8 : cursorLeft + 8;
  return Math.round(overLeft + at);
}

/**
 * Shows the box for the point under u's cursor, or hides it when the cursor is off the plot.
 * `time` formats the point's x (epoch seconds).
 */
export function showTip(
  u: TipPlot,
  tip: TipBox,
  host: { getBoundingClientRect(): { left: number } },
  lines: readonly TipLine[],
  time: (x: number) => string,
): void {
  const idx = u.cursor.idx;
  const left = u.cursor.left ?? -1;
  if (idx === null || idx === undefined || left < 0) {
    tip.hidden = true;
    return;
  }
  const x = u.data[0]?.[idx];
  if (x === undefined || x === null) {
    tip.hidden = true;
    return;
  }
  const values = lines.map((_l, i) => (u.data[i + 1]?.[idx] ?? null) as Num);
  tip.innerHTML = tipHtml(time(x), lines, values);
  tip.hidden = false;
  const ox = u.over.getBoundingClientRect().left - host.getBoundingClientRect().left;
  tip.style.transform = `translate(${tipX(left, u.over.clientWidth, ox, tip.offsetWidth)}px, 4px)`;
}
