/* test_parse.c - base/parse: the one grammar of numbers, durations, booleans, sizes and GPU
 * lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

#include "base/parse.h"

static void test_uint(void **state)
{
    (void)state;
    unsigned long long u;
    assert_int_equal(gm_parse_uint("100", 100, 200, &u), GM_OK);
    assert_int_equal(u, 100);
    assert_int_equal(gm_parse_uint("18446744073709551615", 0, UINT64_MAX, &u), GM_OK);
    static const char *const bad[] = {
        "", " 100", "100 ", "+1", "-1", "0x10", "1e3", "1.0", "18446744073709551616"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (gm_parse_uint(bad[i], 0, UINT64_MAX, &u) != GM_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
    assert_int_equal(gm_parse_uint("99", 100, 200, &u), GM_EINVAL);
    assert_int_equal(gm_parse_uint("201", 100, 200, &u), GM_EINVAL);
    assert_int_equal(gm_parse_uint(NULL, 0, 1, &u), GM_EINVAL);
}

static void test_number(void **state)
{
    (void)state;
    double d;
    assert_int_equal(gm_parse_number("0.5", 0.1, 100, &d), GM_OK);
    check_eq(d, 0.5);
    assert_int_equal(gm_parse_number("100", 0, 100, &d), GM_OK);
    assert_int_equal(gm_parse_number("-3.25", -10, 0, &d), GM_OK);
    check_eq(d, -3.25);
    /* What strtod would take and a person did not mean: refused everywhere alike. */
    static const char *const bad[] = {".5",   "5.", "1.2.3", "0x64", "nan", "inf", "1e1",
                                      "0.05", "",   " 1",    "1 ",   "+1",  "--1", "100.01"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (gm_parse_number(bad[i], 0.1, 100, &d) != GM_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
}

static void test_bool(void **state)
{
    (void)state;
    bool b = false;
    assert_int_equal(gm_parse_bool("TRUE", &b), GM_OK);
    assert_true(b);
    assert_int_equal(gm_parse_bool("0", &b), GM_OK);
    assert_false(b);
    assert_int_equal(gm_parse_bool("Off", &b), GM_OK);
    assert_false(b);
    assert_int_equal(gm_parse_bool("yes", &b), GM_OK);
    assert_true(b);
    assert_int_equal(gm_parse_bool("2", &b), GM_EINVAL);
    assert_int_equal(gm_parse_bool("", &b), GM_EINVAL);
    assert_int_equal(gm_parse_bool("truex", &b), GM_EINVAL);
}

static void test_duration(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t ms;
    } ok[] = {{"3600", 3600000},  {"3600s", 3600000},   {"60m", 3600000},      {"1h", 3600000},
              {"2h30m", 9000000}, {"1d", 86400000},     {"1h1m1s", 3661000},   {"0", 0},
              {"90S", 90000},     {"1d12h", 129600000}, {"0.5", 500},          {"500ms", 500},
              {"1.5h", 5400000},  {"2.5s", 2500},       {"1m30s500ms", 90500}, {"1MS", 1},
              {"0.0005", 1}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        int64_t ms = -1;
        if (gm_parse_duration_ms(ok[i].in, 0, 7 * 86400000LL, &ms) != GM_OK || ms != ok[i].ms)
            fail_msg("\"%s\": %lld ms", ok[i].in, (long long)ms);
    }
    static const char *const bad[] = {"",     "h",       "1x",   "1h1h",   "30m1h",
                                      "-1",   "1 h",     "1h ",  "8d",     "604801",
                                      "1hm",  "1.5h30m", "1h30", "ms",     "1e3",
                                      "0x10", ".5s",     "5.s",  "1s1ms1", "9999999999999999999d"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t ms;
        if (gm_parse_duration_ms(bad[i], 0, 7 * 86400000LL, &ms) != GM_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
    }
    int64_t ms;
    assert_int_equal(gm_parse_duration_ms("50ms", 100, 1000, &ms), GM_EINVAL); /* below min */
    /* Found by fuzz_parse: a plain number of seconds escaped the 1e15 ms bound that components
     * have, so "2000000000000" was accepted where "2000000000000s" was not, and one past
     * INT64_MAX ms went to llround (unspecified). */
    assert_int_equal(gm_parse_duration_ms("1000000000000", 0, INT64_MAX, &ms), GM_OK);
    assert_int_equal(ms, 1000000000000000LL);
    assert_int_equal(gm_parse_duration_ms("2000000000000s", 0, INT64_MAX, &ms), GM_EINVAL);
    assert_int_equal(gm_parse_duration_ms("2000000000000", 0, INT64_MAX, &ms), GM_EINVAL);
    assert_int_equal(gm_parse_duration_ms("9300000000000000", 0, INT64_MAX, &ms), GM_EINVAL);
}

static void test_size(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t bytes;
    } ok[] = {{"65536", 65536},
              {"1b", 1},
              {"1k", 1024},
              {"1KB", 1024},
              {"1KiB", 1024},
              {"512m", 512LL << 20},
              {"512MiB", 512LL << 20},
              {"16GB", 16LL << 30},
              {"16g", 16LL << 30},
              {"1.5G", 3LL << 29},
              {"2t", 2LL << 40},
              {"0", 0}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        int64_t b = -1;
        if (gm_parse_size_bytes(ok[i].in, 0, INT64_MAX, &b) != GM_OK || b != ok[i].bytes)
            fail_msg("\"%s\": %lld bytes", ok[i].in, (long long)b);
    }
    static const char *const bad[] = {"",    "g",   "1x",   "1 g", "-1g", "1gb ",        "1ki",
                                      "1bb", "1e3", "0x10", ".5g", "1gg", "99999999999t"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t b;
        if (gm_parse_size_bytes(bad[i], 0, INT64_MAX, &b) != GM_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
    }
    int64_t b;
    assert_int_equal(gm_parse_size_bytes("1k", 2048, 4096, &b), GM_EINVAL);
}

/* The -i grammar: items trimmed, a trailing comma ends the list; an empty item, a control
 * character, an over-long item or more GPUs than a host has are refused with one message. */
static void test_gpu_list(void **state)
{
    (void)state;
    char items[GM_MAX_GPUS][GM_UUID_LEN];
    size_t n = 99;
    gm_error err = {0};
    assert_int_equal(gm_parse_gpu_list("0, GPU-abc ,00000000:19:00.0,", items, &n, &err), GM_OK);
    check_eq(n, 3);
    check_str_eq(items[0], "0");
    check_str_eq(items[1], "GPU-abc");
    check_str_eq(items[2], "00000000:19:00.0");

    assert_int_equal(gm_parse_gpu_list("", items, &n, &err), GM_EINVAL);
    check_str_eq(err.msg, "empty GPU list");
    static const char *const bad[] = {" ", "0,,1", ",0", "0,\x1b[2J", "0, "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (gm_parse_gpu_list(bad[i], items, &n, &err) != GM_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
        check_str_contains(err.msg, "expected indices, UUIDs or PCI bus ids");
    }
    char longest[GM_UUID_LEN + 1];
    memset(longest, 'a', GM_UUID_LEN);
    longest[GM_UUID_LEN] = '\0';
    assert_int_equal(gm_parse_gpu_list(longest, items, &n, NULL), GM_EINVAL);
    longest[GM_UUID_LEN - 1] = '\0';
    assert_int_equal(gm_parse_gpu_list(longest, items, &n, NULL), GM_OK);
    char many[GM_MAX_GPUS * 4 + 8] = "";
    for (int i = 0; i <= GM_MAX_GPUS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d", i ? "," : "", i);
    assert_int_equal(gm_parse_gpu_list(many, items, &n, NULL), GM_EINVAL);
    *strrchr(many, ',') = '\0';
    assert_int_equal(gm_parse_gpu_list(many, items, &n, NULL), GM_OK);
    check_eq(n, GM_MAX_GPUS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uint), cmocka_unit_test(test_number),
        cmocka_unit_test(test_bool), cmocka_unit_test(test_duration),
        cmocka_unit_test(test_size), cmocka_unit_test(test_gpu_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
