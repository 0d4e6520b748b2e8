/* sampler.h - the daemon's one sampling thread: reads the collector every poll interval, appends
 * to the history and publishes an immutable, refcounted bundle of every pre-rendered body the
 * clients ask for, so no request ever reaches the GPU driver. */
#ifndef GM_SERVER_SAMPLER_H
#define GM_SERVER_SAMPLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "server/prom.h"
#include "server/ring.h"
#include "gpumon.h"

/* Bytes of writable headroom before every blob's data, at least the 10 bytes of the longest
 * WebSocket frame header, so a frame is the shared bytes with its header written in front once
 * per sample (a server's frames are not masked: every client gets the same bytes). */
#define GM_BLOB_PRE 32

/* One pre-rendered body. data points GM_BLOB_PRE bytes into its allocation and is
 * NUL-terminated; data is NULL when the body does not exist (e.g. host metrics disabled). */
typedef struct gm_blob {
    unsigned char *data;
    size_t len;
} gm_blob;

/* The bodies a sample can be read as. */
typedef enum gm_blob_kind {
    GM_BLOB_FULL,        /* gm_json_snapshot: /api/gpus and /ws/gpu frames */
    GM_BLOB_FULL_GZ,     /* FULL gzip'd */
    GM_BLOB_PROCESSES,   /* gm_json_processes */
    GM_BLOB_SYSTEM,      /* gm_json_host; absent when host metrics are off or unread */
    GM_BLOB_PROM,        /* gm_prom_render */
    GM_BLOB_PROM_GZ,     /* PROM gzip'd (Prometheus asks for gzip) */
    GM_BLOB_GPU_METRICS, /* gm_compat_gpu_metrics: /api/v1/monitoring/gpu-metrics */
    GM_BLOB_STATS,       /* gm_compat_stats with the topology read at start */
    GM_BLOB_WS_METRICS,  /* gm_compat_ws_metrics: /ws/metrics frames */
    GM_BLOB__COUNT
} gm_blob_kind;

/* Everything clients read about one sample: the snapshot, and each body rendered the first time
 * somebody asks for it (then kept), so a sample nobody reads costs only the reading. The
 * snapshot and the fields below it are immutable once published; the bodies are rendered,
 * and the headroom in front of them written, only by the one thread that reads bodies (the
 * daemon's loop). */
typedef struct gm_published {
    atomic_int refs;
    uint64_t seq;       /* the snapshot's sequence number */
    int64_t time_ms;    /* sample wall clock time */
    int64_t mono_ms;    /* CLOCK_MONOTONIC when published */
    char provider[32];  /* "nvml", "nvidia-smi", "sim", "none", or several "+"-joined */
    unsigned gpu_count; /* GPUs in the snapshot */
    unsigned lost_count;
    unsigned lost[GM_MAX_GPUS]; /* driver indexes of lost GPUs */
    bool host_valid;
    unsigned gpu_index[GM_MAX_GPUS]; /* driver index of gpu[i] */
    /* The snapshot, its process table included (only its proc_count entries are copied). */
    gm_snapshot *snap;

    /* Rendered on first use (gm_published_blob, gm_published_gpu). */
    gm_blob blob[GM_BLOB__COUNT];
    bool rendered[GM_BLOB__COUNT];
    gm_blob gpu[GM_MAX_GPUS]; /* gm_json_gpu, in snapshot order */
    bool gpu_rendered[GM_MAX_GPUS];
    /* What rendering needs besides the snapshot, fixed at publication. */
    const gm_topology *topo; /* the sampler's, read once at start; outlives every bundle */
    gm_prom_health health;
} gm_published;

/* Takes one more reference (p may be NULL); returns p. Any thread. */
gm_published *gm_published_ref(gm_published *p);
/* Drops a reference; the last one frees the bundle. NULL is a no-op. Any thread. */
void gm_published_unref(gm_published *p);
/* Body k of p, rendered now if nobody asked for it before. Its data is NULL when it does not
 * exist (GM_BLOB_SYSTEM without host metrics) or could not be rendered (out of memory; a gzip'd
 * body then: clients get the plain one). Only the thread that reads bodies calls this. */
const gm_blob *gm_published_blob(gm_published *p, gm_blob_kind k);
/* The body of GPU `index` (driver index), rendered on first use; NULL when the snapshot has no
 * such GPU. Same thread rule. */
const gm_blob *gm_published_gpu(gm_published *p, unsigned index);

typedef struct gm_sampler gm_sampler;

typedef struct gm_sampler_options {
    gm_collector *collector;  /* borrowed; used only by the sampler thread once started */
    unsigned poll_ms;         /* >= 1 */
    unsigned history_s;       /* seconds of history (0: none), sized at poll_ms */
    size_t history_max_bytes; /* refuse a history larger than this (0: no limit) */
    bool no_per_core;         /* leave per-core CPU series out of /metrics */
    bool process_metrics;     /* per-process utilisation series on /metrics */
    /* Optional: called on the sampler thread after each publication with the snapshot just
     * published (valid only during the call). Must not block: it hands work to other threads. */
    void (*on_sample)(void *arg, const gm_snapshot *snap);
    void *on_sample_arg;
} gm_sampler_options;

/* Sampler counters, a consistent copy. */
typedef struct gm_sampler_stats {
    uint64_t samples_total;  /* passes attempted */
    uint64_t errors_total;   /* passes that failed */
    int64_t started_mono_ms; /* when gm_sampler_start ran */
    int64_t last_ok_mono_ms; /* latest successful publication, 0 before the first */
    double last_duration_s;  /* wall time of the latest pass */
    char last_error[512];    /* latest failure, "" after a success */
} gm_sampler_stats;

/* Starts the thread (with every signal blocked in it): it reads the topology once, then samples
 * every poll_ms until stopped. wake(arg) is called after each publication, from the sampler
 * thread; it must be thread-safe (gm_server_wake). Returns GM_OK, GM_EINVAL, GM_ENOMEM or
 * GM_EIO when the thread cannot start. */
int gm_sampler_start(const gm_sampler_options *opt, void (*wake)(void *arg), void *arg,
                     gm_sampler **out, gm_error *err);

/* Waits until the first pass has finished or timeout_ms elapsed. Returns GM_OK when a bundle is
 * published, GM_ETIMEDOUT, or the first pass's error (GM_EINVAL with the message when the
 * history would exceed history_max_bytes; then the sampler has stopped). */
int gm_sampler_wait_first(gm_sampler *s, int timeout_ms, gm_error *err);

/* A new reference to the latest bundle, NULL before the first. Any thread. */
gm_published *gm_sampler_latest(gm_sampler *s);

/* The history (NULL when disabled or before the first sample). Valid until gm_sampler_free;
 * its own lock makes it safe to query from any thread. */
gm_ring *gm_sampler_history(gm_sampler *s);

/* Copies the counters. Any thread. */
void gm_sampler_get_stats(gm_sampler *s, gm_sampler_stats *out);

/* Stops the thread and joins it (idempotent). The collector is no longer used afterwards. */
void gm_sampler_stop(gm_sampler *s);

/* Stops if needed, then frees the sampler, its history and its reference to the latest bundle
 * (bundles other holders still reference live on). NULL is a no-op. */
void gm_sampler_free(gm_sampler *s);

#endif
