// Browser test of the dashboard's pages beyond the live view, against the real daemon: the
// routes and the GPU page, the Sessions pages (values as the API gives them, export, delete),
// the Benchmarks pages (points, compare, export) over a store filled by the real `gpumon
// record` and `gpumon bench`, the overview of 16 GPUs on a 1600x1000 screen, the phone layout,
// and the token form of a daemon started with --token (also when it restarts with another).

import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BenchCompare, BenchDoc } from '../../src/lib/bench';
import { fmtChange, fmtFig } from '../../src/lib/bench';
import { fmtPercent } from '../../src/lib/format';
import type { SessionDoc, SessionList } from '../../src/lib/sessions';
import { fmtEnergy } from '../../src/lib/sessions';
import { api, BUILD, fillStore, launch, sleep, startDaemon, stopDaemon, waitFor } from './helpers';
import type { Daemon, Stored } from './helpers';

const work = mkdtempSync(join(tmpdir(), 'gpumon-web-pages-'));
const TOKEN = 's3cret&token';

let daemon: Daemon;
let stored: Stored;
let ctx: BrowserContext;
let page: Page;
const pageErrors: string[] = [];
const others: Daemon[] = [];

async function fresh(path: string): Promise<void> {
  await page.goto(daemon.base + path);
}

beforeAll(async () => {
  const db = join(work, 'gpumon.db');
  stored = await fillStore(work, db);
  daemon = await startDaemon(work, ['--simulate', '2', '--db', db, '--poll-interval', '250']);
  ctx = await launch(join(work, 'profile'));
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on('pageerror', (e) => pageErrors.push(e.message));
});

afterAll(async () => {
  await ctx?.close();
  await stopDaemon(daemon);
  for (const d of others) await stopDaemon(d);
  rmSync(work, { recursive: true, force: true });
});

