/* worker.c - the session worker: one thread that owns every monitoring session and the
 * SQLite store, fed samples by the sampler and requests by the HTTP loop through one queue. */
#include "server/worker.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "core/bench_html.h"
#include "core/bench_report.h"
#include "core/recorder.h"
#include "core/timeline.h"
#include "server/jobs.h"
#include "server/log.h"
#include "server/sampler.h"
#include "store/store.h"

/* Rows of the store read for one listing: bounds the worker's memory whatever the database
 * holds (gpumon record and run write there too). */
#define LIST_SCAN_MAX 10000

/* While the store fails (a full disk), a session's unwritten samples are retried with a backoff
 * from the poll interval (at least this) doubling up to a minute, at samples, stops and on a
 * timer, so a session stopped meanwhile is still written once the store works again. */
/* Entries one retention pass deletes before the worker looks at its queue again; the next
 * pass follows a second later while older entries remain. */
#define PRUNE_BATCH 100
/* Samples one catch-up writes before the worker looks at its queue again. */
#define SYNC_CHUNK 1000

enum { JOB_NEW = 0, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* One queue element: a request (job) or the GPU part of one published sample. */
typedef struct item {
    struct item *next;
    gm_worker_job *job; /* NULL: a sample */
    int64_t mono_ms, time_ms;
    uint64_t dropped_before; /* samples dropped (queue full) just before this one */
    unsigned gpu_count;
    gm_gpu gpus[];
} item;

/* One session the worker holds in memory: every running one, and stopped ones the store does
 * not have. */
typedef struct entry {
    struct entry *next;
    gm_recorder *rec; /* the session and its store copy */
    gm_session *s;    /* rec's session */
    bool running;
    unsigned every; /* take a sample at most every `every` poll intervals */
    int64_t created_mono_ms;
    int64_t last_added_mono_ms; /* 0: none yet */
    uint64_t dropped;
} entry;

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
    item *head, *tail;
    size_t samples_queued;
    uint64_t dropped_pending;
    bool stop;

    atomic_uint active;  /* running sessions plus creations queued: samples are wanted */
    atomic_uint running; /* running sessions */

    /* Worker only. */
    entry *entries;
    unsigned n_running;
    gm_store *st;
    char store_error[512];      /* the latest failure to open the store, "" when none */
    gm_snapshot *scratch;       /* GPU part of the sample being added */
    gm_record_sink sink;        /* the store, as the sessions' recorders write to it */
    int64_t next_prune_mono_ms; /* when retention next runs (0: at start) */
};

/* ---- small helpers ------------------------------------------------------------------------ */

/* Whether a session's start, stop or deletion is logged: any client may start and delete
 * sessions in a loop, so these lines are bounded (20 per interval, then one saying how many were
 * held back). */
static bool session_log_pass(gm_worker *m, uint64_t *held)
{
    return gm_log_limit_pass(&m->session_log, 20, GM_LOG_LIMIT_MS, gm_clock_mono_ms(), held);
}

static void log_store_error(const char *what, const char *id, const char *msg)
{
    char q[600];
    gm_log(GM_LOG_WARN, what, "session=%s error=%s", id ? id : "-", gm_log_quote(msg, q, sizeof q));
}

/* Answers j with status and {"error": msg}. */
static void job_error(gm_worker_job *j, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void job_error(gm_worker_job *j, int status, const char *fmt, ...)
{
    free(j->body);
    va_list ap;
    va_start(ap, fmt);
    j->body = gm_json_error_vtext(&j->len, fmt, ap);
    va_end(ap);
    j->status = j->body ? status : 503;
}

/* Answers j with status and the JSON text of doc (stolen). */
static void job_json(gm_worker_job *j, int status, json_t *doc)
{
    char *text = doc ? gm_json_dump(doc, &j->len) : NULL;
    json_decref(doc);
    if (!text) {
        job_error(j, 503, "out of memory");
        return;
    }
    free(j->body);
    j->body = text;
    j->status = status;
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
        job_error(j, 503, it ? "the daemon is shutting down" : "out of memory");
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
static gm_store *store_get(gm_worker *m, bool create, gm_error *err)
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
            log_store_error("cannot open the session store", NULL, e.msg);
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
static int store_delete(gm_worker *m, const char *id, gm_error *err)
{
    gm_store *st = store_get(m, false, err);
    if (!st)
        return err->code == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id)
                                      : err->code;
    int rc = gm_store_session_delete(st, id, err);
    return rc == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id) : rc;
}

