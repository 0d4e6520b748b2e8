/* common.h - pieces every CLI command shares: provider selection and GPU id lists. */
#ifndef GM_CLI_COMMON_H
#define GM_CLI_COMMON_H

#include <stdbool.h>

#include "gpumon.h"

/* Provider flags shared by commands that read GPUs. */
typedef struct gm_cli_source {
    const char *provider; /* --provider, else $GPU_MONITOR_TELEMETRY_PROVIDER, else auto */
    unsigned simulate;    /* --simulate N */
    uint64_t seed;        /* --seed */
} gm_cli_source;

/* Parses a --simulate or --seed style unsigned number; false (with a message on stderr naming
 * flag) when value is not a number in [min, max]. */
bool gm_cli_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long min,
                       unsigned long long max, unsigned long long *out);

/* Fills opt from src and the environment. Returns false (message printed) on an invalid
 * environment value. */
bool gm_cli_collector_options(const char *cmd, const gm_cli_source *src, gm_collector_options *opt);

/* Opens a collector; on failure prints "gpumon <cmd>: ..." and returns NULL. */
gm_collector *gm_cli_open_collector(const char *cmd, const gm_cli_source *src);

/* A GPU selection from -i/--id: indices, UUIDs or PCI bus ids, comma-separated. */
typedef struct gm_cli_gpu_filter {
    bool all;
    size_t count;
    char items[GM_MAX_GPUS][GM_UUID_LEN];
} gm_cli_gpu_filter;

/* Parses list into f; false (message printed) when malformed or too long. */
bool gm_cli_parse_gpu_filter(const char *cmd, const char *list, gm_cli_gpu_filter *f);
/* True when g is selected by f. */
bool gm_cli_gpu_selected(const gm_cli_gpu_filter *f, const gm_gpu *g);
/* Returns the first filter item that matches no GPU in s, or NULL when all match. */
const char *gm_cli_gpu_filter_unmatched(const gm_cli_gpu_filter *f, const gm_snapshot *s);

#endif
