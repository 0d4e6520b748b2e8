/* test_bench_validity.c - the rules that invalidate a benchmark point, and who counts as the
 * server's process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench_validity.h"

static gm_bench_check clean(void)
{
    gm_bench_check c = {.client_cpu_pct = 12, .lag_p99_ms = 0.2, .ngpus = 2};
    c.gpu_index[0] = 0;
    c.gpu_index[1] = 3;
    return c;
}

static const char *reason(const json_t *a, size_t i)
{
    return json_string_value(json_array_get(a, i));
}

static void test_clean_point_is_valid(void **state)
{
    (void)state;
    gm_bench_check c = clean();
    /* Running at the power limit and idling are not throttling. */
    c.throttle[0] = 0x4 | 0x1;
    json_t *r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 0);
    json_decref(r);
    c.client_cpu_pct = NAN;
    c.lag_p99_ms = NAN;
    r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 0);
    json_decref(r);
}

static void test_throttled(void **state)
{
    (void)state;
    gm_bench_check c = clean();
    c.throttle[1] = 0x40 | 0x80 | 0x4;
    json_t *r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 1);
    assert_string_equal(reason(r, 0),
                        "throttled: GPU 3 hw_thermal_slowdown hw_power_brake_slowdown");
    json_decref(r);
    c.throttle[0] = 0x8;
    c.throttle[1] = 0x20;
    r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 2);
    assert_string_equal(reason(r, 0), "throttled: GPU 0 hw_slowdown");
    assert_string_equal(reason(r, 1), "throttled: GPU 3 sw_thermal_slowdown");
    json_decref(r);
    assert_string_equal(gm_bench_throttle_name(0x4), "sw_power_cap");
    assert_null(gm_bench_throttle_name(0x200));
}

static void test_client_saturated(void **state)
{
    (void)state;
    gm_bench_check c = clean();
    c.client_cpu_pct = 90;
    c.lag_p99_ms = 1.5;
    json_t *r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 2);
    assert_non_null(strstr(reason(r, 0), "client_saturated: the client used 90 %"));
    assert_non_null(strstr(reason(r, 1), "client_saturated: requests were sent late"));
    assert_non_null(strstr(reason(r, 1), "1.500 ms"));
    json_decref(r);
    c.client_cpu_pct = 89.9;
    c.lag_p99_ms = 1.0; /* at the limit is fine */
    r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 0);
    json_decref(r);
}

static void test_usage_distrusted(void **state)
{
    (void)state;
    gm_bench_check c = clean();
    c.usage_distrusted = 6;
    c.completed = 6;
    c.usage_claimed = 1000000000000ULL;
    c.usage_chunks = 4;
    c.usage_asked = 4;
    json_t *r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 1);
    assert_string_equal(reason(r, 0),
                        "usage_distrusted: 6 of 6 completed requests reported output tokens the "
                        "stream contradicts (the first: 1000000000000 tokens for 4 content "
                        "chunks, 4 asked); counted from the chunks instead");
    json_decref(r);
}

static void test_foreign_processes(void **state)
{
    (void)state;
    gm_bench_check c = clean();
    gm_bench_foreign f[2] = {{.gpu = 0, .pid = 777, .command = "python train.py"},
                             {.gpu = 3, .pid = 778, .command = ""}};
    c.foreign = f;
    c.nforeign = 2;
    c.foreign_total = 5;
    json_t *r = gm_bench_check_reasons(&c);
    assert_int_equal(json_array_size(r), 3);
    assert_string_equal(reason(r, 0), "foreign_process: pid 777 (python train.py) on GPU 0");
    assert_string_equal(reason(r, 1), "foreign_process: pid 778 on GPU 3");
    assert_string_equal(reason(r, 2), "foreign_process: 3 more");
    json_decref(r);
}

/* A process tree: 10 <- 11 <- 12 (the server's workers), 20 <- 21 (someone else), 30 unknown. */
static bool parents(void *arg, uint32_t pid, uint32_t *ppid)
{
    int *calls = arg;
    (*calls)++;
    switch (pid) {
    case 11:
        *ppid = 10;
        return true;
    case 12:
        *ppid = 11;
        return true;
    case 21:
        *ppid = 20;
        return true;
    case 10:
    case 20:
        *ppid = 1;
        return true;
    case 1:
        *ppid = 0;
        return true;
    default:
        return false;
    }
}

static void test_simulated_processes_are_not_judged(void **state)
{
    (void)state;
    assert_false(gm_bench_provider_judged("sim"));
    assert_true(gm_bench_provider_judged("nvml"));
    assert_true(gm_bench_provider_judged("nvidia-smi"));
}

static void test_server_processes(void **state)
{
    (void)state;
    gm_bench_pidset *base = calloc(1, sizeof *base), *server = calloc(1, sizeof *server),
                    *foreign = calloc(1, sizeof *foreign);
    gm_bench_pidset_add(base, 10);
    gm_bench_pidset_add(base, 10);
    assert_int_equal(base->n, 1);
    int calls = 0;
    assert_true(gm_bench_is_server_process(base, server, foreign, 10, parents, &calls));
    assert_int_equal(calls, 0);
    assert_true(gm_bench_is_server_process(base, server, foreign, 12, parents, &calls));
    assert_true(gm_bench_pidset_has(server, 12));
    assert_false(gm_bench_is_server_process(base, server, foreign, 21, parents, &calls));
    assert_false(gm_bench_is_server_process(base, server, foreign, 30, parents, &calls));
    assert_true(gm_bench_pidset_has(foreign, 21) && gm_bench_pidset_has(foreign, 30));
    /* Answers are remembered: no more /proc reads for them. */
    int before = calls;
    assert_true(gm_bench_is_server_process(base, server, foreign, 12, parents, &calls));
    assert_false(gm_bench_is_server_process(base, server, foreign, 21, parents, &calls));
    assert_int_equal(calls, before);
    /* Without a way to read parents, only the first processes are the server's. */
    assert_false(gm_bench_is_server_process(base, NULL, NULL, 11, NULL, NULL));
    free(base);
    free(server);
    free(foreign);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_point_is_valid),
        cmocka_unit_test(test_throttled),
        cmocka_unit_test(test_client_saturated),
        cmocka_unit_test(test_foreign_processes),
        cmocka_unit_test(test_server_processes),
        cmocka_unit_test(test_usage_distrusted),
        cmocka_unit_test(test_simulated_processes_are_not_judged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
