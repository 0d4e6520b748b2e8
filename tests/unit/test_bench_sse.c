/* test_bench_sse.c - the incremental event-stream parser: the format's corners, and the same
 * events whatever pieces the bytes come in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench_sse.h"

/* Events collected as "event|data" lines. */
typedef struct got {
    char text[8192];
    size_t len;
    int n;
    int stop_at; /* return 7 from the stop_at-th event (1-based); 0: never */
} got;

static int collect(void *arg, const char *event, const char *data, size_t len)
{
    got *g = arg;
    g->len += (size_t)snprintf(g->text + g->len, sizeof g->text - g->len, "%s|%.*s\n", event,
                               (int)len, data);
    g->n++;
    return g->stop_at && g->n == g->stop_at ? 7 : 0;
}

static void parse_whole(const char *in, size_t n, got *g, bool finish)
{
    gm_sse p;
    gm_sse_init(&p, 0);
    memset(g, 0, sizeof *g);
    assert_int_equal(gm_sse_feed(&p, in, n, collect, g), GM_OK);
    if (finish)
        assert_int_equal(gm_sse_finish(&p, collect, g, NULL), GM_OK);
    gm_sse_free(&p);
}

static void test_openai_stream(void **state)
{
    (void)state;
    const char *in = "data: {\"a\":1}\n\n"
                     ": keep-alive comment\n\n"
                     "data: {\"b\":2}\n\n"
                     "data: [DONE]\n\n";
    got g;
    parse_whole(in, strlen(in), &g, false);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.text, "|{\"a\":1}\n|{\"b\":2}\n|[DONE]\n");
}

static void test_line_ends_fields_and_multiline_data(void **state)
{
    (void)state;
    /* CRLF, lone CR, LF; no space after the colon; two data lines joined by LF; an event name;
     * id and retry ignored; a field without a colon; an event without data dropped. */
    const char *in = "event: update\r\ndata:one\r\ndata: two\r\n\r\n"
                     "id: 5\rretry: 10\rdata\r\r"
                     "event: nothing\n\n"
                     "data:  spaced\n\n";
    got g;
    parse_whole(in, strlen(in), &g, false);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.text, "update|one\ntwo\n|\n| spaced\n");
}

static void test_every_split_gives_the_same_events(void **state)
{
    (void)state;
    const char *in = "\xEF\xBB\xBF"
                     "data: {\"x\": \"caf\xC3\xA9\"}\r\n\r\n"
                     ": c\r\n"
                     "event: e\ndata: 1\ndata: 2\n\n"
                     "data: [DONE]\r\r";
    size_t n = strlen(in);
    got whole;
    parse_whole(in, n, &whole, false);
    assert_int_equal(whole.n, 3);
    /* Every way of cutting the stream in two, and byte by byte. */
    for (size_t cut = 0; cut <= n; cut++) {
        gm_sse p;
        gm_sse_init(&p, 0);
        got g = {0};
        assert_int_equal(gm_sse_feed(&p, in, cut, collect, &g), GM_OK);
        assert_int_equal(gm_sse_feed(&p, in + cut, n - cut, collect, &g), GM_OK);
        assert_string_equal(g.text, whole.text);
        gm_sse_free(&p);
    }
    gm_sse p;
    gm_sse_init(&p, 0);
    got g = {0};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(gm_sse_feed(&p, in + i, 1, collect, &g), GM_OK);
    assert_string_equal(g.text, whole.text);
    gm_sse_free(&p);
}

static void test_random_pieces(void **state)
{
    (void)state;
    char in[4096];
    size_t n = 0;
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(in + n, sizeof in - n, "%sdata: {\"i\":%d}%s%s", i % 7 ? "" : ": x\n",
                              i, i % 2 ? "\r\n" : "\n", i % 3 ? "\n" : "\r\n");
    got whole;
    parse_whole(in, n, &whole, false);
    assert_int_equal(whole.n, 60);
    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        gm_sse p;
        gm_sse_init(&p, 0);
        got g = {0};
        size_t at = 0;
        while (at < n) {
            seed = seed * 1103515245u + 12345u;
            size_t k = 1 + (seed >> 16) % 17;
            if (k > n - at)
                k = n - at;
            assert_int_equal(gm_sse_feed(&p, in + at, k, collect, &g), GM_OK);
            at += k;
        }
        assert_string_equal(g.text, whole.text);
        gm_sse_free(&p);
    }
}

static void test_bom_only_at_the_start(void **state)
{
    (void)state;
    got g;
    /* A byte order mark later in the stream is text of the line. */
    const char *in = "data: a\n\n\xEF\xBB\xBF"
                     "data: b\n\n";
    parse_whole(in, strlen(in), &g, false);
    assert_int_equal(g.n, 1);
    /* A false start (EF BB then not BF) keeps its bytes. */
    const char *in2 = "\xEF\xBB"
                      "data: c\n\n";
    parse_whole(in2, strlen(in2), &g, false);
    assert_int_equal(g.n, 0); /* the line is "\xEF\xBBdata: c": an unknown field */
}

