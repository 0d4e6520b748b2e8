/* common.c - provider selection and GPU id lists shared by the CLI commands. */
#include "cli/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool gm_cli_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long min,
                       unsigned long long max, unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    if (!value || !*value || *value == '-')
        goto bad;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || *end || v < min || v > max)
        goto bad;
    *out = v;
    return true;
bad:
    fprintf(stderr, "gpumon %s: %s expects a whole number from %llu to %llu, got \"%s\"\n", cmd,
            flag, min, max, value ? value : "");
    return false;
}

bool gm_cli_collector_options(const char *cmd, const gm_cli_source *src, gm_collector_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->provider = src->provider;
    if (!opt->provider) {
        const char *env = getenv("GPU_MONITOR_TELEMETRY_PROVIDER");
        if (env && *env) {
            if (strcasecmp(env, "nvml") && strcasecmp(env, "nvidia-smi") &&
                strcasecmp(env, "sim") && strcasecmp(env, "auto")) {
                fprintf(stderr,
                        "gpumon %s: GPU_MONITOR_TELEMETRY_PROVIDER=\"%s\" is not one of nvml, "
                        "nvidia-smi, sim, auto\n",
                        cmd, env);
                return false;
            }
            opt->provider = env;
        }
    }
    if (opt->provider && strcasecmp(opt->provider, "auto") == 0)
        opt->provider = NULL;
    if (opt->provider && strcasecmp(opt->provider, "nvml") == 0)
        opt->provider = "nvml";
    else if (opt->provider && strcasecmp(opt->provider, "sim") == 0)
        opt->provider = "sim";
    else if (opt->provider && strcasecmp(opt->provider, "nvidia-smi") == 0)
        opt->provider = "nvidia-smi";
    opt->simulate = src->simulate;
    opt->seed = src->seed;
    return true;
}

gm_collector *gm_cli_open_collector(const char *cmd, const gm_cli_source *src)
{
    gm_collector_options opt;
    if (!gm_cli_collector_options(cmd, src, &opt))
        return NULL;
    gm_collector *c = NULL;
    gm_error err = {0};
    if (gm_collector_open(&opt, &c, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        return NULL;
    }
    return c;
}

bool gm_cli_parse_gpu_filter(const char *cmd, const char *list, gm_cli_gpu_filter *f)
{
    memset(f, 0, sizeof *f);
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && *p == ' ')
            p++, len--;
        while (len && p[len - 1] == ' ')
            len--;
        if (len == 0 || len >= GM_UUID_LEN || f->count >= GM_MAX_GPUS) {
            fprintf(stderr,
                    "gpumon %s: invalid GPU list \"%s\" (expected indices, UUIDs or PCI "
                    "bus ids separated by commas)\n",
                    cmd, list);
            return false;
        }
        memcpy(f->items[f->count], p, len);
        f->items[f->count][len] = '\0';
        f->count++;
        p = comma ? comma + 1 : NULL;
    }
    if (f->count == 0) {
        fprintf(stderr, "gpumon %s: empty GPU list\n", cmd);
        return false;
    }
    return true;
}

static bool item_matches(const char *item, const gm_gpu *g)
{
    char *end;
    unsigned long idx = strtoul(item, &end, 10);
    if (*item && !*end)
        return idx == g->index;
    if (strcasecmp(item, g->uuid) == 0)
        return true;
    /* Bus ids come as 00000000:3B:00.0 or the short 3B:00.0 / 0000:3B:00.0 forms. */
    size_t il = strlen(item), gl = strlen(g->pci_bus_id);
    return il >= 7 && il <= gl && strcasecmp(g->pci_bus_id + (gl - il), item) == 0;
}

bool gm_cli_gpu_selected(const gm_cli_gpu_filter *f, const gm_gpu *g)
{
    if (f->count == 0)
        return true;
    for (size_t i = 0; i < f->count; i++)
        if (item_matches(f->items[i], g))
            return true;
    return false;
}

const char *gm_cli_gpu_filter_unmatched(const gm_cli_gpu_filter *f, const gm_snapshot *s)
{
    for (size_t i = 0; i < f->count; i++) {
        bool found = false;
        for (unsigned g = 0; g < s->gpu_count && !found; g++)
            found = item_matches(f->items[i], &s->gpus[g]);
        if (!found)
            return f->items[i];
    }
    return NULL;
}
