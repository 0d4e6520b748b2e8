// One GPU: identity, the current value of every metric (or why it has none) and its two live
// charts. Only this card re-renders when a sample arrives; its charts update themselves.

import { href } from '../lib/router';
import {
  fmtMHz,
  fmtMiB,
  fmtPcie,
  fmtPercent,
  fmtRatio,
  fmtTemp,
  fmtWatts,
  healthLine,
  healthUnreported,
  LOST,
  NA,
} from '../lib/format';
import { powerHot, splitSimulated, tempHot } from '../lib/overview';
import type { Hot } from '../lib/overview';
import type { Store } from '../lib/store';
import type { Gpu } from '../lib/types';
import { useTopics } from './hooks';
import { MigTable } from './MigTable';
import { isStale, StaleNote } from './StaleNote';
import { TimeChart } from './TimeChart';

/** A horizontal 0-100 % gauge; absent values draw no bar at all. */
export function Meter({ pct, label }: { pct: number | null; label: string }) {
  const w = pct === null ? 0 : Math.max(0, Math.min(100, pct));
  return (
    <span class={`meter${pct === null ? ' meter-none' : ''}`} aria-hidden="true" title={label}>
      <span style={{ transform: `scaleX(${w / 100})` }} />
    </span>
  );
}

interface StatProps {
  name: string;
  field: string;
  value: string;
  sub?: string | undefined;
  title?: string | undefined;
  /** Near the GPU's own limit: coloured, with data-hot for tests. */
  hot?: Hot;
}

function Stat({ name, field, value, sub, title, hot }: StatProps) {
  const cls = (value === NA ? 'v na' : value === LOST ? 'v lost' : 'v') + (hot ? ` hot-${hot}` : '');
  return (
    <div class="stat" data-field={field} title={title} data-hot={hot ?? 'no'}>
      <dt>{name}</dt>
      <dd>
        <span class={cls}>{value}</span>
        <span class="sub">{sub ?? ''}</span>
      </dd>
    </div>
  );
}

/** The health line's explanation when the GPU reports none of the counters it is made of. */
export function healthNaNote(missing: readonly string[]): string {
  return `This GPU does not report ${missing.join(', ')}: nothing to judge its health by.`;
}

/** A GPU's name, with "(simulated)" kept whole beside it however narrow the title. */
export function GpuName({ name, field }: { name: string; field?: string }) {
  const { base, simulated } = splitSimulated(name);
  return (
    <span class="name gname" data-field={field} title={name}>
      <span class="name-base">{base}</span>
      {simulated && ' '}
      {simulated && <span class="name-tag">(simulated)</span>}
    </span>
  );
}

/** Throttle reasons worth a warning: "gpu_idle" is the normal state of an idle board. */
function throttleWarning(g: Gpu): string | null {
  const active = g.throttle_reasons?.active.filter((r) => r !== 'gpu_idle') ?? [];
  return active.length ? active.map((r) => r.replace(/_/g, ' ')).join(', ') : null;
}

