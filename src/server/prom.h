/* prom.h - Prometheus text exposition (format 0.0.4) of one snapshot, with dcgm-exporter's
 * metric names and labels so existing Grafana dashboards and alert rules work unchanged. */
#ifndef GM_PROM_H
#define GM_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "gpumon.h"

/* The Content-Type a /metrics response carrying gm_prom_render() output must use. */
#define GM_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* What the daemon knows about itself, rendered beside the snapshot; docs/METRICS.md lists the
 * metric each field becomes. A negative real means "unknown" and omits its metric. */
typedef struct gm_prom_health {
    uint64_t samples_total;        /* sampling passes attempted since start (counter) */
    uint64_t sample_errors_total;  /* passes that returned an error (counter) */
    double last_sample_duration_s; /* wall time the latest pass took */
    double uptime_s;               /* seconds since the daemon started */
    /* Value of the Hostname label; NULL or "" uses the snapshot's host name (dcgm-exporter
     * takes NODE_NAME on Kubernetes, where the pod's own host name is meaningless). */
    const char *hostname;
    /* Leaves out gpumon_host_cpu_core_utilization_percent (one series per logical CPU, up to
     * GM_MAX_CPUS) for scrapers that cannot afford the cardinality. */
    bool no_per_core;
    /* Adds gpumon_process_utilization_percent: one series per process and engine. */
    bool process_utilization;
    /* The collector's calls since it opened (gm_collector_call_stats): one series each of
     * gpumon_sampler_call_seconds and gpumon_sampler_call_cpu_seconds_total. */
    const gm_call_stat *calls;
    size_t call_count;
    /* DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL per snapshot GPU position (MB/s, gm_prom_rates_update
     * fills it); a position whose nvlink_bw_set is false has no series. */
    double nvlink_bw[GM_MAX_GPUS];
    bool nvlink_bw_set[GM_MAX_GPUS];
} gm_prom_health;

/* The previous NVLink throughput reading of each GPU (by UUID), from which the bandwidth is a
 * rate: one per daemon, updated once per sample. */
typedef struct gm_prom_rates gm_prom_rates;

/* A new, empty state (NULL when out of memory); free it with gm_prom_rates_free. */
gm_prom_rates *gm_prom_rates_new(void);
void gm_prom_rates_free(gm_prom_rates *r);
/* Folds s's NVLink data counters (sent + received, all links) into r and writes each GPU's
 * bandwidth into h: bytes per second over the interval between the last two readings that
 * differed, in MB/s; 0 once the counters stood still longer than GM_PROM_NVLINK_IDLE_MS (they
 * are read at the collector's slow period, so an unchanged value alone does not mean idle).
 * Unset for a GPU without NVLink counters, on its first reading and after a counter reset. */
void gm_prom_rates_update(gm_prom_rates *r, const gm_snapshot *s, gm_prom_health *h);
#define GM_PROM_NVLINK_IDLE_MS 15000

/* Renders s (and h, which may be NULL to leave out the gpumon_sampler_* and daemon metrics) as
 * a complete exposition: each family's HELP and TYPE once, then all its samples. Absent metrics
 * are omitted, never written as 0; a family with no sample is left out entirely.
 * Returns a malloc'd NUL-terminated text (free() it) and its length in *len (optional), or NULL
 * when out of memory. Allocates nothing but the returned buffer. */
char *gm_prom_render(const gm_snapshot *s, const gm_prom_health *h, size_t *len);

#endif
