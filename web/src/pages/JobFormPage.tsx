// "New benchmark": the options of gpumon bench as a form, sent to POST /api/benchmarks; the
// daemon queues the job on leased GPUs and the page goes to the job's live page. The last
// configuration is kept in this browser for one click.

import { useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import { HttpError } from '../lib/endpoint';
import type { JobForm } from '../lib/jobs';
import { EMPTY_FORM, jobBody } from '../lib/jobs';
import { href } from '../lib/router';

const LAST_KEY = 'gpumon.bench.lastForm';

interface Allocation {
  eligible?: number;
  gpus?: { index: number; leased?: boolean }[];
}

function lastForm(): JobForm {
  try {
    const s = localStorage.getItem(LAST_KEY);
    if (s) return { ...EMPTY_FORM, ...(JSON.parse(s) as Partial<JobForm>) };
  } catch {
    // none kept
  }
  return EMPTY_FORM;
}

function Field({ label, name, value, onInput, hint, type }: { label: string; name: keyof JobForm; value: string; onInput: (v: string) => void; hint?: string; type?: string }) {
  return (
    <label class="form-row">
      <span class="form-label">{label}</span>
      <input name={name} type={type ?? 'text'} value={value} onInput={(e) => onInput((e.currentTarget as HTMLInputElement).value)} />
      {hint && <span class="note">{hint}</span>}
    </label>
  );
}

export function JobFormPage({ app }: PageProps) {
  const { api } = app;
  const [form, setForm] = useState<JobForm>(lastForm);
  const [error, setError] = useState<{ msg: string; field: string | null } | null>(null);
  const [busy, setBusy] = useState(false);
  const alloc = useResource(() => api.json<Allocation>('api/allocation?count=1', [503]), []);
  const total = alloc.data?.gpus?.length ?? null;
  const free = alloc.data?.eligible ?? null;
  const set = (k: keyof JobForm) => (v: string) => setForm((f) => ({ ...f, [k]: v }));

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await api.postJson<{ id: string }>('api/benchmarks', jobBody(form));
      try {
        localStorage.setItem(LAST_KEY, JSON.stringify(form));
      } catch {
        // not kept
      }
      if (r) location.hash = href(`/benchmarks/jobs/${r.id}`);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      const field = /^([a-z_]+): /.exec(msg)?.[1] ?? null;
      setError({ msg: err instanceof HttpError && err.status === 403 ? `${msg}` : msg, field });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="page page-job-form">
      <div class="toolbar">
        <h2 class="page-title">New benchmark</h2>
        <div class="spacer" />
        <a class="btn" href={href('/benchmarks/jobs')}>
          Queue
        </a>
      </div>
      <form class="card job-form" onSubmit={submit} data-field="job-form">
        <Field label="Server URL" name="url" value={form.url} onInput={set('url')} hint="an OpenAI-compatible server: http://host:8000" />
        <Field label="Model" name="model" value={form.model} onInput={set('model')} hint="empty: the first the server lists" />
        <Field label="Concurrency" name="concurrency" value={form.concurrency} onInput={set('concurrency')} hint="one point per value: 1,8,32" />
        <Field label="Requests per point" name="requests" value={form.requests} onInput={set('requests')} />
        <Field label="Input tokens" name="inputTokens" value={form.inputTokens} onInput={set('inputTokens')} />
        <Field label="Output tokens" name="outputTokens" value={form.outputTokens} onInput={set('outputTokens')} />
        <Field
          label="GPUs"
          name="gpus"
          value={form.gpus}
          onInput={set('gpus')}
          hint={total === null ? 'leased for the run' : `${free ?? 0} of ${total} free now; the job waits for them`}
        />
        <Field label="Label" name="label" value={form.label} onInput={set('label')} hint="to find it in the history" />
        {error && (
          <p class="banner" role="alert" data-field="job-error" data-error-field={error.field ?? ''}>
            {error.msg}
          </p>
        )}
        <div class="form-actions">
          <button type="submit" class="btn btn-primary" data-action="start" disabled={busy || !form.url.trim()}>
            Start benchmark
          </button>
        </div>
      </form>
      <p class="note">
        The daemon runs it as <code>gpumon bench</code> does and stores the result; starting one needs the daemon's token.
      </p>
    </div>
  );
}
