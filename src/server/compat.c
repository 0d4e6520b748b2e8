/* compat.c - the prototypes' JSON shapes (Fleet Manager, /stats, /ws/metrics) over a snapshot. */
#include "server/compat.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"

/* ---- values ---------------------------------------------------------------------------- */

/* A number rounded to the nearest integer, for keys the prototypes typed as int. */
static json_t *whole(double v)
{
    return isfinite(v) ? json_integer((json_int_t)llround(v)) : json_null();
}

/* Bytes as whole MiB, rounded down as nvidia-smi and NVML-based tools print them. */
static json_t *mib(double bytes)
{
    return isfinite(bytes) ? json_integer((json_int_t)floor(bytes / (double)GM_BYTES_PER_MIB))
                           : json_null();
}

static json_t *gpu_num(const gm_gpu *g, gm_metric m)
{
    return !g->lost && gm_gpu_has(g, m) ? gm_json_number(g->v[m]) : json_null();
}

static json_t *gpu_whole(const gm_gpu *g, gm_metric m)
{
    return !g->lost && gm_gpu_has(g, m) ? whole(g->v[m]) : json_null();
}

static json_t *gpu_mib(const gm_gpu *g, gm_metric m)
{
    return !g->lost && gm_gpu_has(g, m) ? mib(g->v[m]) : json_null();
}

/* Milliwatts as watts. */
static json_t *gpu_watts(const gm_gpu *g, gm_metric m)
{
    return !g->lost && gm_gpu_has(g, m) ? gm_json_number(g->v[m] / 1000.0) : json_null();
}

/* 100 * a / b rounded to 2 decimals, null unless both are present and b > 0. */
static json_t *percent(bool has_a, double a, bool has_b, double b)
{
    if (!has_a || !has_b || !(b > 0) || !isfinite(a))
        return json_null();
    return gm_json_number(round(10000.0 * a / b) / 100.0);
}

static json_t *host_mib(const gm_snapshot *s, gm_host_metric m)
{
    return s->host_valid && gm_host_has(&s->host, m) ? mib(s->host.v[m]) : json_null();
}

/* The array of row(g) for each GPU of s, NULL when out of memory. */
static json_t *gpu_array(const gm_snapshot *s, json_t *(*row)(const gm_gpu *g))
{
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    json_t *gpus = json_array();
    for (unsigned i = 0; gpus && i < n; i++)
        if (json_array_append_new(gpus, row(&s->gpus[i])) != 0) {
            json_decref(gpus);
            return NULL;
        }
    return gpus;
}

/* ---- /api/v1/monitoring/gpu-metrics: one node, in the GPU Fleet Manager's shape ------------- */

static json_t *gpu_metrics_gpu(const gm_gpu *g)
{
    char id[32];
    snprintf(id, sizeof id, "gpu-%u", g->index);
    return json_pack(
        "{s:s, s:o, s:o, s:o, s:{s:o, s:o, s:o}, s:o, s:o, s:{s:o, s:o}}", "id", id, "name",
        gm_json_text(g->name, sizeof g->name), "uuid", gm_json_text(g->uuid, sizeof g->uuid),
        "utilization", gpu_whole(g, GM_M_UTIL_GPU_PCT), "memory", "total",
        gpu_mib(g, GM_M_MEM_TOTAL_BYTES), "used", gpu_mib(g, GM_M_MEM_USED_BYTES), "free",
        gpu_mib(g, GM_M_MEM_FREE_BYTES), "temperature", gpu_whole(g, GM_M_TEMP_C), "power_usage",
        gpu_watts(g, GM_M_POWER_MW), "clock_speeds", "graphics", gpu_whole(g, GM_M_CLOCK_GR_MHZ),
        "memory", gpu_whole(g, GM_M_CLOCK_MEM_MHZ));
}

json_t *gm_compat_gpu_metrics(const gm_snapshot *s)
{
    char ts[32];
    gm_json_time(s->time_ms, ts, sizeof ts);
    json_t *gpus = gpu_array(s, gpu_metrics_gpu);
    return gpus ? json_pack("{s:s, s:o}", "timestamp", ts, "gpus", gpus) : NULL;
}

/* ---- /stats system inventory ----------------------------------------------------------- */

static json_t *stats_gpu(const gm_gpu *g)
{
    json_t *persist = !g->lost && gm_gpu_has(g, GM_M_PERSISTENCE_MODE)
                          ? json_boolean(g->v[GM_M_PERSISTENCE_MODE] != 0)
                          : json_null();
    return json_pack(
        "{s:I, s:o, s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o,"
        " s:{s:o, s:o, s:o, s:o, s:o, s:o}}",
        "index", (json_int_t)g->index, "name", gm_json_text(g->name, sizeof g->name), "uuid",
        gm_json_text(g->uuid, sizeof g->uuid), "pci_bus_id",
        gm_json_text(g->pci_bus_id, sizeof g->pci_bus_id), "lost", g->lost, "memory_total_mib",
        gpu_mib(g, GM_M_MEM_TOTAL_BYTES), "memory_used_mib", gpu_mib(g, GM_M_MEM_USED_BYTES),
        "power_draw_w", gpu_watts(g, GM_M_POWER_MW), "power_limit_w",
        gpu_watts(g, GM_M_POWER_LIMIT_MW), "persistence_mode", persist, "pcie", "gen_current",
        gpu_num(g, GM_M_PCIE_GEN_CUR), "gen_max", gpu_num(g, GM_M_PCIE_GEN_MAX), "width_current",
        gpu_num(g, GM_M_PCIE_WIDTH_CUR), "width_max", gpu_num(g, GM_M_PCIE_WIDTH_MAX),
        "bandwidth_current_gb_per_s", gm_json_pcie_gbps(g, GM_M_PCIE_GEN_CUR, GM_M_PCIE_WIDTH_CUR),
        "bandwidth_max_gb_per_s", gm_json_pcie_gbps(g, GM_M_PCIE_GEN_MAX, GM_M_PCIE_WIDTH_MAX));
}

