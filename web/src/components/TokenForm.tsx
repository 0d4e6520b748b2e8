// Shown when the daemon answers 401: the stream is stopped (no reconnecting with a token that
// cannot work) until a token is entered here.

import { useState } from 'preact/hooks';

export interface TokenFormProps {
  /** Why the last token failed, or null. */
  error: string | null;
  busy: boolean;
  onSubmit: (token: string, remember: boolean) => void;
}

export function TokenForm({ error, busy, onSubmit }: TokenFormProps) {
  const [remember, setRemember] = useState(false);
  const origin = typeof location === 'undefined' ? 'this address' : location.origin;
  return (
    <section class="card tokenform" data-state="token-needed" aria-labelledby="token-title">
      <h2 id="token-title">This gpumon daemon needs a token</h2>
      <p class="note">
        It was started with <code>--token</code> (or <code>GPU_MONITOR_TOKEN</code>). On a terminal, <code>gpumon serve</code>{' '}
        prints the dashboard's address with the token in it (<code>…/#token=…</code>). The page stopped reconnecting until
        a token is given.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const input = (e.currentTarget as HTMLFormElement).elements.namedItem('token') as HTMLInputElement | null;
          const t = input?.value.trim() ?? '';
          if (t) onSubmit(t, remember);
        }}
      >
        <label class="field">
          <span>Token</span>
          <input type="password" name="token" autoComplete="current-password" required autoFocus spellcheck={false} />
        </label>
        <label class="check">
          <input type="checkbox" name="remember" checked={remember} onChange={(e) => setRemember((e.currentTarget as HTMLInputElement).checked)} />
          <span>
            Remember on this browser: kept for {origin} in every tab until you press “forget token”. Otherwise only this
            tab keeps it, until it is closed.
          </span>
        </label>
        <div class="actions">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            {busy ? 'Checking…' : 'Connect'}
          </button>
        </div>
        {error && (
          <p class="banner" role="alert" data-field="token-error">
            {error}
          </p>
        )}
      </form>
    </section>
  );
}
