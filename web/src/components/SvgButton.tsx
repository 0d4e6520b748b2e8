// "SVG" beside a chart: the chart rebuilt as vector graphics from its series (lib/svg.ts), in
// the page's colours, saved as a file.

import { saveBlob } from '../lib/download';
import type { SvgChart } from '../lib/svg';
import { chartSvg, svgName } from '../lib/svg';

function pageColors(): { bg: string; fg: string; grid: string } {
  const st = getComputedStyle(document.documentElement);
  const v = (name: string, dflt: string): string => st.getPropertyValue(name).trim() || dflt;
  return { bg: v('--card', '#ffffff'), fg: v('--fg', '#1f2328'), grid: v('--grid', '#d0d7de') };
}

export function SvgButton({ id, kind, chart }: { id: string; kind: string; chart: () => SvgChart }) {
  const save = (): void => {
    const text = chartSvg({ colors: pageColors(), ...chart() });
    saveBlob(new Blob([text], { type: 'image/svg+xml' }), svgName(id, kind));
  };
  return (
    <button type="button" class="btn btn-small svg" data-action="svg" title="Save this chart as an SVG drawing" onClick={save}>
      SVG
    </button>
  );
}
