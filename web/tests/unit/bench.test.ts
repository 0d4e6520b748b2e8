// The Benchmarks pages' logic: the CLI's load words, best figures, and which way a change is
// better.
import { describe, expect, it } from 'vitest';

import type { BenchCompare, BenchDoc, BenchPoint, BenchPointBrief } from '../../src/lib/bench';
import {
  allValid,
  auditBadge,
  auditChanges,
  benchMatches,
  benchSettings,
  benchTimelineColumns,
  best,
  bestAt,
  changeVerdict,
  COMPARE_METRICS,
  comparedMetrics,
  fmtChange,
  fmtFig,
  invalidLines,
  loadLabel,
  serverShort,
  settingsDiffer,
  validitySummary,
} from '../../src/lib/bench';

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

const point = (over: Partial<BenchPoint>): BenchPoint => ({
  requests: 10,
  completed: 10,
  failed: 0,
  duration_s: 1,
  requests_per_s: 10,
  output_tokens_per_s: 100,
  ttft_ms: null,
  tpot_ms: null,
  itl_ms: null,
  e2e_ms: null,
  energy_j: null,
  output_tokens_per_joule: null,
  joules_per_request: null,
  valid: true,
  invalid_reasons: [],
  ...over,
});

describe('a benchmark page', () => {
  it('says the settings the run was asked for', () => {
    const doc: Pick<BenchDoc, 'config' | 'url' | 'api' | 'container'> = {
      url: 'http://127.0.0.1:40607',
      api: 'chat',
      config: { load: 'concurrency', concurrencies: [1, 8, 32], requests: 500, duration_s: null, warmup: 0, input_tokens: 128, output_tokens: 64, prompts: null, slo: { ttft_ms: 500 } },
      container: { image: 'nvcr.io/nim/meta/llama-3.1-8b-instruct:latest' },
    };
    expect(benchSettings(doc).map((x) => [x.label, x.value])).toEqual([
      ['Concurrency', '1, 8, 32'],
      ['Requests per point', '500'],
      ['Input tokens', '128'],
      ['Output tokens', '64'],
      ['Objectives', 'ttft 500 ms'],
      ['Server', 'http://127.0.0.1:40607 (chat)'],
      ['Image', 'nvcr.io/nim/meta/llama-3.1-8b-instruct:latest'],
    ]);
    const open = benchSettings({ url: null, api: null, config: { request_rates: [2, 'inf'], duration_s: 60, prompts: 'sharegpt.jsonl' } });
    expect(open.map((x) => x.value)).toEqual(['2, inf', '60 s', 'from sharegpt.jsonl']);
  });

  it('lists every reason of every invalid point in full', () => {
    const pts = [
      point({ concurrency: 1 }),
      point({ concurrency: 8, valid: false, invalid_reasons: ['foreign_process: pid 4242 (python other.py) on GPU 0', 'throttled: GPU 1 hw_slowdown'] }),
    ];
    expect(invalidLines(pts)).toEqual([
      { load: 'concurrency 8', reason: 'foreign_process: pid 4242 (python other.py) on GPU 0' },
      { load: 'concurrency 8', reason: 'throttled: GPU 1 hw_slowdown' },
    ]);
  });

  it("charts the GPUs over the run, points apart, absent values as gaps", () => {
    const doc = {
      started: '2026-11-26T09:00:00.000Z',
      points: [
        point({ concurrency: 1, gpu_timeline: { t_s: [2, 3], gpus: { '0': { power_draw_w: [300, 310] }, '2': { power_draw_w: [200, null] } } } }),
        point({ concurrency: 8, gpu_timeline: null }),
        point({ concurrency: 32, gpu_timeline: { t_s: [5], gpus: { '0': { power_draw_w: [600] } } } }),
      ],
    };
    const t0 = Date.parse(doc.started) / 1000;
    expect(benchTimelineColumns(doc, [0, 2], 'power_draw_w')).toEqual([
      [t0 + 2, t0 + 3, t0 + 4, t0 + 5],
      [300, 310, null, 600],
      [200, null, null, null],
    ]);
  });

  it('says which settings of compared benchmarks differ', () => {
    expect(settingsDiffer({ settings_differ: [] })).toEqual([]);
    expect(settingsDiffer({})).toEqual([]);
    expect(
      settingsDiffer({
        settings_differ: [
          { setting: 'requests', values: [500, 100] },
          { setting: 'server', values: ['http://a:8000', null] },
        ],
      }),
    ).toEqual(['requests per point: 500 / 100', 'server: http://a:8000 / —']);
  });
});

