/* test_gzip.c - base/gzip: streams any gzip reader takes back, headroom kept in front. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/gzip.h"

static size_t gunzip(const unsigned char *src, size_t len, char *out, size_t cap)
{
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (unsigned char *)src;
    z.avail_in = (uInt)len;
    z.next_out = (unsigned char *)out;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = z.total_out;
    inflateEnd(&z);
    return n;
}

static void test_round_trip_with_headroom(void **state)
{
    (void)state;
    char text[8192];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = "gpumon_gpu_utilization_ratio{gpu=\"0\"} 0.5\n"[i % 43];
    size_t n = 0;
    unsigned char *block = gm_gzip(text, sizeof text, 14, &n);
    assert_non_null(block);
    check_gt(n, 18);
    check_lt(n, sizeof text / 10); /* repetitive text shrinks */
    const unsigned char *gz = block + 14;
    assert_int_equal(gz[0], 0x1f); /* gzip's magic, after the headroom */
    assert_int_equal(gz[1], 0x8b);
    assert_int_equal(gz[n], '\0');
    char back[sizeof text];
    assert_int_equal(gunzip(gz, n, back, sizeof back), sizeof text);
    assert_memory_equal(back, text, sizeof text);
    free(block);
}

static void test_empty_and_null(void **state)
{
    (void)state;
    size_t n = 99;
    unsigned char *block = gm_gzip("", 0, 0, &n);
    assert_non_null(block);
    char back[4];
    assert_int_equal(gunzip(block, n, back, sizeof back), 0);
    free(block);
    assert_null(gm_gzip(NULL, 0, 0, &n));
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_with_headroom),
        cmocka_unit_test(test_empty_and_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
