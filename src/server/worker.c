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

#include "base/json.h"
#include "server/log.h"
#include "server/sampler.h"
#include "store/store.h"
#include "base/clock.h"

/* Rows of the store read for one listing: bounds the worker's memory whatever the database
 * holds (gpumon record and run write there too). */
#define LIST_SCAN_MAX 10000

/* While the store fails (a full disk), a session's unwritten samples are retried with a backoff
 * from the poll interval (at least this) doubling up to a minute, at samples, stops and on a
 * timer, so a session stopped meanwhile is still written once the store works again. */
#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 60000
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
    gm_session *s;
    bool running;
    bool stored;         /* its row is in the store */
    bool store_failed;   /* given up (samples past the pending bound): memory only; a partial
                          * row still stored is removed */
    size_t stored_count; /* samples the store holds: 0 .. stored_count - 1 */
    bool end_stored;     /* its end is written (once stopped) */
    /* Samples past the timeline the store has not taken yet: seq pend_first .. pend_first +
     * pend_n - 1, each (1 + gpus * GM_SM__COUNT) doubles: t, then the values. The timeline
     * holds the earlier ones. */
    double *pend;
    size_t pend_first, pend_n, pend_cap;
    bool failing;          /* the latest store write failed */
    int64_t retry_mono_ms; /* when failing: the next try (CLOCK_MONOTONIC) */
    int64_t backoff_ms;
    unsigned every; /* take a sample at most every `every` poll intervals */
    int64_t created_mono_ms;
    int64_t last_added_mono_ms; /* 0: none yet */
    uint64_t dropped;
} entry;

struct gm_worker {
    gm_worker_options opt;
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
    char store_error[512]; /* the latest failure to open the store, "" when none */
    gm_snapshot *scratch;  /* GPU part of the sample being added */
};

/* ---- small helpers ------------------------------------------------------------------------ */

/* A growable text buffer; `failed` sticks after an allocation failure. */
typedef struct tbuf {
    char *p;
    size_t len, cap;
    bool failed;
} tbuf;

