// Export (CSV, JSON: the files `gpumon history export` writes, from GET
// /api/sessions/{id}/export) and delete (DELETE /api/sessions/{id}, after a second click) of a
// stored run or benchmark.

import { useState } from 'preact/hooks';

import type { Api } from '../lib/api';
import { saveBlob } from '../lib/download';

export interface RunActionsProps {
  api: Api;
  id: string;
  /** What is deleted, for the confirmation: "session", "benchmark". */
  what: string;
  /** Called after a successful delete. */
  onDeleted: () => void;
  /** Whether delete is offered (false for a run another process still records). */
  canDelete: boolean;
  whyNot?: string;
}

export function RunActions({ api, id, what, onDeleted, canDelete, whyNot }: RunActionsProps) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const exportAs = async (format: 'csv' | 'json'): Promise<void> => {
    setBusy(format);
    setError(null);
    try {
      const f = await api.file(`api/sessions/${encodeURIComponent(id)}/export?format=${format}`);
      saveBlob(f.blob, f.filename ?? `gpumon-${id}.${format}`);
    } catch (e) {
      setError(`Export failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      setBusy(null);
    }
  };

  const remove = async (): Promise<void> => {
    setBusy('delete');
    setError(null);
    try {
      await api.del(`api/sessions/${encodeURIComponent(id)}`);
      onDeleted();
    } catch (e) {
      setError(`Delete failed: ${e instanceof Error ? e.message : String(e)}`);
      setConfirming(false);
    } finally {
      setBusy(null);
    }
  };

  return (
    <div class="actions run-actions">
      <button type="button" class="btn" data-action="export-csv" disabled={busy !== null} onClick={() => void exportAs('csv')}>
        Export CSV
      </button>
      <button type="button" class="btn" data-action="export-json" disabled={busy !== null} onClick={() => void exportAs('json')}>
        Export JSON
      </button>
      {!confirming ? (
        <button
          type="button"
          class="btn btn-danger"
          data-action="delete"
          disabled={!canDelete || busy !== null}
          title={canDelete ? `Delete this ${what} and everything stored with it` : whyNot}
          onClick={() => setConfirming(true)}
        >
          Delete…
        </button>
      ) : (
        <span class="confirm" role="group" aria-label="Confirm delete">
          <span>
            Delete this {what} and everything stored with it? This cannot be undone.
          </span>
          <button type="button" class="btn btn-danger" data-action="confirm-delete" disabled={busy !== null} onClick={() => void remove()}>
            {busy === 'delete' ? 'Deleting…' : 'Delete'}
          </button>
          <button type="button" class="btn" data-action="cancel-delete" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </span>
      )}
      {error && (
        <p class="banner" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
