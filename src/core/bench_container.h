/* bench_container.h - one container's life for a benchmark or an experiment, shared by `gpumon
 * bench --image`, `gpumon run --image` and the daemon's job queue: its options (set one by one
 * by long option name, so argv and a JSON body are checked by the same code with the same
 * messages), the image made present (pulled when asked), the container created on the leased
 * GPUs (DeviceRequests by UUID, never CUDA_VISIBLE_DEVICES), its port published on 127.0.0.1,
 * owner labels, started, waited for until its server answers, and stopped and removed on every
 * way out unless kept. It never prints: what it has to say goes to the caller's callback. */
#ifndef GM_BENCH_CONTAINER_H
#define GM_BENCH_CONTAINER_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpumon.h"

#define GM_BENCH_CTR_ENV_MAX     128
#define GM_BENCH_CTR_VOLUMES_MAX 64
/* Lines of a container's output kept (and said) when it ends on its own. */
#define GM_BENCH_CTR_LOG_LINES 50
/* Seconds a container gets to exit after SIGTERM when gpumon stops it. */
#define GM_BENCH_CTR_STOP_S 10

/* Strings are the caller's and outlive the container. */
typedef struct gm_bench_ctr_opts {
    const char *image;
    unsigned port; /* container-port (default 8000) */
    bool port_given;
    const char *env[GM_BENCH_CTR_ENV_MAX]; /* as given: "K=V", or "NAME" (the caller resolves) */
    size_t nenv;
    const char *volumes[GM_BENCH_CTR_VOLUMES_MAX]; /* "HOST:CONTAINER[:OPTIONS]" */
    size_t nvolumes;
    int64_t shm_bytes;      /* 0: the engine's default */
    const char *ready_path; /* NULL: /v1/health/ready, then /health, then /v1/models */
    double ready_timeout_s; /* default 1800 */
    bool keep, pull;
    bool ready_given;  /* ready-path or ready-timeout */
    const char *given; /* the first container option given, as "--name" (for "needs --image") */
} gm_bench_ctr_opts;

/* Defaults: port 8000, ready timeout 1800 s. */
void gm_bench_ctr_defaults(gm_bench_ctr_opts *o);

/* Sets the option whose long name is name ("image", "container-port", "env", "volume",
 * "shm-size", "ready-path", "ready-timeout", "keep-container", "pull"; '_' is taken for '-')
 * from value (NULL for keep-container and pull). value is kept, not copied. GM_OK; GM_EINVAL
 * with err in the CLI's words ("--container-port expects a whole number from 1 to 65535, got
 * \"x\""); GM_ENOENT when name is not a container option. */
int gm_bench_ctr_set(gm_bench_ctr_opts *o, const char *name, const char *value, gm_error *err);

/* What the container's life has to say, by kind. */
typedef enum gm_bench_ctr_say {
    GM_BENCH_CTR_NOTE = 1, /* progress for a person: pulling, started, ready, removed */
    GM_BENCH_CTR_ERROR,    /* why it failed (the last one said is the reason) */
    GM_BENCH_CTR_WARN,     /* said even when quiet: warnings, how it ended, its output's head */
    GM_BENCH_CTR_LOG,      /* one line of the container's output */
    GM_BENCH_CTR_STATUS,   /* a line that replaces the previous one (only with live) */
} gm_bench_ctr_say;

typedef struct gm_bench_ctr_callbacks {
    void (*say)(void *arg, gm_bench_ctr_say kind, const char *text);
    void *arg;
    bool quiet; /* no NOTE */
    bool live;  /* STATUS lines while pulling and waiting; else a NOTE now and then */
} gm_bench_ctr_callbacks;

typedef struct gm_bench_ctr gm_bench_ctr;

/* Connects to the engine at host (a unix socket path or a DOCKER_HOST value; NULL: $DOCKER_HOST,
 * else /var/run/docker.sock) with env already resolved ("K=V" each; copied, wiped when freed).
 * o and cb are kept. GM_OK; GM_EINVAL/GM_ENOTSUP for a host gpumon cannot use; GM_EIO when the
 * engine does not answer; err says which. */
int gm_bench_ctr_open(const gm_bench_ctr_opts *o, const char *host, const char *const *env,
                      size_t nenv, const gm_bench_ctr_callbacks *cb, gm_bench_ctr **out,
                      gm_error *err);

/* Makes the image present: looked up, pulled with pull when absent; without pull an absent
 * image fails naming it. GM_OK; GM_ECANCELED when *stop ended a pull; another code. */
int gm_bench_ctr_image(gm_bench_ctr *c, const volatile sig_atomic_t *stop);

/* The container is expected to exit (`run`): its end is not reported as an early one. */
void gm_bench_ctr_expect_exit(gm_bench_ctr *c);

/* Creates and starts container gpumon-<run_id> with args after the image's entrypoint (may be
 * NULL), on GPUs gpu_ids (UUIDs), publishing the container port on 127.0.0.1 when publish.
 * GM_OK or a code (said as ERROR). */
int gm_bench_ctr_start(gm_bench_ctr *c, const char *run_id, char *const *args, size_t nargs,
                       const char *const *gpu_ids, size_t ngpus, bool publish);

/* Waits until the server answers a readiness path, the container ends, the ready timeout
 * passes or *stop is set. GM_OK ready; GM_ETIMEDOUT; GM_ESTATE (it ended: how, and its last
 * lines, said); GM_ECANCELED (*stop); GM_EIO (the engine). */
int gm_bench_ctr_wait_ready(gm_bench_ctr *c, const volatile sig_atomic_t *stop);

/* While the server is in use: true once the container has ended by itself (said as
 * wait_ready says it, the first time); false while it runs or the engine cannot tell. */
bool gm_bench_ctr_ended(gm_bench_ctr *c);

/* The container's name, its first process as the host numbers it (0 unknown), the server's
 * base URL ("http://127.0.0.1:PORT", "" without a published port), seconds since it was
 * started (0 before). */
const char *gm_bench_ctr_name(const gm_bench_ctr *c);
pid_t gm_bench_ctr_pid(const gm_bench_ctr *c);
const char *gm_bench_ctr_url(const gm_bench_ctr *c);
/* "exited", "timeout", "interrupted", "error"; NULL while nothing went wrong. */
const char *gm_bench_ctr_failure(const gm_bench_ctr *c);
/* Its last lines of output once taken (it ended by itself, timed out, or was stopped by
 * finish), else NULL. Borrowed. */
const json_t *gm_bench_ctr_logs(const gm_bench_ctr *c);

/* Ends the container's life: one that ended on its own has its end and last lines said and
 * kept; a running one is stopped (SIGTERM, SIGKILL after GM_BENCH_CTR_STOP_S) and its last
 * lines kept when keep_logs; its exit state is read; then it is removed, all unless kept.
 * Idempotent. */
void gm_bench_ctr_finish(gm_bench_ctr *c, bool keep_logs);

/* What happened, for the stored run: {"engine", "image", "image_id", "pulled", "name", "id",
 * "command", "env" (names only), "volumes", "shm_size_bytes", "gpus", "container_port",
 * "host_port", "url", "ready", "ready_path", "time_to_ready_s", "failure", "exit", "logs",
 * "kept", "removed"}. New reference. */
json_t *gm_bench_ctr_json(const gm_bench_ctr *c);

/* gm_bench_ctr_finish, then frees c. NULL is a no-op. */
void gm_bench_ctr_close(gm_bench_ctr *c);

#endif
