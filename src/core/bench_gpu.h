/* bench_gpu.h - the GPU side of `gpumon bench`: a thread of its own samples the benchmarked GPUs
 * at an interval into one monitoring session per point (core/session: min/max/mean statistics and
 * the energy, from the energy counter's increase over the point, else integrated power), and
 * notes what can invalidate the point (core/bench_validity: a foreign process appearing,
 * throttled clocks).
 *
 * Why a thread: the client measures latencies to the microsecond on its one thread, and NVML
 * calls take milliseconds (the energy counter 4 ms of CPU on an H200, docs/ARCHITECTURE.md); on
 * the client's thread each sample would delay every chunk received meanwhile. The sampling thread
 * owns the collector from gm_bench_gpu_start to gm_bench_gpu_free and the session between begin
 * and end; the caller's thread only hands over commands.
 *
 * A point's first sample is taken when it begins and its last when it ends (the calls wait for
 * them), so the counter's difference covers the point; the samples in between come every
 * interval, on a fixed grid from the first (a late sample never shifts the later ones). */
#ifndef GM_BENCH_GPU_H
#define GM_BENCH_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/bench_validity.h"
#include "core/session.h"
#include "gpumon.h"

typedef struct gm_bench_gpu gm_bench_gpu;

typedef struct gm_bench_gpu_options {
    /* Read only by the sampling thread from start to free, then the caller's again. Opened
     * with processes (for the foreign-process rule) and slow_period_ms < 0 (the energy counter
     * read at every sample). */
    gm_collector *collector;
    const unsigned *gpus; /* driver indices to follow; NULL: every GPU of the first sample */
    size_t ngpus;
    double interval_s;       /* > 0 */
    const char *procfs_root; /* where the parents of GPU processes are read; NULL: /proc */
    /* The server is started after sampling begins (`bench --image` measures its loading):
     * the processes on the GPUs at the first sample are not the server's, and the server is
     * named later with gm_bench_gpu_add_server. */
    bool server_later;
} gm_bench_gpu_options;

/* What the thread saw during one point (or the idle measurement). */
typedef struct gm_bench_gpu_point {
    gm_session *session;  /* finished; the caller's (gm_bench_gpu_point_free frees it) */
    gm_bench_check check; /* throttle and foreign-process fields filled; client fields NaN */
    gm_bench_foreign foreign[GM_BENCH_FOREIGN_MAX];
    unsigned sample_errors; /* samples that could not be taken */
    char last_error[256];
} gm_bench_gpu_point;

/* Takes the first sample on the caller's thread (the processes on the GPUs then are the
 * server's: see bench_validity.h), then starts the thread. GM_OK, GM_EIO (the sample failed:
 * err says why), GM_ENOMEM, GM_EINVAL. */
int gm_bench_gpu_start(const gm_bench_gpu_options *o, gm_bench_gpu **out, gm_error *err);
/* Stops the thread and frees g (not the collector). NULL is a no-op. */
void gm_bench_gpu_free(gm_bench_gpu *g);

/* Names process pid (a container's first process, as the host numbers it) and what it starts
 * as the server's: not foreign from now on. Answers remembered as foreign before are
 * forgotten. GM_OK, GM_EINVAL for pid 0. */
int gm_bench_gpu_add_server(gm_bench_gpu *g, uint32_t pid, gm_error *err);

/* The first sample (GPU names, UUIDs, the server's processes). */
const gm_snapshot *gm_bench_gpu_first(const gm_bench_gpu *g);
/* The GPUs followed: how many, and their driver indices in order. */
size_t gm_bench_gpu_indices(const gm_bench_gpu *g, unsigned *out);

/* Starts a point: a new session (label may be NULL), its first sample taken before this
 * returns. GM_OK, GM_ESTATE (a point is running), GM_ENOMEM. */
int gm_bench_gpu_begin(gm_bench_gpu *g, const char *label, gm_error *err);
/* Ends the point: its last sample taken, the session finished and handed over in *out with
 * what was seen. GM_OK or GM_ESTATE (no point running). */
int gm_bench_gpu_end(gm_bench_gpu *g, gm_bench_gpu_point *out, gm_error *err);
void gm_bench_gpu_point_free(gm_bench_gpu_point *p);

/* Calls fn(collector, arg) on the caller's thread while no point is running (between points the
 * sampling thread leaves the collector alone; its lock is held meanwhile, so it cannot begin
 * one): for reads of the collector outside the points, such as a system snapshot. fn's return,
 * or GM_ESTATE when a point is running. */
int gm_bench_gpu_with_collector(gm_bench_gpu *g, int (*fn)(gm_collector *c, void *arg), void *arg);

#endif
