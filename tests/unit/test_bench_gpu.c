/* test_bench_gpu.c - core/bench_gpu over the fake NVML: each point's energy is the counter's
 * increase between its first and last sample (not the counter's value), a process appearing on
 * a benchmarked GPU and throttled clocks are noticed in the point they happen in, and samples
 * come every interval on the sampling thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/bench_gpu.h"
#include "core/bench_report.h"

static char scenario[4096];

static gm_collector *open_fake(const char *json)
{
    const char *lib = getenv("GM_FAKE_NVML");
    if (!lib)
        fail_msg("GM_FAKE_NVML is not set (run through ctest)");
    snprintf(scenario, sizeof scenario, "/tmp/gm-bench-gpu-%d.json", (int)getpid());
    FILE *f = fopen(scenario, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    setenv("GM_FAKE_NVML_SCENARIO", scenario, 1);
    gm_collector_options o = {.provider = "nvml",
                              .nvml_lib = lib,
                              .no_host = true,
                              .no_first_cpu_wait = true,
                              .slow_period_ms = -1};
    gm_collector *c = NULL;
    gm_error err = {0};
    if (gm_collector_open(&o, &c, &err) < 0)
        fail_msg("open: %s", err.msg);
    return c;
}

/* Reads, numbered from the first sample (gm_bench_gpu_start's): 0 start, 1-2 point one,
 * 3-4 point two. A process appears at read 3; GPU 1's clocks are thermally throttled at read 4;
 * GPU 0 runs at its power cap throughout (not an invalidating reason). */
static const char *const two_points =
    "{\"gpus\": ["
    " {\"name\": \"NVIDIA H100 80GB HBM3\", \"util_gpu\": [0, 50, 90, 70, 95],"
    "  \"util_mem\": 10, \"mem_total\": 85899345920, \"mem_used\": 1073741824,"
    "  \"temp\": 40, \"power_mw\": [70000, 300000, 500000, 400000, 600000],"
    "  \"energy_mj\": [9000000000, 9000100000, 9000600000, 9000700000, 9001900000],"
    "  \"throttle\": 4,"
    "  \"processes\": [{\"pid\": 5000001, \"used_mem\": 1048576},"
    "                  {\"pid\": 5000002, \"used_mem\": 1048576, \"from_read\": 3}]},"
    " {\"name\": \"NVIDIA H100 80GB HBM3\", \"util_gpu\": 5, \"util_mem\": 1,"
    "  \"mem_total\": 85899345920, \"mem_used\": 1073741824, \"temp\": 35,"
    "  \"power_mw\": 60000, \"energy_mj\": [1000, 2000, 3000, 4000, 5000],"
    "  \"throttle\": [0, 0, 0, 0, 64]}"
    "]}";

