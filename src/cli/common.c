/* common.c - option parsing, provider selection, collector opening, GPU id lists and JSON
 * output shared by the CLI commands. */
#include "cli/common.h"

#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/term.h"
#include "base/clock.h"
#include "base/parse.h"
#include "base/suggest.h"
#include "base/error.h"
#include "collect/registry.h"

bool gm_cli_no_operands(const char *cmd, int argc, char **argv)
{
    if (optind >= argc)
        return true;
    fprintf(stderr, "gpumon %s: unexpected argument \"%s\"\n", cmd, argv[optind]);
    return false;
}

bool gm_cli_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long min,
                       unsigned long long max, unsigned long long *out)
{
    if (gm_parse_uint(value, min, max, out) == GM_OK)
        return true;
    fprintf(stderr, "gpumon %s: %s expects a whole number from %llu to %llu, got \"%s\"\n", cmd,
            flag, min, max, value ? value : "");
    return false;
}

bool gm_cli_parse_double(const char *cmd, const char *flag, const char *what, const char *arg,
                         double min, double max, double *out)
{
    if (gm_parse_number(arg, min, max, out) == GM_OK)
        return true;
    fprintf(stderr, "gpumon %s: %s expects %s from %.15g to %.15g, got \"%s\"\n", cmd, flag, what,
            min, max, arg ? arg : "");
    return false;
}

bool gm_cli_parse_duration(const char *cmd, const char *flag, const char *arg, double min_s,
                           double max_s, double *out_s)
{
    int64_t ms;
    if (gm_parse_duration_ms(arg, (int64_t)ceil(min_s * 1000), (int64_t)floor(max_s * 1000), &ms) ==
        GM_OK) {
        *out_s = (double)ms / 1000.0;
        return true;
    }
    fprintf(stderr,
            "gpumon %s: %s expects a duration from %.15gs to %.15gs (such as 90, 0.5, "
            "500ms, 15m, 1h30m), got \"%s\"\n",
            cmd, flag, min_s, max_s, arg ? arg : "");
    return false;
}

bool gm_cli_collector_options(const char *cmd, const gm_cli_source *src, gm_collector_options *opt)
{
    memset(opt, 0, sizeof *opt);
    const char *given = src->provider, *from = "--provider";
    if (!given) {
        const char *env = getenv("GPU_MONITOR_TELEMETRY_PROVIDER");
        if (env && *env) {
            given = env;
            from = "GPU_MONITOR_TELEMETRY_PROVIDER";
        }
    }
    if (given) {
        const char *name = gm_provider_canonical(given);
        if (!name) {
            fprintf(stderr, "gpumon %s: %s \"%s\" is not one of %s\n", cmd, from, given,
                    gm_provider_names());
            return false;
        }
        opt->provider = strcmp(name, "auto") == 0 ? NULL : name;
    }
    opt->simulate = src->simulate;
    opt->seed = src->seed;
    return true;
}

void gm_cli_vary_simulation(const gm_cli_source *src, gm_collector_options *opt)
{
    if (src->seed_arg)
        return;
    /* The pid too: two runs may start in the same millisecond. */
    opt->sim_vary = (uint64_t)gm_clock_wall_ms() ^ ((uint64_t)getpid() << 42);
    if (!opt->sim_vary)
        opt->sim_vary = 1;
}

gm_collector *gm_cli_collector_open(const char *cmd, const gm_collector_options *opt,
                                    int *exit_code)
{
    gm_collector *c = NULL;
    gm_error err = {0};
    if (gm_collector_open(opt, &c, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        *exit_code = err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_NO_GPU;
        return NULL;
    }
    return c;
}

bool gm_cli_require_gpu(const char *cmd, gm_collector *c, bool hint)
{
    if (strcmp(gm_collector_provider(c), "none") != 0)
        return true;
    fprintf(stderr, "gpumon %s: no GPU found; tried:\n", cmd);
    const char *d = gm_collector_diagnosis(c);
    for (const char *line = d; line && *line;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "  %.*s\n", len, line);
        line = nl ? nl + 1 : NULL;
    }
    if (hint)
        fprintf(stderr, "Use --simulate N to try gpumon with simulated GPUs.\n");
    return false;
}

/* list into f; GM_EINVAL with the message in err when malformed or too long. */
static int gpu_filter_parse(const char *list, gm_cli_gpu_filter *f, gm_error *err)
{
    memset(f, 0, sizeof *f);
    return gm_parse_gpu_list(list, f->items, &f->count, err);
}

bool gm_cli_parse_gpu_filter(const char *cmd, const char *list, gm_cli_gpu_filter *f)
{
    gm_error err = {0};
    if (gpu_filter_parse(list, f, &err) == GM_OK)
        return true;
    fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
    return false;
}

int gm_cli_set_gpu_filter(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    return gpu_filter_parse(value ? value : "", (gm_cli_gpu_filter *)((char *)base + row->offset),
                            err);
}

static int set_simulate(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    const gm_opt as_number = {.type = GM_OPT_UINT,
                              .name = row->name,
                              GM_OPT_AT(gm_cli_source, simulate),
                              .min = 1,
                              .max = GM_MAX_GPUS};
    int rc = gm_opt_set_row(&as_number, base, value, err);
    if (rc == GM_OK)
        ((gm_cli_source *)base)->simulate_arg = value;
    return rc;
}

