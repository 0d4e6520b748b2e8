/* record.h - the record loop: runs a command while its GPUs are sampled into a recorder at an
 * interval, with the signals a person or a scheduler sends (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
 * SIGUSR1, SIGUSR2) passed on to it, and returns when it exits, with its status. Used by
 * `gpumon record` and `gpumon run` (the daemon's sessions take their samples from the
 * sampler instead, into the same recorder). One recording at a time per process: the
 * forwarding handlers are process-wide while it runs, and restored after. */
#ifndef GM_RECORD_H
#define GM_RECORD_H

#include <signal.h>

#include "core/recorder.h"
#include "gpumon.h"

typedef struct gm_record_run_options {
    char *const *command;    /* argv to run (execvp), required */
    gm_collector *collector; /* NULL: no GPU: the command's duration only */
    gm_snapshot *snap;       /* scratch for the readings (with collector) */
    gm_recorder *rec;        /* the session and its store copy, synced after each sample */
    double interval_s;       /* > 0 */
    /* SIGXFSZ as the command gets it (the caller may ignore it for itself, so a file-size
     * limit fails a database write instead of killing it); NULL: as it is. */
    const struct sigaction *child_sigxfsz;
    /* After each sample (a progress line); may be NULL. */
    void (*tick)(void *arg, const gm_session *s);
    /* A sample that could not be taken or added (said once); may be NULL. */
    void (*warn)(void *arg, const char *msg);
    void *arg;
} gm_record_run_options;

typedef struct gm_record_outcome {
    int exit_code;  /* the command's, or 128 + signal when a signal ended it */
    int signal;     /* the signal that ended it, 0 when it exited */
    int exec_errno; /* why it could not be started (GM_ESPAWN) */
} gm_record_outcome;

/* Samples once (the state as the command starts), starts it, samples every interval_s until it
 * exits, then once more (the state as it ended); finishes the session and sets its exit. The
 * recorder's store is brought up to date after each sample (when due). GM_OK with *out, or
 * GM_ESPAWN (the command could not be started: out->exec_errno; nothing was recorded past the
 * first sample). */
int gm_record_command(const gm_record_run_options *o, gm_record_outcome *out, gm_error *err);

#endif
