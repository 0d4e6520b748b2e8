// REST calls of the pages: JSON reads, files (exports) and the state-changing requests, all with
// the token of the moment. A 401 from any of them means the token is missing or wrong: the app
// is told once per answer, shows the token form and stops reconnecting.

import { HttpError } from './endpoint';
import type { Endpoint } from './endpoint';

/** The file name a Content-Disposition header gives, or null. */
export function filenameFrom(disposition: string | null): string | null {
  if (!disposition) return null;
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
  if (!m || !m[1]) return null;
  let name = m[1];
  try {
    name = decodeURIComponent(name);
  } catch {
    // as sent
  }
  // A name, never a path.
  return name.replace(/[/\\]/g, '_');
}

export interface FileAnswer {
  blob: Blob;
  filename: string | null;
}

type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

export class Api {
  constructor(
    private readonly endpoint: () => Endpoint,
    private readonly onUnauthorized: (e: HttpError) => void,
    private readonly fetchFn: FetchFn = (u, i) => fetch(u, i),
  ) {}

  /** The ws(s) URL of a WebSocket path ("ws/benchmarks") with the token of the moment. */
  ws(path: string): string {
    return this.endpoint().ws(path);
  }

  /** The http(s) URL of a daemon path, for links (no token: a daemon with --token needs file()). */
  url(path: string): string {
    return this.endpoint().http(path);
  }

  /** GETs a daemon path as JSON; rejects with HttpError unless 2xx or in `alsoOk`. */
  async json<T>(path: string, alsoOk: readonly number[] = []): Promise<T> {
    const r = await this.send(path, 'GET', alsoOk);
    return (await r.json()) as T;
  }

  /** GETs a file (an export) with the name the daemon gives it. */
  async file(path: string): Promise<FileAnswer> {
    const r = await this.send(path, 'GET');
    return { blob: await r.blob(), filename: filenameFrom(r.headers.get('Content-Disposition')) };
  }

  /** DELETE: resolves on 2xx (204). */
  async del(path: string): Promise<void> {
    await this.send(path, 'DELETE');
  }

  /** POST without a body; the answer's JSON (null for an empty one). */
  async post<T>(path: string): Promise<T | null> {
    const r = await this.send(path, 'POST');
    const text = await r.text();
    return text ? (JSON.parse(text) as T) : null;
  }

  /** POST with a JSON body; the answer's JSON (null for an empty one). */
  async postJson<T>(path: string, body: unknown): Promise<T | null> {
    const r = await this.send(path, 'POST', [], JSON.stringify(body));
    const text = await r.text();
    return text ? (JSON.parse(text) as T) : null;
  }

  private async send(path: string, method: string, alsoOk: readonly number[] = [], body?: string): Promise<Response> {
    const ep = this.endpoint();
    let r: Response;
    try {
      const headers: Record<string, string> = { ...ep.headers() };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      r = await this.fetchFn(ep.http(path), { method, headers, cache: 'no-store', ...(body !== undefined ? { body } : {}) });
    } catch (e) {
      throw new HttpError(0, `cannot reach the daemon (${e instanceof Error ? e.message : String(e)})`);
    }
    if (r.ok || alsoOk.includes(r.status)) return r;
    let msg = `${r.status} ${r.statusText}`.trim();
    try {
      const body = (await r.json()) as { error?: string };
      if (body.error) msg = body.error;
    } catch {
      // not JSON: keep the status line
    }
    const err = new HttpError(r.status, msg);
    if (r.status === 401) this.onUnauthorized(err);
    throw err;
  }
}
