/* http.c - the REST side of the daemon: a route table (method, path, token, body limit,
 * handler), handlers that serve pre-rendered bytes of the latest sample, and the response
 * writer that sends headers and body in one write when they fit. */
#include "server/server_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "server/assets.h"
#include "server/log.h"
#include "server/prom.h"
#include "server/query.h"

#define HTTP_CHUNK 32768 /* most body bytes per write, and the size of one-write responses */

enum {
    M_GET = 1 << 0,
    M_HEAD = 1 << 1,
    M_POST = 1 << 2,
    M_PUT = 1 << 3,
    M_PATCH = 1 << 4,
    M_DELETE = 1 << 5,
    M_OPTIONS = 1 << 6,
};

static const struct {
    unsigned bit;
    const char *name;
    enum lws_token_indexes token;
} methods[] = {
    {M_GET, "GET", WSI_TOKEN_GET_URI},
    {M_HEAD, "HEAD", WSI_TOKEN_HEAD_URI},
    {M_POST, "POST", WSI_TOKEN_POST_URI},
    {M_PUT, "PUT", WSI_TOKEN_PUT_URI},
    {M_PATCH, "PATCH", WSI_TOKEN_PATCH_URI},
    {M_DELETE, "DELETE", WSI_TOKEN_DELETE_URI},
    {M_OPTIONS, "OPTIONS", WSI_TOKEN_OPTIONS_URI},
};

/* What a handler sees. */
typedef struct gm_req {
    gm_server *srv;
    struct lws *wsi;
    unsigned method;
    const char *path;
    const char *rest; /* path after a prefix route's prefix */
    const gm_query *q;
    gm_published *pub; /* newest bundle (loop-owned reference), NULL before the first sample */
} gm_req;

/* What a handler answers. The body is either borrowed (static, or a blob of `pin`) or owned
 * (malloc'd, freed by the writer). */
typedef struct gm_resp {
    int status;
    const char *ctype;
    const unsigned char *body;
    size_t len;
    char *owned;
    gm_published *pin; /* the bundle body points into, referenced while it is being sent */
    char allow[64];    /* Allow header for 405 and OPTIONS */
    bool www_auth;
    bool gzip;
    bool preflight; /* OPTIONS: add the CORS preflight answers when CORS is on */
    int retry_after;
    const char *cache; /* NULL: no-store */
} gm_resp;

typedef void (*gm_handler)(const gm_req *rq, gm_resp *rs);

/* One endpoint. No endpoint takes a request body yet, so any body is answered 413 (or 405) and
 * the connection closed; the first that does sets max_body and reads LWS_CALLBACK_HTTP_BODY up
 * to it into the per-request state before calling fn. */
typedef struct gm_route {
    const char *path;
    bool prefix; /* path matches every request path that starts with it */
    unsigned methods;
    bool needs_token;
    size_t max_body;
    gm_handler fn;
} gm_route;

/* Per-request state of one HTTP transaction (lws frees it between requests). */
typedef struct http_pss {
    bool busy; /* a response is partly sent */
    bool close_after;
    const unsigned char *body;
    size_t len, off;
    char *owned;
    gm_published *pin;
    size_t accounted;   /* bytes counted in srv->inflight_bytes */
    unsigned char *buf; /* LWS_PRE + HTTP_CHUNK, for the writes after the first */
} http_pss;

size_t gm_http_pss_size(void)
{
    return sizeof(http_pss);
}

/* ---- responses ---------------------------------------------------------------------------- */

static void resp_owned(gm_resp *rs, int status, const char *ctype, char *text, size_t len)
{
    rs->status = status;
    rs->ctype = ctype;
    rs->owned = text;
    rs->body = (const unsigned char *)text;
    rs->len = len;
}

