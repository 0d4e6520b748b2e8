// Entry point: finds the daemon (the page's own origin), keeps the token, wires the store to the
// WebSocket link and the REST calls, and renders the page the address names.

import { render } from 'preact';

import type { AppContext } from './app';
import { App } from './components/App';
import type { AuthView } from './components/App';
import { Api } from './lib/api';
import { TokenKeeper } from './lib/auth';
import type { StorageLike } from './lib/auth';
import { Backoff, DEFAULT_BACKOFF } from './lib/backoff';
import { Connection } from './lib/connection';
import { HttpError, makeEndpoint } from './lib/endpoint';
import { matchRoute, parseHash, takeToken } from './lib/router';
import { Store } from './lib/store';
import type { Health, ServerConfig } from './lib/types';
import { browserFleetStore } from './fleet';
import { PAGES, navPages } from './pages';
import './styles.css';

/** /api/health is asked again this often: it carries the diagnosis and the sampler's state. */
const HEALTH_EVERY_MS = 10_000;

function storage(get: () => Storage): StorageLike | null {
  try {
    return get();
  } catch {
    return null; // refused (sandboxed frame, some private modes)
  }
}

function start(): void {
  const root = document.getElementById('app');
  if (!root) return;
  const keeper = new TokenKeeper(
    storage(() => sessionStorage),
    storage(() => localStorage),
  );
  const auth: AuthView = { needed: false, error: null, busy: false, hasToken: false };
  let ep = makeEndpoint(location.href, null);

  /** Takes a token out of the address (keeping it out of the address bar, history and screenshots). */
  const tokenFromAddress = (): string | null => {
    const { token, rest } = takeToken(location.hash);
    if (rest !== location.hash) history.replaceState(null, '', location.pathname + location.search + rest);
    return token;
  };
  const useToken = (t: string | null): void => {
    ep = makeEndpoint(location.href, t);
    auth.hasToken = t !== null;
  };
  useToken(keeper.load(tokenFromAddress()));

  const api = new Api(
    () => ep,
    () => needToken(keeper.token ? 'The daemon refused the token this page had.' : null),
  );
  const store = new Store({ getJson: (p) => api.json(p), schedule: (fn) => requestAnimationFrame(fn), now: () => Date.now() });
  const fleet = browserFleetStore((p) => api.json(p));
  const app: AppContext = { store, api, fleet };

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
        // A browser never says why a WebSocket upgrade failed: ask a plain request, which
        // reports a 401 (a daemon restarted with a token) through the API's handler.
        if (s.kind === 'reconnecting') void api.json<Health>('api/health', [503]).catch(() => undefined);
        store.setLink(s);
      },
    },
  );

  function needToken(error: string | null): void {
    if (auth.needed && error === null) return;
    auth.needed = true;
    auth.error = auth.error ?? error;
    // Reconnecting cannot help until a token works.
    conn.stop();
    draw();
  }

  async function submitToken(token: string, remember: boolean): Promise<void> {
    auth.busy = true;
    auth.error = null;
    draw();
    const trial = makeEndpoint(location.href, token);
    let refused = false;
    try {
      const r = await fetch(trial.http('api/config'), { headers: trial.headers(), cache: 'no-store' });
      refused = r.status === 401;
    } catch {
      // The daemon is down: keep the token; the link retries until it is back.
    }
    auth.busy = false;
    if (refused) {
      auth.error = 'The daemon refused this token.';
      draw();
      return;
    }
    keeper.set(token, remember);
    useToken(token);
    auth.needed = false;
    draw();
    await refreshMeta();
    if (!auth.needed) conn.start();
  }

  function forgetToken(): void {
    keeper.forget();
    useToken(null);
    draw();
    // Without a token, a daemon that wants one answers 401: the form comes back.
    void refreshMeta();
  }

  const draw = (): void => {
    const place = parseHash(location.hash);
    const match = matchRoute(PAGES, place.path);
    const section = PAGES.find((p) => p.path === (match?.route.section ?? match?.route.path));
    document.title = section?.nav && section.path !== '/' ? `${section.nav} · gpumon` : 'gpumon';
    render(
      <App
        app={app}
        pages={navPages(fleet.state === 'on')}
        place={place}
        match={match}
        auth={{ ...auth }}
        onRetry={() => conn.retryNow()}
        onToken={(t, r) => void submitToken(t, r)}
        onForgetToken={forgetToken}
      />,
      root,
    );
  };

  // The header offers the Fleet page once /api/config says the daemon has the fleet view.
  let fleetOn = false;
  fleet.subscribe(() => {
    if ((fleet.state === 'on') === fleetOn) return;
    fleetOn = !fleetOn;
    draw();
  });

  // Config (poll interval, history kept) and health; again after each reconnect, since the
  // daemon may have restarted with other settings.
  async function refreshMeta(): Promise<void> {
    try {
      const config = await api.json<ServerConfig>('api/config');
      store.setConfig(config);
      fleet.setConfig(config);
    } catch (e) {
      if (e instanceof HttpError && e.status === 401) return;
    }
    await refreshHealth();
  }
  async function refreshHealth(): Promise<void> {
    try {
      // 503 (starting, stalled) still carries the health body.
      store.setHealth(await api.json<Health>('api/health', [503]));
    } catch {
      // shown by the link state
    }
  }

  addEventListener('hashchange', () => {
    const t = tokenFromAddress();
    if (t !== null) {
      // An address with a new token pasted into this tab.
      keeper.load(t);
      useToken(t);
      if (auth.needed) {
        auth.needed = false;
        auth.error = null;
        void refreshMeta().then(() => {
          if (!auth.needed) conn.start();
        });
      }
    }
    draw();
  });

  draw();
  void refreshMeta().then(() => {
    if (!auth.needed) conn.start();
  });
  setInterval(() => {
    if (!document.hidden && store.link.kind === 'live') void refreshHealth();
  }, HEALTH_EVERY_MS);
  addEventListener('online', () => conn.retryNow());
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) conn.retryNow();
  });
}

start();
