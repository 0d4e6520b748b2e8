/* test_bench_stats.c - latency distributions, SLOs, and a point's request-side metrics against
 * values worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "core/bench_stats.h"

static double jnum(const json_t *o, const char *key, const char *sub)
{
    const json_t *v = json_object_get(o, key);
    if (sub)
        v = json_object_get(v, sub);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_distribution(void **state)
{
    (void)state;
    gm_bench_dist d;
    gm_bench_dist_init(&d, 0);
    for (int i = 100; i >= 1; i--)
        gm_bench_dist_add(&d, i);
    gm_bench_dist_add(&d, NAN); /* ignored */
    json_t *j = gm_bench_dist_json(&d);
    /* numpy.percentile(range(1, 101), [50, 90, 95, 99]); std with ddof 0 */
    assert_float_equal(jnum(j, "mean", NULL), 50.5, 1e-12);
    assert_float_equal(jnum(j, "std", NULL), sqrt(9999.0 / 12), 1e-9);
    assert_float_equal(jnum(j, "min", NULL), 1, 0);
    assert_float_equal(jnum(j, "max", NULL), 100, 0);
    assert_float_equal(jnum(j, "p50", NULL), 50.5, 1e-9);
    assert_float_equal(jnum(j, "p90", NULL), 90.1, 1e-9);
    assert_float_equal(jnum(j, "p95", NULL), 95.05, 1e-9);
    assert_float_equal(jnum(j, "p99", NULL), 99.01, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 100);
    assert_null(json_object_get(j, "percentiles_over"));
    json_decref(j);
    gm_bench_dist_free(&d);

    /* Empty: nulls, never zeros. */
    gm_bench_dist_init(&d, 0);
    j = gm_bench_dist_json(&d);
    assert_true(json_is_null(json_object_get(j, "mean")));
    assert_true(json_is_null(json_object_get(j, "p99")));
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 0);
    json_decref(j);
    gm_bench_dist_free(&d);

    /* Bounded: percentiles over the first values kept, the mean over all. */
    gm_bench_dist_init(&d, 10);
    for (int i = 1; i <= 20; i++)
        gm_bench_dist_add(&d, i);
    j = gm_bench_dist_json(&d);
    assert_float_equal(jnum(j, "mean", NULL), 10.5, 1e-12);
    assert_float_equal(jnum(j, "max", NULL), 20, 0);
    assert_float_equal(jnum(j, "p50", NULL), 5.5, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(j, "percentiles_over")), 10);
    json_decref(j);
    gm_bench_dist_free(&d);
}

