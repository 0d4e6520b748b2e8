/* remote.c - GET /api/gpus of a daemon into a gm_snapshot, for top and query --connect. */
#include "cli/remote.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/curl.h"
#include "base/json.h"
#include "base/json_read.h"
#include "base/error.h"

struct gm_cli_remote {
    CURL *curl;
    struct curl_slist *headers;
    char url[1024]; /* .../api/gpus */
    char where[1024];
    bool loopback;
};

const char *gm_cli_remote_token(const char *given)
{
    if (given)
        return given;
    const char *env = getenv("GPU_MONITOR_TOKEN");
    return env && *env ? env : NULL;
}

/* Whether host (as written in a URL) is this machine. */
static bool host_is_loopback(const char *host, size_t len)
{
    return (len == 9 && strncasecmp(host, "localhost", 9) == 0) ||
           (len >= 4 && strncmp(host, "127.", 4) == 0) ||
           (len == 5 && strncmp(host, "[::1]", 5) == 0);
}

gm_cli_remote *gm_cli_remote_open(const char *url, const char *token, double timeout_s,
                                  gm_error *err)
{
    const char *rest = url;
    const char *scheme = "http://";
    if (strncmp(url, "http://", 7) == 0)
        rest = url + 7;
    else if (strncmp(url, "https://", 8) == 0) {
        rest = url + 8;
        scheme = "https://";
    } else if (strstr(url, "://")) {
        gm_error_set(err, GM_EINVAL, "--connect \"%s\": only http:// and https:// URLs", url);
        return NULL;
    }
    size_t hostlen = strcspn(rest, ":/");
    if (rest[0] == '[') {
        const char *close = strchr(rest, ']');
        hostlen = close ? (size_t)(close - rest) + 1 : strlen(rest);
    }
    size_t len = strlen(rest);
    while (len && rest[len - 1] == '/')
        len--;
    if (hostlen == 0 || len + strlen(scheme) + 16 > 1000) {
        gm_error_set(err, GM_EINVAL, "--connect \"%s\" is not a URL such as http://127.0.0.1:9401",
                     url);
        return NULL;
    }
    if (token && strlen(token) > 1000) {
        gm_error_set(err, GM_EINVAL, "the token is longer than 1000 bytes");
        return NULL;
    }
    if (gm_curl_start(err) < 0)
        return NULL;
    gm_cli_remote *r = calloc(1, sizeof *r);
    if (!r) {
        gm_error_set(err, GM_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(r->where, sizeof r->where, "%s%.*s", scheme, (int)len, rest);
    snprintf(r->url, sizeof r->url, "%s/api/gpus", r->where);
    r->loopback = host_is_loopback(rest, hostlen);
    r->curl = curl_easy_init();
    if (!r->curl) {
        gm_error_set(err, GM_ENOMEM, "cannot start libcurl");
        gm_cli_remote_close(r);
        return NULL;
    }
    if (token && *token) {
        char h[64 + 1024];
        snprintf(h, sizeof h, "Authorization: Bearer %s", token);
        r->headers = curl_slist_append(NULL, h);
    }
    long ms = (long)(timeout_s * 1000);
    curl_easy_setopt(r->curl, CURLOPT_URL, r->url);
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 2000);
    curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 2000);
    curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->curl, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    return r;
}

void gm_cli_remote_close(gm_cli_remote *r)
{
    if (!r)
        return;
    if (r->curl)
        curl_easy_cleanup(r->curl);
    curl_slist_free_all(r->headers);
    free(r);
}

const char *gm_cli_remote_where(const gm_cli_remote *r)
{
    return r->where;
}

bool gm_cli_remote_loopback(const gm_cli_remote *r)
{
    return r->loopback;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    gm_buf *b = ud;
    /* A /api/gpus body is some KiB per GPU; refuse anything absurd rather than grow forever. */
    if (b->len + size * n > (64u << 20))
        return 0;
    gm_buf_put(b, data, size * n);
    return b->failed ? 0 : size * n;
}

int gm_cli_remote_read(gm_cli_remote *r, gm_snapshot *s, gm_error *err)
{
    gm_buf b;
    gm_buf_init(&b, 0);
    curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &b);
    CURLcode cc = curl_easy_perform(r->curl);
    long status = 0;
    curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
    int rc = GM_OK;
    if (cc != CURLE_OK) {
        rc = gm_error_set(err, GM_EIO, "%s: %s", r->where, curl_easy_strerror(cc));
    } else if (status == 401 || status == 403) {
        rc = gm_error_set(err, GM_EPERM,
                          "%s answered %ld: give its token with --token or GPU_MONITOR_TOKEN",
                          r->where, status);
    } else if (status != 200) {
        rc = gm_error_set(err, GM_EIO, "%s answered %ld to GET /api/gpus", r->where, status);
    } else {
        json_error_t jerr;
        json_t *doc = gm_json_loadb(b.p ? b.p : "", b.len, 0, &jerr);
        gm_error perr = {0};
        if (!doc)
            rc = gm_error_set(err, GM_EPARSE, "%s: /api/gpus is not JSON: %s", r->where, jerr.text);
        else if (gm_json_read_snapshot(doc, s, &perr) < 0)
            rc = gm_error_set(err, GM_EPARSE, "%s: /api/gpus is not the JSON expected: %s",
                              r->where, perr.msg);
        json_decref(doc);
    }
    gm_buf_free(&b);
    return rc;
}
