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
    /* What record takes: the interval, output, label, database, snapshot, source, COMMAND
     * (the GPUs are the leased ones, set once they are). */
    gm_cli_record_opts rec;
    int ncommand;
    gm_cli_ctr_opts ctr; /* --image: COMMAND runs in a container of this image */
} run_opts;

static volatile sig_atomic_t cancelled;

static void on_signal(int sig)
{
    cancelled = sig;
}

static const gm_opt run_table[] = {
    GM_CLI_OPT_LEASE(
        run_opts, lease, .name = "task", .arg = "FILE", .code = GM_CLI_OPT_TASK, .complete = "file",
        .help = "Estimate GPUs and memory per GPU from a task config (tp x pp x max(dp, cp, "
                "dcp); see gpumon estimate)."),
    GM_CLI_OPT_LEASE(run_opts, lease, .name = "count", .letter = 'n', .arg = "N",
                     .code = GM_CLI_OPT_COUNT,
                     .help = "GPUs wanted (default 1; not with --task; -c also works)."),
    GM_CLI_OPT_LEASE(run_opts, lease, .name = NULL, .letter = 'c', .arg = "N",
                     .code = GM_CLI_OPT_COUNT, .flags = GM_OPT_HIDDEN),
    GM_CLI_OPT_LEASE(run_opts, lease, .name = "min-free-mb", .letter = 'm', .arg = "MIB",
                     .code = GM_CLI_OPT_MIN_FREE,
                     .help = "Free memory each GPU needs (overrides the task's estimate)."),
    GM_CLI_OPT_LEASE_WAITING(run_opts, lease),
    GM_CLI_OPT_LEASE(
        run_opts, lease, .name = "mig", .code = GM_CLI_OPT_MIG,
        .help = "Lease MIG devices instead of whole GPUs; COMMAND gets their MIG-... UUIDs in "
                "CUDA_VISIBLE_DEVICES."),
    {.type = GM_OPT_DURATION,
     .name = "interval",
     .arg = "S",
     GM_OPT_AT(run_opts, rec.interval_s),
     .min = 0.01,
     .max = 3600,
     .group = "Recording",
     .help = "Sampling interval while COMMAND runs (default 1)."},
    GM_CLI_OPT_OUTPUT(run_opts, rec.output,
                      .help = "Write the session JSON (with timeline) to FILE."),
    {.type = GM_OPT_STRING,
     .name = "label",
     .arg = "TEXT",
     GM_OPT_AT(run_opts, rec.label),
     .help = "Label of the stored run."},
    GM_CLI_OPT_SNAPSHOT(.type = GM_OPT_FLAG, GM_OPT_AT(run_opts, rec.snapshot)),
    GM_CLI_OPT_SNAPSHOT_WINDOW(.type = GM_OPT_UINT, GM_OPT_AT(run_opts, rec.snapshot_window_ms),
                               GM_OPT_GIVEN(run_opts, rec.snapshot_window_set)),
    GM_CLI_OPT_DB(run_opts, rec.db, .help = "Where to store the run (see gpumon record)."),
    GM_CLI_OPT_NO_DB(run_opts, rec.no_db, .help = "Do not store the run."),
    {.type = GM_OPT_FLAG,
     .name = "quiet",
     .letter = 'q',
     GM_OPT_AT(run_opts, rec.quiet),
     .help = "No progress (while waiting, too) or summary on stderr."},
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(run_opts, rec.src)},
    GM_CLI_OPT_CTR(
        run_opts, ctr, .name = "image", .arg = "IMAGE", .group = "In a container",
        .help = "Run IMAGE on the leased GPUs, given to it as HostConfig.DeviceRequests by UUID "
                "(no CUDA_VISIBLE_DEVICES); COMMAND, if any, follows its entrypoint. Its output "
                "is shown, its exit status passed through, and it is removed at the end."),
    GM_CLI_OPT_CTR(
        run_opts, ctr, .name = "env", .arg = "K=V|NAME", .flags = GM_OPT_REPEAT,
        .help = "Set a variable in it (repeatable; NAME alone passes gpumon's own value, never "
                "printed)."),
    GM_CLI_OPT_CTR(run_opts, ctr, .name = "volume", .arg = "HOST:CONTAINER[:ro]",
                   .flags = GM_OPT_REPEAT, .help = "As docker run -v."),
    GM_CLI_OPT_CTR(run_opts, ctr, .name = "shm-size", .arg = "SIZE",
                   .help = "As docker run --shm-size."),
    GM_CLI_OPT_CTR(run_opts, ctr, .name = "container-port", .arg = "P",
                   .help = "Publish port P on a free port of 127.0.0.1."),
    GM_CLI_OPT_CTR(run_opts, ctr, .name = "keep-container",
                   .help = "Leave it (stopped) instead of removing it."),
    GM_CLI_OPT_CTR(run_opts, ctr, .name = "pull", .help = "Pull IMAGE when it is not here."),
    /* bench's, refused by gm_cli_ctr_validate with a message that says so */
    GM_CLI_OPT_CTR(run_opts, ctr, .name = "ready-path", .arg = "PATH", .flags = GM_OPT_HIDDEN),
    GM_CLI_OPT_CTR(run_opts, ctr, .name = "ready-timeout", .arg = "S", .flags = GM_OPT_HIDDEN),
    GM_CLI_OPT_L_REMOVED,
    {0},
};

