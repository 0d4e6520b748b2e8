// Reconnection delays: exponential, capped, with jitter so that many dashboards left open on a
// restarted daemon do not all knock on it in the same millisecond.

export interface BackoffOptions {
  /** Delay before the first retry, in ms. */
  baseMs: number;
  /** Growth per failed attempt. */
  factor: number;
  /** Longest delay, in ms, before jitter. */
  capMs: number;
  /** Share of the delay that is random, 0 to 1: 0.5 gives a delay in [d/2, d]. */
  jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, factor: 2, capMs: 10_000, jitter: 0.5 };

/** The delay before retry number `attempt` (0 = first retry); `r` is a uniform number in [0, 1). */
export function backoffDelay(attempt: number, opts: BackoffOptions, r: number): number {
  const a = Math.max(0, Math.floor(attempt));
  // Math.pow overflows to Infinity for large attempts; min() with the cap still holds.
  const full = Math.min(opts.capMs, opts.baseMs * Math.pow(opts.factor, a));
  const j = Math.min(1, Math.max(0, opts.jitter));
  const rr = Math.min(1, Math.max(0, r));
  return Math.round(full * (1 - j + j * rr));
}

/** Counts failed attempts; next() gives the delay to wait and advances, reset() after success. */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly opts: BackoffOptions = DEFAULT_BACKOFF,
    private readonly random: () => number = Math.random,
  ) {}

  /** Failed attempts since the last reset. */
  get failures(): number {
    return this.attempt;
  }

  next(): number {
    const d = backoffDelay(this.attempt, this.opts, this.random());
    this.attempt++;
    return d;
  }

  reset(): void {
    this.attempt = 0;
  }
}
