/* cmd_bench.c - `gpumon bench`: load an OpenAI-compatible inference server (core/bench_client)
 * while sampling its GPUs (core/bench_gpu), point by point; report the serving metrics, the
 * energy per token and whether each point can be trusted; keep the result in the database and
 * an optional JSON file. docs/BENCH.md describes the command and its output. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/file.h"
#include "base/json.h"
#include "base/parse.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/container.h"
#include "cli/lease.h"
#include "core/bench_report.h"
#include "core/bench_run.h"
#include "core/session.h"
#include "store/store.h"

typedef struct bench_opts {
    gm_bench_config cfg; /* the benchmark's options (core/bench_run) */
    /* --header and --env values as the parser found them in argv, for redacting the stored
     * command line */
    const char *header_args[GM_BENCH_HEADERS_MAX];
    size_t nheader_args;
    gm_cli_gpu_filter filter;
    bool have_filter;
    bool quiet;
    gm_cli_source src;
    /* --image: the server in a container on leased GPUs; args after -- go to it */
    gm_cli_ctr_opts ctr;
    gm_cli_lease_opts lease;
    char **ctr_args;
    size_t nctr_args;
} bench_opts;

/* ---- options ---------------------------------------------------------------------------- */

/* The benchmark's own options: one setter, gm_bench_config_set, the one the daemon's job API
 * uses, called with the row's long name. */
static int bench_row(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    bench_opts *o = base;
    int rc = gm_bench_config_set(&o->cfg, row->name, arg, err);
    if (rc < 0)
        return rc;
    if (strcmp(row->name, "header") == 0 && o->nheader_args < GM_BENCH_HEADERS_MAX)
        o->header_args[o->nheader_args++] = arg;
    return GM_OK;
}

/* -i/--gpus: the GPUs to sample (the config's list) and the filter that resolves them. */
static int id_row(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    bench_opts *o = base;
    int rc = gm_bench_config_set(&o->cfg, "gpus", arg, err);
    if (rc < 0)
        return rc;
    if ((rc = gm_cli_set_gpu_filter(base, row, arg, err)) < 0)
        return rc;
    o->have_filter = true;
    return GM_OK;
}

#define BENCH(...)                                             \
    {                                                          \
        .type = GM_OPT_CALLBACK, .set = bench_row, __VA_ARGS__ \
    }

