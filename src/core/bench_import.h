/* bench_import.h - other tools' benchmark results read into a benchmark document (the shape of
 * core/bench_report.h, docs/BENCH.md), and a point written back out as one of them, so runs of
 * gpumon bench can be compared with what people already measured:
 *
 * - `vllm bench serve --save-result` (vllm/benchmarks/serve.py, before that
 *   benchmarks/benchmark_serving.py): one JSON object per run, the settings ("date", "backend",
 *   "model_id", "num_prompts", "request_rate" (a number or "inf"), "burstiness",
 *   "max_concurrency") merged with the results ("duration", "completed", "failed",
 *   "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
 *   "output_throughput", "total_token_throughput", "max_concurrent_requests", and per latency
 *   "mean_X_ms", "median_X_ms", "std_X_ms", "pNN_X_ms" for X in ttft, tpot, itl, e2el).
 *   `--append-result` appends one such object per run to the same file: each is a point.
 *   Python's json writes NaN and Infinity for values it could not compute; they read as absent.
 * - GenAI-Perf's profile_export_genai_perf.json: one object per run, a statistics object per
 *   metric ({"unit", "avg", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std"}, times
 *   in "ms"; a throughput has "avg" alone) for time_to_first_token, inter_token_latency (per
 *   request (latency - TTFT) / (output tokens - 1): what gpumon calls TPOT), request_latency,
 *   request_throughput, output_token_throughput and request_goodput, and "input_config" (the
 *   arguments it ran with: model, concurrency, request_rate, url, endpoint_type).
 *
 * Strict: a file of neither shape, or one whose known keys hold the wrong type, is refused with
 * what is wrong; nothing is guessed. A value the file does not have is absent from the point,
 * never zero; GPU figures (energy, utilization) are never in such a file and stay absent. */
#ifndef GM_BENCH_IMPORT_H
#define GM_BENCH_IMPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

/* At most this many results appended into one vLLM file (points of one benchmark). */
#define GM_BENCH_IMPORT_MAX_POINTS 256

/* Reads text (len bytes, the whole file; name is how messages and the document name it) as a
 * vLLM result file or a GenAI-Perf export, whichever it is, into a new benchmark document:
 * {"kind": "bench", "label", "model", "api", "url", "started", "config", "points": [...],
 * "source": "imported from vLLM" or "imported from GenAI-Perf", "imported": {"format": "vllm"
 * or "genai-perf", "file": name}} with no "id" (the caller gives it one). started_ms gets the
 * run's start in epoch ms when the file says it (vLLM's "date", local time), else -1.
 * GM_OK; GM_EPARSE (not JSON, neither format, or a known key of the wrong type: the message
 * says which, prefixed with name); GM_ENOMEM. */
int gm_bench_import(const char *text, size_t len, const char *name, json_t **out,
                    int64_t *started_ms, gm_error *err);

/* Reads the file at path (at most GM_BENCH_IMPORT_MAX_BYTES) and gm_bench_import's it; as
 * gm_file_read_all when it cannot be read (the message names path and why). */
#define GM_BENCH_IMPORT_MAX_BYTES (256u << 20)
int gm_bench_import_file(const char *path, json_t **out, int64_t *started_ms, gm_error *err);

/* Point k of benchmark document doc as a `vllm bench serve --save-result` object: the settings
 * from the document (backend from its api, model, label, requests, the point's load), the
 * results and the latency statistics from the point (mean, median, std, p90, p95, p99 each
 * where the point has it). New reference in *out. GM_OK, GM_EINVAL (no point k: the message
 * says how many there are), GM_ENOMEM. */
int gm_bench_export_vllm(const json_t *doc, size_t k, json_t **out, gm_error *err);

#endif
