/* test_http.c - server/http: the HTTP/1.1 transport on libmicrohttpd, through the real daemon
 * in-process (server_harness.h) and raw sockets: the status line and headers of an answer,
 * HEAD, keep-alive and Connection: close (HTTP/1.0 too), an Upgrade other than websocket
 * ignored, pipelining with a body in the middle (the request after it must not be read from
 * the body), a POST without Content-Length answered at once, methods (405 with Allow, 501 as
 * JSON), malformed and duplicate lengths, Transfer-Encoding, a header block over the connection's
 * memory (431), request-line strictness (505, 400, case-sensitive methods), bodies over the
 * limit or where none is taken (413), the content type of a body (415), and the bearer token
 * (a second daemon with --token). After the refusals the daemon still serves. No test waits for
 * a deadline: those are end-to-end (tests/e2e/test_hostile.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include "server_harness.h"

static hx_server srv;

#define GET_GPUS "GET /api/gpus HTTP/1.1\r\nHost: x\r\n\r\n"

static int group_setup(void **state)
{
    (void)state;
    return hx_server_start(&srv, NULL, 0);
}

static int group_teardown(void **state)
{
    (void)state;
    return hx_server_stop(&srv) == GM_OK ? 0 : -1;
}

/* The body is a JSON object with an "error" string: the daemon's own error, not a library's
 * HTML page. */
static void assert_json_error(const hx_resp *r)
{
    char ct[64];
    assert_non_null(hx_header(r, "Content-Type", ct, sizeof ct));
    assert_string_equal(ct, "application/json");
    json_error_t je;
    json_t *j = json_loadb(r->body, r->body_len, 0, &je);
    assert_non_null(j);
    assert_true(json_is_string(json_object_get(j, "error")));
    json_decref(j);
}

/* A request on a fresh connection that the daemon must answer with want and then close. */
static void assert_refused(const char *data, size_t n, int want)
{
    hx_resp r;
    bool closed = false;
    int status = hx_exchange(srv.port, data, n, &r, &closed);
    if (status != want)
        fail_msg("%.60s...: status %d, want %d", data, status, want);
    assert_true(closed);
    hx_resp_free(&r);
}

static void assert_refused_str(const char *data, int want)
{
    assert_refused(data, strlen(data), want);
}

/* The daemon still answers a plain request on a new connection. */
static void assert_serving(void)
{
    static const char req[] = "GET /api/config HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    hx_resp r;
    assert_int_equal(hx_exchange(srv.port, req, sizeof req - 1, &r, NULL), 200);
    hx_resp_free(&r);
}

/* ---- answers ------------------------------------------------------------------------------ */

static void test_get_status_line_and_headers(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    char v[128];
    hx_connect(&c, srv.port);
    hx_send_str(&c, GET_GPUS);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_memory_equal(r.head, "HTTP/1.1 200 OK\r\n", 17);
    assert_string_equal(hx_header(&r, "Content-Type", v, sizeof v), "application/json");
    assert_non_null(hx_header(&r, "Content-Length", v, sizeof v));
    assert_int_equal(strtoul(v, NULL, 10), r.body_len);
    assert_string_equal(hx_header(&r, "Cache-Control", v, sizeof v), "no-store");
    assert_string_equal(hx_header(&r, "X-Content-Type-Options", v, sizeof v), "nosniff");
    assert_memory_equal(hx_header(&r, "Server", v, sizeof v), "gpumon/", 7);
    /* HTTP/1.1 keeps the connection by default: no "Connection: close". */
    assert_true(!hx_header(&r, "Connection", v, sizeof v) || strcasecmp(v, "close") != 0);
    json_error_t je;
    json_t *j = json_loadb(r.body, r.body_len, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "gpu_count")), 2);
    json_decref(j);
    hx_resp_free(&r);
    hx_close(&c);
}

