/* container.c - one container's life for `bench --image` and `run --image` (container.h). */
#include "cli/container.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "base/clock.h"
#include "base/parse.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/container.h"
#include "core/docker.h"

/* Between readiness checks; each probe waits at most PROBE_TIMEOUT_MS. */
#define READY_POLL_S     0.5
#define PROBE_TIMEOUT_MS 2000L
/* A line of progress this often when stderr is not a terminal. */
#define QUIET_PROGRESS_S 30.0

static const char *const default_ready_paths[] = {"/v1/health/ready", "/health", "/v1/models"};

struct gm_cli_ctr {
    const char *cmd;
    const gm_cli_ctr_opts *o;
    bool quiet, tty;
    gm_docker *d;
    char engine[128];
    /* Env as sent ("K=V", values possibly secret) and the names for the record. */
    char *env[GM_CLI_CTR_ENV_MAX];
    size_t nenv;
    char image_id[GM_DOCKER_ID_LEN];
    bool pulled;
    char name[GM_DOCKER_ID_LEN];
    char id[GM_DOCKER_ID_LEN];
    json_t *args, *gpus;
    bool created, started, published;
    pid_t pid;
    unsigned host_port;
    char url[96];
    double started_s;     /* monotonic, just before POST start */
    double ready_after_s; /* NAN until ready */
    char ready_path[128];
    const char *failure; /* NULL, "exited", "timeout", "interrupted", "error" */
    json_t *exit, *logs;
    bool finished, removed;
    bool expect_exit; /* run: exiting is how it ends */
};

void gm_cli_ctr_defaults(gm_cli_ctr_opts *o)
{
    memset(o, 0, sizeof *o);
    o->port = 8000;
    o->ready_timeout_s = 1800;
}

static const char *opt_name(int c)
{
    switch (c) {
    case GM_CLI_OPT_IMAGE:
        return "--image";
    case GM_CLI_OPT_CPORT:
        return "--container-port";
    case GM_CLI_OPT_ENV:
        return "--env";
    case GM_CLI_OPT_VOLUME:
        return "--volume";
    case GM_CLI_OPT_SHM:
        return "--shm-size";
    case GM_CLI_OPT_READY_PATH:
        return "--ready-path";
    case GM_CLI_OPT_READY_TIMEOUT:
        return "--ready-timeout";
    case GM_CLI_OPT_KEEP:
        return "--keep-container";
    case GM_CLI_OPT_PULL:
        return "--pull";
    }
    return NULL;
}

