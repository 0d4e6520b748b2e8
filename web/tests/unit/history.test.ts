// History requests and responses: resolution per window, request splitting within the daemon's
// limits, memory as a percentage of the GPU's total.
import { describe, expect, it } from 'vitest';

import { MAX_CHART_POINTS, gpuValues, historyToPoints, historyUrls, stepFor } from '../../src/lib/history';
import type { Gpu, HistoryResponse } from '../../src/lib/types';

describe('stepFor', () => {
  it('draws short windows from raw samples', () => {
    expect(stepFor(60, 1000)).toBeNull();
    expect(stepFor(900, 1000)).toBeNull();
  });
  it('buckets long windows into whole poll intervals', () => {
    expect(stepFor(3600, 1000)).toBe(4000);
    expect(stepFor(300, 100)).toBe(400);
    expect((3600 * 1000) / (stepFor(3600, 1000) as number)).toBeLessThanOrEqual(MAX_CHART_POINTS);
  });
});

describe('historyUrls', () => {
  it('asks for the four chart metrics of every GPU in one request', () => {
    expect(historyUrls([0, 1, 2, 3], 60, null, 3600)).toEqual([
      'api/history?gpu=0,1,2,3&metric=utilization.gpu,memory.used,temperature.gpu,power.draw&seconds=60',
    ]);
  });
  it('adds the step in seconds', () => {
    expect(historyUrls([0], 3600, 4000, 3600)[0]).toMatch(/&seconds=3600&step=4$/);
  });
  it('stays within the daemon\'s 128 series per request', () => {
    const urls = historyUrls([...Array(64).keys()], 60, null, 3600);
    expect(urls).toHaveLength(2);
    expect(urls[1]).toContain('gpu=32,');
  });
  it('asks no more than the daemon keeps, and nothing when it keeps none', () => {
    expect(historyUrls([0], 3600, null, 600)[0]).toContain('seconds=600');
    expect(historyUrls([0], 60, null, 0)).toEqual([]);
    expect(historyUrls([], 60, null, 3600)).toEqual([]);
  });
});

describe('historyToPoints', () => {
  const resp: HistoryResponse = {
    interval_ms: 1000,
    step_ms: null,
    seconds: 60,
    series: [
      { gpu: 0, metric: 'utilization.gpu', unit: '%', clamped: false, points: [[2000, 5], [1000, 3]] },
      { gpu: 0, metric: 'memory.used', unit: 'MiB', clamped: false, points: [[1000, 40960], [2000, null]] },
      { gpu: 1, metric: 'memory.used', unit: 'MiB', clamped: false, points: [[1000, 100]] },
      { gpu: 0, metric: 'power.draw', unit: 'W', clamped: false, points: [[1000, 70.5]] },
    ],
  };
  it('groups by GPU and time, sorted, memory in % of the total', () => {
    const out = historyToPoints([resp], new Map([[0, 81920], [1, null]]));
    expect(out.get(0)).toEqual([
      { t: 1000, v: [3, 50, null, 70.5] },
      { t: 2000, v: [5, null, null, null] },
    ]);
    // No known total: memory stays absent rather than guessed.
    expect(out.get(1)).toEqual([{ t: 1000, v: [null, null, null, null] }]);
  });
});

describe('gpuValues', () => {
  it('takes the chart values of a sample and none of a lost GPU', () => {
    const g = {
      lost: false,
      utilization: { gpu: 42 },
      memory: { used_percent: 44.99 },
      temperature_c: 40,
      power: { draw_w: null },
    } as unknown as Gpu;
    expect(gpuValues(g)).toEqual([42, 44.99, 40, null]);
    expect(gpuValues({ ...g, lost: true })).toEqual([null, null, null, null]);
  });
});
