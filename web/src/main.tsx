// Entry point: finds the daemon (the page's own origin), wires the store to the WebSocket link
// and the REST calls, and renders the page.

import { render } from 'preact';

import { App } from './components/App';
import { browserFleetStore } from './fleet';
import { Backoff, DEFAULT_BACKOFF } from './lib/backoff';
import { Connection } from './lib/connection';
import { HttpError, getJson, makeEndpoint, tokenFromHash } from './lib/endpoint';
import { Store } from './lib/store';
import type { Health, ServerConfig } from './lib/types';
import './styles.css';

const TOKEN_KEY = 'gpumon.token';
/** /api/health is asked again this often: it carries the diagnosis and the sampler's state. */
const HEALTH_EVERY_MS = 10_000;

function readToken(): string | null {
  const fromHash = tokenFromHash(location.hash);
  if (fromHash) {
    try {
      sessionStorage.setItem(TOKEN_KEY, fromHash);
    } catch {
      // storage refused (private mode): the token still works for this page view
    }
    // Keep the secret out of the address bar, screenshots and history.
    history.replaceState(null, '', location.pathname + location.search);
    return fromHash;
  }
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function start(): void {
  const root = document.getElementById('app');
  if (!root) return;
  const ep = makeEndpoint(location.href, readToken());
  const get = <T,>(path: string): Promise<T> => getJson<T>(ep, path);
  const store = new Store({ getJson: get, schedule: (fn) => requestAnimationFrame(fn), now: () => Date.now() });
  const fleet = browserFleetStore(get);
  let fatal: string | null = null;

  const conn = new Connection(
    {
      url: () => ep.ws('ws/gpu'),
      createSocket: (u) => new WebSocket(u),
      now: () => Date.now(),
      setTimer: (fn, ms) => setTimeout(fn, ms),
      clearTimer: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
      backoff: new Backoff(DEFAULT_BACKOFF),
      // No frame for this long means a dead link, whatever TCP says.
      silenceMs: 15_000,
    },
    {
      onFrame: (text) => store.ingest(text),
      onState: (s) => {
        if (s.kind === 'live') void refreshMeta();
        store.setLink(s);
      },
    },
  );

  const draw = (): void =>
    render(<App store={store} fatal={fatal} onRetry={() => conn.retryNow()} fleet={fleet} />, root);

  const reportFatal = (e: unknown): void => {
    if (e instanceof HttpError && e.status === 401) {
      fatal = 'The daemon requires a token: open this page as …/#token=YOUR_TOKEN.';
      draw();
    }
  };

  // Config (poll interval, history kept) and health; again after each reconnect, since the
  // daemon may have restarted with other settings.
  async function refreshMeta(): Promise<void> {
    try {
      store.setConfig(await get<ServerConfig>('api/config'));
    } catch (e) {
      reportFatal(e);
    }
    await refreshHealth();
  }
  async function refreshHealth(): Promise<void> {
    try {
      // 503 (starting, stalled) still carries the health body.
      store.setHealth(await getJson<Health>(ep, 'api/health', [503]));
    } catch (e) {
      reportFatal(e);
    }
  }

  draw();
  void refreshMeta().then(() => conn.start());
  setInterval(() => {
    if (!document.hidden && store.link.kind === 'live') void refreshHealth();
  }, HEALTH_EVERY_MS);
  addEventListener('online', () => conn.retryNow());
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) conn.retryNow();
  });
}

start();