static void test_slo(void **state)
{
    (void)state;
    gm_bench_slo s;
    gm_error err = {0};
    assert_int_equal(gm_bench_slo_parse("ttft=200,tpot=50.5,e2e=3000", &s, &err), GM_OK);
    assert_float_equal(s.ttft_ms, 200, 0);
    assert_float_equal(s.tpot_ms, 50.5, 0);
    assert_float_equal(s.e2e_ms, 3000, 0);
    assert_int_equal(gm_bench_slo_parse("tpot=10", &s, &err), GM_OK);
    assert_true(isnan(s.ttft_ms) && isnan(s.e2e_ms));
    assert_true(gm_bench_slo_any(&s));
    /* One output token has no TPOT: it meets a TPOT objective. */
    assert_true(gm_bench_slo_met(&s, 1e9, NAN, 1e9));
    assert_true(gm_bench_slo_met(&s, 0, 10, 0));
    assert_false(gm_bench_slo_met(&s, 0, 10.01, 0));
    assert_int_equal(gm_bench_slo_parse("ttft=100,e2e=500", &s, &err), GM_OK);
    assert_false(gm_bench_slo_met(&s, NAN, 1, 1)); /* no TTFT: a failed request */
    assert_false(gm_bench_slo_met(&s, 100, 1, 500.5));
    assert_true(gm_bench_slo_met(&s, 100, 1e9, 500));
    json_t *j = gm_bench_slo_json(&s);
    assert_int_equal(json_object_size(j), 2);
    json_decref(j);
    const char *bad[] = {"",         "ttft",          "ttft=",   "ttft=0",        "ttft=-5",
                         "ttft=1e3", "tpot=0x1",      "itl=5",   "ttft=1,ttft=2", "ttft=1,",
                         ",ttft=1",  "ttft=1,,e2e=2", "ttft=inf"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        if (gm_bench_slo_parse(bad[i], &s, &err) != GM_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
        check_ne(err.msg[0], '\0');
    }
    gm_bench_slo_none(&s);
    assert_false(gm_bench_slo_any(&s));
}

#define MS 1000000LL

static gm_bench_result ok(int64_t sched, int64_t sent, int64_t first, int64_t last, unsigned n,
                          unsigned prompt, unsigned asked, bool usage)
{
    gm_bench_result r = {.sched_ns = sched,
                         .sent_ns = sent,
                         .first_ns = first,
                         .last_ns = last,
                         .done_ns = last + MS,
                         .output_tokens = n,
                         .chunks = n,
                         .prompt_tokens = prompt,
                         .asked_tokens = asked,
                         .http_status = 200,
                         .outcome = GM_BENCH_OK,
                         .output_from_usage = usage,
                         .prompt_from_usage = usage};
    return r;
}

static void test_request_latencies(void **state)
{
    (void)state;
    gm_bench_result r = ok(0, 10 * MS, 60 * MS, 150 * MS, 10, 5, 10, true);
    assert_float_equal(gm_bench_result_ttft_ms(&r), 50, 1e-9);
    assert_float_equal(gm_bench_result_e2e_ms(&r), 140, 1e-9);
    assert_float_equal(gm_bench_result_tpot_ms(&r), 10, 1e-9); /* (140 - 50) / 9 */
    r.output_tokens = 1;
    assert_true(isnan(gm_bench_result_tpot_ms(&r)));
    r.outcome = GM_BENCH_HTTP_ERROR;
    assert_true(isnan(gm_bench_result_ttft_ms(&r)));
    char key[32];
    gm_bench_outcome_key(GM_BENCH_HTTP_ERROR, 503, key, sizeof key);
    assert_string_equal(key, "http_503");
    gm_bench_outcome_key(GM_BENCH_STREAM_ERROR, 200, key, sizeof key);
    assert_string_equal(key, "stream_error");
    gm_bench_outcome_key(GM_BENCH_CONNECTION, 0, key, sizeof key);
    assert_string_equal(key, "connection");
    gm_bench_outcome_key(GM_BENCH_TOO_LONG, 200, key, sizeof key);
    assert_string_equal(key, "too_long");
}

static void test_closed_loop_point(void **state)
{
    (void)state;
    gm_bench_point p;
    gm_bench_point_init(&p);
    p.concurrency = 2;
    p.start_ns = 1000 * MS;
    p.end_ns = 3000 * MS; /* 2 s window */
    /* Three completed: TTFT 100, 200, 300 ms; E2E 1000, 1100, 1200 ms. */
    gm_bench_result a = ok(0, 1000 * MS, 1100 * MS, 2000 * MS, 10, 100, 10, true);
    gm_bench_result b = ok(0, 1000 * MS, 1200 * MS, 2100 * MS, 10, 100, 10, true);
    gm_bench_result c = ok(0, 1800 * MS, 2100 * MS, 3000 * MS, 4, 50, 10, false); /* short */
    gm_bench_result f1 = {.outcome = GM_BENCH_HTTP_ERROR, .http_status = 500};
    gm_bench_result f2 = {.outcome = GM_BENCH_HTTP_ERROR, .http_status = 500};
    gm_bench_result f3 = {.outcome = GM_BENCH_CONNECTION};
    gm_bench_result x = {.outcome = GM_BENCH_CANCELLED};
    gm_bench_result *all[] = {&a, &b, &f1, &c, &f2, &f3, &x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        assert_int_equal(gm_bench_point_add(&p, all[i]), GM_OK);
    gm_bench_point_error_example(&p, &f1, "boom");
    gm_bench_point_error_example(&p, &f2, "second");
    gm_bench_dist_add(&p.itl_ms, 100);
    gm_bench_dist_add(&p.itl_ms, 100);
    p.cpu_s = 0.5;
    p.cpu_wall_s = 2;
    p.peak_in_flight = 2;
    gm_bench_slo slo;
    gm_error err = {0};
    assert_int_equal(gm_bench_slo_parse("ttft=250", &slo, &err), GM_OK);
    json_t *j = gm_bench_point_json(&p, &slo);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "concurrency")), 2);
    assert_null(json_object_get(j, "request_rate"));
    assert_int_equal(json_integer_value(json_object_get(j, "requests")), 6);
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "failed")), 3);
    json_t *e = json_object_get(j, "errors");
    assert_int_equal(json_integer_value(json_object_get(e, "http_500")), 2);
    assert_int_equal(json_integer_value(json_object_get(e, "connection")), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "error_examples"), "http_500")),
        "boom");
    assert_float_equal(jnum(j, "duration_s", NULL), 2, 1e-12);
    assert_float_equal(jnum(j, "requests_per_s", NULL), 1.5, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(j, "output_tokens")), 24);
    assert_int_equal(json_integer_value(json_object_get(j, "input_tokens")), 250);
    assert_float_equal(jnum(j, "output_tokens_per_s", NULL), 12, 1e-12);
    assert_float_equal(jnum(j, "total_tokens_per_s", NULL), 137, 1e-12);
    assert_string_equal(json_string_value(json_object_get(j, "output_tokens_source")), "mixed");
    assert_string_equal(json_string_value(json_object_get(j, "input_tokens_source")), "mixed");
    assert_int_equal(json_integer_value(json_object_get(j, "short_outputs")), 1);
    assert_float_equal(jnum(j, "ttft_ms", "p50"), 200, 1e-9);
    assert_float_equal(jnum(j, "ttft_ms", "mean"), 200, 1e-9);
    assert_float_equal(jnum(j, "e2e_ms", "max"), 1200, 1e-9);
    /* TPOT: 900/9 = 100, 900/9 = 100, 900/3 = 300. */
    assert_float_equal(jnum(j, "tpot_ms", "max"), 300, 1e-9);
    assert_float_equal(jnum(j, "tpot_ms", "p50"), 100, 1e-9);
    assert_float_equal(jnum(j, "itl_ms", "mean"), 100, 1e-9);
    /* Goodput: TTFT 100 and 200 meet 250, 300 does not: 2 in 2 s. */
    assert_int_equal(json_integer_value(json_object_get(j, "slo_met")), 2);
    assert_float_equal(jnum(j, "goodput_requests_per_s", NULL), 1, 1e-12);
    assert_float_equal(jnum(j, "slo", "ttft_ms"), 250, 0);
    assert_null(json_object_get(j, "ttft_from_schedule_ms"));
    assert_float_equal(jnum(j, "client", "cpu_percent"), 25, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(j, "peak_concurrency")), 2);
    assert_true(json_is_false(json_object_get(j, "interrupted")));
    json_decref(j);
    gm_bench_point_free(&p);
}

