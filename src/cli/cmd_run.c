/* cmd_run.c - `gpumon run`: estimate what a task needs, wait for that many GPUs and lease them,
 * then record the command on them with CUDA_VISIBLE_DEVICES pointing at exactly those GPUs. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/container.h"
#include "cli/record.h"
#include "core/estimate.h"
#include "core/lease.h"
#include "core/select.h"
#include "core/session.h"

typedef struct run_opts {
    const char *task;
    unsigned count;
    bool count_given;
    double min_free_mib;
    bool min_free_given;
    bool has_max_util;
    double max_util;
    double wait_s;
    double check_s;
    double interval_s; /* the sampling interval (0: record's default) */
    const char *output;
    const char *label;
    const char *db;
    bool no_db;
    bool quiet;
    bool snapshot;
    unsigned snapshot_window_ms;
    bool snapshot_window_set;
    const char *lease_dir;
    bool all_devices;
    gm_cli_source src;
    char **command;
    int ncommand;
    gm_cli_ctr_opts ctr; /* --image: COMMAND runs in a container of this image */
    double started_s;    /* when the wait for GPUs began (monotonic) */
} run_opts;

static volatile sig_atomic_t cancelled;

static void on_signal(int sig)
{
    cancelled = sig;
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpumon run [--task TASK.json | --count N] [options] -- COMMAND [ARGS...]\n"
        "       gpumon run [--task TASK.json | --count N] [options] --image IMAGE [-- ARGS...]\n\n"
        "Finds GPUs for COMMAND, waits until they are free, leases them so that no other\n"
        "`gpumon run` takes them, and runs COMMAND on them as `gpumon record` does (signals\n"
        "forwarded, exit status passed through, the session stored as a \"run\"). The lease\n"
        "ends when COMMAND exits (or gpumon dies).\n\n"
        "Options:\n"
        "      --task FILE        estimate GPUs and memory per GPU from a task config\n"
        "                         (tp x pp x max(dp, cp, dcp); see gpumon estimate)\n"
        "  -n, --count N          GPUs wanted (default 1; not with --task; -c also works)\n"
        "  -m, --min-free-mb MIB  free memory each GPU needs (overrides the task's estimate)\n"
        "  -u, --max-util PCT     only GPUs at most PCT %% busy\n"
        "  -w, --wait SECONDS     wait at most this long for the GPUs (default 300; 0: check\n"
        "                         once)\n"
        "      --check-interval S between availability checks while waiting (default 30)\n"
        "      --interval S       sampling interval while COMMAND runs (default 1)\n"
        "  -o, --output FILE      write the session JSON (with timeline) to FILE\n"
        "      --label TEXT       label of the stored run\n"
        "      --snapshot         system snapshots before and after, with their diff\n"
        "      --snapshot-window-ms MS  power window of each snapshot\n"
        "      --db PATH, --no-db where to store the run (see gpumon record)\n"
        "      --lease-dir DIR    where leases live (default $%s, else\n"
        "                         $XDG_RUNTIME_DIR/gpumon/leases, else /tmp/gpumon-$UID/leases)\n"
        "      --all-devices      ignore the caller's CUDA_VISIBLE_DEVICES when choosing\n"
        "  -q, --quiet            no progress (while waiting, too) or summary on stderr\n"
        "      --provider NAME, --simulate N, --seed N   as for gpumon query\n"
        "  -h, --help             show this help\n\n"
        "In a container, through the Docker Engine API ($DOCKER_HOST=unix://PATH, else\n"
        "/var/run/docker.sock):\n"
        "      --image IMAGE      run IMAGE on the leased GPUs, given to it as\n"
        "                         HostConfig.DeviceRequests by UUID (no CUDA_VISIBLE_DEVICES);\n"
        "                         COMMAND, if any, follows its entrypoint. Its output is shown,\n"
        "                         its exit status passed through, and it is removed at the end\n"
        "      --env K=V, --env NAME  set a variable in it (repeatable; NAME alone passes\n"
        "                         gpumon's own value, never printed)\n"
        "      --volume HOST:CONTAINER[:ro], --shm-size SIZE   as docker run -v, --shm-size\n"
        "      --container-port P publish port P on a free port of 127.0.0.1\n"
        "      --keep-container   leave it (stopped) instead of removing it\n"
        "      --pull             pull IMAGE when it is not here\n"
        "The container is named gpumon-<session id>, labelled gpumon.owner and gpumon.run\n"
        "(gpumon containers list|cleanup).\n\n"
        "COMMAND gets CUDA_VISIBLE_DEVICES set to the chosen driver indices (\"0,3\", as\n"
        "nvidia-smi numbers GPUs) and CUDA_DEVICE_ORDER=PCI_BUS_ID. The second is needed\n"
        "because CUDA numbers devices fastest-first by default, which differs from the\n"
        "driver's PCI bus order on hosts mixing GPU models; with PCI_BUS_ID both agree, so\n"
        "the indices name the leased GPUs and no others.\n\n"
        "Exit status: COMMAND's; 2 usage error; 3 no GPU found; 5 the GPUs did not become\n"
        "free in time; 127 COMMAND cannot be run; 128+N interrupted by signal N while\n"
        "waiting.\n",
        GM_LEASE_DIR_ENV);
}

