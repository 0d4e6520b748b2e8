/* bench_stats.c - request-side metrics of a benchmark point (see bench_stats.h). */
#include "core/bench_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/parse.h"
#include "base/error.h"

/* ---- distributions ---------------------------------------------------------------------- */

void gm_bench_dist_init(gm_bench_dist *d, size_t keep)
{
    gm_stats_init(&d->st);
    gm_values_init(&d->vals);
    d->keep = keep ? keep : GM_BENCH_DIST_KEEP;
}

int gm_bench_dist_add(gm_bench_dist *d, double v)
{
    if (!isfinite(v))
        return GM_OK;
    gm_stats_add(&d->st, v);
    if (d->vals.n >= d->keep)
        return GM_OK;
    return gm_values_add(&d->vals, v, NULL);
}

double gm_bench_dist_pct(gm_bench_dist *d, double p)
{
    return gm_values_percentile(&d->vals, p);
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *gm_bench_dist_json(gm_bench_dist *d)
{
    bool any = d->st.count > 0;
    json_t *o = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "mean", num(any ? d->st.mean : NAN), "std",
        num(any ? gm_stats_stddev(&d->st) : NAN), "min", num(any ? d->st.min : NAN), "p50",
        num(gm_bench_dist_pct(d, 50)), "p90", num(gm_bench_dist_pct(d, 90)), "p95",
        num(gm_bench_dist_pct(d, 95)), "p99", num(gm_bench_dist_pct(d, 99)), "max",
        num(any ? d->st.max : NAN), "count", (json_int_t)d->st.count);
    if (o && d->vals.n < d->st.count)
        json_object_set_new(o, "percentiles_over", json_integer((json_int_t)d->vals.n));
    return o;
}

void gm_bench_dist_free(gm_bench_dist *d)
{
    gm_values_free(&d->vals);
    gm_stats_init(&d->st);
}

/* ---- SLO -------------------------------------------------------------------------------- */

void gm_bench_slo_none(gm_bench_slo *slo)
{
    slo->ttft_ms = slo->tpot_ms = slo->e2e_ms = NAN;
}

bool gm_bench_slo_any(const gm_bench_slo *slo)
{
    return !isnan(slo->ttft_ms) || !isnan(slo->tpot_ms) || !isnan(slo->e2e_ms);
}

int gm_bench_slo_parse(const char *s, gm_bench_slo *out, gm_error *err)
{
    gm_bench_slo_none(out);
    if (!s || !*s)
        return gm_error_set(err, GM_EINVAL, "empty SLO (expected ttft=MS,tpot=MS,e2e=MS)");
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        if (n == 0 || n >= sizeof item)
            return gm_error_set(err, GM_EINVAL, "\"%s\" is not ttft=MS,tpot=MS,e2e=MS", s);
        memcpy(item, p, n);
        item[n] = '\0';
        char *eq = strchr(item, '=');
        double *slot = NULL;
        if (eq) {
            *eq = '\0';
            if (strcmp(item, "ttft") == 0)
                slot = &out->ttft_ms;
            else if (strcmp(item, "tpot") == 0)
                slot = &out->tpot_ms;
            else if (strcmp(item, "e2e") == 0)
                slot = &out->e2e_ms;
        }
        if (!slot)
            return gm_error_set(err, GM_EINVAL,
                                "\"%s\": each objective is ttft=MS, tpot=MS or e2e=MS", s);
        if (!isnan(*slot))
            return gm_error_set(err, GM_EINVAL, "\"%s\": %s given twice", s, item);
        double v;
        if (gm_parse_number(eq + 1, 0, 1e9, &v) < 0 || v <= 0)
            return gm_error_set(err, GM_EINVAL, "\"%s\": %s needs a positive number of ms", s,
                                item);
        *slot = v;
        p = comma ? comma + 1 : p + n;
        if (comma && !*p)
            return gm_error_set(err, GM_EINVAL, "\"%s\" ends with a comma", s);
    }
    return GM_OK;
}

bool gm_bench_slo_met(const gm_bench_slo *slo, double ttft_ms, double tpot_ms, double e2e_ms)
{
    if (!isnan(slo->ttft_ms) && !(ttft_ms <= slo->ttft_ms))
        return false;
    if (!isnan(slo->tpot_ms) && isfinite(tpot_ms) && !(tpot_ms <= slo->tpot_ms))
        return false;
    if (!isnan(slo->e2e_ms) && !(e2e_ms <= slo->e2e_ms))
        return false;
    return true;
}

