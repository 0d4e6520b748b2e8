/* cmd_bench.c - `gpumon bench`: load an OpenAI-compatible inference server (core/bench_client)
 * while sampling its GPUs (core/bench_gpu), point by point; report the serving metrics, the
 * energy per token and whether each point can be trusted; keep the result in the database and
 * an optional JSON file. docs/BENCH.md describes the command and its output. */
#include <errno.h>
#include <getopt.h>
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
#include "core/bench_client.h"
#include "core/bench_gpu.h"
#include "core/bench_openai.h"
#include "core/bench_report.h"
#include "core/bench_stats.h"
#include "core/bench_validity.h"
#include "core/session.h"
#include "store/store.h"

#define MAX_POINTS  64
#define MAX_HEADERS 64
/* Distinct synthetic prompts made; requests take them in turn. */
#define SYNTHETIC_PROMPTS 1024

typedef struct bench_opts {
    const char *url;
    const char *model;
    gm_bench_api api;
    bool open_loop, have_conc, have_rate;
    size_t npoints;
    unsigned conc[MAX_POINTS];
    double rate[MAX_POINTS];
    double burstiness;
    bool have_burstiness;
    unsigned long long requests;
    double duration_s;
    unsigned long long warmup;
    unsigned long long input_tokens, output_tokens;
    bool have_input_tokens;
    const char *prompts;
    gm_bench_slo slo;
    const char *headers[MAX_HEADERS];
    size_t nheaders;
    const char *api_key_env;
    double timeout_s;
    gm_cli_gpu_filter filter;
    bool have_filter;
    double interval_s;
    double idle_s;
    const char *output;
    const char *label;
    const char *trace;
    const char *db;
    bool no_db;
    bool quiet;
    gm_cli_source src;
    /* --image: the server in a container on leased GPUs; args after -- go to it */
    gm_cli_ctr_opts ctr;
    gm_cli_lease_opts lease;
    char **ctr_args;
    size_t nctr_args;
} bench_opts;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpumon bench --url URL | --image IMAGE [container options] [-- ARGS...]\n"
        "                    [--model NAME] [--api completions|chat]\n"
        "                    [--concurrency N[,N...] | --request-rate R[,R...] [--burstiness B]]\n"
        "                    [--requests N | --duration SECONDS] [--warmup N]\n"
        "                    [--input-tokens N] [--output-tokens N] [--prompts FILE.jsonl]\n"
        "                    [--slo ttft=MS,tpot=MS,e2e=MS] [--header 'K: V'] [--api-key-env VAR]\n"
        "                    [--gpus LIST] [--interval SECONDS] [-o FILE] [--label LABEL]\n"
        "                    [--db PATH | --no-db] [-q]\n\n"
        "Loads an OpenAI-compatible inference server (vLLM, SGLang, TensorRT-LLM, NIM...) with\n"
        "streaming requests from one thread (libcurl, keep-alive connections) while sampling its\n"
        "GPUs, and reports TTFT, TPOT, ITL and end-to-end latency, requests/s, tokens/s, goodput,\n"
        "the GPUs' statistics and energy, output tokens per joule and joules per request. Each\n"
        "value of --concurrency or --request-rate is a point, run in order. A point is marked\n"
        "invalid when a foreign process appeared on the GPUs, their clocks were throttled, the\n"
        "client itself was saturated, or the server's token usage contradicted its stream (the\n"
        "chunks are counted then). One request checks the server first (not measured).\n\n"
        "Options:\n"
        "      --url URL          the server's base URL (http://host:8000; /v1 may end it)\n"
        "      --model NAME       model to ask for (default: the first of GET /v1/models)\n"
        "      --api API          completions (POST /v1/completions, the default) or chat\n"
        "      --concurrency LIST closed loop: N requests in flight, the next sent when one\n"
        "                         ends; several values make a sweep (default 1)\n"
        "      --request-rate LIST  open loop: R requests per second on a seeded schedule,\n"
        "                         inf for all at once; latencies are also given from each\n"
        "                         request's scheduled time\n"
        "      --burstiness B     open loop: gamma gaps of shape B (default 1: Poisson)\n"
        "      --requests N       measured requests per point (default 1000, at most 1000000)\n"
        "      --duration SECONDS or: send for this long per point (90, 30s, 5m)\n"
        "      --warmup N         requests before each point, not measured (default 0)\n"
        "      --input-tokens N   synthetic prompts of about N tokens (default 128): N common\n"
        "                         words that are one token each in the usual tokenizers\n"
        "      --output-tokens N  tokens asked for, exactly: max_tokens, ignore_eos and\n"
        "                         min_tokens (default 128)\n"
        "      --prompts FILE     JSONL prompts instead: {\"prompt\": ...} or {\"messages\":\n"
        "                         [...]} per line, optional \"max_tokens\"\n"
        "      --slo LIST         objectives for goodput: ttft=MS,tpot=MS,e2e=MS (any of them)\n"
        "      --header 'K: V'    an extra request header (repeatable; values never stored)\n"
        "      --api-key-env VAR  send the key in environment variable VAR as a bearer token;\n"
        "                         it is never printed, stored or logged\n"
        "      --timeout SECONDS  most time one request may take (default 600)\n"
        "  -i, --gpus LIST        GPUs to sample: indices, UUIDs or PCI bus ids (default: all)\n"
        "      --interval SECONDS between GPU samples (0.01-3600, default 0.1)\n"
        "      --idle-seconds S   idle power measured before the first point (0-600, default 2)\n"
        "  -o, --output FILE      also write the result as JSON\n"
        "      --label TEXT       a name to find the benchmark by in gpumon history\n"
        "      --trace FILE       one JSON line per measured request, with its CLOCK_MONOTONIC\n"
        "                         times in ns (sent, first and last chunk)\n"
        "      --db PATH          database (default: $GPU_MONITOR_DB, else\n"
        "                         $XDG_STATE_HOME/gpumon/gpumon.db or\n"
        "                         ~/.local/state/gpumon/gpumon.db)\n"
        "      --no-db            do not store the benchmark\n"
        "  -q, --quiet            no progress or results on stderr\n"
        "      --provider NAME    nvml, nvidia-smi, sim or auto (default: auto)\n"
        "      --simulate N       use N simulated GPUs\n"
        "      --seed N           seed of the arrival schedule, the synthetic prompts and the\n"
        "                         simulated GPUs (default 0)\n"
        "  -h, --help             show this help\n\n"
        "The server in a container (instead of --url), through the Docker Engine API\n"
        "($DOCKER_HOST=unix://PATH, else /var/run/docker.sock; podman system service works):\n"
        "      --image IMAGE      run the server from IMAGE on GPUs leased as gpumon run does,\n"
        "                         given to it as HostConfig.DeviceRequests by UUID (never\n"
        "                         CUDA_VISIBLE_DEVICES); ARGS after -- follow its entrypoint\n"
        "      --container-port P the server's port inside (default 8000), published on a\n"
        "                         free port of 127.0.0.1\n"
        "      --env K=V, --env NAME  set a variable in the container (repeatable); NAME alone\n"
        "                         passes gpumon's own value (NGC_API_KEY), never printed\n"
        "      --volume HOST:CONTAINER[:ro]  mount (repeatable)\n"
        "      --shm-size SIZE    /dev/shm of the container (16GB, 512m)\n"
        "      --ready-path PATH  readiness: GET PATH answers 2xx (default: /v1/health/ready,\n"
        "                         then /health, then /v1/models, whichever exists)\n"
        "      --ready-timeout S  most time to wait for it (default 1800: a first NIM start\n"
        "                         downloads the model)\n"
        "      --keep-container   leave it running afterwards (default: stopped and removed on\n"
        "                         every way out, Ctrl-C and errors included)\n"
        "      --pull             pull IMAGE when it is not here (progress on stderr)\n"
        "  -n, --count N | --task FILE  GPUs to lease (default 1, or as many as --gpus lists;\n"
        "                         --task: its estimate, see gpumon estimate)\n"
        "  -m, --min-free-mb MIB, -u, --max-util PCT, -w, --wait S, --check-interval S,\n"
        "      --lease-dir DIR, --all-devices   as for gpumon run; --gpus LIST limits the\n"
        "                         GPUs that may be leased\n"
        "The container is named gpumon-<id> and labelled gpumon.owner (host:pid) and gpumon.run\n"
        "(the id); its time to ready, GPU memory after loading, energy while loading, image id\n"
        "and exit state are stored with the benchmark, and when it ends on its own its last 50\n"
        "lines of output are printed and stored. gpumon containers list|cleanup finds those a\n"
        "killed gpumon left.\n\n"
        "Ctrl-C stops the benchmark and keeps what was measured. Without a GPU the serving\n"
        "metrics are still measured.\n\n"
        "Exit status: 0 ok; 1 failure (the server cannot be reached or answers wrongly, a point\n"
        "completed no request, the container ended or could not start); 2 usage error or\n"
        "malformed prompts; 3 no GPU found (with --gpus or --image); 4 not enough GPUs (--task);\n"
        "5 timed out (GPUs not free, or the container not ready); 130 stopped by Ctrl-C (the\n"
        "result is kept).\n");
}

