/* test_utf8.c - core/utf8: strict validation (RFC 3629), streaming, and the repair that keeps
 * valid text and marks the rest with U+FFFD. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/utf8.h"

static bool valid(const char *s)
{
    return gm_utf8_valid(s, strlen(s));
}

static void test_valid(void **state)
{
    (void)state;
    assert_true(valid(""));
    assert_true(valid("plain ASCII"));
    assert_true(valid("caf\xc3\xa9"));       /* U+00E9 */
    assert_true(valid("\xe2\x82\xac"));      /* U+20AC */
    assert_true(valid("\xf0\x9f\x98\x80"));  /* U+1F600 */
    assert_true(valid("\xf4\x8f\xbf\xbf"));  /* U+10FFFF, the last */
    assert_true(gm_utf8_valid("a\0b", 3));   /* NUL is a character */
    assert_false(valid("\xff"));             /* never in UTF-8 */
    assert_false(valid("\x80"));             /* a lone continuation */
    assert_false(valid("\xc3"));             /* cut short */
    assert_false(valid("\xc0\xaf"));         /* overlong "/" */
    assert_false(valid("\xe0\x80\xaf"));     /* overlong, three bytes */
    assert_false(valid("\xf0\x80\x80\xaf")); /* overlong, four bytes */
    assert_false(valid("\xed\xa0\x80"));     /* a surrogate, U+D800 */
    assert_false(valid("\xf4\x90\x80\x80")); /* above U+10FFFF */
    assert_false(valid("\xf5\x80\x80\x80")); /* no such lead byte */
    assert_false(valid("\xe2\x28\xa1"));     /* continuation missing */
}

static void test_stream(void **state)
{
    (void)state;
    /* A character split across pieces, as WebSocket fragments may split it. */
    const uint8_t euro[] = {0xe2, 0x82, 0xac};
    gm_utf8_stream st = {0};
    assert_true(gm_utf8_feed(&st, euro, 1));
    assert_false(gm_utf8_complete(&st));
    assert_true(gm_utf8_feed(&st, euro + 1, 1));
    assert_true(gm_utf8_feed(&st, euro + 2, 1));
    assert_true(gm_utf8_complete(&st));
    /* The range check holds across pieces too: E0 then 80 is overlong. */
    gm_utf8_stream st2 = {0};
    assert_true(gm_utf8_feed(&st2, (const uint8_t *)"\xe0", 1));
    assert_false(gm_utf8_feed(&st2, (const uint8_t *)"\x80", 1));
}

static void test_repair(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(gm_utf8_repair(out, sizeof out, "ok", 2), 2);
    assert_string_equal(out, "ok");
    /* Each bad byte becomes one U+FFFD; valid characters are kept. */
    gm_utf8_repair(out, sizeof out,
                   "a\xff"
                   "b\xc3\xa9",
                   5);
    assert_string_equal(out, "a\xef\xbf\xbd"
                             "b\xc3\xa9");
    /* A character cut at the end of the input is marked, not dropped silently. */
    gm_utf8_repair(out, sizeof out, "x\xc3", 2);
    assert_string_equal(out, "x\xef\xbf\xbd");
    /* Never a character cut by the output's size: stops before it. */
    char small[4];
    assert_int_equal(gm_utf8_repair(small, sizeof small, "a\xe2\x82\xac", 4), 1);
    assert_string_equal(small, "a");
    assert_true(gm_utf8_valid(out, strlen(out)));
}

static void test_seq_len(void **state)
{
    (void)state;
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"a", 1), 1);
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"\xc3\xa9", 2), 2);
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"\xf0\x9f\x98\x80", 4), 4);
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"\xe2\x82", 2), -1); /* cut short */
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"\xe2\x28\xa1", 3), 0);
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"\xff", 1), 0);
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"\x80", 1), 0);
    assert_int_equal(gm_utf8_seq_len((const uint8_t *)"\xed\xa0\x80", 3), 0); /* surrogate */
}

static void test_shorten_name(void **state)
{
    (void)state;
    char out[32];
    gm_utf8_shorten_name("NVIDIA A100-SXM4-40GB", 24, out, sizeof out);
    assert_string_equal(out, "NVIDIA A100-SXM4-40GB"); /* fits as it is */
    gm_utf8_shorten_name("NVIDIA H100 80GB HBM3 (simulated)", 24, out, sizeof out);
    assert_string_equal(out, "H100 80GB HBM3"); /* "NVIDIA " goes first, then whole words */
    gm_utf8_shorten_name("NVIDIA GeForce RTX 4090 Laptop GPU", 16, out, sizeof out);
    assert_string_equal(out, "GeForce RTX 4090");
    gm_utf8_shorten_name("Supercalifragilistic", 8, out, sizeof out);
    assert_string_equal(out, "Supercal"); /* one long word: cut at the width */
    gm_utf8_shorten_name("GPU-\xc3\xa9\xc3\xa9\xc3\xa9", 6, out, sizeof out);
    assert_string_equal(out, "GPU-\xc3\xa9"); /* never inside a character */
    gm_utf8_shorten_name("Tesla T4 -- x", 10, out, sizeof out);
    assert_string_equal(out, "Tesla T4"); /* trailing spaces and dashes dropped */
    gm_utf8_shorten_name("abc", 10, out, 3);
    assert_string_equal(out, "ab"); /* the buffer bounds the width */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shorten_name), cmocka_unit_test(test_valid),
        cmocka_unit_test(test_stream),       cmocka_unit_test(test_repair),
        cmocka_unit_test(test_seq_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
