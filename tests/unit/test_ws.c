/* test_ws.c - server/ws: the WebSocket streams, through the real daemon in-process
 * (server_harness.h) and raw sockets: the handshake (101 with Sec-WebSocket-Accept as RFC 6455
 * computes it, checked against the RFC's own example and a key of our own hashed with nettle),
 * the first frame of each stream (the newest sample, /ws/gpu with the keys of GET /api/gpus),
 * ping and pong, the close handshake, and a close frame with the matching code for each breach
 * of the protocol (1002, 1007, 1009); refused handshakes (400, 426, 404, and 401 without the
 * token on a daemon with --token, where ?token= and the header are accepted). The deadlines
 * (pings after 30 s, stuck clients) are end-to-end (tests/e2e/test_hostile.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>

#include "server_harness.h"

static hx_server srv;

/* RFC 6455 section 1.3's example. */
#define RFC_KEY    "dGhlIHNhbXBsZSBub25jZQ=="
#define RFC_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

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

/* Sends an upgrade request for target with key and extra header lines; reads the answer's head
 * into r (frames that follow stay in c's buffer). */
static void ws_request(hx_conn *c, unsigned port, const char *target, const char *key,
                       const char *extra, hx_resp *r)
{
    char req[1024];
    snprintf(req, sizeof req,
             "GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n%s\r\n",
             target, key, extra ? extra : "");
    hx_connect(c, port);
    hx_send_str(c, req);
    assert_true(hx_read_resp(c, r, false));
}

/* An open stream. */
static void ws_open(hx_conn *c, const char *target)
{
    hx_resp r;
    ws_request(c, srv.port, target, RFC_KEY, NULL, &r);
    assert_int_equal(r.status, 101);
    hx_resp_free(&r);
}

/* A client frame: masked unless told otherwise, with a declared length (else the payload's). */
static size_t frame(uint8_t *out, uint8_t b0, const void *payload, size_t n, bool mask,
                    uint64_t declared)
{
    static const uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
    size_t h = 0;
    out[h++] = b0;
    uint8_t m = mask ? 0x80 : 0;
    uint64_t len = declared ? declared : n;
    if (len < 126) {
        out[h++] = m | (uint8_t)len;
    } else if (len < 65536) {
        out[h++] = m | 126;
        out[h++] = (uint8_t)(len >> 8);
        out[h++] = (uint8_t)len;
    } else {
        out[h++] = m | 127;
        for (int i = 0; i < 8; i++)
            out[h++] = (uint8_t)(len >> (56 - 8 * i));
    }
    if (mask) {
        memcpy(out + h, key, 4);
        h += 4;
    }
    const uint8_t *p = payload;
    for (size_t i = 0; i < n; i++)
        out[h + i] = mask ? p[i] ^ key[i % 4] : p[i];
    return h + n;
}

/* A server frame read off the connection. */
typedef struct ws_frame {
    uint8_t b0, opcode;
    bool masked;
    uint8_t *payload;
    size_t len;
} ws_frame;

/* Takes the next whole frame (waiting for it); false when the connection ends first. */
static bool ws_read(hx_conn *c, ws_frame *f)
{
    int64_t deadline = gm_clock_mono_ms() + HX_TIMEOUT_MS;
    for (;;) {
        const uint8_t *b = (const uint8_t *)c->buf;
        if (c->len >= 2) {
            size_t h = 2;
            uint64_t n = b[1] & 0x7f;
            if (n == 126 && c->len >= 4) {
                n = (uint64_t)b[2] << 8 | b[3];
                h = 4;
            } else if (n == 127 && c->len >= 10) {
                n = 0;
                for (int i = 0; i < 8; i++)
                    n = n << 8 | b[2 + i];
                h = 10;
            }
            bool have_len = (b[1] & 0x7f) < 126 || h > 2;
            if (have_len && c->len >= h + n) {
                f->b0 = b[0];
                f->opcode = b[0] & 0x0f;
                f->masked = b[1] & 0x80;
                f->len = (size_t)n;
                f->payload = malloc(f->len + 1);
                assert_non_null(f->payload);
                memcpy(f->payload, b + h, f->len);
                f->payload[f->len] = 0;
                hx_consume(c, h + f->len);
                return true;
            }
        }
        if (c->eof || gm_clock_mono_ms() >= deadline)
            return false;
        hx_fill(c, 200);
    }
}

