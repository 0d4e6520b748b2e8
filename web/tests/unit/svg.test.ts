// A chart as SVG, built from its series: axes, ticks, one line per series, a dot per value.
import { describe, expect, it } from 'vitest';

import { chartSvg, svgName, xmlEscape } from '../../src/lib/svg';

const count = (s: string, re: RegExp): number => (s.match(re) ?? []).length;

describe('chartSvg', () => {
  const svg = chartSvg({
    title: 'Output tokens per second by concurrency',
    xTitle: 'Concurrency',
    unit: 'tok/s',
    lines: [
      { label: 'run A', color: '#1f77b4' },
      { label: 'run <B>', color: '#ff7f0e', dash: true },
    ],
    data: [
      [1, 8, 64],
      [100, 700, 900],
      [90, null, 850],
    ],
    xTicks: [1, 8, 64],
    log: true,
  });

  it('is one svg document with its title and the axis titles', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(count(svg, /<svg /g)).toBe(1);
    expect(svg).toContain('<title>Output tokens per second by concurrency</title>');
    expect(svg).toContain('>Concurrency</text>');
  });

  it('draws one line per series, a dot per measured value, skipping what is not measured', () => {
    expect(count(svg, /<g class="series"/g)).toBe(2);
    expect(count(svg, /<polyline /g)).toBe(2);
    expect(count(svg, /<circle /g)).toBe(5);
    expect(svg).toContain('stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6 4"');
  });

  it('ticks x at the loads and y from 0 to a round top, each with its unit', () => {
    const xs = [...svg.matchAll(/<g class="x-axis"[^]*?<\/g>/g)][0]?.[0] ?? '';
    expect([...xs.matchAll(/>(\d+)<\/text>/g)].map((m) => m[1])).toEqual(['1', '8', '64']);
    expect(svg).toContain('>0 tok/s</text>');
    expect(svg).toContain('>1000 tok/s</text>');
  });

  it('puts a larger value higher, and the x order left to right', () => {
    const dots = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)].slice(0, 3).map((m) => ({ x: Number(m[1]), y: Number(m[2]) }));
    const [a, b, c] = dots as [{ x: number; y: number }, { x: number; y: number }, { x: number; y: number }];
    expect(a.x).toBeLessThan(b.x);
    expect(b.x).toBeLessThan(c.x);
    expect(a.y).toBeGreaterThan(b.y);
    // log axis: 1 -> 8 and 8 -> 64 are the same distance.
    expect(Math.abs(b.x - a.x - (c.x - b.x))).toBeLessThan(0.05);
  });

  it('escapes text', () => {
    expect(svg).toContain('>run &lt;B&gt;</text>');
    expect(svg).not.toContain('<B>');
    expect(xmlEscape(`a&"'`)).toBe('a&amp;&quot;&#39;');
  });

  it('draws empty axes for no data, and percent ticks without a space', () => {
    const e = chartSvg({ title: 't', xTitle: 'x', unit: '%', lines: [{ label: 'a', color: 'red' }], data: [[], []] });
    expect(count(e, /<circle /g)).toBe(0);
    expect(e).toContain('>0%</text>');
  });
});

describe('svgName', () => {
  it('keeps only safe characters', () => {
    expect(svgName('b 1/x', 'sweep-throughput')).toBe('gpumon-b_1_x-sweep-throughput.svg');
  });
});

describe('chartSvg of a time series with gaps', () => {
  it('breaks the line at a null when asked, without dots', () => {
    const svg = chartSvg({
      title: 'Power draw over the run',
      xTitle: 'Time',
      unit: 'W',
      lines: [{ label: 'GPU 0', color: '#000' }],
      data: [
        [10, 11, 12, 13, 14],
        [100, 110, null, 120, 130],
      ],
      breakAtNull: true,
      dots: false,
      xFromData: true,
    });
    expect(count(svg, /<polyline /g)).toBe(2);
    expect(count(svg, /<circle /g)).toBe(0);
  });
});
