/* bench_html.h - a benchmark's report as one self-contained HTML page, to share or archive: the
 * run's settings, its sweep drawn as SVG charts (TTFT p50 and p99 against output tokens/s, output
 * tokens/s and output tokens per joule against the load), its GPUs' power and utilization over the
 * run (the points' "gpu_timeline") and a table of its points. Several benchmarks make one page
 * comparing them: their curves on the same charts, the settings in which they differ said first.
 *
 * Inline CSS and inline SVG only: the page loads nothing (no script, no font, no image, no
 * link), so it reads the same offline, in a mail attachment or years later. Text from the
 * documents (labels, models, URLs, commands) is escaped. */
#ifndef GM_BENCH_HTML_H
#define GM_BENCH_HTML_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "gpumon.h"

/* Writes the page of n benchmark documents (1 to 16) to out. Write errors are out's to report
 * (the caller's gm_file). GM_OK; GM_EINVAL (n is 0 or over 16, or a document is not a
 * benchmark). */
int gm_bench_html_report(FILE *out, const json_t *const *docs, size_t n, gm_error *err);

#endif
