/* ring.h - the daemon's in-memory rings: fixed-memory time series of every GPU and host metric,
 * written by the sampler and read by the HTTP thread.
 *
 * What is kept: for each GPU index 0..gpu_count-1, one float ring per gm_metric id up to
 * persistence_mode (not only those with numeric_series: the dashboard needs memory.total for
 * memory %, and a float per slot is cheap) and per health metric with numeric_series (memory
 * temperature, average power, the GPM ratios, and the counters that move: XID count, volatile
 * ECC totals, PCIe replays, power and thermal violation time; modes, configuration and counters
 * that rarely move are read from the latest sample), one float ring per gm_host_metric id, and one
 * int64 ring of sample times (snapshot time_ms, wall clock ms) shared by all. Raw values are stored
 * (the unit in the enum name); an absent value (valid bit clear, lost GPU, GPU missing from the
 * snapshot, host not read) is stored as NaN and always comes back as absent, never as 0. Floats
 * keep about 7 significant digits, which is ample for telemetry (80 GB of memory is exact to
 * ~5 KB).
 *
 * Memory is allocated once by gm_ring_new and never grows: slots * (8 + 4 * (gpu_count *
 * gm_ring_gpu_columns() + GM_H__COUNT)) bytes plus a small header (8 GPUs x 3600 slots is 4.8 MB;
 * each kept GPU metric costs 14.4 KB per GPU per hour at 1 s).
 *
 * Times: the ring is kept sorted by time. A snapshot older than the newest one held (the wall
 * clock stepped back) first evicts the held samples that are now in its future, so queries by
 * time stay well defined; equal times are kept.
 *
 * Threads: one writer (gm_ring_append) and any number of concurrent readers; an internal
 * rwlock guards the rings, held only for copying, never across malloc. */
#ifndef GM_SERVER_RING_H
#define GM_SERVER_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

#define GM_RING_DEFAULT_SLOTS 3600 /* one hour at one sample per second */

typedef struct gm_ring gm_ring;

/* Which series a query reads. */
typedef enum gm_ring_source {
    GM_RING_GPU = 0, /* metric is a gm_metric of GPU `gpu` */
    GM_RING_HOST = 1 /* metric is a gm_host_metric */
} gm_ring_source;

/* A range query. Zero-initialise, then set what you need: all zeros reads every sample held of
 * GPU 0's metric 0 (utilization.gpu) at full resolution. */
typedef struct gm_ring_request {
    gm_ring_source source;
    unsigned gpu;      /* driver index, for GM_RING_GPU */
    int metric;        /* gm_metric or gm_host_metric, per source */
    int64_t since_ms;  /* > 0: only samples with t >= since_ms (epoch ms) */
    int64_t until_ms;  /* > 0: only samples with t <= until_ms */
    int64_t last_ms;   /* > 0: only samples with t >= newest - last_ms (the newest sample held,
                        * not the reader's clock); combined with since_ms, the later start wins */
    int64_t step_ms;   /* > 0: downsample into buckets [k*step, (k+1)*step) aligned to multiples
                        * of step_ms since the epoch; a bucket's value is the mean of its present
                        * values, absent when none is present; buckets holding no sample at all
                        * are not emitted */
    size_t max_points; /* > 0: at most this many points, the NEWEST ones (truncated is then set);
                        * 0: no cap beyond the slots held */
} gm_ring_request;

/* One point of a series. value is in the DISPLAY unit (see gm_series.unit); when present is
 * false, value is NaN and must be shown as absent (JSON null). */
typedef struct gm_point {
    int64_t t_ms; /* sample time, or bucket start when downsampled */
    double value;
    bool present;
} gm_point;

/* A query result. points is malloc'd by gm_ring_query; release with gm_series_free. */
typedef struct gm_series {
    gm_point *points;
    size_t count;
    const char *name;     /* canonical metric name ("utilization.gpu", host "memory.used") */
    const char *unit;     /* display unit of value: GPU metrics use gm_metric_info's unit (MiB,
                           * W, ...); host metrics are raw: "%", "B", "s", "" */
    double scale;         /* value = raw * scale */
    int64_t held_from_ms; /* oldest sample held when queried (0 when none) */
    int64_t held_to_ms;   /* newest sample held when queried (0 when none) */
    bool clamped;         /* the requested start was before the oldest sample held, so the
                           * range was clamped to what history holds */
    bool truncated;       /* max_points cut older points off */
} gm_series;

/* Allocates a history for GPU indexes 0..gpu_count-1 (0 is allowed: host only) with `slots`
 * samples per series (slots > 0, gpu_count <= GM_MAX_GPUS). All memory is taken here. Returns
 * GM_OK and *out, GM_EINVAL for bad sizes, GM_ENOMEM. */
int gm_ring_new(unsigned gpu_count, size_t slots, gm_ring **out, gm_error *err);
/* Releases h (NULL is a no-op). No reader may be using it. */
void gm_ring_free(gm_ring *h);

/* Records one snapshot: its time_ms, every GPU whose index < gpu_count (others are ignored;
 * GPUs missing from s are absent for this sample) and the host. When full, the oldest sample
 * is evicted. No allocation; safe against concurrent readers. NULL h or s is a no-op. */
void gm_ring_append(gm_ring *h, const gm_snapshot *s);

/* Reads one series over a time range into out (which the caller zeroes or reuses after
 * gm_series_free). Points come oldest first. A range beyond what is held is clamped to it
 * (out->clamped); an empty range is GM_OK with count 0. Returns GM_EINVAL for an unknown source,
 * a GPU index not recorded, an unknown metric, a negative range or step; GM_ENOMEM. */
int gm_ring_query(gm_ring *h, const gm_ring_request *q, gm_series *out, gm_error *err);
/* Frees out->points and zeroes out (NULL is a no-op). */
void gm_series_free(gm_series *out);

/* Samples held now (0..slots). */
size_t gm_ring_len(gm_ring *h);
/* Capacity in samples, as given to gm_ring_new. */
size_t gm_ring_slots(const gm_ring *h);
/* GPU indexes recorded (0..gpu_count-1). */
unsigned gm_ring_gpu_count(const gm_ring *h);
/* Time of the newest / oldest sample held, 0 when empty. */
int64_t gm_ring_newest_ms(gm_ring *h);
int64_t gm_ring_oldest_ms(gm_ring *h);
/* Bytes allocated by h (fixed from creation): header, time ring and all value rings. */
size_t gm_ring_memory_bytes(const gm_ring *h);

/* How many GPU metrics have rings (per GPU), and whether gm_metric id metric is one of them;
 * a query for another GPU metric is refused with GM_EINVAL. */
size_t gm_ring_gpu_columns(void);
bool gm_ring_keeps(int metric);

#endif