static void tb_put(tbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void tb_str(tbuf *b, const char *s)
{
    tb_put(b, s, strlen(s));
}

/* A number as gm_json_dump writes a real (12 significant digits, ".0" on integral values), so
 * the timeline reads exactly like gm_session_timeline_json's; null when absent. */
static void tb_real(tbuf *b, double v)
{
    if (!isfinite(v)) {
        tb_str(b, "null");
        return;
    }
    char num[40];
    int n = snprintf(num, sizeof num, "%.12g", v);
    if (n > 0 && !strpbrk(num, ".eE"))
        snprintf(num + n, sizeof num - (size_t)n, ".0");
    tb_str(b, num);
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

/* ---- the request body --------------------------------------------------------------------- */

static bool has_gpu(const gm_snapshot *snap, unsigned idx)
{
    return snap && gm_snapshot_gpu(snap, idx) != NULL;
}

static void gpu_list_text(const gm_snapshot *snap, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned i = 0; snap && i < snap->gpu_count && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%u", i ? ", " : "", snap->gpus[i].index);
}

static int cmp_uint(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

int gm_session_request_parse(const char *body, size_t len, const gm_snapshot *snap,
                             unsigned poll_ms, gm_session_request *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *doc = NULL;
    size_t blank = 0;
    /* body[blank] first: strchr finds a NUL too, and a body of NULs is not blank. */
    while (blank < len && body[blank] && strchr(" \t\r\n", body[blank]))
        blank++;
    if (blank < len) {
        json_error_t jerr;
        doc = gm_json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!doc)
            return gm_error_set(err, GM_EINVAL,
                                "request body is not valid JSON: %s (line %d, column %d)",
                                jerr.text, jerr.line, jerr.column);
        if (!json_is_object(doc)) {
            json_decref(doc);
            return gm_error_set(err, GM_EINVAL,
                                "request body must be a JSON object such as {\"gpus\": [0], "
                                "\"interval\": 1, \"label\": \"name\"}");
        }
    }
    int rc = GM_OK;
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "gpus") != 0 && strcmp(key, "interval") != 0 && strcmp(key, "label") != 0) {
            rc = gm_error_set(err, GM_EINVAL,
                              "unknown field \"%.64s\" (accepted: gpus, interval, label)", key);
            goto done;
        }
    }

    char known[256];
    gpu_list_text(snap, known, sizeof known);
    json_t *gpus = json_object_get(doc, "gpus");
    if (gpus && !json_is_null(gpus)) {
        if (!json_is_array(gpus) || json_array_size(gpus) == 0 ||
            json_array_size(gpus) > GM_MAX_GPUS) {
            rc = gm_error_set(err, GM_EINVAL,
                              "\"gpus\" must be an array of 1 to %d GPU indices, e.g. [0, 1]",
                              GM_MAX_GPUS);
            goto done;
        }
        size_t i;
        json_t *g;
        json_array_foreach(gpus, i, g)
        {
            if (!json_is_integer(g) || json_integer_value(g) < 0 ||
                json_integer_value(g) > INT_MAX) {
                rc = gm_error_set(err, GM_EINVAL,
                                  "\"gpus\"[%zu] is not a GPU index (a non-negative integer)", i);
                goto done;
            }
            unsigned idx = (unsigned)json_integer_value(g);
            if (!has_gpu(snap, idx)) {
                rc = gm_error_set(err, GM_EINVAL, "no GPU with index %u (GPUs: %s)", idx,
                                  known[0] ? known : "none");
                goto done;
            }
            out->gpus[out->ngpus++] = idx;
        }
        qsort(out->gpus, out->ngpus, sizeof *out->gpus, cmp_uint);
        size_t w = 0;
        for (size_t k = 0; k < out->ngpus; k++)
            if (w == 0 || out->gpus[w - 1] != out->gpus[k])
                out->gpus[w++] = out->gpus[k];
        out->ngpus = w;
    } else {
        if (!snap || snap->gpu_count == 0) {
            rc = gm_error_set(err, GM_EINVAL, "no GPU is visible: there is nothing to monitor");
            goto done;
        }
        for (unsigned i = 0; i < snap->gpu_count; i++)
            out->gpus[out->ngpus++] = snap->gpus[i].index;
        qsort(out->gpus, out->ngpus, sizeof *out->gpus, cmp_uint);
    }

    double poll_s = poll_ms / 1000.0;
    out->every = 1;
    json_t *iv = json_object_get(doc, "interval");
    if (iv && !json_is_null(iv)) {
        double s = json_is_number(iv) ? json_number_value(iv) : NAN;
        /* A thousandth of slack: 0.1 must pass a 100 ms poll despite binary fractions. */
        if (!isfinite(s) || s < poll_s * 0.999 || s > GM_SESSION_INTERVAL_MAX) {
            rc = gm_error_set(err, GM_EINVAL,
                              "\"interval\" must be a number of seconds from %g (the poll "
                              "interval: sessions take the daemon's samples) to %g",
                              poll_s, GM_SESSION_INTERVAL_MAX);
            goto done;
        }
        double k = round(s / poll_s);
        out->every = k < 1 ? 1 : (unsigned)k;
    }
    out->interval_s = out->every * poll_s;

    json_t *label = json_object_get(doc, "label");
    if (label && !json_is_null(label)) {
        const char *t = json_string_value(label);
        size_t tl = t ? json_string_length(label) : 0;
        bool ok = t && tl <= GM_SESSION_LABEL_MAX && strlen(t) == tl;
        for (size_t k = 0; ok && k < tl; k++)
            if ((unsigned char)t[k] < 0x20 || t[k] == 0x7f)
                ok = false;
        if (!ok) {
            rc = gm_error_set(err, GM_EINVAL,
                              "\"label\" must be a string of at most %d bytes without control "
                              "characters",
                              GM_SESSION_LABEL_MAX);
            goto done;
        }
        memcpy(out->label, t, tl);
        out->label[tl] = '\0';
        out->has_label = true;
    }
done:
    json_decref(doc);
    return rc;
}

/* ---- jobs and the queue ------------------------------------------------------------------- */

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

/* Whether the store lags behind e: samples or the end not written, or a partial copy of a
 * given-up session still to remove. A session is begun in the store at its first sample (or
 * its stop), so one with no sample yet is not behind. */
static bool store_behind(const gm_worker *m, const entry *e)
{
    if (!m->has_db)
        return false;
    if (e->store_failed)
        return e->stored;
    return e->stored_count < gm_session_sample_count(e->s) || (!e->running && !e->end_stored);
}

static bool entry_persisted(const gm_worker *m, const entry *e)
{
    return m->has_db && e->stored && !e->store_failed && !store_behind(m, e);
}

