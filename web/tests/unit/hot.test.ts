// The overview's summary row, the colouring of values near a GPU's own limits, names kept
// whole, what "Health n/a" lacks, the runs marked on the GPU page and the charts' shared zoom.
import { describe, expect, it } from 'vitest';

import { ChartGroup } from '../../src/lib/chartsync';
import { healthUnreported } from '../../src/lib/format';
import { runMarks } from '../../src/lib/marks';
import { fleetSummary, powerHot, splitSimulated, tempHot } from '../../src/lib/overview';
import type { BenchBrief } from '../../src/lib/bench';
import type { SessionRow } from '../../src/lib/sessions';
import type { Gpu, GpuHealth } from '../../src/lib/types';

function gpu(index: number, util: number | null, temp: number | null, draw: number | null, limit: number | null, lost = false): Gpu {
  return {
    index,
    name: 'NVIDIA H100 80GB HBM3',
    lost,
    utilization: { gpu: util },
    temperature_c: temp,
    power: { draw_w: draw, limit_w: limit },
  } as unknown as Gpu;
}

describe('summary and hot values', () => {
  it('adds up what the GPUs report, leaving out absent readings and lost GPUs', () => {
    const s = fleetSummary([gpu(0, 90, 70, 600, 700), gpu(1, 2, 40, 80, 700), gpu(2, null, null, null, null), gpu(3, 50, 99, 500, 700, true)]);
    expect(s.gpus).toBe(4);
    expect(s.powerW).toBe(680);
    expect(s.powerLimitW).toBe(1400);
    expect(s.utilMean).toBe(46);
    expect(s.idle).toBe(1);
    expect(s.utilReported).toBe(2);
    expect(s.hottest).toEqual({ index: 0, temp: 70 });
    const none = fleetSummary([gpu(0, null, null, null, null)]);
    expect([none.powerW, none.utilMean, none.hottest]).toEqual([null, null, null]);
  });

  it("colours temperature against the GPU's slowdown threshold or its T.Limit, else not at all", () => {
    const g = (t: number | null, slow?: number | null, tlimit?: number | null) =>
      ({ lost: false, temperature_c: t, temperature_slowdown_c: slow, temperature_tlimit_c: tlimit }) as Gpu;
    expect(tempHot(g(86, 88)).level).toBe('hot');
    expect(tempHot(g(80, 88)).level).toBe('warn');
    expect(tempHot(g(70, 88)).level).toBe(null);
    expect(tempHot(g(70, 88)).text).toBe('slowdown at 88 °C (18 °C away)');
    expect(tempHot(g(80, null, 3)).level).toBe('hot');
    expect(tempHot(g(95, null, null))).toEqual({ level: null, text: null });
    expect(tempHot(g(null, 88)).level).toBe(null);
  });

  it('colours power at its enforced limit, and never without one', () => {
    const g = (w: number | null, cap: number | null) => ({ lost: false, power: { draw_w: w, limit_w: cap } }) as Gpu;
    expect(powerHot(g(699, 700)).level).toBe('hot');
    expect(powerHot(g(650, 700)).level).toBe('warn');
    expect(powerHot(g(300, 700)).level).toBe(null);
    expect(powerHot(g(699, null))).toEqual({ level: null, text: null });
  });

  it('keeps "(simulated)" apart from the name', () => {
    expect(splitSimulated('NVIDIA H100 80GB HBM3 (simulated)')).toEqual({ base: 'NVIDIA H100 80GB HBM3', simulated: true });
    expect(splitSimulated('NVIDIA A100')).toEqual({ base: 'NVIDIA A100', simulated: false });
  });

  it('names the health counters a GPU does not report', () => {
    expect(healthUnreported(undefined)).toHaveLength(5);
    const h = {
      xid: { last: null, count: 0, last_time: null },
      ecc: { mode: { current: null, pending: null }, corrected_volatile: null, uncorrected_volatile: null },
      retired_pages: { single_bit: null, double_bit: null, pending: null },
      remapped_rows: { correctable: null, uncorrectable: null, pending: null, failure: null },
      pcie_replay_counter: 0,
      degraded: false,
      reasons: null,
    } as GpuHealth;
    expect(healthUnreported(h)).toEqual(['ECC errors', 'retired pages', 'remapped rows']);
  });
});

describe('runs on the GPU page', () => {
  const at = (s: number) => new Date(s * 1000).toISOString();
  const session = (id: string, start: number, dur: number | null, gpus?: number[]): SessionRow =>
    ({ id, kind: 'record', label: id, status: 'done', started_at: at(start), monitoring_duration_seconds: dur, sample_count: 1, persisted: true,
      ...(gpus ? { gpus: gpus.map((index) => ({ index, name: null })) } : {}) }) as SessionRow;
  const bench = (id: string, start: number, dur: number | null): BenchBrief =>
    ({ id, label: null, started_at: at(start), duration_seconds: dur, url: null, model: null, api: null, points: [] }) as BenchBrief;

  it('marks the runs that overlap the window and watched this GPU, oldest first', () => {
    const marks = runMarks(
      [session('late', 1500, 100, [0]), session('other-gpu', 1200, 100, [1]), session('before', 100, 50), session('running', 1800, null), session('any', 1100, 10)],
      [bench('b1', 950, 100)],
      0,
      1000,
      2000,
      1900,
    );
    expect(marks.map((m) => [m.id, m.kind, m.start, m.end, m.path])).toEqual([
      ['b1', 'benchmark', 950, 1050, '/benchmarks/b1'],
      ['any', 'session', 1100, 1110, '/sessions/any'],
      ['late', 'session', 1500, 1600, '/sessions/late'],
      ['running', 'session', 1800, 1900, '/sessions/running'],
    ]);
    // A session still recording reaches now, whatever duration it was listed with.
    const live = { ...session('live', 1850, 5), status: 'running' };
    expect(runMarks([live], [], 0, 1000, 2000, 1900).map((m) => m.end)).toEqual([1900]);
  });
});

describe('chart group', () => {
  it('zooms every listener to an ordered span, ignores a click, and resets', () => {
    const g = new ChartGroup('k');
    const seen: (readonly number[] | null)[] = [];
    const off = g.onZoom((r) => seen.push(r));
    g.setZoom([20, 10]);
    g.setZoom([5, 5.5]); // under a second: a click, not a drag
    expect(g.zoom).toEqual([10, 20]);
    g.setZoom(null);
    g.setZoom(null);
    off();
    g.setZoom([1, 9]);
    expect(seen).toEqual([[10, 20], null]);
  });
});
