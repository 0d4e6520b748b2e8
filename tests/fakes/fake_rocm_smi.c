/* fake_rocm_smi.c - a stand-in librocm_smi64.so.1 whose GPUs come from a JSON scenario file, so
 * the ROCm SMI provider is tested through the same dlopen path as AMD's library (format:
 * tests/fakes/README.md). Prototypes, enum values and struct layouts follow rocm_smi.h. */
#include "fake_amd_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built twice: FAKE_RSMI_OLD=1 is the library as ROCm 5 ships it (Debian 12's 5.2.3, which says
 * version 1.0.0): the ROCm 5 rsmi_frequencies_t, and none of the entry points ROCm 6 added. */
#ifndef FAKE_RSMI_OLD
#define FAKE_RSMI_OLD 0
#endif

/* rsmi_status_t */
enum {
    RS_SUCCESS = 0,
    RS_INVALID_ARGS = 1,
    RS_NOT_SUPPORTED = 2,
    RS_FILE_ERROR = 3,
    RS_PERMISSION = 4,
    RS_INIT_ERROR = 8,
    RS_NOT_FOUND = 10,
    RS_INSUFFICIENT_SIZE = 11,
    RS_UNKNOWN_ERROR = 0xFFFFFFFF,
};

#if FAKE_RSMI_OLD
#define FREQS 32
typedef struct {
    uint32_t num_supported, current;
    uint64_t frequency[FREQS];
} fake_freqs;
#else
#define FREQS 33
typedef struct {
    bool has_deep_sleep;
    uint32_t num_supported, current;
    uint64_t frequency[FREQS];
} fake_freqs;
#endif

typedef struct {
    fake_freqs transfer_rate;
    uint32_t lanes[FREQS];
} fake_pcie_bw;

typedef struct {
    uint64_t correctable_err, uncorrectable_err;
#if !FAKE_RSMI_OLD
    uint64_t deferred_err;
#endif
} fake_error_count;

typedef struct {
    uint32_t process_id, pasid;
    uint64_t vram_usage, sdma_usage;
    uint32_t cu_occupancy;
} fake_process_info;

typedef struct {
    uint32_t major, minor, patch;
    const char *build;
} fake_version;

/* not initialised, no such GPU, its files gone, not supported */
static const fake_amd_codes codes = {RS_INIT_ERROR, RS_INVALID_ARGS, RS_FILE_ERROR,
                                     RS_NOT_SUPPORTED};

FAKE_AMD_HOOKS(fake_rsmi)

int rsmi_init(uint64_t flags)
{
    (void)flags;
    int rc = fake_amd_init("GM_FAKE_RSMI_SCENARIO", "rocm_smi", RS_UNKNOWN_ERROR);
    return rc ? rc : RS_SUCCESS;
}

int rsmi_shut_down(void)
{
    fake_amd_shut_down();
    return RS_SUCCESS;
}

int rsmi_status_string(int status, const char **out)
{
    static const char *const names[] = {
        "RSMI_STATUS_SUCCESS: The function has been executed successfully.",
        "RSMI_STATUS_INVALID_ARGS: Invalid arguments",
        "RSMI_STATUS_NOT_SUPPORTED: Feature not supported",
        "RSMI_STATUS_FILE_ERROR: Problem accessing a file",
        "RSMI_STATUS_PERMISSION: Permission denied",
    };
    if (!out)
        return RS_INVALID_ARGS;
    if (status >= 0 && (size_t)status < sizeof names / sizeof *names)
        *out = names[status];
    else if (status == RS_INIT_ERROR)
        *out = "RSMI_STATUS_INIT_ERROR: An error occurred during initialization";
    else
        *out = "An unknown error occurred";
    return RS_SUCCESS;
}

int rsmi_version_get(fake_version *v)
{
    if (!v)
        return RS_INVALID_ARGS;
#if FAKE_RSMI_OLD
    *v = (fake_version){1, 0, 0, ""}; /* what Debian's 5.2.3 build answers */
#else
    *v = (fake_version){7, 4, 0, ""};
#endif
    /* GM_FAKE_RSMI_VERSION="1.0.0": a build that does not carry its version. */
    const char *o = getenv("GM_FAKE_RSMI_VERSION");
    if (o && *o)
        sscanf(o, "%u.%u.%u", &v->major, &v->minor, &v->patch);
    return RS_SUCCESS;
}

static json_t *gpus(void)
{
    return fake_amd_top("gpus");
}

int rsmi_num_monitor_devices(uint32_t *n)
{
    if (!F.scenario)
        return RS_INIT_ERROR;
    *n = (uint32_t)json_array_size(gpus());
    return RS_SUCCESS;
}

