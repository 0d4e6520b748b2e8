/* http.c - the REST side of the daemon: a route table (method, path, token, body limit,
 * handler), handlers that serve pre-rendered bytes of the latest sample, request bodies read
 * up to the route's limit, answers deferred to the session worker, static files, and the
 * response writer that sends headers and body in one write when they fit. */
#include "server/server_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "core/lease.h"
#include "core/select.h"
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
    const char *body;  /* the request body (routes with max_body), NULL when none */
    size_t body_len;
    bool gzip_ok; /* the client accepts a gzip'd answer */
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
    const char *cache;     /* NULL: no-store */
    const char *etag;      /* ETag header, NULL: none */
    bool vary_ae;          /* Vary: Accept-Encoding (the path has a gzip'd form) */
    char location[96];     /* Location header, "" none */
    gm_session_job *defer; /* answered later by the session worker (status etc. unset) */
} gm_resp;

typedef void (*gm_handler)(const gm_req *rq, gm_resp *rs);

/* One endpoint. A request body is read (up to max_body, as application/json) only for routes
 * with a max_body; elsewhere any body is answered 413 (or 405) and the connection closed. */
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

    /* A request body being read (route->max_body > 0). */
    bool reading;
    const gm_route *route;
    unsigned method;
    char path[160];
    char *in; /* the body so far */
    size_t in_len, in_cap;

    /* An answer the session worker gives later. */
    gm_session_job *job;
    struct lws *wsi;
    struct http_pss *prev, *next; /* srv->pending */
    bool linked, notified, head;
    char location[96];
    int64_t t0_us;
} http_pss;

size_t gm_http_pss_size(void)
{
    return sizeof(http_pss);
}

/* ---- responses ---------------------------------------------------------------------------- */

static void allow_header(unsigned mask, char *buf, size_t len);

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
    size_t len = 0;
    va_list ap;
    va_start(ap, fmt);
    char *text = gm_json_error_vtext(&len, fmt, ap);
    va_end(ap);
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

/* The gzip'd form of a blob to clients that accept it, else the plain one. */
static void resp_blob_gz(const gm_req *rq, gm_resp *rs, const gm_blob *plain, const gm_blob *gz,
                         const char *ctype)
{
    bool use_gz = rq->gzip_ok && gz->data;
    resp_blob(rs, rq->pub, use_gz ? gz : plain, ctype);
    rs->gzip = use_gz;
    rs->vary_ae = true;
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
        json_object_set_new(j, "db_path",
                            srv->db_path[0] ? json_string(srv->db_path) : json_null());
        json_object_set_new(j, "lease_dir",
                            srv->lease_dir[0] ? json_string(srv->lease_dir) : json_null());
        json_object_set_new(j, "dashboard",
                            json_string(srv->web_root[0]       ? "web_root"
                                        : gm_assets_embedded() ? "embedded"
                                                               : "builtin"));
        json_object_set_new(j, "sessions_running",
                            json_integer(gm_sessions_running(srv->sessions)));
    }
    resp_json(rs, 200, j);
}