/* Answers {"error": msg}. */
static void resp_error(gm_resp *rs, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void resp_error(gm_resp *rs, int status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *j = json_pack("{s:s}", "error", msg);
    size_t len = 0;
    char *text = j ? gm_json_dump(j, &len) : NULL;
    json_decref(j);
    free(rs->owned);
    rs->owned = NULL;
    if (!text) { /* out of memory: a static body still says what happened */
        static const char oom[] = "{\"error\":\"out of memory\"}";
        rs->status = 503;
        rs->ctype = "application/json";
        rs->body = (const unsigned char *)oom;
        rs->len = sizeof oom - 1;
        return;
    }
    resp_owned(rs, status, "application/json", text, len);
}

static void resp_json(gm_resp *rs, int status, json_t *j)
{
    size_t len = 0;
    char *text = j ? gm_json_dump(j, &len) : NULL;
    json_decref(j);
    if (!text) {
        resp_error(rs, 503, "out of memory");
        return;
    }
    resp_owned(rs, status, "application/json", text, len);
}

static void resp_blob(gm_resp *rs, gm_published *pub, const gm_blob *b, const char *ctype)
{
    rs->status = 200;
    rs->ctype = ctype;
    rs->body = b->data;
    rs->len = b->len;
    rs->pin = pub;
}

/* False (and a 503) before the first sample. */
static bool need_sample(const gm_req *rq, gm_resp *rs)
{
    if (rq->pub)
        return true;
    resp_error(rs, 503, "no sample yet: the first sampling pass has not finished");
    rs->retry_after = 1;
    return false;
}

/* ---- handlers ----------------------------------------------------------------------------- */

static void h_health(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_sampler_stats st;
    gm_sampler_get_stats(srv->sampler, &st);
    int64_t now = gm_mono_ms();
    int64_t stall_ms = 3 * (int64_t)srv->cfg->poll_interval_ms + 2000;
    const char *status;
    int code = 200;
    /* The freshest state: the sampler's own clock, not the loop's copy of the bundle. */
    int64_t last = st.last_ok_mono_ms;
    if (!last) {
        status = now - st.started_mono_ms > stall_ms ? "stalled" : "starting";
        code = 503;
    } else if (now - last > stall_ms) {
        status = "stalled";
        code = 503;
    } else if (strcmp(srv->provider, "none") == 0) {
        status = "no_gpu";
    } else if (rq->pub && rq->pub->lost_count) {
        status = "degraded";
    } else {
        status = "ok";
    }
    json_t *lost = json_array();
    for (unsigned i = 0; rq->pub && lost && i < rq->pub->lost_count; i++)
        json_array_append_new(lost, json_integer(rq->pub->lost[i]));
    json_t *j = json_pack(
        "{s:s, s:s, s:I, s:f, s:o, s:o, s:s, s:I, s:I, s:I, s:o}", "status", status, "provider",
        srv->provider, "gpu_count", (json_int_t)(rq->pub ? rq->pub->gpu_count : 0),
        "uptime_seconds", (double)(now - srv->started_mono_ms) / 1000.0, "last_sample_age_seconds",
        last ? json_real((double)(now - last) / 1000.0) : json_null(), "lost_gpus",
        lost ? lost : json_array(), "version", GM_VERSION, "poll_interval_ms",
        (json_int_t)srv->cfg->poll_interval_ms, "samples_total", (json_int_t)st.samples_total,
        "sample_errors_total", (json_int_t)st.errors_total, "last_error",
        st.last_error[0] ? json_string(st.last_error) : json_null());
    if (j && strcmp(srv->provider, "none") == 0) {
        json_object_set_new(j, "diagnosis", json_string(srv->diagnosis));
        json_object_set_new(j, "hint",
                            json_string("no GPU could be read: for a demo run `make "
                                        "demo` or `gpumon serve --simulate 4`"));
    }
    resp_json(rs, code, j);
}

static void h_config(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    json_t *j = gm_serve_config_json(srv->cfg);
    if (j) {
        gm_history *h = gm_sampler_history(srv->sampler);
        json_object_set_new(j, "provider_in_use", json_string(srv->provider));
        json_object_set_new(j, "port", json_integer(srv->port));
        json_object_set_new(j, "history_slots",
                            h ? json_integer((json_int_t)gm_history_slots(h)) : json_null());
        json_object_set_new(j, "history_bytes",
                            h ? json_integer((json_int_t)gm_history_memory_bytes(h)) : json_null());
        json_object_set_new(j, "version", json_string(GM_VERSION));
    }
    resp_json(rs, 200, j);
}

static void h_gpus(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob(rs, rq->pub, &rq->pub->full, "application/json");
}

static void h_gpu(const gm_req *rq, gm_resp *rs)
{
    const char *s = rq->rest;
    size_t n = strlen(s);
    if (n == 0 || strchr(s, '/')) {
        resp_error(rs, 404, "no such endpoint: %s", rq->path);
        return;
    }
    if (n > 6 || strspn(s, "0123456789") != n) {
        resp_error(rs, 400, "GPU index must be a non-negative integer, got \"%.32s\"", s);
        return;
    }
    if (!need_sample(rq, rs))
        return;
    unsigned idx = (unsigned)strtoul(s, NULL, 10);
    const gm_blob *b = gm_published_gpu(rq->pub, idx);
    if (!b) {
        if (rq->pub->gpu_count == 0)
            resp_error(rs, 404, "no GPU with index %u: no GPU is visible", idx);
        else
            resp_error(rs, 404, "no GPU with index %u (%u GPU(s) visible)", idx,
                       rq->pub->gpu_count);
        return;
    }
    resp_blob(rs, rq->pub, b, "application/json");
}

static void h_processes(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob(rs, rq->pub, &rq->pub->processes, "application/json");
}

static void h_system(const gm_req *rq, gm_resp *rs)
{
    if (!rq->srv->cfg->system_metrics) {
        resp_error(rs, 404, "host metrics are disabled (--no-system-metrics)");
        return;
    }
    if (!need_sample(rq, rs))
        return;
    if (!rq->pub->system.data) {
        resp_error(rs, 503, "host metrics could not be read in the latest sample");
        return;
    }
    resp_blob(rs, rq->pub, &rq->pub->system, "application/json");
}

static void h_fleet(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob(rs, rq->pub, &rq->pub->fleet, "application/json");
}

static void h_stats(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob(rs, rq->pub, &rq->pub->stats, "application/json");
}

static void h_metrics(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob(rs, rq->pub, &rq->pub->prom, GM_PROM_CONTENT_TYPE);
}

static void h_ws_plain(const gm_req *rq, gm_resp *rs)
{
    resp_error(rs, 426, "%s is a WebSocket endpoint: connect with a WebSocket client", rq->path);
}

/* A growable text buffer with a hard cap. */
typedef struct sbuf {
    char *p;
    size_t len, cap, limit;
    bool failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t want = b->cap ? b->cap * 2 : 65536;
        while (want < b->len + (size_t)n + 1)
            want *= 2;
        if (want > b->limit) {
            b->failed = true;
            return;
        }
        char *np = realloc(b->p, want);
        if (!np) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = want;
    }
}