static bool store_behind(const entry *e)
{
    return gm_recorder_behind(e->rec);
}

static bool entry_persisted(const entry *e)
{
    return gm_recorder_persisted(e->rec);
}

/* The worker's store as the record engine sees it: opened on first use. */
static int sink_begin(void *ctx, const gm_session *s, gm_error *err)
{
    gm_store *st = store_get(ctx, true, err);
    return st ? gm_store_session_begin(st, s, err) : (err->code ? err->code : GM_EIO);
}

static int sink_sample(void *ctx, const gm_session *s, size_t seq, double t_s, const double *values,
                       gm_error *err)
{
    gm_store *st = store_get(ctx, true, err);
    return st ? gm_store_session_sample_values(st, s, seq, t_s, values, err)
              : (err->code ? err->code : GM_EIO);
}

static int sink_end(void *ctx, gm_session *s, gm_error *err)
{
    gm_store *st = store_get(ctx, true, err);
    return st ? gm_store_session_end(st, s, err) : (err->code ? err->code : GM_EIO);
}

static int sink_remove(void *ctx, const char *id, gm_error *err)
{
    gm_store *st = store_get(ctx, true, err);
    return st ? gm_store_session_delete(st, id, err) : (err->code ? err->code : GM_EIO);
}

static void on_record_event(void *arg, const gm_session *s, gm_record_event ev, const char *detail)
{
    (void)arg;
    if (ev == GM_RECORD_STORE_FAILING)
        log_store_error("session store write failed; its samples are kept and written when the "
                        "store works again",
                        gm_session_id(s), detail);
    else if (ev == GM_RECORD_STORE_RESUMED)
        gm_log(GM_LOG_INFO, "session store writes resumed", "session=%s samples=%zu",
               gm_session_id(s), gm_session_sample_count(s));
    else
        log_store_error("session no longer stored; it goes on in memory", gm_session_id(s), detail);
}

/* One try at bringing the store up to date with e (at most SYNC_CHUNK samples). */
static void try_sync(entry *e, bool force)
{
    gm_recorder_sync(e->rec, gm_clock_mono_ms(), force, NULL);
}

/* ---- sessions ----------------------------------------------------------------------------- */

static entry *find_entry(gm_worker *m, const char *id)
{
    for (entry *e = m->entries; e; e = e->next)
        if (strcmp(gm_session_id(e->s), id) == 0)
            return e;
    return NULL;
}

static void remove_entry(gm_worker *m, entry *e)
{
    for (entry **pp = &m->entries; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    gm_recorder_free(e->rec);
    free(e);
}

/* The API document of an in-memory session: gm_session_to_json plus status (running/stopped),
 * persisted and samples_dropped. A persisted session's timeline is served from the store,
 * which has every sample, so it is not truncated even past the sample limit. New reference,
 * NULL when out of memory. */
static json_t *entry_doc(gm_worker *m, entry *e)
{
    json_t *d = gm_session_to_json(e->s);
    if (!d)
        return NULL;
    json_object_set_new(d, "status", json_string(e->running ? "running" : "stopped"));
    json_object_set_new(d, "persisted", json_boolean(entry_persisted(e)));
    if (entry_persisted(e))
        json_object_set_new(d, "timeline_truncated", json_false());
    json_object_set_new(d, "samples_dropped", json_integer((json_int_t)e->dropped));
    return d;
}

/* Ends running session e: finish, reason, store end. The entry stays (the caller renders it
 * and then decides whether to keep it). */
static void end_entry(gm_worker *m, entry *e, const char *reason, bool write_end)
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
               entry_persisted(e) ? "true" : "false", (unsigned long long)held);
}

