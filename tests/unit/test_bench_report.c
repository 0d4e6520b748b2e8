/* test_bench_report.c - what people read of a benchmark: the result block of a point (vLLM's
 * layout plus energy, client and validity), the sweep table, and comparisons. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench_report.h"

static const char *point_a =
    "{\"concurrency\": 8, \"requests\": 100, \"completed\": 98, \"failed\": 2,"
    " \"errors\": {\"http_500\": 2}, \"duration_s\": 10.0, \"requests_per_s\": 9.8,"
    " \"output_tokens_per_s\": 1254.4, \"total_tokens_per_s\": 2508.8,"
    " \"output_tokens\": 12544, \"input_tokens\": 12544, \"output_tokens_source\": \"chunks\","
    " \"short_outputs\": 3, \"goodput_requests_per_s\": 9.0,"
    " \"ttft_ms\": {\"mean\": 50, \"p50\": 48, \"p90\": 60, \"p99\": 80},"
    " \"tpot_ms\": {\"mean\": 10, \"p50\": 10, \"p90\": 11, \"p99\": 12},"
    " \"itl_ms\": {\"mean\": 10, \"p50\": 10, \"p90\": 11, \"p99\": 13},"
    " \"e2e_ms\": {\"mean\": 1300, \"p50\": 1290, \"p90\": 1350, \"p99\": 1400},"
    " \"peak_concurrency\": 8, \"interrupted\": false,"
    " \"client\": {\"cpu_percent\": 3.5, \"schedule_lag_ms\": {\"p99\": 0.05},"
    "   \"receive_to_parse_us\": {\"p99\": 20}, \"wake_to_receive_us\": {\"p99\": 40}},"
    " \"gpu_monitoring\": {\"gpu_stats\": {\"0\": {\"utilization\": {\"mean\": 87.5},"
    "   \"power_draw_w\": {\"mean\": 600.25}}}},"
    " \"energy_j\": 6000.0, \"energy_source\": \"counter\", \"output_tokens_per_joule\": 2.0907,"
    " \"joules_per_request\": 61.22, \"idle_power_w\": 70.0, \"energy_above_idle_j\": 5300.0,"
    " \"valid\": false, \"invalid_reasons\": [\"throttled: GPU 0 hw_thermal_slowdown\"]}";

static char *render(void (*fn)(FILE *, const json_t *), const json_t *j)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fn(f, j);
    fclose(f);
    return text;
}

static void has(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("missing \"%s\" in:\n%s", needle, text);
}

static void test_point_block(void **state)
{
    (void)state;
    json_t *p = json_loads(point_a, 0, NULL);
    assert_non_null(p);
    char *t = render(gm_bench_print_point, p);
    has(t, "==== Serving Benchmark Result (concurrency 8) ====\n");
    has(t, "Successful requests:                     98\n");
    has(t, "Failed requests:                         2\n");
    has(t, "  http_500:                              2\n");
    has(t, "Request throughput (req/s):              9.80\n");
    has(t, "Request goodput (req/s):                 9.00\n");
    has(t, "Generated tokens counted from:           content chunks (no usage from the server)");
    has(t, "Outputs shorter than asked:              3\n");
    has(t, "Median TTFT (ms):                        48.00\n");
    has(t, "P99 E2EL (ms):                           1400.00\n");
    has(t, "Output tokens per joule:                 2.091\n");
    has(t, "Energy from:                             the energy counter\n");
    has(t, "Idle power (W):                          70.0\n");
    has(t, "GPU 0 util % / power W (mean):           87.5 / 600.2\n");
    has(t, "Client CPU (% of a core):                3.5\n");
    has(t, "Valid:                                   NO\n  throttled: GPU 0 hw_thermal_slowdown\n");
    has(t, "Energy above idle (J):                   5300.0\n");
    free(t);
    /* An idle measurement above the loaded power: no negative energy, a flag instead. */
    json_object_set_new(p, "energy_above_idle_j", json_null());
    json_object_set_new(p, "idle_power_unreliable", json_true());
    t = render(gm_bench_print_point, p);
    has(t, "Energy above idle (J):                   - (idle power above this point's: not "
           "reliable)\n");
    free(t);
    /* Without GPUs: no energy section; absent figures print as "-". */
    json_object_set_new(p, "gpu_monitoring", json_null());
    json_object_del(p, "goodput_requests_per_s");
    json_object_set_new(p, "valid", json_true());
    json_object_set_new(p, "ttft_ms",
                        json_pack("{s:n, s:n, s:n, s:n}", "mean", "p50", "p90", "p99"));
    t = render(gm_bench_print_point, p);
    assert_null(strstr(t, "GPU energy"));
    assert_null(strstr(t, "goodput"));
    has(t, "Median TTFT (ms):                        -\n");
    has(t, "Valid:                                   yes\n");
    free(t);
    json_decref(p);
}