/* A number option of `gpumon run` in [min, max]; false (message printed) when it is not. */
static bool parse_number(const char *flag, const char *arg, double min, double max, double *out)
{
    return gm_cli_parse_double("run", flag, "a number", arg, min, max, out);
}

static int parse_args(int argc, char **argv, run_opts *o)
{
    enum {
        OPT_TASK = 256,
        OPT_CHECK,
        OPT_SNAPSHOT,
        OPT_WINDOW,
        OPT_DB,
        OPT_NODB,
        OPT_LEASE_DIR,
        OPT_ALL,
        OPT_INTERVAL,
        OPT_LABEL
    };
    static const struct option longopts[] = {
        {"task", required_argument, NULL, OPT_TASK},
        {"count", required_argument, NULL, 'n'},
        {"min-free-mb", required_argument, NULL, 'm'},
        {"max-util", required_argument, NULL, 'u'},
        {"wait", required_argument, NULL, 'w'},
        {"check-interval", required_argument, NULL, OPT_CHECK},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"output", required_argument, NULL, 'o'},
        {"label", required_argument, NULL, OPT_LABEL},
        {"snapshot", no_argument, NULL, OPT_SNAPSHOT},
        {"snapshot-window-ms", required_argument, NULL, OPT_WINDOW},
        {"db", required_argument, NULL, OPT_DB},
        {"no-db", no_argument, NULL, OPT_NODB},
        {"lease-dir", required_argument, NULL, OPT_LEASE_DIR},
        {"all-devices", no_argument, NULL, OPT_ALL},
        {"quiet", no_argument, NULL, 'q'},
        GM_CLI_SOURCE_LONGOPTS,
        GM_CLI_CTR_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:n:c:m:u:w:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_TASK:
            o->task = optarg;
            break;
        case 'n':
        case 'c': /* run's letter for --count before -n meant it in every command */
            if (!gm_cli_parse_uint("run", "--count", optarg, 1, GM_MAX_GPUS, &v))
                return GM_EXIT_USAGE;
            o->count = (unsigned)v;
            o->count_given = true;
            break;
        case 'm':
            if (!parse_number("--min-free-mb", optarg, 0, 1e9, &o->min_free_mib))
                return GM_EXIT_USAGE;
            o->min_free_given = true;
            break;
        case 'u':
            if (!parse_number("--max-util", optarg, 0, 100, &o->max_util))
                return GM_EXIT_USAGE;
            o->has_max_util = true;
            break;
        case 'w':
            if (!gm_cli_parse_duration("run", "--wait", optarg, 0, 7 * 86400.0, &o->wait_s))
                return GM_EXIT_USAGE;
            break;
        case OPT_CHECK:
            if (!gm_cli_parse_duration("run", "--check-interval", optarg, 0.05, 3600, &o->check_s))
                return GM_EXIT_USAGE;
            break;
        case OPT_INTERVAL:
            if (!gm_cli_parse_duration("run", "--interval", optarg, 0.01, 3600, &o->interval_s))
                return GM_EXIT_USAGE;
            break;
        case 'o':
            o->output = optarg;
            break;
        case OPT_LABEL:
            o->label = optarg;
            break;
        case OPT_SNAPSHOT:
            o->snapshot = true;
            break;
        case OPT_WINDOW:
            if (!gm_cli_parse_uint("run", "--snapshot-window-ms", optarg, 0, 60000, &v))
                return GM_EXIT_USAGE;
            o->snapshot_window_ms = (unsigned)v;
            o->snapshot_window_set = true;
            break;
        case OPT_DB:
            o->db = optarg;
            break;
        case OPT_NODB:
            o->no_db = true;
            break;
        case OPT_LEASE_DIR:
            o->lease_dir = optarg;
            break;
        case OPT_ALL:
            o->all_devices = true;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            usage(stdout);
            return GM_EXIT_OK;
        default: {
            int taken = gm_cli_ctr_option("run", c, optarg, &o->ctr);
            if (taken < 0 ||
                (taken == 0 && !gm_cli_default_option("run", c, argv, longopts, &o->src)))
                return GM_EXIT_USAGE;
            break;
        }
        }
    }
    if (!gm_cli_ctr_validate("run", &o->ctr, false))
        return GM_EXIT_USAGE;
    if (o->task && o->count_given) {
        fprintf(stderr, "gpumon run: --task and --count both say how many GPUs; give one\n");
        return GM_EXIT_USAGE;
    }
    if (optind >= argc && !o->ctr.image) {
        fprintf(stderr, "gpumon run: no command to run (usage: gpumon run [options] -- COMMAND)\n");
        return GM_EXIT_USAGE;
    }
    o->command = argv + optind;
    o->ncommand = argc - optind;
    return -1;
}

