/* bench_report.h - a benchmark's document (the JSON of `gpumon bench -o FILE`, the store and the
 * REST API; its keys are in docs/BENCH.md) and what people read of it: a result block per point
 * in the layout of `vllm bench serve` plus the energy and the client's own figures, a table of
 * a sweep's points, and a comparison of several benchmarks side by side.
 *
 * The GPU side of a point comes from its monitoring session (core/session): "gpu_monitoring"
 * is the session's statistics in the monitoring API's shape, and the energy is the session's: the
 * energy counter's increase over the point, else power integrated over the samples
 * ("energy_source" says which). */
#ifndef GM_BENCH_REPORT_H
#define GM_BENCH_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/session.h"
#include "gpumon.h"

/* Adds the GPU side of a point to its JSON (from gm_bench_point_json): "gpu_monitoring" (s's
 * duration, samples, interval and per-GPU statistics), "energy_j" (null unless every GPU has
 * one), "energy_source" ("counter", "power_integration", "mixed"), "idle_power_w" and
 * "energy_above_idle_j" (when idle_power_w is finite: the benchmarked GPUs' idle power, summed;
 * null with "idle_power_unreliable": true when it would be negative, the idle GPUs having drawn
 * more than the loaded ones),
 * "output_tokens_per_joule" and "joules_per_request". s NULL (no GPU): these keys are null.
 * sample_errors: samples that failed (kept in gpu_monitoring when not 0). GM_OK or GM_ENOMEM. */
int gm_bench_point_add_gpu(json_t *point, gm_session *s, double idle_power_w,
                           unsigned sample_errors);

/* Samples of a point's "gpu_timeline" at most (a longer point keeps every n-th and its last). */
#define GM_BENCH_TIMELINE_MAX 2000

/* Adds "gpu_timeline" to a point: what its GPUs did over it, for charts, as columns:
 * {"t_s": [seconds since the benchmark started (bench_started_ms)...], "gpus": {"0":
 * {"utilization": [...], "power_draw_w": [...]}}}, one value per sample (0.1 precision, null
 * when absent). Null without GPUs or samples. GM_OK or GM_ENOMEM. */
int gm_bench_point_add_timeline(json_t *point, gm_session *s, int64_t bench_started_ms);

/* Sets "valid" (reasons empty) and "invalid_reasons" (stolen) on a point. */
void gm_bench_point_set_validity(json_t *point, json_t *reasons);

/* "concurrency 64", "rate 10/s", "rate inf" (into buf). */
void gm_bench_point_load(const json_t *point, char *buf, size_t len);

/* The result block of one point. */
void gm_bench_print_point(FILE *out, const json_t *point);
/* The same with the benchmark's "audit" (bench --snapshot; NULL: none) on a line under
 * "Valid:", as gm_bench_audit_text words it. */
void gm_bench_print_point_audit(FILE *out, const json_t *point, const json_t *audit);
/* A benchmark's "audit" in one line for a person (into buf, cut to len): "Machine unchanged
 * during the run", "Machine changed during the run: GPU 0 power limit 700 W -> 600 W, ..." (each
 * change as the diff words it), "Machine state unknown: <reason>". Empty when audit is NULL. */
void gm_bench_audit_text(const json_t *audit, char *buf, size_t len);
/* A line per point: load, throughput, latency percentiles, energy, validity. */
void gm_bench_print_table(FILE *out, const json_t *doc);
/* The points as CSV: a header, then a line per point (point, load, the counts and rates, every
 * statistic of each latency distribution: ttft_mean_ms ... ttft_p90_ms, ttft_p95_ms ...
 * ttft_count, the same for tpot, itl, e2e and the from-schedule ones, then goodput, energy,
 * idle power, tokens per joule, joules per request, valid (1 or 0) and the invalid reasons
 * joined by "; "). Absent or null values are empty fields. */
void gm_bench_print_csv(FILE *out, const json_t *doc);
/* The whole benchmark: its header, every point's block, and the table when there are several. */
void gm_bench_print_report(FILE *out, const json_t *doc);
/* The same held to width columns (0: no limit): a header too long is broken in two, and the
 * table of the points (113 columns) becomes two of at most 80, throughput and latency, then
 * goodput, energy and validity. */
void gm_bench_print_report_width(FILE *out, const json_t *doc, int width);
/* The "container" part of a benchmark document (`bench --image`), when it has one: a line with
 * its image, time to ready, loading energy and memory and exit state, then the output it left
 * when it ended on its own. */
void gm_bench_print_container(FILE *out, const json_t *doc);

/* The settings in which n benchmark documents differ, the first being the reference: requests,
 * duration_s, input_tokens, prompts, output_tokens (of "config"), api, and server (the
 * container's image, else the URL), as [{"setting": name, "values": [one per document]}];
 * empty when they ran alike. New reference, NULL when out of memory. */
json_t *gm_bench_settings_differ(const json_t *const *docs, size_t n);

/* Prints the points of n benchmark documents side by side (points matched by their load, else
 * by position), each figure with its change from the first benchmark's, marked "better" or
 * "worse" (in green or red with color) when the benchmarks ran with the same settings; when
 * they did not, the settings that differ come first and no change is called either. Held to
 * width columns (at least 56): lines too long are broken or cut, and benchmarks past what one
 * block of columns holds go into further blocks, each with the first benchmark's column. GM_OK or
 * GM_EINVAL (fewer than two documents, or one is not a benchmark). */
int gm_bench_print_compare(FILE *out, const json_t *const *docs, size_t n, bool color, int width,
                           gm_error *err);

/* The comparison as JSON: {"benchmarks": [{id, label, url, model}], "settings_differ": (as
 * gm_bench_settings_differ), "points": [{"load", "values": {metric: [one per benchmark, null
 * where absent]}, "change_percent": {metric: [...]}}]}.
 * NULL when out of memory or not comparable (see gm_bench_print_compare). */
json_t *gm_bench_compare_json(const json_t *const *docs, size_t n, gm_error *err);

#endif