describe('the benchmarks list', () => {
  it('says which point a best figure is from', () => {
    const pts = [
      { ...pt({ output_tokens_per_s: 10, ttft_p50_ms: 30 }), load: 'concurrency 1' },
      { ...pt({ output_tokens_per_s: 40, ttft_p50_ms: 90 }), load: 'concurrency 8' },
      { ...pt({ output_tokens_per_s: null, ttft_p50_ms: null }), load: 'concurrency 32' },
    ];
    expect(bestAt(pts, 'ttft_p50_ms', true)).toEqual({ value: 30, load: 'concurrency 1' });
    expect(bestAt(pts, 'output_tokens_per_s')).toEqual({ value: 40, load: 'concurrency 8' });
    expect(bestAt([], 'output_tokens_per_s')).toEqual({ value: null, load: '' });
  });

  it('counts valid points rather than calling a run with a valid point invalid', () => {
    expect(validitySummary([{ valid: true }, { valid: false }, { valid: true }])).toEqual({ text: '2 of 3', state: 'some' });
    expect(validitySummary([{ valid: true }, { valid: true }])).toEqual({ text: 'all 2', state: 'all' });
    expect(validitySummary([{ valid: false }, { valid: false }])).toEqual({ text: 'none of 2', state: 'none' });
    expect(validitySummary([{ valid: true }])).toEqual({ text: 'yes', state: 'all' });
    expect(validitySummary([])).toEqual({ text: '—', state: 'unknown' });
  });

  it('names the server shortly and filters by label, model, server or id', () => {
    expect(serverShort('http://gpu7:8000')).toBe('gpu7:8000');
    expect(serverShort('https://nim.example.com/v1/')).toBe('nim.example.com/v1');
    expect(serverShort(null)).toBe('n/a');
    const b = { id: '20261126-091102-7c01aa', label: 'sweep', model: 'meta-llama/Llama-3.1-8B', url: 'http://gpu7:8000' };
    expect(benchMatches(b, '')).toBe(true);
    expect(benchMatches(b, 'LLAMA')).toBe(true);
    expect(benchMatches(b, 'gpu7')).toBe(true);
    expect(benchMatches(b, '7c01')).toBe(true);
    expect(benchMatches(b, 'vllm')).toBe(false);
  });
});

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

describe('auditBadge and auditChanges', () => {
  it('is nothing for a run not audited', () => {
    expect(auditBadge(undefined)).toBeNull();
    expect(auditBadge(null)).toBeNull();
    expect(auditChanges(undefined)).toEqual([]);
  });
  it('says unchanged, changed with the count, or unknown', () => {
    expect(auditBadge({ verdict: 'unchanged', changes: [] })).toEqual({ text: 'machine unchanged', state: 'ok' });
    const changed = {
      verdict: 'changed' as const,
      changes: [
        { what: 'clocks.max', gpu: 0, before: 1980, after: 1755 },
        { what: 'driver', gpu: null, before: '550.54', after: '550.90' },
      ],
    };
    expect(auditBadge(changed)).toEqual({ text: 'machine changed (2)', state: 'warn' });
    expect(auditChanges(changed)).toEqual(['clocks.max GPU 0: 1980 \u2192 1755', 'driver: 550.54 \u2192 550.90']);
    expect(auditBadge({ verdict: 'unknown', reason: 'no NVML' })?.state).toBe('unknown');
  });
});
