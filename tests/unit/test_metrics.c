/* test_metrics.c - base/metrics: the one table of GPU metrics is complete and in enum order
 * (every id has its row, its GM_GPU_METRIC_MAP name, a unit and scale that match the raw unit
 * its enum name carries), names are unique and gm_metric_find round-trips; the host metric
 * names likewise; and the PCIe bandwidth table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpumon.h"

static const struct {
    gm_metric id;
    const char *enum_name;
    const char *name;
} gpu_map[] = {
#define GM_TEST_ROW(id, name) {GM_M_##id, #id, name},
    GM_GPU_METRIC_MAP(GM_TEST_ROW)
#undef GM_TEST_ROW
};

static const struct {
    gm_host_metric id;
    const char *name;
} host_map[] = {
#define GM_TEST_ROW(id, name) {GM_H_##id, name},
    GM_HOST_METRIC_MAP(GM_TEST_ROW)
#undef GM_TEST_ROW
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void test_table_complete_and_in_order(void **state)
{
    (void)state;
    assert_int_equal(sizeof gpu_map / sizeof *gpu_map, GM_M__COUNT);
    /* Validity is one bit per metric in GM_M_WORDS words. */
    check_le(GM_M__COUNT, 64 * GM_M_WORDS);
    for (int i = 0; i < GM_M__COUNT; i++) {
        const gm_metric_info *m = gm_metric_get((gm_metric)i);
        if (!m)
            fail_msg("metric %d has no row", i);
        /* The row of id i describes id i, under the name the X-macro gives it. */
        assert_int_equal(m->id, i);
        assert_int_equal(gpu_map[i].id, i);
        if (!m->name || strcmp(m->name, gpu_map[i].name) != 0)
            fail_msg("GM_M_%s: row says \"%s\", GM_GPU_METRIC_MAP \"%s\"", gpu_map[i].enum_name,
                     m->name ? m->name : "(null)", gpu_map[i].name);
        assert_non_null(m->unit);
        assert_non_null(m->description);
        check_gt(strlen(m->description), 5);
        assert_true(isfinite(m->scale));
        check_gt(m->scale, 0);
    }
    assert_null(gm_metric_get(GM_M__COUNT));
    assert_null(gm_metric_get((gm_metric)(GM_M__COUNT + 1)));
    assert_null(gm_metric_get((gm_metric)-1));
}

/* The enum name carries the raw unit (GM_M_POWER_MW); the table says how it is displayed. */
static void test_units_and_scales_match_the_raw_units(void **state)
{
    (void)state;
    static const struct {
        const char *suffix, *unit;
        double scale;
    } rules[] = {
        {"_PCT", "%", 1},     {"_BYTES", "MiB", 1.0 / 1048576.0},
        {"_MW", "W", 0.001},  {"_MJ", "J", 0.001},
        {"_MHZ", "MHz", 1},   {"_TEMP_C", "C", 1},
        {"_KBPS", "KB/s", 1}, {"_C", "C", 1},
        {"_NS", "us", 0.001}, {"_US", "us", 1},
        {"_MS", "ms", 1},     {"_KIB", "KiB", 1},
        {"_BPS", "B/s", 1},
    };
    for (int i = 0; i < GM_M__COUNT; i++) {
        const gm_metric_info *m = gm_metric_get((gm_metric)i);
        char prefixed[64];
        snprintf(prefixed, sizeof prefixed, "_%s", gpu_map[i].enum_name);
        size_t r = 0;
        while (r < sizeof rules / sizeof *rules && !ends_with(prefixed, rules[r].suffix))
            r++;
        if (r == sizeof rules / sizeof *rules) {
            /* Counts, states and masks: shown as they are, without a unit. */
            if (strcmp(m->unit, "") != 0 || m->scale != 1)
                fail_msg("%s: unit \"%s\" scale %g for a unitless raw value", m->name, m->unit,
                         m->scale);
            continue;
        }
        if (strcmp(m->unit, rules[r].unit) != 0 || m->scale != rules[r].scale)
            fail_msg("GM_M_%s (%s): unit \"%s\" scale %g, want \"%s\" %g", gpu_map[i].enum_name,
                     m->name, m->unit, m->scale, rules[r].unit, rules[r].scale);
    }
    /* Bytes shown in MiB convert through the one constant, exactly. */
    check_eq(GM_BYTES_PER_MIB, 1048576ULL);
    check_eq(gm_metric_get(GM_M_BAR1_USED_BYTES)->scale * GM_BYTES_PER_MIB, 1.0);
    /* Counters and constants are not time series; the readings that move are. */
    assert_true(gm_metric_get(GM_M_UTIL_GPU_PCT)->numeric_series);
    assert_true(gm_metric_get(GM_M_POWER_MW)->numeric_series);
    assert_true(gm_metric_get(GM_M_MEM_USED_BYTES)->numeric_series);
    assert_false(gm_metric_get(GM_M_ENERGY_MJ)->numeric_series);
    assert_false(gm_metric_get(GM_M_MEM_TOTAL_BYTES)->numeric_series);
    assert_false(gm_metric_get(GM_M_THROTTLE_REASONS)->numeric_series);
}

