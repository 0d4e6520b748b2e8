// The "New benchmark" form's last configurations, kept in the browser (localStorage) so that one
// click fills the form again: the newest first, at most five, a configuration sent again moved
// to the front rather than kept twice. No DOM here beyond the Storage interface.

import type { JobForm } from './jobs';
import { EMPTY_FORM } from './jobs';

export const HISTORY_KEY = 'gpumon.bench.forms';
/** Where the page kept one configuration before it kept several. */
export const LAST_KEY = 'gpumon.bench.lastForm';
export const HISTORY_MAX = 5;

type Store = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;

/** A kept configuration read back: unknown keys dropped, missing ones from the empty form. */
function revive(x: unknown): JobForm | null {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return null;
  const o = x as Record<string, unknown>;
  const f: JobForm = { ...EMPTY_FORM };
  for (const k of Object.keys(EMPTY_FORM) as (keyof JobForm)[]) {
    const v = o[k];
    if (k === 'snapshot') f.snapshot = v === true;
    else if (k === 'mode') f.mode = v === 'image' ? 'image' : 'url';
    else if (typeof v === 'string') f[k] = v;
  }
  return f;
}

const same = (a: JobForm, b: JobForm): boolean => JSON.stringify(revive(a)) === JSON.stringify(revive(b));

/** The kept configurations, newest first (the older single one when that is all there is). */
export function loadHistory(store: Store | null | undefined): JobForm[] {
  if (!store) return [];
  try {
    const s = store.getItem(HISTORY_KEY);
    if (s) {
      const a: unknown = JSON.parse(s);
      if (Array.isArray(a))
        return a
          .map(revive)
          .filter((f): f is JobForm => f !== null)
          .slice(0, HISTORY_MAX);
    }
    const last = store.getItem(LAST_KEY);
    if (last) {
      const f = revive(JSON.parse(last));
      return f ? [f] : [];
    }
  } catch {
    // unreadable: none kept
  }
  return [];
}

/** The list with `form` at the front: an equal one moved there, the oldest past the maximum dropped. */
export function pushHistory(list: readonly JobForm[], form: JobForm, max = HISTORY_MAX): JobForm[] {
  return [form, ...list.filter((f) => !same(f, form))].slice(0, max);
}

/** Keeps the list; false when the browser refuses (private mode, full). */
export function saveHistory(store: Store | null | undefined, list: readonly JobForm[]): boolean {
  if (!store) return false;
  try {
    store.setItem(HISTORY_KEY, JSON.stringify(list));
    store.removeItem(LAST_KEY);
    return true;
  } catch {
    return false;
  }
}

/** Forgets every kept configuration. */
export function clearHistory(store: Store | null | undefined): void {
  if (!store) return;
  try {
    store.removeItem(HISTORY_KEY);
    store.removeItem(LAST_KEY);
  } catch {
    // nothing to forget
  }
}

/** A kept configuration in a few words: what, the loads, the label. */
export function historyLabel(f: JobForm): string {
  const what = f.mode === 'image' ? f.image.trim() || 'image' : f.url.trim().replace(/^https?:\/\//, '') || 'server';
  const parts = [what];
  if (f.model.trim()) parts.push(f.model.trim());
  if (f.concurrency.trim()) parts.push(`c ${f.concurrency.replace(/\s+/g, '')}`);
  if (f.label.trim()) parts.push(`"${f.label.trim()}"`);
  if (f.snapshot) parts.push('audited');
  return parts.join(' \u00b7 ');
}