describe('pages', () => {
  it('routes: the nav, a GPU page with every metric over time, unknown addresses', async () => {
    await fresh('#/sessions');
    const nav = page.locator('nav.nav');
    await expect.poll(() => nav.locator('a[aria-current=page]').textContent()).toBe('Sessions');
    await nav.locator('a[data-nav="/benchmarks"]').click();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/benchmarks');
    await expect.poll(() => page.title()).toBe('Benchmarks · gpumon');
    await fresh('#/no/such/page');
    await page.locator('[data-state=not-found]').waitFor();

    // A GPU card's title leads to its page.
    await fresh('');
    await page.locator('article.gpu[data-gpu-index="1"] a.idx').click();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/gpu/1');
    const gpu = page.locator('.page-gpu[data-gpu-index="1"]');
    await gpu.waitFor();
    expect(await page.locator('nav.nav a[aria-current=page]').textContent()).toBe('Live');
    for (const kind of ['utilization', 'memory', 'temperature', 'power', 'energy', 'clocks', 'pcie', 'host-cpu', 'host-memory'])
      await waitFor(`the ${kind} chart with points`, async () =>
        Number(await gpu.locator(`figure.chart[data-kind="${kind}"]`).getAttribute('data-points')) >= 3,
      );
    // Throttle reasons: a row per reason, drawn while one holds the clocks down.
    expect(await gpu.locator('figure.chart[data-kind="throttle"]').getAttribute('data-lines')).toBe('6');
    expect(await gpu.locator('figure[data-kind="fan"]').count()).toBe(1);
    // Its utilization axis stays 0-100; the power axis reaches the limit.
    const util = gpu.locator('figure.chart[data-kind="utilization"]');
    expect([await util.getAttribute('data-y-min'), await util.getAttribute('data-y-max')]).toEqual(['0', '100']);
    await page.locator('.page-gpu a.back').click();
    await page.locator('.page-live').waitFor();
    await fresh('#/gpu/7');
    await page.locator('[data-state=no-such-gpu]').waitFor();
  });

  it('GPU page: one time axis, one crosshair, drag to zoom them all, the runs marked, labels whole', async () => {
    await fresh('#/gpu/0');
    const gpu = page.locator('.page-gpu[data-gpu-index="0"]');
    await gpu.waitFor();
    // The hour's window holds the runs the store was filled with just before the daemon started.
    await page.locator('fieldset.windows label', { hasText: '1 h' }).click();
    const charts = gpu.locator('figure.chart[data-kind]:not(.chart-empty)');
    const util = gpu.locator('figure.chart[data-kind="utilization"]');
    const power = gpu.locator('figure.chart[data-kind="power"]');
    await waitFor('points on the charts', async () => Number(await util.getAttribute('data-points')) >= 3);

    // The runs of the window, listed with links, and drawn as bands on every chart.
    const runs = gpu.locator('[data-field=runs-in-window] a.run-mark');
    await waitFor('the runs in the window', async () => (await runs.count()) >= 3);
    const listed = await runs.evaluateAll((els) => els.map((e) => [e.getAttribute('data-kind'), e.textContent]));
    expect(listed).toContainEqual(['session', 'session train llama-8b']);
    expect(listed).toContainEqual(['benchmark', 'benchmark sweep A']);
    expect(listed).toContainEqual(['benchmark', 'benchmark sweep B']);
    expect(await runs.filter({ hasText: 'sweep A' }).getAttribute('href')).toBe(`#/benchmarks/${stored.benches[0]}`);
    await waitFor('bands on the charts', async () => Number(await power.getAttribute('data-marks')) >= 3);

    // Every chart shares the time axis.
    const spans = async () => charts.evaluateAll((els) => els.map((e) => `${e.getAttribute('data-x-min')}-${e.getAttribute('data-x-max')}`));
    await waitFor('one time axis', async () => new Set(await spans()).size === 1);

    // Hovering one chart moves the crosshair on all of them, to the same sample.
    const over = util.locator('.u-over');
    const box = (await over.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
    await waitFor('the crosshair on the power chart', async () => (await power.getAttribute('data-cursor-idx')) !== '' && (await power.getAttribute('data-cursor-idx')) !== null);
    expect(await power.getAttribute('data-cursor-idx')).toBe(await util.getAttribute('data-cursor-idx'));
    // Only the chart under the pointer shows its readout.
    expect(await util.locator('.tip').isHidden()).toBe(false);
    expect(await power.locator('.tip').isHidden()).toBe(true);

    // Dragging across one chart zooms them all to the dragged span; a double-click goes back.
    const whole = Number(await power.getAttribute('data-x-max')) - Number(await power.getAttribute('data-x-min'));
    expect(whole).toBeGreaterThan(3000);
    await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 8 });
    await page.mouse.up();
    await waitFor('zoomed', async () => (await power.getAttribute('data-zoomed')) === 'yes');
    const zoomed = Number(await power.getAttribute('data-x-max')) - Number(await power.getAttribute('data-x-min'));
    expect(zoomed).toBeGreaterThan(whole * 0.3);
    expect(zoomed).toBeLessThan(whole * 0.5);
    await waitFor('every chart zoomed alike', async () => new Set(await spans()).size === 1);
    await gpu.locator('[data-action=unzoom]').waitFor();
    await gpu.locator('figure.chart[data-kind="memory"] .u-over').dblclick();
    await waitFor('back to the window', async () => (await power.getAttribute('data-zoomed')) === 'no');
    expect(Number(await power.getAttribute('data-x-max')) - Number(await power.getAttribute('data-x-min'))).toBeGreaterThan(3000);
    expect(await gpu.locator('[data-action=unzoom]').count()).toBe(0);

    // The value axis is as wide as its widest label, measured in its font.
    for (const fig of await charts.all()) {
      const label = Number(await fig.getAttribute('data-y-label-px'));
      const axis = Number(await fig.getAttribute('data-y-axis-px'));
      expect(label, await fig.getAttribute('data-kind') ?? '').toBeGreaterThan(0);
      expect(axis - label, await fig.getAttribute('data-kind') ?? '').toBeGreaterThanOrEqual(12);
    }
    await page.locator('fieldset.windows label', { hasText: '1 min' }).click();
  });

  it('lists the recorded runs with what each measured', async () => {
    const list = await api<SessionList>(daemon, 'api/sessions');
    await fresh('#/sessions');
    const rows = page.locator('table.runs tbody tr');
    await waitFor('the runs', async () => (await rows.count()) === 2);
    // Benchmarks are on their own page.
    expect(await page.locator('table.runs tr[data-kind=bench]').count()).toBe(0);
    for (const r of list.sessions.filter((s) => s.kind === 'record')) {
      const row = page.locator(`table.runs tr[data-id="${r.id}"]`);
      expect(await row.locator('[data-field=util]').textContent()).toBe(
        `${fmtPercent(r.utilization_mean)} / ${fmtPercent(r.utilization_max)}`,
      );
      expect(await row.locator('[data-field=energy]').textContent()).toBe(fmtEnergy(r.energy_j));
      expect(await row.textContent()).toContain(r.label as string);
    }
    await page.locator('input[aria-label="Filter sessions"]').fill('eval');
    await waitFor('the filter', async () => (await rows.count()) === 1);
  });

  it("shows a run's summary, per-GPU statistics and charts; exports it; deletes it", async () => {
    const id = stored.records['eval'] as string;
    const doc = await api<SessionDoc>(daemon, `api/sessions/${id}`);
    await fresh(`#/sessions/${id}`);
    const p = page.locator(`.page-session[data-id="${id}"]`);
    await p.waitFor();
    expect(await p.locator('[data-field=samples]').textContent()).toContain(String(doc.sample_count));
    const stats = p.locator('table.stats-table tbody tr');
    expect(await stats.count()).toBe(2);
    const s0 = doc.gpu_stats?.['0'];
    expect(await stats.first().locator('td .mean').first().textContent()).toBe(fmtPercent(s0?.utilization?.mean ?? null));
    expect(await stats.first().locator('td .range').first().textContent()).toBe(
      `${fmtPercent(s0?.utilization?.min ?? null)}–${fmtPercent(s0?.utilization?.max ?? null)}`,
    );
    const charts = p.locator('.session-charts figure.chart');
    expect(await charts.count()).toBe(4);
    // Each title names what its axis measures: memory on a 0-100 % axis is a share, not an amount.
    const mem = p.locator('.session-charts figure.chart[data-kind="memory_usage_percent"]');
    expect(await mem.locator('.ctitle').textContent()).toBe('Memory used, % of total');
    expect([await mem.getAttribute('data-y-min'), await mem.getAttribute('data-y-max')]).toEqual(['0', '100']);
    for (const c of await charts.all()) {
      expect(await c.getAttribute('data-lines')).toBe('2');
      expect(await c.getAttribute('data-points')).toBe(String(doc.timeline?.length));
    }

    // Export: the daemon's files, with their names.
    const [csv] = await Promise.all([page.waitForEvent('download'), p.locator('[data-action=export-csv]').click()]);
    expect(csv.suggestedFilename()).toBe(`gpumon-${id}.csv`);
    const want = await (await fetch(`${daemon.base}api/sessions/${id}/export?format=csv`)).text();
    expect(readFileSync((await csv.path()) as string, 'utf8')).toBe(want);
    expect(want.split('\n')[0]).toMatch(/^time,t_s,gpu,utilization_percent,/);
    const [json] = await Promise.all([page.waitForEvent('download'), p.locator('[data-action=export-json]').click()]);
    expect(json.suggestedFilename()).toBe(`gpumon-${id}.json`);
    const got = JSON.parse(readFileSync((await json.path()) as string, 'utf8')) as SessionDoc;
    expect(got.id).toBe(id);
    expect(got.timeline?.length).toBe(doc.sample_count);

    // Delete: asked twice, then gone from the page, the API and the store.
    await p.locator('[data-action=delete]').click();
    await p.locator('[data-action=cancel-delete]').click();
    expect((await fetch(`${daemon.base}api/sessions/${id}`)).status).toBe(200);
    await p.locator('[data-action=delete]').click();
    await p.locator('[data-action=confirm-delete]').click();
    await waitFor('the Sessions page', async () => (await page.evaluate(() => location.hash)).startsWith('#/sessions?deleted='));
    await page.locator('[data-field=deleted]').waitFor();
    expect(await page.locator(`table.runs tr[data-id="${id}"]`).count()).toBe(0);
    expect((await fetch(`${daemon.base}api/sessions/${id}`)).status).toBe(404);
    await fresh(`#/sessions/${id}`);
    await page.locator('[data-state=not-found]').waitFor();
  });

  it("lists benchmarks, shows a run's points, compares two and exports one", async () => {
    const [a, b] = stored.benches as [string, string];
    await fresh('#/benchmarks');
    const rows = page.locator('table.benches tbody tr');
    await waitFor('the benchmarks', async () => (await rows.count()) === 2);
    // The list: server, simulated GPUs, valid points counted, the point each best figure is from.
    const row = page.locator(`table.benches tr[data-id="${b}"]`);
    await row.locator('[data-field=sim]').waitFor();
    const listed = await api<BenchDoc>(daemon, `api/benchmarks/${b}`);
    expect(await row.locator('[data-field=server]').textContent()).toBe(new URL(listed.url ?? '').host);
    expect(await row.locator('[data-field=valid]').textContent()).toBe('all 2');
    expect(await row.locator('[data-field=ttft-p50-at]').textContent()).toMatch(/^concurrency (1|4)$/);
    await page.locator('input[aria-label="Filter benchmarks"]').fill('sweep A');
    await waitFor('the filtered list', async () => (await rows.count()) === 1);
    expect(await page.locator('[data-field=bench-count]').textContent()).toBe('1 of 2');
    await page.locator('input[aria-label="Filter benchmarks"]').fill('');
    await waitFor('the whole list', async () => (await rows.count()) === 2);

    // A benchmark's id under #/sessions (a run is a run) lands on the benchmark's page.
    await fresh(`#/sessions/${b}`);
    await expect.poll(() => page.evaluate(() => location.hash)).toBe(`#/benchmarks/${b}`);
    await page.locator('table.points').waitFor();
    expect(await page.locator('.page-session').count()).toBe(0);

    await fresh(`#/benchmarks/${b}`);
    const doc = await api<BenchDoc>(daemon, `api/benchmarks/${b}`);
    const pts = page.locator('table.points tbody tr');
    await waitFor('the points', async () => (await pts.count()) === doc.points.length);
    const first = pts.first();
    expect(await first.getAttribute('data-load')).toBe('concurrency 1');
    expect(await first.locator('[data-field=ttft-p50]').textContent()).toBe(fmtFig(doc.points[0]?.ttft_ms?.p50 ?? null, 1));
    expect(await first.locator('[data-field=ttft-p99]').textContent()).toBe(fmtFig(doc.points[0]?.ttft_ms?.p99 ?? null, 1));
    expect(await first.locator('[data-field=tok-per-j]').textContent()).toBe(fmtFig(doc.points[0]?.output_tokens_per_joule ?? null, 3));
    // The settings it ran with, the GPUs over the run, every point in sight (no inner scroll box).
    expect(await page.locator('[data-setting=load] .v').textContent()).toBe('1, 4');
    expect(await page.locator('[data-setting=output] .v').textContent()).toBe('8');
    expect(await page.locator('[data-setting=server] .v').textContent()).toBe(`${doc.url} (completions)`);
    expect(await page.locator('[data-field=gpu-charts] figure.chart').count()).toBe(2);
    expect(await page.locator('table.points').evaluate((t) => getComputedStyle(t.parentElement as Element).maxHeight)).toBe('none');
    // Simulated GPUs idle until the benchmark loads them: every point valid, nothing to explain.
    expect(doc.points.every((x) => x.valid)).toBe(true);
    expect(await page.locator('[data-field=invalid-reasons]').count()).toBe(0);
    const [csv] = await Promise.all([page.waitForEvent('download'), page.locator('[data-action=export-csv]').click()]);
    const want = await (await fetch(`${daemon.base}api/sessions/${b}/export?format=csv`)).text();
    expect(readFileSync((await csv.path()) as string, 'utf8')).toBe(want);
    expect(want).toMatch(/^point,load,/);

    // Pick both in the table (newest first: b is the baseline), compare.
    await fresh('#/benchmarks');
    await waitFor('the benchmarks', async () => (await rows.count()) === 2);
    expect(await page.locator('[data-action=compare]').getAttribute('aria-disabled')).toBe('true');
    for (const id of [a, b]) await page.locator(`table.benches tr[data-id="${id}"] input[type=checkbox]`).check();
    await page.locator('[data-action=compare]').click();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe(`#/benchmarks/compare?ids=${encodeURIComponent(`${b},${a}`)}`);
    const table = page.locator('table.compare');
    await table.waitFor();
    const cmp = await api<BenchCompare>(daemon, `api/benchmarks/compare?ids=${b},${a}`);
    expect(await table.locator('tbody').count()).toBe(cmp.points.length);
    const cell = table.locator('tbody[data-load="concurrency 1"] tr[data-metric="ttft_ms.p99"] td').nth(1);
    expect(await cell.locator('.chg').textContent()).toBe(fmtChange(cmp.points[0]?.change_percent['ttft_ms.p99']?.[1] ?? null, false));
    expect(await table.locator('th[data-bench]').evaluateAll((e) => e.map((x) => x.getAttribute('data-bench')))).toEqual([b, a]);
    // Same settings: judged; the whole table in the page, not in a box of its own.
    expect(cmp.settings_differ).toEqual([]);
    expect(await page.locator('[data-field=settings-differ]').count()).toBe(0);
    expect(await table.evaluate((t) => getComputedStyle(t.parentElement as Element).maxHeight)).toBe('none');
  });

  it('fits 16 GPUs on a 1600x1000 screen in the overview, chosen above 8 GPUs and switchable', async () => {
    const many = await startDaemon(work, ['--simulate', '16', '--db', 'none']);
    others.push(many);
    await page.evaluate(() => localStorage.removeItem('gpumon.view'));
    await page.goto(many.base);
    const tiles = page.locator('.tile[data-gpu-index]');
    await waitFor('16 tiles', async () => (await tiles.count()) === 16);
    expect(await page.locator('[data-view=overview]').getAttribute('aria-pressed')).toBe('true');
    const boxes = await tiles.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON() as DOMRect));
    for (const [i, r] of boxes.entries()) {
      expect(r.top, `tile ${i}`).toBeGreaterThanOrEqual(0);
      expect(r.bottom, `tile ${i}`).toBeLessThanOrEqual(1000);
      expect(r.right, `tile ${i}`).toBeLessThanOrEqual(1600);
    }
    expect(await page.evaluate(() => window.scrollY)).toBe(0);
    // Each tile carries its GPU's index, in order, and its numbers.
    expect(await tiles.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-gpu-index'))))).toEqual([...Array(16).keys()]);
    await waitFor('utilization on the tiles', async () => /%/.test((await tiles.nth(15).locator('[data-field=util] .v').textContent()) ?? ''));
    // Over the tiles, what the 16 add up to: total power, mean utilization, idle GPUs, hottest.
    const sum = page.locator('[data-field=summary]');
    expect(await sum.locator('[data-field=gpu-count] b').textContent()).toBe('16');
    expect(await sum.locator('[data-field=total-power] b').textContent()).toMatch(/^\d+\s?W$/);
    expect(await sum.locator('[data-field=mean-util] b').textContent()).toMatch(/^\d+\s?%$/);
    expect(await sum.locator('[data-field=idle] b').textContent()).toMatch(/^\d+ of 16$/);
    expect(await sum.locator('[data-field=hottest]').textContent()).toMatch(/GPU \d+ \d+\s?°C/);
    expect(await tiles.nth(0).locator('.badge', { hasText: 'sim' }).count()).toBe(1);
    // Switch to cards and back; the choice is kept.
    await page.locator('[data-view=cards]').click();
    await waitFor('16 cards', async () => (await page.locator('article.gpu[data-gpu-index]').count()) === 16);
    expect(await page.locator('.tile').count()).toBe(0);
    await page.reload();
    await waitFor('cards after a reload', async () => (await page.locator('article.gpu').count()) === 16);
    await page.locator('[data-view=overview]').click();
    await waitFor('tiles again', async () => (await tiles.count()) === 16);
    await tiles.nth(5).click();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/gpu/5');
  });

  it('keeps the process command and memory on a phone (390x844)', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await fresh('');
      const procs = page.locator('section.procs');
      await waitFor('processes', async () => (await procs.locator('tbody tr[data-pid]').count()) > 0);
      for (const key of ['command', 'memory']) {
        const box = await procs.locator(`th[data-key=${key}]`).boundingBox();
        expect(box, key).not.toBeNull();
        expect(box?.x ?? -1, key).toBeGreaterThanOrEqual(0);
        expect((box?.x ?? 0) + (box?.width ?? 0), key).toBeLessThanOrEqual(390);
      }
      const row = procs.locator('tbody tr[data-pid]').first();
      const cmd = await row.locator('td.cmd').boundingBox();
      expect(cmd?.width ?? 0).toBeGreaterThan(80);
      expect(await row.locator('td').last().textContent()).toMatch(/[MG]iB$/);
      // Nothing wider than the screen: no sideways scrolling of the page.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      // The nav is still there.
      expect(await page.locator('nav.nav a').count()).toBeGreaterThanOrEqual(3);
    } finally {
      await page.setViewportSize({ width: 1600, height: 1000 });
    }
  });

  it('asks for the token on a 401 and stops reconnecting until one is given', async () => {
    const locked = await startDaemon(work, ['--simulate', '1', '--db', 'none', '--token', TOKEN]);
    others.push(locked);
    const p = await ctx.newPage();
    p.on('pageerror', (e) => pageErrors.push(e.message));
    let sockets = 0;
    p.on('websocket', () => sockets++);
    try {
      await p.goto(locked.base);
      const form = p.locator('[data-state=token-needed]');
      await form.waitFor();
      expect(await form.locator('input[type=password]').count()).toBe(1);
      expect(await p.locator('header.top [data-link]').getAttribute('data-link')).toBe('token');
      await sleep(2500);
      expect(sockets).toBe(0); // no reconnecting with a token that cannot work
      // A wrong token is refused, and the page still does not connect.
      await form.locator('input[type=password]').fill('wrong');
      await form.locator('button[type=submit]').click();
      await waitFor('the refusal', async () => /refused/.test((await p.locator('[data-field=token-error]').textContent()) ?? ''));
      expect(sockets).toBe(0);
      // The right one, kept for this origin on request.
      await form.locator('input[type=password]').fill(TOKEN);
      await form.locator('input[name=remember]').check();
      await form.locator('button[type=submit]').click();
      await waitFor('live', async () => (await p.locator('header.top [data-link]').getAttribute('data-link')) === 'live', 15_000);
      await p.locator('article.gpu').first().waitFor();
      expect(await p.evaluate(() => localStorage.getItem('gpumon.token'))).toBe(TOKEN);
      // Another tab of the same origin starts with it.
      const p2 = await ctx.newPage();
      await p2.goto(locked.base);
      await waitFor('the other tab live', async () => (await p2.locator('header.top [data-link]').getAttribute('data-link')) === 'live', 15_000);
      // "forget token" removes it everywhere and brings the form back.
      await p2.locator('[data-action=forget-token]').click();
      await p2.locator('[data-state=token-needed]').waitFor();
      expect(await p2.evaluate(() => [localStorage.getItem('gpumon.token'), sessionStorage.getItem('gpumon.token')])).toEqual([null, null]);
      // The address gpumon serve prints: the token is used and taken out of the address bar.
      await p2.goto(`${locked.base}#token=${encodeURIComponent(TOKEN)}`);
      await waitFor('live from the address', async () => (await p2.locator('header.top [data-link]').getAttribute('data-link')) === 'live', 15_000);
      expect(await p2.evaluate(() => location.href)).not.toContain('token');
      expect(await p2.evaluate(() => localStorage.getItem('gpumon.token'))).toBeNull(); // the tab only
      await p2.close();
    } finally {
      await p.close();
    }
  });

  it('asks for the token again when the daemon restarts with another one, and stops reconnecting', async () => {
    const first = await startDaemon(work, ['--simulate', '1', '--db', 'none', '--token', 'first-token']);
    others.push(first);
    const p = await ctx.newPage();
    p.on('pageerror', (e) => pageErrors.push(e.message));
    let sockets = 0;
    p.on('websocket', () => sockets++);
    const link = p.locator('header.top [data-link]');
    try {
      await p.goto(`${first.base}#token=first-token`);
      await waitFor('live with the first token', async () => (await link.getAttribute('data-link')) === 'live', 15_000);
      // The daemon comes back on the same port (the page's origin) wanting another token.
      await stopDaemon(first);
      const second = await waitFor('the daemon to restart on its port', async () => {
        try {
          return await startDaemon(work, ['--simulate', '1', '--db', 'none', '--token', 'second-token'], first.port);
        } catch {
          return null;
        }
      });
      others.push(second);
      const form = p.locator('[data-state=token-needed]');
      await form.waitFor({ timeout: 30_000 });
      expect(await form.locator('input[type=password]').count()).toBe(1);
      expect(await p.locator('[data-field=token-error]').textContent()).toContain('refused the token this page had');
      expect(await link.getAttribute('data-link')).toBe('token');
      // Stopped: no WebSocket attempt while the form shows, though the backoff would have retried.
      const before = sockets;
      await sleep(3000);
      expect(sockets).toBe(before);
      // The new token connects at once.
      await form.locator('input[type=password]').fill('second-token');
      await form.locator('button[type=submit]').click();
      await waitFor('live with the second token', async () => (await link.getAttribute('data-link')) === 'live', 15_000);
      expect(sockets).toBeGreaterThan(before);
      expect(await p.evaluate(() => sessionStorage.getItem('gpumon.token'))).toBe('second-token');
    } finally {
      await p.close();
    }
  });

  it('MIG devices under their GPU, and the SM share of each process, sortable', async () => {
    // The fake NVML's H100 in MIG mode (3g.40gb, two 1g.10gb) beside one whose processes have
    // utilization samples (6001 at 87-89 %, 6003 at 2 %, 6002 with none).
    const mig = await startDaemon(work, ['--provider', 'nvml', '--db', 'none', '--poll-interval', '250'], 0, {
      GPU_MONITOR_NVML_LIB: join(BUILD, 'tests', 'fakes', 'nvml-current', 'libnvidia-ml.so.1'),
      GM_FAKE_NVML_SCENARIO: join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'tests', 'fixtures', 'nvml', 'h100-mig.json'),
    });
    others.push(mig);
    await page.goto(mig.base + '#/');
    const rows = page.locator('article [data-field=mig-devices] tbody tr');
    await waitFor('the MIG table', async () => (await rows.count()) === 3);
    expect(await rows.first().locator('td').first().textContent()).toBe('3g.40gb');
    expect(await rows.nth(1).getAttribute('data-uuid')).toBe('MIG-7e5b3a1c-9d2f-5e4a-b6c8-0f1e2d3c4b5a');
    // Only the GPU in MIG mode has one.
    expect(await page.locator('[data-field=mig-devices]').count()).toBe(1);

    await page.goto(mig.base + '#/gpu/1');
    const sm = page.locator('section.procs th[data-key=sm]');
    await sm.locator('button').click();
    await expect.poll(() => sm.getAttribute('aria-sort')).toBe('descending');
    const order = (): Promise<number[]> =>
      page.locator('section.procs tbody tr[data-pid]').evaluateAll((r) => r.map((x) => Number((x as HTMLElement).dataset.pid)));
    await waitFor('busiest first, unknown last', async () => JSON.stringify(await order()) === '[6001,6003,6002]');
    const cell = page.locator('section.procs tr[data-pid="6002"] td[data-field=sm]');
    expect(await cell.getAttribute('class')).toContain('na');
  });

  it('raised no page errors', () => {
    expect(pageErrors).toEqual([]);
  });
});
