// What the Sessions pages make of the API's runs: table cells, seed 003's mean and min-max, the
// timeline as chart columns; absent values are n/a, never 0.
import { describe, expect, it } from 'vitest';

import type { SessionDoc } from '../../src/lib/sessions';
import {
  docGpus,
  fmtEnergy,
  fmtRunDuration,
  gpuColor,
  gpuSummary,
  isSessionKind,
  runPath,
  runTitle,
  statCell,
  statsRows,
  timelineColumns,
} from '../../src/lib/sessions';

const block = (min: number, mean: number, max: number) => ({ min, mean, max, p50: null, p95: null, count: 3 });

const doc: SessionDoc = {
  id: 'abc',
  kind: 'record',
  label: null,
  status: 'stopped',
  command: ['sleep', '1'],
  exit_code: 0,
  started_at: '2026-11-26T10:00:00.000Z',
  ended_at: '2026-11-26T10:00:02.000Z',
  interval_seconds: 1,
  monitoring_duration_seconds: 2,
  sample_count: 3,
  gpus: [
    { index: 2, name: 'A100' },
    { index: 0, name: 'H100' },
  ],
  gpu_stats: {
    '2': {
      name: 'A100',
      uuid: null,
      utilization: block(10, 20, 30),
      memory_used_mb: block(1024, 2048, 4096),
      memory_usage_percent: block(1, 2, 4),
      temperature_c: block(40, 45, 50),
      power_draw_w: null,
      energy_j: null,
      energy_source: null,
    },
    '0': {
      name: 'H100',
      uuid: null,
      utilization: block(0, 50, 100),
      memory_used_mb: null,
      memory_usage_percent: null,
      temperature_c: null,
      power_draw_w: block(100, 250, 700),
      energy_j: 1500,
      energy_source: 'counter',
    },
  },
  energy_j: null,
  timeline: [
    { t: 0, gpus: { '0': { utilization: 0 }, '2': { utilization: 10 } } },
    { t: 1, gpus: { '0': { utilization: null }, '2': { utilization: 20 } } },
    { t: 2, gpus: { '2': { utilization: 30 } } },
  ],
};

describe('sessions', () => {
  it("links a benchmark to its own page, other runs to the session page", () => {
    expect(runPath({ id: '20261126-091102-7c01aa', kind: 'bench' })).toBe('/benchmarks/20261126-091102-7c01aa');
    expect(runPath({ id: 'r1', kind: 'record' })).toBe('/sessions/r1');
    expect(runPath({ id: 's1', kind: 'session' })).toBe('/sessions/s1');
  });

  it('formats energy, durations and GPU lists', () => {
    expect(fmtEnergy(null)).toBe('n/a');
    expect(fmtEnergy(850)).toBe('850\u00a0J');
    expect(fmtEnergy(12_400)).toBe('12.4\u00a0kJ');
    expect(fmtEnergy(3_210_000)).toBe('3.21\u00a0MJ');
    expect(fmtRunDuration(3.24)).toBe('3.2s');
    expect(fmtRunDuration(303)).toBe('5m\u00a003s');
    expect(fmtRunDuration(null)).toBe('n/a');
    expect(gpuSummary([{ index: 0, name: 'H100' }, { index: 1, name: 'H100' }])).toBe('2\u00a0×\u00a0H100');
    expect(gpuSummary([{ index: 0, name: 'H100' }, { index: 1, name: 'A100' }])).toBe('H100 + A100');
    expect(gpuSummary([])).toBe('none');
    expect(runTitle({ id: 'x', label: null })).toBe('x');
    expect(runTitle({ id: 'x', label: 'train' })).toBe('train');
    expect(isSessionKind('record')).toBe(true);
    expect(isSessionKind('bench')).toBe(false);
  });

  it('shows the mean and the min-max range, n/a for an absent metric', () => {
    expect(statCell(block(40, 44.67, 48), (v) => `${v}`)).toEqual({ mean: '44.67', range: '40–48' });
    expect(statCell(null, (v) => `${v}`)).toEqual({ mean: 'n/a', range: '' });
  });

  it('makes one statistics row per GPU in index order', () => {
    const rows = statsRows(doc);
    expect(rows.map((r) => r.index)).toEqual([0, 2]);
    expect(rows[0]?.utilization).toEqual({ mean: '50\u00a0%', range: '0\u00a0%–100\u00a0%' });
    expect(rows[0]?.memory.mean).toBe('n/a');
    expect(rows[0]?.power.mean).toBe('250\u00a0W');
    expect(rows[0]?.energy).toBe('1.5\u00a0kJ');
    expect(rows[1]?.memory).toEqual({ mean: '2.0\u00a0GiB', range: '1.0\u00a0GiB–4.0\u00a0GiB' });
    expect(rows[1]?.energy).toBe('n/a');
  });

  it('turns the timeline into chart columns on the wall clock', () => {
    const gpus = docGpus(doc);
    expect(gpus).toEqual([0, 2]);
    const [x, g0, g2] = timelineColumns(doc, gpus, 'utilization');
    const t0 = Date.parse('2026-11-26T10:00:00.000Z') / 1000;
    expect(x).toEqual([t0, t0 + 1, t0 + 2]);
    expect(g0).toEqual([0, null, null]); // absent and missing rows are gaps, never 0
    expect(g2).toEqual([10, 20, 30]);
    expect(docGpus({ gpus: null, gpu_stats: { '3': doc.gpu_stats?.['2'] as never, '1': doc.gpu_stats?.['0'] as never } })).toEqual([
      1, 3,
    ]);
  });

  it('gives each line a colour, cycling', () => {
    expect(gpuColor(0)).not.toBe(gpuColor(1));
    expect(gpuColor(8)).toBe(gpuColor(0));
  });
});