static const gm_opt bench_table[] = {
    BENCH(.name = "url", .arg = "URL", .group = "Load",
          .help = "The server's base URL (http://host:8000; /v1 may end it)."),
    BENCH(.name = "model", .arg = "NAME",
          .help = "Model to ask for (default: the first of GET /v1/models)."),
    BENCH(.name = "api", .arg = "API", .values = "completions chat",
          .help = "completions (POST /v1/completions, the default) or chat."),
    BENCH(.name = "concurrency", .arg = "LIST",
          .help = "Closed loop: N requests in flight, the next sent when one ends; several "
                  "values make a sweep (default 1)."),
    BENCH(.name = "request-rate", .arg = "LIST",
          .help = "Open loop: R requests per second on a seeded schedule, inf for all at once; "
                  "latencies are also given from each request's scheduled time."),
    BENCH(.name = "burstiness", .arg = "B",
          .help = "Open loop: gamma gaps of shape B (default 1: Poisson)."),
    BENCH(.name = "requests", .arg = "N",
          .help = "Measured requests per point (default 1000, at most 1000000)."),
    BENCH(.name = "duration", .arg = "SECONDS",
          .help = "Or: send for this long per point (90, 30s, 5m)."),
    BENCH(.name = "warmup", .arg = "N",
          .help = "Requests before each point, not measured (default 0)."),
    BENCH(.name = "input-tokens", .arg = "N",
          .help = "Synthetic prompts of about N tokens (default 128): N common words that are "
                  "one token each in the usual tokenizers."),
    BENCH(.name = "output-tokens", .arg = "N",
          .help = "Tokens asked for, exactly: max_tokens, ignore_eos and min_tokens (default "
                  "128)."),
    BENCH(.name = "prompts", .arg = "FILE", .complete = "file",
          .help = "JSONL prompts instead: {\"prompt\": ...} or {\"messages\": [...]} per line, "
                  "optional \"max_tokens\"."),
    BENCH(.name = "slo", .arg = "LIST",
          .help = "Objectives for goodput: ttft=MS,tpot=MS,e2e=MS (any of them)."),
    BENCH(.name = "header", .arg = "'K: V'", .flags = GM_OPT_REPEAT,
          .help = "An extra request header (repeatable; values never stored)."),
    BENCH(.name = "api-key-env", .arg = "VAR",
          .help = "Send the key in environment variable VAR as a bearer token; it is never "
                  "printed, stored or logged."),
    BENCH(.name = "timeout", .arg = "SECONDS",
          .help = "Most time one request may take (default 600)."),
    {.type = GM_OPT_CALLBACK,
     .name = "id",
     .letter = 'i',
     .arg = "LIST",
     GM_OPT_AT(bench_opts, filter),
     .set = id_row,
     .complete = "gpus",
     .aliases = "gpus",
     .group = "GPUs and results",
     .help = "GPUs to sample: indices, UUIDs or PCI bus ids, comma-separated (default: all)."},
    BENCH(.name = "interval", .arg = "SECONDS",
          .help = "Between GPU samples (0.01-3600, default 0.1)."),
    BENCH(.name = "idle-seconds", .arg = "S",
          .help = "Idle power measured before the first point (0-600, default 2)."),
    BENCH(.name = "output", .letter = 'o', .arg = "FILE", .complete = "file",
          .flags = GM_OPT_CLI_ONLY, .help = "Also write the result as JSON."),
    BENCH(.name = "label", .arg = "TEXT",
          .help = "A name to find the benchmark by in gpumon history."),
    BENCH(.name = "trace", .arg = "FILE", .complete = "file", .flags = GM_OPT_CLI_ONLY,
          .help = "One JSON line per measured request, with its CLOCK_MONOTONIC times in ns "
                  "(sent, first and last chunk)."),
    BENCH(.name = "db", .arg = "PATH", .complete = "file", .flags = GM_OPT_CLI_ONLY,
          .help = "Database (default: $GPU_MONITOR_DB, else $XDG_STATE_HOME/gpumon/gpumon.db "
                  "or ~/.local/state/gpumon/gpumon.db)."),
    BENCH(.name = "no-db", .help = "Do not store the benchmark."),
    GM_CLI_OPT_SNAPSHOT(.type = GM_OPT_CALLBACK, .set = bench_row),
    GM_CLI_OPT_SNAPSHOT_WINDOW(.type = GM_OPT_CALLBACK, .set = bench_row),
    {.type = GM_OPT_FLAG,
     .name = "quiet",
     .letter = 'q',
     GM_OPT_AT(bench_opts, quiet),
     .help = "No progress or results on stderr."},
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(bench_opts, src)},
    GM_CLI_OPT_CTR(
        bench_opts, ctr, .name = "image", .arg = "IMAGE",
        .group = "The server in a container (instead of --url)",
        .help = "Run the server from IMAGE on GPUs leased as gpumon run does, given to it as "
                "HostConfig.DeviceRequests by UUID (never CUDA_VISIBLE_DEVICES); ARGS after -- "
                "follow its entrypoint."),
    GM_CLI_OPT_CTR(bench_opts, ctr, .name = "container-port", .arg = "P",
                   .help = "The server's port inside (default 8000), published on a free port of "
                           "127.0.0.1."),
    GM_CLI_OPT_CTR(
        bench_opts, ctr, .name = "env", .arg = "K=V|NAME", .flags = GM_OPT_REPEAT,
        .help = "Set a variable in the container (repeatable); NAME alone passes gpumon's own "
                "value (NGC_API_KEY), never printed."),
    GM_CLI_OPT_CTR(bench_opts, ctr, .name = "volume", .arg = "HOST:CONTAINER[:ro]",
                   .flags = GM_OPT_REPEAT, .help = "Mount (repeatable)."),
    GM_CLI_OPT_CTR(bench_opts, ctr, .name = "shm-size", .arg = "SIZE",
                   .help = "/dev/shm of the container (16GB, 512m)."),
    GM_CLI_OPT_CTR(
        bench_opts, ctr, .name = "ready-path", .arg = "PATH",
        .help = "Readiness: GET PATH answers 2xx (default: /v1/health/ready, then /health, then "
                "/v1/models, whichever exists)."),
    GM_CLI_OPT_CTR(bench_opts, ctr, .name = "ready-timeout", .arg = "S",
                   .help =
                       "Most time to wait for it (default 1800: a first NIM start downloads the "
                       "model)."),
    GM_CLI_OPT_CTR(
        bench_opts, ctr, .name = "keep-container",
        .help = "Leave it running afterwards (default: stopped and removed on every way out, "
                "Ctrl-C and errors included)."),
    GM_CLI_OPT_CTR(bench_opts, ctr, .name = "pull",
                   .help = "Pull IMAGE when it is not here (progress on stderr)."),
    GM_CLI_OPT_LEASE(bench_opts, lease, .name = "count", .letter = 'n', .arg = "N",
                     .code = GM_CLI_OPT_COUNT,
                     .group = "Its GPUs' lease (as for gpumon run; --gpus limits the GPUs leased)",
                     .help = "GPUs to lease (default 1, or as many as --gpus lists)."),
    GM_CLI_OPT_LEASE(bench_opts, lease, .name = "task", .arg = "FILE", .code = GM_CLI_OPT_TASK,
                     .complete = "file",
                     .help = "Lease as many as the task config's estimate (see gpumon estimate)."),
    GM_CLI_OPT_LEASE(bench_opts, lease, .name = "min-free-mb", .letter = 'm', .arg = "MIB",
                     .code = GM_CLI_OPT_MIN_FREE, .help = "Free memory each GPU needs."),
    GM_CLI_OPT_LEASE_WAITING(bench_opts, lease),
    GM_CLI_OPT_L_REMOVED,
    {0},
};

