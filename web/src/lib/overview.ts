// The live page's two views: a card per GPU, or the overview, dense tiles that fit 16 GPUs on
// one 1600x1000 screen. Which one shows, and the tiles' sparklines. No DOM here.

import type { Num } from './types';

export type View = 'cards' | 'overview';

/** More GPUs than this: the overview unless the person chose otherwise. */
export const OVERVIEW_ABOVE = 8;

export const VIEW_KEY = 'gpumon.view';

/** The view for `gpuCount` GPUs: the person's choice, else cards up to 8 GPUs, overview above. */
export function chooseView(chosen: string | null | undefined, gpuCount: number): View {
  if (chosen === 'cards' || chosen === 'overview') return chosen;
  return gpuCount > OVERVIEW_ABOVE ? 'overview' : 'cards';
}

/**
 * An SVG polyline's points for values over time, in a box of `w` x `h` (y down), the time axis
 * from `x0` to `x1` (seconds) and values from 0 to `top`. A null value ends a segment: the result
 * is one point list per unbroken run, so a gap stays a gap.
 */
export function sparkSegments(
  xs: readonly number[],
  ys: readonly Num[],
  x0: number,
  x1: number,
  top: number,
  w: number,
  h: number,
): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  const span = x1 - x0 > 0 ? x1 - x0 : 1;
  const t = top > 0 ? top : 1;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i] as number;
    const y = ys[i];
    if (y === null || y === undefined || !Number.isFinite(y) || x < x0) {
      if (cur.length) out.push(cur.join(' '));
      cur = [];
      continue;
    }
    const px = ((x - x0) / span) * w;
    const py = h - (Math.max(0, Math.min(t, y)) / t) * h;
    cur.push(`${px.toFixed(1)},${py.toFixed(1)}`);
  }
  if (cur.length) out.push(cur.join(' '));
  return out;
}

/** A GPU name short enough for a tile: "NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3". */
export function shortName(name: string | null | undefined): string {
  if (!name) return 'unknown GPU';
  return name.replace(/^NVIDIA\s+/i, '').replace(/\s*\(simulated\)$/i, '');
}