static void test_head_has_length_but_no_body(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    char v[32];
    hx_connect(&c, srv.port);
    /* HEAD then GET on one connection: were a body sent after the HEAD's head, the GET's
     * answer would not start where it should. */
    hx_send_str(&c, "HEAD /api/config HTTP/1.1\r\nHost: x\r\n\r\n"
                    "GET /api/config HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, true));
    assert_int_equal(r.status, 200);
    assert_non_null(hx_header(&r, "Content-Length", v, sizeof v));
    unsigned long head_len = strtoul(v, NULL, 10);
    hx_resp_free(&r);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_true(strstr(r.body, "\"listen\"") != NULL);
    assert_int_equal(r.body_len, head_len); /* the same Content-Length as the GET's */
    hx_resp_free(&r);
    hx_close(&c);
}

static void test_keep_alive_serves_several_requests(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    hx_connect(&c, srv.port);
    static const char *const paths[] = {"/api/config", "/api/gpus", "/api/gpus/1", "/metrics",
                                        "/nope"};
    static const int want[] = {200, 200, 200, 200, 404};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char req[128];
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", paths[i]);
        hx_send_str(&c, req);
        assert_true(hx_read_resp(&c, &r, false));
        assert_int_equal(r.status, want[i]);
        hx_resp_free(&r);
        assert_false(c.eof);
    }
    /* Connection: close ends it after the answer, which says so. */
    char v[32];
    hx_send_str(&c, "GET /api/config HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_non_null(hx_header(&r, "Connection", v, sizeof v));
    assert_string_equal(v, "close");
    hx_resp_free(&r);
    assert_true(hx_wait_closed(&c));
    hx_close(&c);
}

static void test_http10_closes_unless_kept(void **state)
{
    (void)state;
    hx_resp r;
    bool closed = false;
    static const char req[] = "GET /api/config HTTP/1.0\r\n\r\n";
    assert_int_equal(hx_exchange(srv.port, req, sizeof req - 1, &r, &closed), 200);
    assert_true(closed);
    hx_resp_free(&r);
    /* With Keep-Alive, a second request on the same connection is answered. */
    hx_conn c;
    hx_connect(&c, srv.port);
    for (int i = 0; i < 2; i++) {
        hx_send_str(&c, "GET /api/config HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert_true(hx_read_resp(&c, &r, false));
        assert_int_equal(r.status, 200);
        hx_resp_free(&r);
    }
    hx_close(&c);
}

/* A request with a body between two others on one connection: each answered in order, the body
 * never read as a request (libwebsockets 4.1 spun on this; see docs/ARCHITECTURE.md). */
static void test_pipelined_get_post_get_in_order(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    hx_connect(&c, srv.port);
    hx_send_str(&c, "GET /api/config HTTP/1.1\r\nHost: x\r\n\r\n"
                    "POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
                    "GET /api/gpus/0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_true(strstr(r.body, "\"listen\"") != NULL); /* /api/config's answer */
    hx_resp_free(&r);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 404); /* the session worker's answer: no such session */
    assert_json_error(&r);
    hx_resp_free(&r);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_true(strstr(r.body, "\"index\"") != NULL); /* one GPU */
    hx_resp_free(&r);
    assert_true(hx_wait_closed(&c));
    assert_int_equal(c.len, 0); /* nothing more than the three answers */
    hx_close(&c);
}

/* The body of a pipelined POST arriving after its head has been read. */
static void test_body_after_head(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    hx_connect(&c, srv.port);
    hx_send_str(&c, "POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n");
    assert_false(hx_fill(&c, 200)); /* no answer before the body */
    hx_send_str(&c, "{}");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 404);
    hx_resp_free(&r);
    hx_close(&c);
}

/* A POST without Content-Length has no body (RFC 9112 6.3) and is answered
 * without waiting for one; the connection stays usable. */
static void test_post_without_length_answered(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    hx_connect(&c, srv.port);
    hx_send_str(&c, "POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 404);
    assert_json_error(&r);
    hx_resp_free(&r);
    hx_send_str(&c, GET_GPUS);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    hx_resp_free(&r);
    hx_close(&c);
}

/* An Upgrade other than websocket is ignored (RFC 9110 7.8): answered over HTTP/1.1. */
static void test_foreign_upgrade_ignored(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    hx_connect(&c, srv.port);
    hx_send_str(&c,
                "GET /api/config HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n"
                "Connection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_true(strstr(r.body, "\"listen\"") != NULL);
    hx_resp_free(&r);
    hx_send_str(&c, GET_GPUS); /* still HTTP/1.1 on the same connection */
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    hx_resp_free(&r);
    hx_close(&c);
}

