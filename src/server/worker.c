/* worker.c - the session worker: one thread that owns every monitoring session and the
 * SQLite store, fed samples by the sampler and requests by the HTTP loop through one queue.
 * Here: the queue, the store, the sessions' lifecycle and the dispatch of each request to its
 * answer (answers_sessions.c, answers_bench.c), which runs on this thread too. */
#include "server/worker.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "core/recorder.h"
#include "server/answers_bench.h"
#include "server/answers_sessions.h"
#include "server/log.h"
#include "server/worker_int.h"
#include "store/store.h"
#include "base/error.h"

/* Entries one retention pass deletes before the worker looks at its queue again; the next
 * pass follows a second later while older entries remain. */
#define PRUNE_BATCH 100
/* Samples one catch-up writes before the worker looks at its queue again. */
#define SYNC_CHUNK 1000

enum { JOB_NEW = 0, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* One queue element: a request (job) or the GPU part of one published sample. */
typedef struct gm_worker_item {
    struct gm_worker_item *next;
    gm_worker_job *job; /* NULL: a sample */
    int64_t mono_ms, time_ms;
    uint64_t dropped_before; /* samples dropped (queue full) just before this one */
    unsigned gpu_count;
    gm_gpu gpus[];
} item;

/* ---- small helpers ------------------------------------------------------------------------ */

/* Whether a session's start, stop or deletion is logged: any client may start and delete
 * sessions in a loop, so these lines are bounded (20 per interval, then one saying how many were
 * held back). */
static bool session_log_pass(gm_worker *m, uint64_t *held)
{
    return gm_log_limit_pass(&m->session_log, 20, GM_LOG_LIMIT_MS, gm_clock_mono_ms(), held);
}

void gm_worker_log_store_error(const char *what, const char *id, const char *msg)
{
    char q[600];
    gm_log(GM_LOG_WARN, what, "session=%s error=%s", id ? id : "-", gm_log_quote(msg, q, sizeof q));
}

void gm_worker_log_deleted(gm_worker *m, const char *id)
{
    uint64_t held;
    if (session_log_pass(m, &held))
        gm_log(GM_LOG_INFO, "session deleted", "session=%s held_back=%llu", id,
               (unsigned long long)held);
}

void gm_worker_job_error(gm_worker_job *j, int status, const char *fmt, ...)
{
    free(j->body);
    va_list ap;
    va_start(ap, fmt);
    j->body = gm_json_error_vtext(&j->len, fmt, ap);
    va_end(ap);
    j->status = j->body ? status : 503;
}

void gm_worker_job_text(gm_worker_job *j, int status, char *text, size_t len)
{
    free(j->body);
    j->body = text;
    j->len = len;
    j->status = status;
}

void gm_worker_job_json(gm_worker_job *j, int status, json_t *doc)
{
    size_t len = 0;
    char *text = doc ? gm_json_dump(doc, &len) : NULL;
    json_decref(doc);
    if (!text) {
        gm_worker_job_error(j, 503, "out of memory");
        return;
    }
    gm_worker_job_text(j, status, text, len);
}

gm_worker_job *gm_worker_job_new(gm_session_op op)
{
    gm_worker_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->op = op;
    atomic_init(&j->done, false);
    return j;
}

void gm_worker_job_free(gm_worker_job *j)
{
    if (!j)
        return;
    gm_session_free(j->session);
    free(j->body);
    free(j);
}

bool gm_worker_job_done(const gm_worker_job *j)
{
    return atomic_load(&j->done);
}

unsigned gm_worker_running(gm_worker *m)
{
    return m ? atomic_load(&m->running) : 0;
}

static void push_locked(gm_worker *m, item *it)
{
    it->next = NULL;
    if (m->tail)
        m->tail->next = it;
    else
        m->head = it;
    m->tail = it;
    pthread_cond_signal(&m->cv);
}

void gm_worker_submit(gm_worker *m, gm_worker_job *j)
{
    item *it = calloc(1, sizeof *it);
    pthread_mutex_lock(&m->mu);
    if (!it || m->stop) {
        pthread_mutex_unlock(&m->mu);
        free(it);
        gm_worker_job_error(j, 503, it ? "the daemon is shutting down" : "out of memory");
        j->state = JOB_DONE;
        atomic_store(&j->done, true);
        return;
    }
    if (j->op == GM_JOB_CREATE)
        atomic_fetch_add(&m->active, 1);
    it->job = j;
    j->state = JOB_QUEUED;
    push_locked(m, it);
    pthread_mutex_unlock(&m->mu);
}

void gm_worker_abandon(gm_worker *m, gm_worker_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&m->mu);
    if (j->state == JOB_RUNNING) {
        j->abandoned = true; /* the worker frees it when done */
        pthread_mutex_unlock(&m->mu);
        return;
    }
    if (j->state == JOB_QUEUED) {
        for (item **pp = &m->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
            if ((*pp)->job != j)
                continue;
            item *it = *pp;
            *pp = it->next;
            if (m->tail == it)
                m->tail = prev;
            free(it);
            break;
        }
        if (j->op == GM_JOB_CREATE)
            atomic_fetch_sub(&m->active, 1);
    }
    pthread_mutex_unlock(&m->mu);
    gm_worker_job_free(j);
}

