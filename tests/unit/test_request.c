/* test_request.c - server/request: what is refused before any route sees a request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "server/request.h"

static void test_methods(void **state)
{
    (void)state;
    assert_int_equal(gm_http_method("GET"), GM_HTTP_GET);
    assert_int_equal(gm_http_method("DELETE"), GM_HTTP_DELETE);
    assert_int_equal(gm_http_method("get"), 0); /* methods are case-sensitive */
    assert_int_equal(gm_http_method("PROPFIND"), 0);
    assert_string_equal(gm_http_method_name(GM_HTTP_OPTIONS), "OPTIONS");
    assert_string_equal(gm_http_method_name(0), "?");
    char allow[80];
    gm_http_allow_list(GM_HTTP_GET | GM_HTTP_HEAD, allow, sizeof allow);
    assert_string_equal(allow, "GET, HEAD, OPTIONS");
}

static void test_fields(void **state)
{
    (void)state;
    assert_true(gm_http_token_ok("Content-Length", 14));
    assert_true(gm_http_token_ok("X-My_Header!", 12));
    assert_false(gm_http_token_ok("", 0));
    assert_false(gm_http_token_ok("Content-Length ", 15)); /* space before the colon */
    assert_false(gm_http_token_ok("X\tY", 3));
    assert_false(gm_http_token_ok("a:b", 3));
    assert_false(gm_http_token_ok("a\0b", 3));
    assert_true(gm_http_value_ok("text/html; q=0.9\t", 17));
    assert_true(gm_http_value_ok("caf\xc3\xa9", 5)); /* obs-text */
    assert_false(gm_http_value_ok("a\x01z", 3));
    assert_false(gm_http_value_ok("a\rb", 3));
    assert_false(gm_http_value_ok("a\x7f", 2));
}

static int parse(const char *raw, char *path, gm_query *q, gm_error *err)
{
    return gm_http_target_parse(raw, strlen(raw), path, GM_HTTP_PATH_MAX, q, err);
}

static void test_target(void **state)
{
    (void)state;
    char path[GM_HTTP_PATH_MAX];
    gm_query q;
    gm_error err = {0};
    assert_int_equal(parse("/api/history?metric=power.draw&gpu=0,1&seconds=5m", path, &q, &err),
                     GM_OK);
    assert_string_equal(path, "/api/history");
    assert_int_equal(q.count, 3);
    assert_string_equal(gm_query_get(&q, "gpu"), "0,1");
    /* The path is decoded once; an encoded "?" stays in the path. */
    assert_int_equal(parse("/a%20b%3Fc?x=%3F", path, &q, &err), GM_OK);
    assert_string_equal(path, "/a b?c");
    assert_string_equal(gm_query_get(&q, "x"), "?");
    /* "+" is a space in the query, not in the path. */
    assert_int_equal(parse("/a+b?k=a+b", path, &q, &err), GM_OK);
    assert_string_equal(path, "/a+b");
    assert_string_equal(gm_query_get(&q, "k"), "a b");
    /* Bytes that are not UTF-8 are kept (the route will not match), never cut. */
    assert_int_equal(parse("/nope%e9", path, &q, &err), GM_OK);
    assert_int_equal(strlen(path), 6);

    static const char *const bad[] = {"",        "api",    "*",        "http://x/", "/a%00",
                                      "/a%0a",   "/a%zz",  "/a%4",     "/a?k=%00",  "/a?=v",
                                      "/a#frag", "/a\x01", "/a?k=\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        if (parse(bad[i], path, &q, &err) != GM_EINVAL || !err.msg[0])
            fail_msg("accepted \"%s\"", bad[i]);
    }
    /* Longer than the path buffer: refused, not truncated into another path. */
    char longp[GM_HTTP_PATH_MAX + 8];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(parse(longp, path, &q, &err), GM_EINVAL);
}

static void test_websocket_key(void **state)
{
    (void)state;
    assert_true(gm_ws_key_ok("dGhlIHNhbXBsZSBub25jZQ==")); /* RFC 6455's example */
    assert_false(gm_ws_key_ok(NULL));
    assert_false(gm_ws_key_ok(""));
    assert_false(gm_ws_key_ok("dGhlIHNhbXBsZSBub25jZQ="));   /* 23 characters */
    assert_false(gm_ws_key_ok("dGhlIHNhbXBsZSBub25jZR=="));  /* padding bits set */
    assert_false(gm_ws_key_ok("dGhlIHNhbXBsZSBub25j*Q=="));  /* not base64 */
    assert_false(gm_ws_key_ok("dGhlIHNhbXBsZSBub25jZQ==x")); /* too long */
    assert_true(gm_http_list_has("keep-alive, Upgrade", "upgrade"));
    assert_true(gm_http_list_has("websocket", "WebSocket"));
    assert_false(gm_http_list_has("upgrade-insecure", "upgrade"));
    assert_false(gm_http_list_has("", "upgrade"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_methods),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_target),
        cmocka_unit_test(test_websocket_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