json_t *gm_compat_stats(const gm_snapshot *s, const gm_topology *t)
{
    char ts[32];
    gm_json_time(s->time_ms, ts, sizeof ts);
    json_t *gpus = gpu_array(s, stats_gpu);
    if (!gpus)
        return NULL;
    bool known = t && t->known;
    json_t *p2p = gm_json_p2p(s, t);
    if (!p2p) {
        json_decref(gpus);
        return NULL;
    }
    const gm_host *h = &s->host;
    return json_pack("{s:s, s:I, s:o, s:o, s:o, s:o,"
                     " s:{s:o, s:o, s:o, s:o, s:o},"
                     " s:I, s:o, s:b, s:o}",
                     "timestamp", ts, "timestamp_ms", (json_int_t)s->time_ms, "provider",
                     gm_json_text(s->provider, sizeof s->provider), "driver_version",
                     gm_json_text(s->driver_version, sizeof s->driver_version), "cuda_version",
                     gm_json_text(s->cuda_version, sizeof s->cuda_version), "nvml_version",
                     gm_json_text(s->nvml_version, sizeof s->nvml_version),
                     /* system */
                     "system", "hostname", gm_json_text(h->hostname, sizeof h->hostname), "kernel",
                     gm_json_text(h->kernel, sizeof h->kernel), "processor_name",
                     gm_json_text(h->cpu_model, sizeof h->cpu_model), "cpu_count",
                     gm_json_host_number(s, GM_H_CPU_COUNT), "memory_total_bytes",
                     gm_json_host_number(s, GM_H_MEM_TOTAL_BYTES),
                     /* GPUs and their P2P matrix */
                     "gpu_count", (json_int_t)s->gpu_count, "gpus", gpus, "p2p_known", known, "p2p",
                     p2p);
}

/* ---- WS /ws/metrics -------------------------------------------------------------------- */

static json_t *ws_gpu(const gm_gpu *g)
{
    bool live = !g->lost;
    return json_pack(
        "{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "gpu_index", (json_int_t)g->index, "name",
        gm_json_text(g->name, sizeof g->name), "gpu_utilization", gpu_num(g, GM_M_UTIL_GPU_PCT),
        "memory_used", gpu_mib(g, GM_M_MEM_USED_BYTES), "memory_total",
        gpu_mib(g, GM_M_MEM_TOTAL_BYTES), "memory_utilization",
        percent(live && gm_gpu_has(g, GM_M_MEM_USED_BYTES), g->v[GM_M_MEM_USED_BYTES],
                live && gm_gpu_has(g, GM_M_MEM_TOTAL_BYTES), g->v[GM_M_MEM_TOTAL_BYTES]),
        "temperature", gpu_num(g, GM_M_TEMP_C), "power_draw", gpu_watts(g, GM_M_POWER_MW),
        "power_limit", gpu_watts(g, GM_M_POWER_LIMIT_MW));
}

json_t *gm_compat_ws_metrics(const gm_snapshot *s)
{
    char ts[32];
    gm_json_time(s->time_ms, ts, sizeof ts);
    json_t *gpus = gpu_array(s, ws_gpu);
    if (!gpus)
        return NULL;
    const gm_host *h = &s->host;
    bool hv = s->host_valid;
    json_t *cpu = gm_json_host_number(s, GM_H_CPU_UTIL_PCT);
    if (json_is_real(cpu)) /* per-mille noise of a jiffy ratio helps nobody */
        json_real_set(cpu, round(json_real_value(cpu) * 100.0) / 100.0);
    return json_pack(
        "{s:s, s:o, s:{s:o, s:o, s:o, s:o, s:[o, o, o], s:o}}", "timestamp", ts, "gpu_metrics",
        gpus, "system_metrics", "cpu_percent", cpu, "memory_percent",
        percent(hv && gm_host_has(h, GM_H_MEM_USED_BYTES), h->v[GM_H_MEM_USED_BYTES],
                hv && gm_host_has(h, GM_H_MEM_TOTAL_BYTES), h->v[GM_H_MEM_TOTAL_BYTES]),
        "memory_used", host_mib(s, GM_H_MEM_USED_BYTES), "memory_total",
        host_mib(s, GM_H_MEM_TOTAL_BYTES), "load_average", gm_json_host_number(s, GM_H_LOAD1),
        gm_json_host_number(s, GM_H_LOAD5), gm_json_host_number(s, GM_H_LOAD15), "uptime_seconds",
        gm_json_host_number(s, GM_H_UPTIME_S));
}