const gm_opt_command gm_cli_bench_command = {
    .name = "bench",
    .usage = "bench --url URL [options]\n"
             "bench --image IMAGE [options] [-- ARGS...]",
    .description = "Loads an OpenAI-compatible inference server (vLLM, SGLang, TensorRT-LLM, "
                   "NIM...) with streaming requests from one thread (libcurl, keep-alive "
                   "connections) while sampling its GPUs, and reports TTFT, TPOT, ITL and "
                   "end-to-end latency, requests/s, tokens/s, goodput, the GPUs' statistics and "
                   "energy, output tokens per joule and joules per request. Each value of "
                   "--concurrency or --request-rate is a point, run in order. A point is marked "
                   "invalid when a foreign process appeared on the GPUs, their clocks were "
                   "throttled, the client itself was saturated, or the server's token usage "
                   "contradicted its stream (the chunks are counted then). One request checks "
                   "the server first (not measured).",
    .table = bench_table,
    .epilogue = "--seed also seeds the arrival schedule and the synthetic prompts.\n\n"
                "Containers go through the Docker Engine API ($DOCKER_HOST=unix://PATH, else\n"
                "/var/run/docker.sock; podman system service works). The container is named\n"
                "gpumon-<id> and labelled gpumon.owner (host:pid) and gpumon.run (the id); its\n"
                "time to ready, GPU memory after loading, energy while loading, image id and\n"
                "exit state are stored with the benchmark, and when it ends on its own its last\n"
                "50 lines of output are printed and stored. gpumon containers list|cleanup\n"
                "finds those a killed gpumon left.\n\n"
                "Ctrl-C stops the benchmark and keeps what was measured. Without a GPU the\n"
                "serving metrics are still measured.\n\n"
                "Exit status: 0 ok; 1 failure (the server cannot be reached or answers\n"
                "wrongly, a point completed no request, the container ended or could not\n"
                "start); 2 usage error or malformed prompts; 3 no GPU found (with --gpus or\n"
                "--image); 4 not enough GPUs (--task); 5 timed out (GPUs not free, or the\n"
                "container not ready); 130 stopped by Ctrl-C (the result is kept).\n",
};

/* Reads argv into o and checks what the options say together: operands only as the container's
 * arguments, lease options only with --image, the benchmark's settings complete. Returns
 * GM_CLI_PROCEED or the exit status. */
