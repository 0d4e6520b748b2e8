// The Fleet page's logic: the request path, the "GPUs needed" field, the order of the nodes
// (select's ranking, down nodes last), each row's text (unknown values never 0), which links are
// followed, and the store: on/off from /api/config and /api/fleet, polling while shown, a failed
// Prometheus keeping the last answer, and answers to an older request dropped.
import { describe, expect, it } from 'vitest';

import { HttpError } from '../../src/lib/endpoint';
import { choiceLine, fleetPath, idleGpus, nodeCells, parseNeed, rankNodes, safeLink, totalsLine } from '../../src/fleet/model';
import { FleetStore, POLL_MS } from '../../src/fleet/store';
import type { FleetDeps } from '../../src/fleet/store';
import type { FleetDoc, FleetGpu, FleetNode } from '../../src/fleet/types';

const NOW = Date.parse('2026-11-26T09:10:20.000Z');

function gpu(id: string, idle: boolean): FleetGpu {
  return {
    gpu: id,
    uuid: `GPU-${id}`,
    model: 'NVIDIA H100',
    instance: '10.0.0.1:9400',
    idle,
    utilization_percent: idle ? 3 : 87,
    memory_used_mib: 1,
    memory_total_mib: 81920,
    memory_used_percent: 0.001,
    power_w: 70,
    temperature_c: 31,
    xid_last: 0,
    ecc_uncorrected_volatile: null,
    row_remap_failure: null,
  };
}

function node(name: string, over: Partial<FleetNode> = {}): FleetNode {
  return {
    name,
    url: `http://${name}:9400/`,
    up: true,
    targets: [{ instance: `${name}:9400`, up: true, last_scrape: '2026-11-26T09:10:17.000Z' }],
    last_scrape: '2026-11-26T09:10:17.000Z',
    last_scrape_age_seconds: 3,
    gpu_count: 2,
    idle_gpu_count: 1,
    utilization_mean_percent: 45,
    memory: { used_mib: 41804, total_mib: 162048, used_percent: 25.8 },
    power_w: 583.6,
    hottest: { gpu: '0', temperature_c: 64 },
    health: { status: 'ok', problems: [] },
    gpus: [gpu('0', false), gpu('1', true)],
    ...over,
  };
}

const down: Partial<FleetNode> = {
  up: false,
  gpu_count: null,
  idle_gpu_count: null,
  utilization_mean_percent: null,
  memory: { used_mib: null, total_mib: null, used_percent: null },
  power_w: null,
  hottest: null,
  health: { status: 'unknown', problems: [] },
  gpus: [],
};

function doc(nodes: FleetNode[], extra: Partial<FleetDoc> = {}): FleetDoc {
  return {
    time: '2026-11-26T09:10:20.000Z',
    prometheus: 'http://prometheus:9090',
    job: 'gpumon',
    fetched_at: '2026-11-26T09:10:20.001Z',
    cache_seconds: 5,
    thresholds: { max_util_percent: 30, max_memory_percent: 50 },
    totals: { nodes: nodes.length, nodes_up: nodes.filter((n) => n.up).length, gpus: 4, idle_gpus: 3 },
    nodes,
    ...extra,
  };
}

describe('the request and the field', () => {
  it('asks for a choice only when GPUs are needed', () => {
    expect(fleetPath(null)).toBe('api/fleet');
    expect(fleetPath(4)).toBe('api/fleet?gpus=4');
  });

  it('takes 1 to 4096 whole GPUs, nothing else', () => {
    expect(parseNeed('2')).toBe(2);
    expect(parseNeed(' 4096 ')).toBe(4096);
    for (const bad of ['', '0', '4097', '1.5', '-1', '1e3', '0x10', 'two', '12345']) expect(parseNeed(bad)).toBeNull();
  });
});

