/* nvtop.c - the nvtop provider, the last resort: `nvtop -s` prints one JSON snapshot of every
 * GPU nvtop reads (NVIDIA, AMD, Intel, Apple, Qualcomm, Ascend...; Syllo/nvtop, interface.c's
 * print_snapshot). Run with a deadline like nvidia-smi; used in auto only for the GPUs no other
 * provider read. nvtop gives no PCI bus id: a GPU is taken for one already read when a GPU of
 * the same name was. */
#include "collect/nvtop.h"
#include "base/json.h"
#include "base/spawn.h"
#include "collect/calltime.h"
#include "collect/provider.h"
#include "base/error.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NVTOP_DEFAULT_TIMEOUT_MS 5000

typedef struct nvtop_state {
    char prog[1024];
    int timeout_ms;
} nvtop_state;

/* The number a reading starts with, when what follows is exactly unit (case-insensitive;
 * "" for plain digits). */
static bool reading(json_t *v, const char *unit, double *out)
{
    const char *s = json_string_value(v);
    if (!s)
        return false;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || errno || !(d >= 0) || d > 1e18 || isspace((unsigned char)*s))
        return false;
    if (strcasecmp(end, unit) != 0)
        return false;
    *out = d;
    return true;
}

static void set_reading(gm_gpu *g, json_t *o, const char *key, const char *unit, gm_metric m,
                        double scale)
{
    double v;
    if (reading(json_object_get(o, key), unit, &v))
        gm_gpu_set(g, m, v * scale);
}

static const char *vendor_of(const char *name)
{
    static const struct {
        const char *word, *vendor;
    } words[] = {{"NVIDIA", "NVIDIA"},   {"GeForce", "NVIDIA"}, {"Tesla", "NVIDIA"},
                 {"Quadro", "NVIDIA"},   {"AMD", "AMD"},        {"Radeon", "AMD"},
                 {"Instinct", "AMD"},    {"Intel", "Intel"},    {"Apple", "Apple"},
                 {"Adreno", "Qualcomm"}, {"Ascend", "Huawei"}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strstr(name, words[i].word))
            return words[i].vendor;
    return "";
}

static void parse_procs(json_t *procs, unsigned index, gm_snapshot *out)
{
    size_t i;
    json_t *p;
    json_array_foreach(procs, i, p)
    {
        double pid;
        if (!reading(json_object_get(p, "pid"), "", &pid) || pid < 1 || pid > 4194304)
            continue;
        gm_process pr = {.gpu_index = index, .pid = (uint32_t)pid};
        const char *kind = json_string_value(json_object_get(p, "kind"));
        if (kind && strstr(kind, "compute"))
            pr.type |= GM_PROC_COMPUTE;
        if (kind && strstr(kind, "graphic"))
            pr.type |= GM_PROC_GRAPHICS;
        if (!pr.type)
            pr.type = GM_PROC_COMPUTE;
        double mem;
        if (reading(json_object_get(p, "gpu_mem_bytes_alloc"), "", &mem)) {
            pr.mem_valid = true;
            pr.used_mem_bytes = (uint64_t)mem;
        }
        gm_snapshot_add_process(out, &pr);
    }
}