static bool env_name_ok(const char *s, size_t n)
{
    if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

int gm_cli_ctr_option(const char *cmd, int c, const char *arg, gm_cli_ctr_opts *o)
{
    const char *name = opt_name(c);
    if (!name)
        return 0;
    if (c != GM_CLI_OPT_IMAGE && !o->given)
        o->given = name;
    unsigned long long v;
    switch (c) {
    case GM_CLI_OPT_IMAGE:
        if (!gm_docker_ref_ok(arg)) {
            fprintf(stderr,
                    "gpumon %s: --image \"%s\" is not an image reference (NAME[:TAG] or "
                    "NAME@DIGEST)\n",
                    cmd, arg);
            return -1;
        }
        o->image = arg;
        break;
    case GM_CLI_OPT_CPORT:
        if (!gm_cli_parse_uint(cmd, "--container-port", arg, 1, 65535, &v))
            return -1;
        o->port = (unsigned)v;
        o->port_given = true;
        break;
    case GM_CLI_OPT_ENV: {
        const char *eq = strchr(arg, '=');
        if (!env_name_ok(arg, eq ? (size_t)(eq - arg) : strlen(arg))) {
            fprintf(stderr,
                    "gpumon %s: --env expects NAME=VALUE or NAME (a variable of gpumon's own "
                    "environment), NAME of letters, digits and _\n",
                    cmd);
            return -1;
        }
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        /* The GPUs go to the engine as DeviceRequests naming the leased UUIDs; a device list
         * of the user's own would contradict them (and CUDA would renumber the GPUs). */
        if ((nlen == 20 && strncmp(arg, "CUDA_VISIBLE_DEVICES", nlen) == 0) ||
            (nlen == 22 && strncmp(arg, "NVIDIA_VISIBLE_DEVICES", nlen) == 0)) {
            fprintf(stderr,
                    "gpumon %s: --env %.*s: gpumon gives the container the GPUs it leased "
                    "(DeviceRequests by UUID); choose them with --count, --task or --gpus\n",
                    cmd, (int)nlen, arg);
            return -1;
        }
        if (o->nenv == GM_CLI_CTR_ENV_MAX) {
            fprintf(stderr, "gpumon %s: at most %d --env\n", cmd, GM_CLI_CTR_ENV_MAX);
            return -1;
        }
        o->env[o->nenv++] = arg;
        break;
    }
    case GM_CLI_OPT_VOLUME: {
        const char *colon = strchr(arg, ':');
        if (!colon || colon == arg || colon[1] != '/') {
            fprintf(stderr,
                    "gpumon %s: --volume expects HOST:CONTAINER[:OPTIONS] with an absolute "
                    "CONTAINER path, got \"%s\"\n",
                    cmd, arg);
            return -1;
        }
        if (o->nvolumes == GM_CLI_CTR_VOLUMES_MAX) {
            fprintf(stderr, "gpumon %s: at most %d --volume\n", cmd, GM_CLI_CTR_VOLUMES_MAX);
            return -1;
        }
        o->volumes[o->nvolumes++] = arg;
        break;
    }
    case GM_CLI_OPT_SHM:
        if (gm_parse_size_bytes(arg, 1024 * 1024, INT64_C(1) << 50, &o->shm_bytes) < 0) {
            fprintf(stderr,
                    "gpumon %s: --shm-size expects a size from 1m, such as 16GB, 16g or 512m, "
                    "got \"%s\"\n",
                    cmd, arg);
            return -1;
        }
        break;
    case GM_CLI_OPT_READY_PATH:
        if (arg[0] != '/' || strlen(arg) > 120 || strpbrk(arg, " \t\r\n#")) {
            fprintf(stderr,
                    "gpumon %s: --ready-path expects a path starting with / (such as "
                    "/v1/health/ready), got \"%s\"\n",
                    cmd, arg);
            return -1;
        }
        o->ready_path = arg;
        o->ready_given = true;
        break;
    case GM_CLI_OPT_READY_TIMEOUT:
        if (!gm_cli_parse_duration(cmd, "--ready-timeout", arg, 1, 7 * 86400.0,
                                   &o->ready_timeout_s))
            return -1;
        o->ready_given = true;
        break;
    case GM_CLI_OPT_KEEP:
        o->keep = true;
        break;
    case GM_CLI_OPT_PULL:
        o->pull = true;
        break;
    }
    return 1;
}

bool gm_cli_ctr_validate(const char *cmd, const gm_cli_ctr_opts *o, bool server)
{
    if (!o->image && o->given) {
        fprintf(stderr, "gpumon %s: %s is for --image (see gpumon %s --help)\n", cmd, o->given,
                cmd);
        return false;
    }
    if (!server && o->ready_given) {
        fprintf(stderr,
                "gpumon %s: --ready-path and --ready-timeout are for gpumon bench (a server); "
                "gpumon %s waits for the container to exit\n",
                cmd, cmd);
        return false;
    }
    return true;
}

/* ---- the container ----------------------------------------------------------------------- */

gm_cli_ctr *gm_cli_ctr_open(const char *cmd, const gm_cli_ctr_opts *o, bool quiet, int *rc)
{
    gm_cli_ctr *c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "gpumon %s: out of memory\n", cmd);
        *rc = GM_EXIT_FAILURE;
        return NULL;
    }
    c->cmd = cmd;
    c->o = o;
    c->quiet = quiet;
    c->tty = !quiet && isatty(STDERR_FILENO);
    c->ready_after_s = NAN;
    /* --env NAME passes gpumon's own value through, never shown: the way to hand a container
     * NGC_API_KEY without writing it on a command line. */
    for (size_t i = 0; i < o->nenv; i++) {
        const char *e = o->env[i];
        if (strchr(e, '=')) {
            c->env[c->nenv] = strdup(e);
        } else {
            const char *v = getenv(e);
            if (!v) {
                fprintf(stderr, "gpumon %s: --env %s: %s is not set in gpumon's environment\n", cmd,
                        e, e);
                *rc = GM_EXIT_USAGE;
                gm_cli_ctr_close(c);
                return NULL;
            }
            size_t n = strlen(e) + strlen(v) + 2;
            if ((c->env[c->nenv] = malloc(n)))
                snprintf(c->env[c->nenv], n, "%s=%s", e, v);
        }
        if (!c->env[c->nenv++]) {
            fprintf(stderr, "gpumon %s: out of memory\n", cmd);
            *rc = GM_EXIT_FAILURE;
            gm_cli_ctr_close(c);
            return NULL;
        }
    }
    gm_error err = {0};
    if (gm_docker_open(NULL, &c->d, &err) < 0 ||
        gm_docker_version(c->d, c->engine, sizeof c->engine, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
        *rc = err.code == GM_EINVAL || err.code == GM_ENOTSUP ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
        gm_cli_ctr_close(c);
        return NULL;
    }
    *rc = GM_EXIT_OK;
    return c;
}

