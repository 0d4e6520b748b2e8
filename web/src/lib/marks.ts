// Sessions and benchmarks that ran within a chart's time window, as bands on the GPU page's
// charts: from GET /api/sessions and /api/benchmarks (their start and duration). No DOM here.

import type { BenchBrief } from './bench';
import type { SessionRow } from './sessions';
import { runPath, runTitle } from './sessions';

export interface RunMark {
  id: string;
  kind: 'session' | 'benchmark';
  label: string;
  /** Epoch seconds; a run still going ends now. */
  start: number;
  end: number;
  path: string;
}

/**
 * The runs that overlap [x0, x1] (epoch seconds), oldest first: sessions that watched this GPU
 * (or do not say which they watched), and benchmarks. A run without a parseable start is left
 * out; one without a duration yet ends at `now`, clipped to the window.
 */
export function runMarks(
  sessions: readonly SessionRow[],
  benches: readonly BenchBrief[],
  gpu: number,
  x0: number,
  x1: number,
  now: number,
): RunMark[] {
  const out: RunMark[] = [];
  const add = (id: string, kind: RunMark['kind'], label: string, startedAt: string, dur: number | null | undefined, path: string) => {
    const start = Date.parse(startedAt) / 1000;
    if (!Number.isFinite(start)) return;
    const end = dur !== null && dur !== undefined && Number.isFinite(dur) ? start + dur : now;
    if (end < x0 || start > x1) return;
    out.push({ id, kind, label, start, end: Math.max(end, start), path });
  };
  for (const s of sessions) {
    if (s.kind === 'bench') continue; // listed with the benchmarks
    if (s.gpus && s.gpus.length > 0 && !s.gpus.some((g) => g.index === gpu)) continue;
    // A session still recording goes on to now, whatever duration it had when listed.
    add(s.id, 'session', runTitle(s), s.started_at, s.status === 'running' ? null : s.monitoring_duration_seconds, runPath(s));
  }
  for (const b of benches) add(b.id, 'benchmark', runTitle(b), b.started_at, b.duration_seconds, `/benchmarks/${b.id}`);
  return out.sort((a, b) => a.start - b.start);
}
