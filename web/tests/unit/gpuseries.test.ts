// The GPU page's series: history requests, the conversion of responses and samples into one
// row of columns, energy since the window start, and throttling from NVML's mask.
import { describe, expect, it } from 'vitest';

import { col, energySinceStart, GPU_COLUMNS, gpuHistoryPoints, gpuHistoryUrls, gpuSampleValues, maskBit } from '../../src/lib/gpuseries';
import type { Gpu, HistoryResponse, Snapshot } from '../../src/lib/types';

describe('gpuseries', () => {
  it('asks for the GPU metrics and the host metrics apart, within what is kept', () => {
    const [g, h] = gpuHistoryUrls(3, 3600, 4000, 600);
    expect(g).toContain('api/history?gpu=3&metric=utilization.gpu,');
    expect(g).toContain('clocks_throttle_reasons.active');
    expect(g).toContain('&seconds=600&step=4');
    expect(g).not.toContain('host.');
    expect(h).toBe('api/history?metric=host.cpu.utilization,host.memory.used,host.memory.total&seconds=600&step=4');
    expect(gpuHistoryUrls(0, 60, null, 0)).toEqual([]);
    expect(gpuHistoryUrls(0, 60, null, 3600)[0]).not.toContain('step=');
  });

  it("reads each reason's bit of NVML's throttle mask", () => {
    expect(maskBit(0, 2)).toBe(0);
    expect(maskBit(4, 2)).toBe(1);
    expect(maskBit(5, 2)).toBe(1);
    expect(maskBit(5, 1)).toBe(0);
    expect(maskBit(0x84, 7)).toBe(1);
    expect(maskBit(2 ** 40 + 4, 2)).toBe(1); // past 32 bits
    expect(maskBit(2 ** 40, 40)).toBe(1);
    expect(maskBit(null, 2)).toBeNull();
  });

  it('merges responses into rows for its GPU only', () => {
    const resp: HistoryResponse[] = [
      {
        interval_ms: 1000,
        step_ms: null,
        seconds: 60,
        series: [
          { gpu: 1, metric: 'utilization.gpu', unit: '%', clamped: false, points: [[1000, 40], [2000, null]] },
          { gpu: 2, metric: 'utilization.gpu', unit: '%', clamped: false, points: [[1000, 99]] },
          { gpu: 1, metric: 'clocks_throttle_reasons.active', unit: '', clamped: false, points: [[1000, 4]] },
        ],
      },
      {
        interval_ms: 1000,
        step_ms: null,
        seconds: 60,
        series: [
          { metric: 'host.memory.used', unit: 'B', clamped: false, points: [[1000, 25]] },
          { metric: 'host.memory.total', unit: 'B', clamped: false, points: [[1000, 100]] },
        ],
      },
    ];
    const pts = gpuHistoryPoints(resp, 1);
    expect(pts.map((p) => p.t)).toEqual([1000, 2000]);
    expect(pts[0]?.v[col('utilization.gpu')]).toBe(40);
    expect(pts[0]?.v[col('throttle.sw_power_cap')]).toBe(1); // mask 4
    expect(pts[0]?.v[col('throttle.hw_slowdown')]).toBe(0);
    expect(pts[0]?.v[col('host.memory.percent')]).toBe(25);
    expect(pts[1]?.v[col('utilization.gpu')]).toBeNull();
    expect(pts[1]?.v[col('host.memory.percent')]).toBeNull();
    expect(pts[0]?.v).toHaveLength(GPU_COLUMNS.length);
  });

  it('reads a sample, with nothing for a lost GPU but the host', () => {
    const g = {
      index: 0,
      lost: false,
      utilization: { gpu: 50, memory: 20, encoder: null, decoder: null },
      memory: { used_mib: 100, total_mib: 1000 },
      temperature_c: 40,
      power: { draw_w: 100, limit_w: 300 },
      energy_j: 5000,
      clocks: { sm_mhz: 1500, memory_mhz: 2600, graphics_mhz: 1500 },
      pcie: { tx_kbps: 10, rx_kbps: 20 },
      fan_percent: null,
      throttle_reasons: { mask: '0x41', active: ['gpu_idle', 'hw_thermal_slowdown'] },
    } as unknown as Gpu;
    const s = { gpus: [g], system: { cpu_percent: 12, memory: { used_percent: 30 } } } as unknown as Snapshot;
    const v = gpuSampleValues(s, 0);
    expect(v[col('utilization.gpu')]).toBe(50);
    expect(v[col('energy.total')]).toBe(5000);
    expect(v[col('fan.speed')]).toBeNull();
    expect(v[col('throttle.hw_thermal_slowdown')]).toBe(1);
    expect(v[col('throttle.sw_power_cap')]).toBe(0);
    expect(v[col('host.cpu.utilization')]).toBe(12);
    const lost = gpuSampleValues({ ...s, gpus: [{ ...g, lost: true }] } as Snapshot, 0);
    expect(lost[col('utilization.gpu')]).toBeNull();
    expect(lost[col('host.memory.percent')]).toBe(30);
  });

  it('asks for the health counters and reads them from a sample, absent as null', () => {
    const [g] = gpuHistoryUrls(0, 60, null, 3600);
    for (const m of ['xid.count', 'ecc.errors.corrected.volatile.total', 'ecc.errors.uncorrected.volatile.total',
      'pcie.replay_counter', 'clocks_event_reasons_counters.sw_power_cap', 'violation.thermal'])
      expect(g).toContain(m);
    const base = { index: 0, lost: false, utilization: {}, memory: {}, power: {}, clocks: {}, pcie: {} };
    const sick = {
      ...base,
      health: {
        xid: { last: 48, count: 2, last_time: null },
        ecc: { mode: { current: true, pending: true }, corrected_volatile: 12, uncorrected_volatile: 2 },
        pcie_replay_counter: 9,
        violations_us: { power: 1500000, thermal: 250 },
      },
    } as unknown as Gpu;
    const v = gpuSampleValues({ gpus: [sick] } as unknown as Snapshot, 0);
    expect(v[col('xid.count')]).toBe(2);
    expect(v[col('ecc.errors.uncorrected.volatile.total')]).toBe(2);
    expect(v[col('pcie.replay_counter')]).toBe(9);
    expect(v[col('clocks_event_reasons_counters.sw_power_cap')]).toBe(1500000);
    // An older board: no XID watch, ECC off, no violation counters.
    const old = {
      ...base,
      health: { xid: null, ecc: { mode: { current: false, pending: false }, corrected_volatile: null, uncorrected_volatile: null }, pcie_replay_counter: null },
    } as unknown as Gpu;
    const w = gpuSampleValues({ gpus: [old] } as unknown as Snapshot, 0);
    expect(w[col('xid.count')]).toBeNull();
    expect(w[col('ecc.errors.corrected.volatile.total')]).toBeNull();
    expect(w[col('violation.thermal')]).toBeNull();
  });

  it('counts energy from the window start, never negative', () => {
    expect(energySinceStart([null, 100, 150, 90, 200])).toEqual([null, 0, 50, null, 100]);
  });
});
