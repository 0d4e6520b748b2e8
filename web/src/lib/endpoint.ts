// Where the daemon is: always the origin (and path) the page was loaded from, so the dashboard
// works behind a reverse proxy or TLS terminator without a configured host or port.

export interface Endpoint {
  /** Absolute http(s) URL of a daemon path given without a leading slash, e.g. "api/gpus". */
  http(path: string): string;
  /** Absolute ws(s) URL of a WebSocket path, e.g. "ws/gpu"; wss when the page came over https. */
  ws(path: string): string;
  /** Request headers: the bearer token when the daemon runs with --token. */
  headers(): Record<string, string>;
}

/**
 * Builds the endpoint from the page's own URL. `token` (from `#token=...`) goes in an
 * Authorization header for HTTP and in `?token=` for WebSockets, which browsers cannot give
 * headers.
 */
export function makeEndpoint(pageHref: string, token: string | null): Endpoint {
  const base = new URL(pageHref);
  base.hash = '';
  base.search = '';
  return {
    http(path: string): string {
      return new URL(path, base).href;
    },
    ws(path: string): string {
      const u = new URL(path, base);
      u.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
      if (token) u.searchParams.set('token', token);
      return u.href;
    },
    headers(): Record<string, string> {
      return token ? { Authorization: `Bearer ${token}` } : {};
    },
  };
}

/** An HTTP failure with the daemon's own message when it sent one. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * GETs a daemon path as JSON; rejects with HttpError on a non-2xx answer unless its status is in
 * `alsoOk` (GET /api/health answers 503 with a body worth reading).
 */
export async function getJson<T>(ep: Endpoint, path: string, alsoOk: readonly number[] = []): Promise<T> {
  const r = await fetch(ep.http(path), { headers: ep.headers(), cache: 'no-store' });
  if (!r.ok && !alsoOk.includes(r.status)) {
    let msg = `${r.status} ${r.statusText}`;
    try {
      const body = (await r.json()) as { error?: string };
      if (body.error) msg = body.error;
    } catch {
      // not JSON: keep the status line
    }
    throw new HttpError(r.status, msg);
  }
  return (await r.json()) as T;
}
