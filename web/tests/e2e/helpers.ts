// What the browser tests and the screenshot script share: the real `gpumon serve` from the build
// directory ($GM_BUILD_DIR) on an ephemeral port, Debian's Chromium through playwright-core, and a
// store filled by the real `gpumon record` and `gpumon bench` (against the fake OpenAI server).

import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';
import type { BrowserContext } from 'playwright-core';

export const BUILD = resolve(process.env.GM_BUILD_DIR ?? '../build');
export const SOURCE = resolve(process.env.GM_SOURCE_DIR ?? '..');
export const GPUMON = join(BUILD, 'gpumon');
export const FAKE_OPENAI = join(BUILD, 'tests', 'fakes', 'fake_openai');
export const CHROMIUM = process.env.GM_CHROMIUM ?? '/usr/bin/chromium';

const run = promisify(execFile);

export interface Daemon {
  proc: ChildProcess;
  port: number;
  base: string;
  log: string;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls fn until it returns a truthy value; fails with `what` after timeoutMs. */
export async function waitFor<T>(what: string, fn: () => Promise<T> | T, timeoutMs = 20_000): Promise<NonNullable<T>> {
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

let daemons = 0;
/** Starts `gpumon serve` and waits for its --port-file. port 0 picks a free one. */
export async function startDaemon(work: string, args: string[], port = 0, env: Record<string, string> = {}): Promise<Daemon> {
  const n = daemons++;
  const portFile = join(work, `port-${n}`);
  const log = join(work, `daemon-${n}.log`);
  const out = openSync(log, 'w');
  const proc = spawn(GPUMON, ['serve', '--listen', `127.0.0.1:${port}`, '--port-file', portFile, ...args], {
    stdio: ['ignore', out, out],
    env: { ...process.env, ...env },
  });
  const got = await waitFor(
    `the daemon's port file (log: ${log})`,
    () => {
      if (proc.exitCode !== null) throw new Error(`gpumon serve exited with ${proc.exitCode}: ${readFileSync(log, 'utf8')}`);
      return existsSync(portFile) ? Number(readFileSync(portFile, 'utf8').trim()) || 0 : 0;
    },
    15_000,
  );
  return { proc, port: got, base: `http://127.0.0.1:${got}/`, log };
}

export async function stopDaemon(d: Daemon | null, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!d || d.proc.exitCode !== null || d.proc.signalCode !== null) return;
  const done = new Promise((r) => d.proc.once('exit', r));
  d.proc.kill(signal);
  await Promise.race([done, sleep(10_000)]);
}

export async function api<T>(d: Daemon, path: string, headers: Record<string, string> = {}): Promise<T> {
  const r = await fetch(d.base + path, { headers });
  if (!r.ok) throw new Error(`${path}: ${r.status}`);
  return (await r.json()) as T;
}

/** A headless Chromium with its own profile folder. */
export async function launch(profile: string, viewport = { width: 1600, height: 1000 }): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (scripts/install-deps.sh)`);
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
    viewport,
    colorScheme: 'light',
    acceptDownloads: true,
  });
}

export interface Stored {
  /** The `gpumon record` runs, oldest first, by label. */
  records: Record<string, string>;
  /** The benchmarks, oldest first. */
  benches: string[];
}

/**
 * Fills a database as people do: two `gpumon record` runs on simulated GPUs and two `gpumon
 * bench` sweeps against the fake OpenAI server (its TTFT differs between them, so a comparison
 * shows a change). Returns their ids.
 */
export async function fillStore(work: string, db: string, recordSeconds = 1.2): Promise<Stored> {
  const server = spawn(FAKE_OPENAI, ['--port-file', join(work, 'openai.port'), '--ttft-ms', '4', '--itl-ms', '1'], {
    stdio: 'ignore',
  });
  try {
    const port = await waitFor('the fake OpenAI server', () =>
      existsSync(join(work, 'openai.port')) ? Number(readFileSync(join(work, 'openai.port'), 'utf8')) || 0 : 0,
    );
    const url = `http://127.0.0.1:${port}`;
    const record = (label: string, gpus: string, secs: number) =>
      run(GPUMON, ['record', '--db', db, '--simulate', gpus, '--interval', '0.1', '-q', '--label', label, '--', 'sleep', String(secs)]);
    const bench = (label: string, out: string) =>
      run(GPUMON, [
        'bench', '--url', url, '--concurrency', '1,4', '--requests', '8', '--output-tokens', '8', '--idle-seconds', '0',
        '-q', '--db', db, '--simulate', '2', '--label', label, '-o', join(work, out),
      ]);
    // One at a time into the store: their ids sort by start time.
    await record('train llama-8b', '4', recordSeconds);
    await record('eval', '2', recordSeconds / 2);
    await bench('sweep A', 'a.json');
    await bench('sweep B', 'b.json');
    const { stdout } = await run(GPUMON, ['history', 'list', '--db', db, '--format', 'json']);
    const rows = (JSON.parse(stdout) as { id: string; kind: string; label: string | null }[]).reverse();
    const records: Record<string, string> = {};
    for (const r of rows) if (r.kind === 'record' && r.label) records[r.label] = r.id;
    return { records, benches: rows.filter((r) => r.kind === 'bench').map((r) => r.id) };
  } finally {
    server.kill('SIGTERM');
  }
}