static size_t pend_stride(const entry *e)
{
    return 1 + gm_session_gpu_count(e->s) * GM_SM__COUNT;
}

/* Sample seq of e as the store takes it, from the timeline, the pending samples or the newest
 * one. False when e no longer holds it. */
static bool sample_at(const entry *e, size_t seq, double *t, const double **v)
{
    if (seq < gm_session_timeline_count(e->s))
        return gm_session_sample(e->s, seq, t, v) == GM_OK;
    if (seq >= e->pend_first && seq - e->pend_first < e->pend_n) {
        const double *p = e->pend + (seq - e->pend_first) * pend_stride(e);
        *t = p[0];
        *v = gm_session_gpu_count(e->s) ? p + 1 : NULL;
        return true;
    }
    return seq + 1 == gm_session_sample_count(e->s) && gm_session_last(e->s, t, v) == GM_OK;
}

/* Keeps the newest sample of e until the store has it, when the timeline does not (past the
 * sample limit). False when that would pass the pending bound. */
static bool pend_push(gm_worker *m, entry *e)
{
    size_t seq = gm_session_sample_count(e->s) - 1;
    if (seq < gm_session_timeline_count(e->s))
        return true;
    size_t ng = gm_session_gpu_count(e->s), stride = pend_stride(e);
    size_t max = m->opt.pending_max_values / (ng ? ng : 1);
    if (e->pend_n >= max)
        return false;
    if (e->pend_n == e->pend_cap) {
        size_t cap = e->pend_cap ? e->pend_cap * 2 : 16;
        if (cap > max)
            cap = max;
        double *np = realloc(e->pend, cap * stride * sizeof *np);
        if (!np)
            return false;
        e->pend = np;
        e->pend_cap = cap;
    }
    double t;
    const double *v;
    if (gm_session_last(e->s, &t, &v) < 0)
        return false;
    if (e->pend_n == 0)
        e->pend_first = seq;
    double *p = e->pend + e->pend_n * stride;
    p[0] = t;
    if (ng)
        memcpy(p + 1, v, (stride - 1) * sizeof *p);
    e->pend_n++;
    return true;
}

/* Forgets the pending samples the store now holds. */
static void pend_drop_stored(entry *e)
{
    if (!e->pend_n || e->stored_count <= e->pend_first)
        return;
    size_t done = e->stored_count - e->pend_first;
    if (done > e->pend_n)
        done = e->pend_n;
    size_t stride = pend_stride(e);
    memmove(e->pend, e->pend + done * stride, (e->pend_n - done) * stride * sizeof *e->pend);
    e->pend_n -= done;
    e->pend_first += done;
}

/* Stops storing e: it goes on in memory; a partial row in the store is removed when the store
 * lets it (so the store never shows a session cut short as if it had been interrupted). */
static void give_up_store(gm_worker *m, entry *e, const char *why)
{
    e->store_failed = true;
    free(e->pend);
    e->pend = NULL;
    e->pend_n = e->pend_cap = 0;
    e->failing = false;
    e->backoff_ms = 0;
    log_store_error("session no longer stored; it goes on in memory", gm_session_id(e->s), why);
}

/* Brings the store up to date with e, at most SYNC_CHUNK samples at a time: begins it (with the
 * samples of its timeline), writes the samples it lacks, then the end of a stopped session; for
 * a given-up session, removes its partial row. GM_OK (maybe with more to write) or the store's
 * error, with err set. */
static int sync_entry(gm_worker *m, entry *e, gm_error *err)
{
    gm_store *st = store_get(m, true, err);
    if (!st)
        return err->code ? err->code : GM_EIO;
    const char *id = gm_session_id(e->s);
    if (e->store_failed) {
        int rc = gm_store_session_delete(st, id, err);
        if (rc < 0 && rc != GM_ENOENT)
            return rc;
        e->stored = false;
        return GM_OK;
    }
    size_t total = gm_session_sample_count(e->s);
    if (!e->stored) {
        int rc = gm_store_session_begin(st, e->s, err);
        if (rc < 0 && rc != GM_EEXIST)
            return rc;
        e->stored = true;
        /* EEXIST: an earlier begin did land; its samples are then found stored one by one. */
        e->stored_count = rc == GM_OK ? gm_session_timeline_count(e->s) : 0;
    }
    for (size_t n = 0; e->stored_count < total && n < SYNC_CHUNK; n++) {
        double t;
        const double *v;
        if (!sample_at(e, e->stored_count, &t, &v)) {
            give_up_store(m, e, "a sample the store lacks is no longer held");
            return GM_OK;
        }
        int rc = gm_store_session_sample_values(st, e->s, e->stored_count, t, v, err);
        if (rc == GM_ENOENT) { /* its row was removed behind our back */
            e->stored = false;
            give_up_store(m, e, err->msg);
            return GM_OK;
        }
        if (rc < 0 && rc != GM_EEXIST) {
            pend_drop_stored(e);
            return rc;
        }
        e->stored_count++;
    }
    pend_drop_stored(e);
    if (e->stored_count == total && !e->running && !e->end_stored) {
        int rc = gm_store_session_end(st, e->s, err);
        if (rc < 0)
            return rc;
        e->end_stored = true;
    }
    return GM_OK;
}

