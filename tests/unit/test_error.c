/* test_error.c - base/error: every code of GM_ERRNO_MAP is negative, distinct and has its own
 * message; codes outside the table say "unknown error"; gm_error_set formats, truncates within
 * its buffer and returns the code, with or without an error to fill. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

static const struct {
    int code;
    const char *name;
    const char *msg;
} table[] = {
#define GM_TEST_ROW(name, msg) {GM_##name, #name, msg},
    GM_ERRNO_MAP(GM_TEST_ROW)
#undef GM_TEST_ROW
};

#define NCODES (sizeof table / sizeof *table)

static void test_every_code_has_its_own_message(void **state)
{
    (void)state;
    assert_string_equal(gm_strerror(GM_OK), "success");
    for (size_t i = 0; i < NCODES; i++) {
        /* Negative, so every `rc < 0` check catches it, and above the reserved floor. */
        if (table[i].code >= 0 || table[i].code <= GM__ERR_MIN)
            fail_msg("GM_%s = %d", table[i].name, table[i].code);
        const char *m = gm_strerror(table[i].code);
        assert_non_null(m);
        assert_string_equal(m, table[i].msg);
        check_ne(m[0], '\0');
        assert_string_not_equal(m, "unknown error");
        assert_string_not_equal(m, "success");
        for (size_t k = 0; k < i; k++) {
            if (table[k].code == table[i].code)
                fail_msg("GM_%s and GM_%s share code %d", table[k].name, table[i].name,
                         table[i].code);
            if (strcmp(gm_strerror(table[k].code), m) == 0)
                fail_msg("GM_%s and GM_%s share the message \"%s\"", table[k].name, table[i].name,
                         m);
        }
    }
    /* A few by name, so the table cannot drift from what callers print. */
    assert_string_equal(gm_strerror(GM_ENODEV), "no GPU found");
    assert_string_equal(gm_strerror(GM_ETIMEDOUT), "timed out");
    assert_string_equal(gm_strerror(GM_ECANCELED), "cancelled");
}

/* gm_err_name: each code's name as the source spells it, for logs. */
static void test_err_name(void **state)
{
    (void)state;
    check_str_eq(gm_err_name(GM_OK), "GM_OK");
    for (size_t i = 0; i < NCODES; i++) {
        char want[64];
        snprintf(want, sizeof want, "GM_%s", table[i].name);
        check_str_eq(gm_err_name(table[i].code), want);
    }
    check_str_eq(gm_err_name(GM_ETIMEDOUT), "GM_ETIMEDOUT");
    check_str_eq(gm_err_name(1), "GM_UNKNOWN");
    check_str_eq(gm_err_name(GM__ERR_MIN), "GM_UNKNOWN");
    check_str_eq(gm_err_name(INT_MIN), "GM_UNKNOWN");
}

static void test_unknown_codes(void **state)
{
    (void)state;
    /* The codes follow each other up from GM__ERR_MIN + 1; all of them stay below zero. */
    for (size_t i = 0; i < NCODES; i++)
        assert_int_equal(table[i].code, GM__ERR_MIN + 1 + (int)i);
    check_lt(table[NCODES - 1].code + 1, 0);
    const int unknown[] = {1,
                           42,
                           -1000,
                           GM__ERR_MIN,
                           GM__ERR_MIN - 1,
                           INT_MIN,
                           INT_MAX,
                           -1,
                           table[NCODES - 1].code + 1};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        if (strcmp(gm_strerror(unknown[i]), "unknown error") != 0)
            fail_msg("code %d: \"%s\"", unknown[i], gm_strerror(unknown[i]));
}

static void test_error_set_formats(void **state)
{
    (void)state;
    gm_error e;
    memset(&e, 0x55, sizeof e);
    assert_int_equal(gm_error_set(&e, GM_EIO, "%s: %d%% of %u", "disk", 50, 7u), GM_EIO);
    assert_int_equal(e.code, GM_EIO);
    assert_string_equal(e.msg, "disk: 50% of 7");
    /* A later error replaces the earlier one. */
    assert_int_equal(gm_error_set(&e, GM_EPARSE, "bad"), GM_EPARSE);
    assert_int_equal(e.code, GM_EPARSE);
    assert_string_equal(e.msg, "bad");
    assert_int_equal(gm_error_set(&e, GM_ENOENT, "%s", ""), GM_ENOENT);
    assert_string_equal(e.msg, "");
    /* No error to fill: still returns the code, so `return gm_error_set(NULL, ...)` works. */
    assert_int_equal(gm_error_set(NULL, GM_EBUSY, "ignored %s", "text"), GM_EBUSY);
    /* Any int passes through, known or not. */
    assert_int_equal(gm_error_set(&e, -12345, "x"), -12345);
    assert_int_equal(e.code, -12345);
}

static void test_error_set_truncates(void **state)
{
    (void)state;
    gm_error e;
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[0] = 'S';
    /* Guard bytes after the struct catch a write past msg. */
    struct {
        gm_error e;
        unsigned char guard[64];
    } g;
    memset(&g, 0x5a, sizeof g);
    assert_int_equal(gm_error_set(&g.e, GM_EINVAL, "%s and more", big), GM_EINVAL);
    assert_int_equal(strlen(g.e.msg), sizeof g.e.msg - 1);
    assert_int_equal(g.e.msg[0], 'S');
    for (size_t i = 0; i < sizeof g.guard; i++)
        assert_int_equal(g.guard[i], 0x5a);
    /* Exactly the capacity minus the terminator fits whole. */
    big[sizeof e.msg - 1] = '\0';
    assert_int_equal(gm_error_set(&e, GM_EINVAL, "%s", big), GM_EINVAL);
    assert_int_equal(strlen(e.msg), sizeof e.msg - 1);
    assert_memory_equal(e.msg, big, sizeof e.msg - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_its_own_message),
        cmocka_unit_test(test_err_name),
        cmocka_unit_test(test_unknown_codes),
        cmocka_unit_test(test_error_set_formats),
        cmocka_unit_test(test_error_set_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