/* After a stop: the store has a persisted session, so memory lets it go; otherwise it is kept
 * (the newest GM_WORKER_KEEP_STOPPED of them). */
static void settle_stopped(gm_worker *m, entry *e)
{
    if (entry_persisted(e)) {
        remove_entry(m, e);
        return;
    }
    size_t kept = 0;
    entry *oldest = NULL;
    for (entry *x = m->entries; x; x = x->next)
        if (!x->running) {
            kept++;
            if (!oldest || gm_session_started_ms(x->s) < gm_session_started_ms(oldest->s))
                oldest = x;
        }
    if (kept > GM_WORKER_KEEP_STOPPED && oldest) {
        if (store_behind(oldest))
            log_store_error("session dropped from memory before the store took it",
                            gm_session_id(oldest->s), "too many stopped sessions in memory");
        remove_entry(m, oldest);
    }
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
    for (entry *e = m->entries, *next; e; e = next) {
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
            log_store_error("cannot add a sample to a session", gm_session_id(e->s), err.msg);
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
    for (entry *e = m->entries, *next; e; e = next) {
        next = e->next;
        if (gm_recorder_due_ms(e->rec, now) != 0)
            continue;
        try_sync(e, false);
        if (!e->running && entry_persisted(e))
            remove_entry(m, e);
    }
}

/* Milliseconds until sync_due has work (0: now), -1 when none is due. */
static int64_t sync_wait_ms(const gm_worker *m)
{
    int64_t best = -1, now = gm_clock_mono_ms();
    for (const entry *e = m->entries; e; e = e->next) {
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
    gm_store *st = store_get(m, false, &err);
    int64_t cutoff = gm_clock_wall_ms() - (int64_t)m->opt.retention_s * 1000;
    if (st && gm_store_prune(st, cutoff, PRUNE_BATCH, &deleted, &more, &err) < 0)
        log_store_error("cannot delete sessions past retention", NULL, err.msg);
    if (deleted)
        gm_log(GM_LOG_INFO, "sessions past retention deleted", "count=%zu retention_s=%u%s",
               deleted, m->opt.retention_s, more ? " more=true" : "");
    m->next_prune_mono_ms = gm_clock_mono_ms() + (more ? 1000 : period);
}

/* ---- requests ----------------------------------------------------------------------------- */

static void do_create(gm_worker *m, gm_worker_job *j)
{
    if (m->n_running >= GM_WORKER_MAX_RUNNING) {
        atomic_fetch_sub(&m->active, 1);
        job_error(j, 409, "%d sessions are already running: stop one first", GM_WORKER_MAX_RUNNING);
        return;
    }
    entry *e = calloc(1, sizeof *e);
    if (!e) {
        atomic_fetch_sub(&m->active, 1);
        job_error(j, 503, "out of memory");
        return;
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
    const char *prov =
        json_string_value(json_object_get(gm_session_attached(j->session), "provider"));
    if (prov)
        gm_session_attach(j->session, "simulated", json_boolean(strcmp(prov, "sim") == 0));
    if (gm_recorder_new(j->session, &ro, &e->rec, &rerr) < 0) {
        free(e);
        atomic_fetch_sub(&m->active, 1);
        job_error(j, 503, "out of memory");
        return;
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
    job_json(j, 201, entry_doc(m, e));
}

/* API status of a stored status. */
static const char *api_status(const char *stored)
{
    return stored && strcmp(stored, "finished") == 0 ? "stopped" : stored ? stored : "stopped";
}

/* The stored document of id without timeline (status mapped for the API). GM_ENOENT, or the
 * store's error, with err set. */
static int load_stored(gm_worker *m, const char *id, json_t **doc, gm_error *err)
{
    *doc = NULL;
    gm_store *st = store_get(m, false, err);
    if (!st)
        return err->code == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id)
                                      : err->code;
    int rc = gm_store_load(st, id, doc, err);
    if (rc < 0)
        return rc == GM_ENOENT ? gm_error_set(err, GM_ENOENT, "no session \"%s\"", id) : rc;
    const char *status = json_string_value(json_object_get(*doc, "status"));
    json_object_set_new(*doc, "status", json_string(api_status(status)));
    json_object_set_new(*doc, "persisted", json_true());
    return GM_OK;
}

static int store_error_status(int code)
{
    return code == GM_ENOENT ? 404 : 503;
}

static void do_stop(gm_worker *m, gm_worker_job *j)
{
    entry *e = find_entry(m, j->id);
    if (e && !e->running) {
        job_error(j, 409, "session %s is not running (already stopped)", j->id);
        return;
    }
    if (e) {
        end_entry(m, e, "request", true);
        json_t *doc = entry_doc(m, e);
        settle_stopped(m, e);
        job_json(j, 200, doc);
        return;
    }
    json_t *doc;
    gm_error err = {0};
    int rc = load_stored(m, j->id, &doc, &err);
    if (rc < 0) {
        job_error(j, store_error_status(rc), "%s", err.msg);
        return;
    }
    const char *status = json_string_value(json_object_get(doc, "status"));
    if (status && strcmp(status, "running") == 0)
        job_error(j, 409, "session %s is being recorded by another gpumon process: stop it there",
                  j->id);
    else
        job_error(j, 409, "session %s is not running (%s)", j->id, status ? status : "stopped");
    json_decref(doc);
}

static void do_delete(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    entry *e = find_entry(m, j->id);
    if (e) {
        bool in_store = gm_recorder_begun(e->rec);
        if (e->running)
            end_entry(m, e, "deleted", false);
        remove_entry(m, e);
        int rc = in_store && m->has_db ? store_delete(m, j->id, &err) : GM_OK;
        if (rc < 0 && rc != GM_ENOENT)
            log_store_error("cannot delete a stored session", j->id, err.msg);
        uint64_t held;
        if (session_log_pass(m, &held))
            gm_log(GM_LOG_INFO, "session deleted", "session=%s held_back=%llu", j->id,
                   (unsigned long long)held);
        j->status = 204;
        return;
    }
    json_t *doc;
    int rc = load_stored(m, j->id, &doc, &err);
    if (rc < 0) {
        job_error(j, store_error_status(rc), "%s", err.msg);
        return;
    }
    const char *status = json_string_value(json_object_get(doc, "status"));
    bool elsewhere = status && strcmp(status, "running") == 0;
    json_decref(doc);
    if (elsewhere) {
        job_error(j, 409,
                  "session %s is being recorded by another gpumon process: stop it there first",
                  j->id);
        return;
    }
    rc = store_delete(m, j->id, &err);
    if (rc < 0) {
        job_error(j, store_error_status(rc), "%s", err.msg);
        return;
    }
    uint64_t held;
    if (session_log_pass(m, &held))
        gm_log(GM_LOG_INFO, "session deleted", "session=%s held_back=%llu", j->id,
               (unsigned long long)held);
    j->status = 204;
}

/* Answers j with doc (stolen) and, when asked, its timeline appended: from memory while the
 * session holds all of it (or the store does not have it), else from the store. */
static void answer_with_timeline(gm_worker *m, gm_worker_job *j, json_t *doc, entry *e,
                                 gm_timeline_format f)
{
    if (e && entry_persisted(e) && gm_session_timeline_count(e->s) < gm_session_sample_count(e->s))
        e = NULL; /* past its sample limit: the store has every sample */
    size_t samples = e ? gm_session_timeline_count(e->s)
                       : (size_t)json_integer_value(json_object_get(doc, "sample_count"));
    size_t ngpus = json_array_size(json_object_get(doc, "gpus"));
    if (!j->timeline) {
        job_json(j, 200, doc);
        return;
    }
    if (samples * (ngpus ? ngpus : 1) > GM_SESSION_TIMELINE_MAX) {
        json_decref(doc);
        job_error(j, 413,
                  "the timeline of %zu samples x %zu GPU(s) is over the limit of %d values per "
                  "response: ask ?timeline=0 for the statistics, or export the samples with "
                  "`gpumon history export %s --format csv`",
                  samples, ngpus, GM_SESSION_TIMELINE_MAX, j->id);
        return;
    }
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    gm_error err = {0};
    const char *prov = json_string_value(json_object_get(doc, "provider"));
    bool simulated = prov && strcmp(prov, "sim") == 0;
    int rc = f == GM_TIMELINE_CSV ? gm_timeline_open(f, &b, NULL, &tl)
                                  : gm_timeline_open_doc(f, doc, &b, NULL, &tl);
    json_decref(doc);
    if (rc == GM_OK)
        gm_timeline_set_simulated(tl, simulated);
    if (rc == GM_OK && e)
        gm_timeline_add_session(tl, e->s);
    else if (rc == GM_OK && gm_store_timeline(m->st, j->id, tl, &err) < 0) {
        gm_timeline_close(tl, NULL);
        gm_buf_free(&b);
        job_error(j, store_error_status(err.code), "%s", err.msg);
        return;
    }
    if (rc == GM_OK)
        rc = gm_timeline_close(tl, &err);
    size_t len = 0;
    char *text = rc == GM_OK ? gm_buf_take(&b, &len) : NULL;
    gm_buf_free(&b);
    if (!text) {
        job_error(j, 503, "out of memory rendering the timeline");
        return;
    }
    free(j->body);
    j->body = text;
    j->len = len;
    j->status = 200;
}

static void do_get(gm_worker *m, gm_worker_job *j)
{
    entry *e = find_entry(m, j->id);
    if (e) {
        json_t *doc = entry_doc(m, e);
        if (!doc) {
            job_error(j, 503, "out of memory");
            return;
        }
        answer_with_timeline(m, j, doc, e, GM_TIMELINE_JSON);
        return;
    }
    json_t *doc;
    gm_error err = {0};
    int rc = load_stored(m, j->id, &doc, &err);
    if (rc < 0) {
        job_error(j, store_error_status(rc), "%s", err.msg);
        return;
    }
    answer_with_timeline(m, j, doc, NULL, GM_TIMELINE_JSON);
}

/* GET /api/sessions/{id}/export: what `gpumon history export ID` writes, as a file to save. A
 * session: its timeline as CSV, or its document with the timeline (JSON, indented); a
 * benchmark: its points as CSV, or its document; another stored document: JSON only. */
static void do_export(gm_worker *m, gm_worker_job *j)
{
    entry *e = find_entry(m, j->id);
    json_t *doc = NULL;
    gm_error err = {0};
    int rc = e ? ((doc = entry_doc(m, e)) ? GM_OK : GM_ENOMEM) : load_stored(m, j->id, &doc, &err);
    if (rc < 0) {
        job_error(j, rc == GM_ENOMEM ? 503 : store_error_status(rc), "%s",
                  rc == GM_ENOMEM ? "out of memory" : err.msg);
        return;
    }
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    bool bench = kind && strcmp(kind, "bench") == 0;
    /* As gpumon history export writes it: whether the GPUs were simulated, said outright. */
    const char *prov = json_string_value(json_object_get(doc, "provider"));
    json_object_set_new(doc, "simulated", json_boolean(prov && strcmp(prov, "sim") == 0));
    if (json_object_get(doc, "gpu_stats") && !bench) {
        j->timeline = true;
        answer_with_timeline(m, j, doc, e, j->csv ? GM_TIMELINE_CSV : GM_TIMELINE_JSON_PRETTY);
        doc = NULL; /* taken */
    } else if (!j->csv) {
        /* As gpumon history export writes it: indented, 12 digits, a newline at the end. */
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        size_t len = text ? strlen(text) : 0;
        char *nl = text ? realloc(text, len + 2) : NULL;
        if (!nl)
            free(text);
        text = nl;
        if (text) {
            text[len++] = '\n';
            text[len] = '\0';
            free(j->body);
            j->body = text;
            j->len = len;
            j->status = 200;
        } else {
            job_error(j, 503, "out of memory");
        }
    } else if (!bench) {
        job_error(j, 400, "%s is a stored %s document: it exports as JSON (format=json)", j->id,
                  kind ? kind : "plain");
    } else {
        /* The points table, as `gpumon history export ID --format csv` writes it. */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        gm_store *st = f ? store_get(m, false, &err) : NULL;
        rc = !f   ? gm_error_set(&err, GM_ENOMEM, "out of memory")
             : st ? gm_store_bench_csv(st, j->id, f, &err)
                  : err.code;
        if (f && fclose(f) != 0 && rc == GM_OK)
            rc = gm_error_set(&err, GM_ENOMEM, "out of memory");
        if (rc < 0) {
            free(text);
            job_error(j, 503, "%s", err.msg);
        } else {
            free(j->body);
            j->body = text;
            j->len = len;
            j->status = 200;
        }
    }
    json_decref(doc);
    if (j->status == 200) {
        j->ctype = j->csv ? "text/csv; charset=utf-8" : "application/json";
        snprintf(j->filename, sizeof j->filename, "gpumon-%s.%s", j->id, j->csv ? "csv" : "json");
    }
}

/* One row of a listing. */
typedef struct row {
    char id[GM_SESSION_ID_LEN];
    char kind[16];
    char label[GM_SESSION_LABEL_MAX + 1];
    const char *status;
    int64_t started_ms;
    double duration_s;
    int64_t samples;
    bool persisted;
    bool simulated;
} row;

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->started_ms != y->started_ms)
        return x->started_ms < y->started_ms ? 1 : -1; /* newest first */
    return -strcmp(x->id, y->id);
}

static void row_from_entry(gm_worker *m, const entry *e, row *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", gm_session_id(e->s));
    snprintf(r->kind, sizeof r->kind, "%s", gm_session_kind(e->s));
    snprintf(r->label, sizeof r->label, "%s", gm_session_label(e->s) ? gm_session_label(e->s) : "");
    r->status = e->running ? "running" : "stopped";
    r->started_ms = gm_session_started_ms(e->s);
    r->duration_s = gm_session_duration(e->s);
    r->samples = (int64_t)gm_session_sample_count(e->s);
    r->persisted = entry_persisted(e);
    const char *prov = json_string_value(json_object_get(gm_session_attached(e->s), "provider"));
    r->simulated = prov && strcmp(prov, "sim") == 0;
}

/* The figures a listing adds to a row (gm_store_brief's keys): from memory for a session of
 * this daemon, else from the store; NULL when neither can say. */
static json_t *row_brief(gm_worker *m, gm_store *st, const char *id)
{
    entry *e = find_entry(m, id);
    if (!e) {
        json_t *b = NULL;
        return st && gm_store_brief(st, id, &b, NULL) == GM_OK ? b : NULL;
    }
    json_t *b = gm_session_brief(e->s);
    json_t *gpus = json_array();
    for (size_t k = 0; gpus && k < gm_session_gpu_count(e->s); k++) {
        const gm_session_gpu *g = gm_session_gpu_at(e->s, k);
        json_array_append_new(gpus, json_pack("{s:I, s:o}", "index", (json_int_t)g->index, "name",
                                              g->name[0] ? gm_json_str(g->name) : json_null()));
    }
    char command[1024] = "";
    if (gm_session_command(e->s))
        gm_session_command_line(gm_session_command(e->s), command, sizeof command);
    json_t *provider = json_object_get(gm_session_attached(e->s), "provider");
    if (b) {
        json_object_set_new(b, "command", command[0] ? gm_json_str(command) : json_null());
        json_object_set_new(b, "gpus", gpus ? json_incref(gpus) : json_array());
        json_object_set_new(b, "provider",
                            json_is_string(provider) ? json_incref(provider) : json_null());
    }
    json_decref(gpus);
    return b;
}

static void do_list(gm_worker *m, gm_worker_job *j)
{
    gm_store_entry *stored = NULL;
    size_t nstored = 0;
    gm_error err = {0};
    const char *store_err = NULL;
    gm_store *st = store_get(m, false, &err);
    if (st && gm_store_list(st, LIST_SCAN_MAX, &stored, &nstored, &err) < 0) {
        store_err = err.msg;
        nstored = 0;
    } else if (!st && err.code != GM_ENOENT) {
        store_err = err.msg;
    }
    size_t nmem = 0;
    for (entry *e = m->entries; e; e = e->next)
        nmem++;
    row *rows = calloc(nstored + nmem + 1, sizeof *rows);
    if (!rows) {
        free(stored);
        job_error(j, 503, "out of memory");
        return;
    }
    size_t n = 0;
    for (entry *e = m->entries; e; e = e->next)
        row_from_entry(m, e, &rows[n++]);
    for (size_t i = 0; i < nstored; i++) {
        if (find_entry(m, stored[i].id))
            continue; /* memory has the live numbers */
        row *r = &rows[n++];
        snprintf(r->id, sizeof r->id, "%s", stored[i].id);
        snprintf(r->kind, sizeof r->kind, "%s", stored[i].kind);
        snprintf(r->label, sizeof r->label, "%s", stored[i].label);
        r->status = api_status(stored[i].status);
        r->started_ms = stored[i].started_ms;
        r->duration_s = stored[i].duration_s;
        r->samples = stored[i].samples;
        r->persisted = true;
        r->simulated = stored[i].simulated;
    }
    qsort(rows, n, sizeof *rows, cmp_row);
    json_t *arr = json_array();
    for (size_t i = 0, shown = 0; arr && i < n && shown < j->limit; i++) {
        const row *r = &rows[i];
        if (j->kind[0] && strcmp(j->kind, r->kind) != 0)
            continue;
        char started[40];
        gm_json_time(r->started_ms, started, sizeof started);
        json_t *o = json_pack(
            "{s:s, s:s, s:o, s:s, s:s, s:o, s:I, s:b, s:b}", "id", r->id, "kind", r->kind, "label",
            r->label[0] ? gm_json_str(r->label) : json_null(), "status", r->status, "started_at",
            started, "monitoring_duration_seconds",
            isfinite(r->duration_s) ? json_real(r->duration_s) : json_null(), "sample_count",
            (json_int_t)r->samples, "persisted", r->persisted, "simulated", r->simulated);
        json_t *brief = row_brief(m, st, r->id);
        if (o && brief)
            json_object_update(o, brief);
        json_decref(brief);
        json_array_append_new(arr, o);
        shown++;
    }
    free(rows);
    free(stored);
    json_t *doc =
        arr ? json_pack("{s:o, s:i, s:i, s:b, s:o}", "sessions", arr, "running", (int)m->n_running,
                        "max_running", GM_WORKER_MAX_RUNNING, "stored", m->has_db, "store_error",
                        store_err ? json_string(store_err) : json_null())
            : NULL;
    job_json(j, 200, doc);
}

/* GET /api/benchmarks: what `gpumon bench` stored, newest first. Benchmarks are written by
 * other processes; the worker only reads them, from the store it already owns. */
static void do_bench_list(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    json_t *list = NULL;
    const char *store_err = NULL;
    gm_store *st = store_get(m, false, &err);
    if (st && gm_store_bench_list(st, j->limit, &list, &err) < 0)
        store_err = err.msg;
    else if (!st && err.code != GM_ENOENT)
        store_err = err.msg;
    json_t *doc =
        json_pack("{s:o, s:b, s:o}", "benchmarks", list ? list : json_array(), "stored", m->has_db,
                  "store_error", store_err ? json_string(store_err) : json_null());
    job_json(j, 200, doc);
}

/* GET /api/benchmarks/compare: the comparison `gpumon history compare --format json` prints. */
static void do_bench_compare(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    json_t *docs[GM_WORKER_COMPARE_MAX] = {0};
    gm_store *st = store_get(m, false, &err);
    size_t n = 0;
    for (; n < j->nids; n++) {
        int rc = st ? gm_store_load(st, j->ids[n], &docs[n], &err) : err.code;
        const char *kind = json_string_value(json_object_get(docs[n], "kind"));
        if (rc < 0 || !kind || strcmp(kind, "bench") != 0) {
            if (rc == GM_OK || rc == GM_ENOENT || !st)
                job_error(j, 404, "no benchmark \"%s\"", j->ids[n]);
            else
                job_error(j, store_error_status(rc), "%s", err.msg);
            n++;
            goto done;
        }
    }
    json_t *cmp = gm_bench_compare_json((const json_t *const *)docs, n, &err);
    if (cmp)
        job_json(j, 200, cmp);
    else
        job_error(j, err.code == GM_EINVAL ? 400 : 503, "%s",
                  err.msg[0] ? err.msg : "out of memory");
done:
    for (size_t i = 0; i < n; i++)
        json_decref(docs[i]);
}

/* GET /api/benchmarks/{id}: the document, as gpumon bench -o writes it. */
static void do_bench_get(gm_worker *m, gm_worker_job *j)
{
    gm_error err = {0};
    json_t *doc = NULL;
    gm_store *st = store_get(m, false, &err);
    int rc = st ? gm_store_load(st, j->id, &doc, &err) : err.code;
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (rc == GM_OK && (!kind || strcmp(kind, "bench") != 0)) {
        json_decref(doc);
        job_error(j, 404, "%s is not a benchmark (see /api/sessions/%s)", j->id, j->id);
        return;
    }
    if (rc < 0) {
        if (rc == GM_ENOENT || !st)
            job_error(j, 404, "no benchmark \"%s\"", j->id);
        else
            job_error(j, store_error_status(rc), "%s", err.msg);
        return;
    }
    if (j->html) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        const json_t *docs[1] = {doc};
        rc = f ? gm_bench_html_report(f, docs, 1, &err) : GM_ENOMEM;
        if (f && fclose(f) != 0 && rc == GM_OK)
            rc = GM_ENOMEM;
        json_decref(doc);
        if (rc < 0) {
            free(text);
            job_error(j, 503, "%s", rc == GM_ENOMEM ? "out of memory" : err.msg);
            return;
        }
        free(j->body);
        j->body = text;
        j->len = len;
        j->status = 200;
        j->ctype = "text/html; charset=utf-8";
        snprintf(j->filename, sizeof j->filename, "gpumon-%s.html", j->id);
        return;
    }
    job_json(j, 200, doc);
}

