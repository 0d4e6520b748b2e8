/* recorder.h - the record engine's bookkeeping: one monitoring session and its copy in a store,
 * fed one sample at a time by whoever samples (`gpumon record` and `run` through
 * gm_record_command, the daemon's worker from the sampler). After each sample the store is
 * brought up to date (one transaction per sample while it works). While it fails (a full disk)
 * the samples it lacks stay in memory: in the session's timeline, and past a sample limit in a
 * bounded buffer of their own; writes are tried again on a backoff, and the session goes on in
 * memory only (its partial copy removed) when that bound is passed. So a session stopped while
 * the disk was full is stored whole once space returns.
 *
 * The store is seen through gm_record_sink: core cannot include store/ (the layers run one way),
 * so store/ (gm_store_record_sink) or the caller provides the functions. */
#ifndef GM_RECORDER_H
#define GM_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/session.h"
#include "gpumon.h"

/* Where a session's copy goes. Each function returns GM_OK or an error with err set. */
typedef struct gm_record_sink {
    void *ctx;
    /* Writes s's row with the samples its timeline holds. GM_EEXIST: the row exists (an
     * earlier begin that was reported failed did land). */
    int (*begin)(void *ctx, const gm_session *s, gm_error *err);
    /* Writes sample seq of s, t_s seconds after its start, values[k * GM_SM__COUNT + m] for its
     * k-th GPU (NULL when s follows no GPU). GM_EEXIST: already written; GM_ENOENT: the row is
     * gone (removed behind our back). */
    int (*sample)(void *ctx, const gm_session *s, size_t seq, double t_s, const double *values,
                  gm_error *err);
    /* Writes the end of finished s. */
    int (*end)(void *ctx, gm_session *s, gm_error *err);
    /* Removes the copy of session id. GM_ENOENT: there is none. */
    int (*remove)(void *ctx, const char *id, gm_error *err);
} gm_record_sink;

/* What happened to a session's copy, for the caller to say (a log line, a warning). */
typedef enum gm_record_event {
    GM_RECORD_STORE_FAILING, /* the first failing write of a streak (detail: why) */
    GM_RECORD_STORE_RESUMED, /* caught up again after failures */
    GM_RECORD_GAVE_UP,       /* the copy is abandoned: memory only from now (detail: why) */
} gm_record_event;

/* Samples x GPUs, past its timeline, a session keeps for a store that fails (a full disk). */
#define GM_SESSION_PENDING_MAX_VALUES 86400
#define GM_RECORD_RETRY_MIN_MS        100
#define GM_RECORD_RETRY_MAX_MS        60000

typedef struct gm_recorder_options {
    const gm_record_sink *sink; /* NULL: the session lives in memory only */
    /* Samples x GPUs kept for the store past the session's timeline (its sample limit);
     * 0: GM_SESSION_PENDING_MAX_VALUES. */
    size_t pending_max_values;
    int64_t retry_first_ms; /* the first wait after a failure; 0: GM_RECORD_RETRY_MIN_MS */
    size_t chunk;           /* samples written per gm_recorder_sync at most; 0: no limit */
    void (*event)(void *arg, const gm_session *s, gm_record_event ev, const char *detail);
    void *event_arg;
} gm_recorder_options;

typedef struct gm_recorder gm_recorder;

/* Takes s (freed with the recorder). GM_OK or GM_ENOMEM. */
int gm_recorder_new(gm_session *s, const gm_recorder_options *opt, gm_recorder **out,
                    gm_error *err);
/* Frees the recorder and its session. NULL is a no-op. */
void gm_recorder_free(gm_recorder *r);

gm_session *gm_recorder_session(const gm_recorder *r);

/* Adds snap to the session (gm_session_add) and keeps the sample for the store when the
 * timeline will not. Past the pending bound the recorder gives up on the store
 * (GM_RECORD_GAVE_UP). Returns gm_session_add's result. */
int gm_recorder_add(gm_recorder *r, const gm_snapshot *snap, gm_error *err);

/* The session has ended (the caller finished it): its end is now owed to the store. */
void gm_recorder_ended(gm_recorder *r);

/* Writes what the store lacks (at most `chunk` samples): the row, the samples, the end of an
 * ended session; for a given-up session, removes its partial copy. Only when due (not during
 * a backoff) unless force. GM_OK (maybe with more left: gm_recorder_behind), or the store's
 * error with err set (a retry is then scheduled). */
int gm_recorder_sync(gm_recorder *r, int64_t now_ms, bool force, gm_error *err);

/* Stops storing: memory only from now; the partial copy is removed by the next sync. */
void gm_recorder_give_up(gm_recorder *r, const char *why);

/* The store lacks something: samples, the end, or (given up) a partial copy to remove. */
bool gm_recorder_behind(const gm_recorder *r);
/* The store holds the whole session as it is now. */
bool gm_recorder_persisted(const gm_recorder *r);
/* A row was written (and not removed since). */
bool gm_recorder_begun(const gm_recorder *r);
bool gm_recorder_given_up(const gm_recorder *r);
/* Samples the store holds: 0 .. n - 1. */
size_t gm_recorder_stored(const gm_recorder *r);
/* The latest write failed; gm_recorder_due_ms says when the next try is. */
bool gm_recorder_failing(const gm_recorder *r);
/* Milliseconds from now_ms until a sync has work (0: now), -1 when none is owed. */
int64_t gm_recorder_due_ms(const gm_recorder *r, int64_t now_ms);

#endif
