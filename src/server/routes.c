/* routes.c - what each endpoint answers: a route table (path, methods, token, body limit,
 * handler) and handlers that serve the pre-rendered bytes of the latest sample, build the
 * history per request, or hand session work to the session worker. Nothing here knows about
 * sockets or libmicrohttpd: http.c reads the request and sends what these fill in. */
#include "server/server_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/json.h"
#include "core/lease.h"
#include "core/select.h"
#include "server/assets.h"
#include "server/prom.h"
#include "server/query.h"
#include "base/parse.h"
#include "base/error.h"

/* ---- responses ---------------------------------------------------------------------------- */

void gm_resp_owned(gm_resp *rs, int status, const char *ctype, char *text, size_t len)
{
    free(rs->owned);
    rs->status = status;
    rs->ctype = ctype;
    rs->owned = text;
    rs->body = (const unsigned char *)text;
    rs->len = len;
}

void gm_resp_release(gm_resp *rs)
{
    free(rs->owned);
    rs->owned = NULL;
    rs->body = NULL;
    rs->len = 0;
}

void gm_resp_error(gm_resp *rs, int status, const char *fmt, ...)
{
    size_t len = 0;
    va_list ap;
    va_start(ap, fmt);
    char *text = gm_json_error_vtext(&len, fmt, ap);
    va_end(ap);
    gm_resp_release(rs);
    rs->pin = NULL;
    if (!text) { /* out of memory: a static body still says what happened */
        static const char oom[] = "{\"error\":\"out of memory\"}";
        rs->status = 503;
        rs->ctype = "application/json";
        rs->body = (const unsigned char *)oom;
        rs->len = sizeof oom - 1;
        return;
    }
    gm_resp_owned(rs, status, "application/json", text, len);
}

static void resp_json(gm_resp *rs, int status, json_t *j)
{
    size_t len = 0;
    char *text = j ? gm_json_dump(j, &len) : NULL;
    json_decref(j);
    if (!text) {
        gm_resp_error(rs, 503, "out of memory");
        return;
    }
    gm_resp_owned(rs, status, "application/json", text, len);
}

static void resp_blob(gm_resp *rs, gm_published *pub, const gm_blob *b, const char *ctype)
{
    if (!b || !b->data) { /* rendered on first use, and that ran out of memory */
        gm_resp_error(rs, 503, "out of memory rendering the answer");
        rs->retry_after = 1;
        return;
    }
    rs->status = 200;
    rs->ctype = ctype;
    rs->body = b->data;
    rs->len = b->len;
    rs->pin = pub;
}

/* The gzip'd form of a body to clients that accept it, else the plain one. */
static void resp_blob_gz(const gm_req *rq, gm_resp *rs, gm_blob_kind plain, gm_blob_kind gz,
                         const char *ctype)
{
    const gm_blob *z = rq->gzip_ok ? gm_published_blob(rq->pub, gz) : NULL;
    bool use_gz = z && z->data;
    resp_blob(rs, rq->pub, use_gz ? z : gm_published_blob(rq->pub, plain), ctype);
    rs->gzip = use_gz;
    rs->vary_ae = true;
}

/* False (and a 503) before the first sample. */
static bool need_sample(const gm_req *rq, gm_resp *rs)
{
    if (rq->pub)
        return true;
    gm_resp_error(rs, 503, "no sample yet: the first sampling pass has not finished");
    rs->retry_after = 1;
    return false;
}

/* The newest sample's answer of kind, pre-rendered (a 503 before the first sample). */
static void sample_json(const gm_req *rq, gm_resp *rs, gm_blob_kind kind)
{
    if (need_sample(rq, rs))
        resp_blob(rs, rq->pub, gm_published_blob(rq->pub, kind), "application/json");
}

/* ---- handlers ----------------------------------------------------------------------------- */

