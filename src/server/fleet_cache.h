/* fleet_cache.h - the daemon's fleet view (GET /api/fleet, `gpumon serve --prometheus URL`): a
 * thread of its own asks Prometheus (core/fleet, core/prometheus) and keeps the answer for a
 * few seconds, so the event loop never waits for Prometheus and many clients cost one set of
 * queries.
 *
 * Requests come as gm_worker_jobs of op GM_JOB_FLEET (the loop parks them exactly as it parks
 * session jobs): the thread refreshes its copy when it is older than the cache time, renders
 * each job's answer (its thresholds, its choice of a node) and wakes the loop. A failure of
 * Prometheus is kept for the cache time too (so a dead Prometheus is not asked on every
 * request) and answered 502 ({"error": "...", "prometheus": URL}), 504 when it timed out. */
#ifndef GM_SERVER_FLEET_CACHE_H
#define GM_SERVER_FLEET_CACHE_H

#include "server/worker.h"

#define GM_FLEET_CACHE_TTL_S     5.0  /* an answer is reused this long */
#define GM_FLEET_CACHE_TIMEOUT_S 5.0  /* each query to Prometheus */
#define GM_FLEET_CACHE_QUEUE_MAX 1024 /* requests waiting; more are answered 503 at once */

typedef struct gm_fleet_cache gm_fleet_cache;

typedef struct gm_fleet_cache_options {
    const char *url;  /* Prometheus's base URL (checked) */
    const char *job;  /* the daemons' scrape job */
    double ttl_s;     /* 0: GM_FLEET_CACHE_TTL_S */
    double timeout_s; /* 0: GM_FLEET_CACHE_TIMEOUT_S */
    /* Called from the fleet thread when a job is done; must be thread-safe (gm_server_wake). */
    void (*wake)(void *arg);
    void *wake_arg;
} gm_fleet_cache_options;

/* Starts the thread (nothing is asked of Prometheus until a request comes). GM_OK, GM_EINVAL
 * (URL, job), GM_ENOMEM, GM_EIO (thread). */
int gm_fleet_cache_start(const gm_fleet_cache_options *o, gm_fleet_cache **out, gm_error *err);

/* Stops the thread and joins it: a query in flight is cancelled within about a second, queued
 * requests are answered 503. Idempotent; NULL is a no-op. */
void gm_fleet_cache_stop(gm_fleet_cache *c);

/* Stops if needed and frees. Every job must have been handed back first. NULL is a no-op. */
void gm_fleet_cache_free(gm_fleet_cache *c);

/* Queues j (op GM_JOB_FLEET); the loop keeps it until gm_worker_job_done. Never blocks long. */
void gm_fleet_cache_submit(gm_fleet_cache *c, gm_worker_job *j);

/* The loop no longer wants j: freed now when the thread is not rendering it, else by the
 * thread when done. */
void gm_fleet_cache_abandon(gm_fleet_cache *c, gm_worker_job *j);

/* Prometheus's URL as people may see it (no credentials). */
const char *gm_fleet_cache_url(const gm_fleet_cache *c);

#endif
