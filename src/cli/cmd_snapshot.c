/* cmd_snapshot.c - `gpumon snapshot`: the system inventory a benchmark audit records before and
 * after a run (GPUs, PCIe links, P2P, driver stack, host), as JSON for `gpumon diff`. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/audit.h"

typedef struct snapshot_opts {
    const char *output;
    gm_audit_options audit;
    bool no_processes;
    gm_cli_source src;
} snapshot_opts;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpumon snapshot [-o FILE] [options]\n\n"
        "Records what a benchmark runs on, for an audit: per GPU the model, index, UUID, PCI bus\n"
        "id, memory capacity and use, power averaged over a short window, power limit,\n"
        "persistence mode, PCIe link (current and max, with bandwidth), the P2P matrix; the\n"
        "driver, CUDA and NVML versions; the host's CPU model, CPU count, memory, kernel and\n"
        "name. Take one before and one after a run, then compare them with `gpumon diff`.\n\n"
        "Options:\n"
        "  -o, --output FILE        write the JSON to FILE (atomically: a reader never sees\n"
        "                           half a file) instead of standard output\n"
        "      --power-window TIME  average power over TIME: seconds (2, 0.5, 2s) or\n"
        "                           milliseconds (500ms); 0 takes one reading (default 2s)\n"
        "      --power-interval TIME  between power readings (default 200ms)\n"
        "      --no-processes       do not list the processes using each GPU\n"
        "      --provider NAME      nvml, nvidia-smi, sim or auto (default: auto, or\n"
        "                           $GPU_MONITOR_TELEMETRY_PROVIDER)\n"
        "      --simulate N         use N simulated GPUs (provider sim, 1-%d)\n"
        "      --seed N             seed of the simulated GPUs' dynamics (default 0)\n"
        "  -h, --help               show this help\n\n"
        "Values a GPU does not report are null. The P2P matrix needs NVML: with nvidia-smi\n"
        "\"p2p_known\" is false.\n\n"
        "Exit status: 0 ok, 1 failure (cannot write FILE), 2 usage error, 3 no GPU found.\n",
        GM_MAX_GPUS);
}

/* "2", "0.5", "2s", "500ms" as milliseconds in [min_ms, max_ms]. */
static bool parse_duration(const char *flag, const char *arg, double min_ms, double max_ms,
                           unsigned *out)
{
    char *end = NULL;
    double v = strtod(arg, &end);
    double scale = 1000.0;
    if (end && strcmp(end, "ms") == 0)
        scale = 1.0;
    else if (end && (strcmp(end, "s") == 0 || *end == '\0'))
        scale = 1000.0;
    else
        end = NULL;
    double ms = v * scale;
    if (end == arg || !end || !isfinite(ms) || ms < min_ms || ms > max_ms) {
        fprintf(stderr,
                "gpumon snapshot: %s expects a duration from %gms to %gs (e.g. 2s, 500ms), got "
                "\"%s\"\n",
                flag, min_ms, max_ms / 1000.0, arg);
        return false;
    }
    *out = (unsigned)llround(ms);
    return true;
}

static int parse_args(int argc, char **argv, snapshot_opts *o)
{
    enum {
        OPT_WINDOW = 256,
        OPT_INTERVAL,
        OPT_NOPROC,
        OPT_PROVIDER,
        OPT_SIMULATE,
        OPT_SEED,
    };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"power-window", required_argument, NULL, OPT_WINDOW},
        {"power-interval", required_argument, NULL, OPT_INTERVAL},
        {"no-processes", no_argument, NULL, OPT_NOPROC},
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"simulate", required_argument, NULL, OPT_SIMULATE},
        {"seed", required_argument, NULL, OPT_SEED},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (!*optarg) {
                fprintf(stderr, "gpumon snapshot: -o needs a file name\n");
                return GM_EXIT_USAGE;
            }
            o->output = optarg;
            break;
        case OPT_WINDOW:
            if (!parse_duration("--power-window", optarg, 0, 600000, &o->audit.power_window_ms))
                return GM_EXIT_USAGE;
            break;
        case OPT_INTERVAL:
            if (!parse_duration("--power-interval", optarg, 10, 60000, &o->audit.power_interval_ms))
                return GM_EXIT_USAGE;
            break;
        case OPT_NOPROC:
            o->no_processes = true;
            break;
        case OPT_PROVIDER:
            o->src.provider = optarg;
            break;
        case OPT_SIMULATE:
            if (!gm_cli_parse_uint("snapshot", "--simulate", optarg, 1, GM_MAX_GPUS, &v))
                return GM_EXIT_USAGE;
            o->src.simulate = (unsigned)v;
            break;
        case OPT_SEED:
            if (!gm_cli_parse_uint("snapshot", "--seed", optarg, 0, UINT64_MAX, &v))
                return GM_EXIT_USAGE;
            o->src.seed = v;
            break;
        case 'h':
            usage(stdout);
            return GM_EXIT_OK;
        case ':':
            fprintf(stderr, "gpumon snapshot: %s needs a value\n", argv[optind - 1]);
            return GM_EXIT_USAGE;
        default:
            fprintf(stderr, "gpumon snapshot: unknown option \"%s\" (see gpumon snapshot --help)\n",
                    argv[optind - 1]);
            return GM_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpumon snapshot: unexpected argument \"%s\"\n", argv[optind]);
        return GM_EXIT_USAGE;
    }
    return -1;
}

/* "no GPU found; tried:" and the collector's diagnosis, one provider per line, as query says. */
static void explain_no_gpu(gm_collector *c)
{
    fprintf(stderr, "gpumon snapshot: no GPU found; tried:\n");
    const char *d = gm_collector_diagnosis(c);
    for (const char *line = d; line && *line;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "  %.*s\n", len, line);
        line = nl ? nl + 1 : NULL;
    }
    fprintf(stderr, "Use --simulate N to try gpumon with simulated GPUs.\n");
}

int gm_cli_snapshot(int argc, char **argv)
{
    snapshot_opts o = {0};
    gm_audit_options_init(&o.audit);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    o.audit.with_processes = !o.no_processes;

    gm_collector_options copt;
    if (!gm_cli_collector_options("snapshot", &o.src, &copt))
        return GM_EXIT_USAGE;
    copt.no_processes = o.no_processes;
    gm_collector *c = NULL;
    gm_error err = {0};
    if (gm_collector_open(&copt, &c, &err) < 0) {
        fprintf(stderr, "gpumon snapshot: %s\n", err.msg);
        return err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_NO_GPU;
    }
    if (strcmp(gm_collector_provider(c), "none") == 0) {
        explain_no_gpu(c);
        gm_collector_close(c);
        return GM_EXIT_NO_GPU;
    }

    json_t *doc = NULL;
    if (gm_audit_take(c, &o.audit, &doc, &err) < 0) {
        fprintf(stderr, "gpumon snapshot: %s\n", err.msg);
        gm_collector_close(c);
        return err.code == GM_ENOMEM ? GM_EXIT_FAILURE : GM_EXIT_NO_GPU;
    }
    gm_collector_close(c);
    rc = GM_EXIT_OK;
    if (gm_audit_write(doc, o.output, &err) < 0) {
        fprintf(stderr, "gpumon snapshot: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
    }
    json_decref(doc);
    return rc;
}
