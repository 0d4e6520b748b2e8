// One recorded run, shown as an experiment: a summary box (duration and samples), the
// per-GPU statistics (mean with min-max), and charts of utilization, memory, temperature and
// power over its timeline, one line per GPU; export and delete. A running session refreshes.

import { useEffect, useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { Chart } from '../components/Chart';
import { RunActions } from '../components/RunActions';
import { useResource } from '../components/hooks';
import type { Api } from '../lib/api';
import { HttpError } from '../lib/endpoint';
import { fmtPercent, fmtTemp, fmtWatts, NA } from '../lib/format';
import { href } from '../lib/router';
import { niceCeil, percentRange, powerRange, temperatureRange } from '../lib/scales';
import type { SessionDoc, StatCell, TimelineMetric } from '../lib/sessions';
import { docGpus, fmtDateTime, fmtEnergy, fmtRunDuration, gpuColor, runPath, runTitle, statsRows, timelineColumns } from '../lib/sessions';
import type { Num } from '../lib/types';

/** How often a running session is read again. */
const REFRESH_MS = 5000;

interface Loaded {
  doc: SessionDoc;
  /** Why there is no timeline to chart (too long for one answer), or null. */
  noTimeline: string | null;
}

async function loadSession(api: Api, id: string): Promise<Loaded> {
  const path = `api/sessions/${encodeURIComponent(id)}`;
  try {
    return { doc: await api.json<SessionDoc>(path), noTimeline: null };
  } catch (e) {
    if (!(e instanceof HttpError) || e.status !== 413) throw e;
    // Over the response limit: the statistics without the samples.
    return { doc: await api.json<SessionDoc>(`${path}?timeline=0`), noTimeline: e.message };
  }
}

function Cell({ c }: { c: StatCell }) {
  return (
    <td class={c.mean === NA ? 'num na' : 'num'}>
      <span class="mean">{c.mean}</span>
      {c.range && <span class="range">{c.range}</span>}
    </td>
  );
}

const CHARTS: { metric: TimelineMetric; title: string; unit: string; fmt: (v: Num) => string }[] = [
  { metric: 'utilization', title: 'GPU utilization', unit: '%', fmt: (v) => fmtPercent(v) },
  { metric: 'memory_usage_percent', title: 'Memory used, % of total', unit: '%', fmt: (v) => fmtPercent(v) },
  { metric: 'temperature_c', title: 'Temperature', unit: '°C', fmt: (v) => fmtTemp(v) },
  { metric: 'power_draw_w', title: 'Power draw', unit: 'W', fmt: (v) => fmtWatts(v) },
];

function range(metric: TimelineMetric, max: number | null): [number, number] {
  if (metric === 'utilization' || metric === 'memory_usage_percent') return percentRange();
  if (metric === 'temperature_c') return temperatureRange(max);
  if (metric === 'power_draw_w') return powerRange(null, max);
  return [0, niceCeil(max ?? 1)];
}

export function SessionPage({ app, params }: PageProps) {
  const { api } = app;
  const id = params.id ?? '';
  const [tick, setTick] = useState(0);
  const res = useResource(() => loadSession(api, id), [id, tick]);
  const doc = res.data?.doc ?? null;
  const running = doc?.status === 'running';

  // A benchmark is stored as a run too, but its document has points, not a timeline: it is
  // shown on its own page (the address replaced, so Back does not return here).
  const bench = doc?.kind === 'bench';
  useEffect(() => {
    if (bench) location.replace(href(runPath({ id, kind: 'bench' })));
  }, [bench, id]);

  useEffect(() => {
    if (!running) return;
    const t = setTimeout(() => setTick((n) => n + 1), REFRESH_MS);
    return () => clearTimeout(t);
  }, [running, res.data]);

  if (res.error && !doc)
    return (
      <section class="card" data-state={res.status === 404 ? 'not-found' : 'error'}>
        <h2>{res.status === 404 ? `No session ${id}` : `Cannot read session ${id}`}</h2>
        <p class="note">
          {res.error} · <a href={href('/sessions')}>All sessions</a>
        </p>
      </section>
    );
  if (!doc) return <p class="loading">Loading session {id}…</p>;
  if (bench)
    return (
      <p class="loading">
        {id} is a benchmark: <a href={href(runPath(doc))}>its page</a>…
      </p>
    );

  const gpus = docGpus(doc);
  const rows = statsRows(doc);
  const long = (doc.monitoring_duration_seconds ?? 0) > 86400;
  const canStop = running && doc.kind === 'session';

  return (
    <div class="page page-session" data-id={doc.id} data-status={doc.status}>
      <div class="toolbar">
        <a href={href('/sessions')} class="back">
          ← Sessions
        </a>
        <h2 class="page-title">
          {runTitle(doc)} {doc.label && <span class="name">{doc.id}</span>}
        </h2>
        {doc.kind !== 'session' && <span class="badge">{doc.kind}</span>}
        {doc.provider === 'sim' && <span class="badge badge-sim">simulated</span>}
        <div class="spacer" />
        {canStop && (
          <button
            type="button"
            class="btn"
            data-action="stop"
            onClick={() => void api.post(`api/sessions/${encodeURIComponent(doc.id)}/stop`).then(() => setTick((n) => n + 1))}
          >
            Stop
          </button>
        )}
        <RunActions
          api={api}
          id={doc.id}
          what="session"
          canDelete={!(running && doc.kind !== 'session')}
          whyNot="Another process is still recording it"
          onDeleted={() => {
            location.hash = href('/sessions', { deleted: runTitle(doc) });
          }}
        />
      </div>

      <section class="summary" data-field="summary" aria-label="Summary">
        <div>
          <span class="k">Duration</span>
          <span class="v" data-field="duration">
            {fmtRunDuration(doc.monitoring_duration_seconds)}
          </span>
        </div>
        <div>
          <span class="k">Samples</span>
          <span class="v" data-field="samples">
            {doc.sample_count}
            {doc.interval_seconds !== null ? ` every ${doc.interval_seconds} s` : ''}
          </span>
        </div>
        <div>
          <span class="k">Status</span>
          <span class={`v status-${doc.status}`} data-field="status">
            {doc.status}
            {doc.stop_reason ? ` (${doc.stop_reason.replace(/_/g, ' ')})` : ''}
          </span>
        </div>
        <div>
          <span class="k">Started</span>
          <span class="v">{fmtDateTime(doc.started_at)}</span>
        </div>
        <div>
          <span class="k">Ended</span>
          <span class="v">{doc.ended_at ? fmtDateTime(doc.ended_at) : running ? 'running' : NA}</span>
        </div>
        <div>
          <span class="k">Energy</span>
          <span class="v" data-field="energy">
            {fmtEnergy(doc.energy_j)}
          </span>
        </div>
        {doc.command && (
          <div class="wide">
            <span class="k">Command</span>
            <code class="v" data-field="command">
              {doc.command.join(' ')}
            </code>
            {doc.exit_code !== null && <span class="note"> exit {doc.exit_code}</span>}
          </div>
        )}
        {doc.hostname && (
          <div>
            <span class="k">Host</span>
            <span class="v">{doc.hostname}</span>
          </div>
        )}
      </section>

      <section class="card">
        <header class="card-head">
          <h2>GPU statistics</h2>
          <span class="note">mean, and the range from the lowest to the highest sample</span>
        </header>
        <div class="table-wrap">
          <table class="stats-table" data-field="gpu-stats">
            <thead>
              <tr>
                <th class="c-gpu">GPU</th>
                <th class="c-model">Model</th>
                <th class="num">Utilization</th>
                <th class="num">Memory</th>
                <th class="num">Memory %</th>
                <th class="num">Temperature</th>
                <th class="num">Power</th>
                <th class="num">Energy</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.index} data-gpu={r.index}>
                  <td class="c-gpu">
                    <span class="sw" style={{ background: gpuColor(gpus.indexOf(r.index)) }} /> {r.index}
                  </td>
                  <td class="c-model" title={r.name}>
                    {r.name}
                  </td>
                  <Cell c={r.utilization} />
                  <Cell c={r.memory} />
                  <Cell c={r.memoryPercent} />
                  <Cell c={r.temperature} />
                  <Cell c={r.power} />
                  <td class={r.energy === NA ? 'num na' : 'num'}>{r.energy}</td>
                </tr>
              ))}
              {rows.length === 0 && (
                <tr class="empty">
                  <td colSpan={8}>No GPU statistics in this entry.</td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      </section>

      {res.data?.noTimeline && (
        <p class="banner banner-soft">
          The timeline is too long to chart here ({res.data.noTimeline}). Export it as CSV instead.
        </p>
      )}
      {doc.timeline && doc.timeline.length > 0 && gpus.length > 0 && (
        <div class="session-charts">
          {CHARTS.map((ch) => {
            const data = timelineColumns(doc, gpus, ch.metric);
            return (
              <Chart
                key={ch.metric}
                kind={ch.metric}
                title={ch.title}
                unit={ch.unit}
                lines={gpus.map((g, i) => ({ label: `GPU ${g}`, color: gpuColor(i) }))}
                data={data}
                range={(m) => range(ch.metric, m)}
                fmt={ch.fmt}
                dates={long}
              />
            );
          })}
        </div>
      )}
      {doc.timeline && doc.timeline.length === 0 && <p class="note">No sample yet.</p>}
      <p class="note">
        The same figures as <code>gpumon history show {doc.id}</code>.
      </p>
    </div>
  );
}
