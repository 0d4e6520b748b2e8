// The dashboard's state: the newest sample, the link, the chart window and one bounded series
// buffer per GPU. Stream frames update the buffers at once but notify the UI at most once per
// animation frame, so a burst of samples costs one render.

import { DEFAULT_WINDOW, COLUMN_COUNT, gpuValues, historyToPoints, historyUrls, stepFor } from './history';
import type { WindowSeconds } from './history';
import { SeriesBuffer } from './series';
import type { LinkState } from './connection';
import type { Health, HistoryResponse, Num, ServerConfig, Snapshot } from './types';

/** What a subscriber can listen to. */
export type Topic =
  | 'frame' // a new sample is visible (at most once per animation frame)
  | 'layout' // the set of GPUs changed, or the no-GPU state did
  | 'link' // connection state
  | 'window' // chart window
  | 'series' // buffers were replaced or refilled (backfill done)
  | 'health'; // /api/health answer

export interface StoreDeps {
  /** GETs a daemon path as JSON (relative, e.g. "api/history?..."). */
  getJson: <T>(path: string) => Promise<T>;
  /** Schedules fn before the next paint (requestAnimationFrame in the browser). */
  schedule: (fn: () => void) => void;
  now: () => number;
}

const DEFAULT_POLL_MS = 1000;

export class Store {
  snapshot: Snapshot | null = null;
  health: Health | null = null;
  config: ServerConfig | null = null;
  link: LinkState = { kind: 'connecting', failures: 0 };
  window: WindowSeconds = DEFAULT_WINDOW;
  /** Client time (ms) when the newest frame arrived. */
  receivedAt = 0;
  /** A failed backfill's message, shown under the charts; null when fine. */
  historyError: string | null = null;
  /** Bumped by every backfill; lets charts and tests tell a refill happened. */
  seriesGeneration = 0;

  private buffers = new Map<number, SeriesBuffer>();
  private subs = new Map<Topic, Set<() => void>>();
  private dirty = new Set<Topic>();
  private flushQueued = false;
  private layoutKey = '';
  private backfillWanted: { seconds: number } | null = null;
  private backfillSeq = 0;
  private hadLive = false;
  private sampleFns = new Set<(s: Snapshot) => void>();

  constructor(private readonly deps: StoreDeps) {}

  get pollMs(): number {
    return this.config?.poll_interval_ms ?? this.health?.poll_interval_ms ?? DEFAULT_POLL_MS;
  }

  /** Bucket width of the current window, null for raw samples. */
  get stepMs(): number | null {
    return stepFor(this.window, this.pollMs);
  }

  /** The series buffer of GPU `index`, created on first use. */
  buffer(index: number): SeriesBuffer {
    let b = this.buffers.get(index);
    if (!b) {
      b = this.newBuffer();
      this.buffers.set(index, b);
    }
    return b;
  }

  /**
   * Calls fn with every sample as it arrives (not once per animation frame like the topics), for
   * buffers that must not miss one; returns the unsubscribe.
   */
  onSample(fn: (s: Snapshot) => void): () => void {
    this.sampleFns.add(fn);
    return () => this.sampleFns.delete(fn);
  }

  subscribe(topic: Topic, fn: () => void): () => void {
    let set = this.subs.get(topic);
    if (!set) {
      set = new Set();
      this.subs.set(topic, set);
    }
    set.add(fn);
    return () => set.delete(fn);
  }

  setConfig(c: ServerConfig): void {
    const pollChanged = this.config !== null && c.poll_interval_ms !== this.config.poll_interval_ms;
    this.config = c;
    if (pollChanged) this.resetSeries();
  }

  setHealth(h: Health): void {
    this.health = h;
    this.mark('health');
  }

  setLink(s: LinkState): void {
    if (s.kind === 'live') {
      // Back after a break: the daemon kept sampling (or restarted); refill what was missed.
      if (this.hadLive && this.receivedAt > 0) {
        const gapS = (this.deps.now() - this.receivedAt) / 1000;
        this.wantBackfill(gapS + (2 * (this.stepMs ?? this.pollMs)) / 1000 + 2);
      }
      this.hadLive = true;
    }
    this.link = s;
    this.mark('link');
  }

