/* bench_run.h - the benchmark of an inference server as one engine, shared by `gpumon bench`
 * and the daemon's job queue: its configuration (gm_bench_config, filled option by option
 * through gm_bench_config_set, keyed by the long option name, so argv and a JSON body are
 * validated by the same code with the same messages) and its run (gm_bench_runner: the
 * prompts, the client, the GPUs sampled per point, the first request, the points, the
 * validity of each, the result document). The engine never prints: progress and each point
 * go to callbacks, and it stops when the caller's flag is set. Storing the document is the
 * caller's (the store is a layer above). */
#ifndef GM_BENCH_RUN_H
#define GM_BENCH_RUN_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/bench_client.h"
#include "core/bench_gpu.h"
#include "core/bench_openai.h"
#include "core/bench_stats.h"
#include "gpumon.h"

#define GM_BENCH_POINTS_MAX  64
#define GM_BENCH_HEADERS_MAX 64
#define GM_BENCH_LABEL_MAX   127

/* What `gpumon bench` takes beyond the provider, container and lease options. Strings are the
 * config's own copies (gm_bench_config_free). */
typedef struct gm_bench_config {
    char *url;
    char *model;
    gm_bench_api api;
    bool open_loop, have_conc, have_rate;
    size_t npoints;
    unsigned conc[GM_BENCH_POINTS_MAX];
    double rate[GM_BENCH_POINTS_MAX];
    double burstiness;
    bool have_burstiness;
    unsigned long long requests; /* 0 with duration_s > 0 */
    double duration_s;
    unsigned long long warmup;
    unsigned long long input_tokens, output_tokens;
    bool have_input_tokens;
    char *prompts; /* a JSONL file */
    gm_bench_slo slo;
    char *headers[GM_BENCH_HEADERS_MAX];
    size_t nheaders;
    char *api_key_env;
    double timeout_s;
    char *gpus; /* --gpus as given: indices, UUIDs or PCI bus ids (resolved by the caller) */
    double interval_s;
    double idle_s;
    char *output;
    char *label;
    char *trace;
    char *db;
    bool no_db;
    uint64_t seed; /* the arrival schedule's and the synthetic prompts' (--seed) */
    /* --snapshot: a system snapshot (core/audit) before the first point and after the last,
     * both in the document's "audit" with their diff's verdict */
    bool snapshot;
    unsigned snapshot_window_ms; /* each snapshot's power window (default 2000) */
} gm_bench_config;

/* The defaults of `gpumon bench`. */
void gm_bench_config_init(gm_bench_config *c);
void gm_bench_config_free(gm_bench_config *c);

/* Sets the option whose long name is name ("requests", "request-rate"; '_' is taken for '-')
 * from value (NULL for an option that takes none: "no-db"). GM_OK; GM_EINVAL with err saying
 * what is wrong in the CLI's words ("--requests expects a whole number from 1 to 1000000, got
 * \"x\""); GM_ENOENT when name is not an option of this table; GM_ENOMEM. */
int gm_bench_config_set(gm_bench_config *c, const char *name, const char *value, gm_error *err);

/* After every option: the conflicts between them (GM_EINVAL, err as the CLI says it, e.g. "give
 * --concurrency or --request-rate, not both"; a server is required unless image is true) and
 * the defaults that depend on others (concurrency 1, 1000 requests). */
int gm_bench_config_finish(gm_bench_config *c, bool image, gm_error *err);

/* What the engine is doing, for a progress line, a job's state or a live stream. */
typedef enum gm_bench_phase {
    GM_BENCH_PHASE_IDLE = 1, /* measuring idle power */
    GM_BENCH_PHASE_IDLE_END,
    GM_BENCH_PHASE_CHECK, /* the first request */
    GM_BENCH_PHASE_POINT, /* a point's requests */
} gm_bench_phase;

typedef struct gm_bench_progress {
    gm_bench_phase phase;
    size_t point, npoints; /* the point (0-based) and how many */
    const char *load;      /* "concurrency 8", "rate 4/s" */
    size_t done, total;    /* requests completed in the point; total 0 with a duration */
    double elapsed_s, duration_s;
    double ttft_p50_ms, ttft_p99_ms; /* of the latest 256 completed requests; NAN when none */
    double output_tokens_per_s;      /* NAN when none */
} gm_bench_progress;

/* pt is the point being measured (its results so far), NULL outside a point. Called on the
 * engine's thread, often: keep it short. */
typedef void (*gm_bench_progress_fn)(void *arg, const gm_bench_progress *p,
                                     const gm_bench_point *pt);
/* A point is done: its JSON (the document's, borrowed). */
typedef void (*gm_bench_point_fn)(void *arg, const json_t *point);
/* Whether the server is gone (a container that ended): asked before each point (before true;
 * true ends the run) and at the end of each (before false; true marks the point
 * server_exited). */