typedef struct pull_ctx {
    gm_cli_ctr *c;
    const volatile sig_atomic_t *stop;
    double last_s;
    char last[256];
} pull_ctx;

static void pull_data(void *arg, int stream, const char *text, size_t len)
{
    (void)stream;
    pull_ctx *p = arg;
    if (p->c->quiet)
        return;
    snprintf(p->last, sizeof p->last, "%.*s", (int)len, text);
    if (p->c->tty) {
        fprintf(stderr, "\r\033[Kgpumon %s: pulling %s: %.60s", p->c->cmd, p->c->o->image, p->last);
        fflush(stderr);
    } else if (gm_clock_mono_s() - p->last_s >= 5) {
        fprintf(stderr, "gpumon %s: pulling %s: %s\n", p->c->cmd, p->c->o->image, p->last);
        p->last_s = gm_clock_mono_s();
    }
}

static bool not_stopped(void *arg)
{
    const pull_ctx *p = arg;
    return !(p->stop && *p->stop);
}

int gm_cli_ctr_image(gm_cli_ctr *c, const volatile sig_atomic_t *stop)
{
    gm_error err = {0};
    int rc = gm_docker_image_id(c->d, c->o->image, c->image_id, sizeof c->image_id, &err);
    if (rc == GM_OK)
        return GM_EXIT_OK;
    if (rc != GM_ENOENT) {
        fprintf(stderr, "gpumon %s: %s\n", c->cmd, err.msg);
        c->failure = "error";
        return GM_EXIT_FAILURE;
    }
    if (!c->o->pull) {
        fprintf(stderr, "gpumon %s: %s; give --pull to pull it\n", c->cmd, err.msg);
        c->failure = "error";
        return GM_EXIT_FAILURE;
    }
    if (!c->quiet)
        fprintf(stderr, "gpumon %s: pulling %s\n", c->cmd, c->o->image);
    pull_ctx p = {.c = c, .stop = stop, .last_s = gm_clock_mono_s()};
    gm_docker_stream s = {.data = pull_data, .tick = not_stopped, .arg = &p};
    rc = gm_docker_pull(c->d, c->o->image, &s, &err);
    if (c->tty)
        fprintf(stderr, "\r\033[K");
    if (rc == GM_OK)
        rc = gm_docker_image_id(c->d, c->o->image, c->image_id, sizeof c->image_id, &err);
    if (rc < 0) {
        if (rc != GM_ECANCELED)
            fprintf(stderr, "gpumon %s: %s\n", c->cmd, err.msg);
        c->failure = rc == GM_ECANCELED ? "interrupted" : "error";
        return rc == GM_ECANCELED ? -1 : GM_EXIT_FAILURE;
    }
    c->pulled = true;
    if (!c->quiet)
        fprintf(stderr, "gpumon %s: pulled %s (%s)\n", c->cmd, c->o->image, c->image_id);
    return GM_EXIT_OK;
}

void gm_cli_ctr_expect_exit(gm_cli_ctr *c)
{
    c->expect_exit = true;
}

