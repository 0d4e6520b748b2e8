/* bench_container.c - one container's life (bench_container.h). */
#include "core/bench_container.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/parse.h"
#include "core/container.h"
#include "core/docker.h"
#include "base/error.h"

/* Between readiness checks; each probe waits at most PROBE_TIMEOUT_MS. */
#define READY_POLL_S     0.5
#define PROBE_TIMEOUT_MS 2000L
/* A note of progress this often when the caller shows no live line. */
#define QUIET_PROGRESS_S 30.0

static const char *const default_ready_paths[] = {"/v1/health/ready", "/health", "/v1/models"};

struct gm_bench_ctr {
    const gm_bench_ctr_opts *o;
    gm_bench_ctr_callbacks cb;
    gm_docker *d;
    char engine[128];
    char *env[GM_BENCH_CTR_ENV_MAX]; /* as sent ("K=V", values possibly secret) */
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

void gm_bench_ctr_defaults(gm_bench_ctr_opts *o)
{
    memset(o, 0, sizeof *o);
    o->port = 8000;
    o->ready_timeout_s = 1800;
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

static const char *const option_names[] = {"--image",         "--container-port", "--env",
                                           "--volume",        "--shm-size",       "--ready-path",
                                           "--ready-timeout", "--keep-container", "--pull"};

int gm_bench_ctr_set(gm_bench_ctr_opts *o, const char *name, const char *value, gm_error *err)
{
    char n[40] = "--";
    size_t len = strlen(name);
    if (len + 3 > sizeof n)
        return gm_error_set(err, GM_ENOENT, "unknown option \"%.40s\"", name);
    for (size_t i = 0; i <= len; i++)
        n[i + 2] = name[i] == '_' ? '-' : name[i];
    const char *opt = NULL;
    for (size_t i = 0; i < sizeof option_names / sizeof *option_names; i++)
        if (strcmp(n, option_names[i]) == 0)
            opt = option_names[i];
    if (!opt)
        return gm_error_set(err, GM_ENOENT, "unknown option \"%s\"", n);
    bool flag = strcmp(opt, "--keep-container") == 0 || strcmp(opt, "--pull") == 0;
    if (!flag && !value)
        return gm_error_set(err, GM_EINVAL, "%s needs a value", opt);
    if (strcmp(opt, "--image") != 0 && !o->given)
        o->given = opt;
    const char *arg = value;
    unsigned long long v;
    if (strcmp(opt, "--image") == 0) {
        if (!gm_docker_ref_ok(arg))
            return gm_error_set(err, GM_EINVAL,
                                "--image \"%s\" is not an image reference (NAME[:TAG] or "
                                "NAME@DIGEST)",
                                arg);
        o->image = arg;
    } else if (strcmp(opt, "--container-port") == 0) {
        if (gm_parse_uint(arg, 1, 65535, &v) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "--container-port expects a whole number from 1 to 65535, got "
                                "\"%s\"",
                                arg);
        o->port = (unsigned)v;
        o->port_given = true;
    } else if (strcmp(opt, "--env") == 0) {
        const char *eq = strchr(arg, '=');
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        if (!env_name_ok(arg, nlen))
            return gm_error_set(err, GM_EINVAL,
                                "--env expects NAME=VALUE or NAME (a variable of gpumon's own "
                                "environment), NAME of letters, digits and _");
        /* The GPUs go to the engine as DeviceRequests naming the leased UUIDs; a device list
         * of the user's own would contradict them (and CUDA would renumber the GPUs). */
        if ((nlen == 20 && strncmp(arg, "CUDA_VISIBLE_DEVICES", nlen) == 0) ||
            (nlen == 22 && strncmp(arg, "NVIDIA_VISIBLE_DEVICES", nlen) == 0))
            return gm_error_set(err, GM_EINVAL,
                                "--env %.*s: gpumon gives the container the GPUs it leased "
                                "(DeviceRequests by UUID); choose them with --count, --task or "
                                "--gpus",
                                (int)nlen, arg);
        if (o->nenv == GM_BENCH_CTR_ENV_MAX)
            return gm_error_set(err, GM_EINVAL, "at most %d --env", GM_BENCH_CTR_ENV_MAX);
        o->env[o->nenv++] = arg;
    } else if (strcmp(opt, "--volume") == 0) {
        const char *colon = strchr(arg, ':');
        if (!colon || colon == arg || colon[1] != '/')
            return gm_error_set(err, GM_EINVAL,
                                "--volume expects HOST:CONTAINER[:OPTIONS] with an absolute "
                                "CONTAINER path, got \"%s\"",
                                arg);
        if (o->nvolumes == GM_BENCH_CTR_VOLUMES_MAX)
            return gm_error_set(err, GM_EINVAL, "at most %d --volume", GM_BENCH_CTR_VOLUMES_MAX);
        o->volumes[o->nvolumes++] = arg;
    } else if (strcmp(opt, "--shm-size") == 0) {
        if (gm_parse_size_bytes(arg, 1024 * 1024, INT64_C(1) << 50, &o->shm_bytes) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "--shm-size expects a size from 1m, such as 16GB, 16g or 512m, "
                                "got \"%s\"",
                                arg);
    } else if (strcmp(opt, "--ready-path") == 0) {
        if (arg[0] != '/' || strlen(arg) > 120 || strpbrk(arg, " \t\r\n#"))
            return gm_error_set(err, GM_EINVAL,
                                "--ready-path expects a path starting with / (such as "
                                "/v1/health/ready), got \"%s\"",
                                arg);
        o->ready_path = arg;
        o->ready_given = true;
    } else if (strcmp(opt, "--ready-timeout") == 0) {
        int64_t ms;
        if (gm_parse_duration_ms(arg, 1000, 7 * 86400000LL, &ms) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "--ready-timeout expects a duration from 1s to 604800s (such as "
                                "90, 0.5, 500ms, 15m, 1h30m), got \"%s\"",
                                arg);
        o->ready_timeout_s = (double)ms / 1000.0;
        o->ready_given = true;
    } else if (strcmp(opt, "--keep-container") == 0) {
        o->keep = true;
    } else {
        o->pull = true;
    }
    return GM_OK;
}

/* ---- the container ----------------------------------------------------------------------- */

static void say(gm_bench_ctr *c, gm_bench_ctr_say kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(gm_bench_ctr *c, gm_bench_ctr_say kind, const char *fmt, ...)
{
    if (!c->cb.say || (kind == GM_BENCH_CTR_NOTE && c->cb.quiet) ||
        (kind == GM_BENCH_CTR_STATUS && !c->cb.live))
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    c->cb.say(c->cb.arg, kind, text);
}

int gm_bench_ctr_open(const gm_bench_ctr_opts *o, const char *host, const char *const *env,
                      size_t nenv, const gm_bench_ctr_callbacks *cb, gm_bench_ctr **out,
                      gm_error *err)
{
    *out = NULL;
    gm_bench_ctr *c = calloc(1, sizeof *c);
    if (!c)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    c->o = o;
    if (cb)
        c->cb = *cb;
    c->ready_after_s = NAN;
    for (size_t i = 0; i < nenv && i < GM_BENCH_CTR_ENV_MAX; i++)
        if (!(c->env[c->nenv++] = strdup(env[i]))) {
            gm_bench_ctr_close(c);
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        }
    int rc = gm_docker_open(host && *host ? host : NULL, &c->d, err);
    if (rc == GM_OK)
        rc = gm_docker_version(c->d, c->engine, sizeof c->engine, err);
    if (rc < 0) {
        gm_bench_ctr_close(c);
        return rc;
    }
    *out = c;
    return GM_OK;
}

typedef struct pull_ctx {
    gm_bench_ctr *c;
    const volatile sig_atomic_t *stop;
    double last_s;
    char last[256];
} pull_ctx;

static void pull_data(void *arg, int stream, const char *text, size_t len)
{
    (void)stream;
    pull_ctx *p = arg;
    if (p->c->cb.quiet)
        return;
    snprintf(p->last, sizeof p->last, "%.*s", (int)len, text);
    if (p->c->cb.live) {
        say(p->c, GM_BENCH_CTR_STATUS, "pulling %s: %.60s", p->c->o->image, p->last);
    } else if (gm_clock_mono_s() - p->last_s >= 5) {
        say(p->c, GM_BENCH_CTR_NOTE, "pulling %s: %s", p->c->o->image, p->last);
        p->last_s = gm_clock_mono_s();
    }
}

static bool not_stopped(void *arg)
{
    const pull_ctx *p = arg;
    return !(p->stop && *p->stop);
}

int gm_bench_ctr_image(gm_bench_ctr *c, const volatile sig_atomic_t *stop)
{
    gm_error err = {0};
    int rc = gm_docker_image_id(c->d, c->o->image, c->image_id, sizeof c->image_id, &err);
    if (rc == GM_OK)
        return GM_OK;
    if (rc != GM_ENOENT) {
        say(c, GM_BENCH_CTR_ERROR, "%s", err.msg);
        c->failure = "error";
        return rc;
    }
    if (!c->o->pull) {
        say(c, GM_BENCH_CTR_ERROR, "%s; give --pull to pull it", err.msg);
        c->failure = "error";
        return rc;
    }
    say(c, GM_BENCH_CTR_NOTE, "pulling %s", c->o->image);
    pull_ctx p = {.c = c, .stop = stop, .last_s = gm_clock_mono_s()};
    gm_docker_stream s = {.data = pull_data, .tick = not_stopped, .arg = &p};
    rc = gm_docker_pull(c->d, c->o->image, &s, &err);
    if (rc == GM_OK)
        rc = gm_docker_image_id(c->d, c->o->image, c->image_id, sizeof c->image_id, &err);
    if (rc < 0) {
        if (rc != GM_ECANCELED)
            say(c, GM_BENCH_CTR_ERROR, "%s", err.msg);
        c->failure = rc == GM_ECANCELED ? "interrupted" : "error";
        return rc;
    }
    c->pulled = true;
    say(c, GM_BENCH_CTR_NOTE, "pulled %s (%s)", c->o->image, c->image_id);
    return GM_OK;
}

void gm_bench_ctr_expect_exit(gm_bench_ctr *c)
{
    c->expect_exit = true;
}

int gm_bench_ctr_start(gm_bench_ctr *c, const char *run_id, char *const *args, size_t nargs,
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
    int rc = gm_docker_create(c->d, &spec, c->id, sizeof c->id, &err);
    if (rc < 0) {
        say(c, GM_BENCH_CTR_ERROR, "%s%s", err.msg,
            err.code == GM_ENOENT && !c->o->pull ? "; give --pull to pull it" : "");
        c->failure = "error";
        return rc;
    }
    c->created = true;
    c->published = publish;
    c->started_s = gm_clock_mono_s();
    if ((rc = gm_docker_start(c->d, c->id, &err)) < 0) {
        say(c, GM_BENCH_CTR_ERROR, "%s (image %s)", err.msg, c->o->image);
        c->failure = "error";
        return rc;
    }
    c->started = true;
    gm_docker_state st;
    if ((rc = gm_docker_inspect(c->d, c->id, &st, &err)) < 0) {
        say(c, GM_BENCH_CTR_ERROR, "%s", err.msg);
        c->failure = "error";
        return rc;
    }
    c->pid = st.pid;
    if (publish) {
        char ip[64];
        c->host_port = gm_docker_state_host_port(&st, c->o->port, ip);
        if (!c->host_port && st.running) {
            say(c, GM_BENCH_CTR_ERROR,
                "the engine published no host port for port %u of container %s (image %s)",
                c->o->port, c->name, c->o->image);
            c->failure = "error";
            return GM_EIO;
        }
        snprintf(c->url, sizeof c->url, "http://127.0.0.1:%u", c->host_port);
    }
    char gpus[256] = "";
    for (size_t i = 0, used = 0; i < ngpus && used < sizeof gpus; i++)
        used += (size_t)snprintf(gpus + used, sizeof gpus - used, "%s%s", i ? "," : "", gpu_ids[i]);
    say(c, GM_BENCH_CTR_NOTE, "started container %s from %s%s%s%s%s", c->name, c->o->image,
        ngpus ? " on " : " without GPUs", ngpus ? gpus : "",
        publish && c->host_port ? ", port " : "", publish && c->host_port ? c->url : "");
    return GM_OK;
}

/* Keeps the container's last lines of output, once; says them when tell. */
static void take_logs(gm_bench_ctr *c, bool tell)
{
    if (c->logs || !c->created)
        return;
    gm_error err = {0};
    if (gm_docker_logs_tail(c->d, c->id, GM_BENCH_CTR_LOG_LINES, &c->logs, &err) < 0) {
        say(c, GM_BENCH_CTR_WARN, "warning: %s", err.msg);
        return;
    }
    if (!tell)
        return;
    if (json_array_size(c->logs) == 0) {
        say(c, GM_BENCH_CTR_WARN, "container %s wrote no output", c->name);
        return;
    }
    size_t n = json_array_size(c->logs);
    say(c, GM_BENCH_CTR_WARN, "the last %zu line%s of output of container %s (image %s):", n,
        n == 1 ? "" : "s", c->name, c->o->image);
    size_t i;
    json_t *l;
    json_array_foreach(c->logs, i, l) say(c, GM_BENCH_CTR_LOG, "%s", json_string_value(l));
}

static void keep_exit(gm_bench_ctr *c, const gm_docker_state *st, bool stopped_by_us)
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
static void report_ended(gm_bench_ctr *c, const gm_docker_state *st, const char *when)
{
    keep_exit(c, st, false);
    bool exited = strcmp(st->status, "exited") == 0 || strcmp(st->status, "stopped") == 0;
    say(c, GM_BENCH_CTR_ERROR, "container %s (image %s) %s with status %d%s%s%s %s", c->name,
        c->o->image, exited ? "exited" : st->status, st->exit_code,
        st->oom_killed ? " (killed: out of memory)" : "", st->error[0] ? ": " : "", st->error,
        when);
    take_logs(c, true);
}

bool gm_bench_ctr_ended(gm_bench_ctr *c)
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
    report_ended(c, &st, "while it was being benchmarked");
    c->failure = "exited";
    return true;
}

int gm_bench_ctr_wait_ready(gm_bench_ctr *c, const volatile sig_atomic_t *stop)
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
    if (!c->cb.live)
        say(c, GM_BENCH_CTR_NOTE, "waiting up to %.0f s for %s to answer GET %s%s on %s",
            c->o->ready_timeout_s, c->name, paths[0], npaths > 1 ? " (or /health, /v1/models)" : "",
            c->url);
    for (;;) {
        if (stop && *stop) {
            c->failure = "interrupted";
            return GM_ECANCELED;
        }
        gm_error err = {0};
        gm_docker_state st;
        int rc = gm_docker_inspect(c->d, c->id, &st, &err);
        if (rc < 0) {
            say(c, GM_BENCH_CTR_ERROR, "%s", err.msg);
            c->failure = "error";
            return rc;
        }
        double now = gm_clock_mono_s();
        if (!st.running && strcmp(st.status, "created") != 0) {
            char when[96];
            snprintf(when, sizeof when, "after %.1f s, before it was ready", now - c->started_s);
            report_ended(c, &st, when);
            c->failure = "exited";
            return GM_ESTATE;
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
                say(c, GM_BENCH_CTR_NOTE, "%s ready after %.1f s (GET %s answered %ld)", c->name,
                    c->ready_after_s, paths[i], status);
                return GM_OK;
            }
            if (!(npaths > 1 && (status == 404 || status == 405)))
                break;
        }
        now = gm_clock_mono_s();
        if (now >= deadline) {
            say(c, GM_BENCH_CTR_ERROR,
                "container %s (image %s) was not ready after %.0f s (last: %s); giving up", c->name,
                c->o->image, c->o->ready_timeout_s, last);
            take_logs(c, true);
            c->failure = "timeout";
            return GM_ETIMEDOUT;
        }
        if (c->cb.live) {
            say(c, GM_BENCH_CTR_STATUS, "waiting for %s: %.0f s of %.0f (%s)", c->name,
                now - c->started_s, c->o->ready_timeout_s, last);
        } else if (now >= next_note) {
            say(c, GM_BENCH_CTR_NOTE, "still waiting for %s after %.0f s (%s)", c->name,
                now - c->started_s, last);
            next_note = now + QUIET_PROGRESS_S;
        }
        double until = now + READY_POLL_S;
        gm_clock_sleep_until(until < deadline ? until : deadline, stop);
    }
}

