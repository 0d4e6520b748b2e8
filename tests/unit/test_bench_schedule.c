/* test_bench_schedule.c - the seeded arrival schedule: the same for a seed, the right mean
 * rate, the spread its burstiness asks for, and absolute offsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdbool.h>

#include "core/bench_schedule.h"

static void test_same_seed_same_schedule(void **state)
{
    (void)state;
    gm_bench_schedule a, b, c;
    gm_bench_schedule_init(&a, 10, 1, 42);
    gm_bench_schedule_init(&b, 10, 1, 42);
    gm_bench_schedule_init(&c, 10, 1, 43);
    bool differs = false;
    double prev = -1;
    for (int i = 0; i < 1000; i++) {
        double x = gm_bench_schedule_next(&a), y = gm_bench_schedule_next(&b);
        double z = gm_bench_schedule_next(&c);
        check_eq(x, y);
        differs |= x != z;
        check_ge(x, prev); /* offsets from the start, never going back */
        prev = x;
        if (i == 0)
            check_eq(x, 0); /* the first request goes at once */
    }
    assert_true(differs);
}

/* Mean and coefficient of variation of n gaps. */
static void gaps(double rate, double burstiness, int n, double *mean, double *cv)
{
    gm_bench_schedule s;
    gm_bench_schedule_init(&s, rate, burstiness, 7);
    double prev = gm_bench_schedule_next(&s), sum = 0, sq = 0;
    for (int i = 0; i < n; i++) {
        double t = gm_bench_schedule_next(&s), g = t - prev;
        prev = t;
        sum += g;
        sq += g * g;
    }
    *mean = sum / n;
    *cv = sqrt(sq / n - *mean * *mean) / *mean;
}

static void test_rate_and_burstiness(void **state)
{
    (void)state;
    double mean, cv;
    /* Poisson: exponential gaps, mean 1/rate, CV 1. */
    gaps(20, 1, 200000, &mean, &cv);
    assert_float_equal(mean, 0.05, 0.05 * 0.01);
    assert_float_equal(cv, 1, 0.02);
    /* Gamma shape k: CV 1/sqrt(k); the mean stays 1/rate. */
    gaps(100, 4, 200000, &mean, &cv);
    assert_float_equal(mean, 0.01, 0.01 * 0.01);
    assert_float_equal(cv, 0.5, 0.01);
    gaps(5, 0.25, 200000, &mean, &cv);
    assert_float_equal(mean, 0.2, 0.2 * 0.02);
    assert_float_equal(cv, 2, 0.06);
}

static void test_infinite_rate(void **state)
{
    (void)state;
    gm_bench_schedule s;
    gm_bench_schedule_init(&s, INFINITY, 1, 1);
    for (int i = 0; i < 100; i++)
        check_eq(gm_bench_schedule_next(&s), 0);
}

static void test_uniform_and_gamma_are_sane(void **state)
{
    (void)state;
    gm_bench_rng r;
    gm_bench_rng_seed(&r, 0);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = gm_bench_rng_uniform(&r);
        check_gt(u, 0);
        check_lt(u, 1);
        sum += u;
    }
    assert_float_equal(sum / 100000, 0.5, 0.005);
    /* Gamma(k, theta) has mean k * theta. */
    sum = 0;
    for (int i = 0; i < 100000; i++) {
        double g = gm_bench_rng_gamma(&r, 0.5, 3);
        check_ge(g, 0);
        assert_true(isfinite(g));
        sum += g;
    }
    assert_float_equal(sum / 100000, 1.5, 0.03);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_schedule),
        cmocka_unit_test(test_rate_and_burstiness),
        cmocka_unit_test(test_infinite_rate),
        cmocka_unit_test(test_uniform_and_gamma_are_sane),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
