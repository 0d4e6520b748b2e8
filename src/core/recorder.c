/* recorder.c - a session and what its store copy lacks: the row, samples by sequence number
 * (from the timeline, a pending buffer past it, or the newest sample), the end; retries on a
 * doubling backoff. */
#include "core/recorder.h"
#include "base/error.h"

#include <stdlib.h>
#include <string.h>

struct gm_recorder {
    gm_recorder_options opt;
    gm_session *s;
    bool ended;      /* the session finished: its end is owed */
    bool begun;      /* its row is in the store */
    bool given_up;   /* memory only; a partial row still begun is removed */
    size_t stored;   /* samples the store holds: 0 .. stored - 1 */
    bool end_stored; /* its end is written */
    /* Samples past the timeline the store has not taken yet: seq pend_first .. pend_first +
     * pend_n - 1, each (1 + gpus * GM_SM__COUNT) doubles: t, then the values. */
    double *pend;
    size_t pend_first, pend_n, pend_cap;
    bool failing;
    int64_t retry_ms; /* when failing: the next try (monotonic) */
    int64_t backoff_ms;
};

static void say(gm_recorder *r, gm_record_event ev, const char *detail)
{
    if (r->opt.event)
        r->opt.event(r->opt.event_arg, r->s, ev, detail);
}

int gm_recorder_new(gm_session *s, const gm_recorder_options *opt, gm_recorder **out, gm_error *err)
{
    *out = NULL;
    gm_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    if (opt)
        r->opt = *opt;
    if (!r->opt.pending_max_values)
        r->opt.pending_max_values = GM_SESSION_PENDING_MAX_VALUES;
    if (r->opt.retry_first_ms <= 0)
        r->opt.retry_first_ms = GM_RECORD_RETRY_MIN_MS;
    r->s = s;
    *out = r;
    return GM_OK;
}

void gm_recorder_free(gm_recorder *r)
{
    if (!r)
        return;
    gm_session_free(r->s);
    free(r->pend);
    free(r);
}

gm_session *gm_recorder_session(const gm_recorder *r)
{
    return r->s;
}

static size_t stride(const gm_recorder *r)
{
    return 1 + gm_session_gpu_count(r->s) * GM_SM__COUNT;
}

static void drop_pending(gm_recorder *r)
{
    free(r->pend);
    r->pend = NULL;
    r->pend_n = r->pend_cap = 0;
}

void gm_recorder_give_up(gm_recorder *r, const char *why)
{
    if (r->given_up || !r->opt.sink)
        return;
    r->given_up = true;
    r->failing = false;
    r->backoff_ms = 0;
    drop_pending(r);
    say(r, GM_RECORD_GAVE_UP, why);
}

/* Keeps the newest sample for the store when the timeline did not take it (past the sample
 * limit). False when that would pass the pending bound. */
static bool pend_push(gm_recorder *r)
{
    size_t seq = gm_session_sample_count(r->s) - 1;
    if (seq < gm_session_timeline_count(r->s) || seq < r->stored)
        return true;
    size_t ng = gm_session_gpu_count(r->s), st = stride(r);
    size_t max = r->opt.pending_max_values / (ng ? ng : 1);
    if (r->pend_n >= max)
        return false;
    if (r->pend_n == r->pend_cap) {
        size_t cap = r->pend_cap ? r->pend_cap * 2 : 16;
        if (cap > max)
            cap = max;
        double *np = realloc(r->pend, cap * st * sizeof *np);
        if (!np)
            return false;
        r->pend = np;
        r->pend_cap = cap;
    }
    double t;
    const double *v;
    if (gm_session_last(r->s, &t, &v) < 0)
        return false;
    if (r->pend_n == 0)
        r->pend_first = seq;
    double *p = r->pend + r->pend_n * st;
    p[0] = t;
    if (ng)
        memcpy(p + 1, v, (st - 1) * sizeof *p);
    r->pend_n++;
    return true;
}

int gm_recorder_add(gm_recorder *r, const gm_snapshot *snap, gm_error *err)
{
    int rc = gm_session_add(r->s, snap, err);
    if (rc == GM_OK && r->opt.sink && !r->given_up && !pend_push(r))
        gm_recorder_give_up(r, "the samples waiting for the store passed their memory bound");
    return rc;
}

void gm_recorder_ended(gm_recorder *r)
{
    r->ended = true;
}

bool gm_recorder_behind(const gm_recorder *r)
{
    if (!r->opt.sink)
        return false;
    if (r->given_up)
        return r->begun;
    return r->stored < gm_session_sample_count(r->s) || (r->ended && !r->end_stored);
}

bool gm_recorder_persisted(const gm_recorder *r)
{
    return r->opt.sink && r->begun && !r->given_up && !gm_recorder_behind(r);
}

