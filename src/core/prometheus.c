/* prometheus.c - the Prometheus HTTP API client: one libcurl easy handle (its connection kept
 * between queries), GET /api/v1/query, the answer bounded in size and time, parsed by jansson,
 * every failure turned into a sentence. */
#include "core/prometheus.h"

#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/curl.h"
#include "base/utf8.h"
#include "base/error.h"

struct gm_prometheus {
    CURL *easy;
    char url[GM_PROMETHEUS_URL_MAX];     /* as given, credentials included, no trailing '/' */
    char display[GM_PROMETHEUS_URL_MAX]; /* for people */
    long timeout_ms;
    size_t max_response;
    const atomic_bool *stop;
    struct curl_slist *headers;
};

/* ---- the URL ------------------------------------------------------------------------------ */

int gm_prometheus_url_check(const char *url, char *display, size_t cap, gm_error *err)
{
    if (!url || !*url)
        return gm_error_set(err, GM_EINVAL, "the Prometheus URL is empty");
    if (strlen(url) >= GM_PROMETHEUS_URL_MAX)
        return gm_error_set(err, GM_EINVAL, "the Prometheus URL is longer than %d bytes",
                            GM_PROMETHEUS_URL_MAX - 1);
    if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)
        return gm_error_set(err, GM_EINVAL,
                            "\"%.200s\" is not a Prometheus URL (use http://HOST:PORT or "
                            "https://HOST[:PORT][/PATH], e.g. http://prometheus:9090)",
                            url);
    CURLU *u = curl_url();
    if (!u)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = GM_OK;
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL, *frag = NULL;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    if (uc != CURLUE_OK) {
        rc = gm_error_set(err, GM_EINVAL, "\"%.200s\" is not a Prometheus URL: %s", url,
                          curl_url_strerror(uc));
        goto out;
    }
    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_get(u, CURLUPART_PORT, &port, 0);
    curl_url_get(u, CURLUPART_PATH, &path, 0);
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);
    if (!host || !*host) {
        rc = gm_error_set(err, GM_EINVAL, "\"%.200s\": the Prometheus URL names no host", url);
        goto out;
    }
    if (query || frag) {
        rc = gm_error_set(err, GM_EINVAL,
                          "\"%.200s\": the Prometheus URL must not have a query or fragment (the "
                          "API paths are appended to it)",
                          url);
        goto out;
    }
    if (display && cap) {
        size_t plen = path ? strlen(path) : 0;
        while (plen && path[plen - 1] == '/')
            plen--;
        snprintf(display, cap, "%s://%s%s%s%.*s", scheme ? scheme : "http", host, port ? ":" : "",
                 port ? port : "", (int)plen, path ? path : "");
    }
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_free(frag);
    curl_url_cleanup(u);
    return rc;
}

/* ---- the client --------------------------------------------------------------------------- */

typedef struct body {
    gm_buf buf;
    size_t max;
    bool too_big;
} body;

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t n = size * nmemb;
    if (b->buf.len + n > b->max) {
        b->too_big = true;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    gm_buf_put(&b->buf, ptr, n);
    return b->buf.failed ? 0 : n;
}

static int progress_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const atomic_bool *stop = ud;
    return stop && atomic_load(stop) ? 1 : 0;
}