export function GpuCard({ store, index }: { store: Store; index: number }) {
  useTopics(store, 'frame', 'window', 'link');
  const snap = store.snapshot;
  const g = snap?.gpus.find((x) => x.index === index);
  if (!snap || !g) return null;
  const lost = g.lost;
  const m = g.memory;
  const throttle = lost ? null : throttleWarning(g);
  const health = lost ? null : healthLine(g.health, snap.timestamp_ms);
  const ident = [g.name, g.uuid ? `UUID ${g.uuid}` : 'UUID n/a', g.pci_bus_id ? `PCI ${g.pci_bus_id}` : null]
    .filter(Boolean)
    .join('\n');
  const clocks = `${fmtMHz(g.clocks.sm_mhz, lost)}`;
  const clockSub = lost ? undefined : `mem ${fmtMHz(g.clocks.memory_mhz)}`;
  const pcieMax =
    g.pcie.gen_max !== null || g.pcie.width_max !== null ? `max ${fmtPcie(g.pcie.gen_max, g.pcie.width_max)}` : undefined;

  const stale = isStale(store);
  const temp = tempHot(g);
  const pow = powerHot(g);
  const missing = health?.level === 'na' ? healthUnreported(g.health) : [];
  return (
    <article
      class={`card gpu${lost ? ' is-lost' : ''}${stale ? ' is-stale' : ''}`}
      data-index={g.index}
      data-gpu-index={g.index}
      data-stale={stale ? 'yes' : 'no'}
      data-uuid={g.uuid ?? ''}
      data-seq={snap.seq}
      data-timestamp={snap.timestamp_ms}
      aria-labelledby={`gpu-${g.index}-title`}
    >
      <header class="card-head">
        <h2 id={`gpu-${g.index}-title`} tabIndex={0} aria-describedby={`gpu-${g.index}-ident`}>
          <a class="idx" href={href(`/gpu/${g.index}`)} title="Every metric of this GPU over time">
            GPU {g.index}
          </a>
          <GpuName name={g.name} field="name" />
        </h2>
        <span class="ident" id={`gpu-${g.index}-ident`} role="tooltip" data-field="uuid">
          {ident}
        </span>
        {g.vendor && (
          <span class="badge badge-vendor" data-field="vendor" title={`Read by ${g.provider ?? 'an unknown provider'}`}>
            {g.vendor}
          </span>
        )}
        {lost ? (
          <span class="badge badge-lost">lost</span>
        ) : (
          g.pstate && (
            <span class="badge" title="Performance state (P0 = highest)">
              {g.pstate}
            </span>
          )
        )}
      </header>
      <StaleNote store={store} />
      {lost && <p class="note">This GPU stopped answering the driver. Its values are marked lost until it returns.</p>}
      <dl class="stats">
        <div class="stat" data-field="util">
          <dt>Utilization</dt>
          <dd>
            <span class="line">
              <span class={lost ? 'v lost' : g.utilization.gpu === null ? 'v na' : 'v'}>{fmtPercent(g.utilization.gpu, lost)}</span>
            </span>
            <Meter pct={lost ? null : g.utilization.gpu} label="GPU utilization, 0 to 100 %" />
          </dd>
        </div>
        <div class="stat stat-wide" data-field="memory">
          <dt>Memory</dt>
          <dd>
            <span class="line">
              <span class={lost ? 'v lost' : m.used_mib === null ? 'v na' : 'v'}>
                {fmtRatio(fmtMiB(m.used_mib, lost), fmtMiB(m.total_mib, lost))}
              </span>
              <span class="sub" data-field="memory-percent">
                {fmtPercent(m.used_percent, lost)}
              </span>
            </span>
            <Meter pct={lost ? null : m.used_percent} label="Memory used, 0 to 100 %" />
          </dd>
        </div>
        <Stat
          name="Temperature"
          field="temperature"
          value={fmtTemp(g.temperature_c, lost)}
          hot={temp.level}
          title={temp.text ?? 'This GPU reports no slowdown threshold to compare with'}
        />
        <Stat
          name="Power"
          field="power"
          value={fmtWatts(g.power.draw_w, lost)}
          sub={lost ? undefined : `of ${fmtWatts(g.power.limit_w)}`}
          hot={pow.level}
          title={pow.text ?? undefined}
        />
        <Stat name="Fan" field="fan" value={fmtPercent(g.fan_percent, lost)} title="Boards cooled by the chassis report no fan" />
        <Stat name="SM clock" field="clocks" value={clocks} sub={clockSub} />
        <Stat
          name="PCIe"
          field="pcie"
          value={fmtPcie(g.pcie.gen_current, g.pcie.width_current, lost)}
          sub={lost ? undefined : pcieMax}
        />
        <Stat
          name="Enc / Dec"
          field="codec"
          value={fmtRatio(fmtPercent(g.utilization.encoder, lost), fmtPercent(g.utilization.decoder, lost))}
        />
      </dl>
      {throttle && (
        <p class="warn" data-field="throttle">
          Throttled: {throttle}
        </p>
      )}
      {health && (
        <p
          class={`health health-${health.level}`}
          data-field="health"
          data-level={health.level}
          title={missing.length ? healthNaNote(missing) : undefined}
        >
          {health.text}
          {missing.length > 0 && (
            <span class="sub" data-field="health-missing">
              {' '}
              · not reported: {missing.join(', ')}
            </span>
          )}
        </p>
      )}
      {!lost && <MigTable g={g} />}
      <div class="charts">
        <TimeChart store={store} gpu={g.index} kind="load" />
        <TimeChart store={store} gpu={g.index} kind="thermal" />
      </div>
    </article>
  );
}