void gm_worker_feed(gm_worker *m, const gm_snapshot *snap)
{
    if (!m || atomic_load(&m->active) == 0)
        return;
    item *it = malloc(sizeof *it + snap->gpu_count * sizeof(gm_gpu));
    pthread_mutex_lock(&m->mu);
    if (!it || m->stop || m->samples_queued >= GM_WORKER_QUEUE_MAX) {
        /* Dropped, not waited for: the sampler must keep its period whatever the store does. */
        if (!m->stop)
            m->dropped_pending++;
        pthread_mutex_unlock(&m->mu);
        free(it);
        return;
    }
    it->job = NULL;
    it->mono_ms = snap->mono_ms;
    it->time_ms = snap->time_ms;
    it->gpu_count = snap->gpu_count;
    memcpy(it->gpus, snap->gpus, snap->gpu_count * sizeof(gm_gpu));
    it->dropped_before = m->dropped_pending;
    m->dropped_pending = 0;
    m->samples_queued++;
    push_locked(m, it);
    pthread_mutex_unlock(&m->mu);
}

/* ---- the store ---------------------------------------------------------------------------- */

/* The open store, opening it when needed. create: a session is about to be written, so the
 * database may be created; otherwise a missing file means "nothing stored" (GM_ENOENT) and is
 * not created. NULL with err set when there is no store. */
gm_store *gm_worker_store(gm_worker *m, bool create, gm_error *err)
{
    if (!m->has_db) {
        gm_error_set(err, GM_ENOENT, "sessions are kept in memory only (--db none)");
        return NULL;
    }
    if (m->st)
        return m->st;
    if (!create && access(m->db_path, F_OK) != 0) {
        gm_error_set(err, GM_ENOENT, "no session stored yet");
        return NULL;
    }
    gm_error e = {0};
    if (gm_store_open(m->db_path, &m->st, &e) < 0) {
        if (strcmp(e.msg, m->store_error) != 0)
            gm_worker_log_store_error("cannot open the session store", NULL, e.msg);
        snprintf(m->store_error, sizeof m->store_error, "%s", e.msg);
        gm_error_set(err, e.code ? e.code : GM_EIO, "%s", e.msg);
        return NULL;
    }
    m->store_error[0] = '\0';
    gm_log(GM_LOG_INFO, "session store opened", "path=%s", m->db_path);
    return m->st;
}

/* Deletes stored entry id with its samples. Returns GM_OK, GM_ENOENT (no such entry, or no
 * store) or the store's error. */
int gm_worker_store_delete(gm_worker *m, const char *id, gm_error *err)
{
    gm_store *st = gm_worker_store(m, false, err);
    if (!st)
        return err->code == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id)
                                      : err->code;
    int rc = gm_store_session_delete(st, id, err);
    return rc == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id) : rc;
}

static bool store_behind(const gm_worker_entry *e)
{
    return gm_recorder_behind(e->rec);
}

bool gm_worker_entry_persisted(const gm_worker_entry *e)
{
    return gm_recorder_persisted(e->rec);
}

/* The worker's store as the record engine sees it: opened on first use. */
static int sink_begin(void *ctx, const gm_session *s, gm_error *err)
{
    gm_store *st = gm_worker_store(ctx, true, err);
    return st ? gm_store_session_begin(st, s, err) : (err->code ? err->code : GM_EIO);
}

static int sink_sample(void *ctx, const gm_session *s, size_t seq, double t_s, const double *values,
                       gm_error *err)
{
    gm_store *st = gm_worker_store(ctx, true, err);
    return st ? gm_store_session_sample_values(st, s, seq, t_s, values, err)
              : (err->code ? err->code : GM_EIO);
}

