// Browser test of the Fleet page: the real `gpumon serve --simulate 2 --prometheus URL` from the
// build directory, URL being a small Prometheus in this test that answers the daemon's instant
// queries for four nodes (one of them this daemon, one down, one with an XID). Checks
// the link to the page appears only with --prometheus, the rows in select's order with their
// values and links, the choice for N GPUs, a failing Prometheus shown and recovered from, and
// the way back to the node's own GPUs. The real Prometheus is tested in tests/e2e/test_cluster.py.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BUILD = resolve(process.env.GM_BUILD_DIR ?? '../build');
const GPUMON = join(BUILD, 'gpumon');
const CHROMIUM = process.env.GM_CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOT = join(dirname(process.env.GM_WEB_SCREENSHOT ?? join(BUILD, 'web', 'dashboard.png')), 'fleet.png');

const work = mkdtempSync(join(tmpdir(), 'gpumon-fleet-e2e-'));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(what: string, fn: () => Promise<T> | T, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(100);
  }
}

// ---- a small Prometheus: the answers to the daemon's queries (src/core/fleet.c) --------------

interface Sample {
  metric: Record<string, string>;
  value: string;
}

let selfInstance = '127.0.0.1:0'; // node-a is the daemon under test: its link must open it
let failing = false;
const NOW_S = Date.now() / 1000;

/** One GPU's series as the daemon's two GPU queries get them: utilization aggregated to the
 * identity labels (no name), the other readings to name, instance, Hostname and gpu. */
function gpuSeries(inst: string, host: string, gpu: string, v: Record<string, number>): { ids: Sample[]; readings: Sample[] } {
  const ids: Sample[] = [];
  const readings: Sample[] = [];
  for (const [name, value] of Object.entries(v)) {
    if (name === 'GPU_UTIL')
      ids.push({
        metric: { instance: inst, gpu, UUID: `GPU-${host}-${gpu}`, modelName: 'NVIDIA H100 80GB HBM3', Hostname: host },
        value: String(value),
      });
    else
      readings.push({ metric: { __name__: `DCGM_FI_DEV_${name}`, instance: inst, Hostname: host, gpu }, value: String(value) });
  }
  return { ids, readings };
}

function busy(util: number): Record<string, number> {
  return { GPU_UTIL: util, FB_USED: 60000, FB_FREE: 21000, POWER_USAGE: 500, GPU_TEMP: 70, XID_ERRORS: 0 };
}
function idle(util: number): Record<string, number> {
  return { GPU_UTIL: util, FB_USED: 1, FB_FREE: 81000, POWER_USAGE: 70, GPU_TEMP: 31, XID_ERRORS: 0 };
}

function answer(query: string): Sample[] | null {
  const targets: [string, number][] = [
    [selfInstance, 1],
    ['127.0.0.1:9', 1],
    ['10.0.0.3:9400', 0],
    ['127.0.0.1:7', 1],
  ];
  if (query.startsWith('up{'))
    return targets.map(([instance, up]) => ({ metric: { __name__: 'up', instance, job: 'gpumon' }, value: String(up) }));
  if (query.startsWith('timestamp('))
    return targets.map(([instance]) => ({ metric: { instance, job: 'gpumon' }, value: String(NOW_S - 2) }));
  if (query.startsWith('count by (instance, Hostname)'))
    return [{ metric: { instance: '10.0.0.3:9400', Hostname: 'node-c' }, value: '2' }];
  const gpus = [
    gpuSeries(selfInstance, 'node-a', '0', busy(87)),
    gpuSeries(selfInstance, 'node-a', '1', idle(3)),
    gpuSeries('127.0.0.1:9', 'node-b', '0', idle(3)),
    gpuSeries('127.0.0.1:9', 'node-b', '1', idle(3)),
    gpuSeries('127.0.0.1:7', 'node-e', '0', busy(95)),
    gpuSeries('127.0.0.1:7', 'node-e', '1', { ...idle(10), XID_ERRORS: 79 }),
  ];
  if (query.startsWith('max by (instance, Hostname, gpu, UUID, modelName)')) return gpus.flatMap((g) => g.ids);
  if (query.startsWith('max by (__name__,')) return gpus.flatMap((g) => g.readings);
  return null;
}