static int read_options(int argc, char **argv, bench_opts *o)
{
    const char *cmd = "bench";
    gm_error err = {0};
    int first = argc;
    int rc = gm_cli_parse(&gm_cli_bench_command, argc, argv, o, &first);
    if (rc != GM_CLI_PROCEED)
        return rc;
    /* Operands are the container's arguments (after --), so only with --image. */
    if (!o->ctr.image && first < argc) {
        fprintf(stderr, "gpumon bench: unexpected argument \"%s\"\n", argv[first]);
        return GM_EXIT_USAGE;
    }
    o->ctr_args = argv + first;
    o->nctr_args = (size_t)(argc - first);
    if (!gm_cli_ctr_validate(cmd, &o->ctr, true))
        return GM_EXIT_USAGE;
    if (!o->cfg.url != !o->ctr.image && o->lease.given && !o->ctr.image) {
        fprintf(stderr,
                "gpumon bench: --count, --task and the other lease options are for --image (see "
                "gpumon bench --help)\n");
        return GM_EXIT_USAGE;
    }
    if (gm_bench_config_finish(&o->cfg, o->ctr.image != NULL, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s (see gpumon bench --help)\n", err.msg);
        return GM_EXIT_USAGE;
    }
    o->cfg.seed = o->src.seed;
    return GM_CLI_PROCEED;
}

/* ---- progress --------------------------------------------------------------------------- */

typedef struct progress_ctx {
    bool tty, quiet;
    double idle_s;
    gm_cli_ctr *ctr;   /* --image: the server's container, looked at when requests fail */
    size_t seen;       /* results of the point already looked at */
    size_t point;      /* the point seen looks at */
    bool failing;      /* one failed since the container was last looked at */
    double next_check; /* monotonic seconds */
} progress_ctx;

static volatile sig_atomic_t stop_flag;
/* What simulated GPUs are doing (gm_collector_options.sim_load): written by the engine only
 * while no sample is being taken (before a point begins, after it ends), so the sampling
 * thread reads it under its lock. */
static double sim_load;
static volatile sig_atomic_t stop_signal;
static bool server_gone; /* --image: the container ended during a point */

/* A server that dies mid-point turns every request into a connection failure at full speed:
 * when requests fail, ask the engine (at most once a second, so a healthy server costs the
 * client's loop nothing) and stop the run if the container has ended. */
static void watch_server(progress_ctx *pc, const gm_bench_progress *g, const gm_bench_point *p)
{
    if (!pc->ctr || server_gone)
        return;
    if (g->point != pc->point) {
        pc->point = g->point;
        pc->seen = 0;
    }
    for (; p && pc->seen < p->n; pc->seen++)
        if (p->res[pc->seen].outcome != GM_BENCH_OK)
            pc->failing = true;
    double now = gm_clock_mono_s();
    if (!pc->failing || now < pc->next_check)
        return;
    pc->failing = false;
    pc->next_check = now + 1;
    if (gm_cli_ctr_ended(pc->ctr)) {
        server_gone = true;
        stop_flag = 1;
    }
}

static void on_progress(void *arg, const gm_bench_progress *g, const gm_bench_point *p)
{
    progress_ctx *pc = arg;
    if (g->phase == GM_BENCH_PHASE_IDLE || g->phase == GM_BENCH_PHASE_IDLE_END) {
        if (pc->tty && g->phase == GM_BENCH_PHASE_IDLE)
            fprintf(stderr, "gpumon bench: measuring idle power for %g s", pc->idle_s);
        else if (pc->tty)
            fprintf(stderr, "\r\033[K");
        return;
    }
    if (g->phase != GM_BENCH_PHASE_POINT)
        return;
    watch_server(pc, g, p);
    if (!pc->tty || !p || server_gone)
        return;
    size_t done = g->done, total = g->total;
    double elapsed = g->elapsed_s;
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    double eta = total ? (rate > 0 ? (double)(total - (done < total ? done : total)) / rate : NAN)
                       : g->duration_s - elapsed;
    char line[256];
    int used = snprintf(line, sizeof line, "bench %s (%zu/%zu): %zu", g->load, g->point + 1,
                        g->npoints, done);
    if (total)
        used += snprintf(line + used, sizeof line - (size_t)used, "/%zu", total);
    used += snprintf(line + used, sizeof line - (size_t)used, " done, %.1f req/s", rate);
    if (isfinite(eta) && eta >= 0)
        used += snprintf(line + used, sizeof line - (size_t)used, ", ETA %.0f s", eta);
    if (isfinite(g->ttft_p50_ms))
        snprintf(line + used, sizeof line - (size_t)used, ", TTFT p50 %.1f ms", g->ttft_p50_ms);
    struct winsize ws;
    int width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col : 80;
    fprintf(stderr, "\r\033[K%.*s", width - 1, line);
    fflush(stderr);
}

static void on_point(void *arg, const json_t *pj)
{
    progress_ctx *pc = arg;
    if (pc->tty)
        fprintf(stderr, "\r\033[K");
    if (!pc->quiet)
        gm_bench_print_point(stderr, pj);
}

/* Asked by the engine before each point (the container is looked at) and after it (the end
 * on_progress saw). */
static bool on_gone(void *arg, bool before)
{
    progress_ctx *pc = arg;
    if (before && pc->ctr && !server_gone && gm_cli_ctr_ended(pc->ctr))
        server_gone = true;
    return server_gone;
}

/* ---- signals ---------------------------------------------------------------------------- */

static void on_stop(int sig)
{
    stop_flag = 1;
    stop_signal = sig;
    /* A second one ends the process the default way. */
    signal(sig, SIG_DFL);
}

/* ---- the run ---------------------------------------------------------------------------- */

static gm_store *open_store(const bench_opts *o)
{
    if (o->cfg.no_db)
        return NULL;
    char path[4096];
    gm_error err = {0};
    gm_store *st = NULL;
    if (o->cfg.db)
        snprintf(path, sizeof path, "%s", o->cfg.db);
    else if (gm_store_default_path(path, sizeof path, &err) < 0) {
        fprintf(stderr, "gpumon bench: warning: %s; the benchmark is not stored\n", err.msg);
        return NULL;
    }
    if (gm_store_open(path, &st, &err) < 0) {
        fprintf(stderr, "gpumon bench: warning: %s; the benchmark is not stored\n", err.msg);
        return NULL;
    }
    return st;
}

/* A secret's value inside ARG, if ARG holds one: --header and --env values found by the
 * pointers the option parser kept, so every spelling getopt accepts ("--head V", "--en=K=V")
 * is caught, not only the full option names. */
static const char *secret_in(const char *arg, const bench_opts *o, char *sep)
{
    const char *end = arg + strlen(arg);
    for (size_t k = 0; k < o->nheader_args + o->ctr.nenv; k++) {
        bool header = k < o->nheader_args;
        const char *p = header ? o->header_args[k] : o->ctr.env[k - o->nheader_args];
        if (p >= arg && p <= end) {
            *sep = header ? ':' : '=';
            return p;
        }
    }
    return NULL;
}

/* The command line as stored: header values and --env values replaced, so no secret reaches
 * the database. */
static json_t *stored_command(int argc, char **argv, const bench_opts *o)
{
    json_t *a = json_array();
    if (!a || json_array_append_new(a, json_string("gpumon")) < 0)
        return a;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        char red[512], sep = 0;
        const char *v = secret_in(arg, o, &sep);
        const char *cut = v ? strchr(v, sep) : NULL;
        if (cut) { /* keep the option as spelled and the header's or variable's name */
            snprintf(red, sizeof red, "%.*s%s<redacted>", (int)(cut - arg), arg,
                     sep == ':' ? ": " : "=");
            arg = red;
        }
        json_array_append_new(a, gm_json_str(arg));
    }
    return a;
}

/* Raises the soft open-file limit to the hard one: each request in flight over HTTP/1.1 needs a
 * connection. Returns how many requests may be in flight. */
