// Unit formatting for every value the dashboard shows. A null value is "n/a" (the GPU or driver
// does not report it) and a value of a lost GPU is "lost"; neither is ever shown as 0.

import type { GpuHealth, Num } from './types';

export const NA = 'n/a';
export const LOST = 'lost';
/** No-break space: a value never wraps away from its unit. */
const SP = '\u00a0';

/** The placeholder for a value that cannot be shown, or null when v is a number to format. */
export function missing(v: Num | undefined, lost = false): string | null {
  if (lost) return LOST;
  if (v === null || v === undefined || !Number.isFinite(v)) return NA;
  return null;
}

/** Whole numbers as they are; others with `digits` decimals. */
export function fmtNumber(v: number, digits = 1): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(digits);
}

/** "42 %", "4.5 %": one decimal only below 10, where it still means something. */
export function fmtPercent(v: Num | undefined, lost = false): string {
  const m = missing(v, lost);
  if (m !== null) return m;
  const n = v as number;
  const text = Number.isInteger(n) || n >= 10 ? n.toFixed(0) : n.toFixed(1);
  return `${text}${SP}%`;
}

/** "42 °C". */
export function fmtTemp(v: Num | undefined, lost = false): string {
  const m = missing(v, lost);
  return m ?? `${(v as number).toFixed(0)}${SP}°C`;
}

/** "274 W", "7.5 W": one decimal only below 10 W. */
export function fmtWatts(v: Num | undefined, lost = false): string {
  const m = missing(v, lost);
  if (m !== null) return m;
  const n = v as number;
  return `${n < 10 && !Number.isInteger(n) ? n.toFixed(1) : n.toFixed(0)}${SP}W`;
}

/** "1635 MHz". */
export function fmtMHz(v: Num | undefined, lost = false): string {
  const m = missing(v, lost);
  return m ?? `${(v as number).toFixed(0)}${SP}MHz`;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** Binary units: "512 MiB", "35.8 GiB". Below 1 KiB the exact byte count. */
export function fmtBytes(v: Num | undefined, lost = false): string {
  const m = missing(v, lost);
  if (m !== null) return m;
  let n = v as number;
  let u = 0;
  while (Math.abs(n) >= 1024 && u < BYTE_UNITS.length - 1) {
    n /= 1024;
    u++;
  }
  const text = u === 0 ? n.toFixed(0) : n >= 100 ? n.toFixed(0) : n.toFixed(1);
  return `${text}${SP}${BYTE_UNITS[u]}`;
}

/** A size given in MiB (the daemon's unit for device memory). */
export function fmtMiB(v: Num | undefined, lost = false): string {
  const m = missing(v, lost);
  return m ?? fmtBytes((v as number) * 1048576);
}

/** PCIe throughput given in KB/s (NVML reports KB/s): "64 MB/s", "1.2 GB/s". */
export function fmtKBps(v: Num | undefined, lost = false): string {
  const m = missing(v, lost);
  if (m !== null) return m;
  const n = v as number;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}${SP}GB/s`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e5 ? 0 : 1)}${SP}MB/s`;
  return `${n.toFixed(0)}${SP}KB/s`;
}

/** "Gen 4 ×16"; half-known links say what is missing. */
export function fmtPcie(gen: Num | undefined, width: Num | undefined, lost = false): string {
  if (lost) return LOST;
  if ((gen === null || gen === undefined) && (width === null || width === undefined)) return NA;
  const g = gen === null || gen === undefined ? `Gen${SP}${NA}` : `Gen${SP}${gen}`;
  const w = width === null || width === undefined ? `×${NA}` : `×${width}`;
  return `${g}${SP}${w}`;
}

/** "used / total": each side formatted on its own so one missing side stays visible. */
export function fmtRatio(used: string, total: string): string {
  return `${used}${SP}/${SP}${total}`;
}

/** An uptime: "3d 04h", "2h 05m", "5m 03s", "42s". */
export function fmtDuration(seconds: Num | undefined): string {
  const m = missing(seconds);
  if (m !== null) return m;
  let s = Math.max(0, Math.floor(seconds as number));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const min = Math.floor(s / 60);
  s -= min * 60;
  const p2 = (x: number): string => String(x).padStart(2, '0');
  if (d > 0) return `${d}d${SP}${p2(h)}h`;
  if (h > 0) return `${h}h${SP}${p2(min)}m`;
  if (min > 0) return `${min}m${SP}${p2(s)}s`;
  return `${s}s`;
}

