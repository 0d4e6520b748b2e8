// The process table's data: every GPU's processes in one list, filtered and sorted. Absent
// values (a process whose memory the driver does not report) sort after every known one.

import type { GpuProcess, Snapshot } from './types';

export type ProcKey = 'gpu' | 'pid' | 'user' | 'command' | 'memory' | 'sm';
export type SortDir = 'asc' | 'desc';

/** Every process of the sample, GPU by GPU. */
export function allProcesses(s: Snapshot | null): GpuProcess[] {
  if (!s) return [];
  const out: GpuProcess[] = [];
  for (const g of s.gpus) for (const p of g.processes) out.push(p);
  return out;
}

/** Processes whose GPU, PID, user or command contains `query` (case-insensitive); all when empty. */
export function filterProcesses(list: readonly GpuProcess[], query: string): GpuProcess[] {
  const q = query.trim().toLowerCase();
  if (!q) return [...list];
  return list.filter(
    (p) =>
      String(p.pid).includes(q) ||
      `gpu ${p.gpu}` === q ||
      String(p.gpu) === q ||
      (p.user ?? '').toLowerCase().includes(q) ||
      (p.command ?? '').toLowerCase().includes(q),
  );
}

function keyOf(p: GpuProcess, k: ProcKey): string | number | null {
  switch (k) {
    case 'gpu':
      return p.gpu;
    case 'pid':
      return p.pid;
    case 'user':
      return p.user;
    case 'command':
      return p.command;
    case 'memory':
      return p.used_memory_bytes;
    case 'sm':
      return p.utilization?.sm ?? null;
  }
}

/** A sorted copy; ties fall back to GPU then PID so rows do not jump between samples. */
export function sortProcesses(list: readonly GpuProcess[], k: ProcKey, dir: SortDir): GpuProcess[] {
  const sign = dir === 'asc' ? 1 : -1;
  return [...list].sort((a, b) => {
    const va = keyOf(a, k);
    const vb = keyOf(b, k);
    if (va === null && vb !== null) return 1; // unknown last, either direction
    if (vb === null && va !== null) return -1;
    if (va !== null && vb !== null && va !== vb) {
      const c = typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va).localeCompare(String(vb));
      if (c !== 0) return sign * c;
    }
    return a.gpu - b.gpu || a.pid - b.pid;
  });
}
