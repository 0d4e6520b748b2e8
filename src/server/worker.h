/* worker.h - the session worker of the daemon (/api/sessions): one thread owns every
 * session and the SQLite store. The sampler hands it each published sample and the HTTP loop
 * hands it each session request, through one FIFO queue, so neither ever waits for SQLite and
 * a session holds exactly the samples published between its start and its stop request.
 *
 * Flow of a request: the loop builds a gm_worker_job, submits it and answers nothing yet; the
 * worker runs it, leaves the answer (status and JSON body) in the job and calls wake(); the
 * loop then finds the job done (gm_worker_job_done) and sends the answer. A job whose client
 * went away is handed back with gm_worker_abandon, whatever its state. */
#ifndef GM_SERVER_WORKER_H
#define GM_SERVER_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fleet.h"
#include "core/session.h"
#include "gpumon.h"
#include "server/session_body.h"

#define GM_WORKER_MAX_RUNNING   16     /* more POSTs get 409 */
#define GM_SESSION_MAX_SAMPLES  86400  /* samples a session keeps in memory (then streams) */
#define GM_SESSION_MAX_VALUES   691200 /* ... and samples x GPUs (a day of 8 GPUs) */
#define GM_WORKER_QUEUE_MAX     256    /* samples waiting for the worker; more are dropped */
#define GM_WORKER_KEEP_STOPPED  64     /* stopped sessions kept in memory when not stored */
#define GM_SESSION_TIMELINE_MAX 200000 /* samples x GPUs in one timeline response */
#define GM_SESSION_BODY_MAX     65536  /* bytes of a POST /api/sessions body */
#define GM_WORKER_LIST_MAX      1000   /* entries in one GET /api/sessions */
#define GM_WORKER_COMPARE_MAX   16     /* benchmarks in one comparison, as history compare */

typedef struct gm_worker gm_worker;
struct gm_jobs;

typedef struct gm_worker_options {
    const char *db_path; /* the store; NULL or "" keeps sessions in memory only */
    unsigned poll_ms;    /* the sampler's period */
    /* The energy counter is read every sample. When false (the daemon's collector reads it
     * only every slow period and repeats the last reading in between), sessions leave it out
     * and integrate power instead: a cached counter would credit a short session with nothing,
     * or with a whole slow period's energy. */
    bool energy_fresh;
    /* Samples x GPUs a session keeps in memory (timeline and percentile values), at most
     * GM_SESSION_MAX_SAMPLES samples; past that it goes on with streaming statistics and every
     * sample written to the store. 0: GM_SESSION_MAX_VALUES. */
    size_t timeline_max_values;
    /* Samples x GPUs a session keeps, past its timeline, while the store cannot take them (a
     * full disk), to write them once it can; past that the session stops being stored (its
     * partial copy is removed) and goes on in memory. 0: GM_SESSION_PENDING_MAX_VALUES. */
    size_t pending_max_values;
    /* Retention (serve --retention): stored entries that ended longer ago than this are
     * deleted by the worker, at start and then every retention/24 (1 s to 1 h); 0 keeps all. */
    unsigned retention_s;
    /* Called from the worker thread when a job is done; must be thread-safe
     * (gm_server_wake). */
    void (*wake)(void *arg);
    void *wake_arg;
} gm_worker_options;

/* Starts the worker. The store is opened when first needed (and never created just to be
 * read), so a daemon whose sessions API is not used writes no database. Returns GM_OK,
 * GM_EINVAL, GM_ENOMEM or GM_EIO (thread). */
int gm_worker_start(const gm_worker_options *opt, gm_worker **out, gm_error *err);

/* Stops the worker and joins it: queued requests are answered 503, running sessions are
 * stopped (stop_reason "daemon_stopped") and their end written to the store (with what a
 * failing store still lacked, when it now works; else that is logged). Idempotent. */
void gm_worker_stop(gm_worker *m);

/* Stops if needed and frees the worker's state. Every job must have been handed back first
 * (gm_worker_abandon, or freed after done). NULL is a no-op. */
void gm_worker_free(gm_worker *m);

/* Sampler thread: offers the sample just published. Copies the GPU part when a session runs or
 * is being started (else returns at once); never blocks on the worker. When the worker is
 * GM_WORKER_QUEUE_MAX samples behind, the sample is dropped and counted (each running
 * session reports "samples_dropped"). */
void gm_worker_feed(gm_worker *m, const gm_snapshot *snap);

