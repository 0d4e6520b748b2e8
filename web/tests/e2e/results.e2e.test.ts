// Browser test of the benchmark results and the form's extras, over a store filled by the real
// `gpumon bench` against the fake OpenAI server: a chart saved as SVG is an <svg> drawing, an
// audited run shows its verdict beside each point's validity, the compare page draws one line per
// compared run, and the "New benchmark" form restores a kept configuration, says why it cannot
// start images on a daemon without a container engine, and offers an engine's local images.

import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { fillStore, GPUMON, launch, startDaemon, stopDaemon, waitFor } from './helpers';
import type { Daemon, Stored } from './helpers';

const work = mkdtempSync(join(tmpdir(), 'gpumon-web-results-'));
const db = join(work, 'gpumon.db');

let daemon: Daemon;
let stored: Stored;
let ctx: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  stored = await fillStore(work, db, 0.6);
  daemon = await startDaemon(work, ['--simulate', '1', '--db', db], 0, { GPU_MONITOR_LEASE_DIR: join(work, 'leases') });
  ctx = await launch(join(work, 'profile'));
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on('pageerror', (e) => pageErrors.push(e.message));
}, 120_000);

afterAll(async () => {
  await ctx?.close();
  await stopDaemon(daemon);
  rmSync(work, { recursive: true, force: true });
});