typedef bool (*gm_bench_gone_fn)(void *arg, bool before);

typedef struct gm_bench_runner_options {
    const gm_bench_config *cfg;
    const char *id; /* the benchmark's id (gm_session_make_id) */
    int64_t started_ms;
    const volatile sig_atomic_t *stop; /* set: the run stops and keeps what was measured */
    const char *api_key;               /* bearer token, never stored; NULL none */
    size_t max_in_flight;              /* 0: GM_BENCH_IN_FLIGHT_MAX */
    double *sim_load;                  /* simulated GPUs' load, written between samples; NULL */
    FILE *trace;                       /* one JSON line per measured request; NULL none */
    gm_bench_progress_fn progress;
    /* Fill the live figures (TTFT p50/p99, tokens/s) of each progress call; without, they are
     * NAN and cost the client's loop nothing. Refreshed at most every 0.25 s. */
    bool live_figures;
    gm_bench_point_fn on_point;
    gm_bench_gone_fn gone;
    void *arg;
} gm_bench_runner_options;

typedef struct gm_bench_runner gm_bench_runner;

/* Prepares the prompts (a bad --prompts file: GM_EINVAL with err "--prompts ..."). The options
 * and their config must outlive the runner. */
int gm_bench_runner_new(const gm_bench_runner_options *o, gm_bench_runner **out, gm_error *err);
void gm_bench_runner_free(gm_bench_runner *r);

/* The server at url: the client, the model (given, else the first of /v1/models), the
 * requests. GM_EINVAL for a URL or option the client refuses; GM_EIO otherwise. */
int gm_bench_runner_connect(gm_bench_runner *r, const char *url, gm_error *err);

/* Where the measured requests are traced from now on (NULL: nowhere). */
void gm_bench_runner_set_trace(gm_bench_runner *r, FILE *trace);

/* Starts sampling the GPUs (c stays the caller's; gpus NULL: all of its first sample) and
 * measures them idle for idle_s. Without a call the run has no GPU. */
int gm_bench_runner_gpus(gm_bench_runner *r, gm_collector *c, const unsigned *gpus, size_t ngpus,
                         bool server_later, gm_error *err);
/* The GPU sampler, for measuring what happens before the points (a container's loading). */
gm_bench_gpu *gm_bench_runner_gpu(gm_bench_runner *r);
/* Adds samples taken outside the points to the count stored with the run. */
void gm_bench_runner_add_samples(gm_bench_runner *r, int64_t n);

/* One request first: a server that is down or answers garbage fails here (GM_EIO, err saying
 * how). */
int gm_bench_runner_check(gm_bench_runner *r, gm_error *err);

/* Runs the points in order until done or stopped. GM_OK (stopped included), GM_EIO. With
 * cfg->snapshot, a system snapshot is taken before the first point and after the last (also
 * when the points end early), through the GPU sampler's collector. */
int gm_bench_runner_points(gm_bench_runner *r, gm_error *err);

/* The result: the document as `gpumon bench` writes and stores it (new reference), with
 * provider (NULL: the collector's, else "none"). Points measured so far are in it. With
 * cfg->snapshot it has "audit":
 *   {"verdict": "unchanged" | "changed" | "unknown",
 *    "reason" (only with "unknown": why there is no verdict),
 *    "changes": [{"what" (the diff's field: "power_limit_w", "driver_version", "pcie.width_max",
 *        "gpu"...), "gpu" (driver index or null), "before", "after", "message"}] (the diff's
 *        items of severity changed),
 *    "before", "after" (the snapshots, as `gpumon snapshot` writes them, or null),
 *    "diff" (gm_audit_diff's report, as `gpumon diff --format json` gives it, or null)}
 * which is what `record --snapshot` stores ("before", "after", "diff") plus the verdict. */
json_t *gm_bench_runner_document(gm_bench_runner *r, const char *provider);

/* After the points: a point completed no request; the last point was cut short by the server
 * ending; samples taken (for the store). */
bool gm_bench_runner_any_empty(const gm_bench_runner *r);
bool gm_bench_runner_cut_short(const gm_bench_runner *r);
int64_t gm_bench_runner_gpu_samples(const gm_bench_runner *r);
size_t gm_bench_runner_points_done(const gm_bench_runner *r);

/* The document's "audit" object from two snapshots (either NULL when it could not be taken)
 * and why one is missing (reason, may be NULL): the diff's verdict, or "unknown" with the
 * reason. New reference; NULL when out of memory. */
json_t *gm_bench_audit_json(const json_t *before, const json_t *after, const char *reason);

#endif