  setWindow(w: WindowSeconds): void {
    if (w === this.window) return;
    this.window = w;
    this.resetSeries();
    this.mark('window');
  }

  /** Takes one stream frame (the JSON text of a full sample). Returns false when not a sample. */
  ingest(text: string): boolean {
    let s: Snapshot;
    try {
      s = JSON.parse(text) as Snapshot;
    } catch {
      return false;
    }
    if (!s || !Array.isArray(s.gpus) || typeof s.timestamp_ms !== 'number') return false;
    this.accept(s);
    return true;
  }

  /** Takes one sample (from the stream or GET /api/gpus). */
  accept(s: Snapshot): void {
    const prev = this.snapshot;
    this.snapshot = s;
    this.receivedAt = this.deps.now();
    const key = `${s.provider}|${s.gpus.map((g) => g.uuid ?? g.name).join(',')}`;
    if (key !== this.layoutKey) {
      this.layoutKey = key;
      this.resetSeries();
      this.mark('layout');
    } else if (prev && s.timestamp_ms < prev.timestamp_ms) {
      // The daemon's clock stepped back: the held times no longer line up with new ones.
      this.resetSeries();
    }
    for (const g of s.gpus) this.buffer(g.index).add(s.timestamp_ms, gpuValues(g));
    for (const fn of this.sampleFns) fn(s);
    this.mark('frame');
    if (this.backfillWanted) void this.backfill();
  }

  /** Forgets every buffer and asks for a full backfill of the window. */
  resetSeries(): void {
    this.backfillSeq++; // answers to older requests no longer apply
    for (const b of this.buffers.values()) b.clear();
    this.buffers.clear();
    this.wantBackfill(this.window);
    this.mark('series');
  }

  private newBuffer(): SeriesBuffer {
    const step = this.stepMs;
    const res = step ?? this.pollMs;
    // A missing sample or two is jitter; more than that is a hole the line should show.
    return new SeriesBuffer(COLUMN_COUNT, step, this.window * 1000, Math.max(3 * res, res + 2500));
  }

  private wantBackfill(seconds: number): void {
    const s = Math.min(this.window, Math.max(1, Math.ceil(seconds)));
    this.backfillWanted = { seconds: Math.max(s, this.backfillWanted?.seconds ?? 0) };
    if (this.snapshot) void this.backfill();
  }

  /** Fetches the wanted history for every GPU of the current sample and merges it in. */
  private async backfill(): Promise<void> {
    const want = this.backfillWanted;
    const snap = this.snapshot;
    if (!want || !snap) return;
    this.backfillWanted = null;
    const seq = ++this.backfillSeq;
    const kept = this.config?.history_seconds ?? 0;
    const urls = historyUrls(
      snap.gpus.map((g) => g.index),
      want.seconds,
      this.stepMs,
      this.config ? kept : want.seconds,
    );
    if (urls.length === 0) return;
    let responses: HistoryResponse[];
    try {
      responses = await Promise.all(urls.map((u) => this.deps.getJson<HistoryResponse>(u)));
    } catch (e) {
      if (seq !== this.backfillSeq) return;
      this.historyError = `history unavailable: ${e instanceof Error ? e.message : String(e)}`;
      this.mark('series');
      return;
    }
    if (seq !== this.backfillSeq) return; // the window or the GPUs changed meanwhile
    this.historyError = null;
    const totals = new Map<number, Num>();
    for (const g of (this.snapshot ?? snap).gpus) totals.set(g.index, g.memory.total_mib);
    const points = historyToPoints(responses, totals);
    for (const [gpu, pts] of points) this.buffer(gpu).merge(pts);
    this.seriesGeneration++;
    this.mark('series');
  }

  private mark(topic: Topic): void {
    this.dirty.add(topic);
    if (this.flushQueued) return;
    this.flushQueued = true;
    this.deps.schedule(() => this.flush());
  }

  /** Notifies the subscribers of every topic that changed since the last flush. */
  flush(): void {
    this.flushQueued = false;
    const topics = [...this.dirty];
    this.dirty.clear();
    for (const t of topics) for (const fn of [...(this.subs.get(t) ?? [])]) fn();
  }
}