/* Skips data frames up to the close frame: its code (1005 when it has none), -1 when the
 * connection ends without one. */
static int ws_close_code(hx_conn *c)
{
    ws_frame f;
    while (ws_read(c, &f)) {
        int code = -2;
        if (f.opcode == 0x8)
            code = f.len >= 2 ? f.payload[0] << 8 | f.payload[1] : 1005;
        free(f.payload);
        if (code != -2)
            return code;
    }
    return -1;
}

/* ---- the handshake ------------------------------------------------------------------------ */

static void test_handshake_accept_rfc_example(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    char v[64];
    ws_request(&c, srv.port, "/ws/gpu", RFC_KEY, NULL, &r);
    assert_memory_equal(r.head, "HTTP/1.1 101 ", 13);
    assert_string_equal(hx_header(&r, "Sec-WebSocket-Accept", v, sizeof v), RFC_ACCEPT);
    assert_string_equal(hx_header(&r, "Upgrade", v, sizeof v), "websocket");
    assert_non_null(hx_header(&r, "Connection", v, sizeof v));
    assert_non_null(strcasestr(v, "upgrade"));
    /* No subprotocol is chosen, none echoed. */
    assert_null(hx_header(&r, "Sec-WebSocket-Protocol", v, sizeof v));
    hx_resp_free(&r);
    hx_close(&c);
}

