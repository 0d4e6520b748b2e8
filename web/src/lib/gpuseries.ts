// The one-GPU page's time series: every metric the daemon keeps history of for a GPU (clocks,
// PCIe, energy, throttling...) plus the host's CPU and memory, backfilled from GET /api/history
// and extended by each stream sample, in one bounded buffer.

import { SeriesBuffer } from './series';
import type { Point } from './series';
import type { Gpu, HistoryResponse, Num, Snapshot } from './types';

/** Reads a history row: the value of a metric at one time (null when absent). */
type Row = (metric: string) => Num;

export interface GpuColumn {
  key: string;
  /** History metrics the column is computed from. */
  metrics: readonly string[];
  /** Host metrics come without a GPU. */
  host?: boolean;
  fromHistory: (r: Row) => Num;
  fromSample: (g: Gpu, s: Snapshot) => Num;
}

/**
 * The throttle reasons charted, by their bit in NVML's mask (nvmlClocksEventReason*, the names
 * of the sample JSON): the ones that slow a GPU down. Idle (bit 0) is an idle board's normal
 * state; application and display clock settings are configuration.
 */
export const THROTTLE_REASONS = [
  { bit: 2, name: 'sw_power_cap', label: 'power cap' },
  { bit: 3, name: 'hw_slowdown', label: 'HW slowdown' },
  { bit: 4, name: 'sync_boost', label: 'sync boost' },
  { bit: 5, name: 'sw_thermal_slowdown', label: 'SW thermal' },
  { bit: 6, name: 'hw_thermal_slowdown', label: 'HW thermal' },
  { bit: 7, name: 'hw_power_brake_slowdown', label: 'power brake' },
] as const;

/** Bit `bit` of a reasons mask as 1 or 0, null when the mask is not reported. */
export function maskBit(mask: Num, bit: number): Num {
  if (mask === null || !Number.isFinite(mask)) return null;
  // Arithmetic, not bitwise operators, which would cut the 64-bit mask to 32 bits.
  return Math.floor(Math.floor(mask) / 2 ** bit) % 2;
}

function reasonFromSample(g: Gpu, name: string): Num {
  const t = g.throttle_reasons;
  if (!t) return null;
  return t.active.includes(name) ? 1 : 0;
}

const one = (m: string, from: (g: Gpu, s: Snapshot) => Num, host = false): GpuColumn => ({
  key: m,
  metrics: [m],
  host,
  fromHistory: (r) => r(m),
  fromSample: from,
});

export const GPU_COLUMNS: readonly GpuColumn[] = [
  one('utilization.gpu', (g) => g.utilization.gpu),
  one('utilization.memory', (g) => g.utilization.memory),
  one('memory.used', (g) => g.memory.used_mib),
  one('memory.total', (g) => g.memory.total_mib),
  one('temperature.gpu', (g) => g.temperature_c),
  one('temperature.memory', (g) => g.temperature_memory_c ?? null),
  one('power.draw', (g) => g.power.draw_w),
  one('enforced.power.limit', (g) => g.power.limit_w),
  one('energy.total', (g) => g.energy_j ?? null),
  one('clocks.sm', (g) => g.clocks.sm_mhz),
  one('clocks.mem', (g) => g.clocks.memory_mhz),
  one('clocks.gr', (g) => g.clocks.graphics_mhz),
  one('pcie.tx', (g) => g.pcie.tx_kbps),
  one('pcie.rx', (g) => g.pcie.rx_kbps),
  one('fan.speed', (g) => g.fan_percent),
  ...THROTTLE_REASONS.map(
    (t): GpuColumn => ({
      key: `throttle.${t.name}`,
      metrics: ['clocks_throttle_reasons.active'],
      fromHistory: (r) => maskBit(r('clocks_throttle_reasons.active'), t.bit),
      fromSample: (g) => reasonFromSample(g, t.name),
    }),
  ),
  // The health counters the daemon keeps rings of (a counter, drawn as steps).
  one('xid.count', (g) => g.health?.xid?.count ?? null),
  one('ecc.errors.corrected.volatile.total', (g) => g.health?.ecc.corrected_volatile ?? null),
  one('ecc.errors.uncorrected.volatile.total', (g) => g.health?.ecc.uncorrected_volatile ?? null),
  one('pcie.replay_counter', (g) => g.health?.pcie_replay_counter ?? null),
  one('clocks_event_reasons_counters.sw_power_cap', (g) => g.health?.violations_us?.power ?? null),
  one('violation.thermal', (g) => g.health?.violations_us?.thermal ?? null),
  one('host.cpu.utilization', (_g, s) => s.system?.cpu_percent ?? null, true),
  {
    key: 'host.memory.percent',
    metrics: ['host.memory.used', 'host.memory.total'],
    host: true,
    fromHistory: (r) => {
      const used = r('host.memory.used');
      const total = r('host.memory.total');
      return used !== null && total !== null && total > 0 ? (100 * used) / total : null;
    },
    fromSample: (_g, s) => s.system?.memory.used_percent ?? null,
  },
];