static void test_usage_is_trusted_only_when_the_stream_bears_it_out(void **state)
{
    (void)state;
    /* As asked, and several tokens per chunk (speculative decoding, stream intervals). */
    assert_true(gm_bench_usage_trusted(128, 128, 128));
    assert_true(gm_bench_usage_trusted(128, 16, 128));
    assert_true(gm_bench_usage_trusted(3, 3, 0)); /* max_tokens unknown */
    /* More than max_tokens: no server that honours it sends that. */
    assert_false(gm_bench_usage_trusted(129, 128, 128));
    assert_false(gm_bench_usage_trusted(1000000000000ULL, 4, 4));
    assert_false(gm_bench_usage_trusted(UINT64_MAX, 4, 4));
    /* Far fewer tokens than content chunks: 2 x claimed + 16 is the tolerance. */
    assert_true(gm_bench_usage_trusted(10, 36, 100));
    assert_false(gm_bench_usage_trusted(10, 37, 100));
    assert_false(gm_bench_usage_trusted(0, 100, 128));
    assert_int_equal(gm_bench_chunks_max(128), 2 * 128 + GM_BENCH_TOKEN_SLACK);
}

static void test_token_counts_are_64_bit(void **state)
{
    (void)state;
    gm_bench_point p;
    gm_bench_point_init(&p);
    p.concurrency = 1;
    p.start_ns = 1000 * MS;
    p.end_ns = 2000 * MS;
    /* Counts past 32 bits are kept whole, summed exactly. */
    gm_bench_result a = ok(0, 1000 * MS, 1100 * MS, 2000 * MS, 10, 100, 10, true);
    a.output_tokens = a.asked_tokens = 0;
    a.output_tokens = 5000000000ULL;
    a.prompt_tokens = 6000000000ULL;
    gm_bench_result b = a;
    /* A distrusted usage: its tokens are the chunks, and the point says so. */
    gm_bench_result c = ok(0, 1000 * MS, 1100 * MS, 2000 * MS, 4, 100, 4, false);
    c.chunks = 4;
    c.usage_distrusted = true;
    c.usage_claimed = 1000000000000ULL;
    assert_int_equal(gm_bench_point_add(&p, &a), GM_OK);
    assert_int_equal(gm_bench_point_add(&p, &b), GM_OK);
    assert_int_equal(gm_bench_point_add(&p, &c), GM_OK);
    const gm_bench_result *ex = NULL;
    assert_int_equal(gm_bench_point_usage_distrusted(&p, &ex), 1);
    assert_non_null(ex);
    check_eq(ex->usage_claimed, 1000000000000ULL);
    json_t *j = gm_bench_point_json(&p, NULL);
    check_eq(json_integer_value(json_object_get(j, "output_tokens")), 10000000004LL);
    check_eq(json_integer_value(json_object_get(j, "input_tokens")), 12000000100LL);
    assert_int_equal(json_integer_value(json_object_get(j, "usage_distrusted")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "output_tokens_source")), "mixed");
    json_decref(j);
    /* Sums that would pass a JSON integer stop at its largest value rather than wrap. */
    gm_bench_result d = a;
    d.prompt_tokens = (uint64_t)INT64_MAX;
    assert_int_equal(gm_bench_point_add(&p, &d), GM_OK);
    j = gm_bench_point_json(&p, NULL);
    check_eq(json_integer_value(json_object_get(j, "input_tokens")), INT64_MAX);
    json_decref(j);
    gm_bench_point_free(&p);
}

