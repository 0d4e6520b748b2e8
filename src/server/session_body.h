/* session_body.h - the body of POST /api/sessions, read and checked before the session worker
 * sees it: which GPUs, how often, what label. A pure function of the body, the newest sample and
 * the poll interval (unit-tested and fuzzed), so the route answers a bad body 400 at once. */
#ifndef GM_SERVER_SESSION_BODY_H
#define GM_SERVER_SESSION_BODY_H

#include <stdbool.h>
#include <stddef.h>

#include "gpumon.h"

#define GM_SESSION_LABEL_MAX    128     /* bytes */
#define GM_SESSION_INTERVAL_MAX 86400.0 /* seconds */

/* A validated POST /api/sessions body. */
typedef struct gm_session_request {
    size_t ngpus;
    unsigned gpus[GM_MAX_GPUS]; /* driver indices, ascending, no duplicates */
    unsigned every;             /* take every `every`-th published sample (>= 1) */
    double interval_s;          /* every * poll interval: what the session records */
    bool has_label;
    char label[GM_SESSION_LABEL_MAX + 1];
} gm_session_request;

/* Parses a POST /api/sessions body (len 0: every default) against snap, the latest published
 * sample: {"gpus": [driver indices] (default: every GPU of snap), "interval": seconds (number,
 * default and minimum the poll interval, at most GM_SESSION_INTERVAL_MAX; rounded to the
 * nearest multiple of the poll interval), "label": "text" (at most GM_SESSION_LABEL_MAX bytes,
 * no control characters)}; null means the default. Returns GM_OK or GM_EINVAL with a message
 * fit for a 400 (not JSON, not an object, unknown field, wrong type, no such GPU...). */
int gm_session_request_parse(const char *body, size_t len, const gm_snapshot *snap,
                             unsigned poll_ms, gm_session_request *out, gm_error *err);

#endif
