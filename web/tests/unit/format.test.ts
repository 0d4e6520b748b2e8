// Unit formatting: absent is "n/a", lost is "lost", never 0; units on every value.
import { describe, expect, it } from 'vitest';

import {
  LOST,
  NA,
  fmtAge,
  fmtBytes,
  fmtDuration,
  fmtKBps,
  fmtLoad,
  fmtMHz,
  fmtMiB,
  fmtPcie,
  fmtPercent,
  fmtTemp,
  fmtWatts,
  fmtWindow,
  healthLine,
} from '../../src/lib/format';
import type { GpuHealth } from '../../src/lib/types';

const S = '\u00a0';

describe('absent and lost values', () => {
  it('shows null and undefined as n/a, never as 0', () => {
    for (const f of [fmtPercent, fmtTemp, fmtWatts, fmtMHz, fmtMiB, fmtBytes, fmtKBps]) {
      expect(f(null)).toBe(NA);
      expect(f(undefined)).toBe(NA);
      expect(f(Number.NaN)).toBe(NA);
    }
  });
  it('shows every value of a lost GPU as lost, even a number', () => {
    for (const f of [fmtPercent, fmtTemp, fmtWatts, fmtMHz, fmtMiB, fmtBytes, fmtKBps]) expect(f(42, true)).toBe(LOST);
    expect(fmtPcie(4, 16, true)).toBe(LOST);
  });
  it('keeps a real zero a zero', () => {
    expect(fmtPercent(0)).toBe(`0${S}%`);
    expect(fmtWatts(0)).toBe(`0${S}W`);
  });
});

describe('units', () => {
  it('formats percentages with one decimal only below 10', () => {
    expect(fmtPercent(42)).toBe(`42${S}%`);
    expect(fmtPercent(44.99)).toBe(`45${S}%`);
    expect(fmtPercent(4.5)).toBe(`4.5${S}%`);
    expect(fmtPercent(100)).toBe(`100${S}%`);
  });
  it('formats temperature, power and clocks', () => {
    expect(fmtTemp(42)).toBe(`42${S}°C`);
    expect(fmtWatts(273.783)).toBe(`274${S}W`);
    expect(fmtWatts(7.46)).toBe(`7.5${S}W`);
    expect(fmtMHz(1635)).toBe(`1635${S}MHz`);
  });
  it('formats sizes in binary units', () => {
    expect(fmtBytes(512)).toBe(`512${S}B`);
    expect(fmtBytes(1536)).toBe(`1.5${S}KiB`);
    expect(fmtMiB(512)).toBe(`512${S}MiB`);
    expect(fmtMiB(81559)).toBe(`79.6${S}GiB`);
    expect(fmtMiB(36692)).toBe(`35.8${S}GiB`);
    expect(fmtBytes(25276502016)).toBe(`23.5${S}GiB`);
  });
  it('formats PCIe throughput from KB/s', () => {
    expect(fmtKBps(900)).toBe(`900${S}KB/s`);
    expect(fmtKBps(65004)).toBe(`65.0${S}MB/s`);
    expect(fmtKBps(307986)).toBe(`308${S}MB/s`);
    expect(fmtKBps(2.5e6)).toBe(`2.5${S}GB/s`);
  });
  it('formats a PCIe link and says which half is missing', () => {
    expect(fmtPcie(5, 16)).toBe(`Gen${S}5${S}×16`);
    expect(fmtPcie(null, 16)).toBe(`Gen${S}${NA}${S}×16`);
    expect(fmtPcie(null, null)).toBe(NA);
  });
  it('formats durations, ages, loads and windows', () => {
    expect(fmtDuration(42)).toBe('42s');
    expect(fmtDuration(303)).toBe(`5m${S}03s`);
    expect(fmtDuration(7500)).toBe(`2h${S}05m`);
    expect(fmtDuration(3 * 86400 + 4 * 3600 + 5)).toBe(`3d${S}04h`);
    expect(fmtDuration(null)).toBe(NA);
    expect(fmtAge(400)).toBe(`0.4${S}s`);
    expect(fmtAge(12_400)).toBe(`12${S}s`);
    expect(fmtAge(180_000)).toBe(`3${S}min`);
    expect(fmtAge(-5)).toBe(`0.0${S}s`);
    expect(fmtLoad([0.43, 0.33, null])).toBe(`0.43${S}0.33${S}${NA}`);
    expect(fmtLoad(null)).toBe(NA);
    expect(fmtWindow(60)).toBe(`1${S}min`);
    expect(fmtWindow(3600)).toBe(`1${S}h`);
  });
});

describe('healthLine', () => {
  const now = Date.parse('2026-11-26T08:00:00Z');
  const clean: GpuHealth = {
    xid: null,
    ecc: { mode: { current: true, pending: true }, corrected_volatile: 0, uncorrected_volatile: 0 },
    retired_pages: { single_bit: 0, double_bit: 0, pending: false },
    remapped_rows: { correctable: 0, uncorrectable: 0, pending: false, failure: false },
    pcie_replay_counter: 0,
    degraded: false,
    reasons: null,
  };

  it('says ok when every signal the GPU reports is clean', () => {
    expect(healthLine(clean, now)).toEqual({ level: 'ok', text: 'Health ok' });
  });

  it('is n/a when the GPU reports none of them, never ok', () => {
    const none: GpuHealth = {
      xid: null,
      ecc: { mode: { current: null, pending: null }, corrected_volatile: null, uncorrected_volatile: null },
      retired_pages: { single_bit: null, double_bit: null, pending: null },
      remapped_rows: { correctable: null, uncorrectable: null, pending: null, failure: null },
      pcie_replay_counter: null,
      degraded: false,
      reasons: null,
    };
    expect(healthLine(none, now).level).toBe('na');
    expect(healthLine(undefined, now).level).toBe('na');
  });

  it('shows the daemon verdict first when degraded', () => {
    const h = { ...clean, degraded: true, reasons: 'XID 48 2 s ago; 2 uncorrected ECC errors since the driver loaded' };
    expect(healthLine(h, now)).toEqual({
      level: 'bad',
      text: 'Degraded: XID 48 2 s ago; 2 uncorrected ECC errors since the driver loaded',
    });
  });

  it('lists what is worth a look, with how long ago an old XID was', () => {
    const h: GpuHealth = {
      ...clean,
      xid: { last: 79, count: 1, last_time: '2026-11-26T06:00:00Z' },
      ecc: { ...clean.ecc, corrected_volatile: 12 },
      remapped_rows: { ...clean.remapped_rows, pending: true },
      pcie_replay_counter: 9,
    };
    expect(healthLine(h, now)).toEqual({
      level: 'warn',
      text: 'Health: XID\u00a079 2\u00a0h ago · 12 corrected ECC · row remap pending (reset the GPU) · 9 PCIe replays',
    });
  });
});
