/* cmd_select.c - `gpumon select` (rank GPUs by availability, print the best N) and the engine
 * `gpumon wait` shares with it (same options and output, plus polling). */
#include <getopt.h>
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

static void usage(FILE *out, bool wait)
{
    if (wait)
        fprintf(out, "usage: gpumon wait [options]\n\n"
                     "Polls the GPUs until --count of them qualify, then prints them like "
                     "`gpumon select`.\n\n");
    else
        fprintf(out, "usage: gpumon select [options]\n\n"
                     "Ranks the GPUs by availability (0.6 x free memory fraction + 0.4 x idle "
                     "fraction,\nfrom a fresh reading) and prints the best --count of them, "
                     "ready for\nCUDA_VISIBLE_DEVICES: CUDA_VISIBLE_DEVICES=$(gpumon select -n 2) "
                     "python job.py\n\n");
    fprintf(out,
            "Options:\n"
            "  -n, --count N           GPUs wanted (default 1)\n"
            "  -m, --min-free-mb MIB   only GPUs with at least MIB MiB of free memory\n"
            "  -u, --max-util PCT      only GPUs at most PCT %% busy (utilization.gpu)\n"
            "  -i, --id LIST           choose only among these GPUs: indices, UUIDs or PCI bus "
            "ids\n");
    if (wait)
        fprintf(out, "  -t, --timeout SECONDS   give up after SECONDS (default 300; 0: check "
                     "once)\n"
                     "      --interval SECONDS  between checks (default 30; fractions allowed;\n"
                     "                          --check-interval, as in gpumon run, also works)\n"
                     "  -q, --quiet             no progress line on stderr at each check\n");
    fprintf(out,
            "      --format FMT        list (default, \"0,3\"), uuid (\"GPU-...,GPU-...\"), "
            "json,\n"
            "                          or env (CUDA_VISIBLE_DEVICES=..., and for AMD GPUs\n"
            "                          ROCR_VISIBLE_DEVICES=... HIP_VISIBLE_DEVICES=..., one a "
            "line)\n"
            "      --ignore-leases     also choose GPUs that a running `gpumon run` holds\n"
            "      --lease-dir DIR     where leases live (default $%s, else\n"
            "                          $XDG_RUNTIME_DIR/gpumon/leases, else "
            "/tmp/gpumon-$UID/leases)\n"
            "      --all-devices       ignore CUDA_VISIBLE_DEVICES\n"
            "  -v, --verbose           explain every GPU's score and status on stderr\n"
            "      --provider NAME     nvml, nvidia-smi, sim or auto (default: auto)\n"
            "      --simulate N        use N simulated GPUs\n"
            "      --seed N            seed of the simulated GPUs' dynamics\n"
            "  -h, --help              show this help\n\n"
            "A GPU qualifies when its memory and utilization are reported, it meets the "
            "thresholds,\nit is not lost and no other gpumon process leases it. Ties go to the "
            "lower index.\nWhen CUDA_VISIBLE_DEVICES is set, only the GPUs it names are "
            "chosen (indices are\nNVML's, as nvidia-smi shows them; set "
            "CUDA_DEVICE_ORDER=PCI_BUS_ID or use --format uuid\nso CUDA numbers them the "
            "same way). The printed indices are ascending.\n\n",
            GM_LEASE_DIR_ENV);
    if (wait)
        fprintf(out, "Exit status: 0 ok, 1 more GPUs asked for than are here to choose from, 2 "
                     "usage error,\n3 no GPU found, 5 timed out (stderr says what was missing), "
                     "130 interrupted.\n");
    else
        fprintf(out, "Exit status: 0 ok, 2 usage error, 3 no GPU found, 4 not enough GPUs "
                     "qualify (stderr\nsays why).\n");
}

/* A number option in [min, max]; false (message printed) when it is not. */
static bool parse_number(const select_opts *o, const char *flag, const char *arg, double min,
                         double max, double *out)
{
    return gm_cli_parse_double(o->cmd, flag, "a number", arg, min, max, out);
}

