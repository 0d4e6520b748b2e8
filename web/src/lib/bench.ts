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
  idle_power_w?: Num;
  energy_above_idle_j?: Num;
  /** The idle measurement drew more than the point: energy above idle not given. */
  idle_power_unreliable?: boolean | null;
  output_tokens_per_joule: Num;
  joules_per_request: Num;
  valid: boolean;
  invalid_reasons: string[];
  /** What the GPUs did over the point, as columns (t_s since the benchmark started). */
  gpu_timeline?: BenchTimeline | null;
}

export interface BenchTimeline {
  t_s: number[];
  gpus: Record<string, { utilization?: Num[]; power_draw_w?: Num[] }>;
}

/** The settings a benchmark ran with (BENCH.md's "config"). */
export interface BenchConfig {
  load?: string;
  concurrencies?: number[];
  request_rates?: (number | string)[];
  burstiness?: number;
  requests?: Num;
  duration_s?: Num;
  warmup?: Num;
  input_tokens?: Num;
  output_tokens?: Num;
  prompts?: string | null;
  slo?: Record<string, number> | null;
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
  config?: BenchConfig | null;
  idle_power_w?: Num;
  container?: { image?: string | null } | null;
  /** A run with the machine audited (snapshot before and after): whether it changed meanwhile. */
  audit?: BenchAudit | null;
}

/** The system snapshots before and after an audited run, as their difference. */
export interface BenchAudit {
  verdict: 'unchanged' | 'changed' | 'unknown';
  changes?: { what: string; gpu: number | null; before: unknown; after: unknown }[] | null;
  /** Why there is no verdict (a snapshot could not be read). */
  reason?: string | null;
}