static int set_seed(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    const gm_opt as_number = {.type = GM_OPT_UINT,
                              .name = row->name,
                              GM_OPT_AT(gm_cli_source, seed),
                              .min = 0,
                              .max = 18446744073709551615.0};
    int rc = gm_opt_set_row(&as_number, base, value, err);
    if (rc == GM_OK)
        ((gm_cli_source *)base)->seed_arg = value;
    return rc;
}

const gm_opt gm_cli_source_table[] = {
    {.type = GM_OPT_STRING,
     .name = "provider",
     .arg = "NAME",
     GM_OPT_AT(gm_cli_source, provider),
     .group = "Provider",
     .words = gm_provider_names,
     .help = "One of {words} (default: auto, or $GPU_MONITOR_TELEMETRY_PROVIDER)."},
    {.type = GM_OPT_CALLBACK,
     .name = "simulate",
     .arg = "N",
     .set = set_simulate,
     .help = "Use N simulated GPUs (provider sim, 1 to 64)."},
    {.type = GM_OPT_CALLBACK,
     .name = "seed",
     .arg = "N",
     .set = set_seed,
     .help = "Simulated GPUs read the same for the same N (default: each run differs, as real "
             "GPUs do)."},
    {0},
};

int gm_cli_parse(const gm_opt_command *cmd, int argc, char **argv, void *opts, int *first_operand)
{
    gm_error err = {0};
    int first = argc;
    int rc = gm_opt_parse(cmd, argc, argv, opts, &first, &err);
    if (rc == GM_OPT_HELP_REQUESTED) {
        gm_opt_help(cmd, stdout, gm_opt_help_width());
        return GM_EXIT_OK;
    }
    if (rc < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd->name, err.msg);
        return GM_EXIT_USAGE;
    }
    if (first_operand)
        *first_operand = first;
    else if (first < argc) {
        fprintf(stderr, "gpumon %s: unexpected argument \"%s\"\n", cmd->name, argv[first]);
        return GM_EXIT_USAGE;
    }
    return GM_CLI_PROCEED;
}

static bool item_matches(const char *item, const gm_gpu *g)
{
    unsigned long long idx; /* an index is what parse.h calls a number everywhere ("+1" is not) */
    if (gm_parse_uint(item, 0, UINT_MAX, &idx) == GM_OK)
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

int gm_cli_gpu_filter_check(const gm_cli_gpu_filter *f, const gm_snapshot *s, gm_error *err)
{
    for (size_t i = 0; i < f->count; i++) {
        bool found = false;
        for (unsigned g = 0; g < s->gpu_count && !found; g++)
            found = item_matches(f->items[i], &s->gpus[g]);
        if (!found)
            return gm_error_set(err, GM_ENOENT, "no GPU matches \"%s\" (have %u GPUs)", f->items[i],
                                s->gpu_count);
    }
    return GM_OK;
}

bool gm_cli_gpu_filter_resolve(const char *cmd, const gm_cli_gpu_filter *f, const gm_snapshot *s,
                               unsigned *out, size_t *n)
{
    *n = 0;
    gm_error err = {0};
    if (gm_cli_gpu_filter_check(f, s, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        return false;
    }
    for (unsigned i = 0; i < s->gpu_count; i++)
        if (gm_cli_gpu_selected(f, &s->gpus[i]))
            out[(*n)++] = s->gpus[i].index;
    return true;
}

int gm_cli_set_color(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    if (!value || !gm_term_parse_color(value, (gm_color_mode *)((char *)base + row->offset)))
        return gm_error_set(err, GM_EINVAL,
                            "invalid --color \"%s\" (expected auto, always or never)",
                            value ? value : "");
    return GM_OK;
}

int gm_cli_set_text_json(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    bool *json = (bool *)((char *)base + row->offset);
    if (value && strcmp(value, "json") == 0)
        *json = true;
    else if (value && strcmp(value, "text") == 0)
        *json = false;
    else
        return gm_error_set(err, GM_EINVAL, "invalid --format \"%s\" (expected text or json)",
                            value ? value : "");
    return GM_OK;
}

int gm_cli_set_json(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    (void)value;
    char *p = (char *)base + row->offset;
    if (row->size == sizeof(bool))
        *(bool *)p = row->code != 0;
    else if (row->size == sizeof(int))
        *(int *)p = row->code;
    else
        return gm_error_set(err, GM_EINVAL, "--%s cannot be set", row->name);
    return GM_OK;
}

int gm_cli_write_json(FILE *f, const json_t *j, bool pretty)
{
    int rc = json_dumpf(j, f, JSON_REAL_PRECISION(12) | (pretty ? JSON_INDENT(2) : JSON_COMPACT));
    fputc('\n', f);
    return rc;
}

void gm_cli_format_seconds(double s, char *buf, size_t len)
{
    if (s < 10)
        snprintf(buf, len, "%.1f s", s < 0 ? 0 : s);
    else
        snprintf(buf, len, "%.0f s", s);
}
