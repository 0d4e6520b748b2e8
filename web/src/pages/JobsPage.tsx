// The benchmark jobs' queue: each job's state, its live page, and its result once stored.

import { useEffect } from 'preact/hooks';

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import type { JobList } from '../lib/jobs';
import { finished, stateText } from '../lib/jobs';
import { href } from '../lib/router';

export function JobsPage({ app }: PageProps) {
  const res = useResource(() => app.api.json<JobList>('api/benchmarks/jobs'), []);
  const jobs = res.data?.jobs ?? [];
  const active = jobs.some((j) => !finished(j));
  useEffect(() => {
    if (!active) return undefined;
    const t = setInterval(res.reload, 1000);
    return () => clearInterval(t);
  }, [active]);
  return (
    <div class="page page-jobs">
      <div class="toolbar">
        <h2 class="page-title">Benchmark queue</h2>
        <div class="spacer" />
        <a class="btn btn-primary" href={href('/benchmarks/new')} data-action="new-benchmark">
          New benchmark
        </a>
        <button type="button" class="btn" onClick={res.reload}>
          Refresh
        </button>
      </div>
      {res.error && <p class="banner">Cannot list the jobs: {res.error}</p>}
      {res.data && jobs.length === 0 && <p class="note">No job since the daemon started.</p>}
      {jobs.length > 0 && (
        <table class="table" data-field="jobs">
          <thead>
            <tr>
              <th>Job</th>
              <th>Label</th>
              <th>Server</th>
              <th>State</th>
              <th>Points</th>
              <th>Result</th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <tr key={j.id} data-job={j.id} data-state={j.state}>
                <td>
                  <a href={href(`/benchmarks/jobs/${j.id}`)}>{j.id}</a>
                </td>
                <td>{j.label ?? ''}</td>
                <td>{j.server ?? ''}</td>
                <td class={j.state === 'failed' ? 'status-bad' : ''} title={j.reason ?? ''}>
                  {stateText(j)}
                </td>
                <td class="num">
                  {j.points_done}/{j.points}
                </td>
                <td>{j.benchmark_id && <a href={href(`/benchmarks/${j.benchmark_id}`)}>result</a>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
