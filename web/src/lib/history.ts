// The chart windows and their link to GET /api/history: which resolution a window is drawn at,
// the requests that backfill it, and the conversion of a response into per-GPU points.

import type { Point } from './series';
import type { Gpu, HistoryResponse, Num } from './types';

/** Selectable chart windows, in seconds; the first is the default. */
export const WINDOWS = [60, 300, 900, 3600] as const;
export type WindowSeconds = (typeof WINDOWS)[number];
export const DEFAULT_WINDOW: WindowSeconds = 60;

/** Most points a chart holds per window: more than a card's pixels, few enough to stay light. */
export const MAX_CHART_POINTS = 900;

/** The daemon's history metrics behind the chart columns, in column order. */
export const HISTORY_METRICS = ['utilization.gpu', 'memory.used', 'temperature.gpu', 'power.draw'] as const;

/** Chart columns: utilization %, memory used %, temperature °C, power W. */
export const COL_UTIL = 0;
export const COL_MEM = 1;
export const COL_TEMP = 2;
export const COL_POWER = 3;
export const COLUMN_COUNT = 4;

/** Series per history request: the daemon's limit is 128 (GM_HISTORY_MAX_SERIES). */
const MAX_SERIES_PER_REQUEST = 128;

export function isWindow(n: number): n is WindowSeconds {
  return (WINDOWS as readonly number[]).includes(n);
}

/**
 * Bucket width in ms for a window at a poll interval: null (raw samples) when the window holds
 * at most MAX_CHART_POINTS samples, else a whole number of poll intervals.
 */
export function stepFor(windowS: number, pollMs: number): number | null {
  const poll = Math.max(1, pollMs);
  const spanMs = windowS * 1000;
  if (spanMs / poll <= MAX_CHART_POINTS) return null;
  return Math.ceil(spanMs / MAX_CHART_POINTS / poll) * poll;
}

/** The chart values of one sample, in column order. A lost GPU has none. */
export function gpuValues(g: Gpu): Num[] {
  if (g.lost) return [null, null, null, null];
  return [g.utilization.gpu, g.memory.used_percent, g.temperature_c, g.power.draw_w];
}

/**
 * Relative URLs of the history requests that cover `seconds` of the given GPUs at `stepMs`.
 * Empty when the daemon keeps no history. `seconds` is clamped to what the daemon keeps.
 */
export function historyUrls(
  gpuIndexes: readonly number[],
  seconds: number,
  stepMs: number | null,
  historyKeptS: number,
): string[] {
  if (historyKeptS <= 0 || gpuIndexes.length === 0) return [];
  const s = Math.max(1, Math.min(Math.ceil(seconds), historyKeptS));
  const perRequest = Math.max(1, Math.floor(MAX_SERIES_PER_REQUEST / HISTORY_METRICS.length));
  const urls: string[] = [];
  for (let i = 0; i < gpuIndexes.length; i += perRequest) {
    const gpus = gpuIndexes.slice(i, i + perRequest).join(',');
    let u = `api/history?gpu=${gpus}&metric=${HISTORY_METRICS.join(',')}&seconds=${s}`;
    if (stepMs !== null && stepMs < s * 1000) u += `&step=${stepMs / 1000}`;
    urls.push(u);
  }
  return urls;
}

/**
 * Per-GPU points from history responses. Memory arrives in MiB and becomes a percentage of the
 * GPU's total (`totalsMib`); without a known total it stays absent rather than guessed.
 */
export function historyToPoints(
  responses: readonly HistoryResponse[],
  totalsMib: ReadonlyMap<number, Num>,
): Map<number, Point[]> {
  // gpu -> time -> values
  const byGpu = new Map<number, Map<number, Num[]>>();
  for (const resp of responses) {
    for (const s of resp.series) {
      if (s.gpu === undefined) continue;
      const col = (HISTORY_METRICS as readonly string[]).indexOf(s.metric);
      if (col < 0) continue;
      let times = byGpu.get(s.gpu);
      if (!times) {
        times = new Map();
        byGpu.set(s.gpu, times);
      }
      const total = totalsMib.get(s.gpu) ?? null;
      for (const [t, raw] of s.points) {
        let row = times.get(t);
        if (!row) {
          row = [null, null, null, null];
          times.set(t, row);
        }
        let v: Num = raw;
        if (col === COL_MEM)
          v = raw !== null && total !== null && total > 0 ? Math.round((10000 * raw) / total) / 100 : null;
        row[col] = v;
      }
    }
  }
  const out = new Map<number, Point[]>();
  for (const [gpu, times] of byGpu) {
    const pts: Point[] = [];
    for (const [t, v] of times) pts.push({ t, v });
    pts.sort((a, b) => a.t - b.t);
    out.set(gpu, pts);
  }
  return out;
}
