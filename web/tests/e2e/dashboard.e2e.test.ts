// Browser test of the embedded dashboard's live page: the real `gpumon serve --simulate 4` from
// the build directory ($GM_BUILD_DIR) on an ephemeral port, Debian's Chromium driven by
// playwright-core. It checks the page against the API, the charts, the process table, the
// 0-100 % axis, a daemon restart on the same port (cards greyed with their age meanwhile) and
// the no-GPU state, and saves a screenshot. pages.e2e.test.ts covers the other pages.

import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { fmtMiB, fmtPercent, fmtRatio, fmtTemp, fmtWatts } from '../../src/lib/format';
import type { Snapshot } from '../../src/lib/types';
import * as h from './helpers';
import { BUILD, GPUMON, launch, sleep, SOURCE, stopDaemon, waitFor } from './helpers';
import type { Daemon } from './helpers';

const SCREENSHOT = process.env.GM_WEB_SCREENSHOT ?? join(BUILD, 'web', 'dashboard.png');
/** In this simulation seed GPU 0 idles (0 %, about 1 % memory) for its first 49 samples. */
const SEED = '3';
const IDLE_GPU = 0;

const work = mkdtempSync(join(tmpdir(), 'gpumon-web-e2e-'));
const startDaemon = (args: string[], port = 0, env: Record<string, string> = {}): Promise<Daemon> =>
  h.startDaemon(work, args, port, env);
const api = <T,>(d: Daemon, path: string): Promise<T> => h.api<T>(d, path);

/** What the page shows, read in one go so the values and their seq belong together. */
interface Shown {
  seq: number;
  gpus: { index: number; uuid: string; name: string; util: string; mem: string; memPct: string; temp: string; power: string }[];
}

function readCards(page: Page): Promise<Shown> {
  return page.evaluate(() => {
    const cards = [...document.querySelectorAll<HTMLElement>('article.gpu')];
    const text = (el: Element, sel: string): string => el.querySelector(sel)?.textContent ?? '';
    return {
      seq: Number(cards[0]?.dataset.seq ?? -1),
      gpus: cards.map((c) => ({
        index: Number(c.dataset.index),
        uuid: c.dataset.uuid ?? '',
        name: text(c, '[data-field=name]'),
        util: text(c, '[data-field=util] .v'),
        mem: text(c, '[data-field=memory] .v'),
        memPct: text(c, '[data-field=memory-percent]'),
        temp: text(c, '[data-field=temperature] .v'),
        power: text(c, '[data-field=power] .v'),
      })),
    };
  });
}

let daemon: Daemon | null = null;
let ctx: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  if (!existsSync(GPUMON)) throw new Error(`no gpumon binary at ${GPUMON}: build it, or set GM_BUILD_DIR`);
  daemon = await startDaemon(['--simulate', '4', '--seed', SEED]);
  ctx = await launch(join(work, 'profile'));
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(daemon.base);
});

afterAll(async () => {
  await ctx?.close();
  await stopDaemon(daemon);
  rmSync(work, { recursive: true, force: true });
});