int gm_cli_ctr_start(gm_cli_ctr *c, const char *run_id, char *const *args, size_t nargs,
                     const char *const *gpu_ids, size_t ngpus, bool publish)
{
    snprintf(c->name, sizeof c->name, "gpumon-%s", run_id);
    c->args = json_array();
    c->gpus = json_array();
    for (size_t i = 0; c->args && i < nargs; i++)
        json_array_append_new(c->args, gm_json_str(args[i]));
    for (size_t i = 0; c->gpus && i < ngpus; i++)
        json_array_append_new(c->gpus, json_string(gpu_ids[i]));
    char owner[320], start[32];
    gm_container_owner_self(owner, sizeof owner, start, sizeof start);
    const char *keys[4] = {GM_CONTAINER_LABEL_OWNER, GM_CONTAINER_LABEL_OWNER_START,
                           GM_CONTAINER_LABEL_RUN, GM_CONTAINER_LABEL_KEEP};
    const char *values[4] = {owner, start, run_id, "1"};
    gm_docker_spec spec = {.name = c->name,
                           .image = c->o->image,
                           .cmd = (const char *const *)args,
                           .ncmd = nargs,
                           .env = (const char *const *)c->env,
                           .nenv = c->nenv,
                           .binds = c->o->volumes,
                           .nbinds = c->o->nvolumes,
                           .label_key = keys,
                           .label_value = values,
                           .nlabels = c->o->keep ? 4 : 3,
                           .container_port = publish ? c->o->port : 0,
                           .host_ip = "127.0.0.1",
                           .shm_bytes = c->o->shm_bytes,
                           .gpu_ids = gpu_ids,
                           .ngpus = ngpus};
    gm_error err = {0};
    if (gm_docker_create(c->d, &spec, c->id, sizeof c->id, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s%s\n", c->cmd, err.msg,
                err.code == GM_ENOENT && !c->o->pull ? "; give --pull to pull it" : "");
        c->failure = "error";
        return GM_EXIT_FAILURE;
    }
    c->created = true;
    c->published = publish;
    c->started_s = gm_clock_mono_s();
    if (gm_docker_start(c->d, c->id, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s (image %s)\n", c->cmd, err.msg, c->o->image);
        c->failure = "error";
        return GM_EXIT_FAILURE;
    }
    c->started = true;
    gm_docker_state st;
    if (gm_docker_inspect(c->d, c->id, &st, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", c->cmd, err.msg);
        c->failure = "error";
        return GM_EXIT_FAILURE;
    }
    c->pid = st.pid;
    if (publish) {
        char ip[64];
        c->host_port = gm_docker_state_host_port(&st, c->o->port, ip);
        if (!c->host_port && st.running) {
            fprintf(stderr,
                    "gpumon %s: the engine published no host port for port %u of container %s "
                    "(image %s)\n",
                    c->cmd, c->o->port, c->name, c->o->image);
            c->failure = "error";
            return GM_EXIT_FAILURE;
        }
        snprintf(c->url, sizeof c->url, "http://127.0.0.1:%u", c->host_port);
    }
    if (!c->quiet) {
        char gpus[256] = "";
        for (size_t i = 0, used = 0; i < ngpus && used < sizeof gpus; i++)
            used +=
                (size_t)snprintf(gpus + used, sizeof gpus - used, "%s%s", i ? "," : "", gpu_ids[i]);
        fprintf(stderr, "gpumon %s: started container %s from %s%s%s%s%s\n", c->cmd, c->name,
                c->o->image, ngpus ? " on " : " without GPUs", ngpus ? gpus : "",
                publish && c->host_port ? ", port " : "", publish && c->host_port ? c->url : "");
    }
    return GM_EXIT_OK;
}

/* Prints and keeps the container's last lines of output, once. */
static void take_logs(gm_cli_ctr *c)
{
    if (c->logs || !c->created)
        return;
    gm_error err = {0};
    if (gm_docker_logs_tail(c->d, c->id, GM_CLI_CTR_LOG_LINES, &c->logs, &err) < 0) {
        fprintf(stderr, "gpumon %s: warning: %s\n", c->cmd, err.msg);
        return;
    }
    if (json_array_size(c->logs) == 0) {
        fprintf(stderr, "gpumon %s: container %s wrote no output\n", c->cmd, c->name);
        return;
    }
    size_t n = json_array_size(c->logs);
    fprintf(stderr, "gpumon %s: the last %zu line%s of output of container %s (image %s):\n",
            c->cmd, n, n == 1 ? "" : "s", c->name, c->o->image);
    size_t i;
    json_t *l;
    json_array_foreach(c->logs, i, l) fprintf(stderr, "  | %s\n", json_string_value(l));
}

static void keep_exit(gm_cli_ctr *c, const gm_docker_state *st, bool stopped_by_us)
{
    json_decref(c->exit);
    /* podman says "stopped" for an exited container it has not cleaned up yet; dockerd
     * "exited": one word in the record. */
    const char *status = strcmp(st->status, "stopped") == 0 ? "exited" : st->status;
    c->exit = json_pack("{s:s, s:i, s:b, s:o, s:o, s:b}", "status", status, "exit_code",
                        st->exit_code, "oom_killed", st->oom_killed, "error",
                        st->error[0] ? gm_json_str(st->error) : json_null(), "finished_at",
                        st->finished_at[0] && strncmp(st->finished_at, "0001-", 5) != 0
                            ? json_string(st->finished_at)
                            : json_null(),
                        "stopped_by_gpumon", stopped_by_us);
}

/* Says how a container that ended by itself ended, keeps its exit state and output. */
static void report_ended(gm_cli_ctr *c, const gm_docker_state *st, const char *when)
{
    keep_exit(c, st, false);
    bool exited = strcmp(st->status, "exited") == 0 || strcmp(st->status, "stopped") == 0;
    fprintf(stderr, "gpumon %s: container %s (image %s) %s with status %d%s%s%s %s\n", c->cmd,
            c->name, c->o->image, exited ? "exited" : st->status, st->exit_code,
            st->oom_killed ? " (killed: out of memory)" : "", st->error[0] ? ": " : "", st->error,
            when);
    take_logs(c);
}

bool gm_cli_ctr_ended(gm_cli_ctr *c)
{
    if (!c || !c->started || c->finished)
        return false;
    if (c->failure && strcmp(c->failure, "exited") == 0)
        return true;
    gm_error err = {0};
    gm_docker_state st;
    if (gm_docker_inspect(c->d, c->id, &st, &err) < 0)
        return false;
    if (st.running || strcmp(st.status, "created") == 0)
        return false;
    if (c->tty)
        fprintf(stderr, "\r\033[K");
    report_ended(c, &st, "while it was being benchmarked");
    c->failure = "exited";
    return true;
}

int gm_cli_ctr_wait_ready(gm_cli_ctr *c, const volatile sig_atomic_t *stop)
{
    const char *const *paths = default_ready_paths;
    size_t npaths = sizeof default_ready_paths / sizeof *default_ready_paths;
    if (c->o->ready_path) {
        paths = &c->o->ready_path;
        npaths = 1;
    }
    double deadline = c->started_s + c->o->ready_timeout_s;
    double next_note = gm_clock_mono_s() + QUIET_PROGRESS_S;
    char last[256] = "no answer yet";
    if (!c->quiet && !c->tty)
        fprintf(stderr, "gpumon %s: waiting up to %.0f s for %s to answer GET %s%s on %s\n", c->cmd,
                c->o->ready_timeout_s, c->name, paths[0],
                npaths > 1 ? " (or /health, /v1/models)" : "", c->url);
    for (;;) {
        if (stop && *stop) {
            if (c->tty)
                fprintf(stderr, "\r\033[K");
            c->failure = "interrupted";
            return -1;
        }
        gm_error err = {0};
        gm_docker_state st;
        if (gm_docker_inspect(c->d, c->id, &st, &err) < 0) {
            if (c->tty)
                fprintf(stderr, "\r\033[K");
            fprintf(stderr, "gpumon %s: %s\n", c->cmd, err.msg);
            c->failure = "error";
            return GM_EXIT_FAILURE;
        }
        double now = gm_clock_mono_s();
        if (!st.running && strcmp(st.status, "created") != 0) {
            if (c->tty)
                fprintf(stderr, "\r\033[K");
            char when[96];
            snprintf(when, sizeof when, "after %.1f s, before it was ready", now - c->started_s);
            report_ended(c, &st, when);
            c->failure = "exited";
            return GM_EXIT_FAILURE;
        }
        /* Paths in order; one that does not exist (404, 405) hands over to the next. */
        for (size_t i = 0; i < npaths; i++) {
            char url[256], why[160];
            snprintf(url, sizeof url, "%s%s", c->url, paths[i]);
            long status = 0;
            double left_ms = (deadline - now) * 1000;
            long tmo = left_ms < PROBE_TIMEOUT_MS ? (long)fmax(left_ms, 100) : PROBE_TIMEOUT_MS;
            if (gm_container_probe(url, tmo, &status, why, sizeof why, &err) < 0) {
                snprintf(last, sizeof last, "GET %s: %s", paths[i], why);
                break;
            }
            snprintf(last, sizeof last, "GET %s: %ld", paths[i], status);
            if (status >= 200 && status < 300) {
                c->ready_after_s = gm_clock_mono_s() - c->started_s;
                snprintf(c->ready_path, sizeof c->ready_path, "%s", paths[i]);
                if (c->tty)
                    fprintf(stderr, "\r\033[K");
                if (!c->quiet)
                    fprintf(stderr, "gpumon %s: %s ready after %.1f s (GET %s answered %ld)\n",
                            c->cmd, c->name, c->ready_after_s, paths[i], status);
                return GM_EXIT_OK;
            }
            if (!(npaths > 1 && (status == 404 || status == 405)))
                break;
        }
        now = gm_clock_mono_s();
        if (now >= deadline) {
            if (c->tty)
                fprintf(stderr, "\r\033[K");
            fprintf(stderr,
                    "gpumon %s: container %s (image %s) was not ready after %.0f s (last: %s); "
                    "giving up\n",
                    c->cmd, c->name, c->o->image, c->o->ready_timeout_s, last);
            take_logs(c);
            c->failure = "timeout";
            return GM_EXIT_TIMEOUT;
        }
        if (c->tty) {
            fprintf(stderr, "\r\033[Kgpumon %s: waiting for %s: %.0f s of %.0f (%s)", c->cmd,
                    c->name, now - c->started_s, c->o->ready_timeout_s, last);
            fflush(stderr);
        } else if (!c->quiet && now >= next_note) {
            fprintf(stderr, "gpumon %s: still waiting for %s after %.0f s (%s)\n", c->cmd, c->name,
                    now - c->started_s, last);
            next_note = now + QUIET_PROGRESS_S;
        }
        double until = now + READY_POLL_S;
        gm_clock_sleep_until(until < deadline ? until : deadline, stop);
    }
}

const char *gm_cli_ctr_name(const gm_cli_ctr *c)
{
    return c->name;
}

pid_t gm_cli_ctr_pid(const gm_cli_ctr *c)
{
    return c->pid;
}

const char *gm_cli_ctr_url(const gm_cli_ctr *c)
{
    return c->url;
}

const char *gm_cli_ctr_failure(const gm_cli_ctr *c)
{
    return c->failure;
}

void gm_cli_ctr_finish(gm_cli_ctr *c)
{
    if (!c || c->finished)
        return;
    c->finished = true;
    if (!c->created)
        return;
    gm_error err = {0};
    gm_docker_state st;
    int rc = gm_docker_inspect(c->d, c->id, &st, &err);
    if (rc == GM_OK && c->started && !st.running && !c->exit) {
        /* It ended by itself: how, and (a server) its last words. */
        if (c->expect_exit)
            keep_exit(c, &st, false);
        else
            report_ended(c, &st, "before gpumon stopped it");
    } else if (rc == GM_OK && st.running && !c->o->keep) {
        if (gm_docker_stop(c->d, c->id, GM_CLI_CTR_STOP_S, &err) < 0)
            fprintf(stderr, "gpumon %s: warning: %s\n", c->cmd, err.msg);
        if (gm_docker_inspect(c->d, c->id, &st, &err) == GM_OK)
            keep_exit(c, &st, true);
    } else if (rc < 0) {
        fprintf(stderr, "gpumon %s: warning: %s\n", c->cmd, err.msg);
    }
    if (c->o->keep) {
        if (!c->quiet)
            fprintf(stderr,
                    "gpumon %s: kept container %s%s%s (remove it with gpumon containers cleanup "
                    "--all once this gpumon has exited, or docker rm -f %s)\n",
                    c->cmd, c->name, c->url[0] ? " at " : "", c->url, c->name);
        return;
    }
    rc = gm_docker_remove(c->d, c->id, &err);
    if (rc == GM_OK || rc == GM_ENOENT) {
        c->removed = true;
        if (!c->quiet)
            fprintf(stderr, "gpumon %s: removed container %s\n", c->cmd, c->name);
    } else
        fprintf(stderr, "gpumon %s: warning: %s; remove it with gpumon containers cleanup\n",
                c->cmd, err.msg);
}

json_t *gm_cli_ctr_json(const gm_cli_ctr *c)
{
    json_t *env = json_array(), *vols = json_array();
    for (size_t i = 0; env && i < c->o->nenv; i++) {
        const char *e = c->o->env[i], *eq = strchr(e, '=');
        json_array_append_new(env, gm_json_strn(e, eq ? (size_t)(eq - e) : strlen(e)));
    }
    for (size_t i = 0; vols && i < c->o->nvolumes; i++)
        json_array_append_new(vols, gm_json_str(c->o->volumes[i]));
    json_t *j = json_object();
    if (!j)
        return NULL;
    json_object_set_new(j, "engine", json_string(c->engine));
    json_object_set_new(j, "image", gm_json_str(c->o->image));
    json_object_set_new(j, "image_id", c->image_id[0] ? json_string(c->image_id) : json_null());
    json_object_set_new(j, "pulled", json_boolean(c->pulled));
    json_object_set_new(j, "name", c->name[0] ? json_string(c->name) : json_null());
    json_object_set_new(j, "id", c->id[0] ? json_string(c->id) : json_null());
    json_object_set_new(j, "command",
                        c->args && json_array_size(c->args) ? json_incref(c->args) : json_null());
    json_object_set_new(j, "env", env ? env : json_array());
    json_object_set_new(j, "volumes", vols ? vols : json_array());
    json_object_set_new(j, "shm_size_bytes",
                        c->o->shm_bytes ? json_integer(c->o->shm_bytes) : json_null());
    json_object_set_new(j, "gpus", c->gpus ? json_incref(c->gpus) : json_array());
    json_object_set_new(j, "container_port", c->published ? json_integer(c->o->port) : json_null());
    json_object_set_new(j, "host_port", c->host_port ? json_integer(c->host_port) : json_null());
    json_object_set_new(j, "url", c->url[0] ? json_string(c->url) : json_null());
    json_object_set_new(j, "ready", json_boolean(isfinite(c->ready_after_s)));
    json_object_set_new(j, "ready_path",
                        c->ready_path[0] ? json_string(c->ready_path) : json_null());
    json_object_set_new(j, "time_to_ready_s",
                        isfinite(c->ready_after_s) ? json_real(c->ready_after_s) : json_null());
    json_object_set_new(j, "failure", c->failure ? gm_json_str(c->failure) : json_null());
    json_object_set_new(j, "exit", c->exit ? json_incref(c->exit) : json_null());
    json_object_set_new(j, "logs", c->logs ? json_incref(c->logs) : json_null());
    json_object_set_new(j, "kept", json_boolean(c->o->keep && c->created));
    json_object_set_new(j, "removed", json_boolean(c->removed));
    return j;
}

void gm_cli_ctr_close(gm_cli_ctr *c)
{
    if (!c)
        return;
    gm_cli_ctr_finish(c);
    for (size_t i = 0; i < c->nenv; i++) {
        /* values may be secrets: wiped before the memory goes back */
        if (c->env[i])
            explicit_bzero(c->env[i], strlen(c->env[i]));
        free(c->env[i]);
    }
    json_decref(c->args);
    json_decref(c->gpus);
    json_decref(c->exit);
    json_decref(c->logs);
    gm_docker_close(c->d);
    free(c);
}
