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
#include "cli/lease.h"
#include "cli/record.h"
#include "core/estimate.h"
#include "core/lease.h"
#include "core/select.h"
#include "core/session.h"

typedef struct run_opts {
    gm_cli_lease_opts lease; /* --task, --count, --min-free-mb, --max-util, --wait... */
    double interval_s;       /* the sampling interval (0: record's default) */
    const char *output;
    const char *label;
    const char *db;
    bool no_db;
    bool quiet;
    bool snapshot;
    unsigned snapshot_window_ms;
    bool snapshot_window_set;
    gm_cli_source src;
    char **command;
    int ncommand;
    gm_cli_ctr_opts ctr; /* --image: COMMAND runs in a container of this image */
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
static int parse_args(int argc, char **argv, run_opts *o)
{
    enum { OPT_SNAPSHOT = 256, OPT_WINDOW, OPT_DB, OPT_NODB, OPT_INTERVAL, OPT_LABEL };
    static const struct option longopts[] = {
        GM_CLI_LEASE_LONGOPTS,
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"output", required_argument, NULL, 'o'},
        {"label", required_argument, NULL, OPT_LABEL},
        {"snapshot", no_argument, NULL, OPT_SNAPSHOT},
        {"snapshot-window-ms", required_argument, NULL, OPT_WINDOW},
        {"db", required_argument, NULL, OPT_DB},
        {"no-db", no_argument, NULL, OPT_NODB},
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
        /* The letters of the lease options ("-c": run's letter for --count before -n meant
         * it in every command). */
        int lc = c == 'n' || c == 'c' ? GM_CLI_OPT_COUNT
                 : c == 'm'           ? GM_CLI_OPT_MIN_FREE
                 : c == 'u'           ? GM_CLI_OPT_MAX_UTIL
                 : c == 'w'           ? GM_CLI_OPT_WAIT
                                      : c;
        int taken = gm_cli_lease_option("run", lc, optarg, &o->lease);
        if (taken < 0)
            return GM_EXIT_USAGE;
        if (taken > 0)
            continue;
        switch (c) {
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
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            usage(stdout);
            return GM_EXIT_OK;
        default:
            taken = gm_cli_ctr_option("run", c, optarg, &o->ctr);
            if (taken < 0 ||
                (taken == 0 && !gm_cli_default_option("run", c, argv, longopts, &o->src)))
                return GM_EXIT_USAGE;
            break;
        }
    }
    if (!gm_cli_ctr_validate("run", &o->ctr, false))
        return GM_EXIT_USAGE;
    if (o->lease.task && o->lease.count) {
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
/* The container has exited (gpumon followed it): its exit state, read as it is removed, goes
 * into the stored run in place of the state at its start. */
static json_t *container_ended(void *arg)
{
    gm_cli_ctr *ctr = arg;
    gm_cli_ctr_finish(ctr);
    return json_pack("{s:o}", "container", gm_cli_ctr_json(ctr));
}

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
    ro.ended = container_ended;
    ro.ended_arg = ctr;
    rc = gm_cli_record_exec(&ro, "run", attach);
    free(shown);
    return rc;
}

int gm_cli_run(int argc, char **argv)
{
    run_opts o = {0};
    gm_cli_lease_defaults(&o.lease);
    gm_cli_ctr_defaults(&o.ctr);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;

    json_t *attach = json_object();
    if (!attach)
        return GM_EXIT_FAILURE;
    gm_cli_ctr *ctr = NULL;
    if (o.ctr.image && !(ctr = image_prepare(&o, &rc))) {
        json_decref(attach);
        return rc;
    }
    gm_collector *c = gm_cli_open_collector("run", &o.src);
    gm_lease *lease = NULL;
    if (!c) {
        rc = GM_EXIT_NO_GPU;
        goto out;
    }
    if (strcmp(gm_collector_provider(c), "none") == 0) {
        fprintf(stderr, "gpumon run: no GPU found:\n%s", gm_collector_diagnosis(c));
        rc = GM_EXIT_NO_GPU;
        goto out;
    }

    gm_select_result res;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rc = gm_cli_lease_gpus("run", &o.lease, c, NULL, 0, &cancelled, o.quiet, &res, &lease, attach);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc < 0)
        rc = 128 + (int)cancelled;
    if (rc != GM_EXIT_OK)
        goto out;
    /* record opens its own collector; this one's work is done. */
    gm_collector_close(c);
    c = NULL;

    char list[512];
    gm_select_format_list(&res, list, sizeof list);
    if (ctr) {
        if (!o.quiet)
            fprintf(stderr, "gpumon run: leased GPU%s %s\n", res.n_selected > 1 ? "s" : "", list);
        rc = run_image(&o, ctr, lease, list, attach);
        attach = NULL; /* stolen */
        goto out;
    }
    /* Each vendor's runtime gets its own GPUs: NVIDIA's by driver index (PCI_BUS_ID makes
     * CUDA number them the same way; its default is fastest-first), AMD's by ROCm's index. */
    gm_select_env env;
    gm_select_format_env(&res, &env);
    char said[600] = "";
    if (env.has_cuda) {
        setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
        setenv("CUDA_VISIBLE_DEVICES", env.cuda, 1);
        snprintf(said, sizeof said, "CUDA_VISIBLE_DEVICES=%s", env.cuda);
    }
    if (env.has_amd) {
        setenv("ROCR_VISIBLE_DEVICES", env.amd, 1);
        setenv("HIP_VISIBLE_DEVICES", env.amd, 1);
        size_t used = strlen(said);
        snprintf(said + used, sizeof said - used,
                 "%sROCR_VISIBLE_DEVICES=%s HIP_VISIBLE_DEVICES=%s", used ? " " : "", env.amd,
                 env.amd);
    }
    if (!o.quiet)
        fprintf(stderr, "gpumon run: leased GPU%s %s; %s\n", res.n_selected > 1 ? "s" : "", list,
                said);

    json_t *jl = json_object_get(attach, "lease");
    if (env.has_cuda)
        json_object_set_new(jl, "cuda_visible_devices", json_string(env.cuda));
    if (env.has_amd)
        json_object_set_new(jl, "rocr_visible_devices", json_string(env.amd));

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
    gm_collector_close(c);
    return rc;
}
