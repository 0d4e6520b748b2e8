/* query.h - bounded query-string parameters of one HTTP request, and the validated form of a
 * GET /api/history request built from them. Pure functions, unit-tested. */
#ifndef GM_SERVER_QUERY_H
#define GM_SERVER_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "server/ring.h"
#include "gpumon.h"

#define GM_QUERY_MAX_PARAMS 32
#define GM_QUERY_MAX_BYTES  2048

typedef struct gm_query_param {
    const char *key;
    const char *value; /* "" for a bare "key" */
} gm_query_param;

/* Parameters in request order; strings live in buf. */
typedef struct gm_query {
    size_t count;
    gm_query_param p[GM_QUERY_MAX_PARAMS];
    size_t used;
    char buf[GM_QUERY_MAX_BYTES];
} gm_query;

void gm_query_init(gm_query *q);

/* Parses a raw query string (the part after "?", n bytes): parameters split at "&", each
 * "key=value" or "key" split at its first "=" and then percent-decoded ("+" is a space).
 * Empty pieces are skipped. Returns GM_EINVAL with a message for an empty key, malformed or
 * NUL percent-encoding, a control character, too many parameters or too many bytes. */
int gm_query_parse(gm_query *q, const char *raw, size_t n, gm_error *err);

/* The first value of key, NULL when absent. */
const char *gm_query_get(const gm_query *q, const char *key);

#define GM_HISTORY_MAX_SERIES       128
#define GM_HISTORY_MAX_POINTS       10000  /* per series */
#define GM_HISTORY_MAX_TOTAL_POINTS 200000 /* per request, all series */
#define GM_HISTORY_DEFAULT_SECONDS  60

/* One series asked for. */
typedef struct gm_history_pick {
    gm_ring_source source;
    unsigned gpu; /* GM_RING_GPU only */
    int metric;   /* gm_metric or gm_host_metric */
} gm_history_pick;

/* A validated GET /api/history request. */
typedef struct gm_history_params {
    size_t count;
    gm_history_pick series[GM_HISTORY_MAX_SERIES];
    int64_t range_ms; /* the last range_ms of history */
    int64_t step_ms;  /* 0: every sample */
} gm_history_params;

/* Builds a history request from q: gpu (indexes, comma-separated or repeated; default every
 * GPU of the latest sample: present[i] for i < gpu_count, or every recorded index when present
 * is NULL, so GPU indexes with gaps never show series for GPUs that do not exist), metric
 * (canonical GPU metric names or host.<name>, comma-separated or repeated; required), seconds (a
 * duration, default 60, at most history_s), step (seconds, decimals allowed). gpu_count GPU indexes
 * are recorded every poll_ms. Returns GM_EINVAL with a message fit for a 400 response: unknown
 * parameter or metric, GPU not recorded, bad number, range over the history, more than
 * GM_HISTORY_MAX_POINTS per series or GM_HISTORY_MAX_TOTAL_POINTS in all. */
int gm_history_params_parse(const gm_query *q, unsigned gpu_count, const bool *present,
                            unsigned history_s, unsigned poll_ms, gm_history_params *out,
                            gm_error *err);

/* Canonical name of a requested series' metric ("utilization.gpu", "host.cpu.utilization"). */
const char *gm_history_series_name(const gm_history_pick *r, char *buf, size_t len);

#endif