/* A line on stderr at each check that is not met: how long so far, and what is missing. */
static void on_progress(const gm_select_result *r, unsigned check, void *ud)
{
    const run_opts *o = ud;
    if (o->quiet || r->satisfied || o->wait_s == 0)
        return;
    char why[512], waited[32];
    gm_cli_format_seconds(gm_clock_mono_s() - o->started_s, waited, sizeof waited);
    gm_select_shortfall(r, why, sizeof why);
    fprintf(stderr, "gpumon run: waiting %s of %g s: %s\n", waited, o->wait_s, why);
}

/* The record options for the run options and the leased GPUs (list: "0,3"). False (message
 * printed) when the list cannot be read back, which would be a bug. */
static bool record_opts_of(const run_opts *o, const char *list, gm_cli_record_opts *r)
{
    *r = (gm_cli_record_opts){.name = "run",
                              .interval_s = o->interval_s,
                              .output = o->output,
                              .label = o->label,
                              .db = o->db,
                              .no_db = o->no_db,
                              .quiet = o->quiet,
                              .snapshot = o->snapshot,
                              .snapshot_window_ms = o->snapshot_window_ms,
                              .snapshot_window_set = o->snapshot_window_set,
                              .src = o->src,
                              .command = o->command};
    r->have_filter = gm_cli_parse_gpu_filter("run", list, &r->filter);
    return r->have_filter;
}

/* ---- --image ---------------------------------------------------------------------------- */

/* The engine and the image, before any wait for GPUs (a missing image fails at once). NULL
 * with *rc set when they are not there. */
static gm_cli_ctr *image_prepare(run_opts *o, int *rc)
{
    gm_cli_ctr *ctr = gm_cli_ctr_open("run", &o->ctr, o->quiet, rc);
    if (!ctr)
        return NULL;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    *rc = gm_cli_ctr_image(ctr, &cancelled);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (*rc != GM_EXIT_OK || cancelled) {
        if (*rc < 0 || cancelled)
            *rc = 128 + (int)(cancelled ? cancelled : SIGINT);
        gm_cli_ctr_close(ctr);
        return NULL;
    }
    /* Its end is the experiment's end, not an early exit to report. */
    gm_cli_ctr_expect_exit(ctr);
    return ctr;
}

/* Starts the container on the leased GPUs and records it as `gpumon record` records a
 * command: the command recorded is `gpumon containers follow NAME`, which shows the
 * container's output, turns SIGINT and SIGTERM into its stop and exits with its status. */
