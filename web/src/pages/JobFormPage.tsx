// "New benchmark": the options of gpumon bench as a form, sent to POST /api/benchmarks; the
// daemon queues the job on leased GPUs and the page goes to the job's live page. The last five
// configurations are kept in this browser (lib/formhistory.ts), each one click from the form
// again. A server is given by its URL, or started from an image when the daemon may start
// containers (GET /api/config: docker, allow_image); the image field offers the engine's local
// images those patterns admit (GET /api/images), NIM ones by model, and still takes any name (an
// image not pulled yet). The GPU count says how many are free now.

import { useEffect, useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { useResource } from '../components/hooks';
import { HttpError } from '../lib/endpoint';
import { clearHistory, historyLabel, loadHistory, pushHistory, saveHistory } from '../lib/formhistory';
import type { JobForm } from '../lib/jobs';
import { EMPTY_FORM, jobBody } from '../lib/jobs';
import { href } from '../lib/router';

const ALLOC_REFRESH_MS = 3000;

interface DaemonConfig {
  docker?: string | null;
  allow_image?: string[] | null;
}

const store = (): Storage | null => {
  try {
    return localStorage;
  } catch {
    return null;
  }
};

interface LocalImage {
  image: string;
  size_bytes: number;
  model: string | null;
}

const imageLabel = (i: LocalImage): string =>
  i.model ? `NIM ${i.model} (${(i.size_bytes / 1e9).toFixed(1)} GB)` : `${(i.size_bytes / 1e9).toFixed(1)} GB`;

interface Allocation {
  eligible?: number;
  gpus?: { index: number; leased?: boolean }[];
}

function Field({
  label,
  name,
  value,
  onInput,
  hint,
  type,
  field,
  list,
}: {
  label: string;
  name: keyof JobForm;
  value: string;
  onInput: (v: string) => void;
  hint?: string;
  type?: string;
  field?: string;
  list?: string;
}) {
  return (
    <label class="form-row">
      <span class="form-label">{label}</span>
      <input name={name} type={type ?? 'text'} list={list} value={value} onInput={(e) => onInput((e.currentTarget as HTMLInputElement).value)} />
      {hint && (
        <span class="note" data-field={field}>
          {hint}
        </span>
      )}
    </label>
  );
}

export function JobFormPage({ app }: PageProps) {
  const { api } = app;
  const [history, setHistory] = useState<JobForm[]>(() => loadHistory(store()));
  const [form, setForm] = useState<JobForm>(() => history[0] ?? EMPTY_FORM);
  const [error, setError] = useState<{ msg: string; field: string | null } | null>(null);
  const [busy, setBusy] = useState(false);
  const alloc = useResource(() => api.json<Allocation>('api/allocation?count=1', [503]), []);
  // "Free now" stays true while the form is open: leases come and go.
  useEffect(() => {
    const t = setInterval(() => alloc.reload(), ALLOC_REFRESH_MS);
    return () => clearInterval(t);
  }, []);
  const total = alloc.data?.gpus?.length ?? null;
  const free = alloc.data?.eligible ?? null;
  const cfg = useResource(() => api.json<DaemonConfig>('api/config'), []);
  const docker = cfg.data ? (cfg.data.docker ?? null) : undefined;
  const allow = cfg.data?.allow_image ?? [];
  // Containers need an engine the daemon was given, and an image its allow-list admits.
  const imageOff =
    docker === undefined
      ? null
      : docker === null
        ? 'the daemon was started without --docker: it cannot start containers'
        : allow.length === 0
          ? 'the daemon admits no image: start it with --allow-image PATTERN'
          : null;
  const mode = imageOff !== null ? 'url' : form.mode;
  // Asked only once the daemon is known to have an engine: without one the answer is 503.
  const canList = typeof docker === 'string' && allow.length > 0;
  const images = useResource(
    () => (canList ? api.json<{ images: LocalImage[] }>('api/images') : Promise.resolve({ images: [] as LocalImage[] })),
    [canList],
  );
  const local = images.data?.images ?? [];
  const set = (k: keyof JobForm) => (v: string) => setForm((f) => ({ ...f, [k]: v }));

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const sent = { ...form, mode };
      const body = jobBody(sent);
      // A name the engine does not have locally is pulled first, as bench --image --pull does.
      if (mode === 'image' && images.data && !local.some((i) => i.image === form.image.trim())) body['pull'] = true;
      const r = await api.postJson<{ id: string }>('api/benchmarks', body);
      const next = pushHistory(history, sent);
      saveHistory(store(), next);
      setHistory(next);
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
      {history.length > 0 && (
        <section class="card form-history" data-field="form-history">
          <header class="card-head">
            <h2>Last configurations</h2>
            <span class="note">kept in this browser; one click fills the form</span>
            <div class="spacer" />
            <button
              type="button"
              class="btn btn-small"
              data-action="clear-history"
              onClick={() => {
                clearHistory(store());
                setHistory([]);
              }}
            >
              Clear
            </button>
          </header>
          <ul class="history-list">
            {history.map((h, i) => (
              <li key={i}>
                <button type="button" class="btn btn-link" data-action="restore" data-index={String(i)} onClick={() => setForm(h)}>
                  {historyLabel(h)}
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}
      <form class="card job-form" onSubmit={submit} data-field="job-form">
        <fieldset class="form-row mode-row" data-field="mode">
          <span class="form-label">Server</span>
          <label>
            <input type="radio" name="mode" value="url" checked={mode === 'url'} onChange={() => setForm((f) => ({ ...f, mode: 'url' }))} /> a running
            server
          </label>
          <label title={imageOff ?? undefined}>
            <input
              type="radio"
              name="mode"
              value="image"
              checked={mode === 'image'}
              disabled={imageOff !== null || docker === undefined}
              onChange={() => setForm((f) => ({ ...f, mode: 'image' }))}
            />{' '}
            started from an image
          </label>
          {imageOff && (
            <span class="note" data-field="image-off">
              Images: {imageOff}
            </span>
          )}
        </fieldset>
        {mode === 'url' ? (
          <Field label="Server URL" name="url" value={form.url} onInput={set('url')} hint="an OpenAI-compatible server: http://host:8000" />
        ) : (
          <>
            <Field
              label="Image"
              name="image"
              value={form.image}
              onInput={set('image')}
              list="job-images"
              field="allow-image"
              hint={`the daemon starts only images these patterns admit: ${allow.join(', ')}`}
            />
            <datalist id="job-images" data-field="local-images">
              {local.map((i) => (
                <option key={i.image} value={i.image} label={imageLabel(i)} data-model={i.model ?? ''}>
                  {imageLabel(i)}
                </option>
              ))}
            </datalist>
            <p class="note form-row" data-field="local-images-note">
              {images.error
                ? `Local images: ${images.error}`
                : images.loading
                  ? 'Local images: asking the engine...'
                  : local.length === 0
                    ? 'No local image is admitted: type a name, and the job pulls it first'
                    : `${local.length} local image${local.length === 1 ? '' : 's'} admitted: pick one, or type another name and the job pulls it first`}
            </p>
          </>
        )}
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
          field="gpus-free"
          hint={total === null ? 'leased for the run' : `${free ?? 0} of ${total} free now; the job waits for them`}
        />
        <Field label="Label" name="label" value={form.label} onInput={set('label')} hint="to find it in the history" />
        <label class="form-row form-check">
          <span class="form-label" />
          <span>
            <input
              type="checkbox"
              name="snapshot"
              checked={form.snapshot}
              onChange={(e) => {
                const on = (e.currentTarget as HTMLInputElement).checked;
                setForm((f) => ({ ...f, snapshot: on }));
              }}
            />{' '}
            Audit the machine (snapshot before and after)
          </span>
          <span class="note">the result says whether clocks, power limits, the driver or other processes changed while it ran</span>
        </label>
        {error && (
          <p class="banner" role="alert" data-field="job-error" data-error-field={error.field ?? ''}>
            {error.msg}
          </p>
        )}
        <div class="form-actions">
          <button type="submit" class="btn btn-primary" data-action="start" disabled={busy || !(mode === 'image' ? form.image : form.url).trim()}>
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
