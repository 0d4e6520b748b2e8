// The Benchmarks pages' logic: the CLI's load words, best figures, and which way a change is
// better.
import { describe, expect, it } from 'vitest';

import type { BenchCompare, BenchPointBrief } from '../../src/lib/bench';
import { allValid, best, changeVerdict, COMPARE_METRICS, comparedMetrics, fmtChange, fmtFig, loadLabel } from '../../src/lib/bench';

const pt = (o: Partial<BenchPointBrief>): BenchPointBrief => ({
  load: 'concurrency 1',
  concurrency: 1,
  request_rate: null,
  requests_per_s: null,
  output_tokens_per_s: null,
  ttft_p50_ms: null,
  ttft_p99_ms: null,
  tpot_p50_ms: null,
  e2e_p50_ms: null,
  goodput_requests_per_s: null,
  energy_j: null,
  output_tokens_per_joule: null,
  joules_per_request: null,
  valid: true,
  failed: 0,
  ...o,
});

const metric = (key: string) => COMPARE_METRICS.find((m) => m.key === key) as (typeof COMPARE_METRICS)[number];

describe('bench', () => {
  it('names loads as the CLI does', () => {
    expect(loadLabel({ concurrency: 8 })).toBe('concurrency 8');
    expect(loadLabel({ request_rate: 10 })).toBe('rate 10/s');
    expect(loadLabel({ request_rate: 2.5 })).toBe('rate 2.5/s');
    expect(loadLabel({ request_rate: 'inf' })).toBe('rate inf');
    expect(loadLabel({})).toBe('?');
  });

  it('finds the best figure, skipping absent ones', () => {
    const pts = [pt({ output_tokens_per_s: 10, ttft_p50_ms: 30 }), pt({ output_tokens_per_s: null, ttft_p50_ms: 20 }), pt({ output_tokens_per_s: 40 })];
    expect(best(pts, 'output_tokens_per_s')).toBe(40);
    expect(best(pts, 'ttft_p50_ms', true)).toBe(20);
    expect(best(pts, 'output_tokens_per_joule')).toBeNull();
    expect(fmtFig(null)).toBe('n/a');
    expect(fmtFig(3.14159, 3)).toBe('3.142');
  });

  it('says whether every point is valid', () => {
    expect(allValid([pt({}), pt({ valid: true })])).toBe(true);
    expect(allValid([pt({}), pt({ valid: false })])).toBe(false);
    expect(allValid([pt({ valid: null })])).toBeNull();
    expect(allValid([])).toBeNull();
  });

  it('judges changes by the direction that is better', () => {
    expect(changeVerdict(metric('output_tokens_per_s'), 5)).toBe('better');
    expect(changeVerdict(metric('output_tokens_per_s'), -5)).toBe('worse');
    expect(changeVerdict(metric('ttft_ms.p99'), 6.5)).toBe('worse');
    expect(changeVerdict(metric('ttft_ms.p99'), -6.5)).toBe('better');
    expect(changeVerdict(metric('output_tokens_per_joule'), 1)).toBe('better');
    expect(changeVerdict(metric('energy_j'), 1)).toBe('worse');
    expect(changeVerdict(metric('energy_j'), null)).toBe('same');
    expect(changeVerdict(metric('energy_j'), 0.01)).toBe('same');
    expect(fmtChange(6.48, false)).toBe('+6.5\u00a0%');
    expect(fmtChange(-0.25, false)).toBe('\u22120.3\u00a0%');
    expect(fmtChange(0, true)).toBe('');
    expect(fmtChange(null, false)).toBe('');
  });

  it('lists only the figures some benchmark has', () => {
    const c: BenchCompare = {
      benchmarks: [
        { id: 'a', label: null, url: null, model: null },
        { id: 'b', label: null, url: null, model: null },
      ],
      points: [
        {
          load: 'concurrency 1',
          values: { requests_per_s: [1, 2], goodput_requests_per_s: [null, null], 'ttft_ms.p99': [3, 4] },
          change_percent: { requests_per_s: [0, 100], goodput_requests_per_s: [null, null], 'ttft_ms.p99': [0, 33.3] },
        },
      ],
    };
    expect(comparedMetrics(c).map((m) => m.key)).toEqual(['requests_per_s', 'ttft_ms.p99']);
  });
});