json_t *gm_bench_slo_json(const gm_bench_slo *slo)
{
    json_t *o = json_object();
    if (o && !isnan(slo->ttft_ms))
        json_object_set_new(o, "ttft_ms", json_real(slo->ttft_ms));
    if (o && !isnan(slo->tpot_ms))
        json_object_set_new(o, "tpot_ms", json_real(slo->tpot_ms));
    if (o && !isnan(slo->e2e_ms))
        json_object_set_new(o, "e2e_ms", json_real(slo->e2e_ms));
    return o;
}

/* ---- requests --------------------------------------------------------------------------- */

void gm_bench_outcome_key(gm_bench_outcome o, int status, char *buf, size_t len)
{
    switch (o) {
    case GM_BENCH_OK:
        snprintf(buf, len, "ok");
        break;
    case GM_BENCH_HTTP_ERROR:
        snprintf(buf, len, "http_%d", status);
        break;
    case GM_BENCH_STREAM_ERROR:
        snprintf(buf, len, "stream_error");
        break;
    case GM_BENCH_CONNECTION:
        snprintf(buf, len, "connection");
        break;
    case GM_BENCH_TIMEOUT:
        snprintf(buf, len, "timeout");
        break;
    case GM_BENCH_NOT_SSE:
        snprintf(buf, len, "not_sse");
        break;
    case GM_BENCH_NO_OUTPUT:
        snprintf(buf, len, "no_output");
        break;
    case GM_BENCH_TOO_LONG:
        snprintf(buf, len, "too_long");
        break;
    default:
        snprintf(buf, len, "cancelled");
        break;
    }
}

static double ms_between(int64_t a, int64_t b)
{
    return a && b ? (double)(b - a) / 1e6 : NAN;
}

double gm_bench_result_ttft_ms(const gm_bench_result *r)
{
    return r->outcome == GM_BENCH_OK ? ms_between(r->sent_ns, r->first_ns) : NAN;
}

double gm_bench_result_e2e_ms(const gm_bench_result *r)
{
    return r->outcome == GM_BENCH_OK ? ms_between(r->sent_ns, r->last_ns) : NAN;
}

double gm_bench_result_tpot_ms(const gm_bench_result *r)
{
    if (r->outcome != GM_BENCH_OK || r->output_tokens < 2)
        return NAN;
    return ms_between(r->first_ns, r->last_ns) / (double)(r->output_tokens - 1);
}

bool gm_bench_usage_trusted(uint64_t claimed, uint64_t chunks, uint32_t asked)
{
    if (asked && claimed > asked)
        return false;
    /* chunks > 2 * claimed + slack, without overflow for any claimed */
    return claimed >= UINT64_MAX / 4 || chunks <= 2 * claimed + GM_BENCH_TOKEN_SLACK;
}

uint64_t gm_bench_chunks_max(uint32_t asked)
{
    return 2 * (uint64_t)asked + GM_BENCH_TOKEN_SLACK;
}

/* ---- points ----------------------------------------------------------------------------- */

void gm_bench_point_init(gm_bench_point *p)
{
    memset(p, 0, sizeof *p);
    gm_bench_dist_init(&p->itl_ms, 0);
    gm_bench_dist_init(&p->lag_ms, 0);
    gm_bench_dist_init(&p->recv_parse_us, 0);
    gm_bench_dist_init(&p->wake_recv_us, 0);
}

void gm_bench_point_free(gm_bench_point *p)
{
    free(p->res);
    json_decref(p->error_examples);
    gm_bench_dist_free(&p->itl_ms);
    gm_bench_dist_free(&p->lag_ms);
    gm_bench_dist_free(&p->recv_parse_us);
    gm_bench_dist_free(&p->wake_recv_us);
    memset(p, 0, sizeof *p);
}

int gm_bench_point_add(gm_bench_point *p, const gm_bench_result *r)
{
    if (p->n >= GM_BENCH_REQUESTS_MAX)
        return GM_EBUSY;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 1024;
        gm_bench_result *nr = realloc(p->res, cap * sizeof *nr);
        if (!nr)
            return GM_ENOMEM;
        p->res = nr;
        p->cap = cap;
    }
    p->res[p->n++] = *r;
    return GM_OK;
}