static void test_limit_refuses_a_non_stream(void **state)
{
    (void)state;
    gm_sse p;
    gm_sse_init(&p, 64);
    got g = {0};
    char big[200];
    memset(big, 'x', sizeof big);
    /* A long line in pieces, and in one piece. */
    assert_int_equal(gm_sse_feed(&p, big, 50, collect, &g), GM_OK);
    assert_int_equal(gm_sse_feed(&p, big, 50, collect, &g), GM_EPARSE);
    assert_int_equal(gm_sse_feed(&p, "\n\n", 2, collect, &g), GM_EPARSE); /* stays failed */
    assert_int_equal(gm_sse_finish(&p, collect, &g, NULL), GM_EPARSE);
    gm_sse_free(&p);
    gm_sse_init(&p, 64);
    char line[300];
    int k = snprintf(line, sizeof line, "data: %.*s\n\n", 100, big);
    assert_int_equal(gm_sse_feed(&p, line, (size_t)k, collect, &g), GM_EPARSE);
    gm_sse_free(&p);
    /* Data over the limit across lines. */
    gm_sse_init(&p, 64);
    for (int i = 0; i < 3; i++)
        gm_sse_feed(&p, "data: 0123456789012345678901234567890\n", 38, collect, &g);
    assert_int_equal(gm_sse_feed(&p, "\n", 1, collect, &g), GM_EPARSE);
    assert_int_equal(g.n, 0);
    gm_sse_free(&p);
}

static void test_finish(void **state)
{
    (void)state;
    gm_sse p;
    got g = {0};
    bool partial;
    /* [DONE] without the blank line after it, and without even a newline. */
    gm_sse_init(&p, 0);
    assert_int_equal(gm_sse_feed(&p, "data: [DONE]\n", 13, collect, &g), GM_OK);
    assert_int_equal(g.n, 0);
    assert_int_equal(gm_sse_finish(&p, collect, &g, &partial), GM_OK);
    assert_int_equal(g.n, 1);
    assert_false(partial);
    gm_sse_free(&p);
    memset(&g, 0, sizeof g);
    gm_sse_init(&p, 0);
    gm_sse_feed(&p, "data: [DONE]", 12, collect, &g);
    assert_int_equal(gm_sse_finish(&p, collect, &g, &partial), GM_OK);
    assert_string_equal(g.text, "|[DONE]\n");
    gm_sse_free(&p);
    /* A field name cut short makes no event and says so. */
    memset(&g, 0, sizeof g);
    gm_sse_init(&p, 0);
    gm_sse_feed(&p, "dat", 3, collect, &g);
    assert_int_equal(gm_sse_finish(&p, collect, &g, &partial), GM_OK);
    assert_int_equal(g.n, 0);
    assert_true(partial);
    gm_sse_free(&p);
}

static void test_callback_stops_the_feed(void **state)
{
    (void)state;
    gm_sse p;
    gm_sse_init(&p, 0);
    got g = {.stop_at = 2};
    const char *in = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    assert_int_equal(gm_sse_feed(&p, in, strlen(in), collect, &g), 7);
    assert_int_equal(g.n, 2);
    gm_sse_free(&p);
}

static void test_reset_keeps_the_limit(void **state)
{
    (void)state;
    gm_sse p;
    gm_sse_init(&p, 32);
    got g = {0};
    gm_sse_feed(&p, "data: half", 10, collect, &g);
    gm_sse_reset(&p);
    assert_int_equal(gm_sse_feed(&p, "data: whole\n\n", 13, collect, &g), GM_OK);
    assert_string_equal(g.text, "|whole\n");
    assert_int_equal(p.max, 32);
    gm_sse_free(&p);
}

static void test_arbitrary_bytes_never_crash(void **state)
{
    (void)state;
    unsigned seed = 99;
    for (int round = 0; round < 300; round++) {
        gm_sse p;
        gm_sse_init(&p, 256);
        got g = {0};
        unsigned char buf[512];
        for (size_t i = 0; i < sizeof buf; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = (seed >> 16) & 0xff;
            /* Plenty of the bytes that mean something. */
            buf[i] = r < 40 ? '\n' : r < 60 ? '\r' : r < 80 ? ':' : r < 90 ? ' ' : (unsigned char)r;
        }
        size_t at = 0;
        while (at < sizeof buf) {
            seed = seed * 1103515245u + 12345u;
            size_t k = 1 + (seed >> 16) % 40;
            if (k > sizeof buf - at)
                k = sizeof buf - at;
            if (gm_sse_feed(&p, buf + at, k, collect, &g) != GM_OK)
                break;
            g.len = 0; /* keep the collector from filling up */
            at += k;
        }
        gm_sse_finish(&p, collect, &g, NULL);
        gm_sse_free(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_stream),
        cmocka_unit_test(test_line_ends_fields_and_multiline_data),
        cmocka_unit_test(test_every_split_gives_the_same_events),
        cmocka_unit_test(test_random_pieces),
        cmocka_unit_test(test_bom_only_at_the_start),
        cmocka_unit_test(test_limit_refuses_a_non_stream),
        cmocka_unit_test(test_finish),
        cmocka_unit_test(test_callback_stops_the_feed),
        cmocka_unit_test(test_reset_keeps_the_limit),
        cmocka_unit_test(test_arbitrary_bytes_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
