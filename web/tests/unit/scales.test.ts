// Axis ranges: percentages are 0-100 whatever the data; other axes start at 0 and never zoom
// into the data's own spread.
import { describe, expect, it } from 'vitest';

import { maxOf, niceCeil, percentRange, powerRange, temperatureRange, tickNumber } from '../../src/lib/scales';

describe('percent axis', () => {
  it('holds 0-100 when every value is small', () => {
    expect(percentRange()).toEqual([0, 100]);
  });
});

describe('other axes', () => {
  it('finds the largest finite value, skipping nulls', () => {
    expect(maxOf([1, null, 3], [2, Number.NaN])).toBe(3);
    expect(maxOf([null], [])).toBeNull();
  });
  it('rounds up to 1, 2, 2.5 or 5 times a power of ten', () => {
    expect(niceCeil(72)).toBe(100);
    expect(niceCeil(230)).toBe(250);
    expect(niceCeil(700)).toBe(1000);
    expect(niceCeil(0)).toBe(1);
  });
  it('shows temperature from 0 to at least 100 °C', () => {
    expect(temperatureRange(null)).toEqual([0, 100]);
    expect(temperatureRange(31)).toEqual([0, 100]);
    expect(temperatureRange(104)).toEqual([0, 110]);
  });
  it('shows power from 0 to the board limit, or above it when exceeded', () => {
    expect(powerRange(700, 70)).toEqual([0, 700]);
    expect(powerRange(700, 760)).toEqual([0, 1000]);
    expect(powerRange(null, 72)).toEqual([0, 100]);
    expect(powerRange(null, null)).toEqual([0, 1]);
  });
});

describe('tick numbers', () => {
  it('keeps whole numbers, rounds from 10 up and keeps one decimal below', () => {
    expect(tickNumber(50)).toBe('50');
    expect(tickNumber(131.25)).toBe('131');
    expect(tickNumber(2.5)).toBe('2.5');
    expect(tickNumber(-12.5)).toBe('-13');
  });
});