describe('dashboard served by gpumon serve --simulate 4', () => {
  it('is embedded: gzip only for clients that accept it, hashed assets cached for good', async () => {
    const d = daemon as Daemon;
    const plain = await fetch(d.base, { headers: { 'Accept-Encoding': 'identity' } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(plain.headers.get('cache-control')).toBe('no-cache');
    const html = await plain.text();
    const js = /src="(?:\.?\/)?(assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(js).toBeTruthy();
    // Node's fetch asks for gzip itself and decodes it; the header says what came over the wire.
    const gz = await fetch(d.base + (js as string), { headers: { 'Accept-Encoding': 'gzip' } });
    expect(gz.status).toBe(200);
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gz.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await gz.text()).length).toBeGreaterThan(1000);
  });

  it('renders one card per GPU with the values of the API', async () => {
    const d = daemon as Daemon;
    await page.locator('article.gpu').nth(3).waitFor({ timeout: 20_000 });
    expect(await page.locator('article.gpu').count()).toBe(4);
    await expect.poll(() => page.locator('[data-field=provider]').textContent()).toMatch(/simulated/i);

    // Identity: exact. Live values: compared against the API's sample of the same seq.
    let matched = false;
    for (let attempt = 0; attempt < 60 && !matched; attempt++) {
      const shown = await readCards(page);
      const snap = await api<Snapshot>(d, 'api/gpus');
      expect(shown.gpus.map((g) => g.uuid)).toEqual(snap.gpus.map((g) => g.uuid));
      expect(shown.gpus.map((g) => g.name)).toEqual(snap.gpus.map((g) => g.name));
      if (snap.seq !== shown.seq) {
        await sleep(100);
        continue;
      }
      matched = true;
      for (const g of snap.gpus) {
        const s = shown.gpus.find((x) => x.index === g.index);
        expect(s, `card of GPU ${g.index}`).toBeTruthy();
        expect(s?.util).toBe(fmtPercent(g.utilization.gpu));
        expect(s?.mem).toBe(fmtRatio(fmtMiB(g.memory.used_mib), fmtMiB(g.memory.total_mib)));
        expect(s?.memPct).toBe(fmtPercent(g.memory.used_percent));
        expect(s?.temp).toBe(fmtTemp(g.temperature_c));
        expect(s?.power).toBe(fmtWatts(g.power.draw_w));
      }
      const header = await page.locator('header.top').textContent();
      expect(header).toContain(snap.hostname ?? 'n/a');
      expect(header).toContain(snap.driver_version ?? 'n/a');
    }
    expect(matched, 'the page and the API showed the same sample').toBe(true);
  });

  it('draws the charts', async () => {
    await waitFor('five points in every chart', () =>
      page.evaluate(() => {
        const figs = [...document.querySelectorAll<HTMLElement>('figure.chart')];
        return figs.length === 8 && figs.every((f) => Number(f.dataset.points) >= 5);
      }),
    );
    // Pixels of the utilization line's colour on the busiest GPU's canvas: the line is drawn.
    const coloured = await page.evaluate(() => {
      const hex = getComputedStyle(document.documentElement).getPropertyValue('--c-util').trim();
      const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
      let best = 0;
      for (const canvas of document.querySelectorAll<HTMLCanvasElement>('figure.chart-load canvas')) {
        const c = canvas.getContext('2d');
        if (!c) continue;
        const px = c.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 0; i < px.length; i += 4) {
          const dist = Math.abs((px[i] ?? 0) - (want[0] ?? 0)) + Math.abs((px[i + 1] ?? 0) - (want[1] ?? 0)) + Math.abs((px[i + 2] ?? 0) - (want[2] ?? 0));
          if ((px[i + 3] ?? 0) > 200 && dist < 60) n++;
        }
        best = Math.max(best, n);
      }
      return best;
    });
    expect(coloured).toBeGreaterThan(10);
  });

  it('keeps percent charts on a fixed 0-100 axis when every value is small', async () => {
    const idle = page.locator(`article.gpu[data-index="${IDLE_GPU}"] figure.chart-load`);
    const attrs = await waitFor('the idle GPU chart to have data', async () => {
      const a = await idle.evaluate((f: HTMLElement) => ({ ...f.dataset }));
      return Number(a.points) >= 2 ? a : null;
    });
    // The seed keeps this GPU idle: its largest value is tiny, yet the axis still reads 0-100.
    expect(Number(attrs.max)).toBeLessThan(5);
    expect(attrs.yMin).toBe('0');
    expect(attrs.yMax).toBe('100');
    for (const f of await page.locator('figure.chart-load').all()) {
      expect(await f.getAttribute('data-y-min')).toBe('0');
      expect(await f.getAttribute('data-y-max')).toBe('100');
    }
  });

  it('sorts and filters the process table', async () => {
    const pids = (): Promise<number[]> =>
      page.locator('section.procs tbody tr[data-pid]').evaluateAll((rows) => rows.map((r) => Number((r as HTMLElement).dataset.pid)));
    await waitFor('two processes', async () => (await pids()).length >= 2);
    const pidHeader = page.locator('section.procs th[data-key=pid]');
    await pidHeader.locator('button').click();
    await expect.poll(() => pidHeader.getAttribute('aria-sort')).toBe('ascending');
    const up = await pids();
    expect(up).toEqual([...up].sort((a, b) => a - b));
    await pidHeader.locator('button').press('Enter'); // keyboard works too
    await expect.poll(() => pidHeader.getAttribute('aria-sort')).toBe('descending');
    const down = await pids();
    expect(down).toEqual([...down].sort((a, b) => b - a));

    await page.locator('section.procs input.filter').fill('train');
    await waitFor('the filter to apply', async () => {
      const cmds = await page.locator('section.procs tbody td.cmd').allTextContents();
      return cmds.length > 0 && cmds.every((c) => c.includes('train'));
    });
    await page.locator('section.procs input.filter').fill('');
    await page.locator('section.procs th[data-key=memory] button').click();
    await expect.poll(() => page.locator('section.procs th[data-key=memory]').getAttribute('aria-sort')).not.toBe('none');
  });

  it('backfills the charts when the window changes', async () => {
    const gen = async (): Promise<number> =>
      Number(await page.locator('figure.chart').first().getAttribute('data-generation'));
    const before = await gen();
    await page.locator('fieldset.windows input[value="300"]').click();
    await waitFor('a new backfill', async () => (await gen()) > before);
    expect(Number(await page.locator('figure.chart').first().getAttribute('data-points'))).toBeGreaterThanOrEqual(2);
    await page.locator('fieldset.windows input[value="60"]').click();
    await waitFor('the 1 min window again', async () => (await gen()) > before + 1);
  });

  it('saves a screenshot', async () => {
    // A quarter of the default window filled, so the picture shows lines rather than dots.
    await waitFor(
      'fifteen points per chart',
      () => page.evaluate(() => [...document.querySelectorAll<HTMLElement>('figure.chart')].every((f) => Number(f.dataset.points) >= 15)),
      40_000,
    );
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.mouse.move(0, 0);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(existsSync(SCREENSHOT)).toBe(true);
  });

  it('shows reconnecting when the daemon dies and goes live again when it is back', async () => {
    const d = daemon as Daemon;
    const link = page.locator('header.top [data-link]');
    await expect.poll(() => link.getAttribute('data-link')).toBe('live');
    await stopDaemon(d, 'SIGKILL');
    await waitFor('"reconnecting"', async () => /reconnecting/.test((await link.textContent()) ?? ''), 15_000);
    // The cards keep their last values, greyed, each saying how old they are.
    await waitFor('every card marked stale', async () => (await page.locator('article.gpu[data-stale=yes]').count()) === 4);
    const card = page.locator('article.gpu').first();
    expect(await card.evaluate((el) => getComputedStyle(el).filter)).toContain('grayscale');
    await waitFor('the age of the data', async () =>
      /^Not live: values from \d+(\.\d)?\u00a0s ago$/.test((await card.locator('[data-field=stale]').textContent()) ?? ''),
    );
    // Same port: the page was loaded from it and must find the daemon there again.
    daemon = await waitFor('the daemon to restart on its port', async () => {
      try {
        return await startDaemon(['--simulate', '4', '--seed', SEED], d.port);
      } catch {
        return null;
      }
    });
    await waitFor('"live" again', async () => (await link.getAttribute('data-link')) === 'live', 30_000);
    await waitFor('the cards live again', async () => (await page.locator('article.gpu[data-stale=no]').count()) === 4);
    expect(await page.locator('[data-field=stale]').count()).toBe(0);
    // The new daemon's samples reach the cards.
    const snap = await api<Snapshot>(daemon, 'api/gpus');
    await waitFor('the new samples on the cards', async () => (await readCards(page)).seq <= snap.seq + 5);
  });

  it('shows which providers were tried when there is no GPU, with host metrics still live', async () => {
    const none = await startDaemon([], 0, {
      PATH: '/nonexistent',
      GPU_MONITOR_NVML_LIB: join(work, 'no-such-libnvidia-ml.so.1'),
    });
    const p2 = await ctx.newPage();
    p2.on('pageerror', (e) => pageErrors.push(e.message));
    try {
      await p2.goto(none.base);
      const box = p2.locator('[data-state=no-gpu]');
      await box.waitFor({ timeout: 20_000 });
      await waitFor('the diagnosis', async () => /nvml/.test((await box.textContent()) ?? ''));
      const text = (await box.textContent()) ?? '';
      expect(text).toContain('No GPU found');
      expect(text).toContain('nvidia-smi');
      expect(await p2.locator('article.gpu').count()).toBe(0);
      const cpu = p2.locator('[data-field=cpu] .v');
      await waitFor('host CPU', async () => /%/.test((await cpu.textContent()) ?? ''));
    } finally {
      await p2.close();
      await stopDaemon(none);
    }
  });

  it('says on each card what the GPU reports of its health', async () => {
    // The fake NVML's health scenario: GPU 0 with a fresh XID and uncorrected ECC errors
    // (degraded), GPU 1 an older board that reports none of the signals.
    const fake = join(BUILD, 'tests', 'fakes', 'nvml-current', 'libnvidia-ml.so.1');
    const src = SOURCE;
    const sick = await startDaemon(['--poll-interval', '200', '--db', 'none'], 0, {
      GPU_MONITOR_NVML_LIB: fake,
      GM_FAKE_NVML_SCENARIO: join(src, 'tests', 'fixtures', 'nvml', 'health.json'),
    });
    const p3 = await ctx.newPage();
    p3.on('pageerror', (e) => pageErrors.push(e.message));
    try {
      await p3.goto(sick.base);
      const h0 = p3.locator('article.gpu[data-index="0"] [data-field=health]');
      // The scenario fires XID 79 after the second read and XID 48 after the third: the line
      // turns bad on the first and must then name the latest.
      await waitFor('GPU 0 degraded', async () => (await h0.getAttribute('data-level')) === 'bad');
      await waitFor('GPU 0 latest XID', async () => /^Degraded: XID 48 /.test((await h0.textContent()) ?? ''));
      expect(await h0.textContent()).toMatch(/^Degraded: XID 48 .*uncorrected ECC/);
      const h1 = p3.locator('article.gpu[data-index="1"] [data-field=health]');
      expect(await h1.getAttribute('data-level')).toBe('na');
      // GPU 0's page: the same verdict, and its power cap (throttle bit 2) as a bar over time.
      await p3.goto(`${sick.base}#/gpu/0`);
      const gpuPage = p3.locator('.page-gpu[data-gpu-index="0"]');
      await gpuPage.waitFor();
      expect(await gpuPage.locator('[data-field=health]').getAttribute('data-level')).toBe('bad');
      expect(await gpuPage.locator('[data-field=throttle]').textContent()).toContain('sw power cap');
      const thr = gpuPage.locator('figure.chart[data-kind=throttle]');
      await waitFor('the power cap row', async () => Number(await thr.getAttribute('data-points')) >= 2);
      // Health over time, beside the health as it is now: the counters as steps, from history.
      const hist = gpuPage.locator('[data-group=health-history]');
      for (const [kind, lines] of [['health-xid', '1'], ['health-ecc', '2'], ['health-pcie-replay', '1'], ['health-violation', '2']]) {
        const fig = hist.locator(`figure.chart[data-kind=${kind}]`);
        await waitFor(`${kind} over time`, async () => Number(await fig.getAttribute('data-points')) >= 2);
        expect(await fig.getAttribute('data-lines')).toBe(lines);
      }
      expect(await hist.locator('figure.chart-empty').count()).toBe(0);
      // GPU 1 reports none of the counters: each chart says so, none is drawn as zeros.
      await p3.goto(`${sick.base}#/gpu/1`);
      const hist1 = p3.locator('.page-gpu[data-gpu-index="1"] [data-group=health-history]');
      await hist1.waitFor();
      const util1 = p3.locator('.page-gpu[data-gpu-index="1"] figure.chart[data-kind=utilization]');
      await waitFor('GPU 1 history loaded', async () => Number(await util1.getAttribute('data-points')) >= 2);
      expect(await hist1.locator('figure.chart-empty').count()).toBe(4);
      expect(await hist1.locator('figure.chart-empty[data-kind=health-ecc] .note').textContent()).toBe('Not reported by this GPU.');
      expect(await hist1.locator('canvas').count()).toBe(0);
    } finally {
      await p3.close();
      await stopDaemon(sick);
    }
  });

  it('names each GPU whole, labels the host bars, explains a health it cannot judge', async () => {
    // At 1600 px four cards share a row: a long name is cut, "(simulated)" beside it never is.
    const names = page.locator('article.gpu [data-field=name]');
    await waitFor('the cards', async () => (await names.count()) === 4);
    for (let i = 0; i < 4; i++) {
      const tag = names.nth(i).locator('.name-tag');
      expect(await tag.textContent()).toBe('(simulated)');
      const box = await tag.boundingBox();
      const head = await page.locator(`article.gpu[data-index="${i}"] header.card-head`).boundingBox();
      expect(box && head, 'boxes').toBeTruthy();
      expect(box!.width).toBeGreaterThan(40);
      expect(box!.x + box!.width).toBeLessThanOrEqual(head!.x + head!.width);
      expect(await names.nth(i).getAttribute('title')).toMatch(/\(simulated\)$/);
    }
    // The per-core bars say what they are and which core is where.
    expect(await page.locator('.host [data-field=cores-label]').textContent()).toContain('CPU utilization per core');
    expect(await page.locator('.host [data-field=cores-axis]').textContent()).toMatch(/^core 0/);
    // A simulated GPU reports no health counters: the line says which.
    const health = page.locator('article.gpu[data-index="0"] [data-field=health]');
    expect(await health.getAttribute('data-level')).toBe('na');
    expect(await health.locator('[data-field=health-missing]').textContent()).toContain(
      'not reported: XID events, ECC errors, retired pages, remapped rows, PCIe replays',
    );
    expect(await health.getAttribute('title')).toMatch(/^This GPU does not report XID events/);
  });

  it("colours temperature and power near the GPU's own limits, and nothing without them", async () => {
    // GPU 0: 86 °C with its slowdown at 88 °C, 698 of 700 W; GPU 1: cool and idle under the
    // same limits; GPU 2: warm, but it reports neither a slowdown threshold nor a power limit.
    const scenario = join(work, 'hot.json');
    const gib = 2 ** 30;
    const gpu = (i: number, extra: Record<string, unknown>) => ({
      name: 'NVIDIA H100 80GB HBM3', uuid: `GPU-70700000-0000-4000-8000-00000000002${i}`, pci_bus_id: `00000000:${i + 1}B:00.0`,
      util_mem: 10, mem_total: 80 * gib, mem_used: 8 * gib, mem_free: 72 * gib, processes: [], ...extra,
    });
    writeFileSync(scenario, JSON.stringify({
      driver_version: '550.54.15', cuda_version: 12040,
      gpus: [
        gpu(0, { util_gpu: 97, temp: 86, temp_slowdown: 88, power_mw: 698000, power_limit_mw: 700000 }),
        gpu(1, { util_gpu: 0, temp: 35, temp_slowdown: 88, power_mw: 70000, power_limit_mw: 700000 }),
        gpu(2, { util_gpu: 50, temp: 84, power_mw: 300000, unsupported: ['power_limit'] }),
      ],
    }));
    const hot = await startDaemon(['--poll-interval', '200', '--db', 'none'], 0, {
      GPU_MONITOR_NVML_LIB: join(BUILD, 'tests', 'fakes', 'nvml-current', 'libnvidia-ml.so.1'),
      GM_FAKE_NVML_SCENARIO: scenario,
    });
    const p4 = await ctx.newPage();
    p4.on('pageerror', (e) => pageErrors.push(e.message));
    try {
      const snap = await api<Snapshot>(hot, 'api/gpus');
      expect(snap.gpus.map((g) => g.temperature_slowdown_c)).toEqual([88, 88, null]);
      expect(snap.gpus.map((g) => g.power.limit_w)).toEqual([700, 700, null]);
      await p4.goto(hot.base);
      const stat = (i: number, f: string) => p4.locator(`article.gpu[data-index="${i}"] [data-field=${f}]`);
      await waitFor('the cards', async () => (await p4.locator('article.gpu').count()) === 3);
      expect(await stat(0, 'temperature').getAttribute('data-hot')).toBe('hot');
      expect(await stat(0, 'temperature').getAttribute('title')).toBe('slowdown at 88 °C (2 °C away)');
      expect(await stat(0, 'power').getAttribute('data-hot')).toBe('hot');
      const red = await stat(0, 'temperature').locator('.v').evaluate((e) => getComputedStyle(e).color);
      const plain = await stat(1, 'temperature').locator('.v').evaluate((e) => getComputedStyle(e).color);
      expect(red).not.toBe(plain);
      for (const f of ['temperature', 'power']) {
        expect(await stat(1, f).getAttribute('data-hot')).toBe('no');
        expect(await stat(2, f).getAttribute('data-hot')).toBe('no');
      }
      // The overview: the same colours on the tiles, and the summary of all three.
      await p4.locator('[data-view=overview]').click();
      const tile = (i: number, f: string) => p4.locator(`.tile[data-gpu-index="${i}"] [data-field=${f}]`);
      await waitFor('the tiles', async () => (await p4.locator('.tile').count()) === 3);
      expect(await tile(0, 'temperature').getAttribute('data-hot')).toBe('hot');
      expect(await tile(0, 'power').getAttribute('data-hot')).toBe('hot');
      expect(await tile(2, 'temperature').getAttribute('data-hot')).toBe('no');
      const sum = p4.locator('[data-field=summary]');
      expect(await sum.locator('[data-field=total-power] b').textContent()).toBe(fmtWatts(698 + 70 + 300));
      expect(await sum.locator('[data-field=mean-util] b').textContent()).toBe(fmtPercent(Math.round((97 + 0 + 50) / 3)));
      expect(await sum.locator('[data-field=idle] b').textContent()).toBe('1 of 3');
      expect(await sum.locator('[data-field=hottest]').textContent()).toContain('GPU 0');
      expect(await sum.locator('[data-field=hottest]').getAttribute('data-hot')).toBe('hot');
      await p4.evaluate(() => localStorage.removeItem('gpumon.view'));
    } finally {
      await p4.close();
      await stopDaemon(hot);
    }
  });

  it('raised no page errors', () => {
    expect(pageErrors).toEqual([]);
  });
});