const prom: Server = createServer((req, res) => {
  const u = new URL(req.url ?? '/', 'http://x');
  const q = u.searchParams.get('query') ?? '';
  const send = (status: number, body: unknown): void => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (failing) return send(503, { status: 'error', errorType: 'unavailable', error: 'TSDB is shutting down' });
  const result = u.pathname === '/api/v1/query' ? answer(q) : null;
  if (!result) return send(400, { status: 'error', errorType: 'bad_data', error: `unexpected query ${q}` });
  send(200, {
    status: 'success',
    data: { resultType: 'vector', result: result.map((s) => ({ metric: s.metric, value: [NOW_S, s.value] })) },
  });
});

// ---- daemons and the browser ----------------------------------------------------------------

interface Daemon {
  proc: ChildProcess;
  port: number;
  base: string;
}

let n = 0;
async function startDaemon(args: string[]): Promise<Daemon> {
  const portFile = join(work, `port-${n}`);
  const out = openSync(join(work, `daemon-${n++}.log`), 'w');
  const proc = spawn(GPUMON, ['serve', '--listen', '127.0.0.1:0', '--port-file', portFile, '--db', 'none', ...args], {
    stdio: ['ignore', out, out],
  });
  const port = await waitFor('the daemon port file', () => {
    if (proc.exitCode !== null) throw new Error(`gpumon serve exited with ${proc.exitCode}`);
    return existsSync(portFile) ? Number(readFileSync(portFile, 'utf8').trim()) || 0 : 0;
  });
  return { proc, port, base: `http://127.0.0.1:${port}/` };
}

async function stopDaemon(d: Daemon | null): Promise<void> {
  if (!d || d.proc.exitCode !== null || d.proc.signalCode !== null) return;
  const done = new Promise((r) => d.proc.once('exit', r));
  d.proc.kill('SIGTERM');
  await Promise.race([done, sleep(10_000)]);
}

let daemon: Daemon | null = null;
let plain: Daemon | null = null;
let ctx: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  if (!existsSync(GPUMON)) throw new Error(`no gpumon binary at ${GPUMON}: build it, or set GM_BUILD_DIR`);
  await new Promise<void>((r) => prom.listen(0, '127.0.0.1', r));
  const promUrl = `http://127.0.0.1:${(prom.address() as AddressInfo).port}`;
  daemon = await startDaemon(['--simulate', '2', '--hostname', 'node-a', '--prometheus', promUrl]);
  selfInstance = `127.0.0.1:${daemon.port}`;
  plain = await startDaemon(['--simulate', '2']);
  ctx = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-sync', '--no-first-run'],
    viewport: { width: 1400, height: 800 },
    colorScheme: 'light',
  });
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on('pageerror', (e) => pageErrors.push(e.message));
});

afterAll(async () => {
  await ctx?.close();
  await stopDaemon(daemon);
  await stopDaemon(plain);
  await new Promise((r) => prom.close(r));
  rmSync(work, { recursive: true, force: true });
});

/** The table as shown: one entry per node row, in order. */
function readRows(p: Page) {
  return p.evaluate(() =>
    [...document.querySelectorAll<HTMLTableRowElement>('.fleet-table tbody tr[data-node]')].map((tr) => {
      const cell = (f: string): string => tr.querySelector(`[data-field=${f}]`)?.textContent ?? '';
      return {
        name: tr.dataset.node ?? '',
        up: tr.dataset.up,
        chosen: tr.dataset.chosen === 'yes',
        href: tr.querySelector('td.node a')?.getAttribute('href') ?? null,
        state: cell('state'),
        gpus: cell('gpus'),
        idle: cell('idle'),
        util: cell('util'),
        health: cell('health'),
        reason: cell('reason'),
      };
    }),
  );
}

