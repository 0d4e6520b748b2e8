/* container.c - one container's life for `bench --image` and `run --image` (container.h): the
 * options from argv and the engine's messages on stderr, over core/bench_container. */
#include "cli/container.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/bench_container.h"

struct gm_cli_ctr {
    const char *cmd;
    bool tty;
    bool status_shown; /* a live line is on the terminal, to be cleared before anything else */
    gm_bench_ctr *c;
};

void gm_cli_ctr_defaults(gm_cli_ctr_opts *o)
{
    gm_bench_ctr_defaults(o);
}

int gm_cli_set_ctr(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    return gm_bench_ctr_set((gm_cli_ctr_opts *)((char *)base + row->offset), row->name, value, err);
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

static void clear_status(gm_cli_ctr *c)
{
    if (c->status_shown) {
        fprintf(stderr, "\r\033[K");
        c->status_shown = false;
    }
}

static void say(void *arg, gm_bench_ctr_say kind, const char *text)
{
    gm_cli_ctr *c = arg;
    if (kind == GM_BENCH_CTR_STATUS) {
        fprintf(stderr, "\r\033[Kgpumon %s: %s", c->cmd, text);
        fflush(stderr);
        c->status_shown = true;
        return;
    }
    clear_status(c);
    if (kind == GM_BENCH_CTR_LOG)
        fprintf(stderr, "  | %s\n", text);
    else
        fprintf(stderr, "gpumon %s: %s\n", c->cmd, text);
}

gm_cli_ctr *gm_cli_ctr_open(const char *cmd, const gm_cli_ctr_opts *o, bool quiet, int *rc)
{
    gm_cli_ctr *c = calloc(1, sizeof *c);
    char *env[GM_BENCH_CTR_ENV_MAX] = {0};
    size_t nenv = 0;
    if (!c) {
        fprintf(stderr, "gpumon %s: out of memory\n", cmd);
        *rc = GM_EXIT_FAILURE;
        return NULL;
    }
    c->cmd = cmd;
    c->tty = !quiet && isatty(STDERR_FILENO);
    *rc = GM_EXIT_OK;
    /* --env NAME passes gpumon's own value through, never shown: the way to hand a container
     * NGC_API_KEY without writing it on a command line. */
    for (size_t i = 0; i < o->nenv && *rc == GM_EXIT_OK; i++) {
        const char *e = o->env[i];
        if (strchr(e, '=')) {
            env[nenv] = strdup(e);
        } else {
            const char *v = getenv(e);
            if (!v) {
                fprintf(stderr, "gpumon %s: --env %s: %s is not set in gpumon's environment\n", cmd,
                        e, e);
                *rc = GM_EXIT_USAGE;
                break;
            }
            size_t n = strlen(e) + strlen(v) + 2;
            if ((env[nenv] = malloc(n)))
                snprintf(env[nenv], n, "%s=%s", e, v);
        }
        if (!env[nenv++]) {
            fprintf(stderr, "gpumon %s: out of memory\n", cmd);
            *rc = GM_EXIT_FAILURE;
        }
    }
    if (*rc == GM_EXIT_OK) {
        gm_bench_ctr_callbacks cb = {.say = say, .arg = c, .quiet = quiet, .live = c->tty};
        gm_error err = {0};
        if (gm_bench_ctr_open(o, NULL, (const char *const *)env, nenv, &cb, &c->c, &err) < 0) {
            fprintf(stderr, "gpumon %s: %s\n", cmd, err.msg);
            *rc = err.code == GM_EINVAL || err.code == GM_ENOTSUP ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
        }
    }
    for (size_t i = 0; i < nenv; i++) {
        /* values may be secrets: wiped before the memory goes back */
        if (env[i])
            explicit_bzero(env[i], strlen(env[i]));
        free(env[i]);
    }
    if (*rc != GM_EXIT_OK) {
        free(c);
        return NULL;
    }
    return c;
}

int gm_cli_ctr_image(gm_cli_ctr *c, const volatile sig_atomic_t *stop)
{
    int rc = gm_bench_ctr_image(c->c, stop);
    clear_status(c);
    return rc == GM_OK ? GM_EXIT_OK : rc == GM_ECANCELED ? -1 : GM_EXIT_FAILURE;
}

void gm_cli_ctr_expect_exit(gm_cli_ctr *c)
{
    gm_bench_ctr_expect_exit(c->c);
}

int gm_cli_ctr_start(gm_cli_ctr *c, const char *run_id, char *const *args, size_t nargs,
                     const char *const *gpu_ids, size_t ngpus, bool publish)
{
    return gm_bench_ctr_start(c->c, run_id, args, nargs, gpu_ids, ngpus, publish) == GM_OK
               ? GM_EXIT_OK
               : GM_EXIT_FAILURE;
}

bool gm_cli_ctr_ended(gm_cli_ctr *c)
{
    return c && gm_bench_ctr_ended(c->c);
}

int gm_cli_ctr_wait_ready(gm_cli_ctr *c, const volatile sig_atomic_t *stop)
{
    int rc = gm_bench_ctr_wait_ready(c->c, stop);
    clear_status(c);
    return rc == GM_OK          ? GM_EXIT_OK
           : rc == GM_ETIMEDOUT ? GM_EXIT_TIMEOUT
           : rc == GM_ECANCELED ? -1
                                : GM_EXIT_FAILURE;
}

const char *gm_cli_ctr_name(const gm_cli_ctr *c)
{
    return gm_bench_ctr_name(c->c);
}

pid_t gm_cli_ctr_pid(const gm_cli_ctr *c)
{
    return gm_bench_ctr_pid(c->c);
}

const char *gm_cli_ctr_url(const gm_cli_ctr *c)
{
    return gm_bench_ctr_url(c->c);
}

const char *gm_cli_ctr_failure(const gm_cli_ctr *c)
{
    return gm_bench_ctr_failure(c->c);
}

void gm_cli_ctr_finish(gm_cli_ctr *c)
{
    if (c)
        gm_bench_ctr_finish(c->c, false);
}

json_t *gm_cli_ctr_json(const gm_cli_ctr *c)
{
    return gm_bench_ctr_json(c->c);
}

void gm_cli_ctr_close(gm_cli_ctr *c)
{
    if (!c)
        return;
    gm_bench_ctr_close(c->c);
    free(c);
}
