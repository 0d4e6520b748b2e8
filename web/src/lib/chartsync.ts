// Charts that share one time axis: uPlot's cursor sync (one crosshair across all of them) under
// the group's key, and one zoom. A drag on any chart zooms every chart of the group to the
// dragged span; a double-click goes back to the window. No DOM here.

import type { Range } from './scales';

export class ChartGroup {
  readonly key: string;
  private span: Range | null = null;
  private readonly listeners = new Set<(r: Range | null) => void>();

  constructor(key: string) {
    this.key = key;
  }

  /** The zoomed span in epoch seconds, or null: the whole window. */
  get zoom(): Range | null {
    return this.span;
  }

  /** Zooms every chart of the group to [min, max] (ordered; under 1 s wide is ignored), or back to the window with null. */
  setZoom(r: Range | null): void {
    if (r !== null) {
      const lo = Math.min(r[0], r[1]);
      const hi = Math.max(r[0], r[1]);
      if (!(hi - lo >= 1)) return;
      r = [lo, hi];
    }
    if (r === null && this.span === null) return;
    this.span = r;
    for (const l of [...this.listeners]) l(r);
  }

  /** Calls fn on each zoom change; returns the unsubscribe. */
  onZoom(fn: (r: Range | null) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
