// The store: frames batched per animation frame, backfill on load, on window change and after
// a reconnect, and stale answers ignored.
import { describe, expect, it } from 'vitest';

import { Store } from '../../src/lib/store';
import type { Gpu, HistoryResponse, ServerConfig, Snapshot } from '../../src/lib/types';

function gpu(index: number, util: number | null): Gpu {
  return {
    index,
    name: 'GPU',
    uuid: `GPU-${index}`,
    pci_bus_id: null,
    lost: false,
    utilization: { gpu: util, memory: null, encoder: null, decoder: null },
    memory: { total_mib: 1000, used_mib: 100, free_mib: 900, reserved_mib: null, used_percent: 10 },
    temperature_c: 40,
    power: { draw_w: 100, limit_w: 300 },
    clocks: { graphics_mhz: null, sm_mhz: null, memory_mhz: null, max_graphics_mhz: null, max_sm_mhz: null, max_memory_mhz: null },
    fan_percent: null,
    pcie: { gen_current: null, gen_max: null, width_current: null, width_max: null, tx_kbps: null, rx_kbps: null },
    pstate: null,
    throttle_reasons: null,
    persistence_mode: null,
    processes: [],
  };
}

function snap(seq: number, t: number, gpus: Gpu[]): Snapshot {
  return {
    timestamp: '',
    timestamp_ms: t,
    seq,
    hostname: 'h',
    provider: 'sim',
    driver_version: null,
    cuda_version: null,
    nvml_version: null,
    gpu_count: gpus.length,
    gpus,
    processes_dropped: 0,
    system: null,
  };
}

const config: ServerConfig = { history_seconds: 3600, poll_interval_ms: 1000, ws_max_rate_hz: 5, version: 'x' };

function setup() {
  const requests: string[] = [];
  const pending: { url: string; resolve: (r: HistoryResponse) => void }[] = [];
  let queued: (() => void)[] = [];
  let now = 100_000;
  const store = new Store({
    getJson: <T,>(url: string) =>
      new Promise<T>((resolve) => {
        requests.push(url);
        pending.push({ url, resolve: resolve as unknown as (r: HistoryResponse) => void });
      }),
    schedule: (fn) => queued.push(fn),
    now: () => now,
  });
  store.setConfig(config);
  const frame = (): void => {
    const q = queued;
    queued = [];
    q.forEach((f) => f());
  };
  return {
    store,
    requests,
    pending,
    frame,
    setNow: (t: number) => (now = t),
    queuedCount: () => queued.length,
  };
}

const history = (gpu: number, pts: [number, number][]): HistoryResponse => ({
  interval_ms: 1000,
  step_ms: null,
  seconds: 60,
  series: [{ gpu, metric: 'utilization.gpu', unit: '%', clamped: false, points: pts }],
});

describe('Store', () => {
  it('notifies once per animation frame however many samples arrive', () => {
    const { store, frame, queuedCount } = setup();
    let renders = 0;
    store.subscribe('frame', () => renders++);
    for (let i = 0; i < 5; i++) store.accept(snap(i + 1, 1000 * (i + 1), [gpu(0, i)]));
    expect(queuedCount()).toBe(1);
    frame();
    expect(renders).toBe(1);
    expect(store.snapshot?.seq).toBe(5);
    expect(store.buffer(0).length).toBe(5);
  });

  it('backfills the window on the first sample and merges the answer', async () => {
    const { store, requests, pending } = setup();
    store.accept(snap(10, 60_000, [gpu(0, 7)]));
    expect(requests).toEqual([
      'api/history?gpu=0&metric=utilization.gpu,memory.used,temperature.gpu,power.draw&seconds=60',
    ]);
    // A sample arrives while the request is out; it must survive the merge.
    store.accept(snap(11, 61_000, [gpu(0, 8)]));
    pending[0]?.resolve(history(0, [[58_000, 5], [59_000, 6], [60_000, 7]]));
    await Promise.resolve();
    await Promise.resolve();
    expect(store.buffer(0).data()[1]).toEqual([5, 6, 7, 8]);
    expect(store.seriesGeneration).toBe(1);
  });

  it('asks again at the new resolution when the window changes, ignoring the old answer', async () => {
    const { store, requests, pending } = setup();
    store.accept(snap(1, 60_000, [gpu(0, 1)]));
    store.setWindow(3600);
    expect(requests[1]).toContain('seconds=3600&step=4');
    pending[0]?.resolve(history(0, [[59_000, 99]]));
    await Promise.resolve();
    await Promise.resolve();
    expect(store.buffer(0).data()[1]).not.toContain(99);
    expect(store.buffer(0).stepMs).toBe(4000);
  });

  it('refills only the gap after a reconnect', () => {
    const { store, requests, setNow } = setup();
    store.setLink({ kind: 'live' });
    store.accept(snap(1, 60_000, [gpu(0, 1)]));
    store.setLink({ kind: 'reconnecting', retryAt: 0, failures: 1 });
    setNow(100_000 + 20_000);
    store.setLink({ kind: 'live' });
    expect(requests).toHaveLength(2);
    expect(requests[1]).toMatch(/seconds=(2[0-9])$/);
  });

  it('starts the series over when the GPUs change (a different daemon)', () => {
    const { store } = setup();
    store.accept(snap(1, 1000, [gpu(0, 1)]));
    store.accept(snap(2, 2000, [gpu(0, 2)]));
    expect(store.buffer(0).length).toBe(2);
    store.accept(snap(1, 3000, [gpu(0, 3), gpu(1, 3)]));
    expect(store.buffer(0).length).toBe(1);
  });

  it('rejects frames that are not samples', () => {
    const { store } = setup();
    expect(store.ingest('not json')).toBe(false);
    expect(store.ingest('{"gpus":"no"}')).toBe(false);
    expect(store.ingest(JSON.stringify(snap(1, 1, [])))).toBe(true);
  });

  it('hands every sample to onSample listeners, even several in one animation frame', () => {
    const { store, frame } = setup();
    const seen: number[] = [];
    const off = store.onSample((s) => seen.push(s.seq));
    store.accept(snap(1, 1000, [gpu(0, 10)]));
    store.accept(snap(2, 2000, [gpu(0, 20)]));
    frame();
    expect(seen).toEqual([1, 2]);
    off();
    store.accept(snap(3, 3000, [gpu(0, 30)]));
    expect(seen).toEqual([1, 2]);
  });
});
