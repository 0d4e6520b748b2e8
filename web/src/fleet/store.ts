// The Fleet page's state: whether the daemon has the fleet view (--prometheus, learnt from
// /api/config and confirmed by /api/fleet), the latest answer or the reason there is none, and
// the GPUs a job needs. It asks the daemon (never Prometheus) every POLL_MS while the page is
// shown and the tab visible; the daemon caches Prometheus's answer for 5 s anyway.

import { HttpError } from '../lib/endpoint';
import { fleetPath } from './model';
import type { FleetDoc } from './types';

export const POLL_MS = 5000;

export interface FleetDeps {
  /** GETs a daemon path as JSON; rejects with HttpError (status, the daemon's message). */
  getJson: <T>(path: string) => Promise<T>;
  setTimer: (fn: () => void, ms: number) => unknown;
  clearTimer: (id: unknown) => void;
  now: () => number;
  /** True while the tab is hidden: polls are skipped. */
  hidden: () => boolean;
}

/** unknown: /api/config not read yet; off: the daemon runs without --prometheus. */
export type FleetState = 'unknown' | 'off' | 'on';

export class FleetStore {
  state: FleetState = 'unknown';
  /** Prometheus's URL as the daemon shows it (no credentials). */
  prometheus: string | null = null;
  doc: FleetDoc | null = null;
  /** Why the latest request failed (Prometheus unreachable...), null after a success. */
  error: string | null = null;
  /** Client time (ms) of the latest answer, success or failure; 0 before any. */
  answeredAt = 0;
  need: number | null = null;

  private active = false;
  private timer: unknown = null;
  private seq = 0;
  private subs = new Set<() => void>();

  constructor(private readonly deps: FleetDeps) {}

  subscribe(fn: () => void): () => void {
    this.subs.add(fn);
    return () => this.subs.delete(fn);
  }

  private changed(): void {
    for (const fn of [...this.subs]) fn();
  }

  /** Reads /api/config: the fleet view is on when the daemon names a Prometheus. */
  async loadConfig(): Promise<void> {
    let c: { prometheus?: string | null };
    try {
      c = await this.deps.getJson<{ prometheus?: string | null }>('api/config');
    } catch {
      return; // unknown still: the page asks /api/fleet when opened and learns it there
    }
    this.setConfig(c);
  }

  /** The daemon's /api/config, read by whoever reads it (the app does, after each reconnect
   * and a token change). */
  setConfig(c: { prometheus?: string | null }): void {
    const prometheus = c.prometheus ?? null;
    const state: FleetState = prometheus ? 'on' : 'off';
    if (prometheus === this.prometheus && state === this.state) return;
    this.prometheus = prometheus;
    this.state = state;
    this.changed();
    if (this.active) void this.refresh();
  }

  /** The page is shown (polls start at once) or left (polls stop). */
  setActive(on: boolean): void {
    if (on === this.active) return;
    this.active = on;
    if (on) void this.refresh();
    else this.stopTimer();
  }

  /** The GPUs a job needs (null: no choice); asks again at once. */
  setNeed(n: number | null): void {
    if (n === this.need) return;
    this.need = n;
    this.changed();
    if (this.active) void this.refresh();
  }

  private stopTimer(): void {
    if (this.timer !== null) this.deps.clearTimer(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    this.stopTimer();
    if (!this.active || this.state === 'off') return;
    this.timer = this.deps.setTimer(() => {
      this.timer = null;
      if (this.deps.hidden()) this.schedule();
      else void this.refresh();
    }, POLL_MS);
  }

  /** One request; an answer to an older request (another `need`) is dropped. */
  async refresh(): Promise<void> {
    if (this.state === 'off') return;
    const seq = ++this.seq;
    const need = this.need;
    try {
      const doc = await this.deps.getJson<FleetDoc>(fleetPath(need));
      if (seq !== this.seq) return;
      this.doc = doc;
      this.error = null;
      this.state = 'on';
      this.prometheus = doc.prometheus;
    } catch (e) {
      if (seq !== this.seq) return;
      if (e instanceof HttpError && e.status === 404) {
        this.state = 'off';
        this.doc = null;
        this.error = null;
      } else {
        // 502/504: Prometheus failed; the last good answer stays, marked as old by the error.
        this.error = e instanceof Error ? e.message : String(e);
      }
    }
    this.answeredAt = this.deps.now();
    this.changed();
    this.schedule();
  }
}
