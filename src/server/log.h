/* log.h - the daemon's structured log: one line per event on stderr,
 * `ts=... level=info msg="..." key=value ...`, filtered by level. Thread-safe. */
#ifndef GM_SERVER_LOG_H
#define GM_SERVER_LOG_H

#include <stdbool.h>

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

#endif
