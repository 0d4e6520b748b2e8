// What the lists of the dashboard share: the filter box of a list (stored runs, benchmarks,
// processes) and the banners above a stored list (what was just deleted, why the list could not
// be fetched, why the store could not be read).

/** The search box that narrows a list as one types. */
export function FilterInput({ label, placeholder, value, onInput }: { label: string; placeholder: string; value: string; onInput: (v: string) => void }) {
  return (
    <input
      type="search"
      class="filter"
      placeholder={placeholder}
      aria-label={label}
      value={value}
      onInput={(e) => onInput((e.currentTarget as HTMLInputElement).value)}
    />
  );
}

export interface ListBannersProps {
  /** What the list holds, in the failure's sentence: "sessions", "benchmarks". */
  what: string;
  /** The run just deleted (the page's ?deleted=), or null. */
  deleted: string | null;
  /** Why the list could not be fetched, or null. */
  error: string | null;
  /** Why the daemon could not read its store, or null. */
  storeError: string | null | undefined;
}

export function ListBanners({ what, deleted, error, storeError }: ListBannersProps) {
  return (
    <>
      {deleted && (
        <p class="banner banner-ok" role="status" data-field="deleted">
          Deleted {deleted}.
        </p>
      )}
      {error && (
        <p class="banner">
          Cannot list the {what}: {error}
        </p>
      )}
      {storeError && <p class="banner banner-soft">The store could not be read: {storeError}</p>}
    </>
  );
}
