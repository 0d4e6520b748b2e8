// One benchmark job, live: its state, the current point's progress, TTFT and throughput as they
// come (polled every second), cancel, and the stored result once it ends.

import { useEffect, useRef, useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { Chart } from '../components/Chart';
import { useResource } from '../components/hooks';
import type { Job } from '../lib/jobs';
import { finished, stateText } from '../lib/jobs';
import { href } from '../lib/router';
import { niceCeil } from '../lib/scales';
import { gpuColor } from '../lib/sessions';
import type { Num } from '../lib/types';

/** Live series: [t, ttft p50, ttft p99, tokens/s], appended as the job moves. */
interface Series {
  t: Num[];
  p50: Num[];
  p99: Num[];
  tps: Num[];
}

export function JobPage({ app, params }: PageProps) {
  const id = params['id'] ?? '';
  const res = useResource(() => app.api.json<Job>(`api/benchmarks/jobs/${encodeURIComponent(id)}`), [id]);
  const series = useRef<Series>({ t: [], p50: [], p99: [], tps: [] });
  const [version, setVersion] = useState(0);
  const [cancelError, setCancelError] = useState<string | null>(null);
  const job = res.data;
  const live = job !== null && !finished(job);

  useEffect(() => {
    if (!live) return undefined;
    const t = setInterval(res.reload, 1000);
    return () => clearInterval(t);
  }, [live]);

  useEffect(() => {
    const p = job?.progress;
    if (!p) return;
    const s = series.current;
    s.t.push(Date.now() / 1000);
    s.p50.push(p.ttft_p50_ms);
    s.p99.push(p.ttft_p99_ms);
    s.tps.push(p.output_tokens_per_s);
    // Bounded: an hour at one reading a second.
    if (s.t.length > 3600) for (const a of [s.t, s.p50, s.p99, s.tps]) a.shift();
    setVersion((v) => v + 1);
  }, [job]);

  const cancel = async (): Promise<void> => {
    setCancelError(null);
    try {
      await app.api.post(`api/benchmarks/jobs/${encodeURIComponent(id)}/cancel`);
      res.reload();
    } catch (e) {
      setCancelError(e instanceof Error ? e.message : String(e));
    }
  };

  const s = series.current;
  const p = job?.progress ?? null;
  return (
    <div class="page page-job">
      <div class="toolbar">
        <h2 class="page-title">Benchmark job {id}</h2>
        <div class="spacer" />
        <a class="btn" href={href('/benchmarks/jobs')}>
          Queue
        </a>
        {live && (
          <button type="button" class="btn btn-danger" data-action="cancel" onClick={cancel}>
            Cancel
          </button>
        )}
      </div>
      {res.error && <p class="banner">Cannot read the job: {res.error}</p>}
      {cancelError && <p class="banner">Cannot cancel: {cancelError}</p>}
      {job && (
        <section class="card">
          <p data-field="job-state" data-state={job.state}>
            {stateText(job)}
            {job.label ? ` · ${job.label}` : ''} · {job.server ?? ''}
            {job.gpus.length > 0 ? ` · GPU ${job.gpus.join(', ')}` : ''}
          </p>
          {p && (
            <p data-field="job-progress">
              {p.requests_done}
              {p.requests_total !== null ? ` of ${p.requests_total}` : ''} requests, {p.elapsed_s.toFixed(1)} s; TTFT p50{' '}
              {p.ttft_p50_ms === null ? '–' : `${p.ttft_p50_ms.toFixed(1)} ms`}, p99 {p.ttft_p99_ms === null ? '–' : `${p.ttft_p99_ms.toFixed(1)} ms`};{' '}
              {p.output_tokens_per_s === null ? '–' : p.output_tokens_per_s.toFixed(0)} output tokens/s
            </p>
          )}
          {job.reason && (
            <p class="banner" data-field="job-reason">
              {job.reason}
            </p>
          )}
          {job.benchmark_id && (
            <p>
              <a class="btn btn-primary" data-action="result" href={href(`/benchmarks/${job.benchmark_id}`)}>
                Result
              </a>
            </p>
          )}
        </section>
      )}
      {s.t.length > 1 && (
        <div class="session-charts" data-field="job-charts">
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
        </div>
      )}
    </div>
  );
}