/* The GPU dv for a call named call, or an rsmi_status_t other than 0 in *rc. */
static json_t *gpu_for(uint32_t dv, const char *call, int *rc)
{
    return fake_amd_gpu(dv, call, &codes, rc);
}

static bool num(json_t *g, uint32_t dv, const char *key, double *out)
{
    return fake_amd_num(g, dv, key, out);
}

#define GPU_OR_RC(call)                  \
    int rc_;                             \
    json_t *g = gpu_for(dv, call, &rc_); \
    if (!g)                              \
        return rc_;

#define NUM_OR_UNSUPPORTED(key, var) \
    double var;                      \
    if (!num(g, dv, key, &var))      \
        return RS_NOT_SUPPORTED;

static int str_field(uint32_t dv, const char *call, const char *key, char *buf, size_t len)
{
    GPU_OR_RC(call);
    json_t *s = json_object_get(g, key);
    if (!json_is_string(s))
        return RS_NOT_SUPPORTED;
    if (!buf || !len)
        return RS_INVALID_ARGS;
    snprintf(buf, len, "%s", json_string_value(s));
    return strlen(json_string_value(s)) >= len ? RS_INSUFFICIENT_SIZE : RS_SUCCESS;
}

int rsmi_dev_name_get(uint32_t dv, char *name, size_t len)
{
    return str_field(dv, "name", "name", name, len);
}

int rsmi_dev_serial_number_get(uint32_t dv, char *s, uint32_t len)
{
    return str_field(dv, "serial", "serial", s, len);
}

int rsmi_dev_vbios_version_get(uint32_t dv, char *s, uint32_t len)
{
    return str_field(dv, "vbios", "vbios", s, len);
}

int rsmi_dev_unique_id_get(uint32_t dv, uint64_t *id)
{
    GPU_OR_RC("unique_id");
    json_t *s = json_object_get(g, "unique_id");
    if (!json_is_string(s))
        return RS_NOT_SUPPORTED;
    *id = strtoull(json_string_value(s), NULL, 16);
    return RS_SUCCESS;
}