static void h_health(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_sampler_stats st;
    gm_sampler_get_stats(srv->sampler, &st);
    int64_t now = gm_clock_mono_ms();
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
    } else {
        status = "ok";
    }
    /* A GPU lost, or one with a fresh XID, uncorrected ECC errors or a failed row remapping
     * (gm_gpu_degraded, the rule the JSON and the dashboard show), makes the daemon degraded;
     * it still answers 200: the daemon works, a GPU needs a person. */
    json_t *unhealthy = json_array();
    int64_t wall = gm_clock_wall_ms();
    for (unsigned i = 0; rq->pub && rq->pub->snap && unhealthy && i < rq->pub->snap->gpu_count;
         i++) {
        const gm_gpu *g = &rq->pub->snap->gpus[i];
        char why[256];
        if (gm_gpu_degraded(g, wall, why, sizeof why))
            json_array_append_new(
                unhealthy, json_pack("{s:I, s:s}", "gpu", (json_int_t)g->index, "reasons", why));
    }
    if (code == 200 && strcmp(status, "ok") == 0 && rq->pub &&
        (rq->pub->lost_count || json_array_size(unhealthy)))
        status = "degraded";
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
        st.last_error[0] ? gm_json_str(st.last_error) : json_null());
    if (j)
        json_object_set_new(j, "degraded_gpus", unhealthy ? unhealthy : json_array());
    else
        json_decref(unhealthy);
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
        gm_ring *h = gm_sampler_history(srv->sampler);
        json_object_set_new(j, "provider_in_use", json_string(srv->provider));
        json_object_set_new(j, "port", json_integer(srv->port));
        json_object_set_new(j, "history_slots",
                            h ? json_integer((json_int_t)gm_ring_slots(h)) : json_null());
        json_object_set_new(j, "history_bytes",
                            h ? json_integer((json_int_t)gm_ring_memory_bytes(h)) : json_null());
        json_object_set_new(j, "version", json_string(GM_VERSION));
        json_object_set_new(j, "db_path",
                            srv->db_path[0] ? gm_json_str(srv->db_path) : json_null());
        json_object_set_new(j, "lease_dir",
                            srv->lease_dir[0] ? gm_json_str(srv->lease_dir) : json_null());
        json_object_set_new(j, "dashboard",
                            json_string(srv->web_root[0]       ? "web_root"
                                        : gm_assets_embedded() ? "embedded"
                                                               : "builtin"));
        json_object_set_new(j, "sessions_running", json_integer(gm_worker_running(srv->worker)));
    }
    resp_json(rs, 200, j);
}

static void h_gpus(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob_gz(rq, rs, GM_BLOB_FULL, GM_BLOB_FULL_GZ, "application/json");
}

static void h_gpu(const gm_req *rq, gm_resp *rs)
{
    const char *s = rq->rest;
    size_t n = strlen(s);
    if (n == 0 || strchr(s, '/')) {
        gm_resp_error(rs, 404, "no such endpoint: %s", rq->path);
        return;
    }
    if (n > 6 || strspn(s, "0123456789") != n) {
        gm_resp_error(rs, 400, "GPU index must be a non-negative integer, got \"%.32s\"", s);
        return;
    }
    if (!need_sample(rq, rs))
        return;
    unsigned idx = (unsigned)strtoul(s, NULL, 10);
    const gm_blob *b = gm_published_gpu(rq->pub, idx);
    if (!b) {
        if (rq->pub->gpu_count == 0)
            gm_resp_error(rs, 404, "no GPU with index %u: no GPU is visible", idx);
        else
            gm_resp_error(rs, 404, "no GPU with index %u (%u GPU(s) visible)", idx,
                          rq->pub->gpu_count);
        return;
    }
    resp_blob(rs, rq->pub, b, "application/json");
}

static void h_processes(const gm_req *rq, gm_resp *rs)
{
    sample_json(rq, rs, GM_BLOB_PROCESSES);
}

static void h_system(const gm_req *rq, gm_resp *rs)
{
    if (!rq->srv->cfg->system_metrics) {
        gm_resp_error(rs, 404, "host metrics are disabled (--no-system-metrics)");
        return;
    }
    if (!need_sample(rq, rs))
        return;
    const gm_blob *sys = gm_published_blob(rq->pub, GM_BLOB_SYSTEM);
    if (!sys->data) {
        gm_resp_error(rs, 503, "host metrics could not be read in the latest sample");
        return;
    }
    resp_blob(rs, rq->pub, sys, "application/json");
}

static void h_gpu_metrics(const gm_req *rq, gm_resp *rs)
{
    sample_json(rq, rs, GM_BLOB_GPU_METRICS);
}

static void h_stats(const gm_req *rq, gm_resp *rs)
{
    sample_json(rq, rs, GM_BLOB_STATS);
}

static void h_metrics(const gm_req *rq, gm_resp *rs)
{
    if (need_sample(rq, rs))
        resp_blob_gz(rq, rs, GM_BLOB_PROM, GM_BLOB_PROM_GZ, GM_PROM_CONTENT_TYPE);
}

static void h_ws_plain(const gm_req *rq, gm_resp *rs)
{
    gm_resp_error(rs, 426, "%s is a WebSocket endpoint: connect with a WebSocket client", rq->path);
}

