// Files the dashboard hands to the browser as downloads: exports of a run (CSV, JSON) and
// pictures of a chart (PNG, SVG).

/** Saves a blob under a name, as a browser download. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  // The download has started from the URL; it can go once the click is handled.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
