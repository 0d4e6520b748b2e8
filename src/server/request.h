/* request.h - the strict reading of an HTTP/1.1 request head, done before any route sees it:
 * method names, header field syntax, the request target (path and query, percent-decoded once),
 * and the WebSocket handshake key. Pure functions, unit-tested and fuzzed: what libmicrohttpd
 * tolerates (a space in a header name, a second Content-Length, %00) is refused here, so a
 * request is never read one way by a proxy and another way by gpumon. */
#ifndef GM_SERVER_REQUEST_H
#define GM_SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "gpumon.h"
#include "server/query.h"

/* Methods as bits, so a route can list what it allows. */
enum {
    GM_HTTP_GET = 1 << 0,
    GM_HTTP_HEAD = 1 << 1,
    GM_HTTP_POST = 1 << 2,
    GM_HTTP_PUT = 1 << 3,
    GM_HTTP_PATCH = 1 << 4,
    GM_HTTP_DELETE = 1 << 5,
    GM_HTTP_OPTIONS = 1 << 6,
    GM_HTTP_CONNECT = 1 << 7,
    GM_HTTP_TRACE = 1 << 8,
};

#define GM_HTTP_PATH_MAX 1024 /* decoded path bytes; no route is near this */
#define GM_HTTP_URI_MAX  4096 /* raw request target; longer ones get 414 */

/* The bit of a method name (case-sensitive, as RFC 9110 says), 0 when it is not one of the
 * methods above: such requests get 501. */
unsigned gm_http_method(const char *name);

/* The name of one method bit ("GET"), "?" for anything else. */
const char *gm_http_method_name(unsigned bit);

/* "GET, HEAD, OPTIONS" for a mask (OPTIONS always added) into buf. */
void gm_http_allow_list(unsigned mask, char *buf, size_t len);

/* True when s[0..n) is a non-empty RFC 9110 token (a header field name). */
bool gm_http_token_ok(const char *s, size_t n);

/* True when s[0..n) is a valid field value: visible bytes, spaces and tabs, obs-text; no other
 * control character. */
bool gm_http_value_ok(const char *s, size_t n);

/* Splits a raw origin-form request target "/path[?query]" (n bytes) into the percent-decoded
 * path (NUL-terminated, at most path_cap - 1 bytes) and the query parameters (gm_query_parse).
 * GM_EINVAL with a message for a target that is not origin-form, malformed or NUL
 * percent-encoding, a control character, or a path longer than path_cap - 1. */
int gm_http_target_parse(const char *raw, size_t n, char *path, size_t path_cap, gm_query *q,
                         gm_error *err);

/* Decodes %XX escapes of s[0..n) into out (cap bytes, NUL-terminated); with plus_space, '+' is
 * a space (query strings). GM_EINVAL with a message for a malformed escape, %00, a control
 * character, or no room. Returns the decoded length. */
int gm_http_pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap,
                       gm_error *err);

/* True when key is a Sec-WebSocket-Key: base64 of exactly 16 bytes (RFC 6455 4.2.1). */
bool gm_ws_key_ok(const char *key);

/* True when the comma-separated header value list contains token (case-insensitive), as in
 * "Connection: keep-alive, Upgrade". */
bool gm_http_list_has(const char *list, const char *token);

#endif
