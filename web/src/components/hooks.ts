// Subscribing a component to store topics: it re-renders when one of them is flushed, and only
// then, so a sample re-renders the parts that show it rather than the whole tree.

import { useEffect, useState } from 'preact/hooks';

import type { Store, Topic } from '../lib/store';

/** Re-renders the calling component whenever one of `topics` is flushed. */
export function useTopics(store: Store, ...topics: Topic[]): void {
  const [, setTick] = useState(0);
  const key = topics.join(',');
  useEffect(() => {
    const offs = topics.map((t) => store.subscribe(t, () => setTick((n) => (n + 1) & 0xffff)));
    return () => offs.forEach((off) => off());
    // topics is a fresh array each render: its joined key is the real dependency.
  }, [store, key]);
}

/** Re-renders the calling component every `ms` milliseconds (clocks and countdowns). */
export function useTicker(ms: number): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    const id = setInterval(() => setTick((n) => (n + 1) & 0xffff), ms);
    return () => clearInterval(id);
  }, [ms]);
}

export interface Resource<T> {
  data: T | null;
  error: string | null;
  /** The HTTP status of the failure (0: the daemon could not be reached), null when none. */
  status: number | null;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads something once per `deps` (and again on reload). An answer that arrives after deps
 * changed is dropped, so a page never shows another page's data.
 */
export function useResource<T>(load: () => Promise<T>, deps: readonly unknown[]): Resource<T> {
  const [state, setState] = useState<{ data: T | null; error: string | null; status: number | null; loading: boolean }>({
    data: null,
    error: null,
    status: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => {
        if (live) setState({ data, error: null, status: null, loading: false });
      },
      (e: unknown) => {
        if (!live) return;
        const status = typeof e === 'object' && e !== null && 'status' in e ? Number((e as { status: unknown }).status) : null;
        setState({ data: null, error: e instanceof Error ? e.message : String(e), status, loading: false });
      },
    );
    return () => {
      live = false;
    };
    // deps are the caller's: load is a fresh closure each render.
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((n) => n + 1) };
}