static json_t *doc_with(const char *id, double rps, double tokj)
{
    json_t *a = json_loads(point_a, 0, NULL);
    json_t *b = json_loads(point_a, 0, NULL);
    json_object_set_new(a, "requests_per_s", json_real(rps));
    json_object_set_new(a, "output_tokens_per_joule", json_real(tokj));
    json_object_set_new(b, "concurrency", json_integer(64));
    json_object_set_new(b, "requests_per_s", json_real(rps * 4));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:[o, o]}", "id", id, "kind", "bench", "url",
                     "http://x:8000", "model", "m", "api", "completions", "started",
                     "2026-11-26T00:00:00.000Z", "points", a, b);
}

static void test_report_and_table(void **state)
{
    (void)state;
    json_t *d = doc_with("20261126-000000-aaaaaa", 10, 2);
    json_object_set_new(d, "label", json_string("vllm tp1"));
    char *t = render(gm_bench_print_report, d);
    has(t, "bench 20261126-000000-aaaaaa \"vllm tp1\": 2026-11-26T00:00:00.000Z http://x:8000, "
           "model m, api completions\n");
    has(t, "(concurrency 64)");
    has(t, "LOAD ");
    has(t, "concurrency 8       10.00    1254.4    48.00    80.00    10.00    10.00   1290.0"
           "     9.00    61.22    2.000    NO\n");
    free(t);
    json_decref(d);
}