/* ---- options ---------------------------------------------------------------------------- */

static bool parse_list(const char *flag, const char *arg, bool rate, bench_opts *o)
{
    o->npoints = 0;
    const char *p = arg;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];
        if (n == 0 || n >= sizeof item || o->npoints == MAX_POINTS) {
            fprintf(stderr,
                    "gpumon bench: %s expects up to %d comma-separated values, got \"%s\"\n", flag,
                    MAX_POINTS, arg);
            return false;
        }
        memcpy(item, p, n);
        item[n] = '\0';
        if (rate) {
            double v;
            if (strcmp(item, "inf") == 0) {
                v = INFINITY;
            } else if (gm_parse_number(item, 0, 1e6, &v) < 0 || v <= 0) {
                fprintf(stderr,
                        "gpumon bench: %s expects requests per second above 0 (or inf), got "
                        "\"%s\"\n",
                        flag, item);
                return false;
            }
            o->rate[o->npoints++] = v;
        } else {
            unsigned long long v;
            if (gm_parse_uint(item, 1, GM_BENCH_IN_FLIGHT_MAX, &v) < 0) {
                fprintf(stderr, "gpumon bench: %s expects whole numbers from 1 to %d, got \"%s\"\n",
                        flag, GM_BENCH_IN_FLIGHT_MAX, item);
                return false;
            }
            o->conc[o->npoints++] = (unsigned)v;
        }
        p = comma ? comma + 1 : NULL;
        if (comma && !*p) {
            fprintf(stderr, "gpumon bench: %s \"%s\" ends with a comma\n", flag, arg);
            return false;
        }
    }
    if (o->npoints == 0) {
        fprintf(stderr, "gpumon bench: %s needs a value\n", flag);
        return false;
    }
    return true;
}