static int run_image(run_opts *o, gm_cli_ctr *ctr, const gm_lease *lease, const char *list,
                     json_t *attach)
{
    char id[GM_SESSION_ID_LEN];
    gm_session_make_id(id, sizeof id, gm_clock_wall_ms());
    size_t n = gm_lease_count(lease);
    char ids[GM_MAX_GPUS][GM_UUID_LEN];
    const char *idp[GM_MAX_GPUS];
    unsigned idx[GM_MAX_GPUS];
    gm_lease_indices(lease, idx, GM_MAX_GPUS);
    for (size_t i = 0; i < n && i < GM_MAX_GPUS; i++) {
        const char *u = gm_lease_uuid(lease, i);
        if (u && *u)
            snprintf(ids[i], sizeof ids[i], "%s", u);
        else
            snprintf(ids[i], sizeof ids[i], "%u", idx[i]);
        idp[i] = ids[i];
    }
    /* A signal while the container is made is held until it exists, then removes it. */
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = gm_cli_ctr_start(ctr, id, o->command, (size_t)o->ncommand, idp, n, o->ctr.port_given);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc != GM_EXIT_OK) {
        json_decref(attach);
        return rc;
    }
    if (cancelled) {
        json_decref(attach);
        return 128 + (int)cancelled;
    }
    json_object_set_new(attach, "container", gm_cli_ctr_json(ctr));
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "gpumon run: cannot find gpumon's own program (/proc/self/exe)\n");
        json_decref(attach);
        return GM_EXIT_FAILURE;
    }
    self[len] = '\0';
    char cmd_containers[] = "containers", cmd_follow[] = "follow",
         *name = (char *)gm_cli_ctr_name(ctr);
    char *follow[] = {self, cmd_containers, cmd_follow, name, NULL};
    /* The session names the image and its arguments as its command. */
    char **shown = calloc((size_t)o->ncommand + 2, sizeof *shown);
    if (!shown) {
        json_decref(attach);
        return GM_EXIT_FAILURE;
    }
    shown[0] = (char *)o->ctr.image;
    for (int i = 0; i < o->ncommand; i++)
        shown[i + 1] = o->command[i];
    gm_cli_record_opts ro;
    if (!record_opts_of(o, list, &ro)) {
        free(shown);
        json_decref(attach);
        return GM_EXIT_FAILURE;
    }
    ro.command = follow;
    ro.shown_command = shown;
    ro.id = id;
    rc = gm_cli_record_exec(&ro, "run", attach);
    free(shown);
    return rc;
}