/* A value as JSON: integers without a fraction, others at float precision. */
static void sb_number(sbuf *b, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        sb_printf(b, "%.0f", v);
    else
        sb_printf(b, "%.7g", v);
}

static void h_history(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_history *h = gm_sampler_history(srv->sampler);
    if (srv->cfg->history_s && !h) {
        resp_error(rs, 503, "no sample yet: history starts with the first sample");
        rs->retry_after = 1;
        return;
    }
    gm_history_params req;
    gm_error err = {0};
    if (gm_history_params_parse(rq->q, h ? gm_history_gpu_count(h) : 0, srv->cfg->history_s,
                                srv->cfg->poll_interval_ms, &req, &err) < 0) {
        resp_error(rs, 400, "%s", err.msg);
        return;
    }
    if (srv->inflight_bytes > GM_HTTP_INFLIGHT_LIMIT) {
        resp_error(rs, 503, "server busy: too many unfinished responses");
        rs->retry_after = 1;
        return;
    }
    sbuf b = {.limit = 64u << 20};
    sb_printf(&b, "{\"interval_ms\":%u,\"step_ms\":", srv->cfg->poll_interval_ms);
    if (req.step_ms)
        sb_printf(&b, "%lld", (long long)req.step_ms);
    else
        sb_printf(&b, "null");
    sb_printf(&b, ",\"seconds\":%lld,\"series\":[", (long long)(req.range_ms / 1000));
    for (size_t i = 0; i < req.count; i++) {
        const gm_history_pick *sr = &req.series[i];
        gm_history_request hq = {.source = sr->source,
                                 .gpu = sr->gpu,
                                 .metric = sr->metric,
                                 .last_ms = req.range_ms,
                                 .step_ms = req.step_ms,
                                 .max_points = GM_HISTORY_MAX_POINTS};
        gm_series se = {0};
        if (gm_history_query(h, &hq, &se, &err) < 0) {
            free(b.p);
            resp_error(rs, err.code == GM_ENOMEM ? 503 : 400, "%s", err.msg);
            return;
        }
        char name[64];
        gm_history_series_name(sr, name, sizeof name);
        sb_printf(&b, "%s{", i ? "," : "");
        if (sr->source == GM_HISTORY_GPU)
            sb_printf(&b, "\"gpu\":%u,", sr->gpu);
        sb_printf(&b, "\"metric\":\"%s\",\"unit\":\"%s\",\"clamped\":%s,\"points\":[", name,
                  se.unit ? se.unit : "", se.clamped ? "true" : "false");
        for (size_t k = 0; k < se.count; k++) {
            sb_printf(&b, "%s[%lld,", k ? "," : "", (long long)se.points[k].t_ms);
            if (se.points[k].present && isfinite(se.points[k].value))
                sb_number(&b, se.points[k].value);
            else
                sb_printf(&b, "null");
            sb_printf(&b, "]");
        }
        sb_printf(&b, "]}");
        gm_series_free(&se);
    }
    sb_printf(&b, "]}");
    if (b.failed) {
        free(b.p);
        resp_error(rs, 503, "out of memory building the history response");
        return;
    }
    resp_owned(rs, 200, "application/json", b.p, b.len);
}

