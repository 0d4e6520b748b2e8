/* bench_stats.h - what one benchmark point measured on the request side, and its metrics as
 * /work/shared/notes/inference-bench.md defines them:
 *
 *   TTFT   first chunk with non-empty content received - request sent (just before the POST)
 *   E2E    last content chunk received - request sent
 *   TPOT   (E2E - TTFT) / (output tokens - 1), for requests with more than one output token
 *   ITL    the gap between successive content chunks (per chunk, not per token)
 *   requests/s, output and total tokens/s over the measured window: from the first request sent
 *   to the last one finished; goodput: requests/s that met every SLO given.
 *
 * Output tokens come from the final usage chunk (usage.completion_tokens) when the server sends
 * one and it agrees with the stream (gm_bench_usage_trusted), else from counting content chunks
 * ("output_tokens_source" says which, "usage_distrusted" how many usages were set aside). Token
 * counts are 64-bit throughout: a server's number is never truncated. In open loop
 * TTFT and E2E are also given from each request's scheduled send time, so a late client cannot
 * hide queueing (no coordinated omission).
 *
 * Distributions are exact: mean and standard deviation (population) over every value, and
 * numpy's linear percentiles over the values kept, which are all of them up to
 * GM_BENCH_DIST_KEEP values per distribution (32 MiB); past that the percentiles cover the first
 * ones and "percentiles_over" says how many. Built on core/stats. */
#ifndef GM_BENCH_STATS_H
#define GM_BENCH_STATS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stats.h"
#include "gpumon.h"

#define GM_BENCH_DIST_KEEP (4u << 20)
/* Most measured requests one point keeps (about 80 MiB of results); a --duration point stops
 * sending when it reaches them. */
#define GM_BENCH_REQUESTS_MAX 1000000

/* A distribution of one latency. */
typedef struct gm_bench_dist {
    gm_stats st;    /* every value */
    gm_values vals; /* the first `keep`, for percentiles */
    size_t keep;
} gm_bench_dist;

/* An empty distribution keeping at most keep values for percentiles (0: GM_BENCH_DIST_KEEP). */
void gm_bench_dist_init(gm_bench_dist *d, size_t keep);
/* Adds v (NaN is ignored). GM_OK or GM_ENOMEM (v then counts in the mean, not the percentiles). */
int gm_bench_dist_add(gm_bench_dist *d, double v);
/* The p-th percentile of the values kept; NaN when none. */
double gm_bench_dist_pct(gm_bench_dist *d, double p);
/* {"mean", "std", "min", "p50", "p90", "p95", "p99", "max", "count"} (null numbers when
 * empty), plus "percentiles_over" when the percentiles cover fewer values than count. */
json_t *gm_bench_dist_json(gm_bench_dist *d);
void gm_bench_dist_free(gm_bench_dist *d);

/* Service-level objectives for goodput, in ms; NaN where not given. */
typedef struct gm_bench_slo {
    double ttft_ms, tpot_ms, e2e_ms;
} gm_bench_slo;

/* Parses "ttft=MS,tpot=MS,e2e=MS" (any of them, in any order, each once; positive numbers).
 * GM_OK or GM_EINVAL with err saying what is wrong. */
int gm_bench_slo_parse(const char *s, gm_bench_slo *out, gm_error *err);
/* No objective: every field NaN. */
void gm_bench_slo_none(gm_bench_slo *slo);
bool gm_bench_slo_any(const gm_bench_slo *slo);
/* Whether a request met every objective given; a request with one output token has no TPOT
 * and meets a TPOT objective (as vLLM counts it). */
bool gm_bench_slo_met(const gm_bench_slo *slo, double ttft_ms, double tpot_ms, double e2e_ms);
/* {"ttft_ms": n, ...} with only the objectives given. */
json_t *gm_bench_slo_json(const gm_bench_slo *slo);

/* How a request ended. */
typedef enum gm_bench_outcome {
    GM_BENCH_OK,           /* streamed output and ended */
    GM_BENCH_HTTP_ERROR,   /* an HTTP status other than 200 */
    GM_BENCH_STREAM_ERROR, /* an error event after the 200 (data: {"error": ...}) */
    GM_BENCH_CONNECTION,   /* the connection failed or dropped before the end */
    GM_BENCH_TIMEOUT,      /* no end within the request timeout */
    GM_BENCH_NOT_SSE,      /* a 200 that is not an event stream, or a chunk that is not JSON */
    GM_BENCH_NO_OUTPUT,    /* ended without any content */
    GM_BENCH_TOO_LONG,  /* streamed past gm_bench_chunks_max: cut, the server ignores max_tokens */
    GM_BENCH_CANCELLED, /* stopped by Ctrl-C: neither completed nor failed */
} gm_bench_outcome;

/* The key of a failure in a point's "errors" ("http_500", "stream_error", "connection",
 * "timeout", "not_sse", "no_output", "too_long"); for GM_BENCH_HTTP_ERROR status gives the number.
 */
void gm_bench_outcome_key(gm_bench_outcome o, int status, char *buf, size_t len);

/* Content chunks a stream may carry beyond the rule's factor before its usage is distrusted, and
 * before a stream that goes on past max_tokens is cut (see gm_bench_usage_trusted). */
#define GM_BENCH_TOKEN_SLACK 16

