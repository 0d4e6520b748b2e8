// The header: which host and driver this is, whether the data is simulated, whether the link is
// live and how old the newest sample is, and the chart window picker.

import { fmtAge, fmtWindow, NA } from '../lib/format';
import { linkLabel } from '../lib/connection';
import { WINDOWS, isWindow } from '../lib/history';
import type { Store } from '../lib/store';
import { useTicker, useTopics } from './hooks';

/** How stale a sample may get, relative to the poll interval, before the age turns into a warning. */
const STALE_POLLS = 3;

export function Header({ store, onRetry }: { store: Store; onRetry: () => void }) {
  useTopics(store, 'frame', 'link', 'window', 'health');
  useTicker(500);
  const s = store.snapshot;
  const now = Date.now();
  const label = linkLabel(store.link, now, typeof navigator === 'undefined' ? true : navigator.onLine);
  const kind = store.link.kind === 'live' ? 'live' : label.startsWith('offline') ? 'offline' : 'reconnecting';
  const ageMs = store.receivedAt ? now - store.receivedAt : null;
  const stale = ageMs !== null && ageMs > Math.max(2000, STALE_POLLS * store.pollMs);
  const health = store.health?.status;
  const provider = s?.provider ?? store.health?.provider ?? null;

  return (
    <header class="top">
      <div class="brand">
        <span class="logo" aria-hidden="true" />
        <h1>gpumon</h1>
      </div>
      <div class="host" data-field="hostname">
        <span class="hostname">{s ? (s.hostname ?? NA) : '…'}</span>
        {s && (
          <span class="versions">
            driver {s.driver_version ?? NA} · CUDA {s.cuda_version ?? NA}
          </span>
        )}
      </div>
      {provider === 'sim' ? (
        <span class="badge badge-sim" data-field="provider" title="The values are simulated, not read from a GPU">
          simulated
        </span>
      ) : (
        provider && (
          <span class="badge" data-field="provider">
            {provider}
          </span>
        )
      )}
      {health && health !== 'ok' && health !== 'no_gpu' && (
        <span class="badge badge-warn" title={store.health?.last_error ?? ''}>
          {health}
        </span>
      )}
      <div class="spacer" />
      <div class={`link link-${kind}`} data-link={store.link.kind} role="status" aria-live="polite">
        <span class="dot" aria-hidden="true" />
        <span class="label" data-field="link">
          {label}
        </span>
        {store.link.kind === 'reconnecting' && (
          <button type="button" class="linkbtn" onClick={onRetry}>
            retry now
          </button>
        )}
      </div>
      <span class={stale ? 'age stale' : 'age'} data-field="age" title="Time since the newest sample arrived">
        {ageMs === null ? 'no sample yet' : `updated ${fmtAge(ageMs)} ago`}
      </span>
      <fieldset class="windows">
        <legend class="sr-only">Chart window</legend>
        {WINDOWS.map((w) => (
          <label key={w} class={store.window === w ? 'on' : undefined}>
            <input
              type="radio"
              name="window"
              value={w}
              checked={store.window === w}
              onChange={(e) => {
                const v = Number((e.currentTarget as HTMLInputElement).value);
                if (isWindow(v)) store.setWindow(v);
              }}
            />
            {fmtWindow(w)}
          </label>
        ))}
      </fieldset>
    </header>
  );
}
