// Recorded runs (GET /api/sessions, /api/sessions/{id}): their shapes and what the Sessions pages
// make of them: the table's cells, the per-GPU statistics (mean with min-max) and the
// timeline as chart columns. No DOM here.

import { fmtDuration, fmtMiB, fmtPercent, fmtTemp, fmtWatts, NA } from './format';
import type { Num } from './types';

export interface SessionGpu {
  index: number;
  name: string | null;
  uuid?: string | null;
}

/** One row of GET /api/sessions. */
export interface SessionRow {
  id: string;
  kind: string;
  label: string | null;
  status: string;
  started_at: string;
  monitoring_duration_seconds: Num;
  sample_count: number;
  persisted: boolean;
  command?: string | null;
  gpus?: SessionGpu[];
  provider?: string | null;
  utilization_mean?: Num;
  utilization_max?: Num;
  energy_j?: Num;
}

export interface SessionList {
  sessions: SessionRow[];
  running: number;
  max_running: number;
  stored: boolean;
  store_error: string | null;
}

export interface StatBlock {
  min: number;
  max: number;
  mean: number;
  p50: Num;
  p95: Num;
  count: number;
}

export interface GpuStats {
  name: string | null;
  uuid: string | null;
  utilization: StatBlock | null;
  memory_used_mb: StatBlock | null;
  memory_usage_percent: StatBlock | null;
  temperature_c: StatBlock | null;
  power_draw_w: StatBlock | null;
  energy_j: Num;
  energy_source: string | null;
}

export interface TimelineRow {
  t: number;
  gpus: Record<string, Partial<Record<TimelineMetric, Num>>>;
}

/** The session document (`gpumon record -o`, GET /api/sessions/{id}). */
export interface SessionDoc {
  id: string;
  kind: string;
  label: string | null;
  status: string;
  command: string[] | null;
  exit_code: Num;
  signal?: Num;
  started_at: string | null;
  ended_at: string | null;
  interval_seconds: Num;
  monitoring_duration_seconds: Num;
  sample_count: number;
  timeline_truncated?: boolean;
  gpus: SessionGpu[] | null;
  gpu_stats: Record<string, GpuStats> | null;
  energy_j: Num;
  provider?: string | null;
  hostname?: string | null;
  stop_reason?: string | null;
  timeline?: TimelineRow[];
}

export type TimelineMetric =
  | 'utilization'
  | 'memory_used_mb'
  | 'memory_usage_percent'
  | 'temperature_c'
  | 'power_draw_w';

const SP = '\u00a0';

/** Energy: "850 J", "12.4 kJ", "3.21 MJ". */
export function fmtEnergy(j: Num | undefined): string {
  if (j === null || j === undefined || !Number.isFinite(j)) return NA;
  if (Math.abs(j) < 1000) return `${j.toFixed(0)}${SP}J`;
  if (Math.abs(j) < 1e6) return `${(j / 1000).toFixed(1)}${SP}kJ`;
  return `${(j / 1e6).toFixed(2)}${SP}MJ`;
}

/** "2 × NVIDIA H100 80GB HBM3", "NVIDIA H100 + NVIDIA A100"; "none" for no GPU. */
export function gpuSummary(gpus: readonly SessionGpu[] | null | undefined): string {
  if (!gpus || gpus.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const g of gpus) {
    const n = g.name ?? 'unknown GPU';
    counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  return [...counts].map(([name, n]) => (n > 1 ? `${n}${SP}×${SP}${name}` : name)).join(' + ');
}

/** A local date and time: "2026-11-26 09:11:48". */
export function fmtDateTime(iso: string | null | undefined): string {
  if (!iso) return NA;
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return NA;
  const d = new Date(t);
  const p2 = (x: number): string => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
}

/** A run's length: "42s", "5m 03s"; sub-10 s runs keep a decimal ("3.2s"). */
export function fmtRunDuration(s: Num | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return NA;
  return s < 10 ? `${s.toFixed(1)}s` : fmtDuration(s);
}

/** What a run is called: its label, else its id. */
export function runTitle(r: { id: string; label: string | null }): string {
  return r.label ? r.label : r.id;
}

/** The page of a stored run: a benchmark's own page for kind "bench", else the session page. */
export function runPath(r: { id: string; kind: string }): string {
  return r.kind === 'bench' ? `/benchmarks/${r.id}` : `/sessions/${r.id}`;
}

/** The Sessions table lists runs; benchmarks have a page of their own. */
export function isSessionKind(kind: string): boolean {
  return kind !== 'bench';
}

/** A statistics cell: the mean, and the min-max range beside it. */
export interface StatCell {
  mean: string;
  range: string;
}

export function statCell(b: StatBlock | null | undefined, fmt: (v: Num) => string): StatCell {
  if (!b) return { mean: NA, range: '' };
  return { mean: fmt(b.mean), range: `${fmt(b.min)}–${fmt(b.max)}` };
}

/** The per-GPU statistics table: one row per GPU, in index order. */
export interface StatsRow {
  index: number;
  name: string;
  utilization: StatCell;
  memory: StatCell;
  memoryPercent: StatCell;
  temperature: StatCell;
  power: StatCell;
  energy: string;
}

export function statsRows(doc: Pick<SessionDoc, 'gpu_stats'>): StatsRow[] {
  const stats = doc.gpu_stats ?? {};
  return Object.entries(stats)
    .map(([key, g]) => ({
      index: Number(key),
      name: g.name ?? NA,
      utilization: statCell(g.utilization, (v) => fmtPercent(v)),
      memory: statCell(g.memory_used_mb, (v) => fmtMiB(v)),
      memoryPercent: statCell(g.memory_usage_percent, (v) => fmtPercent(v)),
      temperature: statCell(g.temperature_c, (v) => fmtTemp(v)),
      power: statCell(g.power_draw_w, (v) => fmtWatts(v)),
      energy: fmtEnergy(g.energy_j),
    }))
    .sort((a, b) => a.index - b.index);
}

/** The GPUs a document followed, in index order (from its list, else its statistics). */
export function docGpus(doc: Pick<SessionDoc, 'gpus' | 'gpu_stats'>): number[] {
  if (doc.gpus && doc.gpus.length) return doc.gpus.map((g) => g.index).sort((a, b) => a - b);
  return Object.keys(doc.gpu_stats ?? {})
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * One metric of the timeline as chart columns: [x in epoch seconds, one column per GPU (in
 * `gpus` order)], null where a GPU had no value at a sample.
 */
export function timelineColumns(
  doc: Pick<SessionDoc, 'timeline' | 'started_at'>,
  gpus: readonly number[],
  metric: TimelineMetric,
): [number[], ...Num[][]] {
  const start = doc.started_at ? Date.parse(doc.started_at) / 1000 : 0;
  const rows = doc.timeline ?? [];
  const x = rows.map((r) => start + r.t);
  const cols = gpus.map((g) =>
    rows.map((r) => {
      const v = r.gpus[String(g)]?.[metric];
      return v === undefined || v === null || !Number.isFinite(v) ? null : v;
    }),
  );
  return [x, ...cols];
}

/** A line colour per GPU, readable on light and dark cards; GPU k takes colour k mod 8. */
export const GPU_COLORS = ['#1d6fd8', '#d35400', '#138d52', '#8b3fb8', '#c0392b', '#0e8f9a', '#b7950b', '#6d4c41'];

export function gpuColor(i: number): string {
  return GPU_COLORS[((i % GPU_COLORS.length) + GPU_COLORS.length) % GPU_COLORS.length] as string;
}
