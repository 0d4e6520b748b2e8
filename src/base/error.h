/* error.h - filling a gm_error, for the code inside gpumon (the public header declares only the
 * type and gm_strerror), and the code's own name, for logs and messages read by the people who
 * grep the source for it. */
#ifndef GM_BASE_ERROR_H
#define GM_BASE_ERROR_H

#include "gpumon.h"

/* Fills err (which may be NULL) and returns code, so callers can `return gm_error_set(...)`. */
int gm_error_set(gm_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The code's name as the source spells it ("GM_ETIMEDOUT", "GM_OK"); "GM_UNKNOWN" for a code
 * outside GM_ERRNO_MAP. Static, never NULL. */
const char *gm_err_name(int code);

#endif
