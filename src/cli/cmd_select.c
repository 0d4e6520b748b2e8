/* cmd_select.c - `gpumon select` (rank GPUs by availability, print the best N) and the engine
 * `gpumon wait` shares with it (same options and output, plus polling). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "base/clock.h"
#include "base/json.h"
#include "core/lease.h"
#include "core/select.h"
#include "base/error.h"

/* Shared with cmd_wait.c: runs `gpumon <cmd>` for cmd "select" or "wait". */

enum out_format { OUT_LIST, OUT_UUID, OUT_JSON, OUT_ENV };

typedef struct select_opts {
    const char *cmd;
    bool wait;
    unsigned count;
    double min_free_mib;
    bool has_max_util;
    double max_util;
    double timeout_s;
    double interval_s;
    enum out_format format;
    bool filter_given;
    gm_cli_gpu_filter filter;
    bool ignore_leases;
    bool all_devices;
    bool mig;
    bool verbose;
    bool quiet;
    double started_s; /* when the wait began (monotonic), for its progress lines */
    const char *lease_dir;
    gm_cli_source src;
} select_opts;

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
}

static int set_format(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    select_opts *o = base;
    (void)row;
    if (strcmp(arg, "list") == 0)
        o->format = OUT_LIST;
    else if (strcmp(arg, "uuid") == 0)
        o->format = OUT_UUID;
    else if (strcmp(arg, "json") == 0)
        o->format = OUT_JSON;
    else if (strcmp(arg, "env") == 0)
        o->format = OUT_ENV;
    else
        return gm_error_set(err, GM_EINVAL,
                            "invalid --format \"%s\" (expected list, uuid, json or env)", arg);
    return GM_OK;
}

static int set_lease_dir(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row;
    if (!*arg)
        return gm_error_set(err, GM_EINVAL, "--lease-dir needs a directory");
    ((select_opts *)base)->lease_dir = arg;
    return GM_OK;
}

/* wait's options given to select. */
static int wait_only(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)base, (void)arg;
    return gm_error_set(err, GM_EINVAL, "--%s belongs to `gpumon wait`", row->name);
}

/* What select and wait share (the provider rows come last, after wait's own). */
static const gm_opt choice_table[] = {
    {.type = GM_OPT_UINT,
     .name = "count",
     .letter = 'n',
     .arg = "N",
     GM_OPT_AT(select_opts, count),
     .min = 1,
     .max = GM_MAX_GPUS,
     .help = "GPUs wanted (default 1)."},
    {.type = GM_OPT_DOUBLE,
     .name = "min-free-mb",
     .letter = 'm',
     .arg = "MIB",
     GM_OPT_AT(select_opts, min_free_mib),
     .min = 0,
     .max = 1e12,
     .help = "Only GPUs with at least MIB MiB of free memory."},
    {.type = GM_OPT_DOUBLE,
     .name = "max-util",
     .letter = 'u',
     .arg = "PCT",
     GM_OPT_AT(select_opts, max_util),
     GM_OPT_GIVEN(select_opts, has_max_util),
     .min = 0,
     .max = 100,
     .help = "Only GPUs at most PCT % busy (utilization.gpu)."},
    {.type = GM_OPT_FLAG,
     .name = "mig",
     GM_OPT_AT(select_opts, mig),
     .help = "Hand out MIG devices (by their MIG-... UUIDs) instead of whole GPUs: free when "
             "no process runs in one and its memory is mostly free."},
    GM_CLI_OPT_ID(select_opts, filter, GM_OPT_GIVEN(select_opts, filter_given),
                  .help = "Choose only among these GPUs: indices, UUIDs or PCI bus ids, "
                          "comma-separated."),
    {.type = GM_OPT_CALLBACK,
     .name = "format",
     .arg = "FMT",
     .set = set_format,
     .group = "Output",
     .values = "list uuid json env",
     .help = "list (default, \"0,3\"), uuid (\"GPU-...,GPU-...\"), json, or env "
             "(CUDA_VISIBLE_DEVICES=..., and for AMD GPUs ROCR_VISIBLE_DEVICES=... "
             "HIP_VISIBLE_DEVICES=..., one a line)."},
    GM_CLI_OPT_JSON(select_opts, format, OUT_JSON),
    {.type = GM_OPT_FLAG,
     .name = "verbose",
     .letter = 'v',
     GM_OPT_AT(select_opts, verbose),
     .help = "Explain every GPU's score and status on stderr."},
    {.type = GM_OPT_FLAG,
     .name = "ignore-leases",
     GM_OPT_AT(select_opts, ignore_leases),
     .group = "Leases and visibility",
     .help = "Also choose GPUs that a running `gpumon run` holds."},
    {.type = GM_OPT_CALLBACK,
     .name = "lease-dir",
     .arg = "DIR",
     .set = set_lease_dir,
     .complete = "dir",
     .help = "Where leases live (default $" GM_LEASE_DIR_ENV ", else "
             "$XDG_RUNTIME_DIR/gpumon/leases, else /tmp/gpumon-$UID/leases)."},
    {.type = GM_OPT_FLAG,
     .name = "all-devices",
     GM_OPT_AT(select_opts, all_devices),
     .help = "Ignore CUDA_VISIBLE_DEVICES."},
    {0},
};