/* GET /api/images: asked of the engine here, off the loop (an engine's answer is bounded by
 * the listing's own timeout). */
static void do_images(gm_worker_job *j)
{
    gm_error err = {0};
    json_t *list = NULL;
    int rc = gm_jobs_images(j->jobs, &list, &err);
    if (rc == GM_ENOTSUP)
        job_error(j, 503, "%s", err.msg);
    else if (rc == GM_ENOMEM)
        job_error(j, 503, "out of memory");
    else if (rc < 0)
        job_error(j, 502, "%s", err.msg);
    else
        job_json(j, 200, json_pack("{s:o}", "images", list));
}

static void run_job(gm_worker *m, gm_worker_job *j)
{
    switch (j->op) {
    case GM_JOB_CREATE:
        do_create(m, j);
        break;
    case GM_JOB_STOP:
        do_stop(m, j);
        break;
    case GM_JOB_LIST:
        do_list(m, j);
        break;
    case GM_JOB_GET:
        do_get(m, j);
        break;
    case GM_JOB_DELETE:
        do_delete(m, j);
        break;
    case GM_JOB_EXPORT:
        do_export(m, j);
        break;
    case GM_JOB_BENCH_COMPARE:
        do_bench_compare(m, j);
        break;
    case GM_JOB_BENCH_LIST:
        do_bench_list(m, j);
        break;
    case GM_JOB_BENCH_GET:
        do_bench_get(m, j);
        break;
    case GM_JOB_IMAGES:
        do_images(j);
        break;
    case GM_JOB_FLEET: /* the fleet thread's, never queued here */
        job_error(j, 500, "the fleet query reached the session worker");
        break;
    }
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
                job_error(it->job, 503, "the daemon is shutting down");
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
    for (entry *e = m->entries; e; e = e->next) {
        if (e->running)
            end_entry(m, e, "daemon_stopped", true);
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
        remove_entry(m, m->entries);
    gm_store_close(m->st);
    free(m->scratch);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