int gm_prometheus_new(const gm_prometheus_options *o, gm_prometheus **out, gm_error *err)
{
    *out = NULL;
    gm_prometheus *p = calloc(1, sizeof *p);
    if (!p)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = gm_prometheus_url_check(o->url, p->display, sizeof p->display, err);
    if (rc < 0) {
        free(p);
        return rc;
    }
    size_t n = strlen(o->url);
    while (n && o->url[n - 1] == '/')
        n--;
    snprintf(p->url, sizeof p->url, "%.*s", (int)n, o->url);
    double t = o->timeout_s > 0 ? o->timeout_s : GM_PROMETHEUS_TIMEOUT_DEFAULT_S;
    p->timeout_ms = (long)ceil(t * 1000.0);
    p->max_response = o->max_response ? o->max_response : GM_PROMETHEUS_RESPONSE_MAX;
    p->stop = o->stop;
    if (gm_curl_start(err) < 0) {
        free(p);
        return GM_EIO;
    }
    p->easy = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
    if (!p->easy || !h) {
        curl_slist_free_all(h);
        gm_prometheus_free(p);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    p->headers = h;
    *out = p;
    return GM_OK;
}

void gm_prometheus_free(gm_prometheus *p)
{
    if (!p)
        return;
    if (p->easy)
        curl_easy_cleanup(p->easy);
    curl_slist_free_all(p->headers);
    free(p);
}

const char *gm_prometheus_url(const gm_prometheus *p)
{
    return p->display;
}

/* A short, printable, one-line excerpt of a body that is not the API's JSON (a proxy's HTML
 * error page, a plain-text 404). */
static void excerpt(const char *s, size_t n, char *out, size_t cap)
{
    if (n > GM_PROMETHEUS_ERROR_BODY_MAX)
        n = GM_PROMETHEUS_ERROR_BODY_MAX;
    gm_utf8_repair(out, cap, s, n);
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < ' ')
            *c = ' ';
    size_t len = strlen(out);
    while (len && out[len - 1] == ' ')
        out[--len] = '\0';
}

/* Prometheus's own {"status":"error"} answer (with any HTTP status) as an error. */
static int api_error(const gm_prometheus *p, const json_t *doc, long status, gm_error *err)
{
    const char *type = json_string_value(json_object_get(doc, "errorType"));
    const char *msg = json_string_value(json_object_get(doc, "error"));
    char t[64], m[400];
    gm_utf8_repair(t, sizeof t, type ? type : "unknown", strlen(type ? type : "unknown"));
    gm_utf8_repair(m, sizeof m, msg ? msg : "no message", strlen(msg ? msg : "no message"));
    return gm_error_set(err, GM_EINVAL, "Prometheus at %s answered an error (HTTP %ld, %s): %s",
                        p->display, status, t, m);
}

/* Sets up the shared handle for one GET of url into b; cerr receives curl's own message. */
static void set_request(gm_prometheus *p, const char *url, body *b, char *cerr)
{
    CURL *e = p->easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "gpumon/" GM_VERSION);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, p->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, p->timeout_ms);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* gzip where offered; limits apply after */
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
    if (p->stop) {
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, progress_cb);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, (void *)p->stop);
    }
}

/* The transfer's failure (no answer, too long, too big, cancelled) as an error; GM_OK when a
 * whole answer arrived, whatever its HTTP status. */
static int transfer_error(const gm_prometheus *p, CURLcode cc, const body *b, const char *cerr,
                          gm_error *err)
{
    const char *why = cerr[0] ? cerr : curl_easy_strerror(cc);
    if (cc == CURLE_WRITE_ERROR && b->too_big)
        return gm_error_set(err, GM_ENOMEM, "Prometheus at %s answered more than %zu MiB",
                            p->display, p->max_response >> 20);
    switch (cc) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
        return gm_error_set(err, GM_ETIMEDOUT, "Prometheus at %s did not answer within %.3g s (%s)",
                            p->display, (double)p->timeout_ms / 1000.0, why);
    case CURLE_ABORTED_BY_CALLBACK:
        return gm_error_set(err, GM_ECANCELED, "the query to Prometheus at %s was cancelled",
                            p->display);
    case CURLE_OUT_OF_MEMORY:
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    default:
        return gm_error_set(err, GM_EIO, "cannot reach Prometheus at %s: %s", p->display, why);
    }
    if (b->buf.failed)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    return GM_OK;
}

/* The query API's answer: its data (and warnings) on success, else the error it says, its HTTP
 * status, or what makes it not Prometheus's JSON. */