describe('the nodes', () => {
  it('ranks as select does: up first, most idle, lowest utilization, then name', () => {
    const nodes = [
      node('node-z', { idle_gpu_count: 2, utilization_mean_percent: 20 }),
      node('node-c', down),
      node('node-b', { idle_gpu_count: 2, utilization_mean_percent: 3 }),
      node('node-a', { idle_gpu_count: 1, utilization_mean_percent: 0 }),
      node('node-y', { idle_gpu_count: 2, utilization_mean_percent: 20 }),
      node('node-x', { idle_gpu_count: 0, utilization_mean_percent: null }),
      node('Node-w', down),
    ];
    expect(rankNodes(nodes).map((n) => n.name)).toEqual([
      'node-b',
      'node-y',
      'node-z',
      'node-a',
      'node-x',
      'Node-w', // bytes, as the daemon sorts: 'N' before 'n'
      'node-c',
    ]);
    expect(nodes[0]!.name).toBe('node-z'); // the input is left alone
  });

  it('writes a row, with unknown values as n/a, never 0', () => {
    const c = nodeCells(node('node-a'), NOW);
    expect(c.state).toBe('up');
    expect([c.gpus, c.idle, c.idleWhich]).toEqual(['2', '1', 'GPU\u00a01']);
    expect(c.util).toBe('45\u00a0%');
    expect(c.memory).toBe('26\u00a0% of 158\u00a0GiB');
    expect(c.power).toBe('584\u00a0W');
    expect(c.hottest).toBe('64\u00a0°C (GPU\u00a00)');
    expect([c.health, c.healthLevel]).toEqual(['ok', 'ok']);
    expect(c.scraped).toBe('3\u00a0s ago');

    const d = nodeCells(node('node-c', down), NOW);
    expect(d.state).toBe('down');
    for (const v of [d.gpus, d.idle, d.util, d.memory, d.power, d.hottest, d.health]) expect(v).toBe('n/a');
    expect(d.idleWhich).toBe('');
    expect(d.healthLevel).toBe('na');

    const bad = nodeCells(
      node('node-e', { health: { status: 'degraded', problems: ['GPU 1: XID 79', 'GPU 0: 2 uncorrectable ECC errors'] } }),
      NOW,
    );
    expect([bad.health, bad.healthLevel]).toEqual(['2 problems', 'bad']);
    expect(nodeCells(node('n', { last_scrape: null }), NOW).scraped).toBe('n/a');
  });

  it('lists the idle GPUs', () => {
    expect(idleGpus(node('a', { gpus: [gpu('0', true), gpu('1', false), gpu('3', true)] }))).toEqual(['0', '3']);
  });

  it('follows only plain http(s) links', () => {
    expect(safeLink('http://10.0.0.1:9400/')).toBe('http://10.0.0.1:9400/');
    expect(safeLink('https://[fd00::1]:9400/')).toBe('https://[fd00::1]:9400/');
    for (const bad of [null, undefined, '', 'javascript:alert(1)', 'data:text/html,x', 'http://u:p@h:1/', 'not a url'])
      expect(safeLink(bad)).toBeNull();
  });

  it('sums up the fleet and the choice', () => {
    const d = doc([node('node-a'), node('node-c', down)]);
    expect(totalsLine(d)).toBe('2 nodes (1 up) · 4 GPUs · 3 idle (utilization < 30\u00a0%, memory < 50\u00a0%)');
    expect(choiceLine(d)).toBeNull();
    expect(choiceLine(doc([], { gpus_needed: 2, chosen: 'node-b' }))).toEqual({
      chosen: 'node-b',
      text: 'A job of 2 GPUs would go to node-b',
    });
    expect(choiceLine(doc([], { gpus_needed: 1, chosen: null }))).toEqual({
      chosen: null,
      text: 'No node that is up has 1 idle GPU',
    });
  });
});

