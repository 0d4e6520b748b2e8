// The "New benchmark" form's last five configurations, kept in the browser.
import { describe, expect, it } from 'vitest';

import { EMPTY_FORM } from '../../src/lib/jobs';
import type { JobForm } from '../../src/lib/jobs';
import { clearHistory, HISTORY_KEY, historyLabel, LAST_KEY, loadHistory, pushHistory, saveHistory } from '../../src/lib/formhistory';

class MemStore {
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

const form = (url: string, o: Partial<JobForm> = {}): JobForm => ({ ...EMPTY_FORM, url, ...o });

describe('pushHistory', () => {
  it('puts the newest first and keeps five', () => {
    let l: JobForm[] = [];
    for (let i = 1; i <= 7; i++) l = pushHistory(l, form(`http://h:${i}`));
    expect(l.map((f) => f.url)).toEqual(['http://h:7', 'http://h:6', 'http://h:5', 'http://h:4', 'http://h:3']);
  });
  it('moves a configuration sent again to the front instead of keeping it twice', () => {
    const l = pushHistory(pushHistory(pushHistory([], form('a')), form('b')), form('a'));
    expect(l.map((f) => f.url)).toEqual(['a', 'b']);
  });
});

describe('loadHistory and saveHistory', () => {
  it('round-trips through the store, every field restored', () => {
    const s = new MemStore();
    const f = form('http://h:8000', { mode: 'image', image: 'nvcr.io/nim/x:1', snapshot: true, label: 'nightly', gpus: '2' });
    expect(saveHistory(s, [f, form('b')])).toBe(true);
    expect(loadHistory(s)).toEqual([f, form('b')]);
  });
  it('reads the single configuration kept before, and nothing from garbage', () => {
    const s = new MemStore();
    s.setItem(LAST_KEY, JSON.stringify({ url: 'old', requests: '50', bogus: 1 }));
    expect(loadHistory(s)).toEqual([form('old', { requests: '50' })]);
    s.setItem(HISTORY_KEY, '{not json');
    expect(loadHistory(s)).toEqual([]);
    s.setItem(HISTORY_KEY, JSON.stringify([1, null, { url: 'x', snapshot: 'yes' }]));
    expect(loadHistory(s)).toEqual([form('x')]);
    expect(loadHistory(null)).toEqual([]);
  });
  it('clears', () => {
    const s = new MemStore();
    saveHistory(s, [form('a')]);
    s.setItem(LAST_KEY, '{}');
    clearHistory(s);
    expect(loadHistory(s)).toEqual([]);
  });
  it('says false when the browser refuses to keep it', () => {
    const s = new MemStore();
    s.setItem = () => {
      throw new Error('QuotaExceededError');
    };
    expect(saveHistory(s, [form('a')])).toBe(false);
  });
});

describe('historyLabel', () => {
  it('names the server or the image, the loads, the label', () => {
    expect(historyLabel(form('http://h:8000', { concurrency: '1, 8', label: 'nightly' }))).toBe('h:8000 \u00b7 c 1,8 \u00b7 "nightly"');
    expect(historyLabel(form('', { mode: 'image', image: 'nvcr.io/nim/llama:1', concurrency: '', snapshot: true }))).toBe(
      'nvcr.io/nim/llama:1 \u00b7 audited',
    );
  });
});
