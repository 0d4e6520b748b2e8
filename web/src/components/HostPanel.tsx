// The host the GPUs sit in: CPU (total and per core), memory, swap, load, uptime, CPU model.
// It stays live when no GPU is found.

import { fmtBytes, fmtDuration, fmtLoad, fmtPercent, fmtRatio, NA } from '../lib/format';
import type { Store } from '../lib/store';
import { Meter } from './GpuCard';
import { useTopics } from './hooks';

export function HostPanel({ store }: { store: Store }) {
  useTopics(store, 'frame');
  const h = store.snapshot?.system ?? null;
  if (!h) {
    return (
      <section class="card host" aria-labelledby="host-title">
        <header class="card-head">
          <h2 id="host-title">Host</h2>
        </header>
        <p class="note">{store.snapshot ? 'Host metrics are off or could not be read.' : 'Waiting for the first sample.'}</p>
      </section>
    );
  }
  const swapPct =
    h.swap.total_bytes !== null && h.swap.used_bytes !== null && h.swap.total_bytes > 0
      ? (100 * h.swap.used_bytes) / h.swap.total_bytes
      : null;
  return (
    <section class="card host" aria-labelledby="host-title" data-field="host">
      <header class="card-head">
        <h2 id="host-title">
          Host <span class="name">{h.hostname ?? NA}</span>
        </h2>
      </header>
      <dl class="stats">
        <div class="stat stat-wide" data-field="cpu">
          <dt>CPU</dt>
          <dd>
            <span class="line">
              <span class={h.cpu_percent === null ? 'v na' : 'v'}>{fmtPercent(h.cpu_percent)}</span>
              <span class="sub">{h.cpu_count !== null ? `${h.cpu_count} threads` : ''}</span>
            </span>
            <Meter pct={h.cpu_percent} label="CPU utilization, 0 to 100 %" />
          </dd>
        </div>
        <div class="stat stat-wide" data-field="host-memory">
          <dt>Memory</dt>
          <dd>
            <span class="line">
              <span class="v">{fmtRatio(fmtBytes(h.memory.used_bytes), fmtBytes(h.memory.total_bytes))}</span>
              <span class="sub">{fmtPercent(h.memory.used_percent)}</span>
            </span>
            <Meter pct={h.memory.used_percent} label="Host memory used, 0 to 100 %" />
          </dd>
        </div>
        <div class="stat" data-field="swap">
          <dt>Swap</dt>
          <dd>
            <span class="v">
              {h.swap.total_bytes === 0 ? 'none' : fmtRatio(fmtBytes(h.swap.used_bytes), fmtBytes(h.swap.total_bytes))}
            </span>
            <span class="sub">{swapPct !== null ? fmtPercent(Math.round(swapPct * 10) / 10) : ''}</span>
          </dd>
        </div>
        <div class="stat" data-field="load" title="Load average over 1, 5 and 15 minutes">
          <dt>Load 1/5/15</dt>
          <dd>
            <span class="v">{fmtLoad(h.load_average)}</span>
          </dd>
        </div>
        <div class="stat" data-field="uptime">
          <dt>Uptime</dt>
          <dd>
            <span class="v">{fmtDuration(h.uptime_seconds)}</span>
          </dd>
        </div>
        <div class="stat stat-wide" data-field="cpu-model">
          <dt>CPU model</dt>
          <dd>
            <span class="v text">{h.cpu_model ?? NA}</span>
            {h.kernel && <span class="sub">Linux {h.kernel}</span>}
          </dd>
        </div>
      </dl>
      {h.cpu_per_core.length > 0 && (
        <div class="cores-head" data-field="cores-label">
          <span>CPU utilization per core</span>
          <span>bar height 0–100 %</span>
        </div>
      )}
      {h.cpu_per_core.length > 0 && (
        <div class="cores" role="list" aria-label="CPU utilization per core, 0 to 100 %">
          {h.cpu_per_core.map((v, i) => (
            <span
              class={v === null ? 'core na' : 'core'}
              role="listitem"
              key={i}
              title={`core ${i}: ${fmtPercent(v)}`}
              aria-label={`core ${i}: ${fmtPercent(v)}`}
            >
              <span style={{ transform: `scaleY(${v === null ? 0 : Math.max(0, Math.min(100, v)) / 100})` }} />
            </span>
          ))}
        </div>
      )}
      {h.cpu_per_core.length > 0 && (
        <div class="cores-axis" data-field="cores-axis" aria-hidden="true">
          <span>core 0</span>
          {h.cpu_per_core.length > 2 && <span>{Math.floor((h.cpu_per_core.length - 1) / 2)}</span>}
          <span>{h.cpu_per_core.length - 1}</span>
        </div>
      )}
    </section>
  );
}