/* One try at sync_entry, with the backoff and the log lines around it. */
static void try_sync(gm_worker *m, entry *e)
{
    gm_error err = {0};
    int rc = sync_entry(m, e, &err);
    int64_t now = gm_clock_mono_ms();
    if (rc == GM_OK) {
        if (e->failing && !store_behind(m, e))
            gm_log(GM_LOG_INFO, "session store writes resumed", "session=%s samples=%zu",
                   gm_session_id(e->s), e->stored_count);
        e->failing = false;
        e->backoff_ms = 0;
        return;
    }
    if (!e->failing)
        log_store_error(e->store_failed ? "cannot remove a partial session from the store"
                                        : "session store write failed; its samples are kept and "
                                          "written when the store works again",
                        gm_session_id(e->s), err.msg);
    int64_t first = m->opt.poll_ms > RETRY_MIN_MS ? m->opt.poll_ms : RETRY_MIN_MS;
    e->backoff_ms = !e->failing                        ? first
                    : e->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS
                                                       : e->backoff_ms * 2;
    e->failing = true;
    e->retry_mono_ms = now + e->backoff_ms;
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
    gm_session_free(e->s);
    free(e->pend);
    free(e);
}

/* The API document of an in-memory session: gm_session_to_json plus status (running/stopped),
 * persisted and samples_dropped. A persisted session's timeline is served from the store,
 * which has every sample, so it is not truncated even past the sample limit. New reference,
 * NULL when out of memory. */
static json_t *entry_doc(gm_worker *m, entry *e)
{
    json_t *d = gm_session_to_json(e->s, false);
    if (!d)
        return NULL;
    json_object_set_new(d, "status", json_string(e->running ? "running" : "stopped"));
    json_object_set_new(d, "persisted", json_boolean(entry_persisted(m, e)));
    if (entry_persisted(m, e))
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
    if (write_end && store_behind(m, e))
        try_sync(m, e);
    char q[200];
    gm_log(GM_LOG_INFO, "session stopped", "session=%s reason=%s samples=%zu persisted=%s",
           gm_session_id(e->s), gm_log_quote(reason, q, sizeof q), gm_session_sample_count(e->s),
           entry_persisted(m, e) ? "true" : "false");
}

/* After a stop: the store has a persisted session, so memory lets it go; otherwise it is kept
 * (the newest GM_WORKER_KEEP_STOPPED of them). */
