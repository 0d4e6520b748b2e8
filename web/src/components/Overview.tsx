// The overview of many GPUs: one dense tile each with the key numbers and a sparkline of
// utilization and memory over the chart window, so 16 GPUs fit a 1600x1000 screen. A tile links
// to its GPU's page.

import { COL_MEM, COL_UTIL } from '../lib/history';
import { fmtMiB, fmtPercent, fmtTemp, fmtWatts, healthLine, LOST } from '../lib/format';
import { shortName, sparkSegments } from '../lib/overview';
import { href } from '../lib/router';
import type { Store } from '../lib/store';
import { useTopics } from './hooks';
import { Meter } from './GpuCard';
import { isStale, StaleNote } from './StaleNote';

const SPARK_W = 200;
const SPARK_H = 40;

function Tile({ store, index }: { store: Store; index: number }) {
  useTopics(store, 'frame', 'series', 'link', 'window');
  const snap = store.snapshot;
  const g = snap?.gpus.find((x) => x.index === index);
  if (!snap || !g) return null;
  const lost = g.lost;
  const b = store.buffer(index);
  const end = snap.timestamp_ms / 1000;
  const x0 = end - store.window;
  const util = sparkSegments(b.x, b.cols[COL_UTIL] ?? [], x0, end, 100, SPARK_W, SPARK_H);
  const mem = sparkSegments(b.x, b.cols[COL_MEM] ?? [], x0, end, 100, SPARK_W, SPARK_H);
  const health = lost ? null : healthLine(g.health, snap.timestamp_ms);
  const throttled = !lost && (g.throttle_reasons?.active.some((r) => r !== 'gpu_idle') ?? false);
  const stale = isStale(store);
  const v = (text: string): string => (text === LOST ? 'v lost' : text === 'n/a' ? 'v na' : 'v');
  const utilText = fmtPercent(g.utilization.gpu, lost);
  const memText = fmtPercent(g.memory.used_percent, lost);
  const tempText = fmtTemp(g.temperature_c, lost);
  const powText = fmtWatts(g.power.draw_w, lost);
  return (
    <a
      class={`tile${lost ? ' is-lost' : ''}${stale ? ' is-stale' : ''}`}
      href={href(`/gpu/${index}`)}
      data-gpu-index={index}
      data-stale={stale ? 'yes' : 'no'}
      data-seq={snap.seq}
      title={`${g.name}${g.uuid ? `\n${g.uuid}` : ''}`}
    >
      <span class="tile-head">
        <b>GPU {index}</b>
        <span class="name">{shortName(g.name)}</span>
        {health && health.level !== 'ok' && health.level !== 'na' && (
          <span class={`dot-${health.level}`} title={health.text} aria-label={health.text} />
        )}
        {throttled && (
          <span class="badge badge-warn" title={g.throttle_reasons?.active.join(', ')}>
            throttled
          </span>
        )}
        {lost ? <span class="badge badge-lost">lost</span> : g.pstate && <span class="badge">{g.pstate}</span>}
      </span>
      <span class="tile-nums">
        <span data-field="util">
          <small>util</small>
          <span class={v(utilText)}>{utilText}</span>
          <Meter pct={lost ? null : g.utilization.gpu} label="GPU utilization" />
        </span>
        <span data-field="memory" title={`${fmtMiB(g.memory.used_mib, lost)} of ${fmtMiB(g.memory.total_mib, lost)}`}>
          <small>mem</small>
          <span class={v(memText)}>{memText}</span>
          <Meter pct={lost ? null : g.memory.used_percent} label="Memory used" />
        </span>
        <span data-field="temperature">
          <small>temp</small>
          <span class={v(tempText)}>{tempText}</span>
        </span>
        <span data-field="power" title={`limit ${fmtWatts(g.power.limit_w, lost)}`}>
          <small>power</small>
          <span class={v(powText)}>{powText}</span>
        </span>
      </span>
      <svg class="spark" viewBox={`0 0 ${SPARK_W} ${SPARK_H}`} preserveAspectRatio="none" aria-hidden="true">
        {mem.map((pts, i) => (
          <polyline key={`m${i}`} class="spark-mem" points={pts} />
        ))}
        {util.map((pts, i) => (
          <polyline key={`u${i}`} class="spark-util" points={pts} />
        ))}
      </svg>
      <StaleNote store={store} />
    </a>
  );
}

export function Overview({ store }: { store: Store }) {
  useTopics(store, 'layout');
  const gpus = store.snapshot?.gpus ?? [];
  return (
    <div class="overview" data-view-shown="overview">
      {gpus.map((g) => (
        <Tile key={g.uuid ?? g.index} store={store} index={g.index} />
      ))}
    </div>
  );
}
