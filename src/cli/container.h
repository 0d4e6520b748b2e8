/* container.h - the container side of `gpumon bench --image` and `gpumon run --image`: their
 * shared options, and one container's life through the engine (core/docker): the image made
 * present (pulled with --pull), the container created on the leased GPUs (DeviceRequests by
 * UUID, never CUDA_VISIBLE_DEVICES), its port published on 127.0.0.1, owner labels, started,
 * waited for until its server answers, and stopped and removed on every way out unless
 * --keep-container (the life itself is core/bench_container's). Messages go to stderr as "gpumon
 * <cmd>: ..."; functions that can fail return an exit status (GM_EXIT_*). */
#ifndef GM_CLI_CONTAINER_H
#define GM_CLI_CONTAINER_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/opt.h"
#include "core/bench_container.h"

/* Lines of a container's output printed and kept when it ends on its own. */
#define GM_CLI_CTR_LOG_LINES GM_BENCH_CTR_LOG_LINES
/* Seconds a container gets to exit after SIGTERM when gpumon stops it. */
#define GM_CLI_CTR_STOP_S GM_BENCH_CTR_STOP_S

/* The options and their checks are the engine's (core/bench_container), shared with the
 * daemon's job queue. */
typedef gm_bench_ctr_opts gm_cli_ctr_opts;

/* Sets the gm_cli_ctr_opts at base + row->offset from the option row->name names (image, env,
 * volume...), through gm_bench_ctr_set as the daemon's job queue sets them. */
int gm_cli_set_ctr(void *base, const gm_opt *row, const char *value, gm_error *err);

/* A container option's row in a command's table (c: the gm_cli_ctr_opts field of T), its name,
 * help and flags after it: each command words the options for its own container. */
#define GM_CLI_OPT_CTR(T, c, ...)                                                    \
    {                                                                                \
        .type = GM_OPT_CALLBACK, GM_OPT_AT(T, c), .set = gm_cli_set_ctr, __VA_ARGS__ \
    }

/* Defaults: port 8000, ready timeout 1800 s. */
void gm_cli_ctr_defaults(gm_cli_ctr_opts *o);
/* After parsing: container options without --image, or (server false: `run`) readiness
 * options, are usage errors (message printed, false). */
bool gm_cli_ctr_validate(const char *cmd, const gm_cli_ctr_opts *o, bool server);

typedef struct gm_cli_ctr gm_cli_ctr;

/* Connects to the engine ($DOCKER_HOST, else /var/run/docker.sock) and resolves the --env
 * values. NULL with *rc set (message printed) when it cannot. */
gm_cli_ctr *gm_cli_ctr_open(const char *cmd, const gm_cli_ctr_opts *o, bool quiet, int *rc);

/* Makes the image present: looked up, pulled with --pull when absent (progress on stderr);
 * without --pull an absent image fails naming it. stop (a signal flag) ends a pull. */
int gm_cli_ctr_image(gm_cli_ctr *c, const volatile sig_atomic_t *stop);

/* The container is expected to exit (`run`): its end is not reported as an early one, nor its
 * output printed again. */
void gm_cli_ctr_expect_exit(gm_cli_ctr *c);

/* Creates and starts container gpumon-<run_id> with args after the image's entrypoint (may be
 * NULL), on GPUs gpu_ids (UUIDs), publishing the container port on 127.0.0.1 when publish. */
int gm_cli_ctr_start(gm_cli_ctr *c, const char *run_id, char *const *args, size_t nargs,
                     const char *const *gpu_ids, size_t ngpus, bool publish);

/* Waits until the server answers a readiness path, the container ends, the ready timeout
 * passes or *stop is set. 0 ready; GM_EXIT_TIMEOUT; GM_EXIT_FAILURE (ended, logs printed);
 * 130-style statuses are the caller's to choose when *stop was set (returns -1 then). */
int gm_cli_ctr_wait_ready(gm_cli_ctr *c, const volatile sig_atomic_t *stop);

/* While the server is in use (a benchmark): true once the container has ended by itself,
 * reported as wait_ready reports it (status, last lines of output) the first time; false
 * while it runs or the engine cannot tell. Costs one inspect request. */
bool gm_cli_ctr_ended(gm_cli_ctr *c);

/* The container's name, its first process as the host numbers it (0 unknown), the server's
 * base URL ("http://127.0.0.1:PORT", "" without a published port). */
const char *gm_cli_ctr_name(const gm_cli_ctr *c);
pid_t gm_cli_ctr_pid(const gm_cli_ctr *c);
const char *gm_cli_ctr_url(const gm_cli_ctr *c);
/* Why the server never got ready or stopped serving: "exited" (also after it was ready, see
 * gm_cli_ctr_ended), "timeout", "interrupted", "error"; NULL while nothing went wrong. */
const char *gm_cli_ctr_failure(const gm_cli_ctr *c);

/* Ends the container's life: a container that ended on its own has its last lines of output
 * printed and kept; a running one is stopped (SIGTERM, SIGKILL after GM_CLI_CTR_STOP_S);
 * its exit state is read; then it is removed, all unless --keep-container. Idempotent. */
void gm_cli_ctr_finish(gm_cli_ctr *c);

/* What happened, for the stored run: {"engine", "image", "image_id", "pulled", "name", "id",
 * "command", "env" (names only), "volumes", "shm_size_bytes", "gpus", "container_port",
 * "host_port", "url", "ready", "ready_path", "time_to_ready_s", "failure", "exit": {"status",
 * "exit_code", "oom_killed", "error", "finished_at", "stopped_by_gpumon"}, "logs", "kept",
 * "removed"}. New reference. */
json_t *gm_cli_ctr_json(const gm_cli_ctr *c);

/* gm_cli_ctr_finish, then frees c. NULL is a no-op. */
void gm_cli_ctr_close(gm_cli_ctr *c);

#endif