describe('the Fleet page of gpumon serve --prometheus', () => {
  it('is offered only when the daemon has a Prometheus', async () => {
    await page.goto((plain as Daemon).base);
    await page.locator('article.gpu').nth(1).waitFor({ timeout: 20_000 });
    await sleep(300); // /api/config has been answered by now
    expect(await page.locator('nav a[data-nav="/fleet"]').count()).toBe(0);
    await page.goto(`${(plain as Daemon).base}#/fleet`);
    await page.locator('section.fleet[data-fleet=off]').waitFor({ timeout: 10_000 });
    expect(await page.locator('section.fleet').textContent()).toContain('--prometheus URL');
  });

  it('lists every node, best for a new job first, with links to their dashboards', async () => {
    const d = daemon as Daemon;
    await page.goto(d.base);
    await page.locator('article.gpu').nth(1).waitFor({ timeout: 20_000 });
    await page.locator('nav a[data-nav="/fleet"]').click();
    await page.locator('section.fleet[data-fleet=ready]').waitFor({ timeout: 15_000 });
    expect(page.url()).toMatch(/#\/fleet$/);
    const rows = await readRows(page);
    expect(rows.map((r) => r.name)).toEqual(['node-b', 'node-a', 'node-e', 'node-c']);
    const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
    expect(byName['node-b']).toMatchObject({ up: 'yes', state: 'up', gpus: '2', util: '3\u00a0%' });
    expect(byName['node-b']!.idle).toContain('2');
    expect(byName['node-a']!.href).toBe(`http://${selfInstance}/`);
    expect(byName['node-c']).toMatchObject({ up: 'no', state: 'down', gpus: 'n/a', href: 'http://10.0.0.3:9400/' });
    expect(byName['node-e']!.health).toBe('1 problem');
    expect(await page.locator('tr[data-problems-of=node-e]').textContent()).toBe('GPU 1: XID 79');
    expect(await page.locator('[data-field=totals]').textContent()).toBe(
      '4 nodes (3 up) · 6 GPUs · 4 idle (utilization < 30\u00a0%, memory < 50\u00a0%)',
    );
    expect(await page.locator('[data-field=prometheus]').textContent()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    // The link opens node-a's own dashboard: this daemon.
    const [popup] = await Promise.all([ctx.waitForEvent('page'), page.locator('tr[data-node=node-a] td.node a').click()]);
    await popup.locator('article.gpu').nth(1).waitFor({ timeout: 20_000 });
    expect(await popup.locator('[data-field=hostname]').textContent()).toContain('node-a');
    await popup.close();
  });

  it('marks the node a job of N GPUs would go to, and why the others would not', async () => {
    await page.locator('.need input').fill('2');
    await page.locator('[data-field=choice]').waitFor({ timeout: 10_000 });
    expect(await page.locator('[data-field=choice]').textContent()).toBe('A job of 2 GPUs would go to node-b');
    const rows = await readRows(page);
    expect(rows.filter((r) => r.chosen).map((r) => r.name)).toEqual(['node-b']);
    const why = Object.fromEntries(rows.map((r) => [r.name, r.reason]));
    expect(why['node-a']).toBe('1 idle GPU, 2 needed');
    expect(why['node-c']).toBe('its target 10.0.0.3:9400 is down');
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    await page.locator('.need input').fill('3');
    await waitFor('no node for 3', async () =>
      (await page.locator('[data-field=choice]').textContent())?.includes('No node that is up has 3 idle GPUs'),
    );
    await page.locator('.need input').fill('');
    await waitFor('no choice asked', async () => (await page.locator('[data-field=choice]').count()) === 0);
  });

  it('says when Prometheus fails, keeps the last answer, and recovers', async () => {
    failing = true;
    // The daemon keeps an answer 5 s and the page asks every 5 s.
    const banner = page.locator('[data-field=fleet-error]');
    await banner.waitFor({ timeout: 20_000 });
    expect(await banner.textContent()).toContain('answered an error (HTTP 503, unavailable): TSDB is shutting down');
    expect((await readRows(page)).length).toBe(4);
    failing = false;
    await waitFor('the error gone', async () => (await banner.count()) === 0, 20_000);
  });

  it('goes back to the node itself', async () => {
    await page.locator('nav a[data-nav="/"]').click();
    await page.locator('article.gpu').nth(1).waitFor({ timeout: 10_000 });
    expect(await page.locator('section.fleet').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
