// What the live page costs the browser: CPU seconds of script, layout and style per second of
// wall time, and the JS heap, from Chromium's own counters (CDP Performance.getMetrics), in the
// cards view and in the overview, with 16 simulated GPUs sampled 5 times a second.
//
//   cd web && node tests/perf/dashboard-cost.mjs ../build/gpumon [seconds]
//
// Prints one JSON line per view. docs/PERFORMANCE.md has the figures of a run.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

const gpumon = process.argv[2] ?? '../build/gpumon';
const seconds = Number(process.argv[3] ?? 30);
const work = mkdtempSync(join(tmpdir(), 'gpumon-cost-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const portFile = join(work, 'port');
const d = spawn(gpumon, ['serve', '--listen', '127.0.0.1:0', '--port-file', portFile, '--simulate', '16', '--poll-interval', '200', '--db', 'none'], {
  stdio: 'ignore',
});
for (let i = 0; i < 300 && !existsSync(portFile); i++) await sleep(50);
const base = `http://127.0.0.1:${Number(readFileSync(portFile, 'utf8'))}/`;
const ctx = await chromium.launchPersistentContext(join(work, 'profile'), {
  executablePath: process.env.GM_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
  viewport: { width: 2560, height: 1440 },
});
try {
  for (const view of ['cards', 'overview']) {
    const page = await ctx.newPage();
    await page.goto(base);
    await page.locator('article.gpu, .tile').first().waitFor();
    // A build without the switch (older) shows cards only.
    if (await page.locator(`[data-view=${view}]`).count()) await page.locator(`[data-view=${view}]`).click();
    else if (view !== 'cards') continue;
    await sleep(10_000); // charts filled, caches warm
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('Performance.enable');
    const read = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
    const a = await read();
    await sleep(seconds * 1000);
    const b = await read();
    const per = (k) => Math.round(((b[k] - a[k]) / seconds) * 1000 * 10) / 10;
    console.log(
      JSON.stringify({
        view,
        gpus: 16,
        samples_per_s: 5,
        script_ms_per_s: per('ScriptDuration'),
        layout_ms_per_s: per('LayoutDuration'),
        style_ms_per_s: per('RecalcStyleDuration'),
        js_heap_mb: Math.round((b.JSHeapUsedSize / 1048576) * 10) / 10,
      }),
    );
    await page.close();
  }
} finally {
  await ctx.close();
  d.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
