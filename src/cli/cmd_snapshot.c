/* cmd_snapshot.c - `gpumon snapshot`: the system inventory a benchmark audit records before and
 * after a run (GPUs, PCIe links, P2P, driver stack, host), as JSON for `gpumon diff`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/audit.h"
#include "base/error.h"

typedef struct snapshot_opts {
    const char *output;
    gm_audit_options audit;
    bool no_processes;
    double window_s, interval_s;
    bool window_given, interval_given;
    gm_cli_source src;
} snapshot_opts;

static int set_output(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row;
    if (!*arg)
        return gm_error_set(err, GM_EINVAL, "-o needs a file name");
    ((snapshot_opts *)base)->output = arg;
    return GM_OK;
}

static const gm_opt snapshot_table[] = {
    {.type = GM_OPT_CALLBACK,
     .name = "output",
     .letter = 'o',
     .arg = "FILE",
     .set = set_output,
     .complete = "file",
     .flags = GM_OPT_CLI_ONLY,
     .help = "Write the JSON to FILE (atomically: a reader never sees half a file) instead of "
             "standard output."},
    {.type = GM_OPT_DURATION,
     .name = "power-window",
     .arg = "TIME",
     GM_OPT_AT(snapshot_opts, window_s),
     GM_OPT_GIVEN(snapshot_opts, window_given),
     .min = 0,
     .max = 600,
     .help = "Average power over TIME: seconds (2, 0.5, 2s) or milliseconds (500ms); 0 takes "
             "one reading (default 2s)."},
    {.type = GM_OPT_DURATION,
     .name = "interval",
     .arg = "TIME",
     GM_OPT_AT(snapshot_opts, interval_s),
     GM_OPT_GIVEN(snapshot_opts, interval_given),
     .min = 0.01,
     .max = 60,
     .aliases = "power-interval",
     .help = "Between power readings (default 200ms)."},
    {.type = GM_OPT_FLAG,
     .name = "no-processes",
     GM_OPT_AT(snapshot_opts, no_processes),
     .help = "Do not list the processes using each GPU."},
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(snapshot_opts, src)},
    {0},
};

const gm_opt_command gm_cli_snapshot_command = {
    .name = "snapshot",
    .usage = "snapshot [-o FILE] [options]",
    .description = "Records what a benchmark runs on, for an audit: per GPU the model, index, "
                   "UUID, PCI bus id, memory capacity and use, power averaged over a short "
                   "window, power limit, persistence mode, PCIe link (current and max, with "
                   "bandwidth), the P2P matrix; the driver, CUDA and NVML versions; the host's "
                   "CPU model, CPU count, memory, kernel and name. Take one before and one after "
                   "a run, then compare them with `gpumon diff`.",
    .table = snapshot_table,
    .epilogue = "Values a GPU does not report are null. The P2P matrix needs NVML: with\n"
                "nvidia-smi \"p2p_known\" is false.\n\n"
                "Exit status: 0 ok, 1 failure (cannot write FILE), 2 usage error, 3 no GPU\n"
                "found.\n",
};

static int read_options(int argc, char **argv, snapshot_opts *o)
{
    int rc = gm_cli_parse(&gm_cli_snapshot_command, argc, argv, o, NULL);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (o->window_given)
        o->audit.power_window_ms = (unsigned)llround(o->window_s * 1000.0);
    if (o->interval_given)
        o->audit.power_interval_ms = (unsigned)llround(o->interval_s * 1000.0);
    return GM_CLI_PROCEED;
}

int gm_cli_snapshot(int argc, char **argv)
{
    snapshot_opts o = {0};
    gm_audit_options_init(&o.audit);
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
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