void gm_bench_point_error_example(gm_bench_point *p, const gm_bench_result *r, const char *msg)
{
    char key[32];
    gm_bench_outcome_key((gm_bench_outcome)r->outcome, r->http_status, key, sizeof key);
    if (!p->error_examples && !(p->error_examples = json_object()))
        return;
    if (!json_object_get(p->error_examples, key))
        json_object_set_new(p->error_examples, key, gm_json_str(msg && *msg ? msg : key));
}

size_t gm_bench_point_usage_distrusted(const gm_bench_point *p, const gm_bench_result **example)
{
    size_t n = 0;
    if (example)
        *example = NULL;
    for (size_t i = 0; i < p->n; i++) {
        const gm_bench_result *r = &p->res[i];
        if (r->outcome != GM_BENCH_OK || !r->usage_distrusted)
            continue;
        if (example && !*example)
            *example = r;
        n++;
    }
    return n;
}

double gm_bench_point_duration(const gm_bench_point *p)
{
    return p->start_ns && p->end_ns > p->start_ns ? (double)(p->end_ns - p->start_ns) / 1e9 : 0;
}

double gm_bench_point_cpu_pct(const gm_bench_point *p)
{
    return p->cpu_wall_s > 0 ? p->cpu_s / p->cpu_wall_s * 100 : NAN;
}

static const char *source_name(size_t from_usage, size_t total, const char *yes, const char *no)
{
    if (total == 0)
        return NULL;
    return from_usage == total ? yes : from_usage == 0 ? no : "mixed";
}

/* Sums of what servers claim stay within a JSON integer rather than wrap. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > (uint64_t)INT64_MAX - b || b > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : a + b;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* What a point's requests add up to: counts, token sums and latency distributions. */
typedef struct tally {
    gm_bench_dist ttft, tpot, e2e, ttft_s, e2e_s;
    json_t *errors;
    size_t completed, failed, shorts, met, out_usage, in_usage, distrusted;
    uint64_t out_tokens, in_tokens;
} tally;

static void tally_free(tally *t)
{
    json_decref(t->errors);
    gm_bench_dist_free(&t->ttft);
    gm_bench_dist_free(&t->tpot);
    gm_bench_dist_free(&t->e2e);
    gm_bench_dist_free(&t->ttft_s);
    gm_bench_dist_free(&t->e2e_s);
}

/* One result into the tally: a failure by its outcome key, a success by its figures. */
static void tally_add(tally *t, const gm_bench_result *r, bool open_loop, const gm_bench_slo *slo,
                      bool have_slo)
{
    if (r->outcome == GM_BENCH_CANCELLED)
        return;
    if (r->outcome != GM_BENCH_OK) {
        t->failed++;
        char key[32];
        gm_bench_outcome_key((gm_bench_outcome)r->outcome, r->http_status, key, sizeof key);
        json_t *c = json_object_get(t->errors, key);
        json_object_set_new(t->errors, key, json_integer(c ? json_integer_value(c) + 1 : 1));
        return;
    }
    t->completed++;
    t->out_tokens = sat_add(t->out_tokens, r->output_tokens);
    t->in_tokens = sat_add(t->in_tokens, r->prompt_tokens);
    t->out_usage += r->output_from_usage;
    t->in_usage += r->prompt_from_usage;
    t->distrusted += r->usage_distrusted;
    if (r->output_tokens < r->asked_tokens)
        t->shorts++;
    double ttft = gm_bench_result_ttft_ms(r), tpot = gm_bench_result_tpot_ms(r),
           e2e = gm_bench_result_e2e_ms(r);
    gm_bench_dist_add(&t->ttft, ttft);
    gm_bench_dist_add(&t->tpot, tpot);
    gm_bench_dist_add(&t->e2e, e2e);
    if (open_loop) {
        gm_bench_dist_add(&t->ttft_s, ms_between(r->sched_ns, r->first_ns));
        gm_bench_dist_add(&t->e2e_s, ms_between(r->sched_ns, r->last_ns));
    }
    if (have_slo && gm_bench_slo_met(slo, ttft, tpot, e2e))
        t->met++;
}

