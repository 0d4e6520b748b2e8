/* store.h - gpumon's SQLite database (WAL): monitoring sessions and runs with their samples,
 * written as they are taken, plus stored documents such as snapshots.
 *
 * Schema (version 3, see the migration table in store.c):
 *   sessions(id, kind, label, command JSON, host, owner_pid, owner_start, status, started_ms,
 *            ended_ms, interval_s, gpus JSON, sample_count, exit_code, doc JSON,
 *            meta JSON -- the fields attached to the session before it began (v2))
 *   samples(session_id, seq, t, gpu, utilization, memory_used_mb, memory_usage_percent,
 *           temperature_c, power_draw_w, energy_counter_j)  -- one row per sample per GPU,
 *           NULL where absent, so CSV export is one ordered SELECT.
 *   bench_points(bench_id, seq, load, concurrency, request_rate, requests, completed, failed,
 *           duration_s, requests_per_s, ..., valid)  -- each point of a `gpumon bench`, whose
 *           document is a sessions row of kind "bench" (v3).
 * Each sample is committed on its own, so a gpumon killed even by SIGKILL loses at most the
 * sample being written. A session left "running" by a process that is gone (owner pid dead, a
 * zombie, or reused by another process) reads back as "interrupted"; one whose command ended
 * normally but whose samples the database could not all take (a full disk) as "incomplete".
 *
 * Concurrency: many gpumon processes may use one database; a busy_timeout makes them wait for
 * each other's short write transactions instead of failing. Readers that never write open it
 * with gm_store_open_readonly. One gm_store per thread. */
#ifndef GM_STORE_H
#define GM_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/recorder.h"
#include "core/session.h"
#include "core/timeline.h"
#include "gpumon.h"

/* Schema version this build writes (PRAGMA user_version after gm_store_open). */
#define GM_STORE_SCHEMA_VERSION 3

typedef struct gm_store gm_store;

/* The database path to use when none is given: $GPU_MONITOR_DB, else
 * $XDG_STATE_HOME/gpumon/gpumon.db, else $HOME/.local/state/gpumon/gpumon.db. Writes it into
 * buf; returns GM_OK or GM_ENOENT when neither HOME nor XDG_STATE_HOME is set. */
int gm_store_default_path(char *buf, size_t len, gm_error *err);

/* Opens (creating it and missing parent directories, mode 0700) the database at path, switches
 * it to WAL and applies pending migrations in one transaction. Returns GM_OK, GM_EIO (cannot
 * open or write: message names the path and SQLite's reason), GM_ESTATE (the file's schema is
 * newer than this build knows) or GM_ENOMEM. */
int gm_store_open(const char *path, gm_store **out, gm_error *err);
/* Opens the existing database at path for reading only (SQLITE_OPEN_READONLY), as `gpumon
 * history` does: no file or directory is created, the journal mode is left as it is and no
 * migration runs, so a database this user may only read can be read; a write through st
 * fails (GM_EIO, SQLite's "attempt to write a readonly database"). An older schema is read as
 * it is. For short-lived readers: a WAL database with no writer (no -wal or -shm file) is read
 * as immutable, without locks, which a connection kept open while a writer comes would not
 * survive. Returns GM_OK, GM_ENOENT (no file at path: the message says so), GM_ESTATE (schema
 * version 0, not a gpumon database, or newer than this build knows), GM_EIO, GM_ENOMEM. */
int gm_store_open_readonly(const char *path, gm_store **out, gm_error *err);
/* Closes st (NULL is a no-op). */
void gm_store_close(gm_store *st);
/* The schema version of the open database (older than GM_STORE_SCHEMA_VERSION only when
 * opened read-only). */
int gm_store_schema_version(gm_store *st);
/* SQLite's journal mode of the open database ("wal" once opened). */
const char *gm_store_journal_mode(gm_store *st, char *buf, size_t len);

/* Inserts session s as "running", owned by this process (pid, process start time, host), with
 * its kind, label, command, start, interval, GPUs and the fields attached to it so far
 * (gm_session_attached: provider, hostname, driver_version... which a session rebuilt after
 * its process died then still shows), and the samples its timeline holds.
 * Returns GM_OK, GM_EIO, GM_EEXIST (id already stored), GM_ENOMEM. */
int gm_store_session_begin(gm_store *st, const gm_session *s, gm_error *err);
/* Writes sample i of s (one row per followed GPU) in its own transaction: a sample of its
 * timeline, or its newest one (i = gm_session_sample_count - 1) also past a sample limit.
 * GM_OK, GM_EINVAL (s has no such sample), GM_EEXIST (already written), GM_ENOENT (s never
 * begun), GM_EIO. */
