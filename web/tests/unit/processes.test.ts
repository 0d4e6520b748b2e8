// The process table's sorting and filtering.
import { describe, expect, it } from 'vitest';

import { allProcesses, filterProcesses, sortProcesses } from '../../src/lib/processes';
import type { GpuProcess, Snapshot } from '../../src/lib/types';

function proc(gpu: number, pid: number, mib: number | null, user: string | null, command: string | null): GpuProcess {
  return {
    gpu,
    pid,
    type: 'compute',
    used_memory_mib: mib,
    used_memory_bytes: mib === null ? null : mib * 1048576,
    user,
    command,
  };
}

const list = [
  proc(0, 300, 100, 'alice', 'python train.py'),
  proc(1, 20, null, 'bob', 'vllm serve'),
  proc(0, 1000, 900, null, null),
  proc(1, 5, 100, 'carol', 'python eval.py'),
];

describe('sortProcesses', () => {
  it('sorts by memory, largest first, unknown last', () => {
    expect(sortProcesses(list, 'memory', 'desc').map((p) => p.pid)).toEqual([1000, 300, 5, 20]);
  });
  it('keeps unknown memory last in ascending order too', () => {
    expect(sortProcesses(list, 'memory', 'asc').map((p) => p.pid)).toEqual([300, 5, 1000, 20]);
  });
  it('sorts PIDs numerically, not as text', () => {
    expect(sortProcesses(list, 'pid', 'asc').map((p) => p.pid)).toEqual([5, 20, 300, 1000]);
    expect(sortProcesses(list, 'pid', 'desc').map((p) => p.pid)).toEqual([1000, 300, 20, 5]);
  });
  it('sorts by SM share, busiest first, unknown (no sample from NVML) last', () => {
    const withSm = list.map((p, i) => ({
      ...p,
      utilization: { sm: [40, null, 95, 0][i] ?? null, memory: null, encoder: null, decoder: null },
    }));
    expect(sortProcesses(withSm, 'sm', 'desc').map((p) => p.pid)).toEqual([1000, 300, 5, 20]);
    expect(sortProcesses(withSm, 'sm', 'asc').map((p) => p.pid)).toEqual([5, 300, 1000, 20]);
    // A daemon that does not send utilization at all: every process unknown, in GPU/PID order.
    expect(sortProcesses(list, 'sm', 'desc').map((p) => p.pid)).toEqual([300, 1000, 5, 20]);
  });
  it('sorts users alphabetically and breaks ties by GPU then PID', () => {
    expect(sortProcesses(list, 'user', 'asc').map((p) => p.user)).toEqual(['alice', 'bob', 'carol', null]);
    expect(sortProcesses(list, 'gpu', 'asc').map((p) => p.pid)).toEqual([300, 1000, 5, 20]);
  });
  it('does not change its input', () => {
    const before = list.map((p) => p.pid);
    sortProcesses(list, 'pid', 'desc');
    expect(list.map((p) => p.pid)).toEqual(before);
  });
});

describe('filterProcesses', () => {
  it('matches command, user and PID, case-insensitively', () => {
    expect(filterProcesses(list, 'PYTHON').map((p) => p.pid)).toEqual([300, 5]);
    expect(filterProcesses(list, 'bob').map((p) => p.pid)).toEqual([20]);
    expect(filterProcesses(list, '1000').map((p) => p.pid)).toEqual([1000]);
    expect(filterProcesses(list, '  ')).toHaveLength(4);
  });
  it('collects the processes of every GPU', () => {
    const snap = { gpus: [{ processes: [list[0]] }, { processes: [list[1], list[3]] }] } as unknown as Snapshot;
    expect(allProcesses(snap).map((p) => p.pid)).toEqual([300, 20, 5]);
    expect(allProcesses(null)).toEqual([]);
  });
});
