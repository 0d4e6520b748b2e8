/* jobs.h - the daemon's benchmark jobs (POST /api/benchmarks): a bounded queue and a few
 * threads that run them through the same engine as `gpumon bench` (core/bench_run), jobs on
 * disjoint GPUs at the same time. A job leases its GPUs as `gpumon select`/`wait` do (waiting
 * while another holder has them, up to its wait, without holding up the jobs behind it), starts
 * its image's container on them when it has one (core/bench_container, as `bench --image`),
 * samples them, stores the result as a CLI run does, and removes the container and releases
 * the lease on every way out: done, failed, cancelled, or the daemon stopping. The loop only adds,
 * reads and cancels jobs under a mutex; nothing it calls waits on a server, a GPU or SQLite. */
#ifndef GM_SERVER_JOBS_H
#define GM_SERVER_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/bench_container.h"
#include "core/bench_run.h"
#include "gpumon.h"
#include "server/config.h"

#define GM_JOBS_QUEUE_MAX 16 /* jobs queued or running; more are answered 429 */
#define GM_JOBS_KEEP      64 /* finished jobs remembered for GET */
#define GM_JOBS_BODY_MAX  (64u << 10)
/* Jobs run at once (each on its own lease); without a lease directory, one. */
#define GM_JOBS_RUNNERS 4

typedef struct gm_jobs gm_jobs;

typedef struct gm_jobs_options {
    const char *db_path;   /* where results are stored; "" none */
    const char *lease_dir; /* "" none: jobs lease nothing */
    /* The collector each job opens for its GPUs, as the daemon's (provider, simulation). */
    const char *provider; /* NULL: auto */
    unsigned simulate;
    uint64_t seed;
    const char *procfs_root;
    double check_s; /* between looks at the GPUs while waiting for them (default 1) */
    /* Jobs with an image: the engine ("unix:///PATH"; NULL or "": no image is started) and
     * the fnmatch patterns of the images admitted (none: no image). */
    const char *docker_host;
    const char (*allow_image)[GM_SERVE_ALLOW_IMAGE_LEN];
    size_t nallow_image;
} gm_jobs_options;

int gm_jobs_start(const gm_jobs_options *o, gm_jobs **out, gm_error *err);
/* Cancels every job (the running one keeps what it measured) and joins the thread: the lease
 * is released before this returns. */
void gm_jobs_stop(gm_jobs *j);
void gm_jobs_free(gm_jobs *j);

/* What a request asks for, besides the benchmark's own options. */
typedef struct gm_jobs_request {
    gm_bench_config cfg;   /* taken over by gm_jobs_submit (also on failure) */
    unsigned count;        /* GPUs to lease (0: as many as gpus lists, else 1) */
    double wait_s;         /* most time queued for GPUs */
    gm_bench_ctr_opts ctr; /* image: its strings point into body */
    json_t *body;          /* taken over with cfg */
} gm_jobs_request;

/* Fills req from a JSON body: keys are `gpumon bench`'s long option names with '_' for '-'
 * (numbers, strings, lists as arrays, slo as an object), plus count and wait. GM_OK, or
 * GM_EINVAL with err naming the field and *field set to it (NULL for a conflict between
 * fields), or GM_ENOTSUP for a field the daemon does not take (the lease's own options). Host
 * paths in volume and env values from the daemon's environment are refused (GM_EINVAL). */
int gm_jobs_parse(const char *body, size_t len, gm_jobs_request *req, const char **field,
                  gm_error *err);

/* Queues req. id gets the job's id (GM_SESSION_ID_LEN bytes; the stored benchmark's too).
 * GM_OK, GM_EBUSY (the queue is full), GM_EPERM (an image while the daemon has no engine, or
 * one no --allow-image pattern admits: err says which), GM_ENOMEM. */
int gm_jobs_submit(gm_jobs *j, gm_jobs_request *req, char *id, gm_error *err);

/* The engine's local images that an --allow-image pattern admits, sorted by name, as a JSON
 * array of {"image": "repo:tag", "size_bytes", "created", "model"} (model: the NIM an
 * nvcr.io/nim/<org>/<model> image serves, "<org>/<model>", else null). Asks the engine, so it
 * waits on it: call it off the loop. New reference in *out. GM_ENOTSUP when the daemon has no
 * engine, GM_EIO when the engine fails (err has its message), GM_ENOMEM. */
int gm_jobs_images(gm_jobs *j, json_t **out, gm_error *err);

/* The jobs, newest first, or one (NULL: no such job): new references. */
json_t *gm_jobs_list(gm_jobs *j);
json_t *gm_jobs_get(gm_jobs *j, const char *id);
/* The jobs not ended, and those ended in the last `seconds`, oldest first (new reference). */
json_t *gm_jobs_recent(gm_jobs *j, double seconds);

/* GM_OK (cancelled, or being cancelled), GM_ENOENT, GM_ESTATE (already finished). */
int gm_jobs_cancel(gm_jobs *j, const char *id, gm_error *err);

#endif
