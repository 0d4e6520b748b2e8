// A benchmark's sweep as chart columns: the load axis, figures over it, the latency-throughput
// curve and the percentile ladders.
import { describe, expect, it } from 'vitest';

import type { BenchPoint, Dist } from '../../src/lib/bench';
import { compareSweep, hasDist, ladderColumns, latencyThroughput, sweepAxis, sweepColumns } from '../../src/lib/sweep';

const dist = (p50: number, p99: number, p95?: number): Dist => ({
  mean: p50, min: p50 / 2, p50, p90: (p50 + p99) / 2, ...(p95 === undefined ? {} : { p95 }), p99, max: p99 * 1.1, count: 10,
});

const point = (o: Partial<BenchPoint>): BenchPoint => ({
  requests: 10, completed: 10, failed: 0, duration_s: 1, requests_per_s: 10, output_tokens_per_s: 100,
  ttft_ms: null, tpot_ms: null, itl_ms: null, e2e_ms: null, energy_j: null, output_tokens_per_joule: null, joules_per_request: null,
  valid: true, invalid_reasons: [], ...o,
});

describe('sweepAxis', () => {
  it('is the concurrency, logarithmic when it grows by factors', () => {
    const a = sweepAxis([point({ concurrency: 1 }), point({ concurrency: 8 }), point({ concurrency: 64 })]);
    expect([a.kind, a.xs, a.log, a.names]).toEqual(['concurrency', [1, 8, 64], true, null]);
    expect(sweepAxis([point({ concurrency: 1 }), point({ concurrency: 4 })]).log).toBe(false);
  });
  it('is the request rate, or the point rank named by its load when a rate is "inf"', () => {
    expect(sweepAxis([point({ request_rate: 2 }), point({ request_rate: 5 })]).kind).toBe('request_rate');
    const a = sweepAxis([point({ request_rate: 2 }), point({ request_rate: 'inf' })]);
    expect([a.kind, a.xs, [...(a.names ?? new Map()).values()]]).toEqual(['point', [1, 2], ['rate 2/s', 'rate inf']]);
  });
});

describe('sweepColumns', () => {
  it('gives one x per point, ascending, each figure beside its own x', () => {
    const pts = [point({ concurrency: 8, output_tokens_per_s: 800 }), point({ concurrency: 1, output_tokens_per_s: 100 })];
    expect(sweepColumns(pts, sweepAxis(pts), [(p) => p.output_tokens_per_s])).toEqual([[1, 8], [100, 800]]);
  });
});

describe('latencyThroughput', () => {
  it('pairs throughput with TTFT p99, by latency, leaving out points without both', () => {
    const pts = [
      point({ concurrency: 1, ttft_ms: dist(5, 9), output_tokens_per_s: 100 }),
      point({ concurrency: 8, ttft_ms: dist(7, 30), output_tokens_per_s: 700 }),
      point({ concurrency: 4, ttft_ms: dist(6, 12), output_tokens_per_s: 380 }),
      point({ concurrency: 16, ttft_ms: null, output_tokens_per_s: 900 }),
    ];
    const c = latencyThroughput(pts);
    expect(c.data).toEqual([[9, 12, 30], [100, 380, 700]]);
    expect(c.loads).toEqual(['concurrency 1', 'concurrency 4', 'concurrency 8']);
  });
});

describe('ladderColumns', () => {
  it('gives p50, p90, p95, p99 per point, null for a percentile the point lacks', () => {
    const pts = [point({ concurrency: 1, ttft_ms: dist(4, 8, 7) }), point({ concurrency: 2, ttft_ms: dist(10, 20) })];
    expect(ladderColumns(pts, 'ttft_ms')).toEqual([[50, 90, 95, 99], [4, 6, 7, 8], [10, 15, null, 20]]);
    expect(hasDist(pts, 'ttft_ms')).toBe(true);
    expect(hasDist(pts, 'itl_ms')).toBe(false);
  });
});

describe('compareSweep', () => {
  it('puts every run on the loads of all of them, null where a run has no such point', () => {
    const a = [point({ concurrency: 1, output_tokens_per_s: 100 }), point({ concurrency: 8, output_tokens_per_s: 700 })];
    const b = [point({ concurrency: 8, output_tokens_per_s: 650 }), point({ concurrency: 32, output_tokens_per_s: 900 })];
    const s = compareSweep([a, b], (p) => p.output_tokens_per_s);
    expect(s.axis.kind).toBe('concurrency');
    expect(s.data).toEqual([
      [1, 8, 32],
      [100, 700, null],
      [null, 650, 900],
    ]);
    expect(s.axis.log).toBe(true);
  });
  it('names the loads when the runs do not share a numeric axis', () => {
    const a = [point({ concurrency: 4, output_tokens_per_s: 1 })];
    const b = [point({ request_rate: 'inf', output_tokens_per_s: 2 })];
    const s = compareSweep([a, b], (p) => p.output_tokens_per_s);
    expect(s.axis.kind).toBe('point');
    expect([...(s.axis.names ?? new Map()).values()]).toEqual(['concurrency 4', 'rate inf']);
    expect(s.data).toEqual([
      [1, 2],
      [1, null],
      [null, 2],
    ]);
  });
});