static const gm_opt select_table[] = {
    {.type = GM_OPT_INCLUDE, .include = choice_table},
    {.type = GM_OPT_CALLBACK,
     .name = "timeout",
     .letter = 't',
     .arg = "S",
     .set = wait_only,
     .flags = GM_OPT_HIDDEN},
    {.type = GM_OPT_CALLBACK,
     .name = "interval",
     .arg = "S",
     .set = wait_only,
     .aliases = "check-interval",
     .flags = GM_OPT_HIDDEN},
    {.type = GM_OPT_CALLBACK,
     .name = "quiet",
     .letter = 'q',
     .set = wait_only,
     .flags = GM_OPT_HIDDEN},
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(select_opts, src)},
    {0},
};

static const gm_opt wait_table[] = {
    {.type = GM_OPT_INCLUDE, .include = choice_table},
    {.type = GM_OPT_DURATION,
     .name = "timeout",
     .letter = 't',
     .arg = "SECONDS",
     GM_OPT_AT(select_opts, timeout_s),
     .min = 0,
     .max = 31536000,
     .group = "Waiting",
     .help = "Give up after SECONDS (default 300; 0: check once)."},
    {.type = GM_OPT_DURATION,
     .name = "interval",
     .arg = "SECONDS",
     GM_OPT_AT(select_opts, interval_s),
     .min = 0.001,
     .max = 86400,
     .aliases = "check-interval",
     .help = "Between checks (default 30; fractions allowed)."},
    {.type = GM_OPT_FLAG,
     .name = "quiet",
     .letter = 'q',
     GM_OPT_AT(select_opts, quiet),
     .help = "No progress line on stderr at each check."},
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(select_opts, src)},
    {0},
};

#define QUALIFIES                                                                        \
    "A GPU qualifies when its memory and utilization are reported, it meets the\n"       \
    "thresholds, it is not lost and no other gpumon process leases it. Ties go to the\n" \
    "lower index. When CUDA_VISIBLE_DEVICES is set, only the GPUs it names are chosen\n" \
    "(indices are NVML's, as nvidia-smi shows them; set CUDA_DEVICE_ORDER=PCI_BUS_ID\n"  \
    "or use --format uuid so CUDA numbers them the same way). The printed indices are\n" \
    "ascending. With --mig the units are MIG devices; --max-util then applies to\n"      \
    "their SM activity where GPM reports it, and a GPU in MIG mode is never handed\n"    \
    "out whole while one of its MIG devices is leased or busy.\n\n"

const gm_opt_command gm_cli_select_command = {
    .name = "select",
    .usage = "select [options]",
    .description = "Ranks the GPUs by availability (0.6 x free memory fraction + 0.4 x idle "
                   "fraction, from a fresh reading) and prints the best --count of them, ready "
                   "for CUDA_VISIBLE_DEVICES: CUDA_VISIBLE_DEVICES=$(gpumon select -n 2) python "
                   "job.py",
    .table = select_table,
    .epilogue = QUALIFIES "Exit status: 0 ok, 2 usage error, 3 no GPU found, 4 not enough GPUs\n"
                          "qualify (stderr says why).\n",
};

const gm_opt_command gm_cli_wait_command = {
    .name = "wait",
    .usage = "wait [options]",
    .description = "Polls the GPUs until --count of them qualify, then prints them like "
                   "`gpumon select`.",
    .table = wait_table,
    .epilogue =
        QUALIFIES "Exit status: 0 ok, 1 more GPUs asked for than are here to choose from, 2 usage\n"
                  "error, 3 no GPU found, 5 timed out (stderr says what was missing), 130\n"
                  "interrupted.\n",
};

static int read_options(int argc, char **argv, select_opts *o)
{
    return gm_cli_parse(o->wait ? &gm_cli_wait_command : &gm_cli_select_command, argc, argv, o,
                        NULL);
}

/* Opens the collector without host metrics (not scored, and the host reader's first sample
 * waits for a CPU window); processes are read, since a process in a MIG device makes it busy.
 * Prints why and returns NULL on failure. */
