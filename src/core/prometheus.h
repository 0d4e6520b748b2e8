/* prometheus.h - a client of the Prometheus HTTP API (instant queries, /api/v1/query) on
 * libcurl, its answers parsed with jansson. gpumon reads the fleet from Prometheus this way
 * (`gpumon cluster`, the daemon's /api/fleet): Prometheus is the fleet's store and query
 * engine, gpumon never aggregates daemons itself.
 *
 * Every failure is a sentence naming the server (its URL without any user:password) and the
 * cause: unreachable, timed out, an HTTP error, Prometheus's own {"status":"error"} with its
 * errorType and error, an answer that is not JSON or larger than the limit.
 *
 * One client per thread (it keeps one libcurl handle, so its connection is reused). */
#ifndef GM_PROMETHEUS_H
#define GM_PROMETHEUS_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "gpumon.h"

#define GM_PROMETHEUS_URL_MAX           2048
#define GM_PROMETHEUS_TIMEOUT_DEFAULT_S 10.0
#define GM_PROMETHEUS_RESPONSE_MAX      (64u << 20) /* bytes of one answer, decoded */
#define GM_PROMETHEUS_ERROR_BODY_MAX    512         /* bytes of a non-JSON error body quoted */

/* Checks a Prometheus base URL as a person typed it: http:// or https://, a host, an optional
 * port and path prefix (a Prometheus behind a proxy at /prometheus), no query or fragment.
 * Writes to display (cap bytes, may be NULL) the URL to show people: without user:password
 * and without a trailing "/". GM_OK, or GM_EINVAL with err saying what is wrong. */
int gm_prometheus_url_check(const char *url, char *display, size_t cap, gm_error *err);

typedef struct gm_prometheus_options {
    const char *url;         /* base URL (gm_prometheus_url_check); user:password@ is sent
                              * as HTTP basic authentication and never printed */
    double timeout_s;        /* one request, connecting included; 0: the default */
    size_t max_response;     /* bytes; 0: GM_PROMETHEUS_RESPONSE_MAX */
    const atomic_bool *stop; /* when set (another thread), a request in flight ends within
                              * about a second with GM_ECANCELED; may be NULL */
} gm_prometheus_options;

typedef struct gm_prometheus gm_prometheus;

/* GM_OK, GM_EINVAL (URL), GM_EIO (libcurl cannot start), GM_ENOMEM. */
int gm_prometheus_new(const gm_prometheus_options *o, gm_prometheus **out, gm_error *err);
void gm_prometheus_free(gm_prometheus *p);

/* The URL to show people (no credentials, no trailing "/"). */
const char *gm_prometheus_url(const gm_prometheus *p);

/* An instant query: GET /api/v1/query?query=expr. On success *data is a new reference to the
 * answer's "data" object ({"resultType": ..., "result": ...}) and *warnings (may be NULL) a
 * new reference to its "warnings" array or NULL. Errors: GM_EIO (unreachable, refused, an
 * HTTP status without a Prometheus error body), GM_ETIMEDOUT, GM_EINVAL (Prometheus answered
 * {"status":"error"}: the query is wrong or cannot run), GM_EPARSE (not JSON, or not the API's
 * shape), GM_ENOMEM (also an answer over the size limit), GM_ECANCELED (stop was set). */
int gm_prometheus_query(gm_prometheus *p, const char *expr, json_t **data, json_t **warnings,
                        gm_error *err);

/* One sample of an instant vector: its labels (borrowed from the answer) and value. */
typedef struct gm_prometheus_sample {
    const json_t *metric; /* object of label name -> string */
    double value;         /* NaN, +Inf and -Inf as Prometheus wrote them */
    double time_s;        /* the evaluation time (Unix seconds) */
} gm_prometheus_sample;

/* Walks an instant vector answer (data as gm_prometheus_query gives it): calls fn for each
 * sample, in the answer's order, until fn returns non-zero (returned). GM_EPARSE with err when
 * data is not a vector or a sample is malformed (a value that is not a number as Prometheus
 * writes them). */
int gm_prometheus_vector_each(const json_t *data,
                              int (*fn)(void *arg, const gm_prometheus_sample *s), void *arg,
                              gm_error *err);

/* The value of label name in a sample's labels, NULL when absent or not a string. */
const char *gm_prometheus_label(const json_t *metric, const char *name);

#endif