const char *gm_bench_ctr_name(const gm_bench_ctr *c)
{
    return c->name;
}

pid_t gm_bench_ctr_pid(const gm_bench_ctr *c)
{
    return c->pid;
}

const char *gm_bench_ctr_url(const gm_bench_ctr *c)
{
    return c->url;
}

const char *gm_bench_ctr_failure(const gm_bench_ctr *c)
{
    return c->failure;
}

const json_t *gm_bench_ctr_logs(const gm_bench_ctr *c)
{
    return c->logs;
}

void gm_bench_ctr_finish(gm_bench_ctr *c, bool keep_logs)
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
        if (gm_docker_stop(c->d, c->id, GM_BENCH_CTR_STOP_S, &err) < 0)
            say(c, GM_BENCH_CTR_WARN, "warning: %s", err.msg);
        if (gm_docker_inspect(c->d, c->id, &st, &err) == GM_OK)
            keep_exit(c, &st, true);
    } else if (rc < 0) {
        say(c, GM_BENCH_CTR_WARN, "warning: %s", err.msg);
    }
    if (keep_logs)
        take_logs(c, false);
    if (c->o->keep) {
        say(c, GM_BENCH_CTR_NOTE,
            "kept container %s%s%s (remove it with gpumon containers cleanup --all once this "
            "gpumon has exited, or docker rm -f %s)",
            c->name, c->url[0] ? " at " : "", c->url, c->name);
        return;
    }
    rc = gm_docker_remove(c->d, c->id, &err);
    if (rc == GM_OK || rc == GM_ENOENT) {
        c->removed = true;
        say(c, GM_BENCH_CTR_NOTE, "removed container %s", c->name);
    } else
        say(c, GM_BENCH_CTR_WARN, "warning: %s; remove it with gpumon containers cleanup", err.msg);
}

json_t *gm_bench_ctr_json(const gm_bench_ctr *c)
{
    json_t *env = json_array(), *vols = json_array();
    for (size_t i = 0; env && i < c->o->nenv; i++) {
        const char *e = c->o->env[i], *eq = strchr(e, '=');
        json_array_append_new(env, gm_json_strn(e, eq ? (size_t)(eq - e) : strlen(e)));
    }
    for (size_t i = 0; vols && i < c->o->nvolumes; i++)
        json_array_append_new(vols, gm_json_str(c->o->volumes[i]));
    json_t *j = json_object();
    if (!j) {
        json_decref(env);
        json_decref(vols);
        return NULL;
    }
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

void gm_bench_ctr_close(gm_bench_ctr *c)
{
    if (!c)
        return;
    gm_bench_ctr_finish(c, false);
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
