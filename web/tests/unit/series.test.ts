// Series buffers: merging history with stream samples, buckets like the daemon's, gaps shown
// as breaks, and memory bounded however long the page stays open.
import { describe, expect, it } from 'vitest';

import { SeriesBuffer, bucketOf, mergePoints } from '../../src/lib/series';
import type { Point } from '../../src/lib/series';

const p = (t: number, ...v: (number | null)[]): Point => ({ t, v });

describe('bucketOf', () => {
  it('floors to the step like the daemon, negative times included', () => {
    expect(bucketOf(4999, 1000)).toBe(4000);
    expect(bucketOf(5000, 1000)).toBe(5000);
    expect(bucketOf(-1, 1000)).toBe(-1000);
  });
});

describe('mergePoints', () => {
  it('interleaves by time and lets the daemon win on equal times', () => {
    const held = [p(1000, 1), p(2000, 2), p(5000, 5)];
    const hist = [p(2000, 20), p(3000, 30), p(4000, 40)];
    expect(mergePoints(held, hist, 0)).toEqual([p(1000, 1), p(2000, 20), p(3000, 30), p(4000, 40), p(5000, 5)]);
  });
  it('drops points before the window', () => {
    expect(mergePoints([p(1000, 1), p(3000, 3)], [p(2000, 2)], 2000)).toEqual([p(2000, 2), p(3000, 3)]);
  });
  it('handles empty sides', () => {
    expect(mergePoints([], [p(1, 1)], 0)).toEqual([p(1, 1)]);
    expect(mergePoints([p(1, 1)], [], 0)).toEqual([p(1, 1)]);
  });
});

describe('SeriesBuffer, raw samples', () => {
  it('appends samples as uPlot columns in seconds', () => {
    const b = new SeriesBuffer(2, null, 60_000, 3000);
    b.add(1000, [1, 2]);
    b.add(2000, [3, null]);
    expect(b.data()).toEqual([[1, 2], [1, 3], [2, null]]);
    expect(b.newestMs).toBe(2000);
  });
  it('replaces a sample with the same time and ignores an older one', () => {
    const b = new SeriesBuffer(1, null, 60_000, 3000);
    b.add(1000, [1]);
    b.add(1000, [5]);
    b.add(500, [9]);
    expect(b.data()).toEqual([[1], [5]]);
  });
  it('breaks the line with a null where samples are missing', () => {
    const b = new SeriesBuffer(1, null, 600_000, 3000);
    b.add(1000, [1]);
    b.add(10_000, [2]);
    const [x, y] = b.data();
    expect(x).toEqual([1, 1.001, 10]);
    expect(y).toEqual([1, null, 2]);
    // The marker is not a sample: it is left out of points() and comes back after a merge.
    expect(b.points()).toEqual([p(1000, 1), p(10_000, 2)]);
    b.merge([p(5000, 3)]);
    expect(b.data()[1]).toEqual([1, null, 3, null, 2]);
  });
  it('stays bounded over an hour of samples at 5 Hz', () => {
    const b = new SeriesBuffer(4, null, 60_000, 3000);
    let most = 0;
    for (let i = 0; i < 3600 * 5; i++) {
      b.add(i * 200, [i % 100, 1, 2, 3]);
      most = Math.max(most, b.length);
    }
    // 60 s at 5 Hz plus the batched trim's slack: never the hour's 18000 points.
    expect(most).toBeLessThanOrEqual(300 + 40);
    expect(b.data()[0][b.length - 1]).toBe((3600 * 5 - 1) * 0.2);
    for (const c of b.data()) expect(c.length).toBe(b.length);
  });
});

describe('SeriesBuffer, buckets', () => {
  it('averages stream samples into step-aligned buckets', () => {
    const b = new SeriesBuffer(1, 4000, 3_600_000, 12_000);
    b.add(4100, [10]);
    b.add(5100, [20]);
    b.add(7900, [null]);
    b.add(8000, [50]);
    expect(b.data()).toEqual([[4, 8], [15, 50]]);
  });
  it('continues the daemon\'s last bucket after a backfill', () => {
    const b = new SeriesBuffer(1, 4000, 3_600_000, 12_000);
    b.replace([p(0, 1), p(4000, 10)]);
    b.add(5000, [20]);
    expect(b.data()).toEqual([[0, 4], [1, 15]]);
  });
});

describe('SeriesBuffer, refill after a reconnect', () => {
  it('fills the gap and keeps what the stream brought meanwhile', () => {
    const b = new SeriesBuffer(1, null, 60_000, 3000);
    for (let t = 1000; t <= 5000; t += 1000) b.add(t, [t / 1000]);
    // the link drops for 5 s, then the first frame after it arrives
    b.add(11_000, [11]);
    expect(b.data()[1]).toContain(null);
    b.merge([6000, 7000, 8000, 9000, 10_000, 11_000].map((t) => p(t, t / 1000)));
    expect(b.data()).toEqual([
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    ]);
  });
  it('keeps only the window when a backfill brings more', () => {
    const b = new SeriesBuffer(1, null, 5000, 3000);
    b.merge([0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10_000].map((t) => p(t, t)));
    expect(b.data()[0][0]).toBeGreaterThanOrEqual(4);
    expect(b.newestMs).toBe(10_000);
  });
});