/* The point's counts, rates and token sums into o (the tally's errors move into it). */
static void counts_json(json_t *o, tally *t, double dur, double per_s)
{
    size_t completed = t->completed;
    json_object_set_new(o, "requests", json_integer((json_int_t)(completed + t->failed)));
    json_object_set_new(o, "completed", json_integer((json_int_t)completed));
    json_object_set_new(o, "failed", json_integer((json_int_t)t->failed));
    json_object_set_new(o, "errors", t->errors);
    t->errors = NULL;
    json_object_set_new(o, "duration_s", json_real(dur));
    json_object_set_new(o, "requests_per_s", num((double)completed * per_s));
    json_object_set_new(o, "output_tokens_per_s", num((double)t->out_tokens * per_s));
    json_object_set_new(o, "total_tokens_per_s",
                        num(((double)t->out_tokens + (double)t->in_tokens) * per_s));
    json_object_set_new(o, "output_tokens", json_integer((json_int_t)t->out_tokens));
    json_object_set_new(o, "input_tokens", json_integer((json_int_t)t->in_tokens));
    json_object_set_new(o, "output_tokens_source",
                        str_or_null(source_name(t->out_usage, completed, "usage", "chunks")));
    json_object_set_new(o, "input_tokens_source",
                        str_or_null(source_name(t->in_usage, completed, "usage", "estimate")));
    json_object_set_new(o, "usage_distrusted", json_integer((json_int_t)t->distrusted));
    json_object_set_new(o, "short_outputs", json_integer((json_int_t)t->shorts));
}

json_t *gm_bench_point_json(gm_bench_point *p, const gm_bench_slo *slo)
{
    tally t = {.errors = json_object()};
    gm_bench_dist_init(&t.ttft, 0);
    gm_bench_dist_init(&t.tpot, 0);
    gm_bench_dist_init(&t.e2e, 0);
    gm_bench_dist_init(&t.ttft_s, 0);
    gm_bench_dist_init(&t.e2e_s, 0);
    bool have_slo = slo && gm_bench_slo_any(slo);
    for (size_t i = 0; i < p->n; i++)
        tally_add(&t, &p->res[i], p->open_loop, slo, have_slo);
    double dur = gm_bench_point_duration(p);
    double per_s = dur > 0 ? 1.0 / dur : NAN;
    json_t *o = json_object();
    if (!o || !t.errors) {
        json_decref(o);
        tally_free(&t);
        return NULL;
    }
    if (p->open_loop) {
        json_object_set_new(o, "request_rate", isinf(p->rate) ? json_string("inf") : num(p->rate));
        json_object_set_new(o, "burstiness", num(p->burstiness));
    } else {
        json_object_set_new(o, "concurrency", json_integer(p->concurrency));
    }
    counts_json(o, &t, dur, per_s);
    json_object_set_new(o, "ttft_ms", gm_bench_dist_json(&t.ttft));
    json_object_set_new(o, "tpot_ms", gm_bench_dist_json(&t.tpot));
    json_object_set_new(o, "itl_ms", gm_bench_dist_json(&p->itl_ms));
    json_object_set_new(o, "e2e_ms", gm_bench_dist_json(&t.e2e));
    if (p->open_loop) {
        json_object_set_new(o, "ttft_from_schedule_ms", gm_bench_dist_json(&t.ttft_s));
        json_object_set_new(o, "e2e_from_schedule_ms", gm_bench_dist_json(&t.e2e_s));
    }
    if (have_slo) {
        json_object_set_new(o, "slo", gm_bench_slo_json(slo));
        json_object_set_new(o, "slo_met", json_integer((json_int_t)t.met));
        json_object_set_new(o, "goodput_requests_per_s", num((double)t.met * per_s));
    }
    json_object_set_new(o, "peak_concurrency", json_integer((json_int_t)p->peak_in_flight));
    json_object_set_new(o, "interrupted", json_boolean(p->interrupted));
    if (json_object_size(p->error_examples))
        json_object_set_new(o, "error_examples", json_deep_copy(p->error_examples));
    json_t *client = json_pack(
        "{s:o, s:f, s:o, s:o, s:o, s:I}", "cpu_percent", num(gm_bench_point_cpu_pct(p)),
        "cpu_seconds", p->cpu_s, "schedule_lag_ms", gm_bench_dist_json(&p->lag_ms),
        "receive_to_parse_us", gm_bench_dist_json(&p->recv_parse_us), "wake_to_receive_us",
        gm_bench_dist_json(&p->wake_recv_us), "bytes_received", (json_int_t)p->bytes_received);
    json_object_set_new(o, "client", client ? client : json_null());
    tally_free(&t);
    return o;
}
