/* fake_amd_smi.c - a stand-in libamd_smi.so whose GPUs come from a JSON scenario file
 * ($GM_FAKE_AMDSMI_SCENARIO), so the amd_smi provider is tested through the same dlopen path as
 * AMD's library (format: tests/fakes/README.md). Prototypes, enum values, units and structure
 * layouts follow amdsmi.h of ROCm 6.2 (amdsmi 24.6). */
#include "fake_amd_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built three times: the version the provider reads (24.6, ROCm 6.2), FAKE_AMDSMI_LEAN=1 the
 * same lacking some entry points, and FAKE_AMDSMI_OTHER=1 a library of another version
 * (24.7, ROCm 6.3), whose structures the provider must not read. */
#ifndef FAKE_AMDSMI_LEAN
#define FAKE_AMDSMI_LEAN 0
#endif
#ifndef FAKE_AMDSMI_OTHER
#define FAKE_AMDSMI_OTHER 0
#endif

enum {
    AS_SUCCESS = 0,
    AS_INVAL = 1,
    AS_NOT_SUPPORTED = 2,
    AS_FILE_ERROR = 14,
    AS_OUT_OF_RESOURCES = 15,
    AS_INIT_ERROR = 18,
    AS_NOT_FOUND = 31,
    AS_NOT_INIT = 32,
};

#define NA 0xFFFFu

typedef struct {
    uint32_t year, major, minor, release;
    const char *build;
} fake_version;

typedef struct {
    uint32_t gfx_activity, umc_activity, mm_activity;
    uint32_t reserved[13];
} fake_engine_usage;

typedef struct {
    uint32_t vram_total, vram_used;
    uint32_t reserved[2];
} fake_vram_usage;

typedef struct {
    uint32_t current_socket_power, average_socket_power;
    uint32_t gfx_voltage, soc_voltage, mem_voltage, power_limit;
    uint32_t reserved[11];
} fake_power_info;

typedef struct {
    uint32_t clk, min_clk, max_clk;
    uint8_t clk_locked, clk_deep_sleep;
    uint32_t reserved[4];
} fake_clk_info;

typedef struct {
    char market_name[256];
    uint32_t vendor_id;
    char vendor_name[64];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[32];
    uint32_t oam_id;
    uint32_t reserved[18];
} fake_asic_info;

typedef struct {
    char model_number[256];
    char product_serial[32];
    char fru_id[32];
    char product_name[256];
    char manufacturer_name[64];
    uint32_t reserved[32];
} fake_board_info;

typedef struct {
    char driver_version[64], driver_date[64], driver_name[64];
} fake_driver_info;

typedef struct {
    uint64_t correctable_count, uncorrectable_count, deferred_count;
    uint64_t reserved[5];
} fake_error_count;

typedef struct {
    char name[32];
    uint32_t pid;
    uint64_t mem;
    struct {
        uint64_t gfx, enc;
        uint32_t reserved[12];
    } engine_usage;
    struct {
        uint64_t gtt_mem, cpu_mem, vram_mem;
        uint32_t reserved[10];
    } memory_usage;
    char container_name[32];
    uint32_t reserved[4];
} fake_proc_info;

typedef struct {
    struct {
        uint16_t max_pcie_width;
        uint32_t max_pcie_speed, pcie_interface_version;
        int slot_type;
        uint64_t reserved[10];
    } pcie_static;
    struct {
        uint16_t pcie_width;
        uint32_t pcie_speed, pcie_bandwidth;
        uint64_t replay, l0_to_recovery, replay_roll_over, nak_sent, nak_received;
        uint64_t reserved[13];
    } pcie_metric;
    uint64_t reserved[32];
} fake_pcie_info;

#define MAX_GPUS FAKE_AMD_MAX_GPUS

static char sockets[MAX_GPUS], processors[MAX_GPUS]; /* their addresses are the handles */

/* not initialised, no such GPU, its files gone, not supported */
static const fake_amd_codes codes = {AS_NOT_INIT, AS_NOT_FOUND, AS_FILE_ERROR, AS_NOT_SUPPORTED};

FAKE_AMD_HOOKS(fake_amdsmi)

int amdsmi_init(uint64_t flags)
{
    if (!(flags & (1u << 1))) /* AMDSMI_INIT_AMD_GPUS */
        return AS_INVAL;
    int rc = fake_amd_init("GM_FAKE_AMDSMI_SCENARIO", "amd_smi", AS_INIT_ERROR);
    return rc ? rc : AS_SUCCESS;
}

int amdsmi_shut_down(void)
{
    fake_amd_shut_down();
    return AS_SUCCESS;
}

