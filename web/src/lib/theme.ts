// Chart colours come from the stylesheet's custom properties, so light and dark follow the
// system setting in one place (styles.css); canvases are redrawn when the setting flips.

export interface ChartTheme {
  text: string;
  grid: string;
  axis: string;
  util: string;
  mem: string;
  temp: string;
  power: string;
  font: string;
}

function cssVar(style: CSSStyleDeclaration, name: string, fallback: string): string {
  const v = style.getPropertyValue(name).trim();
  return v || fallback;
}

/** The chart colours in force now. */
export function readChartTheme(): ChartTheme {
  const st = getComputedStyle(document.documentElement);
  return {
    text: cssVar(st, '--fg-muted', '#666'),
    grid: cssVar(st, '--grid', 'rgba(128,128,128,0.2)'),
    axis: cssVar(st, '--border', '#ccc'),
    util: cssVar(st, '--c-util', '#2f7ed8'),
    mem: cssVar(st, '--c-mem', '#8e44ad'),
    temp: cssVar(st, '--c-temp', '#e67e22'),
    power: cssVar(st, '--c-power', '#27ae60'),
    font: `11px ${cssVar(st, '--font-ui', 'system-ui, sans-serif')}`,
  };
}

/** Calls fn when the system switches between light and dark; returns the unsubscribe. */
export function onSchemeChange(fn: () => void): () => void {
  if (typeof matchMedia !== 'function') return () => {};
  const mq = matchMedia('(prefers-color-scheme: dark)');
  mq.addEventListener('change', fn);
  return () => mq.removeEventListener('change', fn);
}