static size_t raise_nofile(void)
{
    struct rlimit rl = {1024, 1024};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
        if (want > rl.rlim_cur) {
            rl.rlim_cur = want;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    size_t n = rl.rlim_cur > 128 ? (size_t)rl.rlim_cur - 64 : 64;
    return n < GM_BENCH_IN_FLIGHT_MAX ? n : GM_BENCH_IN_FLIGHT_MAX;
}

/* ---- signals, installed once ---------------------------------------------------------------- */

static struct sigaction old_int, old_term;
static bool signals_set;

static void signals_install(void)
{
    if (signals_set)
        return;
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    stop_flag = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    signals_set = true;
}

static void signals_restore(void)
{
    if (!signals_set)
        return;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    signals_set = false;
}

/* ---- the server in a container (--image) ------------------------------------------------- */

typedef struct image_run {
    gm_cli_ctr *ctr;
    gm_lease *lease;
    json_t *attach;  /* estimate, selection, lease: as gpumon run stores them */
    json_t *loading; /* what the GPUs did from the container's start until it was ready */
} image_run;

/* The loading point's figures: how long, the energy, and each GPU's memory in use once the
 * server was ready (its last sample). */
static json_t *loading_json(gm_session *s)
{
    json_t *doc = gm_session_to_json(s);
    json_t *gpus = json_array();
    double t;
    const double *vals = NULL;
    bool last = gm_session_last(s, &t, &vals) == GM_OK && vals;
    double mem_total = 0;
    bool mem_known = gm_session_gpu_count(s) > 0;
    for (size_t k = 0; gpus && k < gm_session_gpu_count(s); k++) {
        const gm_session_gpu *g = gm_session_gpu_at(s, k);
        char key[16];
        snprintf(key, sizeof key, "%u", g->index);
        const json_t *st = json_object_get(json_object_get(doc, "gpu_stats"), key);
        double mem = last ? vals[k * GM_SM__COUNT + GM_SM_MEM_USED_MB] : NAN;
        if (isfinite(mem))
            mem_total += mem;
        else
            mem_known = false;
        json_array_append_new(
            gpus, json_pack("{s:I, s:o, s:o, s:O?, s:O?}", "index", (json_int_t)g->index, "uuid",
                            gm_json_text(g->uuid, sizeof g->uuid), "memory_used_mib_after",
                            gm_json_number(mem), "energy_j", json_object_get(st, "energy_j"),
                            "energy_source", json_object_get(st, "energy_source")));
    }
    json_t *j = json_pack("{s:f, s:I, s:O?, s:o, s:o}", "duration_s", gm_session_duration(s),
                          "samples", (json_int_t)gm_session_sample_count(s), "energy_j",
                          json_object_get(doc, "energy_j"), "memory_used_mib_after",
                          mem_known ? json_real(mem_total) : json_null(), "gpus",
                          gpus ? gpus : json_array());
    json_decref(doc);
    return j;
}

/* Leases the GPUs, starts sampling them, measures them idle, starts the server's container
 * on them and waits until it answers, sampling its loading; then *url is the server's.
 * Returns an exit status, or -1 when stopped by a signal. */
static int image_start(bench_opts *o, const char *id, image_run *ir, gm_bench_runner *run,
                       gm_collector **colp, gm_snapshot *snap, const char **url)
{
    const char *cmd = "bench";
    gm_error err = {0};
    int rc;
    /* The engine and the image first: a missing image fails before any wait for GPUs. */
    if (!(ir->ctr = gm_cli_ctr_open(cmd, &o->ctr, o->quiet, &rc)))
        return rc;
    if ((rc = gm_cli_ctr_image(ir->ctr, &stop_flag)) != GM_EXIT_OK)
        return rc;
    if (stop_flag)
        return -1;
    gm_collector_options colopt;
    if (!gm_cli_collector_options(cmd, &o->src, &colopt))
        return GM_EXIT_USAGE;
    colopt.no_host = !o->cfg.snapshot; /* a snapshot names the host */
    colopt.slow_period_ms = -1;
    sim_load = -1; /* the simulated GPUs are empty until the container starts */
    colopt.sim_load = &sim_load;
    int orc = GM_EXIT_OK;
    if (!(*colp = gm_cli_collector_open(cmd, &colopt, &orc)))
        return orc;
    if (!gm_cli_require_gpu(cmd, *colp, true))
        return GM_EXIT_NO_GPU;
    unsigned only[GM_MAX_GPUS];
    size_t nonly = 0;
    if (o->have_filter) {
        if (gm_collector_sample(*colp, snap, &err) < 0) {
            fprintf(stderr, "gpumon bench: no GPU found: %s\n", err.msg);
            return GM_EXIT_NO_GPU;
        }
        if (!gm_cli_gpu_filter_resolve(cmd, &o->filter, snap, only, &nonly))
            return GM_EXIT_USAGE;
    }
    gm_select_result res;
    if (!(ir->attach = json_object()))
        return GM_EXIT_FAILURE;
    rc = gm_cli_lease_gpus(cmd, &o->lease, *colp, o->have_filter ? only : NULL, nonly, &stop_flag,
                           o->quiet, &res, &ir->lease, ir->attach);
    if (rc != GM_EXIT_OK)
        return rc;
    if (!o->quiet) {
        char list[512];
        gm_select_format_list(&res, list, sizeof list);
        fprintf(stderr, "gpumon %s: leased GPU%s %s\n", cmd, res.n_selected > 1 ? "s" : "", list);
    }
    /* The engine gets the leased GPUs by UUID, which every driver tool and CDI spec accepts
     * and no renumbering can change; an index only where the provider gave no UUID. */
    unsigned idx[GM_MAX_GPUS];
    size_t n = gm_lease_indices(ir->lease, idx, GM_MAX_GPUS);
    char ids[GM_MAX_GPUS][GM_UUID_LEN];
    const char *idp[GM_MAX_GPUS];
    for (size_t i = 0; i < n; i++) {
        const char *u = gm_lease_uuid(ir->lease, i);
        if (u && *u)
            snprintf(ids[i], sizeof ids[i], "%s", u);
        else
            snprintf(ids[i], sizeof ids[i], "%u", idx[i]);
        idp[i] = ids[i];
    }
    if (gm_bench_runner_gpus(run, *colp, idx, n, true, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    if (stop_flag)
        return -1;
    /* Loading: sampled from just before the start until the server answers. */
    gm_bench_gpu *gpu = gm_bench_runner_gpu(run);
    sim_load = 0;
    bool sampling = gm_bench_gpu_begin(gpu, "loading", &err) == GM_OK;
    rc = gm_cli_ctr_start(ir->ctr, id, o->ctr_args, o->nctr_args, idp, n, true);
    if (rc == GM_EXIT_OK && gm_cli_ctr_pid(ir->ctr) > 0)
        gm_bench_gpu_add_server(gpu, (uint32_t)gm_cli_ctr_pid(ir->ctr), NULL);
    if (rc == GM_EXIT_OK)
        rc = gm_cli_ctr_wait_ready(ir->ctr, &stop_flag);
    gm_bench_gpu_point lp;
    if (sampling && gm_bench_gpu_end(gpu, &lp, &err) == GM_OK) {
        ir->loading = loading_json(lp.session);
        gm_bench_runner_add_samples(run, (int64_t)gm_session_sample_count(lp.session));
        gm_bench_gpu_point_free(&lp);
    }
    if (rc != GM_EXIT_OK)
        return rc;
    *url = gm_cli_ctr_url(ir->ctr);
    return GM_EXIT_OK;
}

/* The container's record for the document: its life plus the loading figures, and the
 * estimate, selection and lease as gpumon run stores them. */
static void image_json(const image_run *ir, json_t *doc)
{
    if (!ir->ctr || !doc)
        return;
    const char *key;
    json_t *val;
    json_object_foreach(ir->attach, key, val) json_object_set(doc, key, val);
    json_t *j = gm_cli_ctr_json(ir->ctr);
    if (j)
        json_object_set_new(j, "loading", ir->loading ? json_incref(ir->loading) : json_null());
    json_object_set_new(doc, "container", j);
}

/* ---- the result --------------------------------------------------------------------------- */

/* Writes -o, stores the document (a benchmark with no point only when keep_empty: a container
 * that never became ready), prints the summary. Returns rc, or a failure when -o fails. */
static int keep_result(const bench_opts *o, int argc, char **argv, gm_store *st, json_t *doc,
                       int64_t started_ms, int64_t gpu_samples, bool keep_empty, int rc)
{
    gm_error err = {0};
    int64_t ended_ms =
        started_ms + (int64_t)llround(json_number_value(json_object_get(doc, "duration_s")) * 1000);
    if (o->cfg.output) {
        gm_file *f = NULL;
        if (gm_file_open_output(o->cfg.output, GM_FILE_REPLACE, &f, &err) < 0 ||
            (gm_cli_write_json(gm_file_stream(f), doc, true), gm_file_commit(f, NULL, &err)) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        }
    }
    bool stored = false;
    const char *id = json_string_value(json_object_get(doc, "id"));
    size_t npoints = json_array_size(json_object_get(doc, "points"));
    /* Stopped before any point: nothing measured, nothing to keep in the history. */
    if (st && (npoints > 0 || keep_empty)) {
        json_t *cmd = stored_command(argc, argv, o);
        if (gm_store_put_bench(st, doc, cmd, started_ms, ended_ms, gpu_samples, &err) < 0)
            fprintf(stderr, "gpumon bench: warning: %s; the benchmark is not stored\n", err.msg);
        else
            stored = true;
        json_decref(cmd);
    }
    if (!o->quiet) {
        if (npoints > 1)
            gm_bench_print_table(stderr, doc);
        char audit[2048];
        gm_bench_audit_text(json_object_get(doc, "audit"), audit, sizeof audit);
        if (audit[0])
            fprintf(stderr, "%s\n", audit);
        if (stored)
            fprintf(stderr, "stored as %s (gpumon history show %s)\n", id, id);
        if (o->cfg.output && rc != GM_EXIT_FAILURE)
            fprintf(stderr, "written to %s\n", o->cfg.output);
    }
    return rc;
}

/* ---- the command, in its steps ------------------------------------------------------------ */

/* One benchmark's state from its options to its result; every step fills part of it and
 * bench_close frees what was made. */
typedef struct bench_state {
    bench_opts o;
    int argc;
    char **argv;
    const char *key; /* the API key, from the environment only */
    char base[GM_BENCH_URL_MAX];
    char id[GM_SESSION_ID_LEN];
    int64_t started_ms;
    progress_ctx pc;
    gm_bench_runner_options ro; /* outlives the runner, as it must */
    gm_bench_runner *run;
    gm_collector *col;
    gm_snapshot *snap;
    gm_store *st;
    gm_file *trace_file;
    json_t *doc;
    image_run ir;
    const char *url;
    bool have_gpus;
    unsigned idx[GM_MAX_GPUS]; /* --gpus resolved (a server at --url) */
    size_t nidx;
} bench_state;

/* Before anything is started: the key from the environment, the URL, the id and the runner
 * with its prompts. Returns an exit status. */
static int bench_prepare(bench_state *b)
{
    gm_error err = {0};
    const gm_bench_config *cfg = &b->o.cfg;
    /* The key, from the environment only: never from argv, which ps shows. */
    if (cfg->api_key_env) {
        b->key = getenv(cfg->api_key_env);
        if (!b->key || !*b->key) {
            fprintf(stderr, "gpumon bench: --api-key-env: environment variable %s is %s\n",
                    cfg->api_key_env, b->key ? "empty" : "not set");
            return GM_EXIT_USAGE;
        }
    }
    if (cfg->url && gm_bench_url_base(cfg->url, b->base, sizeof b->base, &err) < 0) {
        fprintf(stderr, "gpumon bench: --url: %s\n", err.msg);
        return GM_EXIT_USAGE;
    }
    b->started_ms = gm_clock_wall_ms();
    gm_session_make_id(b->id, sizeof b->id, b->started_ms);
    b->pc = (progress_ctx){
        .tty = !b->o.quiet && isatty(STDERR_FILENO), .quiet = b->o.quiet, .idle_s = cfg->idle_s};
    b->ro = (gm_bench_runner_options){.cfg = cfg,
                                      .id = b->id,
                                      .started_ms = b->started_ms,
                                      .stop = &stop_flag,
                                      .api_key = b->key,
                                      .max_in_flight = raise_nofile(),
                                      .sim_load = &sim_load,
                                      .progress = on_progress,
                                      .live_figures = b->pc.tty,
                                      .on_point = on_point,
                                      .gone = on_gone,
                                      .arg = &b->pc};
    /* Prompts: a bad file is bad input (2). */
    if (gm_bench_runner_new(&b->ro, &b->run, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        return err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
    }
    b->url = cfg->url;
    return GM_EXIT_OK;
}

/* --image: the server is ours to start; the benchmark begins with the GPUs, then the
 * container, which is named after the benchmark's id. A container that ended before it was
 * ready, or never became ready, is kept on record (its output, the loading). Returns an exit
 * status. */
static int bench_start_server(bench_state *b)
{
    gm_error err = {0};
    signals_install();
    if (!(b->snap = gm_snapshot_new()))
        return GM_EXIT_FAILURE;
    b->st = open_store(&b->o);
    int rc = image_start(&b->o, b->id, &b->ir, b->run, &b->col, b->snap, &b->url);
    b->pc.ctr = b->ir.ctr;
    if (rc != GM_EXIT_OK) {
        if (rc < 0 || stop_flag)
            rc = 128 + (stop_signal ? stop_signal : SIGINT);
        gm_cli_ctr_finish(b->ir.ctr);
        const char *failure = b->ir.ctr ? gm_cli_ctr_failure(b->ir.ctr) : NULL;
        if (failure && (strcmp(failure, "exited") == 0 || strcmp(failure, "timeout") == 0) &&
            (b->doc = gm_bench_runner_document(b->run,
                                               b->col ? gm_collector_provider(b->col) : "none"))) {
            const char *cu = gm_cli_ctr_url(b->ir.ctr);
            json_object_set_new(b->doc, "url", cu && *cu ? gm_json_str(cu) : json_null());
            image_json(&b->ir, b->doc);
            rc = keep_result(&b->o, b->argc, b->argv, b->st, b->doc, b->started_ms,
                             gm_bench_runner_gpu_samples(b->run), true, rc);
        }
        return rc;
    }
    b->have_gpus = true;
    if (gm_bench_url_base(b->url, b->base, sizeof b->base, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    return GM_EXIT_OK;
}

/* A server at --url: its GPUs read through the collector like every command; none is a
 * warning unless --gpus. Returns an exit status. */
static int bench_open_gpus(bench_state *b)
{
    gm_error err = {0};
    gm_collector_options colopt;
    if (!gm_cli_collector_options("bench", &b->o.src, &colopt))
        return GM_EXIT_USAGE;
    colopt.no_host = !b->o.cfg.snapshot; /* a snapshot names the host */
    colopt.slow_period_ms = -1;          /* the energy counter at every sample: exact per point */
    sim_load = 0; /* simulated GPUs: a server idles on them until a point loads it */
    colopt.sim_load = &sim_load;
    if (!(b->snap = gm_snapshot_new()))
        return GM_EXIT_FAILURE;
    /* A provider asked for by name that cannot be opened is an error, as for record; auto
     * with nothing to read opens as provider "none" and the run goes on without GPUs. */
    int orc = GM_EXIT_OK;
    if (!(b->col = gm_cli_collector_open("bench", &colopt, &orc)))
        return orc;
    b->have_gpus = strcmp(gm_collector_provider(b->col), "none") != 0 &&
                   gm_collector_sample(b->col, b->snap, &err) == GM_OK && b->snap->gpu_count > 0;
    if (!b->have_gpus) {
        if (b->o.have_filter) {
            fprintf(stderr, "gpumon bench: no GPU found: %s\n",
                    err.msg[0] ? err.msg : gm_collector_diagnosis(b->col));
            return GM_EXIT_NO_GPU;
        }
        if (!b->o.quiet)
            fprintf(stderr, "gpumon bench: warning: no GPU found; measuring the server "
                            "without its GPUs\n");
        gm_collector_close(b->col);
        b->col = NULL;
    } else if (b->o.have_filter &&
               !gm_cli_gpu_filter_resolve("bench", &b->o.filter, b->snap, b->idx, &b->nidx)) {
        return GM_EXIT_USAGE;
    }
    return GM_EXIT_OK;
}

/* The trace file, and for a server at --url the store, the signals and the GPUs' sampling
 * with their idle power. Returns an exit status. */
static int bench_ready(bench_state *b)
{
    gm_error err = {0};
    if (b->o.cfg.trace) {
        if (gm_file_open_output(b->o.cfg.trace, GM_FILE_STREAM, &b->trace_file, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            return GM_EXIT_FAILURE;
        }
        gm_bench_runner_set_trace(b->run, gm_file_stream(b->trace_file));
    }
    if (!b->o.ctr.image) {
        b->st = open_store(&b->o);
        signals_install();
        if (b->have_gpus && gm_bench_runner_gpus(b->run, b->col, b->o.have_filter ? b->idx : NULL,
                                                 b->o.have_filter ? b->nidx : 0, false, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            return GM_EXIT_FAILURE;
        }
    }
    return GM_EXIT_OK;
}

/* The check request, then every point. Returns an exit status. */
static int bench_run_points(bench_state *b)
{
    gm_error err = {0};
    /* One request first: a server that is down or answers garbage fails here, clearly. */
    if (gm_bench_runner_check(b->run, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    if (gm_bench_runner_points(b->run, &err) < 0) {
        fprintf(stderr, "%sgpumon bench: %s\n", b->pc.tty ? "\r\033[K" : "", err.msg);
        return GM_EXIT_FAILURE;
    }
    return GM_EXIT_OK;
}

/* After the points: the trace file made whole, the document made, kept and summed up.
 * Returns the command's exit status. */
static int bench_finish(bench_state *b)
{
    gm_error err = {0};
    int rc = GM_EXIT_OK;
    if (b->trace_file) {
        gm_file *tf = b->trace_file;
        b->trace_file = NULL;
        if (gm_file_commit(tf, NULL, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        }
    }
    /* The stop was ours, not a signal's: the run ends as a failure, not as interrupted. */
    if (server_gone && !stop_signal)
        stop_flag = 0;

    /* The container's exit state belongs in the document: it is stopped first. */
    if (b->ir.ctr)
        gm_cli_ctr_finish(b->ir.ctr);
    if (!(b->doc =
              gm_bench_runner_document(b->run, b->col ? gm_collector_provider(b->col) : "none"))) {
        fprintf(stderr, "gpumon bench: out of memory\n");
        return GM_EXIT_FAILURE;
    }
    image_json(&b->ir, b->doc);
    rc = keep_result(&b->o, b->argc, b->argv, b->st, b->doc, b->started_ms,
                     gm_bench_runner_gpu_samples(b->run), false, rc);
    size_t npoints = b->o.cfg.npoints;
    if (server_gone) {
        fprintf(stderr,
                "gpumon bench: the server's container ended during the benchmark; %zu of %zu "
                "point%s measured%s\n",
                json_array_size(json_object_get(b->doc, "points")), npoints,
                npoints == 1 ? "" : "s",
                gm_bench_runner_cut_short(b->run)
                    ? " (the last one cut short, marked invalid: server_exited)"
                    : "");
        if (rc == GM_EXIT_OK)
            rc = GM_EXIT_FAILURE;
    }
    if (rc == GM_EXIT_OK && gm_bench_runner_any_empty(b->run)) {
        fprintf(stderr, "gpumon bench: a point completed no request (see its errors)\n");
        rc = GM_EXIT_FAILURE;
    }
    if (rc == GM_EXIT_OK && stop_flag)
        rc = 128 + (stop_signal ? stop_signal : SIGINT);
    return rc;
}

/* Frees what the steps made, in the order their users need; rc becomes a failure when the
 * trace of a run cut short cannot be kept. */
static int bench_close(bench_state *b, int rc)
{
    gm_error err = {0};
    /* The container goes before the lease: its GPUs are not free until it is gone. */
    gm_cli_ctr_close(b->ir.ctr);
    gm_lease_release(b->ir.lease);
    json_decref(b->ir.attach);
    json_decref(b->ir.loading);
    signals_restore();
    json_decref(b->doc);
    /* The sampling thread reads the collector: it stops before the collector closes. */
    gm_bench_runner_free(b->run);
    gm_snapshot_free(b->snap);
    gm_collector_close(b->col);
    gm_store_close(b->st);
    /* A run cut short keeps the requests traced so far. */
    if (b->trace_file && gm_file_commit(b->trace_file, NULL, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        if (rc == GM_EXIT_OK)
            rc = GM_EXIT_FAILURE;
    }
    gm_bench_config_free(&b->o.cfg);
    return rc;
}

int gm_cli_bench(int argc, char **argv)
{
    bench_state b = {.argc = argc, .argv = argv};
    gm_bench_config_init(&b.o.cfg);
    gm_cli_ctr_defaults(&b.o.ctr);
    gm_cli_lease_defaults(&b.o.lease);
    int rc = read_options(argc, argv, &b.o);
    if (rc != GM_CLI_PROCEED)
        return bench_close(&b, rc);
    rc = bench_prepare(&b);
    if (rc == GM_EXIT_OK && b.o.ctr.image)
        rc = bench_start_server(&b);
    if (rc == GM_EXIT_OK) {
        gm_error err = {0};
        if (gm_bench_runner_connect(b.run, b.url, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            rc = err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
        }
    }
    if (rc == GM_EXIT_OK && !b.o.ctr.image)
        rc = bench_open_gpus(&b);
    if (rc == GM_EXIT_OK)
        rc = bench_ready(&b);
    if (rc == GM_EXIT_OK)
        rc = bench_run_points(&b);
    if (rc == GM_EXIT_OK)
        rc = bench_finish(&b);
    return bench_close(&b, rc);
}