int amdsmi_status_code_to_string(int status, const char **out)
{
    if (!out)
        return AS_INVAL;
    switch (status) {
    case AS_SUCCESS:
        *out = "AMDSMI_STATUS_SUCCESS: Call succeeded";
        break;
    case AS_NOT_SUPPORTED:
        *out = "AMDSMI_STATUS_NOT_SUPPORTED: Command not supported";
        break;
    case AS_FILE_ERROR:
        *out = "AMDSMI_STATUS_FILE_ERROR: Problem accessing a file";
        break;
    case AS_INIT_ERROR:
        *out = "AMDSMI_STATUS_INIT_ERROR: An error occurred when initializing internal data "
               "structures";
        break;
    case 34:
        *out = "AMDSMI_STATUS_DRIVER_NOT_LOADED: Processor driver not loaded";
        break;
    default:
        *out = "AMDSMI_STATUS_UNKNOWN_ERROR: An unknown error occurred";
        break;
    }
    return AS_SUCCESS;
}

int amdsmi_get_lib_version(fake_version *v)
{
    if (!F.scenario)
        return AS_NOT_INIT;
    if (!v)
        return AS_INVAL;
#if FAKE_AMDSMI_OTHER
    *v = (fake_version){24, 7, 1, 0, "24.7.1.0"};
#else
    *v = (fake_version){24, 6, 3, 0, "24.6.3.0"};
#endif
    return AS_SUCCESS;
}

static json_t *gpus(void)
{
    return fake_amd_top("gpus");
}

int amdsmi_get_socket_handles(uint32_t *count, void **handles)
{
    if (!F.scenario)
        return AS_NOT_INIT;
    if (!count)
        return AS_INVAL;
    size_t n = json_array_size(gpus());
    if (n > MAX_GPUS)
        n = MAX_GPUS;
    if (!handles) {
        *count = (uint32_t)n;
        return AS_SUCCESS;
    }
    /* One GPU per socket, as on an MI300X platform. */
    for (size_t i = 0; i < n && i < *count; i++)
        handles[i] = &sockets[i];
    *count = (uint32_t)(n < *count ? n : *count);
    return AS_SUCCESS;
}

int amdsmi_get_processor_handles(void *socket, uint32_t *count, void **handles)
{
    if (!F.scenario)
        return AS_NOT_INIT;
    char *s = socket;
    if (!count || s < sockets || s >= sockets + MAX_GPUS)
        return AS_INVAL;
    if (handles && *count >= 1)
        handles[0] = &processors[s - sockets];
    *count = 1;
    return AS_SUCCESS;
}

/* The GPU of a processor handle for the call named call, with its position in *dv, or an
 * amdsmi_status_t other than 0 in *rc. */
static json_t *gpu_for(void *h, const char *call, unsigned *dv, int *rc)
{
    char *p = h;
    if (F.scenario && (p < processors || p >= processors + MAX_GPUS)) {
        *rc = AS_INVAL;
        return NULL;
    }
    *dv = F.scenario ? (unsigned)(p - processors) : 0;
    return fake_amd_gpu(*dv, call, &codes, rc);
}

static bool num(json_t *g, unsigned dv, const char *key, double *out)
{
    return fake_amd_num(g, dv, key, out);
}

static uint32_t num_or_na(json_t *g, unsigned dv, const char *key, double scale)
{
    double d;
    return num(g, dv, key, &d) ? (uint32_t)(d * scale) : NA;
}

static void str(json_t *g, const char *key, char *dst, size_t cap)
{
    const char *s = json_string_value(json_object_get(g, key));
    /* As the library: a fixed-size field, filled to its end when the text is as long. */
    strncpy(dst, s ? s : "", cap);
}

#define GPU_OR_RETURN(h, call, g, dv)            \
    unsigned dv = 0;                             \
    int rc_ = 0;                                 \
    json_t *g = gpu_for((h), (call), &dv, &rc_); \
    if (!g)                                      \
        return rc_;

int amdsmi_get_gpu_device_bdf(void *h, uint64_t *bdf)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_device_bdf", g, dv);
    unsigned dom, bus, dev, fn;
    const char *s = json_string_value(json_object_get(g, "bus_id"));
    if (!bdf || !s || sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
        return AS_INVAL;
    *bdf = (uint64_t)dom << 16 | bus << 8 | dev << 3 | fn;
    return AS_SUCCESS;
}

int amdsmi_get_gpu_device_uuid(void *h, unsigned *len, char *uuid)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_device_uuid", g, dv);
    if (!len || !uuid || *len < 38)
        return AS_INVAL;
    const char *s = json_string_value(json_object_get(g, "uuid"));
    if (!s)
        return AS_NOT_SUPPORTED;
    snprintf(uuid, *len, "%s", s);
    *len = (unsigned)strlen(uuid);
    return AS_SUCCESS;
}

