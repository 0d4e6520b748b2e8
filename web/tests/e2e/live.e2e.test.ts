// Browser test of the live job page and the benchmark result's charts, against the real daemon
// (--token, one simulated GPU) and the fake OpenAI server: a job queued behind a lease that
// `gpumon run` holds is followed over WS /ws/benchmarks from waiting for GPUs to done without
// one poll of the REST API while the stream is up, with the leased GPU's charts; its result
// draws one dot per concurrency, saves a chart as PNG and downloads the HTML report. States
// the daemon cannot reach here (a container loading, then failing with its output) are played
// by a stand-in for the stream (Playwright's routeWebSocket), as is a stream that is down.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FAKE_OPENAI, GPUMON, launch, sleep, startDaemon, stopDaemon, waitFor } from './helpers';
import type { Daemon } from './helpers';

const work = mkdtempSync(join(tmpdir(), 'gpumon-web-live-'));
const TOKEN = 'live-token';
const LEASES = join(work, 'leases');
const AUTH = { Authorization: `Bearer ${TOKEN}` };

let daemon: Daemon;
let server: ChildProcess;
let serverUrl = '';
let ctx: BrowserContext;
let page: Page;
let benchmarkId = '';
const pageErrors: string[] = [];
const procs: ChildProcess[] = [];

