/* request.c - strict HTTP/1.1 request-head checks (RFC 9110, 9112) and target decoding. */
#include "server/request.h"
#include "base/error.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    unsigned bit;
    const char *name;
} methods[] = {
    {GM_HTTP_GET, "GET"},         {GM_HTTP_HEAD, "HEAD"},       {GM_HTTP_POST, "POST"},
    {GM_HTTP_PUT, "PUT"},         {GM_HTTP_PATCH, "PATCH"},     {GM_HTTP_DELETE, "DELETE"},
    {GM_HTTP_OPTIONS, "OPTIONS"}, {GM_HTTP_CONNECT, "CONNECT"}, {GM_HTTP_TRACE, "TRACE"},
};

unsigned gm_http_method(const char *name)
{
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(name, methods[i].name) == 0)
            return methods[i].bit;
    return 0;
}

const char *gm_http_method_name(unsigned bit)
{
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (methods[i].bit == bit)
            return methods[i].name;
    return "?";
}

void gm_http_allow_list(unsigned mask, char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = '\0';
    mask |= GM_HTTP_OPTIONS;
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (mask & methods[i].bit)
            o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? ", " : "",
                                  methods[i].name);
}

bool gm_http_token_ok(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (c && strchr("!#$%&'*+-.^_`|~", c));
        if (!ok)
            return false;
    }
    return true;
}

bool gm_http_value_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int gm_http_pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap,
                       gm_error *err)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            int hi = i + 1 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return gm_error_set(err, GM_EINVAL, "malformed percent-encoding");
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
            if (c == 0)
                return gm_error_set(err, GM_EINVAL, "%%00 is not allowed in a request target");
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        if (c < 0x20 || c == 0x7f)
            return gm_error_set(err, GM_EINVAL, "control character in the request target");
        if (o + 1 >= cap)
            return gm_error_set(err, GM_EINVAL, "request target part longer than %zu bytes",
                                cap ? cap - 1 : 0);
        out[o++] = (char)c;
    }
    if (cap)
        out[o] = '\0';
    return (int)o;
}

int gm_http_target_parse(const char *raw, size_t n, char *path, size_t path_cap, gm_query *q,
                         gm_error *err)
{
    gm_query_init(q);
    if (n == 0 || raw[0] != '/')
        return gm_error_set(err, GM_EINVAL,
                            "the request target must be a path starting with \"/\"");
    const char *qm = memchr(raw, '?', n);
    size_t plen = qm ? (size_t)(qm - raw) : n;
    /* A fragment is never sent by a conforming client. */
    if (memchr(raw, '#', n))
        return gm_error_set(err, GM_EINVAL, "'#' is not allowed in a request target");
    int rc = gm_http_pct_decode(raw, plen, false, path, path_cap, err);
    if (rc < 0)
        return rc;
    if (!qm)
        return GM_OK;
    return gm_query_parse(q, qm + 1, n - plen - 1, err);
}

bool gm_ws_key_ok(const char *key)
{
    /* 16 bytes are 24 base64 characters, the last two "==", the one before from a reduced set
     * (its low four bits are padding and must be zero). */
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (!key || strlen(key) != 24 || key[22] != '=' || key[23] != '=')
        return false;
    for (int i = 0; i < 22; i++)
        if (!key[i] || !strchr(b64, key[i]))
            return false;
    return strchr("AQgw", key[21]) != NULL;
}

bool gm_http_list_has(const char *list, const char *token)
{
    size_t tl = strlen(token);
    const char *p = list;
    while (p && *p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *end = p;
        while (*end && *end != ',')
            end++;
        const char *e = end;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if ((size_t)(e - p) == tl && strncasecmp(p, token, tl) == 0)
            return true;
        p = end;
    }
    return false;
}
