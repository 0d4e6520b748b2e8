/* error.h - base/error beyond what include/gpumon.h declares (gm_strerror, gm_error_set): the
 * code's own name, for logs and messages read by the people who grep the source for it. */
#ifndef GM_BASE_ERROR_H
#define GM_BASE_ERROR_H

#include "gpumon.h"

/* The code's name as the source spells it ("GM_ETIMEDOUT", "GM_OK"); "GM_UNKNOWN" for a code
 * outside GM_ERRNO_MAP. Static, never NULL. */
const char *gm_err_name(int code);

#endif
