/* lease.c - estimate, wait and lease for work gpumon starts itself (lease.h). */
#include "cli/lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/parse.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/estimate.h"
#include "base/error.h"

void gm_cli_lease_defaults(gm_cli_lease_opts *o)
{
    memset(o, 0, sizeof *o);
    o->wait_s = 300;
    o->check_s = 30;
}

/* value as a number in [min, max] (what: "a number"), with the message gm_cli_parse_double
 * prints. */
static int set_number(const char *flag, const char *what, const char *value, double min, double max,
                      double *out, gm_error *err)
{
    if (gm_parse_number(value, min, max, out) == GM_OK)
        return GM_OK;
    return gm_error_set(err, GM_EINVAL, "%s expects %s from %.15g to %.15g, got \"%s\"", flag, what,
                        min, max, value ? value : "");
}

/* The row as a typed one named name (-c is --count in messages), set as the parser would. */
static int set_typed(gm_cli_lease_opts *o, gm_opt_type type, const char *name, size_t offset,
                     size_t size, double min, double max, const char *value, gm_error *err)
{
    const gm_opt typed = {
        .type = type, .name = name, .offset = offset, .size = size, .min = min, .max = max};
    return gm_opt_set_row(&typed, o, value, err);
}

int gm_cli_set_lease(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    gm_cli_lease_opts *o = (gm_cli_lease_opts *)((char *)base + row->offset);
    int rc = GM_OK;
    switch (row->code) {
    case GM_CLI_OPT_TASK:
        o->task = value;
        break;
    case GM_CLI_OPT_COUNT:
        rc = set_typed(o, GM_OPT_UINT, "count", offsetof(gm_cli_lease_opts, count), sizeof o->count,
                       1, GM_MAX_GPUS, value, err);
        break;
    case GM_CLI_OPT_MIN_FREE:
        rc = set_number("--min-free-mb", "a number", value, 0, 1e9, &o->min_free_mib, err);
        o->min_free_given = rc == GM_OK;
        break;
    case GM_CLI_OPT_MAX_UTIL:
        rc = set_number("--max-util", "a utilization in %", value, 0, 100, &o->max_util, err);
        o->has_max_util = rc == GM_OK;
        break;
    case GM_CLI_OPT_WAIT:
        rc = set_typed(o, GM_OPT_DURATION, "wait", offsetof(gm_cli_lease_opts, wait_s),
                       sizeof o->wait_s, 0, 7 * 86400.0, value, err);
        break;
    case GM_CLI_OPT_CHECK:
        rc = set_typed(o, GM_OPT_DURATION, "check-interval", offsetof(gm_cli_lease_opts, check_s),
                       sizeof o->check_s, 0.05, 3600, value, err);
        break;
    case GM_CLI_OPT_LEASE_DIR:
        o->lease_dir = value;
        break;
    case GM_CLI_OPT_ALL_DEVICES:
        o->all_devices = true;
        break;
    case GM_CLI_OPT_MIG:
        o->mig = true;
        break;
    default:
        return gm_error_set(err, GM_EINVAL, "--%s is not a lease option", row->name);
    }
    if (rc == GM_OK)
        o->given = true;
    return rc;
}

typedef struct progress_ctx {
    const char *cmd;
    double wait_s;
    bool quiet;
    double started_s; /* when the wait began (monotonic) */
} progress_ctx;

/* A line on stderr at each check that is not met: how long so far, and what is missing. */
static void on_progress(const gm_select_result *r, unsigned check, void *ud)
{
    const progress_ctx *p = ud;
    (void)check;
    if (p->quiet || r->satisfied || p->wait_s == 0)
        return;
    char why[512], waited[32];
    gm_cli_format_seconds(gm_clock_mono_s() - p->started_s, waited, sizeof waited);
    gm_select_shortfall(r, why, sizeof why);
    fprintf(stderr, "gpumon %s: waiting %s of %g s: %s\n", p->cmd, waited, p->wait_s, why);
}

int gm_cli_lease_gpus(const char *cmd, const gm_cli_lease_opts *o, gm_collector *c,
                      const unsigned *only, size_t n_only, const volatile sig_atomic_t *stop,
                      bool quiet, gm_select_result *res, gm_lease **lease, json_t *attach)
{
    gm_error err = {0};
    *lease = NULL;
    if (o->task && o->count) {
        fprintf(stderr, "gpumon %s: --task and --count both say how many GPUs; give one\n", cmd);
        return GM_EXIT_USAGE;
    }
    unsigned count = o->count ? o->count : n_only ? (unsigned)n_only : 1;
    double min_free = o->min_free_mib;
    if (o->task) {
        gm_estimate est;
        if (gm_estimate_task_file(o->task, &est, &err) < 0) {
            fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
            return GM_EXIT_USAGE;
        }
        if (est.gpus > GM_MAX_GPUS) {
            fprintf(stderr, "gpumon %s: %s needs %llu GPUs; at most %d can be chosen\n", cmd,
                    o->task, (unsigned long long)est.gpus, GM_MAX_GPUS);
            return GM_EXIT_NOT_ENOUGH;
        }
        count = (unsigned)est.gpus;
        if (!o->min_free_given)
            min_free = est.memory_mib;
        if (attach)
            json_object_set_new(attach, "estimate", gm_estimate_json(&est));
    }
    char dir[4096];
    if (o->lease_dir)
        snprintf(dir, sizeof dir, "%s", o->lease_dir);
    else if (gm_lease_default_dir(dir, sizeof dir, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        return GM_EXIT_FAILURE;
    }
    gm_snapshot *snap = gm_snapshot_new();
    if (!snap) {
        fprintf(stderr, "gpumon %s: out of memory\n", cmd);
        return GM_EXIT_FAILURE;
    }
    gm_select_request req = {
        .count = count,
        .min_free_mib = min_free,
        .has_max_util = o->has_max_util,
        .max_util_pct = o->max_util,
        .only = only,
        .n_only = n_only,
        .visible = o->all_devices ? NULL : getenv("CUDA_VISIBLE_DEVICES"),
        .mig = o->mig,
    };
    progress_ctx pc = {
        .cmd = cmd, .wait_s = o->wait_s, .quiet = quiet, .started_s = gm_clock_mono_s()};
    gm_wait_options wo = {
        .timeout_s = o->wait_s,
        .interval_s = o->check_s,
        .cancel = stop,
        .lease_dir = dir,
        .take_lease = true,
        .progress = on_progress,
        .progress_ud = &pc,
    };
    int wrc = gm_wait_for(c, &req, &wo, snap, res, lease, &err);
    gm_snapshot_free(snap);
    if (wrc < 0) {
        if (wrc == GM_ECANCELED && stop && *stop) {
            fprintf(stderr, "gpumon %s: interrupted while waiting for GPUs\n", cmd);
            return -1;
        }
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        return wrc == GM_ETIMEDOUT ? GM_EXIT_TIMEOUT
               : wrc == GM_EINVAL  ? GM_EXIT_USAGE
                                   : GM_EXIT_FAILURE;
    }
    char list[GM_MAX_GPUS * GM_MIG_UUID_LEN];
    gm_select_format_list(res, list, sizeof list);
    if (attach) {
        json_t *uuids = json_array();
        for (size_t i = 0; i < gm_lease_count(*lease); i++)
            json_array_append_new(uuids, json_string(gm_lease_uuid(*lease, i)));
        json_object_set_new(attach, "selection", gm_select_result_json(res));
        json_object_set_new(
            attach, "lease",
            json_pack("{s:s, s:s, s:o}", "dir", dir, "indices", list, "uuids", uuids));
    }
    return GM_EXIT_OK;
}