typedef enum gm_session_op {
    GM_JOB_CREATE,        /* POST /api/sessions -> 201, 409 (too many running) */
    GM_JOB_STOP,          /* POST /api/sessions/{id}/stop -> 200, 404, 409 (not running) */
    GM_JOB_LIST,          /* GET /api/sessions -> 200 */
    GM_JOB_GET,           /* GET /api/sessions/{id} -> 200, 404, 413 (timeline too large) */
    GM_JOB_DELETE,        /* DELETE /api/sessions/{id} -> 204, 404, 409 (running elsewhere) */
    GM_JOB_BENCH_LIST,    /* GET /api/benchmarks -> 200 (the benchmarks `gpumon bench` stored) */
    GM_JOB_BENCH_GET,     /* GET /api/benchmarks/{id} -> 200, 404 */
    GM_JOB_EXPORT,        /* GET /api/sessions/{id}/export -> 200 (a file: CSV or JSON), 404, 413 */
    GM_JOB_BENCH_COMPARE, /* GET /api/benchmarks/compare?ids= -> 200, 404 */
    GM_JOB_IMAGES,        /* GET /api/images -> 200, 502 (the engine failed), 503 (no engine) */
    GM_JOB_FLEET,         /* GET /api/fleet: answered by the fleet thread (fleet_cache.h), never
                           * by this worker, so a slow Prometheus never delays a session */
} gm_session_op;

/* A request to the worker, and its answer. The loop fills the request fields; the worker fills
 * status/body; the rest is the queue's. */
typedef struct gm_worker_job {
    gm_session_op op;
    char id[GM_SESSION_ID_LEN]; /* STOP, GET, DELETE, BENCH_GET */
    gm_session_request create;  /* CREATE */
    gm_session *session;        /* CREATE: made at request time (its clock starts then);
                                 * the worker takes it */
    int64_t created_mono_ms;    /* CREATE: when the request arrived (CLOCK_MONOTONIC) */
    bool timeline;              /* GET */
    size_t limit;               /* LIST, BENCH_LIST: most entries (1..GM_WORKER_LIST_MAX) */
    char kind[16];              /* LIST: only this kind ("" = all) */
    gm_fleet_thresholds fleet;  /* FLEET: what counts as an idle GPU */
    unsigned fleet_gpus;        /* FLEET: GPUs a job needs (0: no choice asked) */
    bool gzip_ok;               /* FLEET: the client accepts a gzip'd answer */
    bool csv;                   /* EXPORT: CSV, else JSON */
    bool html;                  /* BENCH_GET: the report page (core/bench_html.h), not JSON */
    char ids[GM_WORKER_COMPARE_MAX][GM_SESSION_ID_LEN]; /* BENCH_COMPARE */
    struct gm_jobs *jobs; /* IMAGES: the engine and allow list to list by */
    size_t nids;
    int status;        /* the answer: HTTP status */
    char *body;        /* JSON (or ctype), malloc'd; NULL for 204 */
    const char *ctype; /* the body's Content-Type, NULL: application/json */
    char filename[64]; /* "": none; else sent as an attachment of this name */
    size_t len;
    bool gzip;                  /* body is a gzip stream of the answer (FLEET, gzip_ok) */
    bool vary_ae;               /* the answer depends on Accept-Encoding */
    void *user;                 /* the loop's (its connection) */
    struct gm_worker_job *next; /* the queue's */
    int state;                  /* the queue's */
    bool abandoned;             /* the queue's */
    atomic_bool done;           /* set by the worker once status/body are final */
} gm_worker_job;

/* A zeroed job for op, NULL when out of memory. */
gm_worker_job *gm_worker_job_new(gm_session_op op);
/* Frees a job that was never submitted, or one the loop got back done. */
void gm_worker_job_free(gm_worker_job *j);

/* Queues j (FIFO with the samples). For GM_JOB_CREATE counts a session starting, so samples
 * are kept from now on. Ownership stays with the caller until done; never blocks long. */
void gm_worker_submit(gm_worker *m, gm_worker_job *j);

/* True once the worker has answered j (any thread; no lock). */
bool gm_worker_job_done(const gm_worker_job *j);

/* The loop no longer wants j: frees it now when the worker is not running it, else the worker
 * frees it when done. */
void gm_worker_abandon(gm_worker *m, gm_worker_job *j);

/* Running sessions right now (any thread, approximate). */
unsigned gm_worker_running(gm_worker *m);

#endif
