// "PNG" beside a chart: saves the chart as drawn (lib/png.ts). The chart is the figure in the
// same .chart-box, so it works for every chart component without a change to it.

import { useRef, useState } from 'preact/hooks';

import { saveBlob } from '../lib/download';
import { chartPng, pngName } from '../lib/png';

export function PngButton({ id, kind }: { id: string; kind: string }) {
  const ref = useRef<HTMLButtonElement>(null);
  const [error, setError] = useState<string | null>(null);
  const save = async (): Promise<void> => {
    setError(null);
    const fig = ref.current?.closest('.chart-box')?.querySelector<HTMLElement>('figure.chart');
    const blob = fig ? await chartPng(fig) : null;
    if (!blob) {
      setError('nothing drawn yet');
      return;
    }
    saveBlob(blob, pngName(id, kind));
  };
  return (
    <button
      type="button"
      ref={ref}
      class="btn btn-small png"
      data-action="png"
      title={error ?? 'Save this chart as a PNG picture'}
      onClick={() => void save()}
    >
      PNG
    </button>
  );
}