static void test_compare(void **state)
{
    (void)state;
    json_t *a = doc_with("A1", 10, 2), *b = doc_with("B2", 12, 1.5);
    /* B has its points the other way round: they are matched by load, not position. */
    json_t *pts = json_object_get(b, "points");
    json_t *first = json_incref(json_array_get(pts, 0));
    json_array_remove(pts, 0);
    json_array_append_new(pts, first);
    const json_t *docs[] = {a, b};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gm_error err = {0};
    assert_int_equal(gm_bench_print_compare(f, docs, 2, false, 80, &err), GM_OK);
    fclose(f);
    has(text, "A: A1 http://x:8000, model m, api completions\n");
    has(text, "Changes are from A's figures: better or worse");
    has(text, "\nconcurrency 8\n");
    has(text, "requests/s            10.00      12.00 (  +20.0% better)\n");
    has(text, "output tok/J          2.000      1.500 (  -25.0%  worse)\n");
    has(text, "TTFT p50 ms           48.00      48.00 (   +0.0%       )\n");
    has(text, "\nconcurrency 64\n");
    has(text, "requests/s            40.00      48.00 (  +20.0% better)\n");
    free(text);
    /* In colour (a terminal without NO_COLOR): green better, red worse. */
    f = open_memstream(&text, &len);
    assert_int_equal(gm_bench_print_compare(f, docs, 2, true, 80, &err), GM_OK);
    fclose(f);
    has(text, "12.00 \033[32m(  +20.0% better)\033[0m\n");
    has(text, "1.500 \033[31m(  -25.0%  worse)\033[0m\n");
    free(text);
    /* Asked to do different things: said first, and no change is better or worse. */
    json_object_set_new(a, "config",
                        json_pack("{s:i, s:i}", "requests", 500, "output_tokens", 128));
    json_object_set_new(b, "config",
                        json_pack("{s:i, s:i}", "requests", 100, "output_tokens", 128));
    json_object_set_new(b, "url", json_string("http://y:8000"));
    f = open_memstream(&text, &len);
    assert_int_equal(gm_bench_print_compare(f, docs, 2, true, 80, &err), GM_OK);
    fclose(f);
    has(text, "The settings differ, so the changes are not better or worse:\n"
              "  requests: A 500 B 100\n  server: A http://x:8000 B http://y:8000\n");
    has(text, "requests/s            10.00      12.00 (  +20.0%       )\n");
    assert_null(strstr(text, "better)"));
    assert_null(strstr(text, "\033["));
    free(text);
    json_t *cj = gm_bench_compare_json(docs, 2, &err);
    json_t *sd = json_object_get(cj, "settings_differ");
    assert_int_equal(json_array_size(sd), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(sd, 0), "setting")),
                        "requests");
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(json_array_get(sd, 0), "values"), 1)),
        100);
    json_decref(cj);
    json_t *j = gm_bench_compare_json(docs, 2, &err);
    assert_non_null(j);
    json_t *p0 = json_array_get(json_object_get(j, "points"), 0);
    assert_string_equal(json_string_value(json_object_get(p0, "load")), "concurrency 8");
    json_t *rps = json_object_get(json_object_get(p0, "values"), "requests_per_s");
    assert_float_equal(json_real_value(json_array_get(rps, 1)), 12, 1e-12);
    json_t *ch = json_object_get(json_object_get(p0, "change_percent"), "ttft_ms.p50");
    assert_float_equal(json_real_value(json_array_get(ch, 1)), 0, 1e-12);
    assert_true(json_is_null(json_array_get(ch, 0)) || json_real_value(json_array_get(ch, 0)) == 0);
    json_decref(j);
    /* Not comparable: one benchmark, or a session among them. */
    assert_int_equal(gm_bench_print_compare(stdout, docs, 1, false, 80, &err), GM_EINVAL);
    json_object_set_new(b, "kind", json_string("record"));
    assert_int_equal(gm_bench_print_compare(stdout, docs, 2, false, 80, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "B2 is not a benchmark"));
    assert_null(gm_bench_compare_json(docs, 2, &err));
    json_decref(a);
    json_decref(b);
}

static void test_csv_has_every_statistic(void **state)
{
    (void)state;
    json_t *d = doc_with("A1", 10, 2);
    json_t *p0 = json_array_get(json_object_get(d, "points"), 0);
    json_object_set_new(p0, "ttft_ms",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i}", "mean", 50.5,
                                  "std", 3.0, "min", 40.0, "p50", 48.0, "p90", 60.0, "p95", 70.25,
                                  "p99", 80.0, "max", 90.0, "count", 98));
    json_object_set_new(p0, "invalid_reasons",
                        json_pack("[s, s]", "foreign_process: pid 7 (say \"hi\") on GPU 0",
                                  "throttled: GPU 0 hw_slowdown"));
    char *t = render(gm_bench_print_csv, d);
    has(t, "point,load,concurrency,request_rate,requests,completed,failed,duration_s,");
    has(t, ",ttft_mean_ms,ttft_std_ms,ttft_min_ms,ttft_p50_ms,ttft_p90_ms,ttft_p95_ms,"
           "ttft_p99_ms,ttft_max_ms,ttft_count,tpot_mean_ms,");
    has(t, ",e2e_from_schedule_count,goodput_requests_per_s,energy_j,");
    has(t, ",valid,invalid_reasons\n");
    has(t, "\n0,concurrency 8,8,,100,98,2,10,");
    has(t, ",50.5,3,40,48,60,70.25,80,90,98,10,");
    has(t, ",0,\"foreign_process: pid 7 (say \"\"hi\"\") on GPU 0; throttled: GPU 0 "
           "hw_slowdown\"\n");
    has(t, "\n1,concurrency 64,64,");
    /* As many fields in every line as in the header. */
    size_t fields[3] = {0};
    int line = 0;
    bool quoted = false;
    for (const char *c = t; *c && line < 3; c++) {
        if (*c == '"')
            quoted = !quoted;
        else if (*c == ',' && !quoted)
            fields[line]++;
        else if (*c == '\n')
            line++;
    }
    assert_int_equal(fields[1], fields[0]);
    assert_int_equal(fields[2], fields[0]);
    free(t);
    json_decref(d);
}