const gm_opt_command gm_cli_run_command = {
    .name = "run",
    .usage = "run [--task TASK.json | --count N] [options] -- COMMAND [ARGS...]\n"
             "run [options] --image IMAGE [-- ARGS...]",
    .description = "Finds GPUs for COMMAND, waits until they are free, leases them so that no "
                   "other `gpumon run` takes them, and runs COMMAND on them as `gpumon record` "
                   "does (signals forwarded, exit status passed through, the session stored as "
                   "a \"run\"). The lease ends when COMMAND exits (or gpumon dies).",
    .table = run_table,
    .stop_at_operand = true,
    .epilogue = "Containers go through the Docker Engine API ($DOCKER_HOST=unix://PATH, else\n"
                "/var/run/docker.sock). The container is named gpumon-<session id>, labelled\n"
                "gpumon.owner and gpumon.run (gpumon containers list|cleanup).\n\n"
                "COMMAND gets CUDA_VISIBLE_DEVICES set to the chosen driver indices (\"0,3\", as\n"
                "nvidia-smi numbers GPUs) and CUDA_DEVICE_ORDER=PCI_BUS_ID. The second is needed\n"
                "because CUDA numbers devices fastest-first by default, which differs from the\n"
                "driver's PCI bus order on hosts mixing GPU models; with PCI_BUS_ID both agree,\n"
                "so the indices name the leased GPUs and no others. With --mig it lists the\n"
                "leased MIG devices by UUID (MIG-...), as CUDA accepts them there.\n\n"
                "Exit status: COMMAND's; 2 usage error; 3 no GPU found; 5 the GPUs did not become\n"
                "free in time; 127 COMMAND cannot be run; 128+N interrupted by signal N while\n"
                "waiting.\n",
};

/* Reads argv into o and checks it: no readiness options, one of --task and --count, a COMMAND
 * unless --image. Returns GM_CLI_PROCEED or the exit status. */
static int read_options(int argc, char **argv, run_opts *o)
{
    int first;
    int rc = gm_cli_parse(&gm_cli_run_command, argc, argv, o, &first);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (!gm_cli_ctr_validate("run", &o->ctr, false))
        return GM_EXIT_USAGE;
    if (o->lease.task && o->lease.count) {
        fprintf(stderr, "gpumon run: --task and --count both say how many GPUs; give one\n");
        return GM_EXIT_USAGE;
    }
    if (first >= argc && !o->ctr.image) {
        fprintf(stderr, "gpumon run: no command to run (usage: gpumon run [options] -- COMMAND)\n");
        return GM_EXIT_USAGE;
    }
    o->rec.command = argv + first;
    o->ncommand = argc - first;
    return GM_CLI_PROCEED;
}

/* The record options for the run options and the leased GPUs (list: "0,3"). False (message
 * printed) when the list cannot be read back, which would be a bug. */
static bool record_opts_of(const run_opts *o, const char *list, gm_cli_record_opts *r)
{
    *r = o->rec;
    r->name = "run";
    r->have_filter = gm_cli_parse_gpu_filter("run", list, &r->filter);
    return r->have_filter;
}

/* ---- --image ---------------------------------------------------------------------------- */

/* The engine and the image, before any wait for GPUs (a missing image fails at once). NULL
 * with *rc set when they are not there. */