static void test_names_unique_and_find_round_trips(void **state)
{
    (void)state;
    for (int i = 0; i < GM_M__COUNT; i++) {
        const char *name = gm_metric_get((gm_metric)i)->name;
        assert_int_equal(gm_metric_find(name), i);
        for (int k = 0; k < i; k++)
            if (strcmp(gm_metric_get((gm_metric)k)->name, name) == 0)
                fail_msg("metrics %d and %d are both \"%s\"", k, i, name);
        /* Names are nvidia-smi's: no spaces; lower case but for its few camelCase ones
         * (encoder.stats.sessionCount). */
        for (const char *p = name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '.' || *p == '_'))
                fail_msg("\"%s\" has '%c'", name, *p);
    }
    assert_int_equal(gm_metric_find(NULL), -1);
    assert_int_equal(gm_metric_find(""), -1);
    assert_int_equal(gm_metric_find("utilization"), -1);             /* no prefix match */
    assert_int_equal(gm_metric_find("utilization.gpu.x"), -1);       /* no longer match */
    assert_int_equal(gm_metric_find("UTILIZATION.GPU"), -1);         /* exact, like nvidia-smi */
    assert_int_equal(gm_metric_find(" utilization.gpu"), -1);        /* not trimmed */
    assert_int_equal(gm_metric_find("cpu.utilization"), -1);         /* a host metric */
    assert_int_equal(gm_metric_find("clocks.current.graphics"), -1); /* an nvidia-smi alias */
    assert_int_equal(gm_metric_find("utilization.gpu"), GM_M_UTIL_GPU_PCT);
    assert_int_equal(gm_metric_find("memory.used"), GM_M_MEM_USED_BYTES);
    assert_int_equal(gm_metric_find("power.draw"), GM_M_POWER_MW);
}

static void test_host_metric_names(void **state)
{
    (void)state;
    assert_int_equal(sizeof host_map / sizeof *host_map, GM_H__COUNT);
    check_le(GM_H__COUNT, 64);
    for (int i = 0; i < GM_H__COUNT; i++) {
        const char *name = gm_host_metric_name((gm_host_metric)i);
        assert_non_null(name);
        assert_int_equal(host_map[i].id, i);
        assert_string_equal(name, host_map[i].name);
        for (int k = 0; k < i; k++)
            assert_string_not_equal(gm_host_metric_name((gm_host_metric)k), name);
    }
    assert_null(gm_host_metric_name(GM_H__COUNT));
    assert_null(gm_host_metric_name((gm_host_metric)-1));
    assert_string_equal(gm_host_metric_name(GM_H_CPU_UTIL_PCT), "cpu.utilization");
    assert_string_equal(gm_host_metric_name(GM_H_UPTIME_S), "uptime");
}

/* The words JSON, /metrics and benchmark reports use for the clock event reason bits. */
static void test_clock_reason_names(void **state)
{
    (void)state;
    assert_string_equal(gm_clock_reason_name(0), "gpu_idle");
    assert_string_equal(gm_clock_reason_name(2), "sw_power_cap");
    assert_string_equal(gm_clock_reason_name(7), "hw_power_brake_slowdown");
    assert_string_equal(gm_clock_reason_name(8), "display_clock_setting");
    assert_null(gm_clock_reason_name(GM_CLOCK_REASON_COUNT));
    for (unsigned i = 0; i < GM_CLOCK_REASON_COUNT; i++)
        for (unsigned j = i + 1; j < GM_CLOCK_REASON_COUNT; j++)
            assert_string_not_equal(gm_clock_reason_name(i), gm_clock_reason_name(j));
}

static void test_pcie_bandwidth(void **state)
{
    (void)state;
    check_eq(gm_pcie_gbps(1, 1), 0.25);
    check_eq(gm_pcie_gbps(2, 8), 4.0);
    check_eq(gm_pcie_gbps(3, 16), 15.76);
    check_eq(gm_pcie_gbps(4, 16), 31.504);
    check_eq(gm_pcie_gbps(5, 16), 63.008);
    check_eq(gm_pcie_gbps(6, 16), 121.008);
    check_eq(gm_pcie_gbps(7, 1), 15.125);
    check_lt(gm_pcie_gbps(0, 16), 0);
    check_lt(gm_pcie_gbps(8, 16), 0);
    check_lt(gm_pcie_gbps(4, 0), 0);
    /* More lanes, more bandwidth; a newer generation, more per lane. */
    for (unsigned gen = 1; gen <= 7; gen++)
        for (unsigned w = 1; w < 32; w *= 2) {
            check_gt(gm_pcie_gbps(gen, w * 2), gm_pcie_gbps(gen, w));
            if (gen < 7)
                check_gt(gm_pcie_gbps(gen + 1, w), gm_pcie_gbps(gen, w));
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_complete_and_in_order),
        cmocka_unit_test(test_units_and_scales_match_the_raw_units),
        cmocka_unit_test(test_names_unique_and_find_round_trips),
        cmocka_unit_test(test_host_metric_names),
        cmocka_unit_test(test_clock_reason_names),
        cmocka_unit_test(test_pcie_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