static int sink_end(void *ctx, gm_session *s, gm_error *err)
{
    gm_store *st = gm_worker_store(ctx, true, err);
    return st ? gm_store_session_end(st, s, err) : (err->code ? err->code : GM_EIO);
}

static int sink_remove(void *ctx, const char *id, gm_error *err)
{
    gm_store *st = gm_worker_store(ctx, true, err);
    return st ? gm_store_session_delete(st, id, err) : (err->code ? err->code : GM_EIO);
}

static void on_record_event(void *arg, const gm_session *s, gm_record_event ev, const char *detail)
{
    (void)arg;
    if (ev == GM_RECORD_STORE_FAILING)
        gm_worker_log_store_error(
            "session store write failed; its samples are kept and written when the "
            "store works again",
            gm_session_id(s), detail);
    else if (ev == GM_RECORD_STORE_RESUMED)
        gm_log(GM_LOG_INFO, "session store writes resumed", "session=%s samples=%zu",
               gm_session_id(s), gm_session_sample_count(s));
    else
        gm_worker_log_store_error("session no longer stored; it goes on in memory",
                                  gm_session_id(s), detail);
}

/* One try at bringing the store up to date with e (at most SYNC_CHUNK samples). */
static void try_sync(gm_worker_entry *e, bool force)
{
    gm_recorder_sync(e->rec, gm_clock_mono_ms(), force, NULL);
}

/* ---- sessions ----------------------------------------------------------------------------- */

gm_worker_entry *gm_worker_entry_find(gm_worker *m, const char *id)
{
    for (gm_worker_entry *e = m->entries; e; e = e->next)
        if (strcmp(gm_session_id(e->s), id) == 0)
            return e;
    return NULL;
}