/* Whether a server's usage.completion_tokens (claimed) agrees with the stream it sent: no more
 * than the max_tokens asked for (asked; 0: unknown, not checked), which a server stops at, and
 * not so few that the content chunks outnumber it by more than 2x + GM_BENCH_TOKEN_SLACK (a
 * content chunk carries at least one token). More tokens than chunks is normal (a chunk may
 * carry several: speculative decoding, stream intervals), up to max_tokens. */
bool gm_bench_usage_trusted(uint64_t claimed, uint64_t chunks, uint32_t asked);

/* Content chunks past which a stream is cut as running on without end: 2 x asked +
 * GM_BENCH_TOKEN_SLACK (a server that honours max_tokens sends at most asked). */
uint64_t gm_bench_chunks_max(uint32_t asked);

/* One request as measured: times are CLOCK_MONOTONIC nanoseconds, 0 when it did not happen. */
typedef struct gm_bench_result {
    int64_t sched_ns; /* when it was due: its arrival (open loop), its slot freeing (closed) */
    int64_t sent_ns;  /* handed to the HTTP client, just before the POST */
    int64_t first_ns; /* first content chunk received */
    int64_t last_ns;  /* last content chunk received */
    int64_t done_ns;  /* the exchange ended */
    uint64_t output_tokens; /* usage.completion_tokens when trusted, else content chunks */
    uint64_t chunks;        /* content chunks */
    uint64_t prompt_tokens; /* usage.prompt_tokens, else the prompt's estimate */
    uint64_t usage_claimed; /* usage.completion_tokens as sent, when usage_distrusted */
    uint32_t asked_tokens;  /* max_tokens asked for */
    int16_t http_status;    /* 0 when no answer */
    uint8_t outcome;        /* gm_bench_outcome */
    bool output_from_usage; /* output_tokens came from usage */
    bool prompt_from_usage; /* prompt_tokens came from usage */
    bool usage_distrusted;  /* usage contradicted the stream: output_tokens are the chunks */
} gm_bench_result;

/* Per-request latencies in ms from r (NaN where not defined: a failed request, TPOT of one
 * token). */
double gm_bench_result_ttft_ms(const gm_bench_result *r);
double gm_bench_result_e2e_ms(const gm_bench_result *r);
double gm_bench_result_tpot_ms(const gm_bench_result *r);

/* What one point measured: its requests and the per-chunk and per-dispatch distributions the
 * client fed in, and the client's own cost. */
typedef struct gm_bench_point {
    bool open_loop;
    unsigned concurrency; /* closed loop */
    double rate;          /* open loop, requests/s (INFINITY: all at once) */
    double burstiness;    /* open loop: 1 is Poisson */
    int64_t start_ns;     /* the first request sent */
    int64_t end_ns;       /* the last one finished */
    bool interrupted;     /* stopped by Ctrl-C */
    gm_bench_result *res; /* measured requests, in the order they finished */
    size_t n, cap;
    gm_bench_dist itl_ms;        /* gaps between content chunks */
    gm_bench_dist lag_ms;        /* sent - due: how late the client sent */
    gm_bench_dist recv_parse_us; /* a piece received -> its events parsed */
    gm_bench_dist wake_recv_us;  /* the loop woke -> a piece handed to us (work before it) */
    double cpu_s;                /* CPU time of the client's thread over the point's loop */
    double cpu_wall_s;           /* wall time of that same loop (a point's own duration, first
                                  * send to last answer, leaves out its start and end) */
    size_t peak_in_flight;       /* most requests in flight at once */
    uint64_t bytes_received;
    json_t *error_examples; /* the first message of each error key ({"http_500": "..."}) */
} gm_bench_point;

void gm_bench_point_init(gm_bench_point *p);
void gm_bench_point_free(gm_bench_point *p);
/* Keeps r. GM_OK, GM_ENOMEM, or GM_EBUSY past GM_BENCH_REQUESTS_MAX. */
int gm_bench_point_add(gm_bench_point *p, const gm_bench_result *r);
/* Keeps msg as the example of r's error key unless that key has one. */
void gm_bench_point_error_example(gm_bench_point *p, const gm_bench_result *r, const char *msg);
/* Completed requests whose usage was distrusted (gm_bench_usage_trusted), and the first of them
 * in *example (may be NULL; set to NULL when none). */
size_t gm_bench_point_usage_distrusted(const gm_bench_point *p, const gm_bench_result **example);
/* Seconds of the measured window (0 before any request). */
double gm_bench_point_duration(const gm_bench_point *p);
/* The client's thread CPU over the wall time of the same span, percent of a core; NAN when not
 * measured. */
double gm_bench_point_cpu_pct(const gm_bench_point *p);

/* The request-side part of the point's JSON (see docs/BENCH.md): "concurrency" or
 * "request_rate" (and "burstiness"), requests, completed, failed, errors, duration_s,
 * requests_per_s, output_tokens_per_s, total_tokens_per_s, output_tokens, input_tokens,
 * output_tokens_source, input_tokens_source, usage_distrusted, short_outputs, ttft_ms, tpot_ms,
 * itl_ms, e2e_ms, (open loop) ttft_from_schedule_ms, e2e_from_schedule_ms, (with an SLO) slo,
 * slo_met, goodput_requests_per_s, peak_concurrency, interrupted, error_examples (when any), and
 * "client": {cpu_percent, schedule_lag_ms, receive_to_parse_us, wake_to_receive_us,
 * bytes_received}. New reference; NULL when out of memory. Sorts the kept values (hence non-const).
 */
json_t *gm_bench_point_json(gm_bench_point *p, const gm_bench_slo *slo);

#endif
