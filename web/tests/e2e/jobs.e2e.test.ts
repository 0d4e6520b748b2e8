// Browser test of benchmark jobs: the "New benchmark" form of a daemon started with --token,
// sent to the real daemon, which runs the job against the fake OpenAI server; the live page
// follows it to done, and its result link opens the stored benchmark.

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FAKE_OPENAI, launch, startDaemon, stopDaemon, waitFor } from './helpers';
import type { Daemon } from './helpers';

const work = mkdtempSync(join(tmpdir(), 'gpumon-web-jobs-'));
const TOKEN = 'jobs-token';

let daemon: Daemon;
let server: ChildProcess;
let serverUrl = '';
let ctx: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  server = spawn(FAKE_OPENAI, ['--port-file', join(work, 'openai.port'), '--ttft-ms', '4', '--itl-ms', '5'], { stdio: 'ignore' });
  const port = await waitFor('the fake OpenAI server', () =>
    existsSync(join(work, 'openai.port')) ? Number(readFileSync(join(work, 'openai.port'), 'utf8')) || 0 : 0,
  );
  serverUrl = `http://127.0.0.1:${port}`;
  daemon = await startDaemon(work, ['--simulate', '1', '--db', join(work, 'gpumon.db'), '--token', TOKEN], 0, {
    GPU_MONITOR_LEASE_DIR: join(work, 'leases'),
  });
  ctx = await launch(join(work, 'profile'));
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on('pageerror', (e) => pageErrors.push(e.message));
});

afterAll(async () => {
  await ctx?.close();
  await stopDaemon(daemon);
  server?.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
});

describe('benchmark jobs', () => {
  it('the form starts a job, the live page follows it to done, and its result opens', async () => {
    await page.goto(`${daemon.base}#token=${encodeURIComponent(TOKEN)}`);
    await page.locator('nav.nav a[data-nav="/benchmarks"]').click();
    await page.locator('[data-action=new-benchmark]').click();
    const form = page.locator('[data-field=job-form]');
    await form.waitFor();
    // How many GPUs are free now, from /api/allocation.
    await waitFor('the free GPUs', async () => /1 of 1 free now/.test((await form.textContent()) ?? ''));
    // A bad value is refused by the daemon naming its field.
    await form.locator('input[name=url]').fill(serverUrl);
    await form.locator('input[name=requests]').fill('0');
    await form.locator('[data-action=start]').click();
    const err = page.locator('[data-field=job-error]');
    await err.waitFor();
    expect(await err.getAttribute('data-error-field')).toBe('requests');
    await form.locator('input[name=requests]').fill('40');
    await form.locator('input[name=concurrency]').fill('1,2');
    await form.locator('input[name=outputTokens]').fill('20');
    await form.locator('input[name=label]').fill('from the form');
    await form.locator('[data-action=start]').click();
    await waitFor('the job page', async () => /^#\/benchmarks\/jobs\/\d{8}-/.test(await page.evaluate(() => location.hash)));
    const state = page.locator('[data-field=job-state]');
    await waitFor('the job to end', async () => (await state.getAttribute('data-state')) === 'done', 60_000);
    await page.locator('[data-action=result]').click();
    await waitFor('the result page', async () => /^#\/benchmarks\/\d{8}-/.test(await page.evaluate(() => location.hash)));
    await waitFor('the label on the result', async () => /from the form/.test((await page.locator('.page').textContent()) ?? ''));
    // The queue lists it as done.
    await page.goto(`${daemon.base}#/benchmarks/jobs`);
    await waitFor('the queue', async () => (await page.locator('tr[data-state=done]').count()) === 1);
    expect(pageErrors).toEqual([]);
  });
});
