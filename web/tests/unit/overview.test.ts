// The live page's views and the overview's sparklines.
import { describe, expect, it } from 'vitest';

import { chooseView, OVERVIEW_ABOVE, shortName, sparkSegments } from '../../src/lib/overview';

describe('overview', () => {
  it('turns to the overview above 8 GPUs unless the person chose', () => {
    expect(OVERVIEW_ABOVE).toBe(8);
    expect(chooseView(null, 8)).toBe('cards');
    expect(chooseView(null, 9)).toBe('overview');
    expect(chooseView('cards', 16)).toBe('cards');
    expect(chooseView('overview', 1)).toBe('overview');
    expect(chooseView('nonsense', 16)).toBe('overview');
  });

  it('draws values on a 0-to-top scale and breaks the line at gaps', () => {
    const segs = sparkSegments([0, 1, 2, 3, 4], [0, 50, null, 100, 200], 0, 4, 100, 100, 10);
    expect(segs).toEqual(['0.0,10.0 25.0,5.0', '75.0,0.0 100.0,0.0']); // 200 is clamped to the top
  });

  it('leaves out points before the window', () => {
    expect(sparkSegments([-5, 0, 10], [10, 20, 30], 0, 10, 100, 10, 10)).toEqual(['0.0,8.0 10.0,7.0']);
    expect(sparkSegments([], [], 0, 10, 100, 10, 10)).toEqual([]);
  });

  it('shortens names for tiles', () => {
    expect(shortName('NVIDIA H100 80GB HBM3')).toBe('H100 80GB HBM3');
    expect(shortName('NVIDIA A100-SXM4-40GB (simulated)')).toBe('A100-SXM4-40GB');
    expect(shortName(null)).toBe('unknown GPU');
  });
});