static void test_handshake_accept_computed(void **state)
{
    (void)state;
    /* Another key, its answer computed here as RFC 6455 4.2.2 says: base64(SHA-1(key + GUID)). */
    static const char key[] = "AQIDBAUGBwgJCgsMDQ4PEA==";
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    struct sha1_ctx sha;
    uint8_t digest[SHA1_DIGEST_SIZE];
    char want[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
    sha1_init(&sha);
    sha1_update(&sha, sizeof key - 1, (const uint8_t *)key);
    sha1_update(&sha, sizeof guid - 1, (const uint8_t *)guid);
    sha1_digest(&sha, sizeof digest, digest);
    base64_encode_raw(want, sizeof digest, digest);
    want[sizeof want - 1] = '\0';
    assert_int_equal(strlen(want), 28);

    hx_conn c;
    hx_resp r;
    char v[64];
    ws_request(&c, srv.port, "/ws/metrics", key, NULL, &r);
    assert_int_equal(r.status, 101);
    assert_string_equal(hx_header(&r, "Sec-WebSocket-Accept", v, sizeof v), want);
    hx_resp_free(&r);
    hx_close(&c);
}

/* An upgrade refused: the status, a JSON error, and the connection closed. */
static void assert_upgrade_refused(const char *req, int want, hx_resp *keep)
{
    hx_resp r;
    bool closed = false;
    int status = hx_exchange(srv.port, req, strlen(req), &r, &closed);
    if (status != want || !closed)
        fail_msg("%.90s...: status %d, want %d; %s", req, status, want,
                 closed ? "closed" : "left open");
    json_error_t je;
    json_t *j = json_loadb(r.body, r.body_len, 0, &je);
    assert_non_null(j);
    assert_true(json_is_string(json_object_get(j, "error")));
    json_decref(j);
    if (keep)
        *keep = r;
    else
        hx_resp_free(&r);
}

static void test_handshake_refusals(void **state)
{
    (void)state;
    char v[32];
    hx_resp r;
#define H         "GET /ws/gpu HTTP/1.1\r\nHost: x\r\n"
#define UPG       "Upgrade: websocket\r\nConnection: Upgrade\r\n"
#define KEY       "Sec-WebSocket-Key: " RFC_KEY "\r\n"
#define CLOSE_HDR "Connection: close\r\n"
    /* Another version: 426 naming the one supported. */
    assert_upgrade_refused(H UPG "Sec-WebSocket-Version: 8\r\n" KEY "\r\n", 426, &r);
    assert_string_equal(hx_header(&r, "Sec-WebSocket-Version", v, sizeof v), "13");
    hx_resp_free(&r);
    assert_upgrade_refused(H UPG KEY "\r\n", 426, NULL); /* no version at all */
    /* No key, a key that is not 16 bytes of base64. */
    assert_upgrade_refused(H UPG "Sec-WebSocket-Version: 13\r\n\r\n", 400, NULL);
    assert_upgrade_refused(H UPG "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short\r\n\r\n",
                           400, NULL);
    assert_upgrade_refused(H UPG "Sec-WebSocket-Version: 13\r\n"
                                 "Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEBE=\r\n\r\n",
                           400, NULL);
    /* No "Connection: Upgrade"; an upgrade to something else on a stream path. */
    assert_upgrade_refused(H "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" KEY "\r\n", 400,
                           NULL);
    assert_upgrade_refused(H "Upgrade: h2c\r\nConnection: Upgrade\r\n\r\n", 400, NULL);
    /* A body with the upgrade. */
    assert_upgrade_refused(H UPG "Sec-WebSocket-Version: 13\r\n" KEY "Content-Length: 2\r\n\r\nhi",
                           400, NULL);
    /* Another path: 404 as JSON, and closed, as every refused upgrade (docs/API.md). */
    assert_upgrade_refused("GET /ws/nope HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" KEY "\r\n",
                           404, NULL);
    /* A plain GET of a stream: 426 (the route's answer; the connection may stay). */
    assert_upgrade_refused(H CLOSE_HDR "\r\n", 426, NULL);
#undef H
#undef UPG
#undef KEY
#undef CLOSE_HDR
}

/* ---- frames out --------------------------------------------------------------------------- */

/* The top-level keys of a JSON object, as a sorted comma-separated list. */
static void keys_of(json_t *o, char *out, size_t len)
{
    const char *names[64];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (n < 64)
            names[n++] = k;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s,", names[i]);
}

static void test_gpu_stream_first_frame(void **state)
{
    (void)state;
    /* GET /api/gpus's keys, to compare the frame's with (the sample itself moves on). */
    hx_conn c;
    hx_resp r;
    hx_connect(&c, srv.port);
    hx_send_str(&c, "GET /api/gpus HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 200);
    json_error_t je;
    json_t *api = json_loadb(r.body, r.body_len, 0, &je);
    assert_non_null(api);
    hx_resp_free(&r);
    hx_close(&c);

    ws_open(&c, "/ws/gpu");
    ws_frame f;
    assert_true(ws_read(&c, &f));
    assert_int_equal(f.b0, 0x81); /* a whole text frame */
    assert_false(f.masked);       /* server frames are never masked */
    json_t *j = json_loadb((const char *)f.payload, f.len, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "gpu_count")), 2);
    assert_int_equal(json_array_size(json_object_get(j, "gpus")), 2);
    assert_true(json_is_integer(json_object_get(j, "seq")));
    char ka[2048], kf[2048];
    keys_of(api, ka, sizeof ka);
    keys_of(j, kf, sizeof kf);
    assert_string_equal(kf, ka);
    keys_of(json_array_get(json_object_get(api, "gpus"), 0), ka, sizeof ka);
    keys_of(json_array_get(json_object_get(j, "gpus"), 0), kf, sizeof kf);
    assert_string_equal(kf, ka);
    /* The next frame is a newer sample. */
    json_int_t seq = json_integer_value(json_object_get(j, "seq"));
    json_decref(j);
    free(f.payload);
    assert_true(ws_read(&c, &f));
    j = json_loadb((const char *)f.payload, f.len, 0, &je);
    assert_non_null(j);
    assert_true(json_integer_value(json_object_get(j, "seq")) > seq);
    json_decref(j);
    free(f.payload);
    json_decref(api);
    hx_close(&c);
}

static void test_metrics_stream_first_frame(void **state)
{
    (void)state;
    hx_conn c;
    ws_frame f;
    ws_open(&c, "/ws/metrics");
    assert_true(ws_read(&c, &f));
    assert_int_equal(f.b0, 0x81);
    json_error_t je;
    json_t *j = json_loadb((const char *)f.payload, f.len, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "gpu_metrics")), 2);
    json_decref(j);
    free(f.payload);
    hx_close(&c);
}

/* ---- frames in ---------------------------------------------------------------------------- */

static void test_ping_gets_pong(void **state)
{
    (void)state;
    hx_conn c;
    uint8_t buf[64];
    ws_open(&c, "/ws/metrics");
    hx_send(&c, buf, frame(buf, 0x89, "hello", 5, true, 0));
    ws_frame f;
    bool pong = false;
    while (!pong && ws_read(&c, &f)) {
        if (f.opcode == 0xA) {
            pong = true;
            assert_int_equal(f.b0, 0x8A);
            assert_false(f.masked);
            assert_int_equal(f.len, 5);
            assert_memory_equal(f.payload, "hello", 5);
        }
        free(f.payload);
    }
    assert_true(pong);
    /* A text message is read and ignored: the stream goes on. */
    hx_send(&c, buf, frame(buf, 0x81, "h\xc3\xa9", 3, true, 0));
    assert_true(ws_read(&c, &f));
    assert_int_not_equal(f.opcode, 0x8);
    free(f.payload);
    hx_close(&c);
}

