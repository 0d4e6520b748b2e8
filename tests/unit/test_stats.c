/* test_stats.c - streaming statistics and percentiles against hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdlib.h>

#include "core/stats.h"

static void test_one_to_hundred(void **state)
{
    gm_stats s;
    gm_stats_init(&s);
    double v[100];
    for (int i = 0; i < 100; i++) {
        gm_stats_add(&s, i + 1);
        v[i] = i + 1;
    }
    assert_int_equal(s.count, 100);
    assert_int_equal(s.missing, 0);
    check_eq(s.min, 1);
    check_eq(s.max, 100);
    check_eq(s.sum, 5050);
    assert_float_equal(s.mean, 50.5, 1e-12);
    /* Population variance of 1..n is (n^2 - 1) / 12. */
    assert_float_equal(gm_stats_variance(&s), 9999.0 / 12.0, 1e-9);
    assert_float_equal(gm_stats_stddev(&s), sqrt(9999.0 / 12.0), 1e-9);

    /* numpy.percentile(range(1, 101), [0, 25, 50, 95, 99, 100]) */
    assert_float_equal(gm_stats_percentile(v, 100, 0), 1.0, 1e-12);
    assert_float_equal(gm_stats_percentile(v, 100, 25), 25.75, 1e-9);
    assert_float_equal(gm_stats_percentile(v, 100, 50), 50.5, 1e-9);
    assert_float_equal(gm_stats_percentile(v, 100, 95), 95.05, 1e-9);
    assert_float_equal(gm_stats_percentile(v, 100, 99), 99.01, 1e-9);
    assert_float_equal(gm_stats_percentile(v, 100, 100), 100.0, 1e-12);
}

static void test_single_value(void **state)
{
    gm_stats s;
    gm_stats_init(&s);
    gm_stats_add(&s, 5);
    assert_int_equal(s.count, 1);
    check_eq(s.min, 5);
    check_eq(s.max, 5);
    check_eq(s.mean, 5);
    check_eq(s.sum, 5);
    check_eq(gm_stats_variance(&s), 0);
    double v[] = {5};
    check_eq(gm_stats_percentile(v, 1, 50), 5);
    check_eq(gm_stats_percentile(v, 1, 95), 5);
    check_eq(gm_stats_percentile(v, 1, 0), 5);
    check_eq(gm_stats_percentile(v, 1, 100), 5);
}

static void test_empty_is_nan_not_zero(void **state)
{
    gm_stats s;
    gm_stats_init(&s);
    assert_int_equal(s.count, 0);
    assert_true(isnan(s.min) && isnan(s.max) && isnan(s.mean));
    assert_true(isnan(gm_stats_variance(&s)));
    double v[] = {1, 2};
    assert_true(isnan(gm_stats_percentile(v, 0, 50)));
    assert_true(isnan(gm_stats_percentile(NULL, 2, 50)));
    assert_true(isnan(gm_stats_percentile(v, 2, -1)));
    assert_true(isnan(gm_stats_percentile(v, 2, 100.5)));
    assert_true(isnan(gm_stats_percentile(v, 2, NAN)));
}

static void test_nan_is_missing(void **state)
{
    gm_stats s;
    gm_stats_init(&s);
    double v[] = {NAN, 1, NAN, 3, INFINITY, 2};
    for (size_t i = 0; i < 6; i++)
        gm_stats_add(&s, v[i]);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.missing, 3);
    check_eq(s.min, 1);
    check_eq(s.max, 3);
    check_eq(s.sum, 6);
    assert_float_equal(s.mean, 2.0, 1e-12);
    assert_float_equal(gm_stats_variance(&s), 2.0 / 3.0, 1e-12);

    size_t n = gm_stats_sort(v, 6);
    assert_int_equal(n, 3);
    check_eq(v[0], 1);
    check_eq(v[1], 2);
    check_eq(v[2], 3);
    assert_float_equal(gm_stats_percentile(v, n, 50), 2.0, 1e-12);
    assert_float_equal(gm_stats_percentile(v, n, 95), 2.9, 1e-12);
}