const auditValue = (v: unknown): string => (v === null || v === undefined ? 'none' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** Each change of an audited run in words: "clocks.max GPU 0: 1980 -> 1755". */
export function auditChanges(a: BenchAudit | null | undefined): string[] {
  if (!a || !Array.isArray(a.changes)) return [];
  return a.changes.map(
    (c) => `${c.what}${typeof c.gpu === 'number' ? ` GPU ${c.gpu}` : ''}: ${auditValue(c.before)} \u2192 ${auditValue(c.after)}`,
  );
}

/** The audit verdict as a badge: its words and how it looks; null for a run not audited. */
export function auditBadge(a: BenchAudit | null | undefined): { text: string; state: 'ok' | 'warn' | 'unknown' } | null {
  if (!a || typeof a.verdict !== 'string') return null;
  if (a.verdict === 'unchanged') return { text: 'machine unchanged', state: 'ok' };
  if (a.verdict === 'changed') {
    const n = Array.isArray(a.changes) ? a.changes.length : 0;
    return { text: `machine changed${n ? ` (${n})` : ''}`, state: 'warn' };
  }
  return { text: 'audit unknown', state: 'unknown' };
}

/** The run's settings as label and value, in the order people read them; absent ones left out. */
export function benchSettings(doc: Pick<BenchDoc, 'config' | 'url' | 'api' | 'container'>): { key: string; label: string; value: string }[] {
  const c = doc.config ?? {};
  const out: { key: string; label: string; value: string }[] = [];
  const add = (key: string, label: string, value: string | null | undefined): void => {
    if (value !== null && value !== undefined && value !== '') out.push({ key, label, value });
  };
  if (c.concurrencies) add('load', 'Concurrency', c.concurrencies.join(', '));
  if (c.request_rates)
    add(
      'load',
      'Request rate (req/s)',
      c.request_rates.join(', ') + (c.burstiness !== undefined && c.burstiness !== 1 ? `, burstiness ${c.burstiness}` : ''),
    );
  if (typeof c.requests === 'number') add('requests', 'Requests per point', String(c.requests));
  if (typeof c.duration_s === 'number') add('duration', 'Duration per point', `${c.duration_s} s`);
  if (typeof c.warmup === 'number' && c.warmup > 0) add('warmup', 'Warm-up requests', String(c.warmup));
  add('input', 'Input tokens', c.prompts ? `from ${c.prompts}` : typeof c.input_tokens === 'number' ? String(c.input_tokens) : null);
  if (typeof c.output_tokens === 'number') add('output', 'Output tokens', String(c.output_tokens));
  const slo = Object.entries(c.slo ?? {}).map(([k, v]) => `${k.replace(/_ms$/, '')} ${v} ms`);
  if (slo.length) add('slo', 'Objectives', slo.join(', '));
  add('server', 'Server', doc.url ? `${doc.url}${doc.api ? ` (${doc.api})` : ''}` : null);
  add('image', 'Image', doc.container?.image ?? null);
  return out;
}

/**
 * One metric of the GPUs over the whole run, as chart columns: [x in epoch seconds, one column
 * per GPU (in `gpus` order)], the points one after another with a gap (a null row) between them
 * so that no line joins two points across the time between.
 */
export function benchTimelineColumns(
  doc: Pick<BenchDoc, 'points' | 'started'>,
  gpus: readonly number[],
  metric: 'utilization' | 'power_draw_w',
): [number[], ...Num[][]] {
  const start = doc.started ? Date.parse(doc.started) / 1000 : 0;
  const x: number[] = [];
  const cols: Num[][] = gpus.map(() => []);
  for (const p of doc.points) {
    const tl = p.gpu_timeline;
    if (!tl || tl.t_s.length === 0) continue;
    if (x.length) {
      // The gap: halfway between the previous point's last sample and this one's first.
      x.push(((x[x.length - 1] as number) + start + (tl.t_s[0] as number)) / 2);
      for (const c of cols) c.push(null);
    }
    tl.t_s.forEach((t, i) => {
      x.push(start + t);
      gpus.forEach((g, k) => {
        const v = tl.gpus[String(g)]?.[metric]?.[i];
        (cols[k] as Num[]).push(v === undefined || v === null || !Number.isFinite(v) ? null : v);
      });
    });
  }
  return [x, ...cols];
}

/** Why a point is invalid, each reason in full ("foreign_process: pid 4242 (python x.py) on GPU 0"). */
export function invalidLines(points: readonly BenchPoint[]): { load: string; reason: string }[] {
  const out: { load: string; reason: string }[] = [];
  for (const p of points) for (const r of p.invalid_reasons ?? []) out.push({ load: loadLabel(p), reason: r });
  return out;
}

/** GET /api/benchmarks/compare (history compare --format json). */
export interface BenchCompare {
  benchmarks: { id: string; label: string | null; url: string | null; model: string | null }[];
  /** The settings the benchmarks did not share (empty: alike): their changes are not better or worse. */
  settings_differ?: { setting: string; values: (string | number | null)[] }[];
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

/** The best value of one figure and the point it is from ("concurrency 8"); null value when none has it. */
export function bestAt(points: readonly BenchPointBrief[], key: keyof BenchPointBrief, lower = false): { value: Num; load: string } {
  let out: { value: Num; load: string } = { value: null, load: '' };
  for (const p of points) {
    const v = p[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    if (out.value === null || (lower ? v < out.value : v > out.value)) out = { value: v, load: p.load };
  }
  return out;
}

/** How many points are valid, for a list: "all 3", "2 of 3", "none of 2", "—" when unknown. */
export function validitySummary(points: readonly { valid: boolean | null }[]): { text: string; state: 'all' | 'some' | 'none' | 'unknown' } {
  const known = points.filter((p) => p.valid !== null);
  if (known.length === 0) return { text: '—', state: 'unknown' };
  const ok = known.filter((p) => p.valid).length;
  if (ok === known.length) return { text: known.length === 1 ? 'yes' : `all ${known.length}`, state: 'all' };
  if (ok === 0) return { text: known.length === 1 ? 'no' : `none of ${known.length}`, state: 'none' };
  return { text: `${ok} of ${known.length}`, state: 'some' };
}

/** The server of a listed benchmark, short: "gpu7:8000" from "http://gpu7:8000/v1". */
export function serverShort(url: string | null | undefined): string {
  if (!url) return NA;
  try {
    const u = new URL(url);
    return u.host + (u.pathname !== '/' ? u.pathname.replace(/\/$/, '') : '');
  } catch {
    return url;
  }
}

/** Whether a listed benchmark matches the filter words (label, id, model, server). */
export function benchMatches(b: Pick<BenchBrief, 'id' | 'label' | 'model' | 'url'>, filter: string): boolean {
  const q = filter.trim().toLowerCase();
  if (!q) return true;
  return [b.id, b.label ?? '', b.model ?? '', b.url ?? ''].some((s) => s.toLowerCase().includes(q));
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

/** What differs between compared benchmarks, for people: "requests: 500 / 100". */
export function settingsDiffer(c: Pick<BenchCompare, 'settings_differ'>): string[] {
  const names: Record<string, string> = {
    requests: 'requests per point',
    duration_s: 'duration per point (s)',
    input_tokens: 'input tokens',
    prompts: 'prompts',
    output_tokens: 'output tokens',
    api: 'API',
    server: 'server',
  };
  return (c.settings_differ ?? []).map((d) => `${names[d.setting] ?? d.setting}: ${d.values.map((v) => (v === null ? '—' : String(v))).join(' / ')}`);
}