int rsmi_dev_pci_id_get(uint32_t dv, uint64_t *bdfid)
{
    GPU_OR_RC("bus_id");
    json_t *s = json_object_get(g, "bus_id");
    unsigned dom, bus, dev, fn;
    if (!json_is_string(s) ||
        sscanf(json_string_value(s), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
        return RS_NOT_SUPPORTED;
    *bdfid = (uint64_t)dom << 32 | (bus & 0xff) << 8 | (dev & 0x1f) << 3 | (fn & 7);
    return RS_SUCCESS;
}

int rsmi_dev_id_get(uint32_t dv, uint16_t *id)
{
    GPU_OR_RC("device_id");
    NUM_OR_UNSUPPORTED("device_id", v);
    *id = (uint16_t)v;
    return RS_SUCCESS;
}

/* The provider reads utilization first: each call is a new read of the GPU (per-read arrays and
 * gone_after count them). */
int rsmi_dev_busy_percent_get(uint32_t dv, uint32_t *pct)
{
    if (F.scenario)
        fake_amd_count_read(dv);
    GPU_OR_RC("busy");
    NUM_OR_UNSUPPORTED("busy", v);
    *pct = (uint32_t)v;
    return RS_SUCCESS;
}

int rsmi_dev_memory_busy_percent_get(uint32_t dv, uint32_t *pct)
{
    GPU_OR_RC("mem_busy");
    NUM_OR_UNSUPPORTED("mem_busy", v);
    *pct = (uint32_t)v;
    return RS_SUCCESS;
}

int rsmi_dev_memory_total_get(uint32_t dv, int type, uint64_t *total)
{
    GPU_OR_RC("vram_total");
    if (type != 0) /* RSMI_MEM_TYPE_VRAM only */
        return RS_NOT_SUPPORTED;
    NUM_OR_UNSUPPORTED("vram_total", v);
    *total = (uint64_t)v;
    return RS_SUCCESS;
}

int rsmi_dev_memory_usage_get(uint32_t dv, int type, uint64_t *used)
{
    GPU_OR_RC("vram_used");
    if (type != 0)
        return RS_NOT_SUPPORTED;
    NUM_OR_UNSUPPORTED("vram_used", v);
    *used = (uint64_t)v;
    return RS_SUCCESS;
}

int rsmi_dev_temp_metric_get(uint32_t dv, uint32_t sensor, int metric, int64_t *mc)
{
    static const char *const keys[] = {"temp_edge", "temp_junction", "temp_memory"};
    if (sensor >= 3 || metric != 0) /* RSMI_TEMP_CURRENT of edge, junction, memory */
        return RS_NOT_SUPPORTED;
    GPU_OR_RC(keys[sensor]);
    NUM_OR_UNSUPPORTED(keys[sensor], v);
    *mc = (int64_t)(v * 1000); /* millidegrees */
    return RS_SUCCESS;
}

int rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *uw)
{
    (void)sensor;
    GPU_OR_RC("power_ave");
    NUM_OR_UNSUPPORTED("power_ave_w", v);
    *uw = (uint64_t)(v * 1e6);
    return RS_SUCCESS;
}

#if !FAKE_RSMI_OLD
int rsmi_dev_current_socket_power_get(uint32_t dv, uint64_t *uw)
{
    GPU_OR_RC("socket_power");
    NUM_OR_UNSUPPORTED("socket_power_w", v);
    *uw = (uint64_t)(v * 1e6);
    return RS_SUCCESS;
}
#endif

int rsmi_dev_power_cap_get(uint32_t dv, uint32_t sensor, uint64_t *uw)
{
    (void)sensor;
    GPU_OR_RC("power_cap");
    NUM_OR_UNSUPPORTED("power_cap_w", v);
    *uw = (uint64_t)(v * 1e6);
    return RS_SUCCESS;
}

int rsmi_dev_energy_count_get(uint32_t dv, uint64_t *count, float *resolution, uint64_t *ts)
{
    GPU_OR_RC("energy");
    NUM_OR_UNSUPPORTED("energy_count", v);
    double res = 15.259; /* uJ per count, as MI200/MI300 report */
    num(g, dv, "energy_resolution", &res);
    *count = (uint64_t)v;
    *resolution = (float)res;
    if (ts)
        *ts = 1700000000000000000ull;
    return RS_SUCCESS;
}

static int fill_freqs(json_t *g, uint32_t dv, const char *key, double scale, fake_freqs *f)
{
    json_t *a = json_object_get(g, key), *v;
    if (!json_is_array(a) || !json_array_size(a))
        return RS_NOT_SUPPORTED;
    memset(f, 0, sizeof *f);
    size_t i;
    json_array_foreach(a, i, v)
    {
        if (i < FREQS)
            f->frequency[i] = (uint64_t)(json_number_value(v) * scale);
    }
    f->num_supported = (uint32_t)(json_array_size(a) < FREQS ? json_array_size(a) : FREQS);
    char cur[64];
    snprintf(cur, sizeof cur, "%s_current", key);
    double c = 0;
    num(g, dv, cur, &c);
    f->current = (uint32_t)c;
    return RS_SUCCESS;
}

int rsmi_dev_gpu_clk_freq_get(uint32_t dv, int type, fake_freqs *f)
{
    const char *key = type == 0 ? "sclk" : type == 4 ? "mclk" : NULL; /* SYS, MEM */
    if (!key)
        return RS_NOT_SUPPORTED;
    GPU_OR_RC(key);
    return fill_freqs(g, dv, key, 1e6, f); /* MHz in the scenario, Hz in the API */
}

int rsmi_dev_pci_bandwidth_get(uint32_t dv, fake_pcie_bw *bw)
{
    GPU_OR_RC("pcie");
    memset(bw, 0, sizeof *bw);
    int rc = fill_freqs(g, dv, "pcie", 1e9, &bw->transfer_rate); /* GT/s -> T/s */
    if (rc != RS_SUCCESS)
        return rc;
    json_t *lanes = json_object_get(g, "pcie_lanes"), *v;
    size_t i;
    json_array_foreach(lanes, i, v)
    {
        if (i < FREQS)
            bw->lanes[i] = (uint32_t)json_integer_value(v);
    }
    return RS_SUCCESS;
}

int rsmi_dev_fan_speed_get(uint32_t dv, uint32_t sensor, int64_t *speed)
{
    (void)sensor;
    GPU_OR_RC("fan");
    NUM_OR_UNSUPPORTED("fan", v);
    *speed = (int64_t)v;
    return RS_SUCCESS;
}

int rsmi_dev_fan_speed_max_get(uint32_t dv, uint32_t sensor, uint64_t *max)
{
    (void)sensor;
    GPU_OR_RC("fan");
    double v = 255;
    if (!json_object_get(g, "fan"))
        return RS_NOT_SUPPORTED;
    num(g, dv, "fan_max", &v);
    *max = (uint64_t)v;
    return RS_SUCCESS;
}

/* rsmi_gpu_block_t bits 0..13: umc sdma gfx mmhub athub pcie_bif hdp xgmi_wafl df smn sem mp0
 * mp1 fuse. */
static const char *const blocks[] = {"umc",      "sdma", "gfx",       "mmhub", "athub",
                                     "pcie_bif", "hdp",  "xgmi_wafl", "df",    "smn",
                                     "sem",      "mp0",  "mp1",       "fuse"};

int rsmi_dev_ecc_count_get(uint32_t dv, uint64_t block, fake_error_count *ec)
{
    GPU_OR_RC("ecc");
    json_t *ecc = json_object_get(g, "ecc");
    for (unsigned b = 0; b < sizeof blocks / sizeof *blocks; b++)
        if (block == (uint64_t)1 << b) {
            json_t *pair = json_object_get(ecc, blocks[b]);
            if (!json_is_array(pair))
                return RS_NOT_SUPPORTED;
            memset(ec, 0, sizeof *ec);
            ec->correctable_err = (uint64_t)json_integer_value(json_array_get(pair, 0));
            ec->uncorrectable_err = (uint64_t)json_integer_value(json_array_get(pair, 1));
            return RS_SUCCESS;
        }
    return RS_INVALID_ARGS;
}

int rsmi_version_str_get(int component, char *buf, uint32_t len)
{
    if (component != 0) /* RSMI_SW_COMP_DRIVER */
        return RS_INVALID_ARGS;
    json_t *s = fake_amd_top("driver_version");
    if (!F.scenario)
        return RS_INIT_ERROR;
    snprintf(buf, len, "%s", json_is_string(s) ? json_string_value(s) : "6.8.5");
    return RS_SUCCESS;
}

/* Processes: the scenario's top-level "processes", [{"pid", "gpus": [dv...], "vram": [bytes
 * per GPU]}]; KFD reports a process's VRAM over all its GPUs. */
static json_t *procs(void)
{
    return fake_amd_top("processes");
}

static json_t *proc_of(uint32_t pid)
{
    json_t *p;
    size_t i;
    json_array_foreach(procs(), i, p)
    {
        if (json_integer_value(json_object_get(p, "pid")) == pid)
            return p;
    }
    return NULL;
}

static uint64_t vram_total(json_t *p)
{
    uint64_t sum = 0;
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(p, "vram"), i, v) sum += (uint64_t)json_integer_value(v);
    return sum;
}