static gm_cli_ctr *image_prepare(run_opts *o, int *rc)
{
    gm_cli_ctr *ctr = gm_cli_ctr_open("run", &o->ctr, o->rec.quiet, rc);
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
    int rc =
        gm_cli_ctr_start(ctr, id, o->rec.command, (size_t)o->ncommand, idp, n, o->ctr.port_given);
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
        shown[i + 1] = o->rec.command[i];
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

/* What is recorded, into list ("0,3"): the leased GPUs, or (mig) the GPUs of the leased MIG
 * devices, each once. Returns what the leased things are called ("GPUs", "MIG device"). */
static const char *recorded_gpus(const gm_select_result *res, bool mig, char *list, size_t len)
{
    if (!mig) {
        gm_select_format_list(res, list, len);
        return res->n_selected > 1 ? "GPUs" : "GPU";
    }
    size_t used = 0;
    for (unsigned i = 0; i < res->n_gpus; i++) {
        const gm_select_gpu *e = &res->gpus[i];
        bool seen = false;
        for (unsigned k = 0; k < i; k++)
            seen |=
                res->gpus[k].status == GM_SEL_SELECTED && res->gpus[k].gpu_index == e->gpu_index;
        if (e->status != GM_SEL_SELECTED || seen)
            continue;
        int w = snprintf(list + used, len - used, "%s%u", used ? "," : "", e->gpu_index);
        if (w > 0 && used + (size_t)w < len)
            used += (size_t)w;
    }
    return res->n_selected > 1 ? "MIG devices" : "MIG device";
}

/* Gives COMMAND the leased devices: each vendor's runtime gets its own GPUs, NVIDIA's by driver
 * index (PCI_BUS_ID makes CUDA number them the same way; its default is fastest-first), AMD's
 * by ROCm's index. The variables go into the stored lease (jl) and, as shown, into said. */
static void export_devices(const gm_select_result *res, json_t *jl, char *said, size_t len)
{
    gm_select_env env;
    gm_select_format_env(res, &env);
    said[0] = '\0';
    if (env.has_cuda) {
        setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
        setenv("CUDA_VISIBLE_DEVICES", env.cuda, 1);
        snprintf(said, len, "CUDA_VISIBLE_DEVICES=%s", env.cuda);
        json_object_set_new(jl, "cuda_visible_devices", json_string(env.cuda));
    }
    if (env.has_amd) {
        setenv("ROCR_VISIBLE_DEVICES", env.amd, 1);
        setenv("HIP_VISIBLE_DEVICES", env.amd, 1);
        size_t used = strlen(said);
        snprintf(said + used, len - used, "%sROCR_VISIBLE_DEVICES=%s HIP_VISIBLE_DEVICES=%s",
                 used ? " " : "", env.amd, env.amd);
        json_object_set_new(jl, "rocr_visible_devices", json_string(env.amd));
    }
}

int gm_cli_run(int argc, char **argv)
{
    run_opts o = {0};
    gm_cli_lease_defaults(&o.lease);
    gm_cli_ctr_defaults(&o.ctr);
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
        return rc;

    json_t *attach = json_object();
    if (!attach)
        return GM_EXIT_FAILURE;
    gm_cli_ctr *ctr = NULL;
    if (o.ctr.image && !(ctr = image_prepare(&o, &rc))) {
        json_decref(attach);
        return rc;
    }
    gm_collector_options copt;
    int open_rc = GM_EXIT_USAGE; /* a bad --provider, said by gm_cli_collector_options */
    gm_collector *c = gm_cli_collector_options("run", &o.rec.src, &copt)
                          ? gm_cli_collector_open("run", &copt, &open_rc)
                          : NULL;
    gm_lease *lease = NULL;
    if (!c) {
        rc = open_rc;
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
    rc = gm_cli_lease_gpus("run", &o.lease, c, NULL, 0, &cancelled, o.rec.quiet, &res, &lease,
                           attach);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc < 0)
        rc = 128 + (int)cancelled;
    if (rc != GM_EXIT_OK)
        goto out;
    /* record opens its own collector; this one's work is done. */
    gm_collector_close(c);
    c = NULL;

    char list[512] = "";
    const char *what = recorded_gpus(&res, o.lease.mig, list, sizeof list);
    char shown[GM_MAX_GPUS * GM_MIG_UUID_LEN];
    gm_select_format_list(&res, shown, sizeof shown);
    if (ctr) {
        if (!o.rec.quiet)
            fprintf(stderr, "gpumon run: leased %s %s\n", what, shown);
        rc = run_image(&o, ctr, lease, list, attach);
        attach = NULL; /* stolen */
        goto out;
    }
    char said[sizeof(((gm_select_env *)0)->cuda) + 600];
    export_devices(&res, json_object_get(attach, "lease"), said, sizeof said);
    if (!o.rec.quiet)
        fprintf(stderr, "gpumon run: leased %s %s; %s\n", what, shown, said);

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
