/* bench_client.h - the load generator of `gpumon bench`: one thread drives every request through
 * libcurl's multi interface on its own epoll loop (curl's socket API, a timerfd for curl's
 * timeouts and for the arrival schedule), HTTP/1.1 with keep-alive connections (HTTP/2 where a
 * TLS server offers it, streams multiplexed), the event stream parsed as it arrives.
 *
 * Time: each piece of the answer is stamped (CLOCK_MONOTONIC) in curl's write callback, before
 * it is parsed, and the chunk times are those stamps; after parsing a second stamp gives the
 * receive-to-parse time, and the loop's wake-up time gives how long other work delayed the piece
 * (wake-to-receive). A request's send time is taken just before it is handed to curl.
 *
 * Load: closed loop (a fixed number of requests in flight, the next sent when one finishes) or
 * open loop (arrivals from core/bench_schedule at absolute times: a late send never delays the
 * next; the lateness is recorded as schedule lag). Requests in flight are bounded by
 * max_in_flight (each HTTP/1.1 request needs a connection: a file descriptor).
 *
 * Uses libcurl, base and core only. Not thread-safe: one client per thread. */
#ifndef GM_BENCH_CLIENT_H
#define GM_BENCH_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/bench_openai.h"
#include "core/bench_stats.h"
#include "gpumon.h"

#define GM_BENCH_URL_MAX       2048
#define GM_BENCH_IN_FLIGHT_MAX 16384
/* The bytes of an error body kept for its message. */
#define GM_BENCH_ERROR_BODY_MAX 4096

/* The server's base URL from what a person typed: http:// or https://, a host, an optional port
 * and path; a trailing "/" and a trailing "/v1" are dropped (the API paths are appended). GM_OK
 * or GM_EINVAL with err saying what is wrong. */
int gm_bench_url_base(const char *url, char *buf, size_t cap, gm_error *err);

typedef struct gm_bench_client_options {
    const char *url; /* as given; normalised with gm_bench_url_base */
    gm_bench_api api;
    const char *const *headers; /* extra request headers, "Name: value" */
    size_t nheaders;
    const char *api_key;  /* sent as "Authorization: Bearer KEY"; never printed */
    double timeout_s;     /* per request; 0: none */
    size_t max_in_flight; /* 0: GM_BENCH_IN_FLIGHT_MAX */
} gm_bench_client_options;

typedef struct gm_bench_client gm_bench_client;

/* GM_OK, GM_EINVAL (URL), GM_EIO (libcurl or epoll could not start), GM_ENOMEM. */
int gm_bench_client_new(const gm_bench_client_options *o, gm_bench_client **out, gm_error *err);
void gm_bench_client_free(gm_bench_client *c);

/* The base URL in use. */
const char *gm_bench_client_url(const gm_bench_client *c);
/* libcurl's version and whether it can speak HTTP/2, for the report. */
const char *gm_bench_client_curl_version(void);

/* GET /v1/models: the first model id into buf. GM_OK; GM_EIO (unreachable, an HTTP error: err
 * says which), GM_ETIMEDOUT (no answer in 30 s), GM_EPARSE, GM_ENOENT (no model listed). When
 * the server was not reached at all, err starts "cannot reach the server at URL: " and why
 * (gm_bench_reach_reason), and gm_bench_client_unreached says so. */
int gm_bench_client_first_model(gm_bench_client *c, char *buf, size_t cap, gm_error *err);
/* Whether the last gm_bench_client_first_model got no answer at all (refused, unresolvable,
 * timed out...), rather than an answer that was an error. */
bool gm_bench_client_unreached(const gm_bench_client *c);
/* Why a server was not reached, for people: "connection refused: nothing listens on that
 * port", "the host name does not resolve (DNS)", "timed out: no answer in time", ... from
 * libcurl's result code and the system's errno of the connection. */
const char *gm_bench_reach_reason(int curl_code, long os_errno);

/* Builds the request body of each prompt for model, asking for output_tokens tokens (or the
 * prompt's own max_tokens). Requests take the prompts in turn, across runs. GM_OK, GM_ENOMEM. */
int gm_bench_client_prepare(gm_bench_client *c, const char *model, const gm_bench_prompts *ps,
                            unsigned output_tokens, gm_error *err);

/* One run: a point, or its warmup. */
typedef struct gm_bench_run {
    bool open_loop;
    unsigned concurrency;              /* closed loop, >= 1 */
    double rate;                       /* open loop, > 0 or INFINITY */
    double burstiness;                 /* open loop, > 0 */
    uint64_t seed;                     /* of the arrival schedule */
    size_t requests;                   /* to send; 0: as many as fit in duration_s */
    double duration_s;                 /* with requests 0: stop sending after this many seconds */
    bool warmup;                       /* nothing is kept */
    const volatile sig_atomic_t *stop; /* set (by a signal handler): stop now, keep what was
                                        * measured (may be NULL) */
    /* Called about every 200 ms (may be NULL): done of total requests (total 0 when the run
     * is timed), seconds since the start, the point so far. */
    void (*progress)(void *arg, const gm_bench_point *p, size_t done, size_t total,
                     double elapsed_s);
    void *arg;
    FILE *trace; /* one JSON line per measured request (NULL: none) */
    unsigned trace_point;
} gm_bench_run;

/* Runs r, filling p (gm_bench_point_init'ed; may be NULL for a warmup): its window, requests,
 * distributions and the client's CPU time. Returns when every request sent has finished, or at
 * once when *r->stop is set (requests in flight are dropped, p->interrupted set). GM_OK, GM_EIO
 * (the loop failed), GM_ENOMEM. */
int gm_bench_client_run(gm_bench_client *c, const gm_bench_run *r, gm_bench_point *p,
                        gm_error *err);

#endif