/* ---- methods ------------------------------------------------------------------------------ */

static void test_methods(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    char v[80];
    /* A method the path does not take: 405 with Allow, the connection kept. */
    hx_connect(&c, srv.port);
    hx_send_str(&c, "DELETE /api/gpus HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 405);
    assert_json_error(&r);
    assert_non_null(hx_header(&r, "Allow", v, sizeof v));
    assert_non_null(strstr(v, "GET"));
    assert_non_null(strstr(v, "HEAD"));
    assert_null(strstr(v, "DELETE"));
    hx_resp_free(&r);
    hx_send_str(&c, "PUT /api/health HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 405);
    hx_resp_free(&r);
    /* OPTIONS on a known path: 204 with Allow. */
    hx_send_str(&c, "OPTIONS /api/sessions HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 204);
    assert_non_null(strstr(hx_header(&r, "Allow", v, sizeof v), "POST"));
    hx_resp_free(&r);
    hx_close(&c);

    /* Unknown methods and lowercase ones: 501, as JSON, the connection closed. */
    static const char *const unknown[] = {
        "PROPFIND /api/health HTTP/1.1\r\nHost: x\r\n\r\n",
        "BREW /api/health HTTP/1.1\r\nHost: x\r\n\r\n",
        "get /api/health HTTP/1.1\r\nHost: x\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        bool closed = false;
        assert_int_equal(hx_exchange(srv.port, unknown[i], strlen(unknown[i]), &r, &closed), 501);
        assert_true(closed);
        assert_json_error(&r);
        hx_resp_free(&r);
    }
    /* CONNECT and TRACE: 405, closed. */
    assert_refused_str("CONNECT x:80 HTTP/1.1\r\nHost: x\r\n\r\n", 405);
    assert_refused_str("TRACE /api/health HTTP/1.1\r\nHost: x\r\n\r\n", 405);
    assert_serving();
}

/* ---- the wire, strictly ------------------------------------------------------------------- */

static void test_request_line_strictness(void **state)
{
    (void)state;
    assert_refused_str("GET /api/health HTTP/2.0\r\nHost: x\r\n\r\n", 505);
    assert_refused_str("GET /api/health HTTP/9.9\r\nHost: x\r\n\r\n", 505);
    assert_refused_str("GET /api/health HTTPS/1.1\r\nHost: x\r\n\r\n", 400);
    assert_refused_str("GET /api/health%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400);
    /* Header names must be tokens, values free of control bytes; one Host. */
    assert_refused_str("GET /api/health HTTP/1.1\r\nHost: x\r\nX-Ctl: a\x01z\r\n\r\n", 400);
    assert_refused_str("GET /api/health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400);
    assert_serving();
}

static void test_content_length_rules(void **state)
{
    (void)state;
    static const char *const malformed[] = {"abc", "-1", "5 x", "0x5", "+5"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        char req[256];
        snprintf(req, sizeof req,
                 "POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 "Content-Length: %s\r\n\r\nhello",
                 malformed[i]);
        hx_resp r;
        bool closed = false;
        int status = hx_exchange(srv.port, req, strlen(req), &r, &closed);
        if (status != 400)
            fail_msg("Content-Length: %s: status %d, want 400", malformed[i], status);
        assert_true(closed);
        hx_resp_free(&r);
    }
    /* Two lengths, or a length and chunked: refused, and what follows never becomes a
     * request (smuggling). */
    assert_refused_str(
        "POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 0\r\nContent-Length: 5\r\n"
        "\r\nGET /api/health HTTP/1.1\r\n\r\n",
        400);
    hx_resp r;
    static const char chunked[] = "POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n"
                                  "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                                  "\r\n2\r\n{}\r\n0\r\n\r\nGET /api/health HTTP/1.1\r\n\r\n";
    bool closed = false;
    hx_conn c;
    hx_connect(&c, srv.port);
    hx_send(&c, chunked, sizeof chunked - 1);
    closed = hx_wait_closed(&c);
    assert_true(hx_parse_resp(&c, &r, false));
    assert_int_equal(r.status, 411);
    hx_resp_free(&r);
    assert_false(hx_parse_resp(&c, &r, false)); /* one answer only */
    assert_true(closed);
    hx_close(&c);
    assert_serving();
}

static void test_body_limits(void **state)
{
    (void)state;
    char req[256];
    /* Over the limit of POST /api/sessions: judged by Content-Length before any body byte. */
    snprintf(req, sizeof req,
             "POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %d\r\n\r\n",
             65536 + 1);
    hx_resp r;
    bool closed = false;
    assert_int_equal(hx_exchange(srv.port, req, strlen(req), &r, &closed), 413);
    assert_true(closed);
    assert_json_error(&r);
    hx_resp_free(&r);
    /* A body where none is taken. */
    assert_refused_str("GET /api/health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
                       413);
    /* A body that is not JSON. */
    assert_refused_str("POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}",
                       415);
    assert_serving();
}

static void test_oversized_headers(void **state)
{
    (void)state;
    /* More than the 8 KiB connection memory: 431 and the connection closed. */
    size_t n = 20000;
    char *req = malloc(n + 128);
    assert_non_null(req);
    int k = snprintf(req, 128, "GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(req + k, 'a', n);
    memcpy(req + k + n, "\r\n\r\n", 4);
    assert_refused(req, (size_t)k + n + 4, 431);
    free(req);
    /* A target over 4096 bytes that still fits the memory: 414. */
    char target[4200 + 64];
    k = snprintf(target, 64, "GET /api/gpus?");
    memset(target + k, 'a', 4200);
    snprintf(target + k + 4200, 64, " HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_refused_str(target, 414);
    assert_serving();
}

/* ---- the token (a daemon of its own) ------------------------------------------------------ */

static hx_server tsrv;

static int token_setup(void **state)
{
    (void)state;
    static const char *const extra[] = {"--token", "s3cret"};
    return hx_server_start(&tsrv, extra, 2);
}

static int token_teardown(void **state)
{
    (void)state;
    return hx_server_stop(&tsrv) == GM_OK ? 0 : -1;
}

static void test_token_guards_requests(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    char v[64];
    hx_connect(&c, tsrv.port);
    /* A bodiless POST without the token: 401 with the challenge, connection kept. */
    hx_send_str(&c, "POST /api/sessions HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 401);
    assert_json_error(&r);
    assert_non_null(hx_header(&r, "WWW-Authenticate", v, sizeof v));
    assert_string_equal(v, "Bearer realm=\"gpumon\"");
    hx_resp_free(&r);
    /* A wrong token, and a GET: 401 too (every API path needs it). */
    hx_send_str(&c, "POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n"
                    "Authorization: Bearer s3cre\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 401);
    hx_resp_free(&r);
    hx_send_str(&c, GET_GPUS);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 401);
    hx_resp_free(&r);
    /* The right one passes the guard: the route answers (no such session). */
    hx_send_str(&c, "POST /api/sessions/nope/stop HTTP/1.1\r\nHost: x\r\n"
                    "Authorization: Bearer s3cret\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 404);
    hx_resp_free(&r);
    hx_send_str(&c, "GET /api/gpus HTTP/1.1\r\nHost: x\r\nAuthorization: bearer  s3cret \r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    hx_resp_free(&r);
    hx_close(&c);
    /* With a body and no token: 401, and the unread body never read as a request. */
    hx_resp rr;
    bool closed = false;
    static const char body[] = "POST /api/sessions HTTP/1.1\r\nHost: x\r\n"
                               "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    assert_int_equal(hx_exchange(tsrv.port, body, sizeof body - 1, &rr, &closed), 401);
    assert_true(closed);
    assert_non_null(hx_header(&rr, "WWW-Authenticate", v, sizeof v));
    hx_resp_free(&rr);
}

/* The newest point of the first series of a history answer, -1 when there is none. */
static long long history_newest_ms(const hx_resp *r, long long *seconds)
{
    json_error_t je;
    json_t *j = json_loadb(r->body, r->body_len, 0, &je);
    assert_non_null(j);
    *seconds = json_integer_value(json_object_get(j, "seconds"));
    json_t *pts = json_object_get(json_array_get(json_object_get(j, "series"), 0), "points");
    size_t n = json_array_size(pts);
    long long t = n ? json_integer_value(json_array_get(json_array_get(pts, n - 1), 0)) : -1;
    json_decref(j);
    return t;
}

/* History answers are kept per sample and per target: each target gets its own answer, a HEAD
 * the same head without the body, and a later sample a new answer, never the kept one. */
static void test_history_answers_follow_targets_and_samples(void **state)
{
    (void)state;
#define HIST5 "GET /api/history?metric=utilization.gpu&seconds=5 HTTP/1.1\r\nHost: x\r\n\r\n"
    hx_conn c;
    hx_resp r;
    char v[32];
    long long secs = 0;
    hx_connect(&c, srv.port);
    hx_send_str(&c, HIST5 HIST5
                "HEAD /api/history?metric=utilization.gpu&seconds=5 HTTP/1.1\r\nHost: x\r\n\r\n"
                "GET /api/history?metric=utilization.gpu&seconds=10 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    long long first = history_newest_ms(&r, &secs);
    assert_int_equal(secs, 5);
    assert_true(first > 0);
    hx_resp_free(&r);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_true(history_newest_ms(&r, &secs) >= first);
    hx_resp_free(&r);
    assert_true(hx_read_resp(&c, &r, true));
    assert_int_equal(r.status, 200);
    assert_non_null(hx_header(&r, "Content-Length", v, sizeof v));
    assert_true(strtoul(v, NULL, 10) > 0);
    hx_resp_free(&r);
    /* Had the HEAD carried a body, this would not parse as the next answer. */
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    history_newest_ms(&r, &secs);
    assert_int_equal(secs, 10);
    hx_resp_free(&r);
    /* Samples come every 100 ms: a request half a second later sees newer points. */
    struct timespec ts = {0, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    hx_send_str(&c, HIST5);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    assert_true(history_newest_ms(&r, &secs) > first);
    hx_resp_free(&r);
    hx_close(&c);
#undef HIST5
}

/* More connections waiting in the listen queue than libmicrohttpd takes in one pass: the loop
 * takes them all, and each is served as any other. */
static void test_queued_connections_all_served(void **state)
{
    (void)state;
    enum { N = 200 };
    static hx_conn cs[N];
    static const char req[] = "GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int i = 0; i < N; i++)
        hx_connect(&cs[i], srv.port);
    for (int i = 0; i < N; i++)
        hx_send(&cs[i], req, sizeof req - 1);
    for (int i = 0; i < N; i++) {
        hx_resp r;
        assert_true(hx_read_resp(&cs[i], &r, false));
        assert_int_equal(r.status, 200);
        hx_resp_free(&r);
        hx_close(&cs[i]);
    }
    assert_serving();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_status_line_and_headers),
        cmocka_unit_test(test_head_has_length_but_no_body),
        cmocka_unit_test(test_keep_alive_serves_several_requests),
        cmocka_unit_test(test_http10_closes_unless_kept),
        cmocka_unit_test(test_pipelined_get_post_get_in_order),
        cmocka_unit_test(test_body_after_head),
        cmocka_unit_test(test_post_without_length_answered),
        cmocka_unit_test(test_foreign_upgrade_ignored),
        cmocka_unit_test(test_methods),
        cmocka_unit_test(test_request_line_strictness),
        cmocka_unit_test(test_content_length_rules),
        cmocka_unit_test(test_body_limits),
        cmocka_unit_test(test_oversized_headers),
        cmocka_unit_test(test_history_answers_follow_targets_and_samples),
        cmocka_unit_test(test_queued_connections_all_served),
    };
    const struct CMUnitTest token_tests[] = {
        cmocka_unit_test(test_token_guards_requests),
    };
    int failed = cmocka_run_group_tests_name("http", tests, group_setup, group_teardown);
    failed += cmocka_run_group_tests_name("http_token", token_tests, token_setup, token_teardown);
    return failed;
}
