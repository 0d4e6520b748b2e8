// The overview of many GPUs: a summary row (total power, mean utilization, idle GPUs, the
// hottest), then one dense tile each with the key numbers and a sparkline of utilization and
// memory over the chart window, so 16 GPUs fit a 1600x1000 screen. A tile links to its GPU's
// page. Temperature and power near the GPU's own limits are coloured.

import { COL_MEM, COL_UTIL } from '../lib/history';
import { fmtMiB, fmtPercent, fmtTemp, fmtWatts, healthLine, LOST } from '../lib/format';
import { fleetSummary, IDLE_UTIL_PCT, powerHot, shortName, sparkSegments, splitSimulated, tempHot } from '../lib/overview';
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
  const temp = tempHot(g);
  const pow = powerHot(g);
  const simulated = splitSimulated(g.name).simulated;
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
        {simulated && (
          <span class="badge" title="A simulated GPU (gpumon serve --simulate)">
            sim
          </span>
        )}
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
        <span data-field="temperature" data-hot={temp.level ?? 'no'} title={temp.text ?? 'no slowdown threshold reported'}>
          <small>temp</small>
          <span class={v(tempText) + (temp.level ? ` hot-${temp.level}` : '')}>{tempText}</span>
        </span>
        <span data-field="power" data-hot={pow.level ?? 'no'} title={pow.text ?? `limit ${fmtWatts(g.power.limit_w, lost)}`}>
          <small>power</small>
          <span class={v(powText) + (pow.level ? ` hot-${pow.level}` : '')}>{powText}</span>
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

/** One line over the tiles: what the GPUs add up to. */
export function Summary({ store }: { store: Store }) {
  useTopics(store, 'frame');
  const gpus = store.snapshot?.gpus ?? [];
  if (!gpus.length) return null;
  const s = fleetSummary(gpus);
  const hottest = s.hottest ? gpus.find((g) => g.index === s.hottest?.index) : undefined;
  const hot = hottest ? tempHot(hottest) : { level: null, text: null };
  return (
    <div class="summary" data-field="summary" role="group" aria-label="All GPUs">
      <span data-field="total-power" title={s.powerLimitW !== null ? `of ${fmtWatts(s.powerLimitW)} of limits` : undefined}>
        <small>total power</small>
        <b>{fmtWatts(s.powerW === null ? null : Math.round(s.powerW))}</b>
        {s.powerLimitW !== null && <span class="sub"> of {fmtWatts(Math.round(s.powerLimitW))}</span>}
      </span>
      <span data-field="mean-util">
        <small>mean utilization</small>
        <b>{fmtPercent(s.utilMean === null ? null : Math.round(s.utilMean))}</b>
      </span>
      <span data-field="idle" title={`GPUs at or below ${IDLE_UTIL_PCT} % utilization`}>
        <small>idle GPUs</small>
        <b>{s.utilReported ? `${s.idle} of ${s.utilReported}` : 'n/a'}</b>
      </span>
      <span data-field="hottest" data-hot={hot.level ?? 'no'} title={hot.text ?? undefined}>
        <small>hottest</small>
        {s.hottest ? (
          <a href={href(`/gpu/${s.hottest.index}`)}>
            GPU {s.hottest.index} <b class={hot.level ? `hot-${hot.level}` : undefined}>{fmtTemp(s.hottest.temp)}</b>
          </a>
        ) : (
          <b>n/a</b>
        )}
      </span>
      <span data-field="gpu-count">
        <small>GPUs</small>
        <b>{s.gpus}</b>
      </span>
    </div>
  );
}

export function Overview({ store }: { store: Store }) {
  useTopics(store, 'layout');
  const gpus = store.snapshot?.gpus ?? [];
  return (
    <>
      <Summary store={store} />
      <div class="overview" data-view-shown="overview">
        {gpus.map((g) => (
          <Tile key={g.uuid ?? g.index} store={store} index={g.index} />
        ))}
      </div>
    </>
  );
}
