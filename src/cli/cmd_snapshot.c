/* cmd_snapshot.c - `gpumon snapshot`: the system inventory a benchmark audit records before and
 * after a run (GPUs, PCIe links, P2P, driver stack, host), as JSON for `gpumon diff`. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        "      --interval, --power-interval TIME\n"
        "                           between power readings (default 200ms)\n"
        "      --no-processes       do not list the processes using each GPU\n"
        "      --provider NAME      nvml, nvidia-smi, sim or auto (default: auto, or\n"
        "                           $GPU_MONITOR_TELEMETRY_PROVIDER)\n"
        "      --simulate N         use N simulated GPUs (provider sim, 1-%d)\n"
        "      --seed N             simulated GPUs read the same for the same N (default:\n"
        "                           each run reads differently, as real GPUs do)\n"
        "  -h, --help               show this help\n\n"
        "Values a GPU does not report are null. The P2P matrix needs NVML: with nvidia-smi\n"
        "\"p2p_known\" is false.\n\n"
        "Exit status: 0 ok, 1 failure (cannot write FILE), 2 usage error, 3 no GPU found.\n",
        GM_MAX_GPUS);
}

/* A duration in [min_ms, max_ms] as milliseconds (the one duration grammar). */
static bool parse_duration(const char *flag, const char *arg, double min_ms, double max_ms,
                           unsigned *out)
{
    double secs;
    if (!gm_cli_parse_duration("snapshot", flag, arg, min_ms / 1000.0, max_ms / 1000.0, &secs))
        return false;
    *out = (unsigned)llround(secs * 1000.0);
    return true;
}

static int parse_args(int argc, char **argv, snapshot_opts *o)
{
    enum { OPT_WINDOW = 256, OPT_INTERVAL, OPT_NOPROC };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"power-window", required_argument, NULL, OPT_WINDOW},
        {"power-interval", required_argument, NULL, OPT_INTERVAL},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"no-processes", no_argument, NULL, OPT_NOPROC},
        GM_CLI_SOURCE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
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
            if (!parse_duration("--interval", optarg, 10, 60000, &o->audit.power_interval_ms))
                return GM_EXIT_USAGE;
            break;
        case OPT_NOPROC:
            o->no_processes = true;
            break;
        case 'h':
            usage(stdout);
            return GM_EXIT_OK;
        default:
            if (!gm_cli_default_option("snapshot", c, argv, longopts, &o->src))
                return GM_EXIT_USAGE;
            break;
        }
    }
    return gm_cli_no_operands("snapshot", argc, argv) ? -1 : GM_EXIT_USAGE;
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
    gm_cli_vary_simulation(&o.src, &copt);
    copt.no_processes = o.no_processes;
    gm_collector *c = gm_cli_collector_open("snapshot", &copt, &rc);
    if (!c)
        return rc;
    if (!gm_cli_require_gpu("snapshot", c, true)) {
        gm_collector_close(c);
        return GM_EXIT_NO_GPU;
    }
    gm_error err = {0};

    /* The power window is seconds of silence: on a terminal, say what it waits for (and take
     * the line back after); piped, stderr stays for errors. */
    bool tell = o.audit.power_window_ms > 0 && isatty(STDERR_FILENO);
    if (tell) {
        fprintf(stderr, "gpumon snapshot: averaging GPU power over %g s...",
                o.audit.power_window_ms / 1000.0);
        fflush(stderr);
    }
    json_t *doc = NULL;
    int taken = gm_audit_take(c, &o.audit, &doc, &err);
    if (tell)
        fputs("\r\033[K", stderr);
    if (taken < 0) {
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
