/* test_buf.c - core/buf: growth, formatting, the limit and the sticky failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

static void test_grow_and_take(void **state)
{
    (void)state;
    gm_buf b;
    gm_buf_init(&b, 0);
    for (int i = 0; i < 1000; i++)
        gm_buf_printf(&b, "%d,", i % 10);
    gm_buf_puts(&b, "end");
    assert_false(b.failed);
    assert_int_equal(b.len, 2003);
    size_t len = 0;
    char *s = gm_buf_take(&b, &len);
    assert_non_null(s);
    assert_int_equal(len, 2003);
    assert_int_equal(strlen(s), 2003);
    assert_memory_equal(s, "0,1,2,", 6);
    assert_string_equal(s + 2000, "end");
    free(s);
    /* Taken: the buffer is empty again and still usable. */
    assert_null(b.p);
    gm_buf_put(&b, "x", 1);
    assert_string_equal(b.p, "x");
    gm_buf_free(&b);
    /* An empty buffer gives "". */
    s = gm_buf_take(&b, &len);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);
}

static void test_long_format(void **state)
{
    (void)state;
    gm_buf b;
    gm_buf_init(&b, 0);
    char big[1000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gm_buf_printf(&b, "<%s>", big); /* longer than the formatter's stack copy */
    assert_int_equal(b.len, 1001);
    assert_int_equal(b.p[0], '<');
    assert_int_equal(b.p[1000], '>');
    gm_buf_free(&b);
}

static void test_limit_sticks(void **state)
{
    (void)state;
    gm_buf b;
    gm_buf_init(&b, 10);
    gm_buf_puts(&b, "0123456789"); /* exactly the limit */
    assert_false(b.failed);
    gm_buf_puts(&b, "x");
    assert_true(b.failed);
    gm_buf_puts(&b, ""); /* later appends are dropped */
    assert_true(b.failed);
    size_t len = 99;
    assert_null(gm_buf_take(&b, &len));
    assert_null(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_and_take),
        cmocka_unit_test(test_long_format),
        cmocka_unit_test(test_limit_sticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
