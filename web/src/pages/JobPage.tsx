// One benchmark job, live: its state through every step (queued, waiting for GPUs, starting,
// loading, running point k of n, and how it ended), the current point's progress, TTFT and
// throughput as they come, the leased GPUs' utilization and power beside them, cancel, the
// stored result once it ends, and the reason and the container's last lines when it failed.
// Updates come over WS /ws/benchmarks (one frame a sample); GET /api/benchmarks/jobs/{id} is
// asked once, then only while that stream is down.

import { useEffect, useRef, useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { Chart } from '../components/Chart';
import { useTicker } from '../components/hooks';
import { Backoff, DEFAULT_BACKOFF } from '../lib/backoff';
import { Connection, linkLabel } from '../lib/connection';
import type { LinkState } from '../lib/connection';
import { fmtPercent, fmtWatts } from '../lib/format';
import type { Job, JobState } from '../lib/jobs';
import { cancellable, finished, jobInFrame, logText, shouldPoll, stateText } from '../lib/jobs';
import { href } from '../lib/router';
import { niceCeil, percentRange, powerRange } from '../lib/scales';
import { gpuColor } from '../lib/sessions';
import type { Num, Snapshot } from '../lib/types';

/** Live series: [t, ttft p50, ttft p99, tokens/s], appended as the job moves. */
interface Series {
  t: Num[];
  p50: Num[];
  p99: Num[];
  tps: Num[];
}

/** The leased GPUs over the job: [t, one column per GPU] for utilization and for power. */
interface GpuSeries {
  gpus: number[];
  t: Num[];
  util: Num[][];
  power: Num[][];
}

/** An hour at one reading a second. */
const KEEP = 3600;
const POLL_MS = 1000;
/** A frame that no longer lists a job we think runs: ask for it, at most this often. */
const RECHECK_MS = 5000;

/** The steps shown above the progress, in order; how a job ended replaces "done". */
const STEPS: readonly { state: JobState; label: string }[] = [
  { state: 'queued', label: 'queued' },
  { state: 'waiting_gpus', label: 'waiting for GPUs' },
  { state: 'starting', label: 'starting' },
  { state: 'loading', label: 'loading' },
  { state: 'running', label: 'running' },
];

function stepClass(step: JobState, now: JobState): string {
  const order = STEPS.map((s) => s.state);
  const i = order.indexOf(step);
  const j = order.indexOf(now);
  if (step === now) return 'now';
  if (j < 0 || i < j) return 'past';
  return '';
}

const GPU_STATES: readonly JobState[] = ['starting', 'loading', 'running'];

export function JobPage({ app, params }: PageProps) {
  const id = params['id'] ?? '';
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [link, setLink] = useState<LinkState>({ kind: 'connecting', failures: 0 });
  const [cancelError, setCancelError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const series = useRef<Series>({ t: [], p50: [], p99: [], tps: [] });
  const gpuSeries = useRef<GpuSeries>({ gpus: [], t: [], util: [], power: [] });
  const jobRef = useRef<Job | null>(null);
  jobRef.current = job;
  const lastCheck = useRef(0);
  useTicker(link.kind === 'reconnecting' ? 1000 : 60_000);

  const load = async (): Promise<void> => {
    lastCheck.current = Date.now();
    try {
      const j = await app.api.json<Job>(`api/benchmarks/jobs/${encodeURIComponent(id)}`);
      setJob(j);
      setError(null);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };

  // The job once, then the stream for as long as it runs.
  useEffect(() => {
    setJob(null);
    series.current = { t: [], p50: [], p99: [], tps: [] };
    gpuSeries.current = { gpus: [], t: [], util: [], power: [] };
    void load();
  }, [id]);

  const ended = job !== null && finished(job);
  useEffect(() => {
    if (ended) return undefined;
    const conn = new Connection(
      {
        url: () => app.api.ws('ws/benchmarks'),
        createSocket: (u) => new WebSocket(u),
        now: () => Date.now(),
        setTimer: (fn, ms) => setTimeout(fn, ms),
        clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
        backoff: new Backoff(DEFAULT_BACKOFF),
        silenceMs: 15_000,
      },
      {
        onFrame: (text) => {
          const j = jobInFrame(text, id);
          if (j) setJob(j);
          else if (j === null && jobRef.current && !finished(jobRef.current) && Date.now() - lastCheck.current > RECHECK_MS)
            void load();
        },
        onState: setLink,
      },
    );
    conn.start();
    const retry = (): void => conn.retryNow();
    addEventListener('online', retry);
    return () => {
      removeEventListener('online', retry);
      conn.stop();
    };
  }, [id, ended]);

  // Polling stands in only while the stream is down.
  const poll = job !== null && shouldPoll(job, link);
  useEffect(() => {
    if (!poll) return undefined;
    const t = setInterval(() => void load(), POLL_MS);
    return () => clearInterval(t);
  }, [poll, id]);

  // Each update with progress is a reading of the live figures.
  useEffect(() => {
    const p = job?.progress;
    if (!p || !job || job.state !== 'running') return;
    const s = series.current;
    s.t.push(Date.now() / 1000);
    s.p50.push(p.ttft_p50_ms);
    s.p99.push(p.ttft_p99_ms);
    s.tps.push(p.output_tokens_per_s);
    if (s.t.length > KEEP) for (const a of [s.t, s.p50, s.p99, s.tps]) a.shift();
    setVersion((v) => v + 1);
  }, [job]);

  // The leased GPUs' samples from the dashboard's own stream, while the job holds them.
  const gpuKey = job ? job.gpus.join(',') : '';
  const holding = job !== null && GPU_STATES.includes(job.state) && job.gpus.length > 0;
  useEffect(() => {
    if (!holding || !job) return undefined;
    const g = gpuSeries.current;
    if (g.gpus.join(',') !== gpuKey) {
      g.gpus = [...job.gpus];
      g.t = [];
      g.util = job.gpus.map(() => []);
      g.power = job.gpus.map(() => []);
    }
    return app.store.onSample((snap: Snapshot) => {
      const gs = gpuSeries.current;
      gs.t.push(snap.timestamp_ms / 1000);
      gs.gpus.forEach((index, i) => {
        const gpu = snap.gpus.find((x) => x.index === index);
        gs.util[i]?.push(gpu ? gpu.utilization.gpu : null);
        gs.power[i]?.push(gpu ? gpu.power.draw_w : null);
      });
      if (gs.t.length > KEEP) for (const a of [gs.t, ...gs.util, ...gs.power]) a.shift();
      setVersion((v) => v + 1);
    });
  }, [holding, gpuKey]);

  const cancel = async (): Promise<void> => {
    setCancelError(null);
    try {
      await app.api.post(`api/benchmarks/jobs/${encodeURIComponent(id)}/cancel`);
      await load();
    } catch (e) {
      setCancelError(e instanceof Error ? e.message : String(e));
    }
  };

  const s = series.current;
  const g = gpuSeries.current;
  const p = job?.state === 'running' ? job.progress : null;
  const log = job ? logText(job) : null;
  return (
    <div class="page page-job">
      <div class="toolbar">
        <h2 class="page-title">Benchmark job {id}</h2>
        <div class="spacer" />
        {job && !ended && (
          <span class="job-link" data-field="job-link" data-link={link.kind} data-polling={poll ? 'yes' : 'no'}>
            {link.kind === 'live' ? 'live' : `${linkLabel(link, Date.now())}${poll ? '; asking every second' : ''}`}
          </span>
        )}
        <a class="btn" href={href('/benchmarks/jobs')}>
          Queue
        </a>
        {job && cancellable(job) && (
          <button type="button" class="btn btn-danger" data-action="cancel" onClick={() => void cancel()}>
            Cancel
          </button>
        )}
      </div>
      {error && !job && <p class="banner">Cannot read the job: {error}</p>}
      {cancelError && <p class="banner">Cannot cancel: {cancelError}</p>}
      {job && (
        <section class="card">
          <ol class="job-steps" aria-label="Steps">
            {STEPS.map((st) => (
              <li key={st.state} class={stepClass(st.state, job.state)} data-step={st.state}>
                {st.label}
              </li>
            ))}
            <li class={ended ? 'now' : ''} data-step="end">
              {ended ? job.state : 'done'}
            </li>
          </ol>
          <p data-field="job-state" data-state={job.state}>
            {stateText(job)}
            {job.label ? ` · ${job.label}` : ''}
            {job.image ? ` · ${job.image}` : job.server ? ` · ${job.server}` : ''}
            {job.gpus.length > 0 ? ` · GPU ${job.gpus.join(', ')}` : ''}
            {job.points > 0 ? ` · ${job.points_done} of ${job.points} points done` : ''}
          </p>
          {p && (
            <p data-field="job-progress">
              {p.requests_done}
              {p.requests_total !== null ? ` of ${p.requests_total}` : ''} requests, {p.elapsed_s.toFixed(1)} s; TTFT p50{' '}
              <span data-field="ttft-p50">{p.ttft_p50_ms === null ? '–' : `${p.ttft_p50_ms.toFixed(1)} ms`}</span>, p99{' '}
              <span data-field="ttft-p99">{p.ttft_p99_ms === null ? '–' : `${p.ttft_p99_ms.toFixed(1)} ms`}</span>;{' '}
              <span data-field="tps">{p.output_tokens_per_s === null ? '–' : p.output_tokens_per_s.toFixed(0)}</span> output tokens/s
            </p>
          )}
          {job.reason && (
            <p class="banner" data-field="job-reason">
              {job.reason}
            </p>
          )}
          {log !== null && (
            <details open={job.state === 'failed'} data-field="job-log-box">
              <summary>The container's last lines of output</summary>
              <pre class="job-log" data-field="job-log">
                {log}
              </pre>
            </details>
          )}
          {job.benchmark_id && (
            <p>
              <a class="btn btn-primary" data-action="result" href={href(`/benchmarks/${job.benchmark_id}`)}>
                Result
              </a>
              {job.state !== 'done' && <span class="note"> what was measured before it ended</span>}
            </p>
          )}
        </section>
      )}
      {(s.t.length > 1 || g.t.length > 1) && (
        <div class="session-charts" data-field="job-charts">
          {s.t.length > 1 && (
            <Chart
              kind="job-ttft"
              title="TTFT, latest 256 requests"
              unit="ms"
              lines={[
                { label: 'p50', color: gpuColor(0) },
                { label: 'p99', color: gpuColor(1) },
              ]}
              data={[s.t, s.p50, s.p99]}
              version={version}
              range={(m) => [0, niceCeil(m ?? 1)]}
              fmt={(v) => (v === null ? '–' : `${v.toFixed(1)} ms`)}
            />
          )}
          {s.t.length > 1 && (
            <Chart
              kind="job-throughput"
              title="Output tokens per second"
              unit="tok/s"
              lines={[{ label: 'tokens/s', color: gpuColor(2) }]}
              data={[s.t, s.tps]}
              version={version}
              range={(m) => [0, niceCeil(m ?? 1)]}
              fmt={(v) => (v === null ? '–' : v.toFixed(0))}
            />
          )}
          {g.t.length > 1 && (
            <Chart
              kind="job-gpu-utilization"
              title="Leased GPUs' utilization"
              unit="%"
              lines={g.gpus.map((x, i) => ({ label: `GPU ${x}`, color: gpuColor(i) }))}
              data={[g.t, ...g.util]}
              version={version}
              range={() => percentRange()}
              fmt={(v) => fmtPercent(v)}
            />
          )}
          {g.t.length > 1 && (
            <Chart
              kind="job-gpu-power"
              title="Leased GPUs' power"
              unit="W"
              lines={g.gpus.map((x, i) => ({ label: `GPU ${x}`, color: gpuColor(i) }))}
              data={[g.t, ...g.power]}
              version={version}
              range={(m) => powerRange(null, m)}
              fmt={(v) => fmtWatts(v)}
            />
          )}
        </div>
      )}
    </div>
  );
}