int gm_store_session_sample(gm_store *st, const gm_session *s, size_t i, gm_error *err);
/* Writes one sample given as values, in its own transaction: sample number seq (0-based, in
 * the order taken) of begun session s, t_s seconds after its start, values[k * GM_SM__COUNT +
 * m] for the k-th GPU of s (gm_session_gpu order, NaN where absent; NULL only when s follows
 * no GPU). The stored sample count becomes seq + 1. This is how a session with a sample limit
 * stores every sample (gm_session_last gives them). GM_OK, GM_EINVAL, GM_EEXIST (seq already
 * written), GM_ENOENT (s never begun), GM_EIO. */
int gm_store_session_sample_values(gm_store *st, const gm_session *s, size_t seq, double t_s,
                                   const double *values, gm_error *err);
/* Marks s finished: end time, sample count, exit code and doc (the JSON document without
 * its timeline, which the samples hold). GM_OK, GM_EIO, GM_ENOENT (never begun). */
int gm_store_session_end(gm_store *st, gm_session *s, gm_error *err);
/* Marks finished s "incomplete": it ended normally but the database took only its first
 * `stored` samples (a full disk). Its document gets "incomplete": {"samples_stored",
 * "samples_not_stored", "reason": why}. One small update, tried when the samples cannot be;
 * s gets the same field only once it is written (a failure leaves s as it was). */
int gm_store_session_end_incomplete(gm_store *st, gm_session *s, size_t stored, const char *why,
                                    gm_error *err);

/* Space kept free on the database's filesystem for the end of a recording. A session's end is
 * one update of its row (its document, without the timeline: kilobytes, at most a few hundred
 * with snapshots) appended to the WAL, then checkpointed into the database, which may grow by
 * up to what the WAL holds: SQLite checkpoints at 1000 pages, 4 MiB at the 4 KiB page size.
 * Twice that covers both with room to spare, and is nothing on any disk worth recording to. */
#define GM_STORE_RESERVE_BYTES (8 * 1024 * 1024)

/* Guards st's writes so that a recording on a disk that fills up (by the recorded command or
 * anything else) can still store how it ended:
 *  - from now on gm_store_session_begin and the sample writes are refused (GM_EIO, "disk
 *    full: N MiB free on MOUNTPOINT, less than the 8 MiB reserve") while less than
 *    GM_STORE_RESERVE_BYTES is free to this process (statvfs before each, a few microseconds);
 *    the caller keeps what was refused and tries again later;
 *  - GM_STORE_RESERVE_BYTES of the filesystem are held in an unnamed file (O_TMPFILE,
 *    fallocate; gone with st or the process), since whatever fills the disk takes what is free.
 *    The end of a session (gm_store_session_end, _end_incomplete) and a deletion give it back
 *    first when space is short (or when they fail with it held, then try once more), as
 *    gm_store_close does before its checkpoint.
 * GM_OK with the space held; GM_ENOTSUP when the guard is on but the space is not held (no
 * O_TMPFILE or fallocate on that filesystem, or no room already: the message says why). */
int gm_store_guard_space(gm_store *st, gm_error *err);
/* The reserve of gm_store_guard_space is held now. */
bool gm_store_space_held(const gm_store *st);

/* Deletes entry id (a session with all its samples, or a stored document) in one transaction,
 * whatever its status: a caller that must not delete a session another process is writing
 * checks gm_store_load's "status" first. GM_OK, GM_EINVAL (empty id), GM_ENOENT (no such
 * entry), GM_EIO. */
int gm_store_session_delete(gm_store *st, const char *id, gm_error *err);

/* Retention: deletes the entries that ended before cutoff_ms (epoch ms): finished sessions and
 * runs, benchmarks, snapshots, and interrupted sessions whose newest sample is older. A session
 * a live process is still recording is kept however old. Oldest first, at most max entries
 * (0: no bound), each with gm_store_session_delete in its own transaction, so readers and
 * writers wait for one entry at a time and a failure leaves the rest as they were. *deleted
 * (may be NULL) gets how many went, *more (may be NULL) whether older entries remain past max.
 * GM_OK, GM_EIO, GM_ENOMEM. */
int gm_store_prune(gm_store *st, int64_t cutoff_ms, size_t max, size_t *deleted, bool *more,
                   gm_error *err);

/* Stores a finished document of another kind ("snapshot", "bench") with no samples. id and
 * kind are required; label may be NULL. GM_OK, GM_EINVAL, GM_EEXIST, GM_EIO. */
int gm_store_put_document(gm_store *st, const char *kind, const char *id, const char *label,
                          const json_t *doc, gm_error *err);

