/* test_bench_run.c - the benchmark's options set by long name (gm_bench_config_set): what the
 * CLI's getopt loop and the daemon's job API both call, with the CLI's messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <string.h>

#include "core/bench_run.h"

static void test_defaults(void **state)
{
    (void)state;
    gm_bench_config c;
    gm_bench_config_init(&c);
    gm_error err = {0};
    assert_int_equal(gm_bench_config_finish(&c, false, &err), GM_EINVAL);
    assert_string_equal(err.msg, "--url or --image is required");
    assert_int_equal(gm_bench_config_set(&c, "url", "http://127.0.0.1:8000", &err), GM_OK);
    assert_int_equal(gm_bench_config_finish(&c, false, &err), GM_OK);
    assert_int_equal(c.npoints, 1);
    assert_int_equal(c.conc[0], 1);
    assert_int_equal(c.requests, 1000);
    assert_int_equal(c.input_tokens, 128);
    check_eq(c.idle_s, 2);
    gm_bench_config_free(&c);
}

static void test_values(void **state)
{
    (void)state;
    gm_bench_config c;
    gm_bench_config_init(&c);
    gm_error err = {0};
    assert_int_equal(gm_bench_config_set(&c, "concurrency", "1,8,64", &err), GM_OK);
    assert_int_equal(c.npoints, 3);
    assert_int_equal(c.conc[2], 64);
    assert_false(c.open_loop);
    /* '_' is taken for '-': the JSON body's keys. */
    assert_int_equal(gm_bench_config_set(&c, "request_rate", "2.5,inf", &err), GM_OK);
    assert_true(c.open_loop);
    check_eq(c.rate[0], 2.5);
    assert_true(isinf(c.rate[1]));
    assert_int_equal(gm_bench_config_set(&c, "requests", "20", &err), GM_OK);
    assert_int_equal(c.requests, 20);
    assert_int_equal(gm_bench_config_set(&c, "duration", "5m", &err), GM_OK);
    check_eq(c.duration_s, 300);
    assert_int_equal(gm_bench_config_set(&c, "slo", "ttft=200,e2e=2000", &err), GM_OK);
    assert_int_equal(gm_bench_config_set(&c, "label", "run A", &err), GM_OK);
    assert_string_equal(c.label, "run A");
    assert_int_equal(gm_bench_config_set(&c, "header", "X-A: b", &err), GM_OK);
    assert_int_equal(c.nheaders, 1);
    assert_int_equal(gm_bench_config_set(&c, "no-db", NULL, &err), GM_OK);
    assert_true(c.no_db);
    assert_int_equal(gm_bench_config_set(&c, "gpus", "0,1", &err), GM_OK);
    assert_string_equal(c.gpus, "0,1");
    /* Both loads given: the conflict is found after every option. */
    assert_int_equal(gm_bench_config_set(&c, "url", "http://x", &err), GM_OK);
    assert_int_equal(gm_bench_config_finish(&c, false, &err), GM_EINVAL);
    assert_string_equal(err.msg, "give --concurrency or --request-rate, not both");
    gm_bench_config_free(&c);
}