int amdsmi_get_gpu_asic_info(void *h, fake_asic_info *a)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_asic_info", g, dv);
    memset(a, 0, sizeof *a);
    str(g, "name", a->market_name, sizeof a->market_name);
    a->vendor_id = 0x1002;
    double d;
    if (num(g, dv, "device_id", &d))
        a->device_id = (uint64_t)d;
    return AS_SUCCESS;
}

int amdsmi_get_gpu_board_info(void *h, fake_board_info *b)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_board_info", g, dv);
    memset(b, 0, sizeof *b);
    str(g, "serial", b->product_serial, sizeof b->product_serial);
    str(g, "board_name", b->product_name, sizeof b->product_name);
    return AS_SUCCESS;
}

int amdsmi_get_gpu_driver_info(void *h, fake_driver_info *d)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_driver_info", g, dv);
    (void)g;
    memset(d, 0, sizeof *d);
    const char *v = json_string_value(fake_amd_top("driver_version"));
    if (!v)
        return AS_NOT_SUPPORTED;
    snprintf(d->driver_version, sizeof d->driver_version, "%s", v);
    snprintf(d->driver_name, sizeof d->driver_name, "amdgpu");
    return AS_SUCCESS;
}

/* The first call of each of the provider's passes: a GPU's reads are counted here. */
int amdsmi_get_gpu_activity(void *h, fake_engine_usage *u)
{
    char *p = h;
    if (p >= processors && p < processors + MAX_GPUS)
        fake_amd_count_read((unsigned)(p - processors));
    GPU_OR_RETURN(h, "amdsmi_get_gpu_activity", g, dv);
    memset(u, 0, sizeof *u);
    u->gfx_activity = num_or_na(g, dv, "busy", 1);
    u->umc_activity = num_or_na(g, dv, "mem_busy", 1);
    u->mm_activity = NA;
    return AS_SUCCESS;
}

int amdsmi_get_gpu_vram_usage(void *h, fake_vram_usage *v)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_vram_usage", g, dv);
    double t, u;
    if (!num(g, dv, "vram_total", &t) || !num(g, dv, "vram_used", &u))
        return AS_NOT_SUPPORTED;
    memset(v, 0, sizeof *v);
    v->vram_total = (uint32_t)(t / (1024 * 1024));
    v->vram_used = (uint32_t)(u / (1024 * 1024));
    return AS_SUCCESS;
}

int amdsmi_get_temp_metric(void *h, int sensor, int metric, int64_t *out)
{
    static const char *const keys[] = {"temp_edge", "temp_junction", "temp_memory"};
    GPU_OR_RETURN(h, "amdsmi_get_temp_metric", g, dv);
    double d;
    if (!out || metric != 0 || sensor < 0 || sensor > 2)
        return AS_INVAL;
    if (!num(g, dv, keys[sensor], &d))
        return AS_NOT_SUPPORTED;
    *out = (int64_t)d; /* whole degrees, as 24.6 answers */
    return AS_SUCCESS;
}

int amdsmi_get_power_info(void *h, fake_power_info *pi)
{
    GPU_OR_RETURN(h, "amdsmi_get_power_info", g, dv);
    memset(pi, 0, sizeof *pi);
    pi->current_socket_power = num_or_na(g, dv, "socket_power_w", 1);
    pi->average_socket_power = num_or_na(g, dv, "power_ave_w", 1);
    pi->gfx_voltage = pi->soc_voltage = pi->mem_voltage = NA;
    pi->power_limit = num_or_na(g, dv, "power_cap_w", 1e6); /* hwmon's uW */
    return AS_SUCCESS;
}

int amdsmi_get_energy_count(void *h, uint64_t *count, float *res, uint64_t *ts)
{
    GPU_OR_RETURN(h, "amdsmi_get_energy_count", g, dv);
    double c, r;
    if (!num(g, dv, "energy_count", &c) || !num(g, dv, "energy_resolution", &r))
        return AS_NOT_SUPPORTED;
    *count = (uint64_t)c;
    *res = (float)r;
    *ts = 1;
    return AS_SUCCESS;
}

int amdsmi_get_clock_info(void *h, int type, fake_clk_info *ci)
{
    GPU_OR_RETURN(h, "amdsmi_get_clock_info", g, dv);
    const char *key = type == 0 ? "sclk" : type == 4 ? "mclk" : NULL;
    json_t *levels = key ? json_object_get(g, key) : NULL;
    if (!json_array_size(levels))
        return AS_NOT_SUPPORTED;
    char cur_key[16];
    snprintf(cur_key, sizeof cur_key, "%s_current", key);
    size_t at = (size_t)json_integer_value(json_object_get(g, cur_key));
    memset(ci, 0, sizeof *ci);
    ci->min_clk = UINT32_MAX;
    size_t i;
    json_t *v;
    json_array_foreach(levels, i, v)
    {
        uint32_t mhz = (uint32_t)json_number_value(v);
        if (mhz > ci->max_clk)
            ci->max_clk = mhz;
        if (mhz < ci->min_clk)
            ci->min_clk = mhz;
        if (i == at)
            ci->clk = mhz;
    }
    return AS_SUCCESS;
}

