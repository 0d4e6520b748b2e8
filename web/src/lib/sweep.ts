// A benchmark's sweep as chart columns: each figure over the load (concurrency or request rate),
// the latency-throughput curve (output tokens/s against TTFT p99) and each point's percentile
// ladder (p50, p90, p95, p99). No DOM here; components/XYChart.tsx draws them.

import type { BenchPoint, Dist } from './bench';
import { loadLabel } from './bench';
import type { Num } from './types';

export interface SweepAxis {
  /** What the x axis is. */
  kind: 'concurrency' | 'request_rate' | 'point';
  title: string;
  /** The x of each point, in the points' order. */
  xs: number[];
  /** Tick labels by x when x is not the load itself (a rate of "inf"); null otherwise. */
  names: Map<number, string> | null;
  /** A logarithmic axis: loads that grow by factors (1, 8, 64) spread evenly. */
  log: boolean;
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The x axis of a sweep: the concurrency, the request rate, or the point's rank when a rate is "inf". */
export function sweepAxis(points: readonly Pick<BenchPoint, 'concurrency' | 'request_rate'>[]): SweepAxis {
  const logFor = (xs: number[]): boolean => {
    const lo = Math.min(...xs);
    const hi = Math.max(...xs);
    return xs.length > 2 && lo > 0 && hi / lo >= 8;
  };
  if (points.length > 0 && points.every((p) => finite(p.concurrency))) {
    const xs = points.map((p) => p.concurrency as number);
    return { kind: 'concurrency', title: 'Concurrency', xs, names: null, log: logFor(xs) };
  }
  if (points.length > 0 && points.every((p) => finite(p.request_rate))) {
    const xs = points.map((p) => p.request_rate as number);
    return { kind: 'request_rate', title: 'Request rate (req/s)', xs, names: null, log: logFor(xs) };
  }
  const names = new Map<number, string>();
  const xs = points.map((p, i) => {
    names.set(i + 1, loadLabel(p));
    return i + 1;
  });
  return { kind: 'point', title: 'Load', xs, names, log: false };
}

/**
 * Columns over the load: [x, f(point) for each f], the points ordered by x (uPlot wants x
 * ascending); points with the same x keep their order.
 */
export function sweepColumns(points: readonly BenchPoint[], axis: SweepAxis, fs: readonly ((p: BenchPoint) => Num)[]): Num[][] {
  const order = points.map((_p, i) => i).sort((a, b) => (axis.xs[a] as number) - (axis.xs[b] as number) || a - b);
  return [order.map((i) => axis.xs[i] as number), ...fs.map((f) => order.map((i) => f(points[i] as BenchPoint)))];
}

/** A percentile of a distribution, null when absent. */
export function pct(d: Dist | null | undefined, k: 'p50' | 'p90' | 'p95' | 'p99' | 'mean'): Num {
  const v = d ? d[k] : null;
  return finite(v) ? v : null;
}

export interface Curve {
  /** [TTFT p99 in ms, output tokens/s], by TTFT p99 ascending. */
  data: [number[], Num[]];
  /** The load of each drawn point, in the same order. */
  loads: string[];
}

/**
 * The latency-throughput curve: output tokens per second against TTFT p99, one point per load;
 * a point without both figures is left out.
 */
export function latencyThroughput(points: readonly BenchPoint[]): Curve {
  const rows = points
    .map((p) => ({ x: pct(p.ttft_ms, 'p99'), y: finite(p.output_tokens_per_s) ? p.output_tokens_per_s : null, load: loadLabel(p) }))
    .filter((r): r is { x: number; y: number; load: string } => r.x !== null && r.y !== null)
    .sort((a, b) => a.x - b.x);
  return { data: [rows.map((r) => r.x), rows.map((r) => r.y)], loads: rows.map((r) => r.load) };
}

/** The percentiles a ladder shows, as its x. */
export const LADDER = [50, 90, 95, 99] as const;

/**
 * A percentile ladder: x = 50, 90, 95, 99; a column per point with its distribution's
 * percentiles (null where the point has none, e.g. p95 of an imported run).
 */
export function ladderColumns(points: readonly BenchPoint[], metric: 'ttft_ms' | 'itl_ms' | 'tpot_ms' | 'e2e_ms'): Num[][] {
  const keys = ['p50', 'p90', 'p95', 'p99'] as const;
  return [[...LADDER], ...points.map((p) => keys.map((k) => pct(p[metric], k)))];
}

/** Whether any point has the distribution at all (a ladder of nothing is not drawn). */
export function hasDist(points: readonly BenchPoint[], metric: 'ttft_ms' | 'itl_ms' | 'tpot_ms' | 'e2e_ms'): boolean {
  return points.some((p) => pct(p[metric], 'p50') !== null);
}

export interface CompareSweep {
  axis: SweepAxis;
  /** [x ascending (the loads of every run), one column per run: its figure at that load or null]. */
  data: Num[][];
}

/**
 * Compared runs' sweeps on one axis: the loads of all of them (concurrency, request rate, or the
 * load's words when a rate is "inf" or the runs load differently), each run's figure at each
 * load, null where the run has no such point.
 */
export function compareSweep(runs: readonly (readonly BenchPoint[])[], f: (p: BenchPoint) => Num): CompareSweep {
  const all = runs.flat();
  const base = sweepAxis(all);
  let xOf: (p: BenchPoint) => number;
  let names: Map<number, string> | null = null;
  if (base.kind === 'point') {
    const labels = [...new Set(all.map((p) => loadLabel(p)))];
    names = new Map(labels.map((l, i) => [i + 1, l]));
    xOf = (p) => labels.indexOf(loadLabel(p)) + 1;
  } else if (base.kind === 'concurrency') {
    xOf = (p) => p.concurrency as number;
  } else {
    xOf = (p) => p.request_rate as number;
  }
  const xs = [...new Set(all.map(xOf))].sort((a, b) => a - b);
  const data: Num[][] = [
    xs,
    ...runs.map((r) =>
      xs.map((x) => {
        const p = r.find((q) => xOf(q) === x);
        if (!p) return null;
        const v = f(p);
        return finite(v) ? v : null;
      }),
    ),
  ];
  return { axis: { ...base, xs, names, log: base.kind === 'point' ? false : base.log }, data };
}
