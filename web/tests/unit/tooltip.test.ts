// The charts' readout box: what it says for the point under the cursor, where it goes, and when
// it hides. The plot and the box are plain objects with the parts the helper reads and writes.
import { describe, expect, it } from 'vitest';

import type { TipBox, TipLine, TipPlot } from '../../src/lib/tooltip';
import { showTip, tipHtml, tipX } from '../../src/lib/tooltip';

const pct = (v: number | null): string => (v === null ? '—' : `${v}%`);
const LINES: TipLine[] = [
  { label: 'GPU 0', color: '#111', fmt: pct },
  { label: 'GPU 1', color: '#222', fmt: pct },
];

function plot(idx: number | null, left: number, width = 400, overLeft = 50): TipPlot {
  return {
    cursor: { idx, left },
    data: [
      [100, 101, 102],
      [10, 20, null],
      [30, null, 50],
    ],
    over: { clientWidth: width, getBoundingClientRect: () => ({ left: overLeft }) },
  };
}

function box(width = 120): TipBox {
  // Like an element: no width while hidden.
  const b = { hidden: true, innerHTML: '', style: { transform: '' } } as TipBox;
  Object.defineProperty(b, 'offsetWidth', { get: () => (b.hidden ? 0 : width) });
  return b;
}

const host = { getBoundingClientRect: () => ({ left: 10 }) };

describe('chart readout', () => {
  it('lists the time and each line with its swatch and value, a missing one as the formatter says', () => {
    expect(tipHtml('12:00:01', LINES, [20, null])).toBe(
      '<time>12:00:01</time>' +
        '<div><i style="background:#111"></i>GPU 0 <b>20%</b></div>' +
        '<div><i style="background:#222"></i>GPU 1 <b>—</b></div>',
    );
  });

  it('sits right of the cursor on the left half and left of it on the right half', () => {
    expect(tipX(100, 400, 40, 120)).toBe(40 + 100 + 8);
    expect(tipX(300, 400, 40, 120)).toBe(40 + 300 - 120 - 8);
    expect(tipX(100.4, 400, 40.3, 120)).toBe(149);
  });

  it('shows the point under the cursor, measured once visible', () => {
    const tip = box();
    const times: number[] = [];
    showTip(plot(1, 300), tip, host, LINES, (x) => {
      times.push(x);
      return `t${x}`;
    });
    expect(times).toEqual([101]);
    expect(tip.hidden).toBe(false);
    expect(tip.innerHTML).toBe(tipHtml('t101', LINES, [20, null]));
    // The drawing area starts 40 px into the host; the box (120 px wide) goes left of the cursor.
    expect(tip.style.transform).toBe(`translate(${40 + 300 - 120 - 8}px, 4px)`);
  });

  it('hides when the cursor leaves the plot or points past the data', () => {
    const tip = box();
    const time = (x: number): string => String(x);
    showTip(plot(0, 10), tip, host, LINES, time);
    expect(tip.hidden).toBe(false);
    showTip(plot(null, 10), tip, host, LINES, time);
    expect(tip.hidden).toBe(true);
    showTip(plot(0, -10), tip, host, LINES, time);
    expect(tip.hidden).toBe(true);
    showTip(plot(7, 10), tip, host, LINES, time);
    expect(tip.hidden).toBe(true);
  });
});