static void test_large_offset_is_stable(void **state)
{
    /* Deviations -6, -3, 3, 6 from 1e9 + 10: sum of squares 90, population variance 22.5. A naive
     * sum-of-squares formula loses this entirely (1e18 has an ulp of 128). */
    gm_stats s;
    gm_stats_init(&s);
    const double d[] = {4, 7, 13, 16};
    for (int rep = 0; rep < 1000; rep++)
        for (int i = 0; i < 4; i++)
            gm_stats_add(&s, 1e9 + d[i]);
    assert_int_equal(s.count, 4000);
    assert_float_equal(s.mean, 1e9 + 10, 1e-6);
    assert_float_equal(gm_stats_variance(&s), 22.5, 1e-6);
    check_eq(s.min, 1e9 + 4);
    check_eq(s.max, 1e9 + 16);

    double v[] = {1e9 + 16, 1e9 + 4, 1e9 + 13, 1e9 + 7};
    size_t n = gm_stats_sort(v, 4);
    /* h = 3 * 0.5 = 1.5: halfway between 1e9+7 and 1e9+13. */
    assert_float_equal(gm_stats_percentile(v, n, 50), 1e9 + 10, 1e-6);
}

static void test_merge_matches_single_pass(void **state)
{
    gm_stats all, a, b;
    gm_stats_init(&all);
    gm_stats_init(&a);
    gm_stats_init(&b);
    for (int i = 1; i <= 100; i++) {
        gm_stats_add(&all, i * 1.5);
        gm_stats_add(i <= 30 ? &a : &b, i * 1.5);
    }
    gm_stats_add(&b, NAN);
    gm_stats_merge(&a, &b);
    assert_int_equal(a.count, all.count);
    assert_int_equal(a.missing, 1);
    check_eq(a.min, all.min);
    check_eq(a.max, all.max);
    assert_float_equal(a.sum, all.sum, 1e-9);
    assert_float_equal(a.mean, all.mean, 1e-9);
    assert_float_equal(gm_stats_variance(&a), gm_stats_variance(&all), 1e-9);

    /* Merging into an empty accumulator copies. */
    gm_stats e;
    gm_stats_init(&e);
    gm_stats_merge(&e, &all);
    assert_float_equal(e.mean, all.mean, 1e-12);
    assert_int_equal(e.count, 100);
}

static void test_values_store_percentiles(void **state)
{
    gm_values vs;
    gm_values_init(&vs);
    gm_error err = {0};
    assert_true(isnan(gm_values_percentile(&vs, 50)));
    /* Descending with gaps, more than the initial capacity. */
    for (int i = 1000; i >= 1; i--) {
        assert_int_equal(gm_values_add(&vs, i, &err), GM_OK);
        if (i % 7 == 0)
            assert_int_equal(gm_values_add(&vs, NAN, &err), GM_OK);
    }
    assert_int_equal(vs.n, 1000);
    /* numpy.percentile(range(1, 1001), 50) = 500.5, 95 -> 950.05 */
    assert_float_equal(gm_values_percentile(&vs, 50), 500.5, 1e-9);
    assert_float_equal(gm_values_percentile(&vs, 95), 950.05, 1e-9);

    /* Adding after a percentile re-sorts. */
    assert_int_equal(gm_values_add(&vs, 0, &err), GM_OK);
    assert_float_equal(gm_values_percentile(&vs, 0), 0.0, 1e-12);
    assert_float_equal(gm_values_percentile(&vs, 100), 1000.0, 1e-12);
    gm_values_free(&vs);
    assert_null(vs.v);
    assert_int_equal(vs.n, 0);
}

static void test_sort_shuffled(void **state)
{
    double v[100];
    for (int i = 0; i < 100; i++)
        v[i] = i + 1;
    /* A fixed permutation: deterministic, no clock-seeded randomness. */
    unsigned x = 12345;
    for (int i = 99; i > 0; i--) {
        x = x * 1103515245u + 12345u;
        int j = (int)((x >> 8) % (unsigned)(i + 1));
        double t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
    size_t n = gm_stats_sort(v, 100);
    assert_int_equal(n, 100);
    for (int i = 0; i < 100; i++)
        check_eq(v[i], i + 1);
    assert_float_equal(gm_stats_percentile(v, n, 95), 95.05, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_to_hundred),
        cmocka_unit_test(test_single_value),
        cmocka_unit_test(test_empty_is_nan_not_zero),
        cmocka_unit_test(test_nan_is_missing),
        cmocka_unit_test(test_large_offset_is_stable),
        cmocka_unit_test(test_merge_matches_single_pass),
        cmocka_unit_test(test_values_store_percentiles),
        cmocka_unit_test(test_sort_shuffled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