static void test_open_loop_point_from_schedule(void **state)
{
    (void)state;
    gm_bench_point p;
    gm_bench_point_init(&p);
    p.open_loop = true;
    p.rate = INFINITY;
    p.burstiness = 1;
    p.start_ns = 0;
    p.end_ns = 1000 * MS;
    /* Sent 40 ms after it was due: TTFT 10 from the send, 50 from the schedule. */
    gm_bench_result a = ok(100 * MS, 140 * MS, 150 * MS, 200 * MS, 2, 1, 2, true);
    gm_bench_point_add(&p, &a);
    json_t *j = gm_bench_point_json(&p, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "request_rate")), "inf");
    assert_float_equal(jnum(j, "burstiness", NULL), 1, 0);
    assert_float_equal(jnum(j, "ttft_ms", "p50"), 10, 1e-9);
    assert_float_equal(jnum(j, "ttft_from_schedule_ms", "p50"), 50, 1e-9);
    assert_float_equal(jnum(j, "e2e_from_schedule_ms", "p50"), 100, 1e-9);
    assert_string_equal(json_string_value(json_object_get(j, "output_tokens_source")), "usage");
    assert_null(json_object_get(j, "goodput_requests_per_s"));
    json_decref(j);
    /* Nothing completed: throughput 0 over a window, latencies null. */
    gm_bench_point_free(&p);
    gm_bench_point_init(&p);
    json_t *k = gm_bench_point_json(&p, NULL);
    assert_int_equal(json_integer_value(json_object_get(k, "completed")), 0);
    assert_true(json_is_null(json_object_get(k, "requests_per_s")));
    assert_true(json_is_null(json_object_get(json_object_get(k, "ttft_ms"), "p50")));
    assert_true(json_is_null(json_object_get(k, "output_tokens_source")));
    json_decref(k);
    gm_bench_point_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_slo),
        cmocka_unit_test(test_request_latencies),
        cmocka_unit_test(test_closed_loop_point),
        cmocka_unit_test(test_open_loop_point_from_schedule),
        cmocka_unit_test(test_usage_is_trusted_only_when_the_stream_bears_it_out),
        cmocka_unit_test(test_token_counts_are_64_bit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