static void test_energy_and_validity_per_point(void **state)
{
    (void)state;
    gm_collector *c = open_fake(two_points);
    gm_bench_gpu *g = NULL;
    gm_error err = {0};
    /* A long interval: each point has exactly its first and last sample. */
    gm_bench_gpu_options o = {.collector = c, .interval_s = 3600};
    assert_int_equal(gm_bench_gpu_start(&o, &g, &err), GM_OK);
    unsigned idx[GM_MAX_GPUS];
    assert_int_equal(gm_bench_gpu_indices(g, idx), 2);
    assert_int_equal(gm_bench_gpu_first(g)->gpu_count, 2);

    gm_bench_gpu_point p1, p2;
    assert_int_equal(gm_bench_gpu_begin(g, "one", &err), GM_OK);
    assert_int_equal(gm_bench_gpu_begin(g, "again", &err), GM_ESTATE);
    assert_int_equal(gm_bench_gpu_end(g, &p1, &err), GM_OK);
    assert_int_equal(gm_bench_gpu_end(g, &p2, &err), GM_ESTATE);
    assert_int_equal(gm_bench_gpu_begin(g, "two", &err), GM_OK);
    assert_int_equal(gm_bench_gpu_end(g, &p2, &err), GM_OK);

    /* Point one: GPU 0 9000600 - 9000100 = 500 J, GPU 1 1 J. */
    assert_int_equal(gm_session_sample_count(p1.session), 2);
    json_t *pt = json_pack("{s:i, s:i}", "output_tokens", 1002, "completed", 3);
    assert_int_equal(gm_bench_point_add_gpu(pt, p1.session, 130.0, 0), GM_OK);
    assert_float_equal(json_real_value(json_object_get(pt, "energy_j")), 501.0, 1e-9);
    assert_string_equal(json_string_value(json_object_get(pt, "energy_source")), "counter");
    assert_float_equal(json_real_value(json_object_get(pt, "output_tokens_per_joule")), 2.0, 1e-12);
    assert_float_equal(json_real_value(json_object_get(pt, "joules_per_request")), 167.0, 1e-9);
    json_t *mon = json_object_get(pt, "gpu_monitoring");
    assert_int_equal(json_integer_value(json_object_get(mon, "sample_count")), 2);
    json_t *g0 = json_object_get(json_object_get(mon, "gpu_stats"), "0");
    assert_float_equal(
        json_real_value(json_object_get(json_object_get(g0, "power_draw_w"), "mean")), 400, 1e-9);
    assert_float_equal(json_real_value(json_object_get(g0, "energy_j")), 500, 1e-9);
    json_decref(pt);
    json_t *r1 = gm_bench_check_reasons(&p1.check);
    assert_int_equal(json_array_size(r1), 0); /* power cap only, no new process */
    json_decref(r1);

    /* Point two: 1200 J + 1 J; the process from read 3 and GPU 1's thermal slowdown. */
    pt = json_pack("{s:i, s:i}", "output_tokens", 1201, "completed", 1);
    gm_bench_point_add_gpu(pt, p2.session, NAN, 0);
    assert_float_equal(json_real_value(json_object_get(pt, "energy_j")), 1201.0, 1e-9);
    assert_float_equal(json_real_value(json_object_get(pt, "output_tokens_per_joule")), 1.0, 1e-12);
    assert_true(json_is_null(json_object_get(pt, "idle_power_w")));
    assert_true(json_is_null(json_object_get(pt, "energy_above_idle_j")));
    json_decref(pt);
    assert_int_equal(p2.check.nforeign, 1);
    assert_int_equal(p2.check.foreign[0].pid, 5000002);
    assert_int_equal(p2.check.foreign[0].gpu, 0);
    assert_int_equal(p2.check.throttle[1], 64);
    json_t *r2 = gm_bench_check_reasons(&p2.check);
    assert_int_equal(json_array_size(r2), 2);
    assert_string_equal(json_string_value(json_array_get(r2, 0)),
                        "foreign_process: pid 5000002 on GPU 0");
    assert_string_equal(json_string_value(json_array_get(r2, 1)),
                        "throttled: GPU 1 hw_thermal_slowdown");
    json_decref(r2);
    gm_bench_gpu_point_free(&p1);
    gm_bench_gpu_point_free(&p2);
    gm_bench_gpu_free(g);
    gm_collector_close(c);
    unlink(scenario);
}

static void test_only_the_gpus_asked_for(void **state)
{
    (void)state;
    gm_collector *c = open_fake(two_points);
    gm_bench_gpu *g = NULL;
    gm_error err = {0};
    unsigned one = 1;
    gm_bench_gpu_options o = {.collector = c, .gpus = &one, .ngpus = 1, .interval_s = 3600};
    assert_int_equal(gm_bench_gpu_start(&o, &g, &err), GM_OK);
    gm_bench_gpu_point p;
    gm_bench_gpu_begin(g, NULL, &err);
    gm_bench_gpu_end(g, &p, &err);
    gm_bench_gpu_begin(g, NULL, &err);
    gm_bench_gpu_point_free(&p);
    gm_bench_gpu_end(g, &p, &err);
    /* GPU 0's new process is not on a benchmarked GPU. */
    assert_int_equal(p.check.nforeign, 0);
    assert_int_equal(p.check.ngpus, 1);
    assert_int_equal(gm_session_gpu_count(p.session), 1);
    json_t *pt = json_pack("{s:i, s:i}", "output_tokens", 10, "completed", 1);
    gm_bench_point_add_gpu(pt, p.session, NAN, 0);
    assert_float_equal(json_real_value(json_object_get(pt, "energy_j")), 1.0, 1e-9);
    json_decref(pt);
    gm_bench_gpu_point_free(&p);
    gm_bench_gpu_free(g);
    gm_collector_close(c);
    unlink(scenario);
}

