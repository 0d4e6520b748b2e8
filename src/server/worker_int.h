/* worker_int.h - the session worker's state as its answers see it: worker.c keeps the queue,
 * the store and the sessions' lifecycle; answers_sessions.c and answers_bench.c build what each
 * request answers from them. Everything here is the worker thread's alone (the loop and the
 * sampler reach the worker only through worker.h), so none of it takes a lock. */
#ifndef GM_SERVER_WORKER_INT_H
#define GM_SERVER_WORKER_INT_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/recorder.h"
#include "server/log.h"
#include "server/worker.h"
#include "store/store.h"

/* One session the worker holds in memory: every running one, and stopped ones the store does
 * not have. */
typedef struct gm_worker_entry {
    struct gm_worker_entry *next;
    gm_recorder *rec; /* the session and its store copy */
    gm_session *s;    /* rec's session */
    bool running;
    unsigned every; /* take a sample at most every `every` poll intervals */
    int64_t created_mono_ms;
    int64_t last_added_mono_ms; /* 0: none yet */
    uint64_t dropped;
} gm_worker_entry;

struct gm_worker_item; /* a queued request or sample (worker.c) */

struct gm_worker {
    gm_worker_options opt;
    gm_log_limit session_log; /* "session started/stopped/deleted": a peer may loop on them */
    char db_path[PATH_MAX];
    bool has_db;
    pthread_t thread;
    bool started, joined;
    pthread_mutex_t mu;
    pthread_cond_t cv;

    /* Under mu. */
    struct gm_worker_item *head, *tail;
    size_t samples_queued;
    uint64_t dropped_pending;
    bool stop;

    atomic_uint active;  /* running sessions plus creations queued: samples are wanted */
    atomic_uint running; /* running sessions */

    /* Worker only. */
    gm_worker_entry *entries;
    unsigned n_running;
    gm_store *st;
    char store_error[512];      /* the latest failure to open the store, "" when none */
    gm_snapshot *scratch;       /* GPU part of the sample being added */
    gm_record_sink sink;        /* the store, as the sessions' recorders write to it */
    int64_t next_prune_mono_ms; /* when retention next runs (0: at start) */
};

/* ---- answers (status and body of a job) ---------------------------------------------------- */

/* Answers j with status and {"error": msg} (503 when out of memory). */
void gm_worker_job_error(gm_worker_job *j, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Answers j with status and the JSON text of doc (stolen; NULL: 503 out of memory). */
void gm_worker_job_json(gm_worker_job *j, int status, json_t *doc);
/* Answers j with status and text (malloc'd, len bytes, taken). */
void gm_worker_job_text(gm_worker_job *j, int status, char *text, size_t len);

/* The HTTP status of a store failure: 404 for GM_ENOENT, else 503. */
static inline int gm_worker_store_status(int code)
{
    return code == GM_ENOENT ? 404 : 503;
}

/* Whether doc's "provider" (a session document, or a session's attached data) is the
 * simulator. */
static inline bool gm_worker_simulated(const json_t *doc)
{
    const char *prov = json_string_value(json_object_get(doc, "provider"));
    return prov && strcmp(prov, "sim") == 0;
}

/* ---- the store ----------------------------------------------------------------------------- */

/* The open store, opening it when needed. create: a session is about to be written, so the
 * database may be created; otherwise a missing file means "nothing stored" (GM_ENOENT) and is
 * not created. NULL with err set when there is no store. */
gm_store *gm_worker_store(gm_worker *m, bool create, gm_error *err);
/* Deletes stored entry id with its samples. Returns GM_OK, GM_ENOENT (no such entry, or no
 * store) or the store's error. */
int gm_worker_store_delete(gm_worker *m, const char *id, gm_error *err);
/* Logs a failure of the store about session id (NULL: none). */
void gm_worker_log_store_error(const char *what, const char *id, const char *msg);

/* ---- the sessions in memory ---------------------------------------------------------------- */

/* Starts the session of a create job (j->session, taken): GM_OK with *out, GM_EBUSY when
 * GM_WORKER_MAX_RUNNING are running, GM_ENOMEM. On failure the creation no longer counts as
 * wanting samples. */
int gm_worker_entry_start(gm_worker *m, gm_worker_job *j, gm_worker_entry **out);
/* The in-memory session id, NULL when none. */
gm_worker_entry *gm_worker_entry_find(gm_worker *m, const char *id);
/* Ends running session e: finish, reason, store end (write_end: try to write it now). The
 * entry stays (the caller renders it and then settles or removes it). */
void gm_worker_entry_end(gm_worker *m, gm_worker_entry *e, const char *reason, bool write_end);
/* After a stop: the store has a persisted session, so memory lets it go; otherwise it is kept
 * (the newest GM_WORKER_KEEP_STOPPED of them). */
void gm_worker_entry_settle(gm_worker *m, gm_worker_entry *e);
/* Drops e from memory (not from the store). */
void gm_worker_entry_remove(gm_worker *m, gm_worker_entry *e);
/* Whether the store holds every sample of e. */
bool gm_worker_entry_persisted(const gm_worker_entry *e);
/* Logs that session id was deleted (bounded: a peer may delete in a loop). */
void gm_worker_log_deleted(gm_worker *m, const char *id);

#endif