static void h_gpus(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob_gz(rq, rs, &rq->pub->full, &rq->pub->full_gz, "application/json");
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
        resp_blob_gz(rq, rs, &rq->pub->prom, &rq->pub->prom_gz, GM_PROM_CONTENT_TYPE);
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

/* ---- sessions and allocation -------------------------------------------------------------- */

/* GM_EINVAL with a message when q has a parameter outside `known` (NULL-terminated; "token" is
 * always accepted, as WebSocket clients may send it everywhere). */
static int check_params(const gm_query *q, const char *const *known, gm_error *err)
{
    for (size_t i = 0; i < q->count; i++) {
        bool ok = strcmp(q->p[i].key, "token") == 0;
        for (size_t k = 0; !ok && known[k]; k++)
            ok = strcmp(q->p[i].key, known[k]) == 0;
        if (!ok) {
            char list[128];
            size_t o = 0;
            list[0] = '\0';
            for (size_t k = 0; known[k] && o < sizeof list; k++)
                o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", known[k]);
            return gm_error_set(err, GM_EINVAL, "unknown parameter \"%.64s\" (accepted: %s)",
                                q->p[i].key, known[0] ? list : "none");
        }
    }
    return GM_OK;
}

/* Hands j to the session worker: the answer is sent when it is done. */
static void resp_defer(const gm_req *rq, gm_resp *rs, gm_session_job *j)
{
    if (!j) {
        resp_error(rs, 503, "out of memory");
        return;
    }
    rs->defer = j;
}

static void h_sessions(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_error err = {0};
    if (rq->method == M_POST) {
        static const char *const none[] = {NULL};
        if (check_params(rq->q, none, &err) < 0) {
            resp_error(rs, 400, "%s", err.msg);
            return;
        }
        if (!need_sample(rq, rs))
            return;
        gm_session_request req;
        if (gm_session_request_parse(rq->body ? rq->body : "", rq->body_len, rq->pub->snap,
                                     srv->cfg->poll_interval_ms, &req, &err) < 0) {
            resp_error(rs, 400, "%s", err.msg);
            return;
        }
        gm_session_job *j = gm_session_job_new(GM_SOP_CREATE);
        if (!j) {
            resp_error(rs, 503, "out of memory");
            return;
        }
        /* Made here, so the session's clock starts when the request arrived whatever the
         * worker is busy with. */
        if (gm_session_new(req.has_label ? req.label : NULL, req.gpus, req.ngpus, req.interval_s,
                           &j->session, &err) < 0) {
            gm_session_job_free(j);
            resp_error(rs, err.code == GM_ENOMEM ? 503 : 400, "%s", err.msg);
            return;
        }
        j->create = req;
        j->created_mono_ms = gm_mono_ms();
        snprintf(rs->location, sizeof rs->location, "/api/sessions/%s", gm_session_id(j->session));
        resp_defer(rq, rs, j);
        return;
    }
    static const char *const known[] = {"limit", "kind", NULL};
    if (check_params(rq->q, known, &err) < 0) {
        resp_error(rs, 400, "%s", err.msg);
        return;
    }
    unsigned long long limit = 100;
    const char *v = gm_query_get(rq->q, "limit");
    if (v && gm_config_parse_ulong(v, 1, GM_SESSIONS_LIST_MAX, &limit) < 0) {
        resp_error(rs, 400, "limit=\"%.32s\" is not a whole number from 1 to %d", v,
                   GM_SESSIONS_LIST_MAX);
        return;
    }
    const char *kind = gm_query_get(rq->q, "kind");
    if (kind &&
        (strlen(kind) >= 16 || strspn(kind, "abcdefghijklmnopqrstuvwxyz_-") != strlen(kind))) {
        resp_error(rs, 400, "kind=\"%.32s\" is not a kind (session, record, run, ...)", kind);
        return;
    }
    gm_session_job *j = gm_session_job_new(GM_SOP_LIST);
    if (j) {
        j->limit = (size_t)limit;
        snprintf(j->kind, sizeof j->kind, "%s", kind ? kind : "");
    }
    resp_defer(rq, rs, j);
}

/* Session ids are generated ("20261126-010516-a1b2c3"); anything else is not one of ours. */
static bool id_ok(const char *s, size_t n)
{
    if (n == 0 || n >= GM_SESSION_ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
            return false;
    return true;
}

static void h_session(const gm_req *rq, gm_resp *rs)
{
    const char *rest = rq->rest;
    const char *slash = strchr(rest, '/');
    size_t idlen = slash ? (size_t)(slash - rest) : strlen(rest);
    bool stop = slash && strcmp(slash, "/stop") == 0;
    gm_error err = {0};
    if (!id_ok(rest, idlen) || (slash && !stop)) {
        resp_error(rs, 404, "no such endpoint: %s", rq->path);
        return;
    }
    gm_session_job *j;
    if (stop) {
        if (rq->method != M_POST) {
            resp_error(rs, 405, "%s takes POST", rq->path);
            allow_header(M_POST, rs->allow, sizeof rs->allow);
            return;
        }
        static const char *const none[] = {NULL};
        if (check_params(rq->q, none, &err) < 0) {
            resp_error(rs, 400, "%s", err.msg);
            return;
        }
        j = gm_session_job_new(GM_SOP_STOP);
    } else if (rq->method == M_POST) {
        resp_error(rs, 405, "POST is not allowed on %s (stop a session with POST %s/stop)",
                   rq->path, rq->path);
        allow_header(M_GET | M_HEAD | M_DELETE, rs->allow, sizeof rs->allow);
        return;
    } else if (rq->method == M_DELETE) {
        static const char *const none[] = {NULL};
        if (check_params(rq->q, none, &err) < 0) {
            resp_error(rs, 400, "%s", err.msg);
            return;
        }
        j = gm_session_job_new(GM_SOP_DELETE);
    } else {
        static const char *const known[] = {"timeline", NULL};
        if (check_params(rq->q, known, &err) < 0) {
            resp_error(rs, 400, "%s", err.msg);
            return;
        }
        bool timeline = true;
        const char *v = gm_query_get(rq->q, "timeline");
        if (v && gm_config_parse_bool(v, &timeline) < 0) {
            resp_error(rs, 400, "timeline=\"%.32s\" is not true or false (1 or 0)", v);
            return;
        }
        j = gm_session_job_new(GM_SOP_GET);
        if (j)
            j->timeline = timeline;
    }
    if (j) {
        memcpy(j->id, rest, idlen);
        j->id[idlen] = '\0';
    }
    resp_defer(rq, rs, j);
}

/* GET /api/allocation: gm_select over the latest sample. Lease files are probed here, on the
 * loop: one open, flock(LOCK_NB) and short read per GPU, never a wait, so the cost is bounded
 * by the GPU count. */
static void h_allocation(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_error err = {0};
    static const char *const known[] = {"count", "min_free_mb", "max_util", "ignore_leases", NULL};
    if (check_params(rq->q, known, &err) < 0) {
        resp_error(rs, 400, "%s", err.msg);
        return;
    }
    gm_select_request req = {.count = 1};
    unsigned long long count = 1;
    const char *v = gm_query_get(rq->q, "count");
    if (v && gm_config_parse_ulong(v, 1, GM_MAX_GPUS, &count) < 0) {
        resp_error(rs, 400, "count=\"%.32s\" is not a whole number of GPUs from 1 to %d", v,
                   GM_MAX_GPUS);
        return;
    }
    req.count = (unsigned)count;
    v = gm_query_get(rq->q, "min_free_mb");
    if (v && gm_config_parse_double(v, 0, 1e12, &req.min_free_mib) < 0) {
        resp_error(rs, 400, "min_free_mb=\"%.32s\" is not a non-negative number of MiB", v);
        return;
    }
    v = gm_query_get(rq->q, "max_util");
    if (v) {
        if (gm_config_parse_double(v, 0, 100, &req.max_util_pct) < 0) {
            resp_error(rs, 400, "max_util=\"%.32s\" is not a utilization in percent from 0 to 100",
                       v);
            return;
        }
        req.has_max_util = true;
    }
    v = gm_query_get(rq->q, "ignore_leases");
    if (v && gm_config_parse_bool(v, &req.ignore_leases) < 0) {
        resp_error(rs, 400, "ignore_leases=\"%.32s\" is not true or false", v);
        return;
    }
    if (!need_sample(rq, rs))
        return;
    const gm_snapshot *snap = rq->pub->snap;
    gm_lease_holder *holders = NULL;
    gm_select_result *res = malloc(sizeof *res);
    if (srv->lease_dir[0] && snap->gpu_count) {
        holders = calloc(snap->gpu_count, sizeof *holders);
        if (holders && gm_lease_list(srv->lease_dir, snap, holders, &err) < 0) {
            free(holders); /* leases unknown: none excluded, as `gpumon select` does then */
            holders = NULL;
        }
    }
    if (!res) {
        free(holders);
        resp_error(rs, 503, "out of memory");
        return;
    }
    if (gm_select(snap, &req, holders, res, &err) < 0) {
        free(holders);
        free(res);
        resp_error(rs, 400, "%s", err.msg);
        return;
    }
    json_t *j = gm_select_result_json(res);
    if (j)
        json_object_set_new(j, "lease_dir",
                            srv->lease_dir[0] ? json_string(srv->lease_dir) : json_null());
    free(holders);
    free(res);
    resp_json(rs, 200, j);
}

static const gm_route routes[] = {
    {"/api/health", false, M_GET | M_HEAD, true, 0, h_health},
    {"/api/config", false, M_GET | M_HEAD, true, 0, h_config},
    {"/api/gpus", false, M_GET | M_HEAD, true, 0, h_gpus},
    {"/api/gpus/", true, M_GET | M_HEAD, true, 0, h_gpu},
    {"/api/processes", false, M_GET | M_HEAD, true, 0, h_processes},
    {"/api/system", false, M_GET | M_HEAD, true, 0, h_system},
    {"/api/history", false, M_GET | M_HEAD, true, 0, h_history},
    {"/api/sessions", false, M_GET | M_HEAD | M_POST, true, GM_SESSION_BODY_MAX, h_sessions},
    {"/api/sessions/", true, M_GET | M_HEAD | M_POST | M_DELETE, true, GM_SESSION_BODY_MAX,
     h_session},
    {"/api/allocation", false, M_GET | M_HEAD, true, 0, h_allocation},
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

static void pending_unlink(gm_server *srv, http_pss *pss)
{
    if (!pss->linked)
        return;
    if (pss->prev)
        pss->prev->next = pss->next;
    else
        srv->pending = pss->next;
    if (pss->next)
        pss->next->prev = pss->prev;
    pss->prev = pss->next = NULL;
    pss->linked = false;
}

static void pss_release(gm_server *srv, http_pss *pss)
{
    pending_unlink(srv, pss);
    if (pss->job) { /* the client left before the worker answered */
        gm_sessions_abandon(srv->sessions, pss->job);
        pss->job = NULL;
    }
    free(pss->in);
    pss->in = NULL;
    pss->in_len = pss->in_cap = 0;
    pss->reading = false;
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
    } t[] = {{100, "Continue"},
             {200, "OK"},
             {201, "Created"},
             {204, "No Content"},
             {304, "Not Modified"},
             {400, "Bad Request"},
             {401, "Unauthorized"},
             {403, "Forbidden"},
             {404, "Not Found"},
             {405, "Method Not Allowed"},
             {406, "Not Acceptable"},
             {409, "Conflict"},
             {411, "Length Required"},
             {413, "Content Too Large"},
             {414, "URI Too Long"},
             {415, "Unsupported Media Type"},
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
    if (rs->status != 204 && rs->status != 304 && add_header(wsi, "content-length:", num, p, end))
        return 1;
    if (add_header(wsi, "cache-control:", rs->cache ? rs->cache : "no-store", p, end) ||
        add_header(wsi, "x-content-type-options:", "nosniff", p, end))
        return 1;
    if (rs->gzip && add_header(wsi, "content-encoding:", "gzip", p, end))
        return 1;
    if ((rs->gzip || rs->vary_ae) && add_header(wsi, "vary:", "Accept-Encoding", p, end))
        return 1;
    if (rs->etag && add_header(wsi, "etag:", rs->etag, p, end))
        return 1;
    if (rs->location[0] && add_header(wsi, "location:", rs->location, p, end))
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
    if (first) /* a 204 or 304 has no body at all, not even a pointer */
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

/* Content-Length of the request, -1 when absent, -2 when malformed. */
static long long content_length(struct lws *wsi)
{
    char cl[32];
    int n = lws_hdr_copy(wsi, cl, sizeof cl, WSI_TOKEN_HTTP_CONTENT_LENGTH);
    if (n <= 0)
        return -1;
    unsigned long long v;
    if (gm_config_parse_ulong(cl, 0, (unsigned long long)1 << 40, &v) < 0)
        return -2;
    return (long long)v;
}

static bool chunked_body(struct lws *wsi)
{
    return lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0;
}

static bool has_request_body(struct lws *wsi)
{
    long long n = content_length(wsi);
    return chunked_body(wsi) || (n != -1 && n != 0); /* a malformed length counts as a body */
}

/* True for Content-Type application/json (parameters such as charset allowed). */
static bool json_content_type(struct lws *wsi)
{
    char ct[128];
    if (lws_hdr_copy(wsi, ct, sizeof ct, WSI_TOKEN_HTTP_CONTENT_TYPE) <= 0)
        return false;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

static bool accepts_gzip(struct lws *wsi)
{
    char ae[256];
    int n = lws_hdr_copy(wsi, ae, sizeof ae, WSI_TOKEN_HTTP_ACCEPT_ENCODING);
    return n > 0 && gm_accepts_gzip(ae);
}

static void serve_asset(struct lws *wsi, const gm_asset *a, gm_resp *rs)
{
    rs->status = 200;
    rs->ctype = a->content_type;
    rs->body = a->data;
    rs->len = a->len;
    rs->gzip = a->gzip;
    rs->vary_ae = gm_assets_has_gzip(a->path);
    rs->cache = a->cache_control ? a->cache_control : "no-cache";
    rs->etag = gm_assets_etag(a);
    char inm[512];
    if (lws_hdr_copy(wsi, inm, sizeof inm, WSI_TOKEN_HTTP_IF_NONE_MATCH) > 0 &&
        gm_etag_matches(inm, rs->etag)) {
        /* The client's copy is current: headers only (RFC 9110 15.4.5). */
        rs->status = 304;
        rs->ctype = NULL;
        rs->body = NULL;
        rs->len = 0;
        rs->gzip = false;
    }
}

/* --web-root: the file from disk, never cached (it changes while the dashboard is developed). */
static void serve_webroot(gm_server *srv, const char *path, gm_resp *rs)
{
    char *data;
    size_t len;
    const char *ctype;
    gm_error err = {0};
    int rc = gm_webroot_read(srv->web_root, path, &data, &len, &ctype, &err);
    if (rc == GM_ENOENT)
        resp_error(rs, 404, "no such file: %s", path);
    else if (rc == GM_EPERM)
        resp_error(rs, 403, "%s is outside the web root or not served", path);
    else if (rc == GM_EINVAL)
        resp_error(rs, 500, "%s: %s", path, err.msg);
    else if (rc < 0)
        resp_error(rs, rc == GM_ENOMEM ? 503 : 500, "%s: %s", path, err.msg);
    else
        resp_owned(rs, 200, ctype, data, len);
}

/* The peer's address, for gm_server_write_access; false when it cannot be read. */
static bool peer_address(struct lws *wsi, struct sockaddr_storage *ss, socklen_t *len)
{
    int fd = lws_get_socket_fd(wsi);
    *len = sizeof *ss;
    return fd >= 0 && getpeername(fd, (struct sockaddr *)ss, len) == 0;
}

/* gm_server_origin_allowed on the request's Origin and Host headers. */
static bool origin_allowed(gm_server *srv, struct lws *wsi)
{
    char origin[300], host[300];
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
        return lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0; /* too long: refused */
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0)
        host[0] = '\0';
    return gm_server_origin_allowed(origin, host, srv->cfg->cors_origin);
}

static void log_request(unsigned method, const char *path, int status, size_t len, int64_t t0)
{
    if (!gm_log_enabled(GM_LOG_DEBUG))
        return;
    char qp[300];
    gm_log(GM_LOG_DEBUG, "request", "method=%s path=%s status=%d bytes=%zu us=%lld",
           method_name(method), gm_log_quote(path, qp, sizeof qp), status, len,
           (long long)(lws_now_usecs() - t0));
}

/* Sends rs, or parks the request until the session worker has answered rs->defer. */
static int respond(gm_server *srv, struct lws *wsi, http_pss *pss, gm_resp *rs, unsigned method,
                   const char *path, int64_t t0)
{
    bool head = method == M_HEAD;
    if (rs->defer) {
        pss->job = rs->defer;
        pss->wsi = wsi;
        pss->head = head;
        pss->method = method;
        pss->t0_us = t0;
        snprintf(pss->location, sizeof pss->location, "%s", rs->location);
        snprintf(pss->path, sizeof pss->path, "%s", path);
        pss->next = srv->pending;
        pss->prev = NULL;
        if (srv->pending)
            srv->pending->prev = pss;
        srv->pending = pss;
        pss->linked = true;
        gm_sessions_submit(srv->sessions, pss->job);
        /* A worker stuck on the database must not hold the connection forever. */
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, 60);
        if (gm_session_job_done(pss->job)) { /* refused at once (shutting down) */
            pss->notified = true;
            lws_callback_on_writable(wsi);
        }
        return 0;
    }
    int status = rs->status;
    size_t len = rs->len;
    int rc = send_response(srv, wsi, pss, rs, head);
    log_request(method, path, status, head ? 0 : len, t0);
    return rc;
}

void gm_http_poll_pending(gm_server *srv)
{
    for (http_pss *p = srv->pending; p; p = p->next)
        if (!p->notified && p->job && gm_session_job_done(p->job)) {
            p->notified = true;
            lws_callback_on_writable(p->wsi);
        }
}

/* Loop, writable: sends the worker's answer of a parked request. */
static int send_deferred(gm_server *srv, struct lws *wsi, http_pss *pss)
{
    gm_session_job *j = pss->job;
    pending_unlink(srv, pss);
    pss->job = NULL;
    gm_resp rs = {0};
    rs.status = j->status;
    if (j->body) {
        rs.ctype = "application/json";
        resp_owned(&rs, j->status, "application/json", j->body, j->len);
        j->body = NULL;
    }
    if (rs.status == 201)
        snprintf(rs.location, sizeof rs.location, "%s", pss->location);
    gm_session_job_free(j);
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
    /* Copied first: completing the transaction frees pss. */
    int status = rs.status;
    bool head = pss->head;
    size_t len = head ? 0 : rs.len;
    unsigned method = pss->method;
    int64_t t0 = pss->t0_us;
    char path[sizeof pss->path];
    snprintf(path, sizeof path, "%s", pss->path);
    int rc = send_response(srv, wsi, pss, &rs, head);
    log_request(method, path, status, len, t0);
    return rc;
}

/* Runs route r for a request whose body (if any) has been read. */
static int dispatch(gm_server *srv, struct lws *wsi, http_pss *pss, const gm_route *r,
                    unsigned method, const char *path, const gm_query *q, int64_t t0)
{
    gm_resp rs = {0};
    gm_req rq = {.srv = srv,
                 .wsi = wsi,
                 .method = method,
                 .path = path,
                 .rest = path + strlen(r->path),
                 .q = q,
                 .pub = srv->current,
                 .body = pss->in,
                 .body_len = pss->in_len,
                 .gzip_ok = accepts_gzip(wsi)};
    r->fn(&rq, &rs);
    if (rs.status == 405 && !rs.allow[0])
        allow_header(r->methods, rs.allow, sizeof rs.allow);
    return respond(srv, wsi, pss, &rs, method, path, t0);
}

static int handle_request(gm_server *srv, struct lws *wsi, http_pss *pss, const char *path)
{
    int64_t t0 = lws_now_usecs();
    gm_resp rs = {0};
    gm_query q;
    gm_error err = {0};
    unsigned method = request_method(wsi);
    memset(pss, 0, sizeof *pss);
    bool has_body = has_request_body(wsi);
    pss->close_after = has_body; /* unread body bytes must not become a request */

    const gm_route *r = route_find(path);
    bool webroot = !r && srv->web_root[0];
    const gm_asset *asset =
        r || webroot
            ? NULL
            : gm_assets_find(path, (method == M_GET || method == M_HEAD) && accepts_gzip(wsi));
    unsigned allowed = r ? r->methods : (asset || webroot) ? (M_GET | M_HEAD) : 0;
    int uri_len = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS);
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        uri_len += lws_hdr_total_length(wsi, methods[i].token);
    struct sockaddr_storage peer;
    socklen_t peer_len = 0;
    bool have_peer =
        (method == M_POST || method == M_DELETE) && peer_address(wsi, &peer, &peer_len);
    long long clen = content_length(wsi);

    if (uri_len > GM_HTTP_URI_MAX) {
        resp_error(&rs, 414, "request target longer than %d bytes", GM_HTTP_URI_MAX);
    } else if (!method) {
        resp_error(&rs, 405, "method not supported");
        pss->close_after = true;
    } else if (!r && !asset && !webroot) {
        resp_error(&rs, 404, "no such endpoint: %s (see / for the list)", path);
    } else if (method == M_OPTIONS) {
        /* Preflight: answered without the token (browsers never send it here). */
        rs.status = 204;
        rs.preflight = true;
        allow_header(allowed, rs.allow, sizeof rs.allow);
    } else if (!(allowed & method)) {
        resp_error(&rs, 405, "%s is not allowed on %s", method_name(method), path);
        allow_header(allowed, rs.allow, sizeof rs.allow);
    } else if (r && r->needs_token && !gm_server_authorized(srv, wsi, false)) {
        /* Only routes need the token: the dashboard's files are code, not data, and a browser
         * cannot send a header when it opens a page. The page then passes the token it was
         * given in its URL fragment to every API and WebSocket request. */
        resp_error(&rs, 401, "missing or wrong bearer token (send Authorization: Bearer <token>)");
        rs.www_auth = true;
    } else if ((method == M_POST || method == M_DELETE) &&
               gm_server_write_access(srv->cfg->token_set,
                                      have_peer ? (const struct sockaddr *)&peer : NULL,
                                      peer_len) != 0) {
        resp_error(&rs, 403,
                   "%s from another host needs a token: restart gpumon serve with --token (or "
                   "GPU_MONITOR_TOKEN) and send Authorization: Bearer <token>",
                   method_name(method));
    } else if ((method == M_POST || method == M_DELETE) && !srv->cfg->token_set &&
               !origin_allowed(srv, wsi)) {
        resp_error(&rs, 403,
                   "%s from a web page of another origin is refused without a token: set "
                   "--token, or --cors-origin to that origin",
                   method_name(method));
    } else if (has_body && (!r || r->max_body == 0)) {
        resp_error(&rs, 413, "%s takes no request body", path);
    } else if (has_body && chunked_body(wsi)) {
        resp_error(&rs, 411, "send the request body with a Content-Length (not chunked)");
    } else if (has_body && (clen < 0 || (unsigned long long)clen > r->max_body)) {
        resp_error(&rs, 413, "request body over the limit of %zu bytes", r->max_body);
    } else if (has_body && strlen(path) >= sizeof pss->path) {
        resp_error(&rs, 404, "no such endpoint: %.64s...", path); /* no route has such paths */
    } else if (has_body && !json_content_type(wsi)) {
        resp_error(&rs, 415, "send the request body as Content-Type: application/json");
    } else if (read_query(wsi, &q, &err) < 0) {
        resp_error(&rs, 400, "bad query string: %s", err.msg);
    } else if (webroot) {
        serve_webroot(srv, path, &rs);
    } else if (asset) {
        serve_asset(wsi, asset, &rs);
    } else if (has_body) {
        /* The body comes in LWS_CALLBACK_HTTP_BODY; the route runs at its completion. */
        pss->close_after = false;
        pss->reading = true;
        pss->route = r;
        pss->method = method;
        pss->t0_us = t0;
        snprintf(pss->path, sizeof pss->path, "%s", path);
        /* lws 4.1 does not answer "Expect: 100-continue" itself; without this, curl waits a
         * second before it sends the body. */
        char expect[32];
        if (lws_hdr_copy(wsi, expect, sizeof expect, WSI_TOKEN_HTTP_EXPECT) > 0 &&
            strcasecmp(expect, "100-continue") == 0) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            unsigned char buf[LWS_PRE + sizeof cont];
            memcpy(buf + LWS_PRE, cont, sizeof cont - 1);
            if (lws_write(wsi, buf + LWS_PRE, sizeof cont - 1, LWS_WRITE_HTTP) !=
                (int)(sizeof cont - 1))
                return -1;
        }
        return 0;
    } else {
        return dispatch(srv, wsi, pss, r, method, path, &q, t0);
    }
    if (rs.status == 405 && !rs.allow[0])
        allow_header(allowed, rs.allow, sizeof rs.allow);
    return respond(srv, wsi, pss, &rs, method, path, t0);
}

/* Loop: one chunk of a request body. Returns -1 (close) after answering 413 when the body
 * grows past the route's limit whatever its Content-Length said. */
static int on_body(gm_server *srv, struct lws *wsi, http_pss *pss, const void *in, size_t len)
{
    if (!pss || !pss->reading)
        return 0;
    size_t max = pss->route->max_body;
    if (pss->in_len + len > max) {
        gm_resp rs = {0};
        resp_error(&rs, 413, "request body over the limit of %zu bytes", max);
        pss->reading = false;
        pss->close_after = true;
        send_response(srv, wsi, pss, &rs, false);
        return -1;
    }
    if (pss->in_len + len + 1 > pss->in_cap) {
        size_t cap = pss->in_cap ? pss->in_cap : 1024;
        while (cap < pss->in_len + len + 1)
            cap *= 2;
        char *np = realloc(pss->in, cap);
        if (!np)
            return -1;
        pss->in = np;
        pss->in_cap = cap;
    }
    memcpy(pss->in + pss->in_len, in, len);
    pss->in_len += len;
    pss->in[pss->in_len] = '\0';
    return 0;
}

static int on_body_done(gm_server *srv, struct lws *wsi, http_pss *pss)
{
    if (!pss || !pss->reading)
        return 0;
    pss->reading = false;
    gm_query q;
    gm_error err = {0};
    char path[sizeof pss->path];
    snprintf(path, sizeof path, "%s", pss->path);
    if (read_query(wsi, &q, &err) < 0) {
        gm_resp rs = {0};
        resp_error(&rs, 400, "bad query string: %s", err.msg);
        return respond(srv, wsi, pss, &rs, pss->method, path, pss->t0_us);
    }
    return dispatch(srv, wsi, pss, pss->route, pss->method, path, &q, pss->t0_us);
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
    case LWS_CALLBACK_HTTP_BODY:
        return on_body(srv, wsi, pss, in, len);
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return on_body_done(srv, wsi, pss);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (!pss)
            return 0;
        if (pss->job)
            return gm_session_job_done(pss->job) ? send_deferred(srv, wsi, pss) : 0;
        return send_more(srv, wsi, pss);
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return gm_server_confirm_upgrade(wsi, in);
    case LWS_CALLBACK_RAW_ADOPT:
    case LWS_CALLBACK_RAW_RX:
        /* lws turns a CONNECT request into a raw socket bound here, which would otherwise stay
         * open, unanswered, for as long as the client likes. */
        gm_server_refuse(wsi, 405, "CONNECT is not supported", NULL);
        return -1;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* The session worker may have answered parked requests. */
        if (srv)
            gm_http_poll_pending(srv);
        return 0;
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (pss)
            pss_release(srv, pss);
        return 0;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}
