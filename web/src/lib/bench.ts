// Benchmarks of `gpumon bench` (GET /api/benchmarks, /api/benchmarks/{id},
// /api/benchmarks/compare): their shapes and the tables the Benchmarks pages draw. No DOM here.

import { NA } from './format';
import type { Num } from './types';

/** A point as GET /api/benchmarks lists it. */
export interface BenchPointBrief {
  load: string;
  concurrency: Num;
  request_rate: Num | string;
  requests_per_s: Num;
  output_tokens_per_s: Num;
  ttft_p50_ms: Num;
  ttft_p99_ms: Num;
  tpot_p50_ms: Num;
  e2e_p50_ms: Num;
  goodput_requests_per_s: Num;
  energy_j: Num;
  output_tokens_per_joule: Num;
  joules_per_request: Num;
  valid: boolean | null;
  failed: Num;
}

export interface BenchBrief {
  id: string;
  label: string | null;
  started_at: string;
  duration_seconds: Num;
  url: string | null;
  model: string | null;
  api: string | null;
  points: BenchPointBrief[];
}

export interface BenchList {
  benchmarks: BenchBrief[];
  stored: boolean;
  store_error: string | null;
}

/** A latency distribution of a point, in ms. */
export interface Dist {
  mean: Num;
  std?: Num;
  min: Num;
  p50: Num;
  p90: Num;
  p95?: Num;
  p99: Num;
  max: Num;
  count: number;
}

/** A point of the benchmark document (BENCH.md lists every key). */
export interface BenchPoint {
  concurrency?: number;
  request_rate?: number | string;
  requests: number;
  completed: number;
  failed: number;
  duration_s: Num;
  requests_per_s: Num;
  output_tokens_per_s: Num;
  total_tokens_per_s?: Num;
  goodput_requests_per_s?: Num;
  ttft_ms: Dist | null;
  tpot_ms: Dist | null;
  itl_ms: Dist | null;
  e2e_ms: Dist | null;
  energy_j: Num;
  energy_source?: string | null;
  output_tokens_per_joule: Num;
  joules_per_request: Num;
  valid: boolean;
  invalid_reasons: string[];
}

export interface BenchDoc {
  id: string;
  kind: string;
  label: string | null;
  url: string | null;
  model: string | null;
  api: string | null;
  started: string | null;
  ended: string | null;
  duration_s: Num;
  provider?: string | null;
  gpus?: { index: number; name: string | null }[];
  points: BenchPoint[];
  interrupted?: boolean;
}

/** GET /api/benchmarks/compare (history compare --format json). */
export interface BenchCompare {
  benchmarks: { id: string; label: string | null; url: string | null; model: string | null }[];
  points: { load: string; values: Record<string, Num[]>; change_percent: Record<string, Num[]> }[];
}

/** "concurrency 8", "rate 10/s", "rate inf": the same words as the CLI. */
export function loadLabel(p: Pick<BenchPoint, 'concurrency' | 'request_rate'>): string {
  if (typeof p.concurrency === 'number') return `concurrency ${p.concurrency}`;
  if (typeof p.request_rate === 'string') return `rate ${p.request_rate}`;
  if (typeof p.request_rate === 'number') return `rate ${p.request_rate}/s`;
  return '?';
}

/** A figure with `digits` decimals, or n/a. */
export function fmtFig(v: Num | undefined, digits = 1): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return NA;
  return v.toFixed(digits);
}

/** The best value of one figure over a benchmark's points (largest, or smallest when lower is better). */
export function best(points: readonly BenchPointBrief[], key: keyof BenchPointBrief, lower = false): Num {
  let out: number | null = null;
  for (const p of points) {
    const v = p[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    if (out === null || (lower ? v < out : v > out)) out = v;
  }
  return out;
}

/** Whether every point of a benchmark was valid (null when none says). */
export function allValid(points: readonly { valid: boolean | null }[]): boolean | null {
  if (points.length === 0 || points.some((p) => p.valid === null)) return null;
  return points.every((p) => p.valid);
}

/** The figures compared, in the CLI's order: label, unit, decimals, and which way is better. */
export interface CompareMetric {
  key: string;
  label: string;
  digits: number;
  higherIsBetter: boolean;
}

export const COMPARE_METRICS: readonly CompareMetric[] = [
  { key: 'requests_per_s', label: 'Requests/s', digits: 2, higherIsBetter: true },
  { key: 'output_tokens_per_s', label: 'Output tokens/s', digits: 1, higherIsBetter: true },
  { key: 'total_tokens_per_s', label: 'Total tokens/s', digits: 1, higherIsBetter: true },
  { key: 'goodput_requests_per_s', label: 'Goodput (req/s)', digits: 2, higherIsBetter: true },
  { key: 'ttft_ms.p50', label: 'TTFT p50 (ms)', digits: 1, higherIsBetter: false },
  { key: 'ttft_ms.p99', label: 'TTFT p99 (ms)', digits: 1, higherIsBetter: false },
  { key: 'tpot_ms.p50', label: 'TPOT p50 (ms)', digits: 2, higherIsBetter: false },
  { key: 'tpot_ms.p99', label: 'TPOT p99 (ms)', digits: 2, higherIsBetter: false },
  { key: 'itl_ms.p50', label: 'ITL p50 (ms)', digits: 2, higherIsBetter: false },
  { key: 'itl_ms.p99', label: 'ITL p99 (ms)', digits: 2, higherIsBetter: false },
  { key: 'e2e_ms.p50', label: 'E2E p50 (ms)', digits: 1, higherIsBetter: false },
  { key: 'e2e_ms.p99', label: 'E2E p99 (ms)', digits: 1, higherIsBetter: false },
  { key: 'failed', label: 'Failed requests', digits: 0, higherIsBetter: false },
  { key: 'energy_j', label: 'Energy (J)', digits: 0, higherIsBetter: false },
  { key: 'output_tokens_per_joule', label: 'Output tokens/J', digits: 3, higherIsBetter: true },
  { key: 'joules_per_request', label: 'Joules/request', digits: 1, higherIsBetter: false },
];

/** How a change reads: better, worse, or neither (0, unknown, or a figure without a direction). */
export function changeVerdict(m: CompareMetric, pct: Num | undefined): 'better' | 'worse' | 'same' {
  if (pct === null || pct === undefined || !Number.isFinite(pct) || Math.abs(pct) < 0.05) return 'same';
  return pct > 0 === m.higherIsBetter ? 'better' : 'worse';
}

/** "+6.5 %", "-0.3 %", "" for the baseline or an unknown change. */
export function fmtChange(pct: Num | undefined, baseline: boolean): string {
  if (baseline || pct === null || pct === undefined || !Number.isFinite(pct)) return '';
  return `${pct > 0 ? '+' : pct < 0 ? '\u2212' : '±'}${Math.abs(pct).toFixed(1)}\u00a0%`;
}

/** The figures a comparison holds, in COMPARE_METRICS order, that at least one benchmark has. */
export function comparedMetrics(c: BenchCompare): CompareMetric[] {
  return COMPARE_METRICS.filter((m) =>
    c.points.some((p) => (p.values[m.key] ?? []).some((v) => v !== null && v !== undefined)),
  );
}