void gm_worker_entry_remove(gm_worker *m, gm_worker_entry *e)
{
    for (gm_worker_entry **pp = &m->entries; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    gm_recorder_free(e->rec);
    free(e);
}

void gm_worker_entry_end(gm_worker *m, gm_worker_entry *e, const char *reason, bool write_end)
{
    gm_session_finish(e->s);
    gm_session_attach(e->s, "stop_reason", json_string(reason));
    gm_session_attach(e->s, "samples_dropped", json_integer((json_int_t)e->dropped));
    e->running = false;
    m->n_running--;
    atomic_fetch_sub(&m->running, 1);
    atomic_fetch_sub(&m->active, 1);
    /* A stop is worth a try even while the store backs off (stopped before its first sample:
     * stored anyway). */
    gm_recorder_ended(e->rec);
    if (write_end && store_behind(e))
        try_sync(e, true);
    char q[200];
    uint64_t held;
    if (session_log_pass(m, &held))
        gm_log(GM_LOG_INFO, "session stopped",
               "session=%s reason=%s samples=%zu persisted=%s held_back=%llu", gm_session_id(e->s),
               gm_log_quote(reason, q, sizeof q), gm_session_sample_count(e->s),
               gm_worker_entry_persisted(e) ? "true" : "false", (unsigned long long)held);
}

/* After a stop: the store has a persisted session, so memory lets it go; otherwise it is kept
 * (the newest GM_WORKER_KEEP_STOPPED of them). */
void gm_worker_entry_settle(gm_worker *m, gm_worker_entry *e)
{
    if (gm_worker_entry_persisted(e)) {
        gm_worker_entry_remove(m, e);
        return;
    }
    size_t kept = 0;
    gm_worker_entry *oldest = NULL;
    for (gm_worker_entry *x = m->entries; x; x = x->next)
        if (!x->running) {
            kept++;
            if (!oldest || gm_session_started_ms(x->s) < gm_session_started_ms(oldest->s))
                oldest = x;
        }
    if (kept > GM_WORKER_KEEP_STOPPED && oldest) {
        if (store_behind(oldest))
            gm_worker_log_store_error("session dropped from memory before the store took it",
                                      gm_session_id(oldest->s),
                                      "too many stopped sessions in memory");
        gm_worker_entry_remove(m, oldest);
    }
}

int gm_worker_entry_start(gm_worker *m, gm_worker_job *j, gm_worker_entry **out)
{
    gm_worker_entry *e = m->n_running < GM_WORKER_MAX_RUNNING ? calloc(1, sizeof *e) : NULL;
    if (!e) {
        atomic_fetch_sub(&m->active, 1);
        return m->n_running < GM_WORKER_MAX_RUNNING ? GM_ENOMEM : GM_EBUSY;
    }
    static const gm_record_sink sink_fns = {NULL, sink_begin, sink_sample, sink_end, sink_remove};
    gm_record_sink *sink = &m->sink;
    *sink = sink_fns;
    sink->ctx = m;
    gm_recorder_options ro = {.sink = m->has_db ? sink : NULL,
                              .pending_max_values = m->opt.pending_max_values,
                              .retry_first_ms = m->opt.poll_ms,
                              .chunk = SYNC_CHUNK,
                              .event = on_record_event};
    gm_error rerr = {0};
    /* Said outright next to the provider the route attached, as gpumon record does. */
    const json_t *attached = gm_session_attached(j->session);
    if (json_is_string(json_object_get(attached, "provider")))
        gm_session_attach(j->session, "simulated", json_boolean(gm_worker_simulated(attached)));
    if (gm_recorder_new(j->session, &ro, &e->rec, &rerr) < 0) {
        free(e);
        atomic_fetch_sub(&m->active, 1);
        return GM_ENOMEM;
    }
    e->s = j->session;
    j->session = NULL;
    /* Memory grows with samples x GPUs (timeline and percentile values): bounded here, while
     * the statistics and the store go on with every sample. */
    size_t ng = gm_session_gpu_count(e->s);
    size_t limit = m->opt.timeline_max_values / (ng ? ng : 1);
    if (limit > GM_SESSION_MAX_SAMPLES)
        limit = GM_SESSION_MAX_SAMPLES;
    gm_session_set_sample_limit(e->s, limit ? limit : 1);
    e->running = true;
    e->every = j->create.every;
    e->created_mono_ms = j->created_mono_ms;
    e->next = m->entries;
    m->entries = e;
    m->n_running++;
    atomic_fetch_add(&m->running, 1); /* active already counts it */
    char q[300];
    uint64_t held;
    if (session_log_pass(m, &held))
        gm_log(GM_LOG_INFO, "session started",
               "session=%s gpus=%zu interval_s=%g label=%s held_back=%llu", gm_session_id(e->s),
               gm_session_gpu_count(e->s), gm_session_interval(e->s),
               gm_log_quote(gm_session_label(e->s), q, sizeof q), (unsigned long long)held);
    *out = e;
    return GM_OK;
}

static void on_sample(gm_worker *m, const item *it)
{
    gm_snapshot *snap = m->scratch;
    snap->mono_ms = it->mono_ms;
    snap->time_ms = it->time_ms;
    snap->gpu_count = it->gpu_count;
    memcpy(snap->gpus, it->gpus, it->gpu_count * sizeof(gm_gpu));
    if (!m->opt.energy_fresh)
        for (unsigned i = 0; i < snap->gpu_count; i++)
            gm_gpu_unset(&snap->gpus[i], GM_M_ENERGY_MJ);
    int64_t poll = m->opt.poll_ms;
    for (gm_worker_entry *e = m->entries, *next; e; e = next) {
        next = e->next;
        if (!e->running)
            continue;
        e->dropped += it->dropped_before;
        /* A sample taken before the request arrived is not part of the session. */
        if (it->mono_ms < e->created_mono_ms)
            continue;
        /* Every sample at the daemon's own interval (a pass late under load, then one early
         * to catch up, are both taken); else every `every`-th, by time with half a period of
         * slack for jitter, so a failed sampling pass shifts the schedule instead of doubling
         * up. */
        if (e->every > 1 && e->last_added_mono_ms &&
            it->mono_ms - e->last_added_mono_ms < e->every * poll - poll / 2)
            continue;
        gm_error err = {0};
        if (gm_recorder_add(e->rec, snap, &err) < 0) {
            gm_worker_log_store_error("cannot add a sample to a session", gm_session_id(e->s),
                                      err.msg);
            continue;
        }
        e->last_added_mono_ms = it->mono_ms;
    }
}

/* Writes what the store lacks of every session whose turn it is: after each sample (one
 * transaction per sample while the store works), and on the backoff's schedule while it fails.
 * A stopped session the store now holds whole leaves memory. */
static void sync_due(gm_worker *m)
{
    int64_t now = gm_clock_mono_ms();
    for (gm_worker_entry *e = m->entries, *next; e; e = next) {
        next = e->next;
        if (gm_recorder_due_ms(e->rec, now) != 0)
            continue;
        try_sync(e, false);
        if (!e->running && gm_worker_entry_persisted(e))
            gm_worker_entry_remove(m, e);
    }
}

/* Milliseconds until sync_due has work (0: now), -1 when none is due. */
static int64_t sync_wait_ms(const gm_worker *m)
{
    int64_t best = -1, now = gm_clock_mono_ms();
    for (const gm_worker_entry *e = m->entries; e; e = e->next) {
        int64_t wait = gm_recorder_due_ms(e->rec, now);
        if (wait >= 0 && (best < 0 || wait < best))
            best = wait;
    }
    return best;
}

/* ---- retention ---------------------------------------------------------------------------- */

/* Milliseconds until prune_due has work (0: now), -1 without retention. */
static int64_t prune_wait_ms(const gm_worker *m)
{
    if (!m->opt.retention_s || !m->has_db)
        return -1;
    int64_t wait = m->next_prune_mono_ms - gm_clock_mono_ms();
    return wait > 0 ? wait : 0;
}

/* Deletes what is past retention, a batch at a time, here on the worker thread that owns the
 * store: the event loop never waits on it, and the sampler only if the queue fills. */
static void prune_due(gm_worker *m)
{
    if (prune_wait_ms(m) != 0)
        return;
    int64_t period = (int64_t)m->opt.retention_s * 1000 / 24;
    period = period < 1000 ? 1000 : period > 3600000 ? 3600000 : period;
    gm_error err = {0};
    size_t deleted = 0;
    bool more = false;
    gm_store *st = gm_worker_store(m, false, &err);
    int64_t cutoff = gm_clock_wall_ms() - (int64_t)m->opt.retention_s * 1000;
    if (st && gm_store_prune(st, cutoff, PRUNE_BATCH, &deleted, &more, &err) < 0)
        gm_worker_log_store_error("cannot delete sessions past retention", NULL, err.msg);
    if (deleted)
        gm_log(GM_LOG_INFO, "sessions past retention deleted", "count=%zu retention_s=%u%s",
               deleted, m->opt.retention_s, more ? " more=true" : "");
    m->next_prune_mono_ms = gm_clock_mono_ms() + (more ? 1000 : period);
}

/* ---- requests ----------------------------------------------------------------------------- */

/* What answers each request (all on this thread); GM_JOB_FLEET is the fleet thread's. */
typedef void (*answer_fn)(gm_worker *m, gm_worker_job *j);
static const answer_fn answers[] = {
    [GM_JOB_CREATE] = gm_answer_session_create,       [GM_JOB_STOP] = gm_answer_session_stop,
    [GM_JOB_LIST] = gm_answer_session_list,           [GM_JOB_GET] = gm_answer_session_get,
    [GM_JOB_DELETE] = gm_answer_session_delete,       [GM_JOB_EXPORT] = gm_answer_session_export,
    [GM_JOB_BENCH_LIST] = gm_answer_bench_list,       [GM_JOB_BENCH_GET] = gm_answer_bench_get,
    [GM_JOB_BENCH_COMPARE] = gm_answer_bench_compare, [GM_JOB_IMAGES] = gm_answer_images,
};

static void run_job(gm_worker *m, gm_worker_job *j)
{
    answer_fn fn = (size_t)j->op < sizeof answers / sizeof *answers ? answers[j->op] : NULL;
    if (fn)
        fn(m, j);
    else
        gm_worker_job_error(j, 500, "the fleet query reached the session worker");
}

/* ---- the thread --------------------------------------------------------------------------- */

/* Hands a finished job back: the loop's, or freed when the loop gave it up meanwhile. */
static void complete(gm_worker *m, gm_worker_job *j)
{
    pthread_mutex_lock(&m->mu);
    bool abandoned = j->abandoned;
    if (!abandoned) {
        j->state = JOB_DONE;
        atomic_store(&j->done, true);
    }
    pthread_mutex_unlock(&m->mu);
    if (abandoned)
        gm_worker_job_free(j);
    else if (m->opt.wake)
        m->opt.wake(m->opt.wake_arg);
}

static void *worker_main(void *arg)
{
    gm_worker *m = arg;
    for (;;) {
        int64_t wait_ms = sync_wait_ms(m), prune_ms = prune_wait_ms(m);
        if (prune_ms >= 0 && (wait_ms < 0 || prune_ms < wait_ms))
            wait_ms = prune_ms;
        struct timespec until = gm_clock_mono_deadline(wait_ms);
        pthread_mutex_lock(&m->mu);
        /* Asleep until an item comes, a session's store retry or retention is due. */
        while (!m->head && !m->stop && wait_ms != 0)
            if (wait_ms < 0)
                pthread_cond_wait(&m->cv, &m->mu);
            else if (pthread_cond_timedwait(&m->cv, &m->mu, &until) == ETIMEDOUT)
                break;
        item *it = m->head;
        if (it) {
            m->head = it->next;
            if (!m->head)
                m->tail = NULL;
            if (it->job)
                it->job->state = JOB_RUNNING;
            else
                m->samples_queued--;
        }
        bool stopping = m->stop;
        pthread_mutex_unlock(&m->mu);
        if (!it && stopping)
            break; /* stopping and drained */
        if (!it) {
            sync_due(m); /* a retry or retention is due */
            prune_due(m);
            continue;
        }
        if (it->job) {
            if (stopping) {
                if (it->job->op == GM_JOB_CREATE)
                    atomic_fetch_sub(&m->active, 1);
                gm_worker_job_error(it->job, 503, "the daemon is shutting down");
            } else {
                run_job(m, it->job);
            }
            complete(m, it->job);
        } else if (!stopping) {
            on_sample(m, it);
        }
        free(it);
        if (!stopping) {
            sync_due(m);
            prune_due(m);
        }
    }
    /* The daemon stops: so do its sessions, with their end written; a last try for those the
     * store still lacks, whatever their backoff. */
    for (gm_worker_entry *e = m->entries; e; e = e->next) {
        if (e->running)
            gm_worker_entry_end(m, e, "daemon_stopped", true);
        for (int chunk = 0; store_behind(e) && chunk < 1000; chunk++) {
            gm_error err = {0};
            if (gm_recorder_sync(e->rec, gm_clock_mono_ms(), true, &err) < 0) {
                char q[600];
                gm_log(GM_LOG_WARN, "session not stored whole at exit",
                       "session=%s stored_samples=%zu samples=%zu error=%s", gm_session_id(e->s),
                       gm_recorder_stored(e->rec), gm_session_sample_count(e->s),
                       gm_log_quote(err.msg, q, sizeof q));
                break;
            }
        }
    }
    return NULL;
}

int gm_worker_start(const gm_worker_options *opt, gm_worker **out, gm_error *err)
{
    if (!opt || !out || opt->poll_ms == 0)
        return gm_error_set(err, GM_EINVAL, "sessions: the poll interval is required");
    gm_worker *m = calloc(1, sizeof *m);
    if (!m)
        return gm_error_set(err, GM_ENOMEM, "sessions: out of memory");
    m->opt = *opt;
    if (opt->db_path && *opt->db_path) {
        snprintf(m->db_path, sizeof m->db_path, "%s", opt->db_path);
        m->has_db = true;
    }
    m->opt.db_path = m->db_path;
    if (!m->opt.timeline_max_values)
        m->opt.timeline_max_values = GM_SESSION_MAX_VALUES;
    if (!m->opt.pending_max_values)
        m->opt.pending_max_values = GM_SESSION_PENDING_MAX_VALUES;
    atomic_init(&m->active, 0);
    atomic_init(&m->running, 0);
    pthread_mutex_init(&m->mu, NULL);
    /* Store retries wait on the monotonic clock: a wall-clock step must not stall them. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    m->scratch = calloc(1, sizeof *m->scratch); /* no process table: sessions never read it */
    if (!m->scratch) {
        gm_worker_free(m);
        return gm_error_set(err, GM_ENOMEM, "sessions: out of memory");
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&m->thread, NULL, worker_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        gm_worker_free(m);
        return gm_error_set(err, GM_EIO, "sessions: cannot start thread: %s", strerror(rc));
    }
    m->started = true;
    *out = m;
    return GM_OK;
}

void gm_worker_stop(gm_worker *m)
{
    if (!m || !m->started || m->joined)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    m->joined = true;
}

void gm_worker_free(gm_worker *m)
{
    if (!m)
        return;
    gm_worker_stop(m);
    /* The worker drains the queue before it exits; this only matters when it never ran. The
     * jobs themselves belong to the loop. */
    for (item *it = m->head, *next; it; it = next) {
        next = it->next;
        free(it);
    }
    while (m->entries)
        gm_worker_entry_remove(m, m->entries);
    gm_store_close(m->st);
    free(m->scratch);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
