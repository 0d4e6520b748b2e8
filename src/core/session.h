/* session.h - a monitoring session: accumulates snapshots of chosen GPUs into exact statistics
 * (streaming min/max/mean, percentiles from the stored values), energy and a timeline, and
 * renders them as JSON in the shape of the monitoring API's data (docs/API.md).
 *
 * Used by `gpumon record` / `gpumon run`, by the store to rebuild a stored session from its
 * samples, and by the daemon's session API. Not thread-safe: one owner adds and renders.
 *
 * Memory grows with the samples (timeline and the values kept for percentiles) unless a sample
 * limit is set: past it the session keeps streaming count/min/max/mean and energy over every
 * sample, while the timeline and the percentiles stay those of the first `limit` samples.
 *
 * Metrics kept per GPU per sample, in display units (an absent reading is NaN, shown as null):
 *   utilization           utilization.gpu, %
 *   memory_used_mb        memory.used, MiB (1048576 bytes, as nvidia-smi's "MiB")
 *   memory_usage_percent  memory.used / memory.total * 100
 *   temperature_c         temperature.gpu, C
 *   power_draw_w          power.draw, W
 *   energy_counter_j      the board's cumulative energy counter, J (only feeds energy_j)
 *
 * Energy of a GPU: the sum of the increases of the energy counter between consecutive readings
 * (last - first while it only grows; a step back, as after a driver reload, contributes
 * nothing), "energy_source": "counter". With fewer than two counter readings it falls back to
 * integrating power over time (trapezoids between consecutive samples that both have power),
 * "energy_source": "power_integration". Neither possible: energy_j and energy_source are null. */
#ifndef GM_SESSION_H
#define GM_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpumon.h"

/* The per-sample metrics: id, JSON name, whether it gets a statistics block. */
#define GM_SESSION_METRIC_MAP(X)             \
    X(UTIL, "utilization", true)             \
    X(MEM_USED_MB, "memory_used_mb", true)   \
    X(MEM_PCT, "memory_usage_percent", true) \
    X(TEMP_C, "temperature_c", true)         \
    X(POWER_W, "power_draw_w", true)         \
    X(ENERGY_J, "energy_counter_j", false)

typedef enum gm_session_metric {
#define GM__SESSION_METRIC_ENUM(id, name, stats) GM_SM_##id,
    GM_SESSION_METRIC_MAP(GM__SESSION_METRIC_ENUM)
#undef GM__SESSION_METRIC_ENUM
        GM_SM__COUNT
} gm_session_metric;

/* Returns the JSON / CSV column name of m ("utilization"), NULL when out of range. */
const char *gm_session_metric_name(int m);

#define GM_SESSION_ID_LEN 32

typedef struct gm_session gm_session;

/* One GPU followed by a session. */
typedef struct gm_session_gpu {
    unsigned index; /* driver index */
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
} gm_session_gpu;

/* Creates a session that starts now. label may be NULL. gpus (ngpus driver indices, any order,
 * duplicates ignored) picks the GPUs to follow; NULL follows every GPU of the first snapshot
 * added, a non-NULL gpus with ngpus 0 follows none (CUDA_VISIBLE_DEVICES="" hides them all).
 * interval_s (> 0, or 0 when unknown) is recorded for readers. The id is generated:
 * "YYYYMMDD-HHMMSS-xxxxxx" (UTC start, 6 random hex digits), unique enough to name a session.
 * Returns GM_OK, GM_EINVAL (ngpus > GM_MAX_GPUS, negative interval) or GM_ENOMEM. */
int gm_session_new(const char *label, const unsigned *gpus, size_t ngpus, double interval_s,
                   gm_session **out, gm_error *err);
/* Releases s (NULL is a no-op). */
void gm_session_free(gm_session *s);
/* Writes a new id of the form above for something stored next to sessions (a benchmark) that
 * started at started_ms (epoch ms); len >= GM_SESSION_ID_LEN. */
