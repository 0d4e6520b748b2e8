// The WebSocket link, driven with fake sockets and a fake clock: live on the first frame,
// reconnecting with growing delays after a close, back to short delays after success, and a
// silent link is dropped.
import { describe, expect, it } from 'vitest';

import { Backoff } from '../../src/lib/backoff';
import { Connection, OFFLINE_AFTER_FAILURES, linkLabel } from '../../src/lib/connection';
import type { LinkState, SocketLike } from '../../src/lib/connection';

class FakeSocket implements SocketLike {
  onopen: ((ev: Event) => void) | null = null;
  onmessage: ((ev: MessageEvent) => void) | null = null;
  onclose: ((ev: CloseEvent) => void) | null = null;
  onerror: ((ev: Event) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {}
  open(): void {
    this.onopen?.({} as Event);
  }
  frame(text: string): void {
    this.onmessage?.({ data: text } as MessageEvent);
  }
  drop(): void {
    this.onclose?.({} as CloseEvent);
  }
  close(): void {
    this.closed = true;
  }
}

/** A clock and timer queue advanced by hand. */
class FakeTime {
  now = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private next = 1;
  set = (fn: () => void, ms: number): unknown => {
    const id = this.next++;
    this.timers.set(id, { at: this.now + ms, fn });
    return id;
  };
  clear = (id: unknown): void => {
    this.timers.delete(id as number);
  };
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | null = null;
      for (const e of this.timers) if (e[1].at <= end && (!first || e[1].at < first[1].at)) first = e;
      if (!first) break;
      this.timers.delete(first[0]);
      this.now = first[1].at;
      first[1].fn();
    }
    this.now = end;
  }
}

function setup() {
  const time = new FakeTime();
  const sockets: FakeSocket[] = [];
  const states: LinkState[] = [];
  const frames: string[] = [];
  const conn = new Connection(
    {
      url: () => 'ws://host:1/ws/gpu',
      createSocket: (u) => {
        const s = new FakeSocket(u);
        sockets.push(s);
        return s;
      },
      now: () => time.now,
      setTimer: time.set,
      clearTimer: time.clear,
      backoff: new Backoff({ baseMs: 500, factor: 2, capMs: 4000, jitter: 0 }),
      silenceMs: 15_000,
    },
    { onFrame: (t) => frames.push(t), onState: (s) => states.push(s) },
  );
  const last = (): FakeSocket => sockets[sockets.length - 1] as FakeSocket;
  return { time, sockets, states, frames, conn, last };
}

describe('Connection', () => {
  it('is live on the first frame and passes frames on', () => {
    const { conn, last, states, frames } = setup();
    conn.start();
    expect(states.at(-1)).toEqual({ kind: 'connecting', failures: 0 });
    last().open();
    last().frame('{"seq":1}');
    expect(conn.current.kind).toBe('live');
    expect(frames).toEqual(['{"seq":1}']);
  });

  it('reconnects with growing, capped delays and opens a new socket each time', () => {
    const { conn, last, sockets, time } = setup();
    conn.start();
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      last().drop();
      const s = conn.current;
      expect(s.kind).toBe('reconnecting');
      if (s.kind === 'reconnecting') delays.push(s.retryAt - time.now);
      const before = sockets.length;
      time.advance(delays[delays.length - 1] as number);
      expect(sockets.length).toBe(before + 1);
    }
    expect(delays).toEqual([500, 1000, 2000, 4000, 4000, 4000]);
  });

  it('goes back to short delays once a frame arrives again', () => {
    const { conn, last, time } = setup();
    conn.start();
    last().drop();
    time.advance(500);
    last().drop();
    time.advance(1000);
    last().frame('{}');
    last().drop();
    const s = conn.current;
    expect(s.kind === 'reconnecting' && s.retryAt - time.now).toBe(500);
  });

  it('keeps backing off when a socket opens but closes before any frame', () => {
    const { conn, last, time } = setup();
    conn.start();
    last().open();
    last().drop();
    time.advance(500);
    last().open();
    last().drop();
    const s = conn.current;
    expect(s.kind === 'reconnecting' && s.retryAt - time.now).toBe(1000);
  });

  it('drops a link that stays silent and reconnects', () => {
    const { conn, last, time, sockets } = setup();
    conn.start();
    const first = last();
    first.open();
    first.frame('{}');
    time.advance(10_000);
    first.frame('{}');
    time.advance(10_000);
    expect(conn.current.kind).toBe('live');
    // 15 s after the last frame (t = 25 s) the link counts as dead.
    time.advance(5_100);
    expect(first.closed).toBe(true);
    expect(conn.current.kind).toBe('reconnecting');
    time.advance(500);
    expect(sockets.length).toBe(2);
  });

  it('retries at once when asked, and stops for good', () => {
    const { conn, last, sockets } = setup();
    conn.start();
    last().drop();
    conn.retryNow();
    expect(sockets.length).toBe(2);
    conn.stop();
    expect(last().closed).toBe(true);
    expect(conn.current.kind).toBe('stopped');
  });
});

describe('linkLabel', () => {
  it('says live, reconnecting with a countdown, then offline', () => {
    expect(linkLabel({ kind: 'live' }, 0)).toBe('live');
    expect(linkLabel({ kind: 'connecting', failures: 0 }, 0)).toBe('connecting');
    expect(linkLabel({ kind: 'connecting', failures: 2 }, 0)).toBe('reconnecting');
    expect(linkLabel({ kind: 'reconnecting', retryAt: 2500, failures: 1 }, 0)).toBe('reconnecting, retry in 3\u00a0s');
    expect(linkLabel({ kind: 'reconnecting', retryAt: 2500, failures: OFFLINE_AFTER_FAILURES }, 0)).toBe(
      'offline, retry in 3\u00a0s',
    );
    expect(linkLabel({ kind: 'reconnecting', retryAt: 2500, failures: 1 }, 0, false)).toMatch(/^offline/);
    expect(linkLabel({ kind: 'stopped' }, 0)).toBe('offline');
  });
});
