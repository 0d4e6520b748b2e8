// The keyboard reading every chart shares: the arrows step the cursor over the points from the
// last one, Home/End/Escape only where the chart offers them, leaving the chart clears it.
import { describe, expect, it } from 'vitest';
import type uPlot from 'uplot';

import { bindCursorKeys, unitTicks } from '../../src/lib/plot';

/** A plot of three points at x = 10, 20, 30 drawn 10 px apart; it records the cursor's left. */
function fakePlot(): { plot: uPlot; lefts: number[] } {
  const lefts: number[] = [];
  const plot = {
    data: [[10, 20, 30]],
    over: { clientHeight: 100 },
    valToPos: (x: number) => x,
    setCursor: (c: { left: number }) => lefts.push(c.left),
  } as unknown as uPlot;
  return { plot, lefts };
}

function press(fig: EventTarget, key: string): boolean {
  const e = new Event('keydown', { cancelable: true }) as Event & { key: string };
  e.key = key;
  fig.dispatchEvent(e);
  return e.defaultPrevented;
}

describe('cursor keys', () => {
  it('steps from the last point, stops at the ends, and jumps with Home/End', () => {
    const fig = new EventTarget();
    const { plot, lefts } = fakePlot();
    bindCursorKeys(fig as HTMLElement, () => plot, { jumps: true });
    expect(press(fig, 'ArrowLeft')).toBe(true);
    press(fig, 'ArrowLeft');
    press(fig, 'ArrowLeft');
    press(fig, 'End');
    press(fig, 'ArrowRight');
    press(fig, 'Home');
    expect(lefts).toEqual([20, 10, 10, 30, 30, 10]);
    press(fig, 'Escape');
    expect(lefts.at(-1)).toBe(-10);
    press(fig, 'ArrowLeft'); // from the last point again
    expect(lefts.at(-1)).toBe(20);
  });

  it('leaves Home, End and Escape alone on a chart of arrows only, and stops when removed', () => {
    const fig = new EventTarget();
    const { plot, lefts } = fakePlot();
    const off = bindCursorKeys(fig as HTMLElement, () => plot, { jumps: false });
    expect(press(fig, 'Home')).toBe(false);
    press(fig, 'Escape');
    expect(lefts).toEqual([]);
    off();
    press(fig, 'ArrowLeft');
    expect(lefts).toEqual([]);
  });

  it('clears the cursor when the chart loses focus, where asked', () => {
    const fig = new EventTarget();
    const { plot, lefts } = fakePlot();
    bindCursorKeys(fig as HTMLElement, () => plot, { jumps: true, blurClears: true });
    press(fig, 'ArrowLeft');
    fig.dispatchEvent(new Event('blur'));
    expect(lefts).toEqual([20, -10]);
  });
});

describe('unit ticks', () => {
  it('sticks % and °C to the number and puts a thin space before words', () => {
    const u = {} as uPlot;
    expect(unitTicks('%')(u, [0, 50])).toEqual(['0%', '50%']);
    expect(unitTicks('°C')(u, [40])).toEqual(['40°C']);
    expect(unitTicks('tok/s')(u, [12.5, 2.5])).toEqual(['13\u2009tok/s', '2.5\u2009tok/s']);
    expect(unitTicks('W', (v) => v.toFixed(1))(u, [131.25])).toEqual(['131.3\u2009W']);
  });
});