void gm_session_make_id(char *buf, size_t len, int64_t started_ms);

/* Adds one snapshot: its time (mono_ms, relative to the session's start) and, for each followed
 * GPU, the metrics above; a followed GPU missing from the snapshot or lost is absent for this
 * sample. The first snapshot also fixes the GPU set (when no filter was given) and the GPUs'
 * names and UUIDs. Returns GM_OK, GM_ESTATE after gm_session_finish, GM_ENOMEM. */
int gm_session_add(gm_session *s, const gm_snapshot *snap, gm_error *err);

/* Adds one sample given as values: t_s seconds since the start and values[k * GM_SM__COUNT + m]
 * for the k-th followed GPU (gm_session_gpu order), NaN where absent. This is how the store
 * replays stored samples; the GPU set must be fixed first (gpus given to gm_session_new, with
 * gm_session_set_gpu for names). Returns GM_OK, GM_ESTATE (finished), GM_ENOMEM. */
int gm_session_add_values(gm_session *s, double t_s, const double *values, gm_error *err);

/* Bounds the memory of s: at most n samples are kept in the timeline and in the values behind
 * p50/p95 (0: no limit, the default). Later samples still count in sample_count, min, max,
 * mean, count and energy, and remain readable one at a time through gm_session_last. Set it
 * before the samples come; GM_OK, or GM_ESTATE when s already keeps more than n samples. */
int gm_session_set_sample_limit(gm_session *s, size_t n);
/* The limit set by gm_session_set_sample_limit (0: none). */
size_t gm_session_sample_limit(const gm_session *s);

/* Marks the session ended now (the duration stops growing). Idempotent. */
void gm_session_finish(gm_session *s);
/* True after gm_session_finish. */
bool gm_session_finished(const gm_session *s);

/* The session's id (NUL-terminated, < GM_SESSION_ID_LEN). */
const char *gm_session_id(const gm_session *s);
/* Label, NULL when none. */
const char *gm_session_label(const gm_session *s);
/* Kind: "session" unless set ("record", "run"). */
const char *gm_session_kind(const gm_session *s);
/* Sampling interval given to gm_session_new. */
double gm_session_interval(const gm_session *s);
/* Wall-clock start / end, ms since the epoch (end 0 until finished). */
int64_t gm_session_started_ms(const gm_session *s);
int64_t gm_session_ended_ms(const gm_session *s);
/* Seconds from start to finish (to now while running). */
double gm_session_duration(const gm_session *s);

/* Followed GPUs: how many (0 until fixed), and the k-th (NULL when k is out of range). */
size_t gm_session_gpu_count(const gm_session *s);
const gm_session_gpu *gm_session_gpu_at(const gm_session *s, size_t k);

/* Samples added so far (all of them, whatever the sample limit). */
size_t gm_session_sample_count(const gm_session *s);
/* Samples kept in the timeline: gm_session_sample_count() up to the sample limit. */
size_t gm_session_timeline_count(const gm_session *s);
/* The i-th sample of the timeline (i < gm_session_timeline_count): *t_s its offset in seconds,
 * *values its gm_session_gpu_count() * GM_SM__COUNT values (NaN absent; NULL when no GPU is
 * followed), valid until the next add. Returns GM_OK or GM_EINVAL when i is out of range. */
int gm_session_sample(const gm_session *s, size_t i, double *t_s, const double **values);
/* The newest sample, as gm_session_sample gives one, also past the sample limit (so a caller
 * can store every sample of a bounded session). GM_OK, or GM_EINVAL before the first sample. */
int gm_session_last(const gm_session *s, double *t_s, const double **values);

/* Setters for callers that know more than the samples say. Strings are copied. Each returns
 * GM_OK, GM_EINVAL (bad argument) or GM_ENOMEM. */
int gm_session_set_kind(gm_session *s, const char *kind);
/* argv: the monitored command, NULL-terminated (NULL: none). */
int gm_session_set_command(gm_session *s, const char *const *argv);
/* The command's outcome: exit_code as reported (128 + signal for a death by signal), signal
 * the signal that ended it or 0. */
