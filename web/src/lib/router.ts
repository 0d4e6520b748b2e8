// Hash routes: "#/sessions/ID?x=1". The address after '#' never reaches the daemon, so the
// embedded server needs no fallback for client routes and the page works under any sub-path.
// Pages are one table (src/pages.ts); this module only parses, matches and builds addresses.

/** One page of the table. `path` segments starting with ':' capture a parameter. */
export interface Route<P> {
  path: string;
  page: P;
  /** Label in the navigation bar; pages without one are reached through links. */
  nav?: string;
  /** The nav entry (its path) highlighted while this page is shown; default: its own path. */
  section?: string;
}

export interface Place {
  /** "/sessions/abc": always starts with "/", no trailing slash but for "/" itself. */
  path: string;
  query: URLSearchParams;
}

export interface Match<P> {
  route: Route<P>;
  params: Record<string, string>;
}

function cleanPath(p: string): string {
  const segs = p.split('/').filter((s) => s !== '');
  return '/' + segs.join('/');
}

/**
 * The place a fragment names: "#/gpu/3?window=300" -> {path: "/gpu/3", query}. An empty
 * fragment, "#", or one that is not a route (e.g. "#token=...") is the start page "/".
 */
export function parseHash(hash: string): Place {
  const h = hash.startsWith('#') ? hash.slice(1) : hash;
  if (!h.startsWith('/')) return { path: '/', query: new URLSearchParams() };
  const q = h.indexOf('?');
  const path = cleanPath(q < 0 ? h : h.slice(0, q));
  return { path, query: new URLSearchParams(q < 0 ? '' : h.slice(q + 1)) };
}

/** The fragment of a place: href("/sessions/a b") -> "#/sessions/a%20b"; query optional. */
export function href(path: string, query?: Record<string, string | undefined>): string {
  const segs = cleanPath(path)
    .split('/')
    .map((s) => encodeURIComponent(decodeSafe(s)));
  let out = '#' + (segs.join('/') || '/');
  if (query) {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') qs.set(k, v);
    const s = qs.toString();
    if (s) out += '?' + s;
  }
  return out;
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * The route for a path, with its parameters decoded. Static segments beat parameters, so
 * "/benchmarks/compare" wins over "/benchmarks/:id" whatever the table's order.
 */
export function matchRoute<P>(routes: readonly Route<P>[], path: string): Match<P> | null {
  const segs = cleanPath(path).split('/').slice(1);
  let best: Match<P> | null = null;
  let bestScore = -1;
  for (const route of routes) {
    const pat = cleanPath(route.path).split('/').slice(1);
    if (pat.length !== segs.length) continue;
    const params: Record<string, string> = {};
    let score = 0;
    let ok = true;
    for (let i = 0; i < pat.length && ok; i++) {
      const p = pat[i] as string;
      const s = segs[i] as string;
      if (p.startsWith(':')) params[p.slice(1)] = decodeSafe(s);
      else if (p === s) score++;
      else ok = false;
    }
    if (ok && score > bestScore) {
      best = { route, params };
      bestScore = score;
    }
  }
  return best;
}

/** The nav path to highlight for a matched route. */
export function sectionOf<P>(m: Match<P> | null): string | null {
  if (!m) return null;
  return m.route.section ?? cleanPath(m.route.path);
}

/**
 * Takes a token out of a fragment: "#token=T" (as `gpumon serve` prints it) or a route with
 * "token=T" in its query ("#/gpu/1?token=T"). Returns the token (null when none) and the
 * fragment to keep in the address bar, without it.
 */
export function takeToken(hash: string): { token: string | null; rest: string } {
  const h = hash.startsWith('#') ? hash.slice(1) : hash;
  if (h.startsWith('/')) {
    const q = h.indexOf('?');
    if (q < 0) return { token: null, rest: hash };
    const qs = new URLSearchParams(h.slice(q + 1));
    const token = qs.get('token');
    if (token === null) return { token: null, rest: hash };
    qs.delete('token');
    const s = qs.toString();
    return { token: token || null, rest: '#' + h.slice(0, q) + (s ? '?' + s : '') };
  }
  const qs = new URLSearchParams(h);
  const token = qs.get('token');
  return { token: token || null, rest: token === null ? hash : '' };
}