static void test_close_handshake_echoed(void **state)
{
    (void)state;
    hx_conn c;
    uint8_t buf[64];
    ws_open(&c, "/ws/gpu");
    hx_send(&c, buf,
            frame(buf, 0x88,
                  "\x03\xe8"
                  "bye",
                  5, true, 0));
    assert_int_equal(ws_close_code(&c), 1000);
    assert_true(hx_wait_closed(&c)); /* then the server closes */
    hx_close(&c);
    /* A close without a code is answered 1000. */
    ws_open(&c, "/ws/gpu");
    hx_send(&c, buf, frame(buf, 0x88, "", 0, true, 0));
    assert_int_equal(ws_close_code(&c), 1000);
    hx_close(&c);
}

/* One violation on a fresh stream: the close code it earns, then the end of the connection. */
static void assert_violation(const char *name, const uint8_t *data, size_t n, int want)
{
    hx_conn c;
    ws_open(&c, "/ws/metrics");
    hx_send(&c, data, n);
    int code = ws_close_code(&c);
    if (code != want)
        fail_msg("%s: close code %d, want %d", name, code, want);
    hx_send(&c, "\x88\x80\0\0\0\0", 6); /* our close, masked, empty: the drain ends */
    assert_true(hx_wait_closed(&c));
    hx_close(&c);
}

static void test_protocol_violations(void **state)
{
    (void)state;
    uint8_t b[8192], big[5000];
    size_t n;
    memset(big, 'x', sizeof big);

    n = frame(b, 0x81, "hi", 2, false, 0);
    assert_violation("unmasked", b, n, 1002);
    n = frame(b, 0x81, "\xff\xfe", 2, true, 0);
    assert_violation("invalid UTF-8", b, n, 1007);
    n = frame(b, 0x01, "\xc3", 1, true, 0);
    n += frame(b + n, 0x80, "", 0, true, 0);
    assert_violation("UTF-8 cut at the message's end", b, n, 1007);
    n = frame(b, 0x01, "\xc3", 1, true, 0);
    n += frame(b + n, 0x80, "\xa9", 1, true, 0);
    hx_conn c;
    ws_open(&c, "/ws/metrics"); /* ...but a character split across fragments is fine */
    hx_send(&c, b, n);
    hx_send(&c, b, frame(b, 0x89, "p", 1, true, 0));
    ws_frame f;
    bool pong = false;
    while (!pong && ws_read(&c, &f)) {
        assert_int_not_equal(f.opcode, 0x8);
        pong = f.opcode == 0xA;
        free(f.payload);
    }
    assert_true(pong);
    hx_close(&c);

    /* Declared lengths: 2^63 is no length (its top bit must be 0), 2^62 is merely too big. */
    n = frame(b, 0x81, "x", 1, true, UINT64_C(1) << 63);
    assert_violation("2^63-byte frame", b, n, 1002);
    n = frame(b, 0x81, "x", 1, true, UINT64_C(1) << 62);
    assert_violation("2^62-byte frame", b, n, 1009);
    n = frame(b, 0x82, big, sizeof big, true, 0);
    assert_violation("message over 4096 bytes", b, n, 1009);
    n = frame(b, 0x01, big, 3000, true, 0);
    n += frame(b + n, 0x80, big, 3000, true, 0);
    assert_violation("fragments over 4096 bytes together", b, n, 1009);

    n = frame(b, 0x09, "p", 1, true, 0);
    assert_violation("fragmented ping", b, n, 1002);
    n = frame(b, 0x89, big, 126, true, 0);
    assert_violation("ping over 125 bytes", b, n, 1002);
    n = frame(b, 0xC1, "a", 1, true, 0);
    assert_violation("reserved bit", b, n, 1002);
    n = frame(b, 0x80, "a", 1, true, 0);
    assert_violation("continuation first", b, n, 1002);
    n = frame(b, 0x01, "a", 1, true, 0);
    n += frame(b + n, 0x81, "b", 1, true, 0);
    assert_violation("new message inside one", b, n, 1002);
    n = frame(b, 0x83, "a", 1, true, 0);
    assert_violation("unknown opcode", b, n, 1002);
    n = frame(b, 0x88, "\x03\xe7", 2, true, 0);
    assert_violation("close code 999", b, n, 1002);
    n = frame(b, 0x88, "\x03", 1, true, 0);
    assert_violation("close with one byte", b, n, 1002);
    n = frame(b, 0x88, "\x03\xe8\xff", 3, true, 0);
    assert_violation("close reason not UTF-8", b, n, 1007);

    /* The daemon still serves. */
    static const char req[] = "GET /api/config HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(hx_exchange(srv.port, req, sizeof req - 1, NULL, NULL), 200);
}