static void test_validity_and_load(void **state)
{
    (void)state;
    json_t *p = json_object();
    gm_bench_point_set_validity(p, json_array());
    assert_true(json_is_true(json_object_get(p, "valid")));
    gm_bench_point_set_validity(p, json_pack("[s]", "client_saturated: x"));
    assert_true(json_is_false(json_object_get(p, "valid")));
    assert_int_equal(json_array_size(json_object_get(p, "invalid_reasons")), 1);
    char load[64];
    json_object_set_new(p, "request_rate", json_real(2.5));
    gm_bench_point_load(p, load, sizeof load);
    assert_string_equal(load, "rate 2.5/s");
    json_object_set_new(p, "request_rate", json_string("inf"));
    gm_bench_point_load(p, load, sizeof load);
    assert_string_equal(load, "rate inf");
    json_decref(p);
}

/* bench --snapshot's verdict in one line, and that line under each point's "Valid:". */
static void test_audit_text(void **state)
{
    (void)state;
    char line[512];
    gm_bench_audit_text(NULL, line, sizeof line);
    assert_string_equal(line, "");
    json_t *same = json_pack("{s:s, s:[]}", "verdict", "unchanged", "changes");
    gm_bench_audit_text(same, line, sizeof line);
    assert_string_equal(line, "Machine unchanged during the run");
    json_t *changed = json_pack(
        "{s:s, s:[{s:s, s:i, s:i, s:i, s:s}, {s:s, s:n, s:s, s:s, s:s}]}", "verdict", "changed",
        "changes", "what", "power_limit_w", "gpu", 0, "before", 700, "after", 600, "message",
        "GPU 0 power limit 700 W -> 600 W", "what", "driver_version", "gpu", "before", "550.54",
        "after", "560.28", "message", "driver 550.54 -> 560.28");
    gm_bench_audit_text(changed, line, sizeof line);
    assert_string_equal(line, "Machine changed during the run: GPU 0 power limit 700 W -> 600 W, "
                              "driver 550.54 -> 560.28");
    /* Cut to the buffer, never past it. */
    char small[20];
    gm_bench_audit_text(changed, small, sizeof small);
    assert_string_equal(small, "Machine changed dur");
    json_t *unknown = json_pack("{s:s, s:s, s:[]}", "verdict", "unknown", "reason",
                                "no GPU was sampled", "changes");
    gm_bench_audit_text(unknown, line, sizeof line);
    assert_string_equal(line, "Machine state unknown: no GPU was sampled");

    /* The report: the line right under "Valid:" of every point. */
    json_error_t je;
    json_t *pt = json_loads(point_a, 0, &je);
    assert_non_null(pt);
    json_t *doc = json_pack("{s:s, s:s, s:[O, O], s:O}", "id", "b1", "kind", "bench", "points", pt,
                            pt, "audit", changed);
    char *text = render(gm_bench_print_report, doc);
    const char *at = text;
    int seen = 0;
    while ((at = strstr(at, "Valid:"))) {
        const char *next = strstr(strchr(at, '\n') + 1, "  throttled: GPU 0 hw_thermal_slowdown\n");
        assert_non_null(next);
        const char *want = "Machine changed during the run: GPU 0 power limit 700 W";
        assert_true(strncmp(next + strlen("  throttled: GPU 0 hw_thermal_slowdown\n"), want,
                            strlen(want)) == 0);
        seen++;
        at++;
    }
    assert_int_equal(seen, 2);
    free(text);
    /* A point printed alone (as the run goes) has no such line. */
    text = render(gm_bench_print_point, pt);
    assert_null(strstr(text, "Machine"));
    free(text);
    json_decref(doc);
    json_decref(pt);
    json_decref(same);
    json_decref(changed);
    json_decref(unknown);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_block),       cmocka_unit_test(test_report_and_table),
        cmocka_unit_test(test_compare),           cmocka_unit_test(test_csv_has_every_statistic),
        cmocka_unit_test(test_validity_and_load), cmocka_unit_test(test_audit_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