static const gm_route routes[] = {
    {"/api/health", false, M_GET | M_HEAD, true, 0, h_health},
    {"/api/config", false, M_GET | M_HEAD, true, 0, h_config},
    {"/api/gpus", false, M_GET | M_HEAD, true, 0, h_gpus},
    {"/api/gpus/", true, M_GET | M_HEAD, true, 0, h_gpu},
    {"/api/processes", false, M_GET | M_HEAD, true, 0, h_processes},
    {"/api/system", false, M_GET | M_HEAD, true, 0, h_system},
    {"/api/history", false, M_GET | M_HEAD, true, 0, h_history},
    {"/api/v1/monitoring/gpu-metrics", false, M_GET | M_HEAD, true, 0, h_fleet},
    {"/stats", false, M_GET | M_HEAD, true, 0, h_stats},
    {"/metrics", false, M_GET | M_HEAD, true, 0, h_metrics},
    {"/ws/gpu", false, M_GET | M_HEAD, true, 0, h_ws_plain},
    {"/ws/metrics", false, M_GET | M_HEAD, true, 0, h_ws_plain},
};

static const gm_route *route_find(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        const gm_route *r = &routes[i];
        if (r->prefix ? strncmp(path, r->path, strlen(r->path)) == 0 : strcmp(path, r->path) == 0)
            return r;
    }
    return NULL;
}

static void allow_header(unsigned mask, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    mask |= M_OPTIONS;
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (mask & methods[i].bit)
            o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? ", " : "",
                                  methods[i].name);
}

/* ---- the writer ----------------------------------------------------------------------------- */

static void pss_release(gm_server *srv, http_pss *pss)
{
    free(pss->owned);
    pss->owned = NULL;
    gm_published_unref(pss->pin);
    pss->pin = NULL;
    free(pss->buf);
    pss->buf = NULL;
    srv->inflight_bytes -= pss->accounted;
    pss->accounted = 0;
    pss->body = NULL;
    pss->busy = false;
}

static void resp_release(gm_resp *rs)
{
    free(rs->owned);
    rs->owned = NULL;
}

static int add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p,
                      unsigned char *end)
{
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name,
                                       (const unsigned char *)value, (int)strlen(value), p, end);
}

