// Chart axis ranges. Every axis starts at 0 and none auto-scales to the data's own spread: a
// GPU at 2 % must look idle, not full. Percentages are always 0 to 100.

export type Range = [number, number];

/** Percent axes: 0 to 100, whatever the data. */
export function percentRange(): Range {
  return [0, 100];
}

/** Largest finite value of the given columns, or null when they hold none. */
export function maxOf(...cols: ReadonlyArray<ReadonlyArray<number | null | undefined>>): number | null {
  let m: number | null = null;
  for (const c of cols)
    for (const v of c) if (v !== null && v !== undefined && Number.isFinite(v) && (m === null || v > m)) m = v;
  return m;
}

/** Rounds up to 1, 2 or 5 times a power of ten: 230 -> 500, 700 -> 1000, 72 -> 100. */
export function niceCeil(v: number): number {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** Temperature, °C: 0 to 100, or higher in steps of 10 when a value goes past it. */
export function temperatureRange(dataMax: number | null): Range {
  const top = dataMax !== null && dataMax > 100 ? Math.ceil(dataMax / 10) * 10 : 100;
  return [0, top];
}

/**
 * Power, W: 0 to the board's power limit when known (so the line shows how close it runs to
 * the cap), else to a round number above the data; never below what was drawn.
 */
export function powerRange(limitW: number | null, dataMax: number | null): Range {
  const peak = dataMax ?? 0;
  if (limitW !== null && limitW > 0) return [0, peak > limitW ? niceCeil(peak) : limitW];
  return [0, niceCeil(Math.max(peak, 1))];
}

/** A tick's number: whole numbers as they are, others to the digits a tick needs. */
export function tickNumber(v: number): string {
  return Number.isInteger(v) ? String(v) : Math.abs(v) >= 10 ? v.toFixed(0) : v.toFixed(1);
}