/** Deps whose answers the test gives by hand and whose timers it fires. */
function fakeDeps(hidden = false) {
  const calls: { path: string; resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = [];
  const timers: { fn: () => void; ms: number; live: boolean }[] = [];
  const deps: FleetDeps = {
    getJson: <T>(path: string) =>
      new Promise<T>((resolve, reject) => calls.push({ path, resolve: resolve as (v: unknown) => void, reject })),
    setTimer: (fn, ms) => {
      const t = { fn, ms, live: true };
      timers.push(t);
      return t;
    },
    clearTimer: (id) => {
      (id as { live: boolean }).live = false;
    },
    now: () => NOW,
    hidden: () => hidden,
  };
  const flush = (): Promise<void> => new Promise((r) => setTimeout(r, 0));
  const live = () => timers.filter((t) => t.live);
  /** Fires the pending timer, as the browser would once its time is up. */
  const fire = (): void => {
    const t = live()[0]!;
    t.live = false;
    t.fn();
  };
  return { deps, calls, timers, live, fire, flush };
}

describe('the store', () => {
  it('is on when the daemon names a Prometheus, and polls while the page is shown', async () => {
    const f = fakeDeps();
    const s = new FleetStore(f.deps);
    let changes = 0;
    s.subscribe(() => changes++);
    void s.loadConfig();
    expect(f.calls[0]!.path).toBe('api/config');
    f.calls[0]!.resolve({ prometheus: 'http://prometheus:9090' });
    await f.flush();
    expect([s.state, s.prometheus]).toEqual(['on', 'http://prometheus:9090']);
    expect(f.calls).toHaveLength(1); // nothing asked before the page is shown

    s.setActive(true);
    expect(f.calls[1]!.path).toBe('api/fleet');
    f.calls[1]!.resolve(doc([node('node-a')]));
    await f.flush();
    expect(s.doc?.nodes[0]!.name).toBe('node-a');
    expect(s.answeredAt).toBe(NOW);
    expect(changes).toBeGreaterThanOrEqual(2);
    // The next poll in POLL_MS.
    expect(f.live()).toHaveLength(1);
    expect(f.live()[0]!.ms).toBe(POLL_MS);
    f.fire();
    expect(f.calls[2]!.path).toBe('api/fleet');

    // Leaving the page stops the polls.
    f.calls[2]!.resolve(doc([node('node-a')]));
    await f.flush();
    s.setActive(false);
    expect(f.live()).toHaveLength(0);
  });

  it('is off without --prometheus and asks nothing', async () => {
    const f = fakeDeps();
    const s = new FleetStore(f.deps);
    void s.loadConfig();
    f.calls[0]!.resolve({ prometheus: null });
    await f.flush();
    expect(s.state).toBe('off');
    s.setActive(true);
    expect(f.calls).toHaveLength(1);
  });

  it('learns "off" from a 404 of /api/fleet', async () => {
    const f = fakeDeps();
    const s = new FleetStore(f.deps);
    s.setActive(true);
    f.calls[0]!.reject(new HttpError(404, 'the fleet view is off'));
    await f.flush();
    expect(s.state).toBe('off');
    expect(s.error).toBeNull();
    expect(f.live()).toHaveLength(0);
  });

  it('keeps the last answer when Prometheus fails, and says why', async () => {
    const f = fakeDeps();
    const s = new FleetStore(f.deps);
    s.setActive(true);
    f.calls[0]!.resolve(doc([node('node-a')]));
    await f.flush();
    f.fire();
    f.calls[1]!.reject(new HttpError(502, 'cannot reach Prometheus at http://prometheus:9090'));
    await f.flush();
    expect(s.state).toBe('on');
    expect(s.error).toBe('cannot reach Prometheus at http://prometheus:9090');
    expect(s.doc?.nodes).toHaveLength(1);
    expect(f.live()).toHaveLength(1); // it keeps asking
    f.fire();
    f.calls[2]!.resolve(doc([node('node-a'), node('node-b')]));
    await f.flush();
    expect(s.error).toBeNull();
    expect(s.doc?.nodes).toHaveLength(2);
  });

  it('asks with the GPUs needed and drops the answer to an older request', async () => {
    const f = fakeDeps();
    const s = new FleetStore(f.deps);
    s.setActive(true);
    s.setNeed(2);
    expect(f.calls.map((c) => c.path)).toEqual(['api/fleet', 'api/fleet?gpus=2']);
    f.calls[1]!.resolve(doc([node('node-b')], { gpus_needed: 2, chosen: 'node-b' }));
    await f.flush();
    f.calls[0]!.resolve(doc([node('stale')]));
    await f.flush();
    expect(s.doc?.chosen).toBe('node-b');
    expect(s.doc?.nodes[0]!.name).toBe('node-b');
    s.setNeed(2); // unchanged: no new request
    expect(f.calls).toHaveLength(2);
  });

  it('skips polls while the tab is hidden', async () => {
    const f = fakeDeps(true);
    const s = new FleetStore(f.deps);
    s.setActive(true);
    f.calls[0]!.resolve(doc([]));
    await f.flush();
    f.fire();
    expect(f.calls).toHaveLength(1);
    expect(f.live()).toHaveLength(1); // tried again later
  });
});