/** Column index of a key of GPU_COLUMNS. */
export function col(key: string): number {
  const i = GPU_COLUMNS.findIndex((c) => c.key === key);
  if (i < 0) throw new Error(`no column ${key}`);
  return i;
}

/**
 * The history requests for `seconds` of GPU `gpu`: one for its metrics, one for the host's (a
 * daemon without host metrics refuses those alone). Empty when the daemon keeps no history.
 */
export function gpuHistoryUrls(gpu: number, seconds: number, stepMs: number | null, keptS: number): string[] {
  if (keptS <= 0) return [];
  const s = Math.max(1, Math.min(Math.ceil(seconds), keptS));
  const step = stepMs !== null && stepMs < s * 1000 ? `&step=${stepMs / 1000}` : '';
  const metrics = (host: boolean): string =>
    [...new Set(GPU_COLUMNS.filter((c) => !!c.host === host).flatMap((c) => c.metrics))].join(',');
  return [
    `api/history?gpu=${gpu}&metric=${metrics(false)}&seconds=${s}${step}`,
    `api/history?metric=${metrics(true)}&seconds=${s}${step}`,
  ];
}

/** The points of history responses for GPU `gpu`, one value per GPU_COLUMNS column. */
export function gpuHistoryPoints(responses: readonly HistoryResponse[], gpu: number): Point[] {
  const byTime = new Map<number, Map<string, Num>>();
  for (const resp of responses)
    for (const s of resp.series) {
      if (s.gpu !== undefined && s.gpu !== gpu) continue;
      for (const [t, v] of s.points) {
        let m = byTime.get(t);
        if (!m) {
          m = new Map();
          byTime.set(t, m);
        }
        m.set(s.metric, v);
      }
    }
  const pts: Point[] = [];
  for (const [t, m] of byTime) {
    const row: Row = (metric) => m.get(metric) ?? null;
    pts.push({ t, v: GPU_COLUMNS.map((c) => c.fromHistory(row)) });
  }
  return pts.sort((a, b) => a.t - b.t);
}

/** The column values of one stream sample for GPU `gpu` (all null when the GPU is gone or lost). */
export function gpuSampleValues(s: Snapshot, gpu: number): Num[] {
  const g = s.gpus.find((x) => x.index === gpu);
  return GPU_COLUMNS.map((c) => {
    if (c.host) return g ? c.fromSample(g, s) : (c.fromSample({} as Gpu, s) ?? null);
    if (!g || g.lost) return null;
    return c.fromSample(g, s);
  });
}

/** A fresh buffer for the GPU page at a window and resolution (as the live charts size theirs). */
export function newGpuBuffer(windowS: number, stepMs: number | null, pollMs: number): SeriesBuffer {
  const res = stepMs ?? pollMs;
  return new SeriesBuffer(GPU_COLUMNS.length, stepMs, windowS * 1000, Math.max(3 * res, res + 2500));
}

/** Energy used since the first value held: the counter's rise, so the chart starts at 0. */
export function energySinceStart(counter: readonly Num[]): Num[] {
  let first: number | null = null;
  return counter.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    if (first === null) first = v;
    // A counter that stepped back (driver reload) is not a negative energy.
    return v >= first ? v - first : null;
  });
}
