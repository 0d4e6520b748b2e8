// The "New benchmark" form's body (gpumon bench's long options, '_' for '-'), the states in
// words, and POST with a JSON body carrying the token.
import { describe, expect, it } from 'vitest';

import { Api } from '../../src/lib/api';
import { makeEndpoint } from '../../src/lib/endpoint';
import type { Job } from '../../src/lib/jobs';
import { EMPTY_FORM, finished, jobBody, stateText } from '../../src/lib/jobs';

describe('jobBody', () => {
  it('sends lists and numbers as the daemon reads them, and leaves empty fields out', () => {
    expect(
      jobBody({ ...EMPTY_FORM, url: ' http://h:8000 ', concurrency: '1, 8,32', requests: '500', model: '', label: 'nightly', gpus: '2' }),
    ).toEqual({ url: 'http://h:8000', concurrency: [1, 8, 32], requests: 500, input_tokens: 128, output_tokens: 128, count: 2, label: 'nightly' });
    // What is not a whole number goes as typed, for the daemon to name.
    expect(jobBody({ ...EMPTY_FORM, url: 'u', concurrency: '1,x', requests: 'many', inputTokens: '', outputTokens: '', gpus: '' })).toEqual({
      url: 'u',
      concurrency: [1, 'x'],
      requests: 'many',
    });
  });
});

describe('states', () => {
  const base: Job = {
    id: 'a', url: '', state: 'queued', created: '', started: null, ended: null, state_seconds: 12.4, server: null, model: null,
    label: null, gpus: [], points: 2, points_done: 0, benchmark_id: null, reason: null, progress: null,
  };
  it('says what a job waits for or runs', () => {
    expect(stateText({ ...base, state: 'waiting_gpus' })).toBe('waiting for GPUs (12 s)');
    expect(
      stateText({
        ...base,
        state: 'running',
        progress: { point: 2, points: 3, load: 'concurrency 8', requests_done: 1, requests_total: 9, elapsed_s: 1, ttft_p50_ms: 1, ttft_p99_ms: 2, output_tokens_per_s: 3 },
      }),
    ).toBe('running point 2 of 3 (concurrency 8)');
    expect(finished({ ...base, state: 'cancelled' })).toBe(true);
    expect(finished({ ...base, state: 'running' })).toBe(false);
  });
});

describe('Api.postJson', () => {
  it('posts JSON with the token', async () => {
    const seen: RequestInit[] = [];
    const api = new Api(
      () => makeEndpoint('http://h/', 'T'),
      () => undefined,
      async (_url, init) => {
        seen.push(init);
        return new Response('{"id":"x"}', { status: 202 });
      },
    );
    expect(await api.postJson('api/benchmarks', { url: 'u' })).toEqual({ id: 'x' });
    const h = seen[0]?.headers as Record<string, string>;
    expect([seen[0]?.method, seen[0]?.body, h['Content-Type'], h['Authorization']]).toEqual(['POST', '{"url":"u"}', 'application/json', 'Bearer T']);
  });
});
