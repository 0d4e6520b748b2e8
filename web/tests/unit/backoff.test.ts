// Reconnection backoff: exponential, capped, jittered within bounds, reset by success.
import { describe, expect, it } from 'vitest';

import { Backoff, backoffDelay, DEFAULT_BACKOFF } from '../../src/lib/backoff';

const opts = { baseMs: 500, factor: 2, capMs: 10_000, jitter: 0.5 };

describe('backoffDelay', () => {
  it('doubles per attempt without jitter', () => {
    const o = { ...opts, jitter: 0 };
    expect([0, 1, 2, 3, 4].map((a) => backoffDelay(a, o, 0.7))).toEqual([500, 1000, 2000, 4000, 8000]);
  });
  it('never exceeds the cap, however many attempts', () => {
    for (const a of [5, 10, 100, 10_000]) {
      expect(backoffDelay(a, opts, 0.999)).toBeLessThanOrEqual(10_000);
      expect(backoffDelay(a, opts, 0)).toBeGreaterThanOrEqual(5_000);
    }
  });
  it('keeps the jitter within [d(1-j), d]', () => {
    expect(backoffDelay(2, opts, 0)).toBe(1000);
    expect(backoffDelay(2, opts, 1)).toBe(2000);
    expect(backoffDelay(2, opts, 0.5)).toBe(1500);
  });
  it('clamps a random number outside [0, 1]', () => {
    expect(backoffDelay(0, opts, -3)).toBe(250);
    expect(backoffDelay(0, opts, 7)).toBe(500);
  });
});

describe('Backoff', () => {
  it('counts failures and starts over after reset', () => {
    const b = new Backoff(opts, () => 1);
    expect([b.next(), b.next(), b.next()]).toEqual([500, 1000, 2000]);
    expect(b.failures).toBe(3);
    b.reset();
    expect(b.failures).toBe(0);
    expect(b.next()).toBe(500);
  });
  it('spreads clients: different random draws give different delays', () => {
    const a = new Backoff(DEFAULT_BACKOFF, () => 0.1);
    const c = new Backoff(DEFAULT_BACKOFF, () => 0.9);
    a.next();
    c.next();
    expect(a.next()).not.toBe(c.next());
  });
});
