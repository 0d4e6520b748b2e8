/* test_str.c - base/str: the bounded copy fits, truncates, terminates, and reads no further. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/str.h"

static void test_copy_fits(void **state)
{
    (void)state;
    char dst[8];
    memset(dst, 'x', sizeof dst);
    assert_int_equal(gm_str_copy(dst, sizeof dst, "H100"), 4);
    assert_string_equal(dst, "H100");
    assert_int_equal(gm_str_copy(dst, sizeof dst, "1234567"), 7);
    assert_string_equal(dst, "1234567");
}

static void test_copy_truncates_and_terminates(void **state)
{
    (void)state;
    char dst[8];
    memset(dst, 'x', sizeof dst);
    assert_int_equal(gm_str_copy(dst, sizeof dst, "NVIDIA H100 80GB HBM3"), 7);
    assert_string_equal(dst, "NVIDIA ");
    assert_int_equal(gm_str_copy(dst, 1, "abc"), 0);
    assert_string_equal(dst, "");
}

static void test_copy_null_and_empty(void **state)
{
    (void)state;
    char dst[4] = "abc";
    assert_int_equal(gm_str_copy(dst, sizeof dst, NULL), 0);
    assert_string_equal(dst, "");
    strcpy(dst, "abc");
    assert_int_equal(gm_str_copy(dst, sizeof dst, ""), 0);
    assert_string_equal(dst, "");
    /* cap 0: not a byte written. */
    strcpy(dst, "abc");
    assert_int_equal(gm_str_copy(dst, 0, "z"), 0);
    assert_string_equal(dst, "abc");
}

/* A source not terminated within the bytes copied (a fixed-size driver field) is read no
 * further than cap - 1 bytes (ASan would catch a read past src). */
static void test_copy_reads_no_further(void **state)
{
    (void)state;
    const char src[4] = {'G', 'P', 'U', '!'}; /* no NUL */
    char dst[4];
    assert_int_equal(gm_str_copy(dst, sizeof dst, src), 3);
    assert_string_equal(dst, "GPU");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_fits),
        cmocka_unit_test(test_copy_truncates_and_terminates),
        cmocka_unit_test(test_copy_null_and_empty),
        cmocka_unit_test(test_copy_reads_no_further),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