static int read_answer(const gm_prometheus *p, const body *b, long status, json_t **data,
                       json_t **warnings, gm_error *err)
{
    int rc = GM_OK;
    json_error_t je;
    json_t *doc = b->buf.len ? json_loadb(b->buf.p, b->buf.len, JSON_REJECT_DUPLICATES, &je) : NULL;
    const char *st = json_string_value(json_object_get(doc, "status"));
    json_t *d = json_object_get(doc, "data");
    if (st && strcmp(st, "error") == 0) {
        rc = api_error(p, doc, status, err);
    } else if (status != 200) {
        char ex[GM_PROMETHEUS_ERROR_BODY_MAX + 8];
        excerpt(b->buf.p ? b->buf.p : "", b->buf.len, ex, sizeof ex);
        rc = gm_error_set(err, GM_EIO, "Prometheus at %s answered HTTP %ld%s%s", p->display, status,
                          ex[0] ? ": " : "", ex);
    } else if (!doc) {
        rc = gm_error_set(err, GM_EPARSE,
                          "Prometheus at %s answered something that is not JSON (%s): is it a "
                          "Prometheus server?",
                          p->display, b->buf.len ? je.text : "an empty body");
    } else if (!st || strcmp(st, "success") != 0 || !json_is_object(d)) {
        rc = gm_error_set(err, GM_EPARSE,
                          "Prometheus at %s answered JSON that is not the query API's "
                          "({\"status\":\"success\",\"data\":{...}}): is it a Prometheus server?",
                          p->display);
    } else {
        *data = json_incref(d);
        if (warnings) {
            json_t *w = json_object_get(doc, "warnings");
            *warnings = json_is_array(w) ? json_incref(w) : NULL;
        }
    }
    json_decref(doc);
    return rc;
}

int gm_prometheus_query(gm_prometheus *p, const char *expr, json_t **data, json_t **warnings,
                        gm_error *err)
{
    *data = NULL;
    if (warnings)
        *warnings = NULL;
    char *q = curl_easy_escape(p->easy, expr, 0);
    if (!q)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    gm_buf url;
    gm_buf_init(&url, 0);
    gm_buf_printf(&url, "%s/api/v1/query?query=%s", p->url, q);
    curl_free(q);
    if (url.failed) {
        gm_buf_free(&url);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    body b = {.max = p->max_response};
    gm_buf_init(&b.buf, 0);
    char cerr[CURL_ERROR_SIZE] = "";
    set_request(p, url.p, &b, cerr);
    CURLcode cc = curl_easy_perform(p->easy);
    gm_buf_free(&url);
    long status = 0;
    curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &status);
    int rc = transfer_error(p, cc, &b, cerr, err);
    if (rc == GM_OK)
        rc = read_answer(p, &b, status, data, warnings, err);
    gm_buf_free(&b.buf);
    return rc;
}

/* ---- answers ------------------------------------------------------------------------------ */

const char *gm_prometheus_label(const json_t *metric, const char *name)
{
    return json_string_value(json_object_get(metric, name));
}

/* A sample value as Prometheus writes it: a decimal or exponent number, "NaN", "+Inf", "-Inf".
 * This is a machine's output, not a person's, so strtod's grammar is the right one here. */
static bool parse_value(const char *s, double *out)
{
    if (!s || !*s || strpbrk(s, "xX"))
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end)
        return false;
    *out = v;
    return true;
}

int gm_prometheus_vector_each(const json_t *data,
                              int (*fn)(void *arg, const gm_prometheus_sample *s), void *arg,
                              gm_error *err)
{
    const char *type = json_string_value(json_object_get(data, "resultType"));
    const json_t *result = json_object_get(data, "result");
    if (!type || strcmp(type, "vector") != 0 || !json_is_array(result))
        return gm_error_set(err, GM_EPARSE, "Prometheus answered a %s, not an instant vector",
                            type ? type : "result of no type");
    size_t i;
    const json_t *r;
    json_array_foreach(result, i, r)
    {
        const json_t *metric = json_object_get(r, "metric");
        const json_t *value = json_object_get(r, "value");
        gm_prometheus_sample s = {.metric = metric};
        if (!json_is_object(metric) || !json_is_array(value) || json_array_size(value) != 2 ||
            !json_is_number(json_array_get(value, 0)) ||
            !parse_value(json_string_value(json_array_get(value, 1)), &s.value))
            return gm_error_set(err, GM_EPARSE, "Prometheus answered a malformed sample (#%zu)", i);
        s.time_s = json_number_value(json_array_get(value, 0));
        int rc = fn(arg, &s);
        if (rc)
            return rc;
    }
    return GM_OK;
}
