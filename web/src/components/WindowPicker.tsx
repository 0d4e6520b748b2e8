// The chart window (1 min to 1 h) of the live charts; choosing one refills them from the
// daemon's history.

import { fmtWindow } from '../lib/format';
import { WINDOWS, isWindow } from '../lib/history';
import type { Store } from '../lib/store';
import { useTopics } from './hooks';

export function WindowPicker({ store }: { store: Store }) {
  useTopics(store, 'window');
  return (
    <fieldset class="windows">
      <legend class="sr-only">Chart window</legend>
      {WINDOWS.map((w) => (
        <label key={w} class={store.window === w ? 'on' : undefined}>
          <input
            type="radio"
            name="window"
            value={w}
            checked={store.window === w}
            onChange={(e) => {
              const v = Number((e.currentTarget as HTMLInputElement).value);
              if (isWindow(v)) store.setWindow(v);
            }}
          />
          {fmtWindow(w)}
        </label>
      ))}
    </fieldset>
  );
}