void gm_session_set_exit(gm_session *s, int exit_code, int signal);
/* Adds a top-level field key to the JSON document (e.g. "audit", "selection"); steals value.
 * A later call with the same key replaces it. */
int gm_session_attach(gm_session *s, const char *key, json_t *value);
/* Replaces the generated id with id (a caller that named things after the session before it
 * began: `gpumon run --image` names its container gpumon-<id>). GM_EINVAL when id is empty or
 * not shorter than GM_SESSION_ID_LEN. */
int gm_session_set_id(gm_session *s, const char *id);
/* For rebuilding a stored session: replaces the generated id and start time. */
int gm_session_restore(gm_session *s, const char *id, int64_t started_ms, int64_t ended_ms);
/* The command as a JSON array of strings (borrowed), NULL when none was set. */
const json_t *gm_session_command(const gm_session *s);
/* The fields added with gm_session_attach so far, as one JSON object (borrowed; NULL when
 * none). The store saves those known at begin, so an interrupted session keeps them. */
const json_t *gm_session_attached(const gm_session *s);
/* True when gm_session_set_exit was called; then *exit_code and *signal (may be NULL) are set. */
bool gm_session_exit(const gm_session *s, int *exit_code, int *signal);
/* Sets the name and UUID of followed GPU index (ignored when not followed). */
void gm_session_set_gpu(gm_session *s, unsigned index, const char *name, const char *uuid);

/* The JSON document: id (and session_id), kind, label, status ("running" / "stopped", the
 * API's words), command, exit_code, signal, started_at, ended_at, interval_seconds,
 * monitoring_duration_seconds, sample_count (every sample added), timeline_truncated (true when
 * the sample limit stopped the timeline short of sample_count), percentiles_over_samples (the
 * first samples p50/p95 cover: sample_count, or the limit once passed), gpus [{index, name,
 * uuid}], gpu_stats keyed by index as a string ("0") with name, uuid, the five metric blocks
 * {min, max, mean, p50, p95, count} (null when the metric was absent in every sample; count,
 * min, max and mean cover every sample; utilization also carries "samples", as the monitoring API
 * always has), energy_j and energy_source; a top-level energy_j (sum over GPUs, null when any GPU
 * lacks one); and the attached fields. The timeline is not in it: core/timeline.c writes it (after
 * the document, with gm_timeline_open_doc). New reference, NULL when out of memory.
 * Percentiles sort the stored values, hence the non-const s. */
json_t *gm_session_to_json(gm_session *s);

/* What a listing shows of a session, without the percentiles (no sorting, so it is cheap on a
 * running session): {"utilization_mean": the mean over every GPU's samples, "utilization_max",
 * "energy_j": as the document's (null unless every GPU's energy is known)}, each null when
 * unknown. gm_session_doc_brief reads the same from a document (gm_session_to_json's or the
 * store's gpu_stats). New reference, NULL when out of memory. */
json_t *gm_session_brief(const gm_session *s);
json_t *gm_session_doc_brief(const json_t *doc);

/* Writes the command array argv (JSON strings) into buf as a shell would read it back, arguments
 * single-quoted where needed, truncated to len - 1 bytes. Returns the length written. */
size_t gm_session_command_line(const json_t *argv, char *buf, size_t len);

/* Prints a one-screen summary of a session document (as gm_session_to_json or the store
 * returns it) to out: a header line and one row per GPU with mean / p95 / max of each metric
 * and the energy. Absent values print as "-". */
void gm_session_print_summary(FILE *out, const json_t *doc);

/* The same in at most width columns (capped at 80; 0: the full table above): GPU rows keep
 * utilization mean / p95 / max, the most memory and temperature, power mean and max, and the
 * energy; longer lines (a long command) end in "...". */
void gm_session_print_summary_fit(FILE *out, const json_t *doc, int width);

#endif