static void test_messages(void **state)
{
    (void)state;
    static const struct {
        const char *name, *value, *msg;
    } bad[] = {
        {"requests", "x", "--requests expects a whole number from 1 to 1000000, got \"x\""},
        {"requests", "0", "--requests expects a whole number from 1 to 1000000, got \"0\""},
        {"concurrency", "1,,2",
         "--concurrency expects up to 64 comma-separated values, got "
         "\"1,,2\""},
        {"concurrency", "0", "--concurrency expects whole numbers from 1 to 16384, got \"0\""},
        {"concurrency", "4,", "--concurrency \"4,\" ends with a comma"},
        {"request-rate", "-1",
         "--request-rate expects requests per second above 0 (or inf), "
         "got \"-1\""},
        {"api", "grpc", "--api \"grpc\" is not completions or chat"},
        {"model", "", "--model is empty"},
        {"burstiness", "0", "--burstiness expects a number from 0.01 to 100, got \"0\""},
        {"timeout", "soon",
         "--timeout expects a duration from 0.1s to 86400s (such as 90, 0.5, "
         "500ms, 15m, 1h30m), got \"soon\""},
        {"header", "no colon",
         "--header expects 'Name: value' (a token name, no control "
         "characters)"},
        {"gpus", "", "empty GPU list"},
        {"output_tokens", "2000000",
         "--output-tokens expects a whole number from 1 to 1000000, got \"2000000\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gm_bench_config c;
        gm_bench_config_init(&c);
        gm_error err = {0};
        assert_int_equal(gm_bench_config_set(&c, bad[i].name, bad[i].value, &err), GM_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
        gm_bench_config_free(&c);
    }
    gm_bench_config c;
    gm_bench_config_init(&c);
    gm_error err = {0};
    char label[200];
    memset(label, 'a', sizeof label - 1);
    label[sizeof label - 1] = '\0';
    assert_int_equal(gm_bench_config_set(&c, "label", label, &err), GM_EINVAL);
    assert_string_equal(err.msg, "--label is longer than 127 bytes");
    assert_int_equal(gm_bench_config_set(&c, "colour", "red", &err), GM_ENOENT);
    assert_int_equal(gm_bench_config_set(&c, "requests", NULL, &err), GM_EINVAL);
    /* A failed list leaves the earlier one whole. */
    assert_int_equal(gm_bench_config_set(&c, "concurrency", "2,4", &err), GM_OK);
    assert_int_equal(gm_bench_config_set(&c, "concurrency", "8,x", &err), GM_EINVAL);
    assert_int_equal(c.npoints, 2);
    assert_int_equal(c.conc[1], 4);
    gm_bench_config_free(&c);
}

/* --snapshot: a flag on the command line, true/false from a JSON body; its window as record's. */
static void test_snapshot_options(void **state)
{
    (void)state;
    gm_bench_config c;
    gm_bench_config_init(&c);
    gm_error err = {0};
    assert_false(c.snapshot);
    assert_int_equal(c.snapshot_window_ms, 2000);
    assert_int_equal(gm_bench_config_set(&c, "snapshot", NULL, &err), GM_OK);
    assert_true(c.snapshot);
    assert_int_equal(gm_bench_config_set(&c, "snapshot", "false", &err), GM_OK);
    assert_false(c.snapshot);
    assert_int_equal(gm_bench_config_set(&c, "snapshot", "true", &err), GM_OK);
    assert_true(c.snapshot);
    assert_int_equal(gm_bench_config_set(&c, "snapshot", "yes", &err), GM_EINVAL);
    assert_string_equal(err.msg, "--snapshot takes no value (true or false)");
    assert_int_equal(gm_bench_config_set(&c, "snapshot_window_ms", "0", &err), GM_OK);
    assert_int_equal(c.snapshot_window_ms, 0);
    assert_int_equal(gm_bench_config_set(&c, "snapshot-window-ms", "60001", &err), GM_EINVAL);
    assert_string_equal(
        err.msg, "--snapshot-window-ms expects a whole number from 0 to 60000, got \"60001\"");
    gm_bench_config_free(&c);
}

/* Without two snapshots there is no verdict: "unknown" with the reason, never "unchanged". */
static void test_audit_unknown(void **state)
{
    (void)state;
    json_t *a = gm_bench_audit_json(NULL, NULL, "no GPU was sampled, so no snapshot was taken");
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "verdict")), "unknown");
    assert_string_equal(json_string_value(json_object_get(a, "reason")),
                        "no GPU was sampled, so no snapshot was taken");
    assert_int_equal(json_array_size(json_object_get(a, "changes")), 0);
    assert_true(json_is_null(json_object_get(a, "before")));
    assert_true(json_is_null(json_object_get(a, "diff")));
    json_decref(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_values),
        cmocka_unit_test(test_messages),      cmocka_unit_test(test_snapshot_options),
        cmocka_unit_test(test_audit_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