/* A value as JSON: integers without a fraction, others at float precision. */
static void json_number(gm_buf *b, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        gm_buf_printf(b, "%.0f", v);
    else
        gm_buf_printf(b, "%.7g", v);
}

static void h_history(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_ring *h = gm_sampler_history(srv->sampler);
    if (srv->cfg->history_s && !h) {
        gm_resp_error(rs, 503, "no sample yet: history starts with the first sample");
        rs->retry_after = 1;
        return;
    }
    gm_history_params req;
    gm_error err = {0};
    /* The GPUs of the latest sample: driver indexes may have gaps (nvidia-smi -i, a GPU gone
     * before start), and the rings are indexed by them. */
    bool present[GM_MAX_GPUS] = {0};
    for (unsigned i = 0; rq->pub && i < rq->pub->gpu_count; i++)
        if (rq->pub->gpu_index[i] < GM_MAX_GPUS)
            present[rq->pub->gpu_index[i]] = true;
    if (gm_history_params_parse(rq->q, h ? gm_ring_gpu_count(h) : 0, rq->pub ? present : NULL,
                                srv->cfg->history_s, srv->cfg->poll_interval_ms, &req, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    if (srv->inflight_bytes > GM_HTTP_INFLIGHT_LIMIT) {
        gm_resp_error(rs, 503, "server busy: too many unfinished responses");
        rs->retry_after = 1;
        return;
    }
    gm_buf b;
    gm_buf_init(&b, 64u << 20);
    gm_buf_printf(&b, "{\"interval_ms\":%u,\"step_ms\":", srv->cfg->poll_interval_ms);
    if (req.step_ms)
        gm_buf_printf(&b, "%lld", (long long)req.step_ms);
    else
        gm_buf_printf(&b, "null");
    gm_buf_printf(&b, ",\"seconds\":%lld,\"series\":[", (long long)(req.range_ms / 1000));
    for (size_t i = 0; i < req.count; i++) {
        const gm_history_pick *sr = &req.series[i];
        gm_ring_request hq = {.source = sr->source,
                              .gpu = sr->gpu,
                              .metric = sr->metric,
                              .last_ms = req.range_ms,
                              .step_ms = req.step_ms,
                              .max_points = GM_HISTORY_MAX_POINTS};
        gm_series se = {0};
        if (gm_ring_query(h, &hq, &se, &err) < 0) {
            gm_buf_free(&b);
            gm_resp_error(rs, err.code == GM_ENOMEM ? 503 : 400, "%s", err.msg);
            return;
        }
        char name[64];
        gm_history_series_name(sr, name, sizeof name);
        gm_buf_printf(&b, "%s{", i ? "," : "");
        if (sr->source == GM_RING_GPU)
            gm_buf_printf(&b, "\"gpu\":%u,", sr->gpu);
        gm_buf_printf(&b, "\"metric\":\"%s\",\"unit\":\"%s\",\"clamped\":%s,\"points\":[", name,
                      se.unit ? se.unit : "", se.clamped ? "true" : "false");
        for (size_t k = 0; k < se.count; k++) {
            gm_buf_printf(&b, "%s[%lld,", k ? "," : "", (long long)se.points[k].t_ms);
            if (se.points[k].present && isfinite(se.points[k].value))
                json_number(&b, se.points[k].value);
            else
                gm_buf_printf(&b, "null");
            gm_buf_printf(&b, "]");
        }
        gm_buf_printf(&b, "]}");
        gm_series_free(&se);
    }
    gm_buf_printf(&b, "]}");
    size_t len = 0;
    char *text = gm_buf_take(&b, &len);
    if (!text) {
        gm_resp_error(rs, 503, "out of memory building the history response");
        return;
    }
    gm_resp_owned(rs, 200, "application/json", text, len);
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

/* A listing's query: no parameter outside known, and limit (1 to GM_WORKER_LIST_MAX, default
 * 100). False with a 400 in rs otherwise. */
static bool list_query(const gm_req *rq, gm_resp *rs, const char *const *known, size_t *limit)
{
    gm_error err = {0};
    if (check_params(rq->q, known, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return false;
    }
    unsigned long long n = 100;
    const char *v = gm_query_get(rq->q, "limit");
    if (v && gm_parse_uint(v, 1, GM_WORKER_LIST_MAX, &n) < 0) {
        gm_resp_error(rs, 400, "limit=\"%.32s\" is not a whole number from 1 to %d", v,
                      GM_WORKER_LIST_MAX);
        return false;
    }
    *limit = (size_t)n;
    return true;
}

/* Hands j to the session worker: the answer is sent when it is done. */
static void resp_defer(const gm_req *rq, gm_resp *rs, gm_worker_job *j)
{
    if (!j) {
        gm_resp_error(rs, 503, "out of memory");
        return;
    }
    rs->defer = j;
}

static void h_sessions(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_error err = {0};
    if (rq->method == GM_HTTP_POST) {
        static const char *const none[] = {NULL};
        if (check_params(rq->q, none, &err) < 0) {
            gm_resp_error(rs, 400, "%s", err.msg);
            return;
        }
        if (!need_sample(rq, rs))
            return;
        gm_session_request req;
        if (gm_session_request_parse(rq->body ? rq->body : "", rq->body_len, rq->pub->snap,
                                     srv->cfg->poll_interval_ms, &req, &err) < 0) {
            gm_resp_error(rs, 400, "%s", err.msg);
            return;
        }
        gm_worker_job *j = gm_worker_job_new(GM_JOB_CREATE);
        if (!j) {
            gm_resp_error(rs, 503, "out of memory");
            return;
        }
        /* Made here, so the session's clock starts when the request arrived whatever the
         * worker is busy with. */
        if (gm_session_new(req.has_label ? req.label : NULL, req.gpus, req.ngpus, req.interval_s,
                           &j->session, &err) < 0) {
            gm_worker_job_free(j);
            gm_resp_error(rs, err.code == GM_ENOMEM ? 503 : 400, "%s", err.msg);
            return;
        }
        /* As gpumon record does: a reader can tell a simulated session from a real one. */
        gm_session_attach(j->session, "provider", json_string(rq->pub->snap->provider));
        j->create = req;
        j->created_mono_ms = gm_clock_mono_ms();
        snprintf(rs->location, sizeof rs->location, "/api/sessions/%s", gm_session_id(j->session));
        resp_defer(rq, rs, j);
        return;
    }
    static const char *const known[] = {"limit", "kind", NULL};
    size_t limit;
    if (!list_query(rq, rs, known, &limit))
        return;
    const char *kind = gm_query_get(rq->q, "kind");
    if (kind &&
        (strlen(kind) >= 16 || strspn(kind, "abcdefghijklmnopqrstuvwxyz_-") != strlen(kind))) {
        gm_resp_error(rs, 400, "kind=\"%.32s\" is not a kind (session, record, run, ...)", kind);
        return;
    }
    gm_worker_job *j = gm_worker_job_new(GM_JOB_LIST);
    if (j) {
        j->limit = limit;
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
    bool export = slash && strcmp(slash, "/export") == 0;
    gm_error err = {0};
    if (!id_ok(rest, idlen) || (slash && !stop && !export)) {
        gm_resp_error(rs, 404, "no such endpoint: %s", rq->path);
        return;
    }
    gm_worker_job *j;
    if (stop) {
        if (rq->method != GM_HTTP_POST) {
            gm_resp_error(rs, 405, "%s takes POST", rq->path);
            gm_http_allow_list(GM_HTTP_POST, rs->allow, sizeof rs->allow);
            return;
        }
        static const char *const none[] = {NULL};
        if (check_params(rq->q, none, &err) < 0) {
            gm_resp_error(rs, 400, "%s", err.msg);
            return;
        }
        j = gm_worker_job_new(GM_JOB_STOP);
    } else if (export) {
        if (rq->method != GM_HTTP_GET && rq->method != GM_HTTP_HEAD) {
            gm_resp_error(rs, 405, "%s takes GET", rq->path);
            gm_http_allow_list(GM_HTTP_GET | GM_HTTP_HEAD, rs->allow, sizeof rs->allow);
            return;
        }
        static const char *const known[] = {"format", NULL};
        if (check_params(rq->q, known, &err) < 0) {
            gm_resp_error(rs, 400, "%s", err.msg);
            return;
        }
        const char *f = gm_query_get(rq->q, "format");
        if (f && strcmp(f, "csv") != 0 && strcmp(f, "json") != 0) {
            gm_resp_error(rs, 400, "format=\"%.32s\" is not csv or json", f);
            return;
        }
        j = gm_worker_job_new(GM_JOB_EXPORT);
        if (j)
            j->csv = f && strcmp(f, "csv") == 0;
    } else if (rq->method == GM_HTTP_POST) {
        gm_resp_error(rs, 405, "POST is not allowed on %s (stop a session with POST %s/stop)",
                      rq->path, rq->path);
        gm_http_allow_list(GM_HTTP_GET | GM_HTTP_HEAD | GM_HTTP_DELETE, rs->allow,
                           sizeof rs->allow);
        return;
    } else if (rq->method == GM_HTTP_DELETE) {
        static const char *const none[] = {NULL};
        if (check_params(rq->q, none, &err) < 0) {
            gm_resp_error(rs, 400, "%s", err.msg);
            return;
        }
        j = gm_worker_job_new(GM_JOB_DELETE);
    } else {
        static const char *const known[] = {"timeline", NULL};
        if (check_params(rq->q, known, &err) < 0) {
            gm_resp_error(rs, 400, "%s", err.msg);
            return;
        }
        bool timeline = true;
        const char *v = gm_query_get(rq->q, "timeline");
        if (v && gm_parse_bool(v, &timeline) < 0) {
            gm_resp_error(rs, 400, "timeline=\"%.32s\" is not true or false (1 or 0)", v);
            return;
        }
        j = gm_worker_job_new(GM_JOB_GET);
        if (j)
            j->timeline = timeline;
    }
    if (j) {
        memcpy(j->id, rest, idlen);
        j->id[idlen] = '\0';
    }
    resp_defer(rq, rs, j);
}

/* ---- benchmark jobs ------------------------------------------------------------------------ */

/* Starting work on the GPUs needs the token always, loopback included: without one, any local
 * user or any page a local browser opens could load a server and hold GPUs. */
static bool jobs_write_ok(const gm_req *rq, gm_resp *rs)
{
    if (rq->srv->cfg->token_set)
        return true;
    gm_resp_error(rs, 403,
                  "benchmark jobs need a token, even from this host: restart gpumon serve with "
                  "--token (or GPU_MONITOR_TOKEN) and send Authorization: Bearer <token>");
    return false;
}

/* POST /api/benchmarks: a job from the body, 202 with its id and URL. */
static void h_bench_submit(const gm_req *rq, gm_resp *rs)
{
    gm_error err = {0};
    static const char *const none[] = {NULL};
    if (check_params(rq->q, none, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    if (!jobs_write_ok(rq, rs))
        return;
    gm_jobs_request req;
    const char *field = NULL;
    int rc = gm_jobs_parse(rq->body, rq->body_len, &req, &field, &err);
    if (rc < 0) {
        int status = rc == GM_ENOMEM ? 503 : rc == GM_ENOTSUP ? 501 : 400;
        resp_json(rs, status,
                  json_pack("{s:o, s:o}", "error", gm_json_str(err.msg), "field",
                            field ? gm_json_str(field) : json_null()));
        return;
    }
    char id[GM_SESSION_ID_LEN];
    rc = gm_jobs_submit(rq->srv->jobs, &req, id, &err);
    if (rc < 0) {
        gm_resp_error(rs, rc == GM_EBUSY ? 429 : rc == GM_EPERM ? 403 : 503, "%s", err.msg);
        if (rc == GM_EBUSY)
            rs->retry_after = 10;
        return;
    }
    char url[96];
    snprintf(url, sizeof url, "/api/benchmarks/jobs/%s", id);
    snprintf(rs->location, sizeof rs->location, "%s", url);
    resp_json(rs, 202, json_pack("{s:s, s:s, s:s}", "id", id, "url", url, "state", "queued"));
}

/* /api/benchmarks/jobs[/{id}[/cancel]]: answered from the queue's memory, on the loop. */
static void h_jobs(const gm_req *rq, gm_resp *rs, const char *rest)
{
    gm_error err = {0};
    static const char *const none[] = {NULL};
    if (check_params(rq->q, none, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    if (!*rest) {
        if (rq->method == GM_HTTP_POST) {
            gm_resp_error(rs, 405, "start a benchmark job with POST /api/benchmarks");
            gm_http_allow_list(GM_HTTP_GET | GM_HTTP_HEAD, rs->allow, sizeof rs->allow);
            return;
        }
        resp_json(rs, 200, json_pack("{s:o}", "jobs", gm_jobs_list(rq->srv->jobs)));
        return;
    }
    if (*rest != '/') {
        gm_resp_error(rs, 404, "no such endpoint: %s", rq->path);
        return;
    }
    rest++;
    const char *slash = strchr(rest, '/');
    size_t idlen = slash ? (size_t)(slash - rest) : strlen(rest);
    bool cancel = slash && strcmp(slash, "/cancel") == 0;
    if (!id_ok(rest, idlen) || (slash && !cancel)) {
        gm_resp_error(rs, 404, "no such endpoint: %s", rq->path);
        return;
    }
    char id[GM_SESSION_ID_LEN];
    memcpy(id, rest, idlen);
    id[idlen] = '\0';
    if (cancel != (rq->method == GM_HTTP_POST)) {
        gm_resp_error(rs, 405, cancel ? "%s takes POST" : "%s takes GET", rq->path);
        gm_http_allow_list(cancel ? GM_HTTP_POST : GM_HTTP_GET | GM_HTTP_HEAD, rs->allow,
                           sizeof rs->allow);
        return;
    }
    if (cancel) {
        if (!jobs_write_ok(rq, rs))
            return;
        int rc = gm_jobs_cancel(rq->srv->jobs, id, &err);
        if (rc < 0) {
            gm_resp_error(rs, rc == GM_ENOENT ? 404 : 409, "%s", err.msg);
            return;
        }
    }
    json_t *j = gm_jobs_get(rq->srv->jobs, id);
    if (!j) {
        gm_resp_error(rs, 404, "no benchmark job %s", id);
        return;
    }
    resp_json(rs, cancel ? 202 : 200, j);
}

static void h_jobs_route(const gm_req *rq, gm_resp *rs)
{
    h_jobs(rq, rs, rq->path + strlen("/api/benchmarks/jobs"));
}

/* GET /api/benchmarks and /api/benchmarks/{id}: read from the store by the session worker,
 * like /api/sessions, so the loop never waits on SQLite. */
static void h_benchmarks(const gm_req *rq, gm_resp *rs)
{
    if (rq->method == GM_HTTP_POST) {
        h_bench_submit(rq, rs);
        return;
    }
    static const char *const known[] = {"limit", NULL};
    size_t limit;
    if (!list_query(rq, rs, known, &limit))
        return;
    gm_worker_job *j = gm_worker_job_new(GM_JOB_BENCH_LIST);
    if (j)
        j->limit = limit;
    resp_defer(rq, rs, j);
}

/* GET /api/benchmarks/compare?ids=A,B,...: 2 to GM_WORKER_COMPARE_MAX generated ids. */
static void h_benchmark_compare(const gm_req *rq, gm_resp *rs)
{
    gm_error err = {0};
    static const char *const known[] = {"ids", NULL};
    if (check_params(rq->q, known, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    const char *v = gm_query_get(rq->q, "ids");
    gm_worker_job *j = gm_worker_job_new(GM_JOB_BENCH_COMPARE);
    if (!j) {
        gm_resp_error(rs, 503, "out of memory");
        return;
    }
    for (const char *p = v ? v : ""; *p;) {
        size_t len = strcspn(p, ",");
        if (j->nids == GM_WORKER_COMPARE_MAX || !id_ok(p, len)) {
            if (j->nids == GM_WORKER_COMPARE_MAX)
                gm_resp_error(rs, 400, "ids: at most %d benchmarks", GM_WORKER_COMPARE_MAX);
            else
                gm_resp_error(rs, 400, "ids: \"%.*s\" is not a benchmark id",
                              (int)(len > 64 ? 64 : len), p);
            gm_worker_job_free(j);
            return;
        }
        memcpy(j->ids[j->nids], p, len);
        j->ids[j->nids++][len] = '\0';
        p += len + (p[len] == ',');
    }
    if (j->nids < 2) {
        gm_worker_job_free(j);
        gm_resp_error(rs, 400, "ids: give 2 to %d benchmark ids, comma-separated",
                      GM_WORKER_COMPARE_MAX);
        return;
    }
    resp_defer(rq, rs, j);
}

static void h_benchmark(const gm_req *rq, gm_resp *rs)
{
    gm_error err = {0};
    if (strcmp(rq->rest, "compare") == 0) {
        h_benchmark_compare(rq, rs);
        return;
    }
    /* {id}/report.html: the report page `history export ID --format html` writes. */
    const char *slash = strchr(rq->rest, '/');
    bool html = slash && strcmp(slash, "/report.html") == 0;
    size_t idlen = html ? (size_t)(slash - rq->rest) : strlen(rq->rest);
    if (!id_ok(rq->rest, idlen)) {
        gm_resp_error(rs, 404, "no such endpoint: %s", rq->path);
        return;
    }
    static const char *const none[] = {NULL};
    if (check_params(rq->q, none, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    gm_worker_job *j = gm_worker_job_new(GM_JOB_BENCH_GET);
    if (j) {
        snprintf(j->id, sizeof j->id, "%.*s", (int)idlen, rq->rest);
        j->html = html;
    }
    resp_defer(rq, rs, j);
}

/* GET /api/images: the engine's images a job may start, asked by the session worker so the loop
 * never waits on the engine. */
static void h_images(const gm_req *rq, gm_resp *rs)
{
    gm_error err = {0};
    static const char *const none[] = {NULL};
    if (check_params(rq->q, none, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    if (!rq->srv->jobs) {
        gm_resp_error(rs, 503, "the benchmark jobs are not running");
        return;
    }
    gm_worker_job *j = gm_worker_job_new(GM_JOB_IMAGES);
    if (j)
        j->jobs = rq->srv->jobs;
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
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    gm_select_request req = {.count = 1};
    unsigned long long count = 1;
    const char *v = gm_query_get(rq->q, "count");
    if (v && gm_parse_uint(v, 1, GM_MAX_GPUS, &count) < 0) {
        gm_resp_error(rs, 400, "count=\"%.32s\" is not a whole number of GPUs from 1 to %d", v,
                      GM_MAX_GPUS);
        return;
    }
    req.count = (unsigned)count;
    v = gm_query_get(rq->q, "min_free_mb");
    if (v && gm_parse_number(v, 0, 1e12, &req.min_free_mib) < 0) {
        gm_resp_error(rs, 400, "min_free_mb=\"%.32s\" is not a non-negative number of MiB", v);
        return;
    }
    v = gm_query_get(rq->q, "max_util");
    if (v) {
        if (gm_parse_number(v, 0, 100, &req.max_util_pct) < 0) {
            gm_resp_error(rs, 400,
                          "max_util=\"%.32s\" is not a utilization in percent from 0 to 100", v);
            return;
        }
        req.has_max_util = true;
    }
    v = gm_query_get(rq->q, "ignore_leases");
    if (v && gm_parse_bool(v, &req.ignore_leases) < 0) {
        gm_resp_error(rs, 400, "ignore_leases=\"%.32s\" is not true or false", v);
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
        gm_resp_error(rs, 503, "out of memory");
        return;
    }
    if (gm_select(snap, &req, holders, res, &err) < 0) {
        free(holders);
        free(res);
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    json_t *j = gm_select_result_json(res);
    if (j)
        json_object_set_new(j, "lease_dir",
                            srv->lease_dir[0] ? gm_json_str(srv->lease_dir) : json_null());
    free(holders);
    free(res);
    resp_json(rs, 200, j);
}

/* GET /api/fleet: the fleet from Prometheus (--prometheus), answered by the fleet thread so the
 * loop never waits for Prometheus. ?max_util= and ?max_mem_percent= set what counts as an idle
 * GPU (30 and 50 by default, the GPU scheduler's usual thresholds); ?gpus=N adds the node `gpumon
 * cluster select` would choose, and why each node was or was not. */
static void h_fleet_nodes(const gm_req *rq, gm_resp *rs)
{
    gm_server *srv = rq->srv;
    gm_error err = {0};
    if (!srv->fleet) {
        gm_resp_error(rs, 404,
                      "the fleet view is off: start the daemon with --prometheus URL (or "
                      "GPU_MONITOR_PROMETHEUS_URL) naming the Prometheus that scrapes the "
                      "daemons");
        return;
    }
    static const char *const known[] = {"max_util", "max_mem_percent", "gpus", NULL};
    if (check_params(rq->q, known, &err) < 0) {
        gm_resp_error(rs, 400, "%s", err.msg);
        return;
    }
    gm_fleet_thresholds t = {GM_FLEET_MAX_UTIL_DEFAULT, GM_FLEET_MAX_MEM_DEFAULT};
    const char *v = gm_query_get(rq->q, "max_util");
    if (v && gm_parse_number(v, 0, 100, &t.max_util_pct) < 0) {
        gm_resp_error(rs, 400, "max_util=\"%.32s\" is not a utilization in percent from 0 to 100",
                      v);
        return;
    }
    v = gm_query_get(rq->q, "max_mem_percent");
    if (v && gm_parse_number(v, 0, 100, &t.max_mem_pct) < 0) {
        gm_resp_error(rs, 400,
                      "max_mem_percent=\"%.32s\" is not a share of memory in percent from 0 to "
                      "100",
                      v);
        return;
    }
    unsigned long long gpus = 0;
    v = gm_query_get(rq->q, "gpus");
    if (v && gm_parse_uint(v, 1, 4096, &gpus) < 0) {
        gm_resp_error(rs, 400, "gpus=\"%.32s\" is not a whole number of GPUs from 1 to 4096", v);
        return;
    }
    gm_worker_job *j = gm_worker_job_new(GM_JOB_FLEET);
    if (j) {
        j->fleet = t;
        j->fleet_gpus = (unsigned)gpus;
        j->gzip_ok = rq->gzip_ok;
    }
    resp_defer(rq, rs, j);
}

/* Matched in order (a prefix route after the exact routes it would shadow); a field left out is
 * off: no prefix match, no request body, no token, not a WebSocket, built per request. */
static const gm_route routes[] = {
    {
        .path = "/api/health",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_health,
    },
    {
        .path = "/api/config",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_config,
    },
    {
        .path = "/api/gpus",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_gpus,
    },
    {
        .path = "/api/gpus/",
        .prefix = true,
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_gpu,
    },
    {
        .path = "/api/processes",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_processes,
    },
    {
        .path = "/api/system",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_system,
    },
    {
        .path = "/api/history",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_history,
        .per_sample = true,
    },
    {
        .path = "/api/sessions",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD | GM_HTTP_POST,
        .needs_token = true,
        .max_body = GM_SESSION_BODY_MAX,
        .fn = h_sessions,
    },
    {
        .path = "/api/sessions/",
        .prefix = true,
        .methods = GM_HTTP_GET | GM_HTTP_HEAD | GM_HTTP_POST | GM_HTTP_DELETE,
        .needs_token = true,
        .max_body = GM_SESSION_BODY_MAX,
        .fn = h_session,
    },
    {
        .path = "/api/benchmarks",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD | GM_HTTP_POST,
        .needs_token = true,
        .max_body = GM_JOBS_BODY_MAX,
        .fn = h_benchmarks,
    },
    {
        .path = "/api/benchmarks/jobs",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_jobs_route,
    },
    {
        .path = "/api/benchmarks/jobs/",
        .prefix = true,
        .methods = GM_HTTP_GET | GM_HTTP_HEAD | GM_HTTP_POST,
        .needs_token = true,
        .fn = h_jobs_route,
    },
    {
        .path = "/api/benchmarks/",
        .prefix = true,
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_benchmark,
    },
    {
        .path = "/api/images",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_images,
    },
    {
        .path = "/api/allocation",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_allocation,
    },
    {
        .path = "/api/fleet",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_fleet_nodes,
    },
    {
        .path = "/api/v1/monitoring/gpu-metrics",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_gpu_metrics,
    },
    {
        .path = "/stats",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_stats,
    },
    {
        .path = "/metrics",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_metrics,
    },
    {
        .path = "/ws/gpu",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_ws_plain,
        .websocket = true,
    },
    {
        .path = "/ws/metrics",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_ws_plain,
        .websocket = true,
    },
    {
        .path = "/ws/benchmarks",
        .methods = GM_HTTP_GET | GM_HTTP_HEAD,
        .needs_token = true,
        .fn = h_ws_plain,
        .websocket = true,
    },
};

const gm_route *gm_route_find(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        const gm_route *r = &routes[i];
        if (r->prefix ? strncmp(path, r->path, strlen(r->path)) == 0 : strcmp(path, r->path) == 0)
            return r;
    }
    return NULL;
}

void gm_route_run(const gm_route *r, const gm_req *rq, gm_resp *rs)
{
    r->fn(rq, rs);
    if (rs->status == 405 && !rs->allow[0])
        gm_http_allow_list(r->methods, rs->allow, sizeof rs->allow);
}

/* ---- the dashboard's files ---------------------------------------------------------------- */

static void serve_asset(const gm_asset *a, const gm_req *rq, gm_resp *rs)
{
    rs->status = 200;
    rs->ctype = a->content_type;
    rs->body = a->data;
    rs->len = a->len;
    rs->gzip = a->gzip;
    rs->vary_ae = gm_assets_has_gzip(a->path);
    rs->cache = a->cache_control ? a->cache_control : "no-cache";
    rs->etag = gm_assets_etag(a);
    if (rq->if_none_match && gm_etag_matches(rq->if_none_match, rs->etag)) {
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
        gm_resp_error(rs, 404, "no such file: %s", path);
    else if (rc == GM_EPERM)
        gm_resp_error(rs, 403, "%s is outside the web root or not served", path);
    else if (rc == GM_EINVAL)
        gm_resp_error(rs, 500, "%s: %s", path, err.msg);
    else if (rc < 0)
        gm_resp_error(rs, rc == GM_ENOMEM ? 503 : 500, "%s: %s", path, err.msg);
    else
        gm_resp_owned(rs, 200, ctype, data, len);
}

bool gm_route_static(gm_server *srv, const char *path, const gm_req *rq, gm_resp *rs)
{
    if (srv->web_root[0]) {
        serve_webroot(srv, path, rs);
        return true;
    }
    const gm_asset *a = gm_assets_find(path, rq->gzip_ok);
    if (!a)
        return false;
    serve_asset(a, rq, rs);
    return true;
}
