/* spawn.h - run a helper program with a deadline and capture what it prints. */
#ifndef GM_SPAWN_H
#define GM_SPAWN_H

#include "gpumon.h"

#include <stdbool.h>
#include <stddef.h>

/* Default cap on captured output per stream. */
#define GM_SPAWN_DEFAULT_MAX_OUTPUT ((size_t)4 << 20)

/* What a finished (or abandoned) child left behind. Buffers are NUL-terminated and owned by the
 * result: release them with gm_spawn_result_free(). */
typedef struct gm_spawn_result {
    char *out; /* stdout; "" when nothing was printed (NULL only after GM_EINVAL / GM_ENOMEM) */
    size_t out_len;
    char *err; /* stderr, same rules */
    size_t err_len;
    bool exited;   /* the child ran to exit(); exit_code is meaningful */
    int exit_code; /* valid when exited */
    bool signaled; /* the child died of a signal (includes our SIGKILL on timeout) */
    int signal;    /* valid when signaled */
} gm_spawn_result;

/* Runs argv[0] (searched on PATH when it has no '/') with arguments argv (NULL-terminated), stdin
 * from /dev/null, and captures stdout and stderr, each up to max_output bytes (0: the default).
 * The child runs in its own process group with default signal dispositions and an empty signal
 * mask; it inherits no descriptor of ours. Safe to call from any thread of a multi-threaded program
 * (posix_spawn, no fork in this process).
 *
 * Returns GM_OK when the child exited with status 0. Otherwise:
 *   GM_ESPAWN     the program could not be started ("nvidia-smi: not found on PATH")
 *   GM_ETIMEDOUT  timeout_ms (> 0) passed first ("nvidia-smi did not answer within 5000 ms"): the
 *                 whole process group is SIGKILLed and the child reaped before returning
 *   GM_EIO        non-zero exit status or death by a signal (message quotes the first line of
 * stderr, or of stdout when stderr is empty), or output beyond max_output (child killed) GM_ENOMEM,
 * GM_EINVAL Whatever the return, *out is filled as far as the child got (stdout of a non-zero exit
 * is kept so callers can salvage partial results) and must be released with gm_spawn_result_free().
 * timeout_ms <= 0 means no deadline. */
int gm_spawn_run(const char *const argv[], int timeout_ms, size_t max_output, gm_spawn_result *out,
                 gm_error *err);

/* Releases the buffers of r and zeroes it; safe on a zeroed or already freed result. */
void gm_spawn_result_free(gm_spawn_result *r);

/* Copies the first non-empty line of text (trimmed, at most cap - 1 bytes) into buf; "" when none.
 * Used to quote a helper's complaint in an error message. */
void gm_spawn_first_line(const char *text, char *buf, size_t cap);

#endif