/* One stored entry as listed. */
typedef struct gm_store_entry {
    char id[GM_SESSION_ID_LEN];
    char kind[16];
    char label[128];    /* "" when none */
    char command[256];  /* the command line joined by spaces, "" when none */
    char status[16];    /* running, stopped, interrupted, incomplete (the API's words) */
    int64_t started_ms; /* epoch ms */
    double duration_s;  /* NaN when unknown (still running without samples) */
    int64_t samples;
    bool has_exit;
    int exit_code;
    bool simulated; /* read from simulated GPUs (provider "sim"): not a real measurement */
} gm_store_entry;

/* All entries, newest first (at most limit when limit > 0). *out is malloc'd (free it);
 * *n its length. GM_OK, GM_EIO, GM_ENOMEM. */
int gm_store_list(gm_store *st, size_t limit, gm_store_entry **out, size_t *n, gm_error *err);

/* Resolves id_or_prefix (an exact id or an unambiguous prefix of one) into the full id in buf.
 * GM_OK; GM_ENOENT (no such entry: message says so); GM_EINVAL (prefix matches several). */
int gm_store_resolve(gm_store *st, const char *id_or_prefix, char *buf, size_t len, gm_error *err);

/* The kind of entry id ("record", "bench", "snapshot"...) into buf. GM_OK, GM_ENOENT, GM_EIO. */
int gm_store_kind(gm_store *st, const char *id, char *buf, size_t len, gm_error *err);

/* The status of entry id as read now into buf: "running" (its recording process is alive),
 * "stopped", or "interrupted" (it was running but that process is gone). Deleting or pruning
 * uses it to leave alone what another process is still writing. GM_OK, GM_ENOENT, GM_EIO. */
int gm_store_status(gm_store *st, const char *id, char *buf, size_t len, gm_error *err);

/* What a listing shows of entry id besides gm_store_entry: {"command": the command line or
 * null, "gpus": [{index, name}] ([] for a plain document), "provider" (null when not
 * recorded), "utilization_mean", "utilization_max", "energy_j"} (gm_session_doc_brief of its
 * document; for a session that never finished, utilization from its samples and energy
 * null). New reference in *out. GM_OK, GM_ENOENT, GM_EIO, GM_ENOMEM. */
int gm_store_brief(gm_store *st, const char *id, json_t **out, gm_error *err);

/* The document of entry id, as gpumon record wrote it, without its timeline (gm_store_timeline
 * writes that), with "status" as read now (interrupted when its owner is gone) and
 * "timeline_truncated" false (the store has every sample). A session that never finished is
 * rebuilt entirely from its samples and the fields stored at its begin.
 * New reference in *out. GM_OK, GM_ENOENT, GM_EIO, GM_EPARSE (a stored document is corrupt),
 * GM_ENOMEM. */
int gm_store_load(gm_store *st, const char *id, json_t **out, gm_error *err);

/* Stores benchmark document doc (`gpumon bench`: "id", "label", "points"...) in one
 * transaction: a finished sessions row of kind "bench" (command: the argv as a JSON array, may
 * be NULL; started and ended in epoch ms; gpu_samples as its sample count; url, model and api in
 * its meta) and a bench_points row per point. GM_OK, GM_EINVAL (not a benchmark document),
 * GM_EEXIST, GM_ESTATE (a read-only store of an older schema), GM_EIO, GM_ENOMEM. */
int gm_store_put_bench(gm_store *st, const json_t *doc, const json_t *command, int64_t started_ms,
                       int64_t ended_ms, int64_t gpu_samples, gm_error *err);
/* Writes the points of benchmark id as CSV to out, from its document (gm_bench_print_csv:
 * every statistic it has). GM_OK (a header only when id has no points), GM_ENOENT, GM_EIO. */
int gm_store_bench_csv(gm_store *st, const char *id, FILE *out, gm_error *err);
/* The benchmarks, newest first (at most limit when > 0), as a JSON array of {id, label,
 * started_at, duration_seconds, url, model, api, points: [{load, concurrency, request_rate,
 * requests_per_s, output_tokens_per_s, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, e2e_p50_ms,
 * goodput_requests_per_s, energy_j, output_tokens_per_joule, joules_per_request, valid,
 * failed}]} (empty for a store older than benchmarks). GM_OK, GM_EIO, GM_ENOMEM. */
int gm_store_bench_list(gm_store *st, size_t limit, json_t **out, gm_error *err);

/* The store as the record engine writes to it (core/recorder.h): begin, sample (values), end
 * and remove are gm_store_session_begin, _sample_values, _end and _delete on st. */
void gm_store_record_sink(gm_store *st, gm_record_sink *out);

/* Feeds every stored sample of session id to tl, in order, each with every GPU of the session
 * (values absent where a GPU had no row). A stored document that is not a session adds
 * nothing. GM_OK, GM_ENOENT, GM_EIO, GM_EPARSE (a corrupt GPU list). */
int gm_store_timeline(gm_store *st, const char *id, gm_timeline *tl, gm_error *err);

#endif
