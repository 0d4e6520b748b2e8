// Time series held for the charts: one bounded set of columns per GPU, fed by history responses
// (merged) and by stream samples (appended). Memory stays flat: points older than the window are
// dropped, and the column count is fixed.

import type { Num } from './types';

/** One point: time in ms and one value per column (null = absent at that time). */
export interface Point {
  t: number;
  v: Num[];
}

/** Start of the step-aligned bucket holding t; the same floor division as the daemon's history. */
export function bucketOf(t: number, stepMs: number): number {
  return Math.floor(t / stepMs) * stepMs;
}

/**
 * Merges two time-sorted point lists into one, sorted and without duplicate times. Where both
 * hold a time, `incoming` wins (the daemon's history is the authority for a time it has). Points
 * before `fromMs` are dropped.
 */
export function mergePoints(existing: readonly Point[], incoming: readonly Point[], fromMs: number): Point[] {
  const out: Point[] = [];
  let i = 0;
  let j = 0;
  while (i < existing.length || j < incoming.length) {
    const a = existing[i];
    const b = incoming[j];
    let p: Point;
    if (a && (!b || a.t < b.t)) {
      p = a;
      i++;
    } else if (b && (!a || b.t < a.t)) {
      p = b;
      j++;
    } else {
      p = b as Point; // same time: the daemon's value
      i++;
      j++;
    }
    if (p.t >= fromMs) out.push(p);
  }
  return out;
}

/**
 * Columns for uPlot: times in seconds, values with null where absent. A time gap longer than
 * `maxGapMs` gets a null point so the line breaks there instead of drawing across missing data.
 */
export class SeriesBuffer {
  /** Times in seconds (uPlot's x unit). */
  readonly x: number[] = [];
  /** One array per column, aligned with x. */
  readonly cols: Num[][];
  /** Time in ms of the last real (non-gap) point, -Infinity when empty. */
  private lastT = -Infinity;
  /** Running sums of the open bucket, for stream samples when stepMs is set. */
  private sums: number[];
  private counts: number[];

  constructor(
    readonly width: number,
    /** Bucket width in ms, null for raw samples. */
    readonly stepMs: number | null,
    /** How much time to keep, in ms. */
    readonly spanMs: number,
    /** Breaks the line when two points are further apart than this, in ms. */
    readonly maxGapMs: number,
  ) {
    this.cols = Array.from({ length: width }, () => []);
    this.sums = new Array<number>(width).fill(0);
    this.counts = new Array<number>(width).fill(0);
  }

  get length(): number {
    return this.x.length;
  }

  /** Time in ms of the newest point, or null when empty. */
  get newestMs(): number | null {
    return this.lastT === -Infinity ? null : this.lastT;
  }

  /** uPlot's aligned data: [x, col0, col1, ...]. The arrays are live: do not keep them. */
  data(): [number[], ...Num[][]] {
    return [this.x, ...this.cols];
  }

  clear(): void {
    this.x.length = 0;
    for (const c of this.cols) c.length = 0;
    this.lastT = -Infinity;
    this.gapTimes.clear();
    this.resetBucket();
  }

  /** The held points (gap markers left out), oldest first. */
  points(): Point[] {
    const out: Point[] = [];
    for (let i = 0; i < this.x.length; i++) {
      if (this.isGap(i)) continue;
      out.push({ t: Math.round((this.x[i] as number) * 1000), v: this.cols.map((c) => c[i] ?? null) });
    }
    return out;
  }

  /** Replaces the content with `pts` (time-sorted), e.g. a backfill from the daemon's history. */
  replace(pts: readonly Point[]): void {
    this.clear();
    for (const p of pts) this.push(p.t, p.v);
    // The daemon's last bucket counts as one sample of the bucket the stream continues.
    this.resetBucket();
    const n = this.x.length;
    if (this.stepMs !== null && n > 0) {
      for (let c = 0; c < this.width; c++) {
        const v = this.cols[c]?.[n - 1];
        if (v !== null && v !== undefined) {
          this.sums[c] = v;
          this.counts[c] = 1;
        }
      }
    }
    this.trim();
  }

  /** Merges `pts` (time-sorted) into what is held; used to refill a gap after reconnecting. */
  merge(pts: readonly Point[]): void {
    const newest = Math.max(this.lastT, pts.length ? (pts[pts.length - 1] as Point).t : -Infinity);
    this.replace(mergePoints(this.points(), pts, newest - this.spanMs));
  }

  /**
   * Adds one stream sample taken at tMs. With a step, samples in the same bucket are averaged
   * into one point (as the daemon does); a sample older than the newest point is ignored.
   */
  add(tMs: number, values: readonly Num[]): void {
    if (this.stepMs === null) {
      if (tMs < this.lastT) return;
      if (tMs === this.lastT) {
        this.setLast(values);
        return;
      }
      this.push(tMs, values);
    } else {
      const key = bucketOf(tMs, this.stepMs);
      if (key < this.lastT) return;
      if (key !== this.lastT) {
        this.resetBucket();
        this.push(key, values.map(() => null));
      }
      const mean: Num[] = [];
      for (let c = 0; c < this.width; c++) {
        const v = values[c];
        if (v !== null && v !== undefined && Number.isFinite(v)) {
          this.sums[c] = (this.sums[c] as number) + v;
          this.counts[c] = (this.counts[c] as number) + 1;
        }
        const n = this.counts[c] as number;
        mean.push(n > 0 ? (this.sums[c] as number) / n : null);
      }
      this.setLast(mean);
    }
    this.trim();
  }

  private isGap(i: number): boolean {
    // Gap markers sit between real points and hold only nulls; a real all-null point (a lost
    // GPU) is kept, which is why markers are recognised by their odd time instead.
    const t = (this.x[i] as number) * 1000;
    return this.gapTimes.has(Math.round(t));
  }

  private gapTimes = new Set<number>();

  private push(tMs: number, values: readonly Num[]): void {
    if (this.lastT !== -Infinity && tMs - this.lastT > this.maxGapMs) {
      // A null point just after the last one: uPlot breaks the line at nulls.
      const g = this.lastT + 1;
      this.gapTimes.add(g);
      this.x.push(g / 1000);
      for (const c of this.cols) c.push(null);
    }
    this.x.push(tMs / 1000);
    for (let c = 0; c < this.width; c++) (this.cols[c] as Num[]).push(values[c] ?? null);
    this.lastT = tMs;
  }

  private setLast(values: readonly Num[]): void {
    const n = this.x.length - 1;
    if (n < 0) return;
    for (let c = 0; c < this.width; c++) (this.cols[c] as Num[])[n] = values[c] ?? null;
  }

  private resetBucket(): void {
    this.sums.fill(0);
    this.counts.fill(0);
  }

  /** Drops points that fell out of the span; splices in batches so appends stay O(1) amortised. */
  private trim(): void {
    if (this.lastT === -Infinity) return;
    const from = (this.lastT - this.spanMs) / 1000;
    let k = 0;
    while (k < this.x.length && (this.x[k] as number) < from) k++;
    // Keep one point before the window so the line enters the chart from its left edge.
    k = Math.max(0, k - 1);
    if (k === 0) return;
    if (k < 32 && k * 8 < this.x.length) return; // batch small trims
    for (let i = 0; i < k; i++) this.gapTimes.delete(Math.round((this.x[i] as number) * 1000));
    this.x.splice(0, k);
    for (const c of this.cols) c.splice(0, k);
  }
}
