// Where the daemon's token is kept in the browser.
//
// - Always in sessionStorage: this tab only (it survives a reload, which matters because the page
//   takes `#token=` out of the address bar), gone when the tab closes.
// - In localStorage only when the person asks ("remember on this browser"): kept for this origin
//   in every tab and after a restart, until "forget". It is opt-in because localStorage never
//   expires and any script of the origin can read it; the token guards the daemon's state-changing
//   requests (deleting sessions), so it must not outlive the tab unless someone chose that.
// Both stores are per origin (scheme, host, port), never shared with another daemon's page.

export const TOKEN_KEY = 'gpumon.token';

/** The part of the Web Storage API used here (tests pass a Map-backed one). */
export interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

function tryGet(s: StorageLike | null): string | null {
  try {
    return s?.getItem(TOKEN_KEY) ?? null;
  } catch {
    return null; // storage refused (private mode, a sandboxed frame)
  }
}

function trySet(s: StorageLike | null, v: string | null): void {
  try {
    if (v === null) s?.removeItem(TOKEN_KEY);
    else s?.setItem(TOKEN_KEY, v);
  } catch {
    // the token still works for this page view
  }
}

export class TokenKeeper {
  /** The token in use, null when none. */
  token: string | null = null;

  constructor(
    private readonly tab: StorageLike | null,
    private readonly origin: StorageLike | null,
  ) {}

  /** Whether the token is kept for the origin (localStorage). */
  get remembered(): boolean {
    return this.token !== null && tryGet(this.origin) === this.token;
  }

  /** The token a page starts with: one given in the address wins, else the tab's, else the origin's. */
  load(fromAddress: string | null): string | null {
    if (fromAddress) {
      this.token = fromAddress;
      trySet(this.tab, fromAddress);
      // A new token from the address replaces a remembered one that no longer matches.
      const kept = tryGet(this.origin);
      if (kept !== null && kept !== fromAddress) trySet(this.origin, fromAddress);
      return this.token;
    }
    this.token = tryGet(this.tab) ?? tryGet(this.origin);
    return this.token;
  }

  /** A token entered in the form: kept for the tab, and for the origin when `remember`. */
  set(token: string, remember: boolean): void {
    this.token = token;
    trySet(this.tab, token);
    trySet(this.origin, remember ? token : null);
  }

  /** Drops the token everywhere. */
  forget(): void {
    this.token = null;
    trySet(this.tab, null);
    trySet(this.origin, null);
  }
}
