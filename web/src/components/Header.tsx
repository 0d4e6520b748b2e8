// The header: which host and driver this is, whether the data is simulated, the pages, whether
// the link is live and how old the newest sample is.

import { fmtAge, NA } from '../lib/format';
import { linkLabel } from '../lib/connection';
import type { Route } from '../lib/router';
import { href } from '../lib/router';
import type { Store } from '../lib/store';
import { useTicker, useTopics } from './hooks';

/** How stale a sample may get, relative to the poll interval, before the age turns into a warning. */
const STALE_POLLS = 3;

export interface HeaderProps {
  store: Store;
  onRetry: () => void;
  nav: readonly Route<unknown>[];
  /** The nav path to highlight. */
  active: string | null;
  /** The daemon wants a token and the page has none that works: the stream is stopped. */
  tokenNeeded: boolean;
  /** A token is in use (from the address, the form or storage). */
  hasToken: boolean;
  onForgetToken: () => void;
}

export function Header({ store, onRetry, nav, active, tokenNeeded, hasToken, onForgetToken }: HeaderProps) {
  useTopics(store, 'frame', 'link', 'health');
  useTicker(500);
  const s = store.snapshot;
  const now = Date.now();
  const label = tokenNeeded
    ? 'token needed'
    : linkLabel(store.link, now, typeof navigator === 'undefined' ? true : navigator.onLine);
  const kind =
    store.link.kind === 'live' && !tokenNeeded ? 'live' : label.startsWith('offline') || tokenNeeded ? 'offline' : 'reconnecting';
  const ageMs = store.receivedAt ? now - store.receivedAt : null;
  const stale = ageMs !== null && ageMs > Math.max(2000, STALE_POLLS * store.pollMs);
  const health = store.health?.status;
  const provider = s?.provider ?? store.health?.provider ?? null;

  return (
    <header class="top">
      <div class="brand">
        <span class="logo" aria-hidden="true" />
        <h1>
          <a href={href('/')}>gpumon</a>
        </h1>
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
      <nav class="nav" aria-label="Pages">
        {nav
          .filter((r) => r.nav)
          .map((r) => (
            <a key={r.path} href={href(r.path)} aria-current={active === r.path ? 'page' : undefined} data-nav={r.path}>
              {r.nav}
            </a>
          ))}
      </nav>
      <div class="spacer" />
      <div class={`link link-${kind}`} data-link={tokenNeeded ? 'token' : store.link.kind} role="status" aria-live="polite">
        <span class="dot" aria-hidden="true" />
        <span class="label" data-field="link">
          {label}
        </span>
        {store.link.kind === 'reconnecting' && !tokenNeeded && (
          <button type="button" class="linkbtn" onClick={onRetry}>
            retry now
          </button>
        )}
      </div>
      <span class={stale ? 'age stale' : 'age'} data-field="age" title="Time since the newest sample arrived">
        {ageMs === null ? 'no sample yet' : `updated ${fmtAge(ageMs)} ago`}
      </span>
      {hasToken && (
        <button type="button" class="linkbtn" data-action="forget-token" onClick={onForgetToken} title="Remove the token from this browser">
          forget token
        </button>
      )}
    </header>
  );
}
