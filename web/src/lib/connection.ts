// The WebSocket link to /ws/gpu: connects, watches for silence, and reconnects with capped,
// jittered exponential backoff. Sockets and timers are injected so tests drive it without a
// browser or a clock.

import { Backoff } from './backoff';

/** The part of the browser WebSocket this module uses. */
export interface SocketLike {
  onopen: ((ev: Event) => void) | null;
  onmessage: ((ev: MessageEvent) => void) | null;
  onclose: ((ev: CloseEvent) => void) | null;
  onerror: ((ev: Event) => void) | null;
  close(): void;
}

export type LinkState =
  | { kind: 'connecting'; failures: number }
  | { kind: 'live' }
  | { kind: 'reconnecting'; retryAt: number; failures: number }
  | { kind: 'stopped' };

export interface ConnectionDeps {
  url: () => string;
  createSocket: (url: string) => SocketLike;
  now: () => number;
  setTimer: (fn: () => void, ms: number) => unknown;
  clearTimer: (id: unknown) => void;
  backoff: Backoff;
  /** A live link that brings no frame for this long is taken as dead and reopened. */
  silenceMs: number;
}

export interface ConnectionHandlers {
  /** A text frame arrived. */
  onFrame: (text: string) => void;
  /** The link state changed. */
  onState: (s: LinkState) => void;
}

/** After this many failed attempts in a row the header says "offline" rather than "reconnecting". */
export const OFFLINE_AFTER_FAILURES = 4;

/** The header's words for a link state at time `now`: "live", "reconnecting in 3 s", ... */
export function linkLabel(s: LinkState, now: number, online = true): string {
  switch (s.kind) {
    case 'live':
      return 'live';
    case 'connecting':
      return s.failures === 0 ? 'connecting' : 'reconnecting';
    case 'reconnecting': {
      const secs = Math.max(0, Math.ceil((s.retryAt - now) / 1000));
      const word = !online || s.failures >= OFFLINE_AFTER_FAILURES ? 'offline' : 'reconnecting';
      return secs > 0 ? `${word}, retry in ${secs}\u00a0s` : word;
    }
    case 'stopped':
      return 'offline';
  }
}

export class Connection {
  private sock: SocketLike | null = null;
  private retryTimer: unknown = null;
  private silenceTimer: unknown = null;
  private lastFrameAt = 0;
  private gotFrame = false;
  private state: LinkState = { kind: 'stopped' };

  constructor(
    private readonly deps: ConnectionDeps,
    private readonly handlers: ConnectionHandlers,
  ) {}

  get current(): LinkState {
    return this.state;
  }

  start(): void {
    if (this.state.kind !== 'stopped') return;
    this.open();
  }

  /** Closes the link for good (page unload, tests). */
  stop(): void {
    this.clearTimers();
    this.drop();
    this.setState({ kind: 'stopped' });
  }

  /** Skips the rest of a backoff wait (the browser came back online, the user asked). */
  retryNow(): void {
    if (this.state.kind !== 'reconnecting') return;
    this.clearTimers();
    this.open();
  }

  private setState(s: LinkState): void {
    this.state = s;
    this.handlers.onState(s);
  }

  private open(): void {
    this.setState({ kind: 'connecting', failures: this.deps.backoff.failures });
    this.gotFrame = false;
    let sock: SocketLike;
    try {
      sock = this.deps.createSocket(this.deps.url());
    } catch {
      this.scheduleRetry();
      return;
    }
    this.sock = sock;
    sock.onmessage = (ev) => {
      if (this.sock !== sock) return;
      this.lastFrameAt = this.deps.now();
      if (!this.gotFrame) {
        // Only a frame proves the daemon works: a socket that opens and closes at once must
        // keep backing off.
        this.gotFrame = true;
        this.deps.backoff.reset();
        this.setState({ kind: 'live' });
        this.armSilence();
      }
      if (typeof ev.data === 'string') this.handlers.onFrame(ev.data);
    };
    sock.onopen = () => {
      if (this.sock !== sock) return;
      this.lastFrameAt = this.deps.now();
      this.armSilence();
    };
    sock.onclose = () => {
      if (this.sock !== sock) return;
      this.sock = null;
      this.scheduleRetry();
    };
    sock.onerror = () => {
      // onclose follows and schedules the retry.
    };
  }

  private scheduleRetry(): void {
    this.clearTimers();
    const delay = this.deps.backoff.next();
    this.setState({ kind: 'reconnecting', retryAt: this.deps.now() + delay, failures: this.deps.backoff.failures });
    this.retryTimer = this.deps.setTimer(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  private armSilence(): void {
    if (this.silenceTimer !== null) this.deps.clearTimer(this.silenceTimer);
    const check = (): void => {
      this.silenceTimer = null;
      if (!this.sock) return;
      const quiet = this.deps.now() - this.lastFrameAt;
      if (quiet >= this.deps.silenceMs) {
        this.drop();
        this.scheduleRetry();
        return;
      }
      this.silenceTimer = this.deps.setTimer(check, this.deps.silenceMs - quiet);
    };
    this.silenceTimer = this.deps.setTimer(check, this.deps.silenceMs);
  }

  private drop(): void {
    const s = this.sock;
    this.sock = null;
    if (s) {
      s.onopen = s.onmessage = s.onclose = s.onerror = null;
      try {
        s.close();
      } catch {
        // already closed
      }
    }
  }

  private clearTimers(): void {
    if (this.retryTimer !== null) this.deps.clearTimer(this.retryTimer);
    if (this.silenceTimer !== null) this.deps.clearTimer(this.silenceTimer);
    this.retryTimer = this.silenceTimer = null;
  }
}