static gm_collector *open_collector(const select_opts *o, int *exit_code)
{
    gm_collector_options copt;
    *exit_code = GM_EXIT_USAGE;
    if (!gm_cli_collector_options(o->cmd, &o->src, &copt))
        return NULL;
    copt.no_host = true;
    gm_collector *c = gm_cli_collector_open(o->cmd, &copt, exit_code);
    if (c && !gm_cli_require_gpu(o->cmd, c, false)) {
        gm_collector_close(c);
        *exit_code = GM_EXIT_NO_GPU;
        return NULL;
    }
    return c;
}

static void print_verbose(const gm_select_result *r)
{
    if (r->req.mig)
        fprintf(stderr, "%-4s %-5s %-8s %-6s %10s %10s %5s  %s\n", "GPU", "GI/CI", "PROFILE",
                "SCORE", "FREE MiB", "TOTAL MiB", "SM", "STATUS");
    else
        fprintf(stderr, "%-4s %-6s %10s %10s %5s  %s\n", "GPU", "SCORE", "FREE MiB", "TOTAL MiB",
                "UTIL", "STATUS");
    for (unsigned i = 0; i < r->n_gpus; i++) {
        const gm_select_gpu *e = &r->gpus[i];
        char score[16] = "N/A", fr[24] = "N/A", tot[24] = "N/A", ut[16] = "N/A";
        if (e->has_score)
            snprintf(score, sizeof score, "%.3f", e->score);
        if (e->has_free)
            snprintf(fr, sizeof fr, "%.0f", floor(e->free_mib));
        if (e->has_total)
            snprintf(tot, sizeof tot, "%.0f", floor(e->total_mib));
        if (e->has_util)
            snprintf(ut, sizeof ut, "%.0f%%", e->util_pct);
        if (e->mig) {
            char ids[24];
            snprintf(ids, sizeof ids, "%u/%u", e->gpu_instance_id, e->compute_instance_id);
            fprintf(stderr, "%-4u %-5s %-8s ", e->gpu_index, ids, e->profile);
        } else {
            fprintf(stderr, "%-4u ", e->index);
        }
        fprintf(stderr, "%-6s %10s %10s %5s  %s%s%s%s%s%s\n", score, fr, tot, ut,
                gm_select_status_name(e->status), e->reason[0] ? ": " : "", e->reason,
                e->leased && e->status != GM_SEL_LEASED ? " (leased, ignored)" : "",
                e->mig ? " " : "", e->mig ? e->uuid : "");
    }
}

static void print_result(const select_opts *o, const gm_select_result *r)
{
    if (o->format == OUT_JSON) {
        json_t *j = gm_select_result_json(r);
        if (!j)
            return;
        gm_cli_write_json(stdout, j, isatty(STDOUT_FILENO));
        json_decref(j);
    } else if (r->satisfied) {
        if (o->format == OUT_ENV) {
            gm_select_env env;
            gm_select_format_env(r, &env);
            if (env.has_cuda)
                printf("CUDA_VISIBLE_DEVICES=%s\n", env.cuda);
            if (env.has_amd)
                printf("ROCR_VISIBLE_DEVICES=%s\nHIP_VISIBLE_DEVICES=%s\n", env.amd, env.amd);
        } else if (o->format == OUT_LIST) {
            char list[GM_MAX_GPUS * GM_MIG_UUID_LEN];
            gm_select_format_list(r, list, sizeof list);
            printf("%s\n", list);
        } else {
            for (unsigned i = 0; i < r->n_selected; i++)
                for (unsigned k = 0; k < r->n_gpus; k++)
                    if (r->gpus[k].index == r->selected[i])
                        printf("%s%s", i ? "," : "", r->gpus[k].uuid);
            printf("\n");
        }
    }
    fflush(stdout);
}

/* A line on stderr at each check that is not met: how long so far and what is missing; with
 * -v, every check's whole explanation instead. */
static void on_progress(const gm_select_result *r, unsigned check, void *ud)
{
    const select_opts *o = ud;
    char why[1024];
    if (o->quiet)
        return;
    if (o->verbose) {
        gm_select_explain(r, why, sizeof why);
        fprintf(stderr, "gpumon wait: check %u: %s\n", check, why);
        return;
    }
    if (r->satisfied || o->timeout_s == 0)
        return;
    char waited[32];
    gm_cli_format_seconds(gm_clock_mono_s() - o->started_s, waited, sizeof waited);
    gm_select_shortfall(r, why, sizeof why);
    fprintf(stderr, "gpumon wait: waiting %s of %g s: %s\n", waited, o->timeout_s, why);
}

