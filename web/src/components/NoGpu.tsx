// The state for a daemon that found no GPU: which providers it tried and why each failed (from
// /api/health), instead of an empty grid or a wall of zeros.

import type { Store } from '../lib/store';
import { useTopics } from './hooks';

/** "nvml: cannot load ...\nnvidia-smi: not found" -> [["nvml", "cannot load ..."], ...]. */
export function parseDiagnosis(text: string | undefined): [string, string][] {
  if (!text) return [];
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l): [string, string] => {
      const i = l.indexOf(': ');
      return i > 0 ? [l.slice(0, i), l.slice(i + 2)] : ['', l];
    });
}

export function NoGpu({ store }: { store: Store }) {
  useTopics(store, 'health');
  const h = store.health;
  const tried = parseDiagnosis(h?.diagnosis);
  return (
    <section class="card nogpu" role="status" aria-labelledby="nogpu-title" data-state="no-gpu">
      <header class="card-head">
        <h2 id="nogpu-title">No GPU found</h2>
        {h && <span class="badge">provider: {h.provider}</span>}
      </header>
      <p>The daemon is running but could not read any GPU. Host metrics below are still live.</p>
      {tried.length > 0 ? (
        <>
          <p>Providers tried:</p>
          <ul class="tried">
            {tried.map(([name, why], i) => (
              <li key={i}>
                {name && <b>{name}</b>} <span>{why}</span>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p class="note">{h ? 'The daemon gave no diagnosis.' : 'Asking the daemon why (GET /api/health)…'}</p>
      )}
      {h?.hint && <p class="note">{h.hint}</p>}
    </section>
  );
}