static bool header_ok(const char *h)
{
    const char *colon = strchr(h, ':');
    if (!colon || colon == h)
        return false;
    for (const char *p = h; p < colon; p++)
        if (!strchr("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                    *p))
            return false;
    for (const char *p = colon + 1; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return false;
    return true;
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    enum {
        OPT_URL = 256,
        OPT_MODEL,
        OPT_API,
        OPT_CONC,
        OPT_RATE,
        OPT_BURST,
        OPT_REQUESTS,
        OPT_DURATION,
        OPT_WARMUP,
        OPT_IN,
        OPT_OUT,
        OPT_PROMPTS,
        OPT_SLO,
        OPT_HEADER,
        OPT_KEYENV,
        OPT_TIMEOUT,
        OPT_INTERVAL,
        OPT_IDLE,
        OPT_TRACE,
        OPT_LABEL,
        OPT_DB,
        OPT_NODB,
    };
    static const struct option longopts[] = {
        {"url", required_argument, NULL, OPT_URL},
        {"model", required_argument, NULL, OPT_MODEL},
        {"api", required_argument, NULL, OPT_API},
        {"concurrency", required_argument, NULL, OPT_CONC},
        {"request-rate", required_argument, NULL, OPT_RATE},
        {"burstiness", required_argument, NULL, OPT_BURST},
        {"requests", required_argument, NULL, OPT_REQUESTS},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"input-tokens", required_argument, NULL, OPT_IN},
        {"output-tokens", required_argument, NULL, OPT_OUT},
        {"prompts", required_argument, NULL, OPT_PROMPTS},
        {"slo", required_argument, NULL, OPT_SLO},
        {"header", required_argument, NULL, OPT_HEADER},
        {"api-key-env", required_argument, NULL, OPT_KEYENV},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"gpus", required_argument, NULL, 'i'},
        {"id", required_argument, NULL, 'i'},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"idle-seconds", required_argument, NULL, OPT_IDLE},
        {"output", required_argument, NULL, 'o'},
        {"label", required_argument, NULL, OPT_LABEL},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"db", required_argument, NULL, OPT_DB},
        {"no-db", no_argument, NULL, OPT_NODB},
        {"quiet", no_argument, NULL, 'q'},
        GM_CLI_SOURCE_LONGOPTS,
        GM_CLI_CTR_LONGOPTS,
        GM_CLI_LEASE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = "bench";
    int c;
    gm_error err = {0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:n:m:u:w:o:qh", longopts, NULL)) != -1) {
        /* The lease's letters, as gpumon run, select and wait have them. */
        c = c == 'n'   ? GM_CLI_OPT_COUNT
            : c == 'm' ? GM_CLI_OPT_MIN_FREE
            : c == 'u' ? GM_CLI_OPT_MAX_UTIL
            : c == 'w' ? GM_CLI_OPT_WAIT
                       : c;
        switch (c) {
        case OPT_URL:
            o->url = optarg;
            break;
        case OPT_MODEL:
            if (!*optarg) {
                fprintf(stderr, "gpumon bench: --model is empty\n");
                return GM_EXIT_USAGE;
            }
            o->model = optarg;
            break;
        case OPT_API:
            if (gm_bench_api_parse(optarg, &o->api) < 0) {
                fprintf(stderr, "gpumon bench: --api \"%s\" is not completions or chat\n", optarg);
                return GM_EXIT_USAGE;
            }
            break;
        case OPT_CONC:
            if (!parse_list("--concurrency", optarg, false, o))
                return GM_EXIT_USAGE;
            o->have_conc = true;
            o->open_loop = false;
            break;
        case OPT_RATE:
            if (!parse_list("--request-rate", optarg, true, o))
                return GM_EXIT_USAGE;
            o->have_rate = true;
            o->open_loop = true;
            break;
        case OPT_BURST:
            if (!gm_cli_parse_double(cmd, "--burstiness", "a number", optarg, 0.01, 100,
                                     &o->burstiness))
                return GM_EXIT_USAGE;
            o->have_burstiness = true;
            break;
        case OPT_REQUESTS:
            if (!gm_cli_parse_uint(cmd, "--requests", optarg, 1, GM_BENCH_REQUESTS_MAX,
                                   &o->requests))
                return GM_EXIT_USAGE;
            break;
        case OPT_DURATION:
            if (!gm_cli_parse_duration(cmd, "--duration", optarg, 0.1, 7 * 86400, &o->duration_s))
                return GM_EXIT_USAGE;
            break;
        case OPT_WARMUP:
            if (!gm_cli_parse_uint(cmd, "--warmup", optarg, 0, 100000, &o->warmup))
                return GM_EXIT_USAGE;
            break;
        case OPT_IN:
            if (!gm_cli_parse_uint(cmd, "--input-tokens", optarg, 1, GM_BENCH_TOKENS_MAX,
                                   &o->input_tokens))
                return GM_EXIT_USAGE;
            o->have_input_tokens = true;
            break;
        case OPT_OUT:
            if (!gm_cli_parse_uint(cmd, "--output-tokens", optarg, 1, GM_BENCH_TOKENS_MAX,
                                   &o->output_tokens))
                return GM_EXIT_USAGE;
            break;
        case OPT_PROMPTS:
            o->prompts = optarg;
            break;
        case OPT_SLO:
            if (gm_bench_slo_parse(optarg, &o->slo, &err) < 0) {
                fprintf(stderr, "gpumon bench: --slo %s\n", err.msg);
                return GM_EXIT_USAGE;
            }
            break;
        case OPT_HEADER:
            if (!header_ok(optarg)) {
                fprintf(stderr,
                        "gpumon bench: --header expects 'Name: value' (a token name, no control "
                        "characters)\n");
                return GM_EXIT_USAGE;
            }
            if (o->nheaders == MAX_HEADERS) {
                fprintf(stderr, "gpumon bench: at most %d --header\n", MAX_HEADERS);
                return GM_EXIT_USAGE;
            }
            o->headers[o->nheaders++] = optarg;
            break;
        case OPT_KEYENV:
            o->api_key_env = optarg;
            break;
        case OPT_TIMEOUT:
            if (!gm_cli_parse_duration(cmd, "--timeout", optarg, 0.1, 86400, &o->timeout_s))
                return GM_EXIT_USAGE;
            break;
        case 'i':
            if (!gm_cli_parse_gpu_filter(cmd, optarg, &o->filter))
                return GM_EXIT_USAGE;
            o->have_filter = true;
            break;
        case OPT_INTERVAL:
            if (!gm_cli_parse_duration(cmd, "--interval", optarg, 0.01, 3600, &o->interval_s))
                return GM_EXIT_USAGE;
            break;
        case OPT_IDLE:
            if (!gm_cli_parse_duration(cmd, "--idle-seconds", optarg, 0, 600, &o->idle_s))
                return GM_EXIT_USAGE;
            break;
        case 'o':
            o->output = optarg;
            break;
        case OPT_LABEL:
            if (strlen(optarg) > 127) {
                fprintf(stderr, "gpumon bench: --label is longer than 127 bytes\n");
                return GM_EXIT_USAGE;
            }
            o->label = optarg;
            break;
        case OPT_TRACE:
            o->trace = optarg;
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
        default: {
            int taken = gm_cli_ctr_option(cmd, c, optarg, &o->ctr);
            if (taken == 0)
                taken = gm_cli_lease_option(cmd, c, optarg, &o->lease);
            if (taken < 0)
                return GM_EXIT_USAGE;
            if (taken == 0 && !gm_cli_default_option(cmd, c, argv, longopts, &o->src))
                return GM_EXIT_USAGE;
            break;
        }
        }
    }
    /* Operands are the container's arguments (after --), so only with --image. */
    if (!o->ctr.image && !gm_cli_no_operands(cmd, argc, argv))
        return GM_EXIT_USAGE;
    o->ctr_args = argv + optind;
    o->nctr_args = (size_t)(argc - optind);
    if (!gm_cli_ctr_validate(cmd, &o->ctr, true))
        return GM_EXIT_USAGE;
    const char *conflict =
        !o->url && !o->ctr.image              ? "--url or --image is required"
        : o->url && o->ctr.image              ? "give --url or --image, not both"
        : o->lease.given && !o->ctr.image     ? "--count, --task and the other lease options are "
                                                "for --image"
        : o->have_conc && o->have_rate        ? "give --concurrency or --request-rate, not both"
        : o->have_burstiness && !o->have_rate ? "--burstiness is for --request-rate"
        : o->requests && o->duration_s > 0    ? "give --requests or --duration, not both"
        : o->prompts && o->have_input_tokens
            ? "--input-tokens is for synthetic prompts, not --prompts"
        : o->db && o->no_db ? "give --db or --no-db, not both"
                            : NULL;
    if (conflict) {
        fprintf(stderr, "gpumon bench: %s (see gpumon bench --help)\n", conflict);
        return GM_EXIT_USAGE;
    }
    if (!o->have_conc && !o->have_rate) {
        o->conc[0] = 1;
        o->npoints = 1;
    }
    if (!o->requests && !(o->duration_s > 0))
        o->requests = 1000;
    return -1;
}