static void test_samples_every_interval(void **state)
{
    (void)state;
    gm_collector *c = open_fake("{\"gpus\": [{\"util_gpu\": 1, \"util_mem\": 1, \"power_mw\": "
                                "100000}]}");
    gm_bench_gpu *g = NULL;
    gm_error err = {0};
    gm_bench_gpu_options o = {.collector = c, .interval_s = 0.05};
    assert_int_equal(gm_bench_gpu_start(&o, &g, &err), GM_OK);
    gm_bench_gpu_point p;
    assert_int_equal(gm_bench_gpu_begin(g, NULL, &err), GM_OK);
    gm_clock_sleep_ms(400);
    assert_int_equal(gm_bench_gpu_end(g, &p, &err), GM_OK);
    size_t n = gm_session_sample_count(p.session);
    /* 1 at the start, about 8 on the grid, 1 at the end; a loaded machine may drop some. */
    if (n < 4 || n > 11)
        fail_msg("%zu samples in 0.4 s at 0.05 s", n);
    /* No energy counter in this scenario: power integrated, and said so. */
    json_t *pt = json_pack("{s:i, s:i}", "output_tokens", 10, "completed", 1);
    gm_bench_point_add_gpu(pt, p.session, NAN, 0);
    assert_string_equal(json_string_value(json_object_get(pt, "energy_source")),
                        "power_integration");
    double dur = gm_session_duration(p.session);
    assert_float_equal(json_real_value(json_object_get(pt, "energy_j")), 100 * dur, 100 * 0.05);
    json_decref(pt);
    gm_bench_gpu_point_free(&p);
    gm_bench_gpu_free(g);
    gm_collector_close(c);
    unlink(scenario);
}

/* bench --image: the server starts after sampling begins, so the processes already on the GPUs
 * are not its; the container's first process, named later, and what it starts are. */
static void test_server_started_later(void **state)
{
    (void)state;
    gm_collector *c = open_fake(two_points);
    gm_bench_gpu *g = NULL;
    gm_error err = {0};
    gm_bench_gpu_options o = {
        .collector = c, .interval_s = 3600, .procfs_root = "/nonexistent", .server_later = true};
    assert_int_equal(gm_bench_gpu_start(&o, &g, &err), GM_OK);
    assert_int_equal(gm_bench_gpu_add_server(g, 0, &err), GM_EINVAL);
    gm_bench_gpu_point p1, p2;
    assert_int_equal(gm_bench_gpu_begin(g, "loading", &err), GM_OK);
    assert_int_equal(gm_bench_gpu_end(g, &p1, &err), GM_OK);
    assert_int_equal(p1.check.nforeign, 1);
    assert_int_equal(p1.check.foreign[0].pid, 5000001);
    /* 5000002 appears at read 3, in the second point, and is the server's. */
    assert_int_equal(gm_bench_gpu_add_server(g, 5000002, &err), GM_OK);
    assert_int_equal(gm_bench_gpu_begin(g, "point", &err), GM_OK);
    assert_int_equal(gm_bench_gpu_end(g, &p2, &err), GM_OK);
    assert_int_equal(p2.check.nforeign, 1);
    assert_int_equal(p2.check.foreign[0].pid, 5000001);
    gm_bench_gpu_point_free(&p1);
    gm_bench_gpu_point_free(&p2);
    gm_bench_gpu_free(g);
    gm_collector_close(c);
    unlink(scenario);
}

/* Simulated GPUs driven by the benchmark: idle while it measures idle power, loaded while a
 * point runs; their processes (made up by the simulator) are never foreign, even when nothing
 * on the GPUs at the start was named the server's. */
static double mean_power(gm_bench_gpu_point *p)
{
    json_t *pt = json_pack("{s:i, s:i}", "output_tokens", 10, "completed", 1);
    assert_int_equal(gm_bench_point_add_gpu(pt, p->session, NAN, 0), GM_OK);
    json_t *stats = json_object_get(json_object_get(pt, "gpu_monitoring"), "gpu_stats");
    double w = 0;
    const char *k;
    json_t *gs;
    json_object_foreach(stats, k, gs)
    {
        w += json_number_value(json_object_get(json_object_get(gs, "power_draw_w"), "mean"));
    }
    json_decref(pt);
    return w;
}

