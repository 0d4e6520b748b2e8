// Benchmark jobs the daemon runs (POST /api/benchmarks, GET /api/benchmarks/jobs): their shape,
// and the request body the "New benchmark" form makes (the keys are gpumon bench's long options
// with '_' for '-'; the daemon checks them with the CLI's own code).

import type { LinkState } from './connection';

export type JobState = 'queued' | 'waiting_gpus' | 'starting' | 'loading' | 'running' | 'done' | 'failed' | 'cancelled';

/** Every state, in the order a job goes through them. */
export const JOB_STATES: readonly JobState[] = ['queued', 'waiting_gpus', 'starting', 'loading', 'running', 'done', 'failed', 'cancelled'];

export interface JobProgress {
  point: number;
  points: number;
  load: string;
  requests_done: number;
  requests_total: number | null;
  elapsed_s: number;
  ttft_p50_ms: number | null;
  ttft_p99_ms: number | null;
  output_tokens_per_s: number | null;
}

export interface Job {
  id: string;
  url: string;
  state: JobState;
  created: string;
  started: string | null;
  ended: string | null;
  state_seconds: number;
  server: string | null;
  model: string | null;
  label: string | null;
  gpus: number[];
  points: number;
  points_done: number;
  benchmark_id: string | null;
  reason: string | null;
  progress: JobProgress | null;
  /** The container's image, for a job that starts one. */
  image?: string | null;
  /** The last lines of output of the job's container (a failed one), oldest first. */
  logs?: string[] | null;
}

export interface JobList {
  jobs: Job[];
}

export interface JobForm {
  /** What is benchmarked: a running server (url) or a server the daemon starts from an image. */
  mode: 'url' | 'image';
  url: string;
  image: string;
  model: string;
  concurrency: string;
  requests: string;
  inputTokens: string;
  outputTokens: string;
  gpus: string;
  label: string;
  /** A system snapshot before and after the run, and whether the machine changed meanwhile. */
  snapshot: boolean;
}

export const EMPTY_FORM: JobForm = {
  mode: 'url',
  url: '',
  image: '',
  model: '',
  concurrency: '1,8',
  requests: '200',
  inputTokens: '128',
  outputTokens: '128',
  gpus: '1',
  label: '',
  snapshot: false,
};

/** Whole numbers of a comma list ("1, 8,32" -> [1, 8, 32]); items that are not stay text so the
 * daemon names them in its answer. */
function list(text: string): (number | string)[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function num(text: string): number | string {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : t;
}

/** The body of POST /api/benchmarks for a filled form: empty fields are left to the defaults. */
export function jobBody(f: JobForm): Record<string, unknown> {
  const b: Record<string, unknown> = f.mode === 'image' ? { image: f.image.trim() } : { url: f.url.trim() };
  if (f.model.trim()) b['model'] = f.model.trim();
  if (f.concurrency.trim()) b['concurrency'] = list(f.concurrency);
  if (f.requests.trim()) b['requests'] = num(f.requests);
  if (f.inputTokens.trim()) b['input_tokens'] = num(f.inputTokens);
  if (f.outputTokens.trim()) b['output_tokens'] = num(f.outputTokens);
  if (f.gpus.trim()) b['count'] = num(f.gpus);
  if (f.label.trim()) b['label'] = f.label.trim();
  if (f.snapshot) b['snapshot'] = true;
  return b;
}

/** Words for a state, with what it is waiting for. */
export function stateText(j: Job): string {
  const s = Math.round(j.state_seconds);
  switch (j.state) {
    case 'queued':
      return 'queued';
    case 'waiting_gpus':
      return `waiting for GPUs (${s} s)`;
    case 'starting':
      return j.image ? 'starting the container' : 'checking the server';
    case 'loading':
      return `loading the model (${s} s)`;
    case 'running':
      return j.progress ? `running point ${j.progress.point} of ${j.progress.points} (${j.progress.load})` : 'running';
    case 'done':
      return 'done';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'cancelled';
  }
}

export function finished(j: Pick<Job, 'state'>): boolean {
  return j.state === 'done' || j.state === 'failed' || j.state === 'cancelled';
}

/** Whether cancel applies: a job not ended yet. */
export function cancellable(j: Job): boolean {
  return !finished(j);
}

/** The container's last lines of output, as one text (null when the job has none). */
export function logText(j: Pick<Job, 'logs'>): string | null {
  const l = j.logs;
  if (!Array.isArray(l) || l.length === 0) return null;
  return l.map((x) => String(x)).join('\n');
}

/**
 * The job `id` in a frame of WS /ws/benchmarks (`{"jobs": [...]}`): the job, or null when the
 * frame does not list it (ended more than 10 s ago, or unknown), or undefined when the text is
 * not such a frame.
 */
export function jobInFrame(text: string, id: string): Job | null | undefined {
  let f: unknown;
  try {
    f = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof f !== 'object' || f === null || !Array.isArray((f as { jobs?: unknown }).jobs)) return undefined;
  for (const j of (f as { jobs: unknown[] }).jobs)
    if (typeof j === 'object' && j !== null && (j as { id?: unknown }).id === id) return j as Job;
  return null;
}

/**
 * Whether the live page asks GET /api/benchmarks/jobs/{id} now: only while the job runs and
 * its WebSocket is down (reconnecting, or connecting again after a failure). A first connect
 * is not "down": the frames come within a sample.
 */
export function shouldPoll(j: Pick<Job, 'state'> | null, link: LinkState): boolean {
  if (j !== null && finished(j)) return false;
  switch (link.kind) {
    case 'live':
      return false;
    case 'connecting':
      return link.failures > 0;
    case 'reconnecting':
    case 'stopped':
      return true;
  }
}