/* ---- progress --------------------------------------------------------------------------- */

typedef struct progress_ctx {
    bool tty;
    const char *load;
    size_t point, npoints;
    double duration_s;
    gm_cli_ctr *ctr;   /* --image: the server's container, looked at when requests fail */
    size_t seen;       /* results of the point already looked at */
    bool failing;      /* one failed since the container was last looked at */
    double next_check; /* monotonic seconds */
} progress_ctx;

/* How hard a point loads simulated GPUs: busier with more requests in flight, as a batching
 * server is (an open loop's rate stands for its concurrency). */
static double sim_level(const bench_opts *o, size_t i)
{
    double c = o->open_loop ? o->rate[i] : o->conc[i];
    return isinf(c) ? 1 : 0.55 + 0.45 * c / (c + 8);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static volatile sig_atomic_t stop_flag;
/* What simulated GPUs are doing (gm_collector_options.sim_load): written by this thread only
 * while no sample is being taken (before a point begins, after it ends), so the sampling
 * thread reads it under its lock. */
static double sim_load;
static volatile sig_atomic_t stop_signal;
static bool server_gone; /* --image: the container ended during a point */

/* A server that dies mid-point turns every request into a connection failure at full speed:
 * when requests fail, ask the engine (at most once a second, so a healthy server costs the
 * client's loop nothing) and stop the run if the container has ended. */
static void watch_server(progress_ctx *pc, const gm_bench_point *p)
{
    if (!pc->ctr || server_gone)
        return;
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

static void on_progress(void *arg, const gm_bench_point *p, size_t done, size_t total,
                        double elapsed)
{
    progress_ctx *pc = arg;
    watch_server(pc, p);
    if (!pc->tty || !p || server_gone)
        return;
    /* TTFT p50 of the latest 256 completed requests: live, and cheap to sort. */
    double v[256];
    size_t n = 0;
    for (size_t i = p->n; i > 0 && n < 256; i--) {
        double t = gm_bench_result_ttft_ms(&p->res[i - 1]);
        if (isfinite(t))
            v[n++] = t;
    }
    qsort(v, n, sizeof *v, cmp_double);
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    double eta = total ? (rate > 0 ? (double)(total - (done < total ? done : total)) / rate : NAN)
                       : pc->duration_s - elapsed;
    char line[256];
    int used = snprintf(line, sizeof line, "bench %s (%zu/%zu): %zu", pc->load, pc->point + 1,
                        pc->npoints, done);
    if (total)
        used += snprintf(line + used, sizeof line - (size_t)used, "/%zu", total);
    used += snprintf(line + used, sizeof line - (size_t)used, " done, %.1f req/s", rate);
    if (isfinite(eta) && eta >= 0)
        used += snprintf(line + used, sizeof line - (size_t)used, ", ETA %.0f s", eta);
    if (n)
        snprintf(line + used, sizeof line - (size_t)used, ", TTFT p50 %.1f ms", v[n / 2]);
    struct winsize ws;
    int width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col : 80;
    fprintf(stderr, "\r\033[K%.*s", width - 1, line);
    fflush(stderr);
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
    if (o->no_db)
        return NULL;
    char path[4096];
    gm_error err = {0};
    gm_store *st = NULL;
    if (o->db)
        snprintf(path, sizeof path, "%s", o->db);
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
    for (size_t k = 0; k < o->nheaders + o->ctr.nenv; k++) {
        bool header = k < o->nheaders;
        const char *p = header ? o->headers[k] : o->ctr.env[k - o->nheaders];
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

static json_t *config_json(const bench_opts *o, const gm_bench_prompts *ps)
{
    json_t *loads = json_array();
    for (size_t i = 0; loads && i < o->npoints; i++)
        json_array_append_new(
            loads, o->open_loop ? (isinf(o->rate[i]) ? json_string("inf") : json_real(o->rate[i]))
                                : json_integer(o->conc[i]));
    json_t *headers = json_array();
    for (size_t i = 0; headers && i < o->nheaders; i++) {
        const char *colon = strchr(o->headers[i], ':');
        json_array_append_new(headers,
                              gm_json_strn(o->headers[i], (size_t)(colon - o->headers[i])));
    }
    json_t *c = json_object();
    if (!c) {
        json_decref(loads);
        json_decref(headers);
        return NULL;
    }
    json_object_set_new(c, "load", json_string(o->open_loop ? "request_rate" : "concurrency"));
    json_object_set_new(c, o->open_loop ? "request_rates" : "concurrencies",
                        loads ? loads : json_array());
    json_object_set_new(c, "requests",
                        o->requests ? json_integer((json_int_t)o->requests) : json_null());
    json_object_set_new(c, "duration_s",
                        o->duration_s > 0 ? json_real(o->duration_s) : json_null());
    json_object_set_new(c, "warmup", json_integer((json_int_t)o->warmup));
    json_object_set_new(c, "input_tokens",
                        o->prompts ? json_null() : json_integer((json_int_t)o->input_tokens));
    json_object_set_new(c, "output_tokens", json_integer((json_int_t)o->output_tokens));
    json_object_set_new(c, "prompts", o->prompts ? gm_json_str(o->prompts) : json_null());
    json_object_set_new(c, "prompt_count", json_integer((json_int_t)ps->n));
    json_object_set_new(c, "slo", gm_bench_slo_json(&o->slo));
    json_object_set_new(c, "headers", headers ? headers : json_array());
    json_object_set_new(c, "api_key_env",
                        o->api_key_env ? gm_json_str(o->api_key_env) : json_null());
    json_object_set_new(c, "timeout_s", json_real(o->timeout_s));
    json_object_set_new(c, "interval_s", json_real(o->interval_s));
    json_object_set_new(c, "idle_seconds", json_real(o->idle_s));
    json_object_set_new(c, "seed", json_integer((json_int_t)o->src.seed));
    if (c && o->open_loop)
        json_object_set_new(c, "burstiness", json_real(o->burstiness));
    return c;
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

static double session_idle_power(gm_session *s, json_t *gpus)
{
    json_t *doc = gm_session_to_json(s);
    double total = 0;
    bool known = json_array_size(gpus) > 0;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        char key[16];
        snprintf(key, sizeof key, "%lld",
                 (long long)json_integer_value(json_object_get(g, "index")));
        const json_t *mean =
            json_object_get(json_object_get(json_object_get(json_object_get(doc, "gpu_stats"), key),
                                            "power_draw_w"),
                            "mean");
        if (json_is_number(mean)) {
            json_object_set_new(g, "idle_power_w", json_real(json_number_value(mean)));
            total += json_number_value(mean);
        } else {
            json_object_set_new(g, "idle_power_w", json_null());
            known = false;
        }
    }
    json_decref(doc);
    return known ? total : NAN;
}

/* ---- the GPUs ----------------------------------------------------------------------------- */

/* The followed GPUs as the document lists them (idle power filled in later), from the
 * sampler's first sample; their indices into idx. */
static json_t *gpus_doc(gm_bench_gpu *gpu, unsigned *idx, size_t *nidx)
{
    json_t *a = json_array();
    *nidx = gm_bench_gpu_indices(gpu, idx);
    for (size_t k = 0; a && k < *nidx; k++) {
        const gm_gpu *g = gm_snapshot_gpu(gm_bench_gpu_first(gpu), idx[k]);
        json_array_append_new(
            a, json_pack("{s:I, s:o, s:o, s:n}", "index", (json_int_t)idx[k], "name",
                         g ? gm_json_text(g->name, sizeof g->name) : json_null(), "uuid",
                         g ? gm_json_text(g->uuid, sizeof g->uuid) : json_null(), "idle_power_w"));
    }
    return a;
}

/* Idle power over --idle-seconds (NAN when not measured or not known). */
static double measure_idle(const bench_opts *o, gm_bench_gpu *gpu, json_t *gpus_json,
                           int64_t *gpu_samples)
{
    double idle_w = NAN;
    if (!(o->idle_s > 0))
        return idle_w;
    gm_error err = {0};
    if (!o->quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "gpumon bench: measuring idle power for %g s", o->idle_s);
    gm_bench_gpu_point ip;
    if (gm_bench_gpu_begin(gpu, "idle", &err) == GM_OK) {
        gm_clock_sleep_until(gm_clock_mono_s() + o->idle_s, &stop_flag);
        if (gm_bench_gpu_end(gpu, &ip, &err) == GM_OK) {
            idle_w = session_idle_power(ip.session, gpus_json);
            *gpu_samples += (int64_t)gm_session_sample_count(ip.session);
            gm_bench_gpu_point_free(&ip);
        }
    }
    if (!o->quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    return idle_w;
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
 * on them and waits until it answers, sampling its loading; then o->url is the server's.
 * Returns an exit status, or -1 when stopped by a signal. */
static int image_start(bench_opts *o, const char *id, image_run *ir, gm_collector **colp,
                       gm_snapshot *snap, gm_bench_gpu **gpup, json_t **gpus_json, double *idle_w,
                       int64_t *gpu_samples)
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
    colopt.no_host = true;
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
    gm_bench_gpu_options gopt = {.collector = *colp,
                                 .gpus = idx,
                                 .ngpus = n,
                                 .interval_s = o->interval_s,
                                 .server_later = true};
    if (gm_bench_gpu_start(&gopt, gpup, &err) < 0) {
        fprintf(stderr, "gpumon bench: cannot sample the GPUs: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    unsigned fidx[GM_MAX_GPUS];
    size_t nf;
    *gpus_json = gpus_doc(*gpup, fidx, &nf);
    *idle_w = measure_idle(o, *gpup, *gpus_json, gpu_samples);
    if (stop_flag)
        return -1;
    /* Loading: sampled from just before the start until the server answers. */
    sim_load = 0;
    bool sampling = gm_bench_gpu_begin(*gpup, "loading", &err) == GM_OK;
    rc = gm_cli_ctr_start(ir->ctr, id, o->ctr_args, o->nctr_args, idp, n, true);
    if (rc == GM_EXIT_OK && gm_cli_ctr_pid(ir->ctr) > 0)
        gm_bench_gpu_add_server(*gpup, (uint32_t)gm_cli_ctr_pid(ir->ctr), NULL);
    if (rc == GM_EXIT_OK)
        rc = gm_cli_ctr_wait_ready(ir->ctr, &stop_flag);
    gm_bench_gpu_point lp;
    if (sampling && gm_bench_gpu_end(*gpup, &lp, &err) == GM_OK) {
        ir->loading = loading_json(lp.session);
        *gpu_samples += (int64_t)gm_session_sample_count(lp.session);
        gm_bench_gpu_point_free(&lp);
    }
    if (rc != GM_EXIT_OK)
        return rc;
    o->url = gm_cli_ctr_url(ir->ctr);
    return GM_EXIT_OK;
}

/* The container's record for the document: its life plus the loading figures. */
static json_t *image_json(const image_run *ir)
{
    json_t *j = gm_cli_ctr_json(ir->ctr);
    if (j)
        json_object_set_new(j, "loading", ir->loading ? json_incref(ir->loading) : json_null());
    return j;
}

/* ---- the result --------------------------------------------------------------------------- */

typedef struct result {
    const char *id;
    int64_t started_ms, ended_ms;
    const char *base, *model, *provider;
    const char *driver_version;
    json_t *gpus; /* stolen */
    double idle_w;
    json_t *points; /* stolen */
    const image_run *ir;
} result;

static json_t *make_doc(const bench_opts *o, const gm_bench_prompts *prompts, result *r)
{
    char started[40], ended[40];
    gm_json_time(r->started_ms, started, sizeof started);
    gm_json_time(r->ended_ms, ended, sizeof ended);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_t *clientj = json_pack("{s:s, s:s, s:o}", "gpumon", GM_VERSION, "libcurl",
                                gm_bench_client_curl_version(), "hostname", gm_json_str(host));
    json_t *doc = json_pack(
        "{s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:s, s:f, s:o, s:o, s:s, s:o, s:o, s:o, s:b}", "id",
        r->id, "kind", "bench", "label", o->label ? gm_json_str(o->label) : json_null(), "url",
        r->base && *r->base ? gm_json_str(r->base) : json_null(), "model",
        r->model && *r->model ? gm_json_str(r->model) : json_null(), "api",
        gm_bench_api_name(o->api), "started", started, "ended", ended, "duration_s",
        (double)(r->ended_ms - r->started_ms) / 1000.0, "config", config_json(o, prompts), "client",
        clientj ? clientj : json_null(), "provider", r->provider, "gpus",
        r->gpus ? r->gpus : json_array(), "idle_power_w",
        isfinite(r->idle_w) ? json_real(r->idle_w) : json_null(), "points",
        r->points ? r->points : json_array(), "interrupted", stop_flag != 0);
    r->gpus = r->points = NULL;
    if (!doc)
        return NULL;
    if (r->driver_version && *r->driver_version)
        json_object_set_new(doc, "driver_version", gm_json_str(r->driver_version));
    if (r->ir && r->ir->ctr) {
        const char *key;
        json_t *val;
        json_object_foreach(r->ir->attach, key, val) json_object_set(doc, key, val);
        json_object_set_new(doc, "container", image_json(r->ir));
    }
    return doc;
}

/* Writes -o, stores the document (a benchmark with no point only when keep_empty: a container
 * that never became ready), prints the summary. Returns rc, or a failure when -o fails. */
static int keep_result(const bench_opts *o, int argc, char **argv, gm_store *st, json_t *doc,
                       int64_t started_ms, int64_t ended_ms, int64_t gpu_samples, bool keep_empty,
                       int rc)
{
    gm_error err = {0};
    if (o->output) {
        gm_file *f = NULL;
        if (gm_file_open_output(o->output, GM_FILE_REPLACE, &f, &err) < 0 ||
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
        if (stored)
            fprintf(stderr, "stored as %s (gpumon history show %s)\n", id, id);
        if (o->output && rc != GM_EXIT_FAILURE)
            fprintf(stderr, "written to %s\n", o->output);
    }
    return rc;
}

int gm_cli_bench(int argc, char **argv)
{
    bench_opts o = {.api = GM_BENCH_API_COMPLETIONS,
                    .burstiness = 1,
                    .input_tokens = 128,
                    .output_tokens = 128,
                    .timeout_s = 600,
                    .interval_s = 0.1,
                    .idle_s = 2};
    gm_bench_slo_none(&o.slo);
    gm_cli_ctr_defaults(&o.ctr);
    gm_cli_lease_defaults(&o.lease);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;

    gm_error err = {0};
    gm_bench_client *client = NULL;
    gm_collector *col = NULL;
    gm_snapshot *snap = NULL;
    gm_bench_gpu *gpu = NULL;
    gm_store *st = NULL;
    FILE *trace = NULL;
    gm_file *trace_file = NULL;
    json_t *doc = NULL, *points = NULL, *gpus_json = NULL;
    gm_bench_prompts prompts = {0};
    image_run ir = {0};
    char model[512] = "";
    rc = GM_EXIT_OK;

    /* The key, from the environment only: never from argv, which ps shows. */
    const char *key = NULL;
    if (o.api_key_env) {
        key = getenv(o.api_key_env);
        if (!key || !*key) {
            fprintf(stderr, "gpumon bench: --api-key-env: environment variable %s is %s\n",
                    o.api_key_env, key ? "empty" : "not set");
            return GM_EXIT_USAGE;
        }
    }
    char base[GM_BENCH_URL_MAX] = "";
    if (o.url && gm_bench_url_base(o.url, base, sizeof base, &err) < 0) {
        fprintf(stderr, "gpumon bench: --url: %s\n", err.msg);
        return GM_EXIT_USAGE;
    }
    /* Prompts: a bad file is bad input (2). */
    if (o.prompts) {
        if (gm_bench_prompts_load(o.prompts, o.api, &prompts, &err) < 0) {
            fprintf(stderr, "gpumon bench: --prompts %s\n", err.msg);
            return GM_EXIT_USAGE;
        }
    } else {
        size_t total = o.requests ? (size_t)o.requests * o.npoints : SYNTHETIC_PROMPTS;
        size_t count = total < SYNTHETIC_PROMPTS ? total : SYNTHETIC_PROMPTS;
        if (gm_bench_prompts_synthetic((unsigned)o.input_tokens, count, o.src.seed, &prompts,
                                       &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            return GM_EXIT_FAILURE;
        }
    }

    char id[GM_SESSION_ID_LEN];
    int64_t started_ms = 0;
    double idle_w = NAN;
    int64_t gpu_samples = 0;
    bool have_gpus = false;
    unsigned idx[GM_MAX_GPUS];
    size_t nidx = 0;
    if (o.ctr.image) {
        /* The server is ours to start: the benchmark begins with the GPUs, then the
         * container, which is named after the benchmark's id. */
        signals_install();
        started_ms = gm_clock_wall_ms();
        gm_session_make_id(id, sizeof id, started_ms);
        if (!(snap = gm_snapshot_new())) {
            rc = GM_EXIT_FAILURE;
            goto out;
        }
        st = open_store(&o);
        rc = image_start(&o, id, &ir, &col, snap, &gpu, &gpus_json, &idle_w, &gpu_samples);
        if (rc != GM_EXIT_OK) {
            if (rc < 0 || stop_flag)
                rc = 128 + (stop_signal ? stop_signal : SIGINT);
            /* A container that ended before it was ready, or never became ready: the record
             * of it (its output, the loading) is kept. */
            gm_cli_ctr_finish(ir.ctr);
            const char *failure = ir.ctr ? gm_cli_ctr_failure(ir.ctr) : NULL;
            if (failure && (strcmp(failure, "exited") == 0 || strcmp(failure, "timeout") == 0)) {
                result r = {.id = id,
                            .started_ms = started_ms,
                            .ended_ms = gm_clock_wall_ms(),
                            .base = gm_cli_ctr_url(ir.ctr),
                            .provider = col ? gm_collector_provider(col) : "none",
                            .driver_version = gpu ? gm_bench_gpu_first(gpu)->driver_version : NULL,
                            .gpus = gpus_json,
                            .idle_w = idle_w,
                            .ir = &ir};
                gpus_json = NULL;
                if ((doc = make_doc(&o, &prompts, &r)))
                    rc = keep_result(&o, argc, argv, st, doc, r.started_ms, r.ended_ms, gpu_samples,
                                     true, rc);
            }
            goto out;
        }
        have_gpus = true;
        nidx = gm_bench_gpu_indices(gpu, idx);
        if (gm_bench_url_base(o.url, base, sizeof base, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
            goto out;
        }
    }

    gm_bench_client_options copt = {.url = o.url,
                                    .api = o.api,
                                    .headers = o.headers,
                                    .nheaders = o.nheaders,
                                    .api_key = key,
                                    .timeout_s = o.timeout_s,
                                    .max_in_flight = raise_nofile()};
    if (gm_bench_client_new(&copt, &client, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        rc = err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
        goto out;
    }
    if (o.model) {
        snprintf(model, sizeof model, "%s", o.model);
    } else if (gm_bench_client_first_model(client, model, sizeof model, &err) < 0) {
        /* Unreached, --model would not help: say that first. */
        if (gm_bench_client_unreached(client))
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
        else
            fprintf(stderr, "gpumon bench: cannot learn the model (give --model): %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
        goto out;
    }
    if (gm_bench_client_prepare(client, model, &prompts, (unsigned)o.output_tokens, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
        goto out;
    }

    if (!o.ctr.image) {
        /* GPUs: read through the collector like every command; none is a warning unless
         * --gpus. */
        gm_collector_options colopt;
        if (!gm_cli_collector_options("bench", &o.src, &colopt)) {
            rc = GM_EXIT_USAGE;
            goto out;
        }
        colopt.no_host = true;
        colopt.slow_period_ms = -1; /* the energy counter at every sample: exact per point */
        sim_load = 0; /* simulated GPUs: a server idles on them until a point loads it */
        colopt.sim_load = &sim_load;
        if (!(snap = gm_snapshot_new())) {
            rc = GM_EXIT_FAILURE;
            goto out;
        }
        /* A provider asked for by name that cannot be opened is an error, as for record; auto
         * with nothing to read opens as provider "none" and the run goes on without GPUs. */
        int orc = GM_EXIT_OK;
        if (!(col = gm_cli_collector_open("bench", &colopt, &orc))) {
            rc = orc;
            goto out;
        }
        have_gpus = col && strcmp(gm_collector_provider(col), "none") != 0 &&
                    gm_collector_sample(col, snap, &err) == GM_OK && snap->gpu_count > 0;
        if (!have_gpus) {
            if (o.have_filter) {
                fprintf(stderr, "gpumon bench: no GPU found: %s\n",
                        err.msg[0] ? err.msg
                        : col      ? gm_collector_diagnosis(col)
                                   : "no provider");
                rc = GM_EXIT_NO_GPU;
                goto out;
            }
            if (!o.quiet)
                fprintf(stderr, "gpumon bench: warning: no GPU found; measuring the server "
                                "without its GPUs\n");
            gm_collector_close(col);
            col = NULL;
        } else if (o.have_filter &&
                   !gm_cli_gpu_filter_resolve("bench", &o.filter, snap, idx, &nidx)) {
            rc = GM_EXIT_USAGE;
            goto out;
        }
    }

    if (o.trace) {
        if (gm_file_open_output(o.trace, GM_FILE_STREAM, &trace_file, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
            goto out;
        }
        trace = gm_file_stream(trace_file);
    }
    if (!o.ctr.image) {
        st = open_store(&o);
        signals_install();
        started_ms = gm_clock_wall_ms();
        gm_session_make_id(id, sizeof id, started_ms);
        if (have_gpus) {
            gm_bench_gpu_options gopt = {.collector = col,
                                         .gpus = o.have_filter ? idx : NULL,
                                         .ngpus = o.have_filter ? nidx : 0,
                                         .interval_s = o.interval_s};
            if (gm_bench_gpu_start(&gopt, &gpu, &err) < 0) {
                fprintf(stderr, "gpumon bench: cannot sample the GPUs: %s\n", err.msg);
                rc = GM_EXIT_FAILURE;
                goto out;
            }
            gpus_json = gpus_doc(gpu, idx, &nidx);
            idle_w = measure_idle(&o, gpu, gpus_json, &gpu_samples);
        } else {
            gpus_json = json_array();
        }
    }

    /* One request first: a server that is down or answers garbage fails here, clearly. */
    if (!stop_flag) {
        gm_bench_point check;
        gm_bench_point_init(&check);
        gm_bench_run cr = {.concurrency = 1, .requests = 1, .stop = &stop_flag};
        int crc = gm_bench_client_run(client, &cr, &check, &err);
        const gm_bench_result *r = check.n ? &check.res[0] : NULL;
        if (crc < 0 || (!stop_flag && (!r || r->outcome != GM_BENCH_OK))) {
            const char *k;
            json_t *v;
            const char *why = crc < 0 ? err.msg : "no answer";
            json_object_foreach(check.error_examples, k, v) why = json_string_value(v);
            char key_name[32] = "";
            if (r)
                gm_bench_outcome_key((gm_bench_outcome)r->outcome, r->http_status, key_name,
                                     sizeof key_name);
            fprintf(stderr, "gpumon bench: the server at %s%s failed the first request (%s): %s\n",
                    base, gm_bench_api_path(o.api), key_name[0] ? key_name : "error", why);
            gm_bench_point_free(&check);
            rc = GM_EXIT_FAILURE;
            goto out;
        }
        gm_bench_point_free(&check);
    }

    points = json_array();
    bool any_empty = false, cut_short = false;
    for (size_t i = 0; i < o.npoints && !stop_flag; i++) {
        if (ir.ctr && gm_cli_ctr_ended(ir.ctr)) {
            server_gone = true;
            break;
        }
        char load[64];
        if (o.open_loop)
            snprintf(load, sizeof load, isinf(o.rate[i]) ? "rate inf" : "rate %g/s", o.rate[i]);
        else
            snprintf(load, sizeof load, "concurrency %u", o.conc[i]);
        progress_ctx pc = {.tty = !o.quiet && isatty(STDERR_FILENO),
                           .load = load,
                           .point = i,
                           .npoints = o.npoints,
                           .duration_s = o.duration_s,
                           .ctr = ir.ctr};
        gm_bench_run run = {.open_loop = o.open_loop,
                            .concurrency = o.open_loop ? 0 : o.conc[i],
                            .rate = o.open_loop ? o.rate[i] : 0,
                            .burstiness = o.burstiness,
                            .seed = o.src.seed + i,
                            .stop = &stop_flag,
                            .progress = on_progress,
                            .arg = &pc};
        if (o.warmup) {
            run.warmup = true;
            run.requests = (size_t)o.warmup;
            if (gm_bench_client_run(client, &run, NULL, &err) < 0) {
                fprintf(stderr, "%sgpumon bench: %s\n", pc.tty ? "\r\033[K" : "", err.msg);
                rc = GM_EXIT_FAILURE;
                goto out;
            }
            if (stop_flag)
                break;
        }
        run.warmup = false;
        run.requests = (size_t)o.requests;
        run.duration_s = o.duration_s;
        run.trace = trace;
        run.trace_point = (unsigned)i;
        gm_bench_point pt;
        gm_bench_point_init(&pt);
        sim_load = sim_level(&o, i);
        if (gpu && gm_bench_gpu_begin(gpu, load, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            gm_bench_point_free(&pt);
            rc = GM_EXIT_FAILURE;
            goto out;
        }
        int runrc = gm_bench_client_run(client, &run, &pt, &err);
        gm_bench_gpu_point gp = {0};
        if (gpu)
            gm_bench_gpu_end(gpu, &gp, &err);
        sim_load = 0;
        if (pc.tty)
            fprintf(stderr, "\r\033[K");
        if (runrc < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            gm_bench_gpu_point_free(&gp);
            gm_bench_point_free(&pt);
            rc = GM_EXIT_FAILURE;
            goto out;
        }
        json_t *pj = gm_bench_point_json(&pt, &o.slo);
        if (!pj) {
            gm_bench_gpu_point_free(&gp);
            gm_bench_point_free(&pt);
            fprintf(stderr, "gpumon bench: out of memory\n");
            rc = GM_EXIT_FAILURE;
            goto out;
        }
        gm_bench_point_add_gpu(pj, gp.session, idle_w, gp.sample_errors);
        gm_bench_point_add_timeline(pj, gp.session, started_ms);
        if (gp.session)
            gpu_samples += (int64_t)gm_session_sample_count(gp.session);
        /* Validity: the GPUs' observations, and the client's own load. */
        gm_bench_check chk = gp.check;
        if (!gpu) {
            memset(&chk, 0, sizeof chk);
        }
        chk.foreign = gp.foreign;
        chk.client_cpu_pct = gm_bench_point_cpu_pct(&pt);
        /* Schedule lag judges an open loop, whose arrivals are due at set times (all at once
         * with rate inf: no schedule to keep). In a closed loop a burst of completions is
         * refilled one request after another, tens of microseconds each, so the last of 256
         * goes a few ms after its slot freed without the client being saturated; TTFT counts
         * from each request's own send, and the CPU rule judges the client there. */
        chk.lag_p99_ms = o.open_loop && !isinf(o.rate[i]) ? gm_bench_dist_pct(&pt.lag_ms, 99) : NAN;
        const gm_bench_result *lie = NULL;
        chk.usage_distrusted = gm_bench_point_usage_distrusted(&pt, &lie);
        chk.completed = (size_t)json_integer_value(json_object_get(pj, "completed"));
        if (lie) {
            chk.usage_claimed = lie->usage_claimed;
            chk.usage_chunks = lie->chunks;
            chk.usage_asked = lie->asked_tokens;
        }
        json_t *reasons = gm_bench_check_reasons(&chk);
        if (reasons && server_gone) {
            json_array_append_new(reasons, json_string("server_exited"));
            cut_short = true;
        }
        gm_bench_point_set_validity(pj, reasons);
        if (json_integer_value(json_object_get(pj, "completed")) == 0 && !pt.interrupted)
            any_empty = true;
        gm_bench_gpu_point_free(&gp);
        gm_bench_point_free(&pt);
        json_array_append_new(points, pj);
        if (!o.quiet)
            gm_bench_print_point(stderr, pj);
    }
    if (trace_file) {
        trace = NULL;
        gm_file *tf = trace_file;
        trace_file = NULL;
        if (gm_file_commit(tf, NULL, &err) < 0) {
            fprintf(stderr, "gpumon bench: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        }
    }
    /* The stop was ours, not a signal's: the run ends as a failure, not as interrupted. */
    if (server_gone && !stop_signal)
        stop_flag = 0;

    /* The container's exit state belongs in the document: it is stopped first. */
    if (ir.ctr)
        gm_cli_ctr_finish(ir.ctr);
    result r = {.id = id,
                .started_ms = started_ms,
                .ended_ms = gm_clock_wall_ms(),
                .base = base,
                .model = model,
                .provider = col ? gm_collector_provider(col) : "none",
                .driver_version = have_gpus && gpu ? gm_bench_gpu_first(gpu)->driver_version
                                  : have_gpus      ? snap->driver_version
                                                   : NULL,
                .gpus = gpus_json,
                .idle_w = idle_w,
                .points = points,
                .ir = &ir};
    gpus_json = points = NULL;
    if (!(doc = make_doc(&o, &prompts, &r))) {
        fprintf(stderr, "gpumon bench: out of memory\n");
        rc = GM_EXIT_FAILURE;
        goto out;
    }
    rc = keep_result(&o, argc, argv, st, doc, r.started_ms, r.ended_ms, gpu_samples, false, rc);
    if (server_gone) {
        fprintf(stderr,
                "gpumon bench: the server's container ended during the benchmark; %zu of %zu "
                "point%s measured%s\n",
                json_array_size(json_object_get(doc, "points")), o.npoints,
                o.npoints == 1 ? "" : "s",
                cut_short ? " (the last one cut short, marked invalid: server_exited)" : "");
        if (rc == GM_EXIT_OK)
            rc = GM_EXIT_FAILURE;
    }
    if (rc == GM_EXIT_OK && any_empty) {
        fprintf(stderr, "gpumon bench: a point completed no request (see its errors)\n");
        rc = GM_EXIT_FAILURE;
    }
    if (rc == GM_EXIT_OK && stop_flag)
        rc = 128 + (stop_signal ? stop_signal : SIGINT);

out:
    /* The container goes before the lease: its GPUs are not free until it is gone. */
    gm_cli_ctr_close(ir.ctr);
    gm_lease_release(ir.lease);
    json_decref(ir.attach);
    json_decref(ir.loading);
    signals_restore();
    json_decref(doc);
    json_decref(points);
    json_decref(gpus_json);
    gm_bench_gpu_free(gpu);
    gm_snapshot_free(snap);
    gm_collector_close(col);
    gm_bench_client_free(client);
    gm_bench_prompts_free(&prompts);
    gm_store_close(st);
    /* A run cut short keeps the requests traced so far. */
    if (trace_file && gm_file_commit(trace_file, NULL, &err) < 0) {
        fprintf(stderr, "gpumon bench: %s\n", err.msg);
        if (rc == GM_EXIT_OK)
            rc = GM_EXIT_FAILURE;
    }
    return rc;
}