static void test_simulated_gpus_follow_the_benchmark(void **state)
{
    (void)state;
    double load = 0;
    gm_collector_options co = {.simulate = 2,
                               .sim_load = &load,
                               .no_host = true,
                               .no_first_cpu_wait = true,
                               .slow_period_ms = -1};
    gm_collector *c = NULL;
    gm_error err = {0};
    assert_int_equal(gm_collector_open(&co, &c, &err), GM_OK);
    gm_bench_gpu *g = NULL;
    gm_bench_gpu_options o = {
        .collector = c, .interval_s = 0.01, .procfs_root = "/nonexistent", .server_later = true};
    assert_int_equal(gm_bench_gpu_start(&o, &g, &err), GM_OK);
    gm_bench_gpu_point idle, busy;
    assert_int_equal(gm_bench_gpu_begin(g, "idle", &err), GM_OK);
    usleep(100000);
    assert_int_equal(gm_bench_gpu_end(g, &idle, &err), GM_OK);
    load = 0.9;
    assert_int_equal(gm_bench_gpu_begin(g, "point", &err), GM_OK);
    usleep(200000);
    assert_int_equal(gm_bench_gpu_end(g, &busy, &err), GM_OK);
    load = 0;
    assert_int_equal(idle.check.foreign_total, 0);
    assert_int_equal(busy.check.foreign_total, 0);
    double idle_w = mean_power(&idle), busy_w = mean_power(&busy);
    check_eq(idle_w, 140); /* two H100s at 70 W */
    check_gt(busy_w, 2 * idle_w);
    json_t *pt = json_pack("{s:i, s:i}", "output_tokens", 10, "completed", 1);
    assert_int_equal(gm_bench_point_add_gpu(pt, busy.session, idle_w, 0), GM_OK);
    check_gt(json_number_value(json_object_get(pt, "energy_above_idle_j")), 0);
    assert_true(json_is_false(json_object_get(pt, "idle_power_unreliable")));
    /* An idle figure above what the point drew is flagged, never subtracted into a negative. */
    assert_int_equal(gm_bench_point_add_gpu(pt, busy.session, 10 * busy_w, 0), GM_OK);
    assert_true(json_is_null(json_object_get(pt, "energy_above_idle_j")));
    assert_true(json_is_true(json_object_get(pt, "idle_power_unreliable")));
    /* The point's timeline: every sample, from the benchmark's start, for charts. */
    int64_t started = gm_session_started_ms(idle.session);
    assert_int_equal(gm_bench_point_add_timeline(pt, busy.session, started), GM_OK);
    json_t *tl = json_object_get(pt, "gpu_timeline");
    json_t *ts = json_object_get(tl, "t_s");
    assert_int_equal(json_array_size(ts), gm_session_sample_count(busy.session));
    check_ge(json_number_value(json_array_get(ts, 0)), 0.1);
    json_t *w1 = json_object_get(json_object_get(json_object_get(tl, "gpus"), "1"), "power_draw_w");
    assert_int_equal(json_array_size(w1), json_array_size(ts));
    check_gt(json_number_value(json_array_get(w1, json_array_size(w1) - 1)), 300);
    assert_int_equal(gm_bench_point_add_timeline(pt, NULL, started), GM_OK);
    assert_true(json_is_null(json_object_get(pt, "gpu_timeline")));
    json_decref(pt);
    gm_bench_gpu_point_free(&idle);
    gm_bench_gpu_point_free(&busy);
    gm_bench_gpu_free(g);
    gm_collector_close(c);
}

static void test_no_session_means_null_energy(void **state)
{
    (void)state;
    json_t *pt = json_pack("{s:i, s:i}", "output_tokens", 10, "completed", 1);
    assert_int_equal(gm_bench_point_add_gpu(pt, NULL, 50, 0), GM_OK);
    assert_true(json_is_null(json_object_get(pt, "energy_j")));
    assert_true(json_is_null(json_object_get(pt, "gpu_monitoring")));
    assert_true(json_is_null(json_object_get(pt, "output_tokens_per_joule")));
    json_decref(pt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_and_validity_per_point),
        cmocka_unit_test(test_only_the_gpus_asked_for),
        cmocka_unit_test(test_samples_every_interval),
        cmocka_unit_test(test_server_started_later),
        cmocka_unit_test(test_simulated_gpus_follow_the_benchmark),
        cmocka_unit_test(test_no_session_means_null_energy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