int gm_nvtop_parse(const char *text, size_t len, gm_snapshot *out, bool want_procs, gm_error *err)
{
    json_error_t jerr;
    json_t *root = gm_json_loadb(text, len, 0, &jerr);
    if (!root || !json_is_array(root)) {
        json_decref(root);
        return gm_error_set(err, GM_EPARSE, "nvtop: not a JSON snapshot (%s)",
                            root ? "not an array" : jerr.text);
    }
    size_t i;
    json_t *o;
    out->gpu_count = 0;
    json_array_foreach(root, i, o)
    {
        if (!json_is_object(o) || out->gpu_count >= GM_MAX_GPUS)
            continue;
        unsigned index = out->gpu_count++;
        gm_gpu *g = &out->gpus[index];
        g->index = index;
        const char *name = json_string_value(json_object_get(o, "device_name"));
        snprintf(g->name, sizeof g->name, "%s", name ? name : "");
        snprintf(g->vendor, sizeof g->vendor, "%s", vendor_of(g->name));
        set_reading(g, o, "gpu_clock", "MHz", GM_M_CLOCK_GR_MHZ, 1);
        set_reading(g, o, "mem_clock", "MHz", GM_M_CLOCK_MEM_MHZ, 1);
        set_reading(g, o, "temp", "C", GM_M_TEMP_C, 1);
        set_reading(g, o, "fan_speed", "%", GM_M_FAN_PCT, 1);
        set_reading(g, o, "power_draw", "W", GM_M_POWER_MW, 1000);
        set_reading(g, o, "gpu_util", "%", GM_M_UTIL_GPU_PCT, 1);
        set_reading(g, o, "mem_util", "%", GM_M_UTIL_MEM_PCT, 1);
        set_reading(g, o, "encode", "%", GM_M_UTIL_ENC_PCT, 1);
        set_reading(g, o, "decode", "%", GM_M_UTIL_DEC_PCT, 1);
        set_reading(g, o, "mem_total", "", GM_M_MEM_TOTAL_BYTES, 1);
        set_reading(g, o, "mem_used", "", GM_M_MEM_USED_BYTES, 1);
        set_reading(g, o, "mem_free", "", GM_M_MEM_FREE_BYTES, 1);
        /* Shared encoder/decoder engines: one figure for both, as nvtop shows it. */
        double ed;
        if (reading(json_object_get(o, "encode_decode"), "%", &ed)) {
            gm_gpu_set(g, GM_M_UTIL_ENC_PCT, ed);
            gm_gpu_set(g, GM_M_UTIL_DEC_PCT, ed);
        }
        if (want_procs)
            parse_procs(json_object_get(o, "processes"), index, out);
    }
    json_decref(root);
    return GM_OK;
}

static int run_nvtop(nvtop_state *st, gm_snapshot *out, bool want_procs, gm_error *err)
{
    const char *argv[] = {st->prog, "-s", NULL};
    gm_spawn_result res = {0};
    int rc = GM_TIMED("nvtop -s", gm_spawn_run(argv, st->timeout_ms, 0, &res, err));
    if (rc == GM_OK) {
        if (strstr(res.out, "No GPU to monitor"))
            rc = gm_error_set(err, GM_ENODEV, "nvtop: no GPU to monitor");
        else
            rc = gm_nvtop_parse(res.out, res.out_len, out, want_procs, err);
    }
    gm_spawn_result_free(&res);
    return rc;
}

static int nvtop_open(const gm_collector_options *opt, void **state, gm_error *err)
{
    nvtop_state *st = calloc(1, sizeof *st);
    gm_snapshot *s = gm_snapshot_new();
    if (!st || !s) {
        free(st);
        gm_snapshot_free(s);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    const char *prog = getenv("GPU_MONITOR_NVTOP");
    snprintf(st->prog, sizeof st->prog, "%s", prog && *prog ? prog : "nvtop");
    st->timeout_ms = opt->smi_timeout_ms > 0 ? opt->smi_timeout_ms : NVTOP_DEFAULT_TIMEOUT_MS;
    int rc = run_nvtop(st, s, false, err);
    if (rc == GM_OK && s->gpu_count == 0)
        rc = gm_error_set(err, GM_ENODEV, "nvtop: no GPU in its snapshot");
    gm_snapshot_free(s);
    if (rc < 0) {
        free(st);
        return rc;
    }
    *state = st;
    return GM_OK;
}

static void nvtop_close(void *state)
{
    free(state);
}

static int nvtop_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    return run_nvtop(state, out, want_procs, err);
}

const gm_provider gm_provider_nvtop = {
    .name = "nvtop",
    .vendor = NULL, /* every vendor nvtop reads; said per GPU */
    .open = nvtop_open,
    .close = nvtop_close,
    .sample = nvtop_sample,
};
