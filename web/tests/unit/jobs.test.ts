// The "New benchmark" form's body (gpumon bench's long options, '_' for '-'), the states in
// words, and POST with a JSON body carrying the token.
import { describe, expect, it } from 'vitest';

import { Api } from '../../src/lib/api';
import { makeEndpoint } from '../../src/lib/endpoint';
import type { Job } from '../../src/lib/jobs';
import { cancellable, EMPTY_FORM, finished, jobBody, jobInFrame, logText, shouldPoll, stateText } from '../../src/lib/jobs';

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

describe('every state the API has', () => {
  const base: Job = {
    id: 'j1', url: '', state: 'queued', created: '', started: null, ended: null, state_seconds: 41.6, server: null, model: null,
    label: null, gpus: [0], points: 2, points_done: 0, benchmark_id: null, reason: null, progress: null,
  };
  it('names each, with the seconds of a load and what a start does', () => {
    expect(stateText(base)).toBe('queued');
    expect(stateText({ ...base, state: 'starting' })).toBe('checking the server');
    expect(stateText({ ...base, state: 'starting', image: 'nim:1' })).toBe('starting the container');
    expect(stateText({ ...base, state: 'loading' })).toBe('loading the model (42 s)');
    expect(stateText({ ...base, state: 'running' })).toBe('running');
    expect(['done', 'failed', 'cancelled'].map((s) => stateText({ ...base, state: s as Job['state'] }))).toEqual(['done', 'failed', 'cancelled']);
  });
  it('offers cancel until the job ends', () => {
    for (const s of ['queued', 'waiting_gpus', 'starting', 'loading', 'running'] as const) expect(cancellable({ ...base, state: s })).toBe(true);
    for (const s of ['done', 'failed', 'cancelled'] as const) expect(cancellable({ ...base, state: s })).toBe(false);
  });
  it("gives a failed container's last lines as one text, none when absent", () => {
    expect(logText({ logs: ['loading weights', 'CUDA out of memory'] })).toBe('loading weights\nCUDA out of memory');
    expect(logText({ logs: [] })).toBeNull();
    expect(logText({ logs: null })).toBeNull();
    expect(logText({})).toBeNull();
  });
});

describe('jobInFrame', () => {
  it('finds the job in a /ws/benchmarks frame, null when not listed, undefined for other text', () => {
    const frame = JSON.stringify({ jobs: [{ id: 'a', state: 'done' }, { id: 'b', state: 'running' }] });
    expect(jobInFrame(frame, 'b')?.state).toBe('running');
    expect(jobInFrame(frame, 'c')).toBeNull();
    expect(jobInFrame('{"jobs":[]}', 'a')).toBeNull();
    expect(jobInFrame('not json', 'a')).toBeUndefined();
    expect(jobInFrame('{"gpus":[]}', 'a')).toBeUndefined();
  });
});

describe('shouldPoll', () => {
  const running = { state: 'running' as const };
  it('asks the REST API only while the stream is down and the job runs', () => {
    expect(shouldPoll(running, { kind: 'live' })).toBe(false);
    // The first connect is not a failure: its frames come within a sample.
    expect(shouldPoll(running, { kind: 'connecting', failures: 0 })).toBe(false);
    expect(shouldPoll(running, { kind: 'connecting', failures: 2 })).toBe(true);
    expect(shouldPoll(running, { kind: 'reconnecting', retryAt: 0, failures: 1 })).toBe(true);
    expect(shouldPoll({ state: 'done' }, { kind: 'reconnecting', retryAt: 0, failures: 1 })).toBe(false);
    expect(shouldPoll(null, { kind: 'reconnecting', retryAt: 0, failures: 1 })).toBe(true);
  });
});

describe('jobBody for an image and an audited run', () => {
  it('sends the image instead of the url, and snapshot only when asked', () => {
    const b = jobBody({ ...EMPTY_FORM, mode: 'image', url: 'http://ignored', image: ' nvcr.io/nim/x:1 ', snapshot: true });
    expect(b['image']).toBe('nvcr.io/nim/x:1');
    expect('url' in b).toBe(false);
    expect(b['snapshot']).toBe(true);
    expect('snapshot' in jobBody({ ...EMPTY_FORM, url: 'u' })).toBe(false);
  });
});