static const char *reason_phrase(int status)
{
    static const struct {
        int code;
        const char *text;
    } t[] = {{200, "OK"},
             {204, "No Content"},
             {400, "Bad Request"},
             {401, "Unauthorized"},
             {404, "Not Found"},
             {405, "Method Not Allowed"},
             {406, "Not Acceptable"},
             {413, "Content Too Large"},
             {414, "URI Too Long"},
             {426, "Upgrade Required"},
             {500, "Internal Server Error"},
             {503, "Service Unavailable"}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (t[i].code == status)
            return t[i].text;
    return "Unknown";
}

/* Builds the status line and headers into [*p, end). Non-zero when they do not fit. */
static int build_headers(gm_server *srv, struct lws *wsi, const gm_resp *rs, unsigned char **p,
                         unsigned char *end)
{
    char num[32];
    /* The status line by hand: lws 4.1 has no reason phrase for 204 or 426. */
    int n = snprintf((char *)*p, (size_t)(end - *p), "HTTP/1.1 %d %s\r\nserver: gpumon/%s\r\n",
                     rs->status, reason_phrase(rs->status), GM_VERSION);
    if (n < 0 || n >= end - *p)
        return 1;
    *p += n;
    if (rs->ctype && add_header(wsi, "content-type:", rs->ctype, p, end))
        return 1;
    /* By name, not lws_add_http_header_content_length(): lws must not count our body bytes. */
    snprintf(num, sizeof num, "%zu", rs->len);
    if (rs->status != 204 && add_header(wsi, "content-length:", num, p, end))
        return 1;
    if (add_header(wsi, "cache-control:", rs->cache ? rs->cache : "no-store", p, end) ||
        add_header(wsi, "x-content-type-options:", "nosniff", p, end))
        return 1;
    if (rs->gzip && (add_header(wsi, "content-encoding:", "gzip", p, end) ||
                     add_header(wsi, "vary:", "Accept-Encoding", p, end)))
        return 1;
    if (rs->allow[0] && add_header(wsi, "allow:", rs->allow, p, end))
        return 1;
    if (rs->www_auth && add_header(wsi, "www-authenticate:", "Bearer realm=\"gpumon\"", p, end))
        return 1;
    if (rs->retry_after) {
        snprintf(num, sizeof num, "%d", rs->retry_after);
        if (add_header(wsi, "retry-after:", num, p, end))
            return 1;
    }
    const char *origin = srv->cfg->cors_origin;
    if (origin[0]) {
        if (add_header(wsi, "access-control-allow-origin:", origin, p, end))
            return 1;
        if (strcmp(origin, "*") != 0 && add_header(wsi, "vary:", "Origin", p, end))
            return 1;
        if (rs->preflight && (add_header(wsi, "access-control-allow-methods:", rs->allow, p, end) ||
                              add_header(wsi, "access-control-allow-headers:",
                                         "Authorization, Content-Type", p, end) ||
                              add_header(wsi, "access-control-max-age:", "600", p, end)))
            return 1;
    }
    return lws_finalize_http_header(wsi, p, end);
}

/* Ends the transaction: -1 tells lws to close the connection. */
static int finish(struct lws *wsi, http_pss *pss)
{
    if (pss->close_after)
        return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* Sends the next part of a response begun by send_response. Returns 0 or -1 (close). */
static int send_more(gm_server *srv, struct lws *wsi, http_pss *pss)
{
    if (!pss->busy)
        return 0;
    if (!pss->buf) {
        pss->buf = malloc(LWS_PRE + HTTP_CHUNK);
        if (!pss->buf)
            return -1;
    }
    size_t n = pss->len - pss->off;
    if (n > HTTP_CHUNK)
        n = HTTP_CHUNK;
    memcpy(pss->buf + LWS_PRE, pss->body + pss->off, n);
    bool last = pss->off + n == pss->len;
    /* A short write means the peer is gone: -1, or lws keeps a half-done connection spinning. */
    if (lws_write(wsi, pss->buf + LWS_PRE, n, LWS_WRITE_HTTP) != (int)n)
        return -1;
    pss->off += n;
    if (!last) {
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, 30);
        lws_callback_on_writable(wsi);
        return 0;
    }
    pss_release(srv, pss);
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
    return finish(wsi, pss);
}

/* Sends rs (consuming it). Returns 0 or -1 (close). Only HTTP/1 gets here: there is no TLS, so
 * no ALPN h2, and h2c upgrades are refused (gm_server_confirm_upgrade). */
static int send_response(gm_server *srv, struct lws *wsi, http_pss *pss, gm_resp *rs, bool head)
{
    /* Headers and, when it fits, the whole body in one write: the fast path of small bodies. */
    unsigned char out[LWS_PRE + HTTP_CHUNK];
    unsigned char *start = out + LWS_PRE, *p = start, *end = out + sizeof out;
    if (build_headers(srv, wsi, rs, &p, end)) {
        resp_release(rs);
        return -1;
    }
    size_t body_len = head ? 0 : rs->len;
    size_t first = (size_t)(end - p) < body_len ? (size_t)(end - p) : body_len;
    memcpy(p, rs->body, first);
    p += first;
    int n = (int)(p - start);
    if (lws_write(wsi, start, (size_t)n, LWS_WRITE_HTTP) != n) {
        resp_release(rs);
        return -1;
    }
    if (first == body_len) {
        resp_release(rs);
        return finish(wsi, pss);
    }
    /* The rest goes out as the peer reads: keep the body (owned, or pinned in its bundle) and
     * count it against the in-flight limit. */
    pss->busy = true;
    pss->body = rs->body;
    pss->len = body_len;
    pss->off = first;
    pss->owned = rs->owned;
    rs->owned = NULL;
    pss->pin = gm_published_ref(rs->pin);
    pss->accounted = body_len;
    srv->inflight_bytes += body_len;
    lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, 30);
    lws_callback_on_writable(wsi);
    return 0;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static unsigned request_method(struct lws *wsi)
{
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (lws_hdr_total_length(wsi, methods[i].token) > 0)
            return methods[i].bit;
    return 0;
}

static const char *method_name(unsigned m)
{
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (methods[i].bit == m)
            return methods[i].name;
    return "?";
}

/* Reads lws's (already decoded) query fragments into q; GM_EINVAL with a message. */
static int read_query(struct lws *wsi, gm_query *q, gm_error *err)
{
    gm_query_init(q);
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS) > GM_QUERY_MAX_BYTES)
        return gm_error_set(err, GM_EINVAL, "query string longer than %d bytes",
                            GM_QUERY_MAX_BYTES);
    char frag[GM_QUERY_MAX_BYTES + 1];
    for (int i = 0; i < GM_QUERY_MAX_PARAMS * 4; i++) {
        int flen = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (flen <= 0) {
            if (lws_hdr_copy_fragment(wsi, frag, sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
                return GM_OK; /* no fragment i: done */
            continue;         /* an empty fragment ("a=1&&b=2") */
        }
        int n = lws_hdr_copy_fragment(wsi, frag, sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n < 0)
            return gm_error_set(err, GM_EINVAL, "query parameter too long");
        int rc = gm_query_add(q, frag, (size_t)n, err);
        if (rc < 0)
            return rc;
    }
    return gm_error_set(err, GM_EINVAL, "too many query parameters");
}

static bool has_request_body(struct lws *wsi)
{
    char cl[32];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0)
        return true;
    if (lws_hdr_copy(wsi, cl, sizeof cl, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0)
        return strtoull(cl, NULL, 10) > 0 || cl[0] != '0';
    return false;
}

static bool accepts_gzip(struct lws *wsi)
{
    char ae[256];
    int n = lws_hdr_copy(wsi, ae, sizeof ae, WSI_TOKEN_HTTP_ACCEPT_ENCODING);
    return n > 0 && strstr(ae, "gzip") != NULL;
}

static void serve_asset(struct lws *wsi, const gm_asset *a, gm_resp *rs)
{
    if (a->gzip && !accepts_gzip(wsi)) {
        resp_error(rs, 406, "this file is only available gzip-encoded (Accept-Encoding: gzip)");
        return;
    }
    rs->status = 200;
    rs->ctype = a->content_type;
    rs->body = a->data;
    rs->len = a->len;
    rs->gzip = a->gzip;
    rs->cache = a->cache_control ? a->cache_control : "no-cache";
}

static int handle_request(gm_server *srv, struct lws *wsi, http_pss *pss, const char *path)
{
    int64_t t0 = lws_now_usecs();
    gm_resp rs = {0};
    gm_query q;
    gm_error err = {0};
    unsigned method = request_method(wsi);
    bool head = method == M_HEAD;
    memset(pss, 0, sizeof *pss);
    pss->close_after = has_request_body(wsi); /* unread body bytes must not become a request */

    const gm_route *r = route_find(path);
    const gm_asset *asset = r ? NULL : gm_assets_find(path);
    unsigned allowed = r ? r->methods : asset ? (M_GET | M_HEAD) : 0;
    int uri_len = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS);
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        uri_len += lws_hdr_total_length(wsi, methods[i].token);

    if (uri_len > GM_HTTP_URI_MAX) {
        resp_error(&rs, 414, "request target longer than %d bytes", GM_HTTP_URI_MAX);
    } else if (!method) {
        resp_error(&rs, 405, "method not supported");
        pss->close_after = true;
    } else if (!r && !asset) {
        resp_error(&rs, 404, "no such endpoint: %s (see / for the list)", path);
    } else if (method == M_OPTIONS) {
        /* Preflight: answered without the token (browsers never send it here). */
        rs.status = 204;
        rs.preflight = true;
        allow_header(allowed, rs.allow, sizeof rs.allow);
    } else if (!(allowed & method)) {
        resp_error(&rs, 405, "%s is not allowed on %s", method_name(method), path);
        allow_header(allowed, rs.allow, sizeof rs.allow);
    } else if ((r ? r->needs_token : true) && !gm_server_authorized(srv, wsi, false)) {
        resp_error(&rs, 401, "missing or wrong bearer token (send Authorization: Bearer <token>)");
        rs.www_auth = true;
    } else if (pss->close_after && (!r || r->max_body == 0)) {
        resp_error(&rs, 413, "%s takes no request body", path);
    } else if (read_query(wsi, &q, &err) < 0) {
        resp_error(&rs, 400, "bad query string: %s", err.msg);
    } else if (asset) {
        serve_asset(wsi, asset, &rs);
    } else {
        gm_req rq = {.srv = srv,
                     .wsi = wsi,
                     .method = method,
                     .path = path,
                     .rest = path + strlen(r->path),
                     .q = &q,
                     .pub = srv->current};
        r->fn(&rq, &rs);
    }
    if (rs.status == 405 && !rs.allow[0])
        allow_header(allowed, rs.allow, sizeof rs.allow);

    int status = rs.status;
    size_t len = rs.len;
    int rc = send_response(srv, wsi, pss, &rs, head);
    if (gm_log_enabled(GM_LOG_DEBUG)) {
        char qp[300];
        gm_log(GM_LOG_DEBUG, "request", "method=%s path=%s status=%d bytes=%zu us=%lld",
               method_name(method), gm_log_quote(path, qp, sizeof qp), status, head ? 0 : len,
               (long long)(lws_now_usecs() - t0));
    }
    return rc;
}