/* select: the reading s ranked once and printed; the exit status. */
static int run_select(const select_opts *o, const char *lease_dir, const gm_snapshot *s,
                      const gm_select_request *req, gm_select_result *res)
{
    gm_error err = {0};
    gm_lease_holder holders[GM_MAX_GPUS];
    if (o->mig)
        gm_lease_list_mig(lease_dir, s, holders, NULL);
    else
        gm_lease_list(lease_dir, s, holders, NULL);
    if (gm_select(s, req, holders, res, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o->cmd, err.msg);
        return GM_EXIT_USAGE;
    }
    if (o->verbose)
        print_verbose(res);
    print_result(o, res);
    if (!res->satisfied) {
        char why[2048];
        gm_select_explain(res, why, sizeof why);
        fprintf(stderr, "gpumon select: not enough %s: %s\n", o->mig ? "MIG devices" : "GPUs", why);
        return GM_EXIT_NOT_ENOUGH;
    }
    return GM_EXIT_OK;
}

/* wait: readings until the request is met, the timeout passes or a signal ends it; the exit
 * status. */
static int run_wait(select_opts *o, gm_collector *c, const char *lease_dir, gm_snapshot *s,
                    const gm_select_request *req, gm_select_result *res)
{
    gm_error err = {0};
    o->started_s = gm_clock_mono_s();
    gm_wait_options wo = {
        .timeout_s = o->timeout_s,
        .interval_s = o->interval_s,
        .cancel = &got_signal,
        .lease_dir = lease_dir,
        .progress = on_progress,
        .progress_ud = o,
    };
    int wrc = gm_wait_for(c, req, &wo, s, res, NULL, &err);
    if (wrc == GM_ECANCELED && got_signal) {
        fprintf(stderr, "gpumon wait: interrupted\n");
        return 128 + got_signal;
    }
    if (wrc == GM_OK || wrc == GM_ETIMEDOUT) {
        if (o->verbose)
            print_verbose(res);
        print_result(o, res);
    }
    if (wrc == GM_OK)
        return GM_EXIT_OK;
    fprintf(stderr, "gpumon wait: %s\n", err.msg);
    return wrc == GM_ETIMEDOUT ? GM_EXIT_TIMEOUT
           : wrc == GM_EINVAL  ? GM_EXIT_USAGE
                               : GM_EXIT_FAILURE;
}

int gm_cli_select_run(const char *cmd, int argc, char **argv)
{
    select_opts o = {.cmd = cmd, .wait = strcmp(cmd, "wait") == 0, .count = 1};
    o.timeout_s = 300;
    o.interval_s = 30;
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
        return rc;

    char lease_dir[4096];
    gm_error err = {0};
    if (o.lease_dir)
        snprintf(lease_dir, sizeof lease_dir, "%s", o.lease_dir);
    else if (gm_lease_default_dir(lease_dir, sizeof lease_dir, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        return GM_EXIT_USAGE;
    }

    gm_collector *c = open_collector(&o, &rc);
    if (!c)
        return rc;
    gm_snapshot *s = gm_snapshot_new();
    gm_select_result *res = calloc(1, sizeof *res);
    if (!s || !res) {
        fprintf(stderr, "gpumon %s: out of memory\n", cmd);
        rc = GM_EXIT_FAILURE;
        goto out;
    }
    if (o.wait) {
        /* Caught, not fatal: the wait ends promptly and says so; no SA_RESTART. */
        struct sigaction sa = {.sa_handler = on_signal};
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }

    /* The first reading resolves -i (UUIDs and bus ids need the GPUs) and is select's answer. */
    if (gm_collector_sample(c, s, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        rc = GM_EXIT_NO_GPU;
        goto out;
    }
    unsigned only[GM_MAX_GPUS]; /* the GPUs -i names, as driver indices */
    size_t n_only = 0;
    if (o.filter_given && !gm_cli_gpu_filter_resolve(cmd, &o.filter, s, only, &n_only)) {
        rc = GM_EXIT_USAGE;
        goto out;
    }
    gm_select_request req = {
        .count = o.count,
        .min_free_mib = o.min_free_mib,
        .has_max_util = o.has_max_util,
        .max_util_pct = o.max_util,
        .only = o.filter_given ? only : NULL,
        .n_only = n_only,
        .visible = o.all_devices ? NULL : getenv("CUDA_VISIBLE_DEVICES"),
        .ignore_leases = o.ignore_leases,
        .mig = o.mig,
    };
    if (o.mig && gm_lease_mig_count(s) == 0) {
        fprintf(stderr, "gpumon %s: no GPU is in MIG mode, so there is no MIG device to hand out\n",
                cmd);
        rc = GM_EXIT_NO_GPU;
        goto out;
    }

    if (o.wait)
        rc = run_wait(&o, c, lease_dir, s, &req, res);
    else
        rc = run_select(&o, lease_dir, s, &req, res);
out:
    free(res);
    gm_snapshot_free(s);
    gm_collector_close(c);
    return rc;
}

int gm_cli_select(int argc, char **argv)
{
    return gm_cli_select_run("select", argc, argv);
}