/* From the scenario's link table ("pcie": GT/s per level, "pcie_lanes", "pcie_current"): the
 * highest level as the static maximum, the current one as the metric, speeds in MT/s. */
int amdsmi_get_pcie_info(void *h, fake_pcie_info *pi)
{
    GPU_OR_RETURN(h, "amdsmi_get_pcie_info", g, dv);
    json_t *rates = json_object_get(g, "pcie"), *lanes = json_object_get(g, "pcie_lanes");
    if (!json_array_size(rates))
        return AS_NOT_SUPPORTED;
    size_t at = (size_t)json_integer_value(json_object_get(g, "pcie_current"));
    memset(pi, 0, sizeof *pi);
    for (size_t i = 0; i < json_array_size(rates); i++) {
        uint32_t mts = (uint32_t)(json_number_value(json_array_get(rates, i)) * 1000);
        uint16_t w = (uint16_t)json_integer_value(json_array_get(lanes, i));
        if (mts > pi->pcie_static.max_pcie_speed)
            pi->pcie_static.max_pcie_speed = mts;
        if (w > pi->pcie_static.max_pcie_width)
            pi->pcie_static.max_pcie_width = w;
        if (i == at) {
            pi->pcie_metric.pcie_speed = mts;
            pi->pcie_metric.pcie_width = w;
        }
    }
    static const uint32_t gens[] = {2500, 5000, 8000, 16000, 32000, 64000};
    for (unsigned i = 0; i < 6; i++)
        if (pi->pcie_static.max_pcie_speed == gens[i])
            pi->pcie_static.pcie_interface_version = i + 1;
    return AS_SUCCESS;
}

#if !FAKE_AMDSMI_LEAN
int amdsmi_get_gpu_fan_speed(void *h, uint32_t sensor, int64_t *speed)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_fan_speed", g, dv);
    double d;
    if (sensor != 0 || !num(g, dv, "fan", &d))
        return AS_NOT_SUPPORTED;
    *speed = (int64_t)d;
    return AS_SUCCESS;
}

int amdsmi_get_gpu_fan_speed_max(void *h, uint32_t sensor, uint64_t *max)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_fan_speed_max", g, dv);
    double d;
    if (sensor != 0 || !num(g, dv, "fan_max", &d))
        return AS_NOT_SUPPORTED;
    *max = (uint64_t)d;
    return AS_SUCCESS;
}

/* The sum over the scenario's blocks ("ecc": {"umc": [correctable, uncorrectable], ...}). */
int amdsmi_get_gpu_total_ecc_count(void *h, fake_error_count *ec)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_total_ecc_count", g, dv);
    json_t *blocks = json_object_get(g, "ecc"), *b;
    const char *name;
    if (!json_is_object(blocks))
        return AS_NOT_SUPPORTED;
    memset(ec, 0, sizeof *ec);
    json_object_foreach(blocks, name, b)
    {
        ec->correctable_count += (uint64_t)json_integer_value(json_array_get(b, 0));
        ec->uncorrectable_count += (uint64_t)json_integer_value(json_array_get(b, 1));
    }
    return AS_SUCCESS;
}

/* The scenario's processes using this GPU ("processes": [{"pid", "gpus", "vram"}]). */
int amdsmi_get_gpu_process_list(void *h, uint32_t *max, fake_proc_info *list)
{
    GPU_OR_RETURN(h, "amdsmi_get_gpu_process_list", g, dv);
    (void)g;
    if (!max)
        return AS_INVAL;
    uint32_t cap = *max, n = 0;
    json_t *procs = fake_amd_top("processes"), *p;
    size_t i;
    json_array_foreach(procs, i, p)
    {
        json_t *on = json_object_get(p, "gpus"), *x;
        size_t k;
        json_array_foreach(on, k, x)
        {
            if ((unsigned)json_integer_value(x) != dv)
                continue;
            if (list && n < cap) {
                fake_proc_info *pi = &list[n];
                memset(pi, 0, sizeof *pi);
                pi->pid = (uint32_t)json_integer_value(json_object_get(p, "pid"));
                str(p, "name", pi->name, sizeof pi->name);
                pi->memory_usage.vram_mem =
                    (uint64_t)json_integer_value(json_array_get(json_object_get(p, "vram"), k));
                pi->mem = pi->memory_usage.vram_mem;
            }
            n++;
        }
    }
    *max = n;
    return cap >= n ? AS_SUCCESS : AS_OUT_OF_RESOURCES;
}
#endif