bool gm_recorder_begun(const gm_recorder *r)
{
    return r->begun;
}

bool gm_recorder_given_up(const gm_recorder *r)
{
    return r->given_up;
}

size_t gm_recorder_stored(const gm_recorder *r)
{
    return r->stored;
}

bool gm_recorder_failing(const gm_recorder *r)
{
    return r->failing;
}

int64_t gm_recorder_due_ms(const gm_recorder *r, int64_t now_ms)
{
    if (!gm_recorder_behind(r))
        return -1;
    return r->failing && r->retry_ms > now_ms ? r->retry_ms - now_ms : 0;
}

/* Sample seq as the store takes it, from the timeline, the pending samples or the newest one.
 * False when it is no longer held. */
static bool sample_at(const gm_recorder *r, size_t seq, double *t, const double **v)
{
    if (seq < gm_session_timeline_count(r->s))
        return gm_session_sample(r->s, seq, t, v) == GM_OK;
    if (seq >= r->pend_first && seq - r->pend_first < r->pend_n) {
        const double *p = r->pend + (seq - r->pend_first) * stride(r);
        *t = p[0];
        *v = gm_session_gpu_count(r->s) ? p + 1 : NULL;
        return true;
    }
    return seq + 1 == gm_session_sample_count(r->s) && gm_session_last(r->s, t, v) == GM_OK;
}

/* Forgets the pending samples the store now holds. */
static void pend_drop_stored(gm_recorder *r)
{
    if (!r->pend_n || r->stored <= r->pend_first)
        return;
    size_t done = r->stored - r->pend_first;
    if (done > r->pend_n)
        done = r->pend_n;
    size_t st = stride(r);
    memmove(r->pend, r->pend + done * st, (r->pend_n - done) * st * sizeof *r->pend);
    r->pend_n -= done;
    r->pend_first += done;
}

static int write(gm_recorder *r, gm_error *err)
{
    const gm_record_sink *k = r->opt.sink;
    const char *id = gm_session_id(r->s);
    if (r->given_up) {
        if (r->begun) {
            int rc = k->remove(k->ctx, id, err);
            if (rc < 0 && rc != GM_ENOENT)
                return rc;
            r->begun = false;
        }
        return GM_OK;
    }
    size_t total = gm_session_sample_count(r->s);
    if (!r->begun) {
        int rc = k->begin(k->ctx, r->s, err);
        if (rc < 0 && rc != GM_EEXIST)
            return rc;
        r->begun = true;
        /* EEXIST: an earlier begin did land; its samples are then found stored one by one. */
        r->stored = rc == GM_OK ? gm_session_timeline_count(r->s) : 0;
    }
    for (size_t n = 0; r->stored < total && (!r->opt.chunk || n < r->opt.chunk); n++) {
        double t;
        const double *v;
        if (!sample_at(r, r->stored, &t, &v)) {
            gm_recorder_give_up(r, "a sample the store lacks is no longer held");
            return GM_OK;
        }
        int rc = k->sample(k->ctx, r->s, r->stored, t, v, err);
        if (rc == GM_ENOENT) { /* its row was removed behind our back */
            r->begun = false;
            gm_recorder_give_up(r, err ? err->msg : "its row was removed");
            return GM_OK;
        }
        if (rc < 0 && rc != GM_EEXIST) {
            pend_drop_stored(r);
            return rc;
        }
        r->stored++;
    }
    pend_drop_stored(r);
    if (r->stored == total && r->ended && !r->end_stored) {
        int rc = k->end(k->ctx, r->s, err);
        if (rc < 0)
            return rc;
        r->end_stored = true;
    }
    return GM_OK;
}

int gm_recorder_sync(gm_recorder *r, int64_t now_ms, bool force, gm_error *err)
{
    if (!gm_recorder_behind(r) || (!force && r->failing && now_ms < r->retry_ms))
        return GM_OK;
    gm_error local = {0};
    if (!err)
        err = &local;
    int rc = write(r, err);
    if (rc == GM_OK) {
        if (r->failing && !gm_recorder_behind(r))
            say(r, GM_RECORD_STORE_RESUMED, NULL);
        r->failing = false;
        r->backoff_ms = 0;
        return GM_OK;
    }
    if (!r->failing)
        say(r, GM_RECORD_STORE_FAILING, err->msg);
    r->backoff_ms = !r->failing                                  ? r->opt.retry_first_ms
                    : r->backoff_ms * 2 > GM_RECORD_RETRY_MAX_MS ? GM_RECORD_RETRY_MAX_MS
                                                                 : r->backoff_ms * 2;
    r->failing = true;
    r->retry_ms = now_ms + r->backoff_ms;
    return rc;
}