static void fill_proc(json_t *p, fake_process_info *out, uint64_t vram)
{
    memset(out, 0, sizeof *out);
    out->process_id = (uint32_t)json_integer_value(json_object_get(p, "pid"));
    out->pasid = 0x8000 + out->process_id % 0x1000;
    out->vram_usage = vram;
}

int rsmi_compute_process_info_get(fake_process_info *out, uint32_t *n)
{
    if (!F.scenario)
        return RS_INIT_ERROR;
    if (!n)
        return RS_INVALID_ARGS;
    json_t *list = procs();
    uint32_t have = (uint32_t)json_array_size(list);
    if (!out) {
        *n = have;
        return RS_SUCCESS;
    }
    uint32_t k = 0;
    for (; k < have && k < *n; k++)
        fill_proc(json_array_get(list, k), &out[k], vram_total(json_array_get(list, k)));
    *n = k;
    return k < have ? RS_INSUFFICIENT_SIZE : RS_SUCCESS;
}

int rsmi_compute_process_info_by_pid_get(uint32_t pid, fake_process_info *out)
{
    json_t *p = proc_of(pid);
    if (!p)
        return RS_NOT_FOUND;
    fill_proc(p, out, vram_total(p));
    return RS_SUCCESS;
}

int rsmi_compute_process_gpus_get(uint32_t pid, uint32_t *dv, uint32_t *n)
{
    json_t *p = proc_of(pid), *v;
    if (!p)
        return RS_NOT_FOUND;
    json_t *list = json_object_get(p, "gpus");
    uint32_t have = (uint32_t)json_array_size(list);
    if (!dv) {
        *n = have;
        return RS_SUCCESS;
    }
    size_t i;
    uint32_t k = 0;
    json_array_foreach(list, i, v)
    {
        if (k < *n)
            dv[k++] = (uint32_t)json_integer_value(v);
    }
    *n = k;
    return k < have ? RS_INSUFFICIENT_SIZE : RS_SUCCESS;
}

#if !FAKE_RSMI_OLD
int rsmi_compute_process_info_by_device_get(uint32_t pid, uint32_t dv, fake_process_info *out)
{
    json_t *p = proc_of(pid), *v;
    if (!p)
        return RS_NOT_FOUND;
    size_t i;
    json_array_foreach(json_object_get(p, "gpus"), i, v)
    {
        if ((uint32_t)json_integer_value(v) == dv) {
            fill_proc(p, out,
                      (uint64_t)json_integer_value(json_array_get(json_object_get(p, "vram"), i)));
            return RS_SUCCESS;
        }
    }
    return RS_NOT_FOUND;
}
#endif
