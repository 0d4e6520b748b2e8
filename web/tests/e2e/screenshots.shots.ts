// The dashboard's pictures in docs/ (scripts/web.sh screenshots BUILD [DIR]): every page at
// 1600x1000 and the phone layout at 390x844, from the real daemon on simulated GPUs with a store
// filled by `gpumon record` and `gpumon bench`. Not a test: run it after changing the pages.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import type { Page } from 'playwright-core';
import { describe, it } from 'vitest';

import { fillStore, launch, sleep, SOURCE, startDaemon, stopDaemon, waitFor } from './helpers';
import type { Daemon } from './helpers';

const OUT = resolve(process.env.GM_SCREENSHOT_DIR ?? join(SOURCE, 'docs'));
const SHOTS = join(OUT, 'screenshots');

/** Waits until the charts (the live cards', or one kind of the GPU page's) hold n points. */
async function points(page: Page, n: number, selector = 'figure.chart'): Promise<void> {
  await waitFor(
    `${n} points per chart`,
    () =>
      page.evaluate(
        ([k, sel]) => [...document.querySelectorAll<HTMLElement>(sel as string)].every((f) => Number(f.dataset.points ?? 0) >= (k as number)),
        [n, selector],
      ),
    90_000,
  );
}

describe('screenshots', () => {
  it('saves every page at 1600x1000 and 390x844', async () => {
    const work = mkdtempSync(join(tmpdir(), 'gpumon-shots-'));
    mkdirSync(SHOTS, { recursive: true });
    const db = join(work, 'gpumon.db');
    let four: Daemon | null = null;
    let sixteen: Daemon | null = null;
    const ctx = await launch(join(work, 'profile'));
    try {
      const stored = await fillStore(work, db, 12);
      four = await startDaemon(work, ['--simulate', '4', '--seed', '3', '--db', db]);
      sixteen = await startDaemon(work, ['--simulate', '16', '--seed', '5', '--db', 'none']);
      // A session of the daemon itself, still running when the Sessions page is taken.
      await fetch(`${four.base}api/sessions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ label: 'serving run', gpus: [0, 1] }),
      });
      const page = ctx.pages()[0] ?? (await ctx.newPage());
      const shot = async (name: string, url: string, ready: () => Promise<unknown>): Promise<void> => {
        await page.goto(url);
        await ready();
        await page.mouse.move(0, 0);
        await sleep(300);
        await page.screenshot({ path: join(SHOTS, `${name}.png`) });
      };

      await page.goto(four.base);
      await page.locator('article.gpu').nth(3).waitFor();
      await points(page, 20);
      await page.mouse.move(0, 0);
      await page.screenshot({ path: join(OUT, 'dashboard.png') });
      await shot('gpu', `${four.base}#/gpu/1`, () => points(page, 20, 'figure.chart[data-kind=utilization]'));
      await shot('sessions', `${four.base}#/sessions`, () => page.locator('table.runs tbody tr').nth(2).waitFor());
      const rec = stored.records['train llama-8b'] as string;
      await shot('session', `${four.base}#/sessions/${rec}`, () => page.locator('.session-charts figure.chart').nth(3).waitFor());
      await shot('benchmarks', `${four.base}#/benchmarks`, () => page.locator('table.benches tbody tr').nth(1).waitFor());
      await shot('benchmark', `${four.base}#/benchmarks/${stored.benches[1] as string}`, () =>
        page.locator('table.points tbody tr').nth(1).waitFor(),
      );
      await shot('compare', `${four.base}#/benchmarks/compare?ids=${stored.benches.join(',')}`, () =>
        Promise.all([page.locator('table.compare tbody').nth(1).waitFor(), page.locator('[data-field=compare-sweep] figure').first().waitFor()]),
      );
      await shot('overview-16', sixteen.base, async () => {
        await page.locator('.tile').nth(15).waitFor();
        await sleep(15_000); // sparklines with some history
      });

      await page.setViewportSize({ width: 390, height: 844 });
      await shot('phone-live', four.base, () => page.locator('article.gpu').first().waitFor());
      await page.evaluate(() => document.querySelector('section.procs')?.scrollIntoView());
      await page.screenshot({ path: join(SHOTS, 'phone-processes.png') });
      await shot('phone-overview', sixteen.base, () => page.locator('.tile').nth(3).waitFor());
      await shot('phone-sessions', `${four.base}#/sessions`, () => page.locator('table.runs tbody tr').nth(2).waitFor());
      await shot('phone-session', `${four.base}#/sessions/${rec}`, () => page.locator('.session-charts figure.chart').first().waitFor());
      await shot('phone-benchmark', `${four.base}#/benchmarks/${stored.benches[1] as string}`, () =>
        page.locator('table.points tbody tr').nth(1).waitFor(),
      );
      await shot('phone-gpu', `${four.base}#/gpu/1`, () => points(page, 20, 'figure.chart[data-kind=utilization]'));
      await shot('phone-benchmarks', `${four.base}#/benchmarks`, () => page.locator('table.benches tbody tr').nth(1).waitFor());
      await shot('phone-compare', `${four.base}#/benchmarks/compare?ids=${stored.benches.join(',')}`, () =>
        Promise.all([page.locator('table.compare tbody').nth(1).waitFor(), page.locator('[data-field=compare-sweep] figure').first().waitFor()]),
      );

      // The truthful states, at 1600x1000 and 390x844: a daemon that wants a token; the stream gone.
      await page.setViewportSize({ width: 1600, height: 1000 });
      const locked = await startDaemon(work, ['--simulate', '2', '--db', 'none', '--token', 'not-in-the-picture']);
      try {
        await shot('token', locked.base, () => page.locator('[data-state=token-needed]').waitFor());
        await page.setViewportSize({ width: 390, height: 844 });
        await shot('phone-token', locked.base, () => page.locator('[data-state=token-needed]').waitFor());
        await page.setViewportSize({ width: 1600, height: 1000 });
      } finally {
        await stopDaemon(locked);
      }
      await page.goto(four.base);
      await page.locator('article.gpu').nth(3).waitFor();
      await points(page, 10);
      await stopDaemon(four, 'SIGKILL');
      await waitFor('stale cards', async () => (await page.locator('article.gpu[data-stale=yes]').count()) === 4);
      await sleep(4000);
      await page.screenshot({ path: join(SHOTS, 'stream-down.png') });
      // The same stale page on a phone: no reload, so the cards keep their old values.
      await page.setViewportSize({ width: 390, height: 844 });
      await sleep(500);
      await page.screenshot({ path: join(SHOTS, 'phone-stream-down.png') });
    } finally {
      await ctx.close();
      await stopDaemon(four);
      await stopDaemon(sixteen);
      rmSync(work, { recursive: true, force: true });
    }
  });
});