async function submit(body: Record<string, unknown>): Promise<string> {
  const r = await fetch(`${daemon.base}api/benchmarks`, {
    method: 'POST',
    headers: { ...AUTH, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(202);
  return ((await r.json()) as { id: string }).id;
}

/** GETs of one job's REST address the page makes, counted from now. */
function countJobGets(p: Page, id: string): { n: number } {
  const c = { n: 0 };
  p.on('request', (r) => {
    if (r.method() === 'GET' && new URL(r.url()).pathname === `/api/benchmarks/jobs/${id}`) c.n++;
  });
  return c;
}

beforeAll(async () => {
  server = spawn(FAKE_OPENAI, ['--port-file', join(work, 'openai.port'), '--ttft-ms', '15', '--itl-ms', '8'], { stdio: 'ignore' });
  const port = await waitFor('the fake OpenAI server', () =>
    existsSync(join(work, 'openai.port')) ? Number(readFileSync(join(work, 'openai.port'), 'utf8')) || 0 : 0,
  );
  serverUrl = `http://127.0.0.1:${port}`;
  daemon = await startDaemon(work, ['--simulate', '1', '--db', join(work, 'gpumon.db'), '--token', TOKEN, '--poll-interval', '250'], 0, {
    GPU_MONITOR_LEASE_DIR: LEASES,
  });
  ctx = await launch(join(work, 'profile'));
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on('pageerror', (e) => pageErrors.push(e.message));
});

afterAll(async () => {
  await ctx?.close();
  for (const p of procs) p.kill('SIGTERM');
  await stopDaemon(daemon);
  server?.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
});

describe('the live job page', () => {
  it('follows a job from waiting for GPUs to done over the WebSocket, never polling while it is up', async () => {
    // `gpumon run` holds the only GPU: the job waits for it.
    const holder = spawn(GPUMON, ['run', '--simulate', '1', '--lease-dir', LEASES, '--count', '1', '--no-db', '-q', '--', 'sh', '-c', 'echo held; read x'], {
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    procs.push(holder);
    await new Promise<void>((resolve) => holder.stdout?.once('data', () => resolve()));
    const id = await submit({ url: serverUrl, concurrency: [1, 2, 4], requests: 12, output_tokens: 16, idle_seconds: 0, wait: '60s', label: 'live' });

    const gets = countJobGets(page, id);
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(new URL(ws.url()).pathname));
    await page.goto(`${daemon.base}#/benchmarks/jobs/${id}?token=${TOKEN}`);
    const state = page.locator('[data-field=job-state]');
    await waitFor('waiting for GPUs', async () => (await state.getAttribute('data-state')) === 'waiting_gpus');
    await waitFor('the stream live', async () => (await page.locator('[data-field=job-link]').getAttribute('data-link')) === 'live');
    expect(await page.locator('[data-action=cancel]').count()).toBe(1);
    expect(await page.locator('[data-step=waiting_gpus]').getAttribute('class')).toBe('now');

    // Every state the page shows from now on, recorded in the page as it changes.
    await page.evaluate(() => {
      const w = window as unknown as { seenStates: string[] };
      w.seenStates = [];
      const note = (): void => {
        const s = document.querySelector('[data-field=job-state]')?.getAttribute('data-state');
        if (s && w.seenStates[w.seenStates.length - 1] !== s) w.seenStates.push(s);
      };
      note();
      new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
    });
    holder.stdin?.end();
    await waitFor('the job running', async () => (await state.getAttribute('data-state')) === 'running', 30_000);
    const progress = page.locator('[data-field=job-progress]');
    await waitFor('live progress', async () => /requests/.test((await progress.textContent()) ?? ''));
    // The leased GPU's utilization and power, from the dashboard's GPU stream, beside the job's figures.
    await page.locator('figure[data-kind=job-gpu-utilization]').waitFor({ timeout: 15_000 });
    await page.locator('figure[data-kind=job-gpu-power]').waitFor();
    expect(await page.locator('figure[data-kind=job-gpu-power] figcaption').textContent()).toContain('GPU 0');
    await waitFor('the job done', async () => (await state.getAttribute('data-state')) === 'done', 60_000);
    const seen = await page.evaluate(() => (window as unknown as { seenStates: string[] }).seenStates);
    expect(seen[0]).toBe('waiting_gpus');
    expect(seen).toContain('running');
    expect(seen[seen.length - 1]).toBe('done');
    expect(await page.locator('[data-field=job-charts] figure[data-kind=job-ttft]').count()).toBe(1);
    // Its updates came from the stream: the page asked the REST API once, when it opened.
    expect(sockets).toContain('/ws/benchmarks');
    expect(gets.n).toBe(1);
    expect(await page.locator('[data-action=cancel]').count()).toBe(0);
    const result = page.locator('[data-action=result]');
    benchmarkId = ((await result.getAttribute('href')) ?? '').replace(/^#\/benchmarks\//, '');
    expect(benchmarkId).toMatch(/^\d{8}-/);
    expect(pageErrors).toEqual([]);
  });

  it('shows a failed job with its reason, straight from the daemon', async () => {
    const id = await submit({ url: 'http://127.0.0.1:1', requests: 2, idle_seconds: 0 });
    await page.goto(`${daemon.base}#/benchmarks/jobs/${id}?token=${TOKEN}`);
    const state = page.locator('[data-field=job-state]');
    await waitFor('the job failed', async () => (await state.getAttribute('data-state')) === 'failed', 30_000);
    expect(((await page.locator('[data-field=job-reason]').textContent()) ?? '').length).toBeGreaterThan(0);
    expect(await page.locator('[data-action=cancel]').count()).toBe(0);
  });

  it("shows loading with its seconds, then a failure with the container's last lines", async () => {
    const id = '20261127-220000-c0ffee';
    const job = (state: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      id, url: `/api/benchmarks/jobs/${id}`, state, created: '2026-11-27T22:00:00Z', started: '2026-11-27T22:00:01Z', ended: null,
      state_seconds: 0, server: null, model: 'm', label: 'image job', gpus: [0], points: 1, points_done: 0, benchmark_id: null,
      reason: null, progress: null, image: 'registry.example/llm:1', logs: null, ...extra,
    });
    // A page of its own: the stand-in applies to the sockets of documents loaded after it.
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.route(`**/api/benchmarks/jobs/${id}`, (r) => r.fulfill({ json: job('starting') }));
    await page.routeWebSocket(/\/ws\/benchmarks/, async (ws) => {
      const send = (j: Record<string, unknown>): void => ws.send(JSON.stringify({ jobs: [j] }));
      send(job('starting'));
      await sleep(400);
      send(job('loading', { state_seconds: 37.2 }));
      await sleep(1200);
      send(job('failed', { ended: '2026-11-27T22:01:00Z', reason: 'the container exited (code 1) before it was ready', logs: ['loading weights', 'torch.OutOfMemoryError: CUDA out of memory'] }));
    });
    await page.goto(`${daemon.base}#/benchmarks/jobs/${id}?token=${TOKEN}`);
    const state = page.locator('[data-field=job-state]');
    await waitFor('loading', async () => (await state.getAttribute('data-state')) === 'loading');
    expect(await state.textContent()).toContain('loading the model (37 s)');
    expect(await state.textContent()).toContain('registry.example/llm:1');
    expect(await page.locator('[data-action=cancel]').count()).toBe(1);
    await waitFor('failed', async () => (await state.getAttribute('data-state')) === 'failed');
    expect(await page.locator('[data-field=job-reason]').textContent()).toContain('exited (code 1)');
    const log = page.locator('pre[data-field=job-log]');
    expect(await log.isVisible()).toBe(true);
    expect(await log.textContent()).toBe('loading weights\ntorch.OutOfMemoryError: CUDA out of memory');
    expect(await page.locator('[data-action=cancel]').count()).toBe(0);
    await page.close();
  });

  it('asks the REST API every second while the stream is down', async () => {
    const id = '20261127-220500-0ff11e';
    const body = {
      id, url: '', state: 'running', created: '', started: null, ended: null, state_seconds: 1, server: 'http://x', model: null, label: null,
      gpus: [], points: 2, points_done: 0, benchmark_id: null, reason: null,
      progress: { point: 1, points: 2, load: 'concurrency 1', requests_done: 3, requests_total: 10, elapsed_s: 1, ttft_p50_ms: 5, ttft_p99_ms: 9, output_tokens_per_s: 50 },
    };
    const page = await ctx.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.route(`**/api/benchmarks/jobs/${id}`, (r) => r.fulfill({ json: body }));
    // Every attempt at the stream is closed at once: it backs off and stays down.
    await page.routeWebSocket(/\/ws\/benchmarks/, (ws) => ws.close());
    const gets = countJobGets(page, id);
    await page.goto(`${daemon.base}#/benchmarks/jobs/${id}?token=${TOKEN}`);
    await waitFor('polling', async () => (await page.locator('[data-field=job-link]').getAttribute('data-polling')) === 'yes');
    await waitFor('three GETs', () => gets.n >= 3, 10_000);
    expect(await page.locator('[data-field=job-state]').textContent()).toContain('running point 1 of 2 (concurrency 1)');
    await page.close();
  });
});

describe("the benchmark's charts", () => {
  it('draws one dot per concurrency, saves a chart as PNG and downloads the report', async () => {
    expect(benchmarkId).not.toBe('');
    const fresh = await ctx.newPage();
    await fresh.goto(`${daemon.base}#/benchmarks/${benchmarkId}?token=${TOKEN}`);
    const sweep = fresh.locator('figure[data-kind=sweep-throughput]');
    await sweep.waitFor();
    expect(await sweep.getAttribute('data-points')).toBe('3');
    expect(await sweep.getAttribute('data-x')).toBe('1,2,4');
    const latency = fresh.locator('figure[data-kind=sweep-latency]');
    expect(await latency.getAttribute('data-points')).toBe('3');
    expect(await latency.getAttribute('data-lines')).toBe('4');
    expect(await fresh.locator('figure[data-kind=latency-throughput]').getAttribute('data-points')).toBe('3');
    // A ladder line per point, over p50, p90, p95, p99.
    const ladder = fresh.locator('figure[data-kind=ladder-ttft_ms]');
    expect([await ladder.getAttribute('data-lines'), await ladder.getAttribute('data-x')]).toEqual(['3', '50,90,95,99']);
    // Drawn: the y axis reaches past the largest throughput.
    await waitFor('the sweep drawn', async () => Number(await sweep.getAttribute('data-y-max')) > 0);

    const [png] = await Promise.all([fresh.waitForEvent('download'), sweep.locator('xpath=..').locator('[data-action=png]').click()]);
    expect(png.suggestedFilename()).toBe(`gpumon-${benchmarkId}-sweep-throughput.png`);
    const bytes = readFileSync((await png.path()) as string);
    expect([...bytes.subarray(1, 4)].map((c) => String.fromCharCode(c)).join('')).toBe('PNG');

    const report = fresh.locator('[data-action=report]');
    const link = (await report.getAttribute('href')) ?? '';
    expect(new URL(link).pathname).toBe(`/api/benchmarks/${benchmarkId}/report.html`);
    const r = await fetch(link, { headers: AUTH });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/text\/html/);
    const [dl] = await Promise.all([fresh.waitForEvent('download'), report.click()]);
    expect(readFileSync((await dl.path()) as string, 'utf8')).toMatch(/<html/i);
    await fresh.close();
    expect(pageErrors).toEqual([]);
  });
});