static int parse_args(int argc, char **argv, select_opts *o)
{
    enum { OPT_FORMAT = 256, OPT_INTERVAL, OPT_IGNORE_LEASES, OPT_LEASE_DIR, OPT_ALL_DEVICES };
    /* One table for both commands: wait's own options are refused by select below. */
    static const struct option longopts[] = {
        {"count", required_argument, NULL, 'n'},
        {"min-free-mb", required_argument, NULL, 'm'},
        {"max-util", required_argument, NULL, 'u'},
        {"id", required_argument, NULL, 'i'},
        {"timeout", required_argument, NULL, 't'},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"check-interval", required_argument, NULL, OPT_INTERVAL},
        {"quiet", no_argument, NULL, 'q'},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"ignore-leases", no_argument, NULL, OPT_IGNORE_LEASES},
        {"lease-dir", required_argument, NULL, OPT_LEASE_DIR},
        {"all-devices", no_argument, NULL, OPT_ALL_DEVICES},
        {"verbose", no_argument, NULL, 'v'},
        GM_CLI_SOURCE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *shortopts = o->wait ? ":n:m:u:i:t:qvh" : ":n:m:u:i:vh";
    unsigned long long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (!o->wait && (c == 't' || c == OPT_INTERVAL || c == 'q')) {
            fprintf(stderr, "gpumon select: %s belongs to `gpumon wait`\n", argv[optind - 1]);
            return GM_EXIT_USAGE;
        }
        switch (c) {
        case 'n':
            if (!gm_cli_parse_uint(o->cmd, "--count", optarg, 1, GM_MAX_GPUS, &v))
                return GM_EXIT_USAGE;
            o->count = (unsigned)v;
            break;
        case 'm':
            if (!parse_number(o, "--min-free-mb", optarg, 0, 1e12, &o->min_free_mib))
                return GM_EXIT_USAGE;
            break;
        case 'u':
            if (!parse_number(o, "--max-util", optarg, 0, 100, &o->max_util))
                return GM_EXIT_USAGE;
            o->has_max_util = true;
            break;
        case 'i':
            if (!gm_cli_parse_gpu_filter(o->cmd, optarg, &o->filter))
                return GM_EXIT_USAGE;
            o->filter_given = true;
            break;
        case 't':
            if (!gm_cli_parse_duration(o->cmd, "--timeout", optarg, 0, 31536000, &o->timeout_s))
                return GM_EXIT_USAGE;
            break;
        case OPT_INTERVAL:
            if (!gm_cli_parse_duration(o->cmd, "--interval", optarg, 0.001, 86400, &o->interval_s))
                return GM_EXIT_USAGE;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "list") == 0)
                o->format = OUT_LIST;
            else if (strcmp(optarg, "uuid") == 0)
                o->format = OUT_UUID;
            else if (strcmp(optarg, "json") == 0)
                o->format = OUT_JSON;
            else if (strcmp(optarg, "env") == 0)
                o->format = OUT_ENV;
            else {
                fprintf(stderr,
                        "gpumon %s: invalid --format \"%s\" (expected list, uuid, json or env)\n",
                        o->cmd, optarg);
                return GM_EXIT_USAGE;
            }
            break;
        case OPT_IGNORE_LEASES:
            o->ignore_leases = true;
            break;
        case OPT_LEASE_DIR:
            if (!*optarg) {
                fprintf(stderr, "gpumon %s: --lease-dir needs a directory\n", o->cmd);
                return GM_EXIT_USAGE;
            }
            o->lease_dir = optarg;
            break;
        case OPT_ALL_DEVICES:
            o->all_devices = true;
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            usage(stdout, o->wait);
            return GM_EXIT_OK;
        default:
            if (!gm_cli_default_option(o->cmd, c, argv, longopts, &o->src))
                return GM_EXIT_USAGE;
            break;
        }
    }
    return gm_cli_no_operands(o->cmd, argc, argv) ? -1 : GM_EXIT_USAGE;
}

/* Opens the collector without host metrics or process lists (neither is scored, and the host
 * reader's first sample waits for a CPU window). Prints why and returns NULL on failure. */
static gm_collector *open_collector(const select_opts *o, int *exit_code)
{
    gm_collector_options copt;
    *exit_code = GM_EXIT_USAGE;
    if (!gm_cli_collector_options(o->cmd, &o->src, &copt))
        return NULL;
    copt.no_host = true;
    copt.no_processes = true;
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
        fprintf(stderr, "%-4u %-6s %10s %10s %5s  %s%s%s%s\n", e->index, score, fr, tot, ut,
                gm_select_status_name(e->status), e->reason[0] ? ": " : "", e->reason,
                e->leased && e->status != GM_SEL_LEASED ? " (leased, ignored)" : "");
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
            char list[GM_MAX_GPUS * 4 + 1];
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

int gm_cli_select_run(const char *cmd, int argc, char **argv)
{
    select_opts o = {.cmd = cmd, .wait = strcmp(cmd, "wait") == 0, .count = 1};
    o.timeout_s = 300;
    o.interval_s = 30;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
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
    };

    if (!o.wait) {
        gm_lease_holder holders[GM_MAX_GPUS];
        gm_lease_list(lease_dir, s, holders, NULL);
        if (gm_select(s, &req, holders, res, &err) < 0) {
            fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
            rc = GM_EXIT_USAGE;
            goto out;
        }
        if (o.verbose)
            print_verbose(res);
        print_result(&o, res);
        if (!res->satisfied) {
            char why[2048];
            gm_select_explain(res, why, sizeof why);
            fprintf(stderr, "gpumon select: not enough GPUs: %s\n", why);
            rc = GM_EXIT_NOT_ENOUGH;
        } else {
            rc = GM_EXIT_OK;
        }
        goto out;
    }

    o.started_s = gm_clock_mono_s();
    gm_wait_options wo = {
        .timeout_s = o.timeout_s,
        .interval_s = o.interval_s,
        .cancel = &got_signal,
        .lease_dir = lease_dir,
        .progress = on_progress,
        .progress_ud = &o,
    };
    int wrc = gm_wait_for(c, &req, &wo, s, res, NULL, &err);
    if (wrc == GM_ECANCELED && got_signal) {
        fprintf(stderr, "gpumon wait: interrupted\n");
        rc = 128 + got_signal;
        goto out;
    }
    if (wrc == GM_OK || wrc == GM_ETIMEDOUT) {
        if (o.verbose)
            print_verbose(res);
        print_result(&o, res);
    }
    if (wrc == GM_OK) {
        rc = GM_EXIT_OK;
    } else {
        fprintf(stderr, "gpumon wait: %s\n", err.msg);
        rc = wrc == GM_ETIMEDOUT ? GM_EXIT_TIMEOUT
             : wrc == GM_EINVAL  ? GM_EXIT_USAGE
                                 : GM_EXIT_FAILURE;
    }
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