static void settle_stopped(gm_worker *m, entry *e)
{
    if (entry_persisted(m, e)) {
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
        if (store_behind(m, oldest))
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
            snap->gpus[i].valid &= ~(UINT64_C(1) << GM_M_ENERGY_MJ);
    int64_t poll = m->opt.poll_ms;
    for (entry *e = m->entries, *next; e; e = next) {
        next = e->next;
        if (!e->running)
            continue;
        e->dropped += it->dropped_before;
        /* A sample taken before the request arrived is not part of the session. */
        if (it->mono_ms < e->created_mono_ms)
            continue;
        /* Every `every`-th sample, by time with half a period of slack for jitter, so a
         * failed sampling pass shifts the schedule instead of doubling up. */
        if (e->last_added_mono_ms &&
            it->mono_ms - e->last_added_mono_ms < e->every * poll - poll / 2)
            continue;
        gm_error err = {0};
        if (gm_session_add(e->s, snap, &err) < 0) {
            log_store_error("cannot add a sample to a session", gm_session_id(e->s), err.msg);
            continue;
        }
        e->last_added_mono_ms = it->mono_ms;
        if (m->has_db && !e->store_failed && !pend_push(m, e))
            give_up_store(m, e, "the samples waiting for the store passed their memory bound");
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
        if (!store_behind(m, e) || (e->failing && now < e->retry_mono_ms))
            continue;
        try_sync(m, e);
        if (!e->running && entry_persisted(m, e))
            remove_entry(m, e);
    }
}

/* Milliseconds until sync_due has work (0: now), -1 when none is due. */
static int64_t sync_wait_ms(const gm_worker *m)
{
    int64_t best = -1, now = gm_clock_mono_ms();
    for (const entry *e = m->entries; e; e = e->next) {
        if (!store_behind(m, e))
            continue;
        int64_t wait = e->failing && e->retry_mono_ms > now ? e->retry_mono_ms - now : 0;
        if (best < 0 || wait < best)
            best = wait;
    }
    return best;
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
    gm_log(GM_LOG_INFO, "session started", "session=%s gpus=%zu interval_s=%g label=%s",
           gm_session_id(e->s), gm_session_gpu_count(e->s), gm_session_interval(e->s),
           gm_log_quote(gm_session_label(e->s), q, sizeof q));
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
    int rc = gm_store_load(st, id, false, doc, err);
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
        bool in_store = e->stored;
        if (e->running)
            end_entry(m, e, "deleted", false);
        remove_entry(m, e);
        int rc = in_store && m->has_db ? store_delete(m, j->id, &err) : GM_OK;
        if (rc < 0 && rc != GM_ENOENT)
            log_store_error("cannot delete a stored session", j->id, err.msg);
        gm_log(GM_LOG_INFO, "session deleted", "session=%s", j->id);
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
    gm_log(GM_LOG_INFO, "session deleted", "session=%s", j->id);
    j->status = 204;
}

/* Appends the timeline of an in-memory session, in gm_session_timeline_json's shape. */
static void timeline_from_session(const gm_session *s, tbuf *b)
{
    size_t ng = gm_session_gpu_count(s);
    char key[32];
    tb_str(b, "[");
    for (size_t i = 0; i < gm_session_timeline_count(s) && !b->failed; i++) {
        double t;
        const double *v;
        if (gm_session_sample(s, i, &t, &v) < 0)
            break;
        tb_str(b, i ? ",{\"t\":" : "{\"t\":");
        tb_real(b, t);
        tb_str(b, ",\"gpus\":{");
        for (size_t k = 0; k < ng; k++) {
            snprintf(key, sizeof key, "%s\"%u\":{", k ? "," : "", gm_session_gpu_at(s, k)->index);
            tb_str(b, key);
            for (int mtr = 0; mtr < GM_SM__COUNT; mtr++) {
                tb_str(b, mtr ? ",\"" : "\"");
                tb_str(b, gm_session_metric_name(mtr));
                tb_str(b, "\":");
                tb_real(b, v ? v[k * GM_SM__COUNT + mtr] : NAN);
            }
            tb_str(b, "}");
        }
        tb_str(b, "}}");
    }
    tb_str(b, "]");
}

/* Appends the timeline of a stored session, from the store's CSV export (one row per sample
 * per GPU, in time order), which costs memory in proportion to the text rather than the
 * per-value objects a replay into JSON would need. */
static int timeline_from_store(gm_worker *m, const char *id, tbuf *b, gm_error *err)
{
    char *csv = NULL;
    size_t csv_len = 0;
    FILE *f = open_memstream(&csv, &csv_len);
    if (!f)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = gm_store_export_csv(m->st, id, f, err);
    if (fclose(f) != 0 && rc == GM_OK)
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
    if (rc < 0) {
        free(csv);
        return rc;
    }
    tb_str(b, "[");
    char last_t[64] = "";
    bool any = false;
    char *save = NULL;
    /* Line 1 is the header. */
    for (char *line = strtok_r(csv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "t,", 2) == 0)
            continue;
        char *fields[2 + GM_SM__COUNT];
        size_t nf = 0;
        for (char *p = line; nf < 2 + GM_SM__COUNT; nf++) {
            fields[nf] = p;
            char *comma = strchr(p, ',');
            if (!comma) {
                nf++;
                break;
            }
            *comma = '\0';
            p = comma + 1;
        }
        if (nf != 2 + GM_SM__COUNT)
            continue;
        if (strcmp(fields[0], last_t) != 0) {
            if (any)
                tb_str(b, "}},");
            snprintf(last_t, sizeof last_t, "%s", fields[0]);
            tb_str(b, "{\"t\":");
            tb_real(b, strtod(fields[0], NULL));
            tb_str(b, ",\"gpus\":{");
            any = true;
        } else {
            tb_str(b, ",");
        }
        tb_str(b, "\"");
        tb_str(b, fields[1]);
        tb_str(b, "\":{");
        for (int mtr = 0; mtr < GM_SM__COUNT; mtr++) {
            tb_str(b, mtr ? ",\"" : "\"");
            tb_str(b, gm_session_metric_name(mtr));
            tb_str(b, "\":");
            tb_real(b, fields[2 + mtr][0] ? strtod(fields[2 + mtr], NULL) : NAN);
        }
        tb_str(b, "}");
    }
    if (any)
        tb_str(b, "}}");
    tb_str(b, "]");
    free(csv);
    return GM_OK;
}

