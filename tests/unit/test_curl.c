/* test_curl.c - base/curl: libcurl's global start, once, from any thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <pthread.h>

#include "base/curl.h"

static void *start_in_thread(void *arg)
{
    gm_error err = {0};
    *(int *)arg = gm_curl_start(&err);
    return NULL;
}

static void test_start_once_from_threads(void **state)
{
    (void)state;
    pthread_t t[8];
    int rc[8];
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&t[i], NULL, start_in_thread, &rc[i]), 0);
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(rc[i], GM_OK);
    }
    /* Started: an easy handle can be made and used. */
    gm_error err = {0};
    assert_int_equal(gm_curl_start(&err), GM_OK);
    CURL *e = curl_easy_init();
    assert_non_null(e);
    curl_easy_cleanup(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_once_from_threads),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup(); /* leak checkers see libcurl's globals returned */
    return failed;
}