int gm_cli_run(int argc, char **argv)
{
    run_opts o = {.count = 1, .wait_s = 300, .check_s = 30};
    gm_cli_ctr_defaults(&o.ctr);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;

    gm_error err = {0};
    gm_estimate est;
    json_t *attach = json_object();
    if (!attach)
        return GM_EXIT_FAILURE;
    if (o.task) {
        if (gm_estimate_task_file(o.task, &est, &err) < 0) {
            fprintf(stderr, "gpumon run: %s\n", err.msg);
            json_decref(attach);
            return GM_EXIT_USAGE;
        }
        if (est.gpus > GM_MAX_GPUS) {
            fprintf(stderr, "gpumon run: %s needs %llu GPUs; at most %d can be chosen\n", o.task,
                    (unsigned long long)est.gpus, GM_MAX_GPUS);
            json_decref(attach);
            return GM_EXIT_NOT_ENOUGH;
        }
        o.count = (unsigned)est.gpus;
        if (!o.min_free_given)
            o.min_free_mib = est.memory_mib;
        json_object_set_new(attach, "estimate", gm_estimate_json(&est));
    }

    char lease_dir[4096];
    if (o.lease_dir)
        snprintf(lease_dir, sizeof lease_dir, "%s", o.lease_dir);
    else if (gm_lease_default_dir(lease_dir, sizeof lease_dir, &err) < 0) {
        fprintf(stderr, "gpumon run: %s\n", err.msg);
        json_decref(attach);
        return GM_EXIT_FAILURE;
    }

    gm_cli_ctr *ctr = NULL;
    if (o.ctr.image && !(ctr = image_prepare(&o, &rc))) {
        json_decref(attach);
        return rc;
    }
    gm_collector *c = gm_cli_open_collector("run", &o.src);
    gm_snapshot *snap = gm_snapshot_new();
    gm_lease *lease = NULL;
    if (!c || !snap) {
        rc = c ? GM_EXIT_FAILURE : GM_EXIT_NO_GPU;
        goto out;
    }
    if (strcmp(gm_collector_provider(c), "none") == 0) {
        fprintf(stderr, "gpumon run: no GPU found:\n%s", gm_collector_diagnosis(c));
        rc = GM_EXIT_NO_GPU;
        goto out;
    }

    gm_select_request req = {
        .count = o.count,
        .min_free_mib = o.min_free_mib,
        .has_max_util = o.has_max_util,
        .max_util_pct = o.max_util,
        .visible = o.all_devices ? NULL : getenv("CUDA_VISIBLE_DEVICES"),
    };
    gm_wait_options wo = {
        .timeout_s = o.wait_s,
        .interval_s = o.check_s,
        .cancel = &cancelled,
        .lease_dir = lease_dir,
        .take_lease = true,
        .progress = on_progress,
        .progress_ud = &o,
    };
    gm_select_result res;
    o.started_s = gm_clock_mono_s();
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int wrc = gm_wait_for(c, &req, &wo, snap, &res, &lease, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (wrc < 0) {
        if (wrc == GM_ECANCELED && cancelled) {
            fprintf(stderr, "gpumon run: interrupted while waiting for GPUs\n");
            rc = 128 + (int)cancelled;
        } else {
            fprintf(stderr, "gpumon run: %s\n", err.msg);
            rc = wrc == GM_ETIMEDOUT ? GM_EXIT_TIMEOUT
                 : wrc == GM_EINVAL  ? GM_EXIT_USAGE
                                     : GM_EXIT_FAILURE;
        }
        goto out;
    }
    /* record opens its own collector; this one's work is done. */
    gm_collector_close(c);
    c = NULL;

    char list[512];
    gm_select_format_list(&res, list, sizeof list);
    if (ctr) {
        if (!o.quiet)
            fprintf(stderr, "gpumon run: leased GPU%s %s\n", res.n_selected > 1 ? "s" : "", list);
        json_t *uuids = json_array();
        for (size_t i = 0; i < gm_lease_count(lease); i++)
            json_array_append_new(uuids, json_string(gm_lease_uuid(lease, i)));
        json_object_set_new(attach, "selection", gm_select_result_json(&res));
        json_object_set_new(attach, "lease",
                            json_pack("{s:s, s:o}", "dir", lease_dir, "uuids", uuids));
        rc = run_image(&o, ctr, lease, list, attach);
        attach = NULL; /* stolen */
        goto out;
    }
    /* Indices as the driver (and nvidia-smi) number GPUs; PCI_BUS_ID makes CUDA number them
     * the same way (its default is fastest-first). */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    setenv("CUDA_VISIBLE_DEVICES", list, 1);
    if (!o.quiet)
        fprintf(stderr, "gpumon run: leased GPU%s %s; CUDA_VISIBLE_DEVICES=%s\n",
                res.n_selected > 1 ? "s" : "", list, list);

    json_t *uuids = json_array();
    for (size_t i = 0; i < gm_lease_count(lease); i++)
        json_array_append_new(uuids, json_string(gm_lease_uuid(lease, i)));
    json_object_set_new(attach, "selection", gm_select_result_json(&res));
    json_object_set_new(attach, "lease",
                        json_pack("{s:s, s:s, s:o}", "dir", lease_dir, "cuda_visible_devices", list,
                                  "uuids", uuids));

    gm_cli_record_opts ro;
    if (!record_opts_of(&o, list, &ro)) {
        rc = GM_EXIT_FAILURE;
        goto out;
    }
    rc = gm_cli_record_exec(&ro, "run", attach);
    attach = NULL; /* stolen */
out:
    /* The container goes before the lease: its GPUs are not free until it is gone. */
    gm_cli_ctr_close(ctr);
    gm_lease_release(lease);
    json_decref(attach);
    gm_snapshot_free(snap);
    gm_collector_close(c);
    return rc;
}