describe('a benchmark result', () => {
  it('saves a sweep chart as an SVG drawing and draws tokens per joule', async () => {
    const id = stored.benches[0] as string;
    await page.goto(`${daemon.base}#/benchmarks/${id}`);
    const sweep = page.locator('figure[data-kind=sweep-throughput]');
    await sweep.waitFor();
    const [dl] = await Promise.all([page.waitForEvent('download'), sweep.locator('xpath=..').locator('[data-action=svg]').click()]);
    expect(dl.suggestedFilename()).toBe(`gpumon-${id}-sweep-throughput.svg`);
    const svg = readFileSync((await dl.path()) as string, 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    // The browser parses it as an SVG document: one line through both points, two dots.
    const parsed = await page.evaluate((text) => {
      const d = new DOMParser().parseFromString(text, 'image/svg+xml');
      return {
        root: d.documentElement.nodeName,
        error: d.querySelector('parsererror') !== null,
        lines: d.querySelectorAll('polyline').length,
        dots: d.querySelectorAll('circle').length,
      };
    }, svg);
    expect(parsed).toEqual({ root: 'svg', error: false, lines: 1, dots: 2 });
    // Simulated GPUs have power, so each point has tokens per joule: its curve is drawn.
    expect(await page.locator('figure[data-kind=sweep-tokens-per-joule]').getAttribute('data-points')).toBe('2');
  });

  it("shows an audited run's verdict beside each point's validity, and what changed", async () => {
    const id = stored.benches[1] as string;
    const doc = (await (await fetch(`${daemon.base}api/benchmarks/${id}`)).json()) as Record<string, unknown>;
    const audited = {
      ...doc,
      audit: { verdict: 'changed', changes: [{ what: 'clocks.max', gpu: 0, before: 1980, after: 1755 }] },
    };
    await page.route(`**/api/benchmarks/${id}`, (r) => r.fulfill({ json: audited }));
    await page.goto(`${daemon.base}#/benchmarks/${id}`);
    const badges = page.locator('[data-field=points-table] [data-field=audit]');
    await waitFor('the audit badges', async () => (await badges.count()) === 2);
    expect(await badges.first().getAttribute('data-verdict')).toBe('changed');
    expect(await page.locator('[data-field=audit-changes]').textContent()).toContain('clocks.max GPU 0: 1980 \u2192 1755');
    await page.unroute(`**/api/benchmarks/${id}`);
  });
});

describe('the compare page', () => {
  it('draws the sweeps of the compared runs, one line per run', async () => {
    const [a, b] = stored.benches as [string, string];
    await page.goto(`${daemon.base}#/benchmarks/compare?ids=${a},${b}`);
    const card = page.locator('[data-field=compare-sweep]');
    await card.waitFor();
    const tput = card.locator('figure[data-kind=compare-throughput]');
    expect(await tput.getAttribute('data-lines')).toBe('2');
    expect(await tput.getAttribute('data-x')).toBe('1,4');
    expect(await card.locator('figure[data-kind=compare-ttft-p99]').getAttribute('data-lines')).toBe('2');
    expect(await tput.locator('figcaption .lg').allTextContents()).toEqual(['sweep A', 'sweep B']);
    await waitFor('the curves drawn', async () => Number(await tput.getAttribute('data-y-max')) > 0);
  });
});

describe('the New benchmark form', () => {
  it('restores a kept configuration with one click, and clears them', async () => {
    await page.goto(`${daemon.base}#/benchmarks`);
    await page.evaluate(() => {
      const f = (url: string, label: string, concurrency: string) => ({
        mode: 'url', url, image: '', model: '', concurrency, requests: '30', inputTokens: '64', outputTokens: '16', gpus: '1', label, snapshot: false,
      });
      localStorage.setItem('gpumon.bench.forms', JSON.stringify([f('http://a:8000', 'newest', '1'), { ...f('http://b:9000', 'older', '2,4'), snapshot: true }]));
    });
    await page.goto(`${daemon.base}#/benchmarks/new`);
    const form = page.locator('[data-field=job-form]');
    await form.waitFor();
    // The newest fills the form; the older one is a click away.
    expect(await form.locator('input[name=url]').inputValue()).toBe('http://a:8000');
    const kept = page.locator('[data-field=form-history] [data-action=restore]');
    expect(await kept.count()).toBe(2);
    await kept.nth(1).click();
    expect(await form.locator('input[name=url]').inputValue()).toBe('http://b:9000');
    expect(await form.locator('input[name=concurrency]').inputValue()).toBe('2,4');
    expect(await form.locator('input[name=label]').inputValue()).toBe('older');
    expect(await form.locator('input[name=snapshot]').isChecked()).toBe(true);
    await page.locator('[data-action=clear-history]').click();
    await waitFor('the list gone', async () => (await page.locator('[data-field=form-history]').count()) === 0);
    expect(await page.evaluate(() => localStorage.getItem('gpumon.bench.forms'))).toBeNull();
  });

  it('says how many GPUs are free now, and follows a lease taken while it is open', async () => {
    await page.goto(`${daemon.base}#/benchmarks/new`);
    const hint = page.locator('[data-field=gpus-free]');
    await waitFor('1 of 1 free', async () => /1 of 1 free now/.test((await hint.textContent()) ?? ''));
    // `gpumon run` leases the daemon's one GPU in the daemon's lease directory.
    const held = spawn(GPUMON, ['run', '--simulate', '1', '--no-db', '-q', '--wait', '0', '--lease-dir', join(work, 'leases'), '--', 'sleep', '30'], {
      stdio: 'ignore',
    });
    try {
      await waitFor('0 of 1 free', async () => /0 of 1 free now/.test((await hint.textContent()) ?? ''), 15_000);
    } finally {
      held.kill('SIGTERM');
    }
    await waitFor('free again', async () => /1 of 1 free now/.test((await hint.textContent()) ?? ''), 15_000);
  });

  it('disables the image mode, with the reason, on a daemon without a container engine', async () => {
    await page.goto(`${daemon.base}#/benchmarks/new`);
    const off = page.locator('[data-field=image-off]');
    await off.waitFor();
    expect(await off.textContent()).toContain('--docker');
    expect(await page.locator('input[name=mode][value=image]').isDisabled()).toBe(true);
    expect(await page.locator('input[name=url]').count()).toBe(1);
    expect(pageErrors).toEqual([]);
  });
});

describe('the New benchmark form on a daemon that may start containers', () => {
  let withDocker: Daemon;
  let engine: Server | null = null;
  afterAll(async () => {
    await stopDaemon(withDocker);
    await new Promise((done) => (engine ? engine.close(done) : done(undefined)));
  });

  it('shows the allowed images, offers the local ones and sends the image and the audit', async () => {
    // An engine that only lists its images (Docker Engine API): no job reaches it here.
    const sock = join(work, 'engine.sock');
    const local = [
      { Id: 'sha256:a', RepoTags: ['nvcr.io/nim/meta/llama-3.1-8b-instruct:1.0'], Size: 9e9, Created: 1700000000 },
      { Id: 'sha256:b', RepoTags: ['nvcr.io/nim/mistralai/mistral-7b-instruct-v0.3:latest'], Size: 8e9, Created: 1700000001 },
      { Id: 'sha256:c', RepoTags: ['docker.io/library/ubuntu:24.04'], Size: 1e8, Created: 1700000002 },
    ];
    engine = createServer((req, res) => {
      const ok = req.url === '/v1.41/images/json';
      res.writeHead(ok ? 200 : 404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(ok ? local : { message: 'not faked' }));
    });
    await new Promise((done) => engine?.listen(sock, () => done(undefined)));
    withDocker = await startDaemon(work, ['--simulate', '1', '--db', 'none', '--docker', sock, '--allow-image', 'nvcr.io/nim/*'], 0, {
      GPU_MONITOR_LEASE_DIR: join(work, 'leases'),
    });
    let body: Record<string, unknown> | null = null;
    await page.route('**/api/benchmarks', async (r) => {
      if (r.request().method() !== 'POST') return r.fallback();
      body = r.request().postDataJSON() as Record<string, unknown>;
      return r.fulfill({ status: 400, json: { error: 'requests: refused by the test', field: 'requests' } });
    });
    await page.goto(`${withDocker.base}#/benchmarks/new`);
    const image = page.locator('input[name=mode][value=image]');
    await waitFor('the image mode enabled', async () => (await image.count()) === 1 && !(await image.isDisabled()));
    await image.check();
    expect(await page.locator('[data-field=allow-image]').textContent()).toContain('nvcr.io/nim/*');
    // The local images the allow list admits, sorted, each NIM named by its model.
    const options = page.locator('#job-images option');
    await waitFor('the local images listed', async () => (await options.count()) === 2);
    expect(await options.evaluateAll((os) => os.map((o) => [(o as HTMLOptionElement).value, o.getAttribute('data-model')]))).toEqual([
      ['nvcr.io/nim/meta/llama-3.1-8b-instruct:1.0', 'meta/llama-3.1-8b-instruct'],
      ['nvcr.io/nim/mistralai/mistral-7b-instruct-v0.3:latest', 'mistralai/mistral-7b-instruct-v0.3'],
    ]);
    expect(await options.first().getAttribute('label')).toContain('NIM meta/llama-3.1-8b-instruct');
    expect(await page.locator('input[name=image]').getAttribute('list')).toBe('job-images');
    expect(await page.locator('[data-field=local-images-note]').textContent()).toContain('2 local images admitted');
    await page.locator('input[name=image]').fill('nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3');
    await page.locator('input[name=snapshot]').check();
    await page.locator('[data-action=start]').click();
    await page.locator('[data-field=job-error]').waitFor();
    // A tag the engine does not have is typed by hand: the job pulls it.
    expect(body).toMatchObject({ image: 'nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3', snapshot: true, pull: true });
    expect(body !== null && 'url' in (body as object)).toBe(false);
    await page.unroute('**/api/benchmarks');
    expect(pageErrors).toEqual([]);
  });
});