void gm_server_refuse(struct lws *wsi, int status, const char *msg, const char *extra_header)
{
    char body[300], qm[256];
    int blen = snprintf(body, sizeof body, "{\"error\":%s}", gm_log_quote(msg, qm, sizeof qm));
    unsigned char out[LWS_PRE + 1024];
    char *start = (char *)out + LWS_PRE;
    /* By hand: at this stage lws does not yet know the request's HTTP version. */
    int n = snprintf(start, sizeof out - LWS_PRE,
                     "HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: "
                     "%d\r\ncache-control: no-store\r\n%sconnection: close\r\n\r\n%s",
                     status, reason_phrase(status), blen, extra_header ? extra_header : "", body);
    if (n > 0 && (size_t)n < sizeof out - LWS_PRE)
        (void)lws_write(wsi, (unsigned char *)start, (size_t)n, LWS_WRITE_HTTP);
}

int gm_server_confirm_upgrade(struct lws *wsi, const char *to)
{
    if (to && strcasecmp(to, "websocket") == 0)
        return 0;
    /* h2c: lws 4.1 gives the upgraded stream no send window and then spins the loop at full
     * CPU until a timeout, so the upgrade is refused and the connection closed. */
    gm_log(GM_LOG_DEBUG, "upgrade refused", "to=%s", to ? to : "?");
    gm_server_refuse(wsi, 400, "upgrade to HTTP/2 cleartext (h2c) is not supported: use HTTP/1.1",
                     NULL);
    return -1;
}

int gm_http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                     size_t len)
{
    gm_server *srv = lws_context_user(lws_get_context(wsi));
    http_pss *pss = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP: {
        char path[GM_HTTP_URI_MAX + 1];
        size_t n = len < sizeof path - 1 ? len : sizeof path - 1;
        memcpy(path, in, n);
        path[n] = '\0';
        return handle_request(srv, wsi, pss, path);
    }
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return pss ? send_more(srv, wsi, pss) : 0;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return gm_server_confirm_upgrade(wsi, in);
    case LWS_CALLBACK_RAW_ADOPT:
    case LWS_CALLBACK_RAW_RX:
        /* lws turns a CONNECT request into a raw socket bound here, which would otherwise stay
         * open, unanswered, for as long as the client likes. */
        gm_server_refuse(wsi, 405, "CONNECT is not supported", NULL);
        return -1;
    case LWS_CALLBACK_HTTP_BODY:
        /* No endpoint takes a body yet; handle_request already answered 413 and closes. */
        return 0;
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        if (pss)
            pss_release(srv, pss);
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}
