/* log.h - the daemon's structured log: one line per event on stderr,
 * `ts=... level=info msg="..." key=value ...`, filtered by level. Thread-safe. */
#ifndef GM_SERVER_LOG_H
#define GM_SERVER_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "server/config.h"

/* Sets the lowest level written (default info). */
void gm_log_set_level(gm_log_level level);

/* True when a line at level would be written: lets callers skip building costly fields. */
bool gm_log_enabled(gm_log_level level);

/* Writes one line: the time, the level, msg quoted and escaped, then the key=value pairs that
 * fmt formats (the caller quotes values that may hold spaces with gm_log_quote). */
void gm_log(gm_log_level level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes s into buf as a double-quoted logfmt value (quotes, backslashes and control characters
 * escaped, truncated to fit); returns buf. */
const char *gm_log_quote(const char *s, char *buf, size_t len);

/* A log line a peer can cause once per request (a refused upgrade, a session it starts) is
 * bounded by one of these: at most `burst` lines per interval, and the first line after the
 * interval says how many were held back. Zero-initialised; each call site keeps its own. */
#define GM_LOG_LIMIT_MS 10000 /* the interval the daemon's limits use */

typedef struct gm_log_limit {
    int64_t window_end_ms; /* end of the current interval; 0 before the first event */
    unsigned lines;        /* lines written in it */
    uint64_t held;         /* events held back since the last line written */
} gm_log_limit;

/* Counts one event at now_ms; true when its line is to be written, with *held the events held
 * back since the last line written (then reset); false when it is held back. Thread-safe. */
bool gm_log_limit_pass(gm_log_limit *l, unsigned burst, int64_t interval_ms, int64_t now_ms,
                       uint64_t *held);

#endif
