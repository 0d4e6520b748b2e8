// A chart as a PNG file: uPlot draws on a canvas, so the picture is that canvas under the
// chart's title and legend (which are HTML), on the page's background, at the canvas's own
// resolution (device pixels).

/** The file name for a chart: "gpumon-<id>-<kind>.png", with nothing but [A-Za-z0-9._-]. */
export function pngName(id: string, kind: string): string {
  return `gpumon-${id}-${kind}.png`.replace(/[^A-Za-z0-9._-]+/g, '_');
}

/** The PNG of the chart drawn in `fig` (a figure with a caption and uPlot's canvas), or null. */
export async function chartPng(fig: HTMLElement): Promise<Blob | null> {
  const plot = fig.querySelector('canvas');
  if (!plot || plot.width === 0 || plot.height === 0) return null;
  const st = getComputedStyle(fig);
  const root = getComputedStyle(document.documentElement);
  const bg = root.getPropertyValue('--card').trim() || '#fff';
  const fg = root.getPropertyValue('--fg').trim() || st.color || '#000';
  const dpr = plot.width / Math.max(1, plot.clientWidth || plot.width);
  const title = fig.querySelector('.ctitle')?.textContent ?? '';
  const legend = [...fig.querySelectorAll('figcaption .lg')].map((el) => ({
    text: el.textContent ?? '',
    color: (el.querySelector('.sw') as HTMLElement | null)?.style.background ?? fg,
  }));
  const pad = Math.round(8 * dpr);
  const head = Math.round(22 * dpr);
  const out = document.createElement('canvas');
  out.width = plot.width + 2 * pad;
  out.height = plot.height + head + 2 * pad;
  const ctx = out.getContext('2d');
  if (!ctx) return null;
  ctx.fillStyle = bg;
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.textBaseline = 'middle';
  const font = st.fontFamily || 'system-ui, sans-serif';
  ctx.font = `600 ${Math.round(12 * dpr)}px ${font}`;
  ctx.fillStyle = fg;
  let x = pad;
  const y = pad + head / 2;
  ctx.fillText(title, x, y);
  x += ctx.measureText(title).width + 12 * dpr;
  ctx.font = `${Math.round(11 * dpr)}px ${font}`;
  for (const l of legend) {
    ctx.fillStyle = l.color;
    ctx.fillRect(x, y - 1.5 * dpr, 10 * dpr, 3 * dpr);
    x += 14 * dpr;
    ctx.fillStyle = fg;
    ctx.fillText(l.text, x, y);
    x += ctx.measureText(l.text).width + 10 * dpr;
  }
  ctx.drawImage(plot, pad, pad + head);
  return new Promise((resolve) => out.toBlob((b) => resolve(b), 'image/png'));
}
