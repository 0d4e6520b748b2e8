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