/* Bytes sent with the handshake (before the 101) are read as frames. */
static void test_frames_with_the_handshake(void **state)
{
    (void)state;
    char req[512];
    int k = snprintf(req, sizeof req,
                     "GET /ws/metrics HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Key: " RFC_KEY "\r\n\r\n");
    size_t n = (size_t)k + frame((uint8_t *)req + k, 0x89, "early", 5, true, 0);
    hx_conn c;
    hx_resp r;
    hx_connect(&c, srv.port);
    hx_send(&c, req, n);
    assert_true(hx_read_resp(&c, &r, false));
    assert_int_equal(r.status, 101);
    hx_resp_free(&r);
    ws_frame f;
    bool pong = false;
    while (!pong && ws_read(&c, &f)) {
        pong = f.opcode == 0xA;
        if (pong)
            assert_memory_equal(f.payload, "early", 5);
        free(f.payload);
    }
    assert_true(pong);
    hx_close(&c);
}

/* ---- the token (a daemon of its own) ------------------------------------------------------ */

static hx_server tsrv;

static int token_setup(void **state)
{
    (void)state;
    static const char *const extra[] = {"--token", "s3cr+t"};
    return hx_server_start(&tsrv, extra, 2);
}

static int token_teardown(void **state)
{
    (void)state;
    return hx_server_stop(&tsrv) == GM_OK ? 0 : -1;
}

static void test_token_on_upgrade(void **state)
{
    (void)state;
    hx_conn c;
    hx_resp r;
    char v[64];
    ws_request(&c, tsrv.port, "/ws/gpu", RFC_KEY, NULL, &r);
    assert_int_equal(r.status, 401);
    assert_non_null(hx_header(&r, "WWW-Authenticate", v, sizeof v));
    hx_resp_free(&r);
    assert_true(hx_wait_closed(&c));
    hx_close(&c);
    ws_request(&c, tsrv.port, "/ws/gpu?token=wrong", RFC_KEY, NULL, &r);
    assert_int_equal(r.status, 401);
    hx_resp_free(&r);
    hx_close(&c);
    /* Browsers cannot set headers on a WebSocket: ?token= (percent-encoded) does. */
    ws_request(&c, tsrv.port, "/ws/gpu?token=s3cr%2Bt", RFC_KEY, NULL, &r);
    assert_int_equal(r.status, 101);
    hx_resp_free(&r);
    ws_frame f;
    assert_true(ws_read(&c, &f));
    assert_int_equal(f.opcode, 0x1);
    free(f.payload);
    hx_close(&c);
    ws_request(&c, tsrv.port, "/ws/metrics", RFC_KEY, "Authorization: Bearer s3cr+t\r\n", &r);
    assert_int_equal(r.status, 101);
    hx_resp_free(&r);
    hx_close(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_accept_rfc_example),
        cmocka_unit_test(test_handshake_accept_computed),
        cmocka_unit_test(test_handshake_refusals),
        cmocka_unit_test(test_gpu_stream_first_frame),
        cmocka_unit_test(test_metrics_stream_first_frame),
        cmocka_unit_test(test_ping_gets_pong),
        cmocka_unit_test(test_close_handshake_echoed),
        cmocka_unit_test(test_protocol_violations),
        cmocka_unit_test(test_frames_with_the_handshake),
    };
    const struct CMUnitTest token_tests[] = {
        cmocka_unit_test(test_token_on_upgrade),
    };
    int failed = cmocka_run_group_tests_name("ws", tests, group_setup, group_teardown);
    failed += cmocka_run_group_tests_name("ws_token", token_tests, token_setup, token_teardown);
    return failed;
}
