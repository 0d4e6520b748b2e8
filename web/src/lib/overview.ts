// The live page's two views: a card per GPU, or the overview, dense tiles that fit 16 GPUs on
// one 1600x1000 screen. Which one shows, and the tiles' sparklines. No DOM here.

import type { Gpu, Num } from './types';

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

/** "NVIDIA H100 80GB HBM3 (simulated)" -> its name and the "(simulated)" tag, kept apart so a
 * narrow title cuts the name, never the tag. */
export function splitSimulated(name: string | null | undefined): { base: string; simulated: boolean } {
  const n = name ?? '';
  const m = /^(.*?)\s*\(simulated\)$/i.exec(n);
  return m ? { base: m[1] as string, simulated: true } : { base: n, simulated: false };
}

export type Hot = 'warn' | 'hot' | null;

/** Degrees below the slowdown threshold from which a temperature is coloured: warn, then hot. */
export const TEMP_WARN_MARGIN_C = 10;
export const TEMP_HOT_MARGIN_C = 5;
/** Shares of the power limit from which power is coloured. */
export const POWER_WARN_SHARE = 0.9;
export const POWER_HOT_SHARE = 0.98;

/**
 * How near a GPU's temperature is to its slowdown threshold, from the GPU's own reports: the
 * threshold itself, else its T.Limit margin. Neither reported (or no temperature): null, no
 * colouring. `text` says against what, for a tooltip.
 */
export function tempHot(g: Pick<Gpu, 'temperature_c' | 'temperature_slowdown_c' | 'temperature_tlimit_c' | 'lost'>): {
  level: Hot;
  text: string | null;
} {
  const t = g.temperature_c;
  if (g.lost || t === null) return { level: null, text: null };
  let margin: number | null = null;
  let text: string | null = null;
  const slow = g.temperature_slowdown_c;
  if (slow !== null && slow !== undefined) {
    margin = slow - t;
    text = `slowdown at ${slow} °C (${margin} °C away)`;
  } else if (g.temperature_tlimit_c !== null && g.temperature_tlimit_c !== undefined) {
    margin = g.temperature_tlimit_c;
    text = `${margin} °C below the slowdown threshold`;
  }
  if (margin === null) return { level: null, text: null };
  return { level: margin <= TEMP_HOT_MARGIN_C ? 'hot' : margin <= TEMP_WARN_MARGIN_C ? 'warn' : null, text };
}

/** How near power is to the GPU's enforced limit; no limit reported: null. */
export function powerHot(g: Pick<Gpu, 'power' | 'lost'>): { level: Hot; text: string | null } {
  const { draw_w: w, limit_w: cap } = g.power;
  if (g.lost || w === null || cap === null || cap <= 0) return { level: null, text: null };
  const share = w / cap;
  return {
    level: share >= POWER_HOT_SHARE ? 'hot' : share >= POWER_WARN_SHARE ? 'warn' : null,
    text: `limit ${cap} W (${Math.round(share * 100)} % of it)`,
  };
}

/** Utilization at or below this is an idle GPU in the summary. */
export const IDLE_UTIL_PCT = 5;

export interface FleetSummary {
  gpus: number;
  /** Sum over the GPUs that report power; null when none does. */
  powerW: number | null;
  powerLimitW: number | null;
  /** Mean over the GPUs that report utilization; null when none does. */
  utilMean: number | null;
  /** GPUs reporting utilization at or below IDLE_UTIL_PCT, of those reporting it. */
  idle: number;
  utilReported: number;
  hottest: { index: number; temp: number } | null;
}

/** The summary row of many GPUs. Lost GPUs and absent readings count in nothing. */
export function fleetSummary(gpus: readonly Gpu[]): FleetSummary {
  let powerW: number | null = null;
  let powerLimitW: number | null = null;
  let utilSum = 0;
  let utilReported = 0;
  let idle = 0;
  let hottest: { index: number; temp: number } | null = null;
  for (const g of gpus) {
    if (g.lost) continue;
    if (g.power.draw_w !== null) powerW = (powerW ?? 0) + g.power.draw_w;
    if (g.power.limit_w !== null) powerLimitW = (powerLimitW ?? 0) + g.power.limit_w;
    const u = g.utilization.gpu;
    if (u !== null) {
      utilSum += u;
      utilReported++;
      if (u <= IDLE_UTIL_PCT) idle++;
    }
    const t = g.temperature_c;
    if (t !== null && (hottest === null || t > hottest.temp)) hottest = { index: g.index, temp: t };
  }
  return {
    gpus: gpus.length,
    powerW,
    powerLimitW,
    utilMean: utilReported ? utilSum / utilReported : null,
    idle,
    utilReported,
    hottest,
  };
}