/** How long ago something happened, for the header: "0.4 s", "12 s", "3 min", "2 h". */
export function fmtAge(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}${SP}s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)}${SP}s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)}${SP}min`;
  return `${Math.round(ms / 3_600_000)}${SP}h`;
}

/** Wall-clock time of a sample in the viewer's time zone: "14:03:07". */
export function fmtClock(ms: number): string {
  const d = new Date(ms);
  const p2 = (x: number): string => String(x).padStart(2, '0');
  return `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
}

/** Load averages "0.43 0.33 0.18". */
export function fmtLoad(load: [Num, Num, Num] | null | undefined): string {
  if (!load) return NA;
  return load.map((v) => (v === null ? NA : v.toFixed(2))).join(SP);
}

/** A window length for labels: "1 min", "15 min", "1 h". */
export function fmtWindow(seconds: number): string {
  return seconds >= 3600 ? `${seconds / 3600}${SP}h` : `${seconds / 60}${SP}min`;
}

/** How long ago a time was, coarsely: "12 s", "3 min", "2 h", "4 d". */
export function fmtAgo(iso: string, nowMs: number): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return NA;
  const s = Math.max(0, Math.round((nowMs - t) / 1000));
  if (s < 120) return `${s}${SP}s`;
  if (s < 7200) return `${Math.round(s / 60)}${SP}min`;
  if (s < 172800) return `${Math.round(s / 3600)}${SP}h`;
  return `${Math.round(s / 86400)}${SP}d`;
}

export interface HealthLine {
  /** ok: every signal the GPU reports is clean; warn: worth a look; bad: the daemon calls the
   * GPU degraded; na: the GPU or driver reports none of them. */
  level: 'ok' | 'warn' | 'bad' | 'na';
  text: string;
}

/**
 * One line for a GPU card from its health block: the daemon's verdict (degraded, with its
 * reasons) first, then what else is worth a look (corrected ECC errors, remapped or pending
 * rows, retired pages, PCIe replays, an old XID). Signals the GPU does not report are left
 * out, never shown as 0.
 */
export function healthLine(h: GpuHealth | undefined, nowMs: number): HealthLine {
  if (!h) return { level: 'na', text: `Health${SP}${NA}` };
  const notes: string[] = [];
  const pos = (v: Num | undefined): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;
  if (h.xid && pos(h.xid.last))
    notes.push(`XID${SP}${h.xid.last}` + (h.xid.last_time ? ` ${fmtAgo(h.xid.last_time, nowMs)} ago` : ''));
  if (pos(h.ecc.uncorrected_volatile)) notes.push(`${h.ecc.uncorrected_volatile} uncorrected ECC`);
  if (pos(h.ecc.corrected_volatile)) notes.push(`${h.ecc.corrected_volatile} corrected ECC`);
  if (h.remapped_rows.failure) notes.push('row remapping failed');
  if (h.remapped_rows.pending) notes.push('row remap pending (reset the GPU)');
  if (pos(h.remapped_rows.uncorrectable)) notes.push(`${h.remapped_rows.uncorrectable} rows remapped`);
  if (h.retired_pages.pending) notes.push('page retirement pending');
  if (pos(h.retired_pages.double_bit)) notes.push(`${h.retired_pages.double_bit} pages retired`);
  if (pos(h.pcie_replay_counter)) notes.push(`${h.pcie_replay_counter} PCIe replays`);
  const known =
    h.xid !== null ||
    h.ecc.uncorrected_volatile !== null ||
    h.remapped_rows.failure !== null ||
    h.retired_pages.pending !== null ||
    h.pcie_replay_counter !== null;
  if (h.degraded) return { level: 'bad', text: `Degraded: ${h.reasons ?? notes.join(' · ')}` };
  if (notes.length) return { level: 'warn', text: `Health: ${notes.join(' · ')}` };
  return known ? { level: 'ok', text: 'Health ok' } : { level: 'na', text: `Health${SP}${NA}` };
}

/**
 * The health counters a GPU does not report (null in its health block), by name: what "Health
 * n/a" means for it. Every one of them when there is no health block at all.
 */
export function healthUnreported(h: GpuHealth | undefined): string[] {
  const all = ['XID events', 'ECC errors', 'retired pages', 'remapped rows', 'PCIe replays'];
  if (!h) return all;
  const has = [
    h.xid !== null,
    h.ecc.uncorrected_volatile !== null || h.ecc.corrected_volatile !== null,
    h.retired_pages.pending !== null || h.retired_pages.double_bit !== null,
    h.remapped_rows.failure !== null || h.remapped_rows.uncorrectable !== null,
    h.pcie_replay_counter !== null,
  ];
  return all.filter((_n, i) => !has[i]);
}
