// Where the token is kept: the tab always, the origin only on request, and nothing left after
// "forget"; storage that throws is survived.
import { describe, expect, it } from 'vitest';

import { TOKEN_KEY, TokenKeeper } from '../../src/lib/auth';
import type { StorageLike } from '../../src/lib/auth';

class MapStorage implements StorageLike {
  m = new Map<string, string>();
  getItem(k: string): string | null {
    return this.m.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.m.set(k, v);
  }
  removeItem(k: string): void {
    this.m.delete(k);
  }
}

const broken: StorageLike = {
  getItem: () => {
    throw new Error('denied');
  },
  setItem: () => {
    throw new Error('denied');
  },
  removeItem: () => {
    throw new Error('denied');
  },
};

describe('TokenKeeper', () => {
  it('keeps a token from the address for the tab only', () => {
    const tab = new MapStorage();
    const origin = new MapStorage();
    const k = new TokenKeeper(tab, origin);
    expect(k.load('abc')).toBe('abc');
    expect(tab.getItem(TOKEN_KEY)).toBe('abc');
    expect(origin.getItem(TOKEN_KEY)).toBeNull();
    expect(k.remembered).toBe(false);
    // A reload of the tab finds it.
    expect(new TokenKeeper(tab, origin).load(null)).toBe('abc');
    // Another tab does not.
    expect(new TokenKeeper(new MapStorage(), origin).load(null)).toBeNull();
  });

  it('remembers for the origin on request, and forgets everywhere', () => {
    const tab = new MapStorage();
    const origin = new MapStorage();
    const k = new TokenKeeper(tab, origin);
    k.set('t1', true);
    expect(k.remembered).toBe(true);
    expect(new TokenKeeper(new MapStorage(), origin).load(null)).toBe('t1');
    k.set('t2', false); // entered again without "remember": the origin's copy goes
    expect(origin.getItem(TOKEN_KEY)).toBeNull();
    expect(tab.getItem(TOKEN_KEY)).toBe('t2');
    k.set('t3', true);
    k.forget();
    expect(k.token).toBeNull();
    expect(tab.getItem(TOKEN_KEY)).toBeNull();
    expect(origin.getItem(TOKEN_KEY)).toBeNull();
  });

  it('replaces a remembered token when the address brings a new one', () => {
    const origin = new MapStorage();
    origin.setItem(TOKEN_KEY, 'old');
    const k = new TokenKeeper(new MapStorage(), origin);
    expect(k.load('new')).toBe('new');
    expect(origin.getItem(TOKEN_KEY)).toBe('new');
  });

  it('works for the page view when storage is refused', () => {
    const k = new TokenKeeper(broken, null);
    expect(k.load('abc')).toBe('abc');
    k.set('x', true);
    expect(k.token).toBe('x');
    expect(k.remembered).toBe(false);
    k.forget();
    expect(k.token).toBeNull();
  });
});