/* Answers j with doc (stolen) and, when asked, its timeline appended: from memory while the
 * session holds all of it (or the store does not have it), else from the store. */
static void answer_with_timeline(gm_worker *m, gm_worker_job *j, json_t *doc, entry *e)
{
    if (e && entry_persisted(m, e) &&
        gm_session_timeline_count(e->s) < gm_session_sample_count(e->s))
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
    size_t len = 0;
    char *text = gm_json_dump(doc, &len);
    json_decref(doc);
    tbuf b = {0};
    if (text && len > 1) {
        tb_put(&b, text, len - 1); /* without the closing brace */
        tb_str(&b, ",\"timeline\":");
    } else {
        b.failed = true;
    }
    free(text);
    gm_error err = {0};
    if (e) {
        timeline_from_session(e->s, &b);
    } else if (!b.failed && timeline_from_store(m, j->id, &b, &err) < 0) {
        free(b.p);
        job_error(j, store_error_status(err.code), "%s", err.msg);
        return;
    }
    tb_str(&b, "}");
    if (b.failed) {
        free(b.p);
        job_error(j, 503, "out of memory rendering the timeline");
        return;
    }
    free(j->body);
    j->body = b.p;
    j->len = b.len;
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
        answer_with_timeline(m, j, doc, e);
        return;
    }
    json_t *doc;
    gm_error err = {0};
    int rc = load_stored(m, j->id, &doc, &err);
    if (rc < 0) {
        job_error(j, store_error_status(rc), "%s", err.msg);
        return;
    }
    answer_with_timeline(m, j, doc, NULL);
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
    r->persisted = entry_persisted(m, e);
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
    }
    qsort(rows, n, sizeof *rows, cmp_row);
    json_t *arr = json_array();
    for (size_t i = 0, shown = 0; arr && i < n && shown < j->limit; i++) {
        const row *r = &rows[i];
        if (j->kind[0] && strcmp(j->kind, r->kind) != 0)
            continue;
        char started[40];
        gm_json_time(r->started_ms, started, sizeof started);
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:I, s:b}", "id", r->id, "kind", r->kind,
                           "label", r->label[0] ? json_string(r->label) : json_null(), "status",
                           r->status, "started_at", started, "monitoring_duration_seconds",
                           isfinite(r->duration_s) ? json_real(r->duration_s) : json_null(),
                           "sample_count", (json_int_t)r->samples, "persisted", r->persisted));
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
        int64_t wait_ms = sync_wait_ms(m);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)(wait_ms / 1000);
        until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&m->mu);
        /* Asleep until an item comes, or a session's store retry is due. */
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
            sync_due(m); /* a retry is due */
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
        if (!stopping)
            sync_due(m);
    }
    /* The daemon stops: so do its sessions, with their end written; a last try for those the
     * store still lacks, whatever their backoff. */
    for (entry *e = m->entries; e; e = e->next) {
        if (e->running)
            end_entry(m, e, "daemon_stopped", true);
        for (int chunk = 0; store_behind(m, e) && chunk < 1000; chunk++) {
            gm_error err = {0};
            if (sync_entry(m, e, &err) < 0) {
                char q[600];
                gm_log(GM_LOG_WARN, "session not stored whole at exit",
                       "session=%s stored_samples=%zu samples=%zu error=%s", gm_session_id(e->s),
                       e->stored_count, gm_session_sample_count(e->s),
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
