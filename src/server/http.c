/* http.c - HTTP/1.1 on libmicrohttpd, driven by the daemon's loop (no thread of its own).
 *
 * libmicrohttpd parses the wire (pipelining, Content-Length and chunked bodies, versions,
 * 100-continue); this file adds what it lets through: every header name must be a token and
 * every value free of control bytes, a second Content-Length or any Transfer-Encoding closes
 * the connection after a 4xx, the request target is decoded once by request.c, and each
 * connection phase has a deadline (head, body, parked answer) that is never lifted while a
 * request is incomplete. Then the route table (routes.c) decides the answer. */
#include "server/server_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/assets.h"
#include "server/log.h"
#include "base/clock.h"
#include "base/parse.h"
#include "base/error.h"

struct gm_conn {
    gm_list link; /* on srv->conns */
    struct MHD_Connection *mc;
    int fd;
    /* While the client owes bytes, when the connection is closed: a request head (between
     * requests, idle keep-alive included), or the body of req (ST_BODY); 0 while the daemon
     * owes the answer. The request's stage says which, so there is no second state here. */
    int64_t deadline_ms;
    gm_http_req *req; /* the request on_uri made, until on_completed frees it */
    bool upgraded;    /* handed to ws.c: no more requests, no deadlines */
};

/* libmicrohttpd closes the connection after an answer queued at the first call (the head), as
 * it cannot know the request is over: answers that keep the connection wait for the next call
 * (ST_READY), which comes at once for a request without a body. */
enum { ST_NEW, ST_READY, ST_BODY, ST_PARKED, ST_DEFERRED, ST_ANSWERED };

struct gm_http_req {
    gm_conn *conn;
    int stage;
    bool uri_long;
    char uri[GM_HTTP_URI_MAX + 1]; /* the raw request target */
    size_t uri_len;
    const gm_route *route;
    unsigned method;
    bool gzip_ok;
    bool has_ready; /* ST_READY: send `ready` (else run the route) */
    bool upgrade;   /* ST_READY: a WebSocket handshake */
    gm_resp ready;
    char path[GM_HTTP_PATH_MAX];
    gm_query q;
    char *body; /* a request body being read (routes with max_body), grown as it arrives */
    size_t body_len, body_max, body_cap;
    size_t body_reserved; /* of srv->body_bytes: what Content-Length announced */
    gm_worker_job *job;   /* parked: the session worker's job */
    char location[96];
    gm_list link; /* on srv->pending while ST_PARKED, srv->deferred while ST_DEFERRED */
    bool resumed, timed_out;
    int64_t t0_us, parked_ms;
};

/* A response body held until libmicrohttpd has sent it. */
typedef struct held_body {
    gm_server *srv;
    char *owned;
    gm_published *pin;
    size_t accounted;
} held_body;

/* ---- responses ---------------------------------------------------------------------------- */

static void free_held(void *cls)
{
    held_body *h = cls;
    h->srv->inflight_bytes -= h->accounted;
    free(h->owned);
    gm_published_unref(h->pin);
    free(h);
}

static bool add_header(struct MHD_Response *r, const char *name, const char *value)
{
    return MHD_add_response_header(r, name, value) == MHD_YES;
}

static bool add_headers(gm_server *srv, struct MHD_Response *r, const gm_resp *rs)
{
    char num[32];
    bool ok = add_header(r, "Server", "gpumon/" GM_VERSION);
    if (rs->ctype)
        ok &= add_header(r, "Content-Type", rs->ctype);
    ok &= add_header(r, "Cache-Control", rs->cache ? rs->cache : "no-store");
    ok &= add_header(r, "X-Content-Type-Options", "nosniff");
    if (rs->gzip)
        ok &= add_header(r, "Content-Encoding", "gzip");
    if (rs->gzip || rs->vary_ae)
        ok &= add_header(r, "Vary", "Accept-Encoding");
    if (rs->etag)
        ok &= add_header(r, "ETag", rs->etag);
    if (rs->location[0])
        ok &= add_header(r, "Location", rs->location);
    if (rs->attachment[0]) {
        char disp[96];
        snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", rs->attachment);
        ok &= add_header(r, "Content-Disposition", disp);
    }
    if (rs->allow[0])
        ok &= add_header(r, "Allow", rs->allow);
    if (rs->www_auth)
        ok &= add_header(r, "WWW-Authenticate", "Bearer realm=\"gpumon\"");
    if (rs->retry_after) {
        snprintf(num, sizeof num, "%d", rs->retry_after);
        ok &= add_header(r, "Retry-After", num);
    }
    if (rs->close)
        ok &= add_header(r, "Connection", "close");
    if (rs->ws_version)
        ok &= add_header(r, "Sec-WebSocket-Version", "13");
    const char *origin = srv->cfg->cors_origin;
    if (origin[0]) {
        ok &= add_header(r, "Access-Control-Allow-Origin", origin);
        if (strcmp(origin, "*") != 0)
            ok &= add_header(r, "Vary", "Origin");
        if (rs->preflight) {
            ok &= add_header(r, "Access-Control-Allow-Methods", rs->allow);
            ok &= add_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
            ok &= add_header(r, "Access-Control-Max-Age", "600");
        }
    }
    return ok;
}

static void log_request(const gm_http_req *r, int status, size_t len)
{
    if (!gm_log_enabled(GM_LOG_DEBUG))
        return;
    char qp[300];
    gm_log(GM_LOG_DEBUG, "request", "method=%s path=%s status=%d bytes=%zu us=%lld",
           gm_http_method_name(r->method), gm_log_quote(r->path[0] ? r->path : "-", qp, sizeof qp),
           status, len, (long long)(gm_clock_mono_us() - r->t0_us));
}

/* Responses made from the newest bundle's blobs, kept for every request until the next
 * sample: libmicrohttpd responses are reference-counted and may be queued on any number of
 * connections, so their headers are built once per sample, not once per request. */
#define CACHE_SLOTS (16 + GM_MAX_GPUS)

/* An answer of a per-sample route (gm_route.per_sample), kept until the next sample for every
 * request with the same target: a peer repeating one costly query (thousands of pipelined
 * /api/history) costs one build per sample, not one per request. */
typedef struct built_answer {
    char *target; /* the raw request target */
    bool gzip_ok;
    int status;
    size_t len;
    struct MHD_Response *resp; /* the cache's reference */
} built_answer;

struct gm_resp_cache {
    gm_published *pub;
    unsigned n;
    const unsigned char *body[CACHE_SLOTS];
    struct MHD_Response *resp[CACHE_SLOTS];
    const gm_published *built_pub; /* the sample the built answers are of */
    unsigned built_n;
    size_t built_bytes;
    built_answer built[GM_HTTP_BUILT_SLOTS];
};

static void built_flush(gm_resp_cache *rc)
{
    for (unsigned i = 0; i < rc->built_n; i++) {
        MHD_destroy_response(rc->built[i].resp);
        free(rc->built[i].target);
    }
    rc->built_n = 0;
    rc->built_bytes = 0;
    rc->built_pub = NULL;
}

static void cache_flush(gm_resp_cache *rc)
{
    for (unsigned i = 0; i < rc->n; i++)
        MHD_destroy_response(rc->resp[i]); /* sends in progress hold their own reference */
    rc->n = 0;
    gm_published_unref(rc->pub);
    rc->pub = NULL;
    built_flush(rc);
}

/* A blob of the newest bundle with the plain headers: cacheable. */
static bool cacheable(const gm_server *srv, const gm_resp *rs)
{
    return srv->resp_cache && rs->pin && rs->pin == srv->current && !rs->owned &&
           rs->status == 200 && !rs->close && !rs->location[0] && !rs->allow[0] && !rs->www_auth &&
           !rs->retry_after && !rs->etag && !rs->preflight;
}

static enum MHD_Result queue(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                             const gm_resp *rs, struct MHD_Response *resp)
{
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)rs->status, resp);
    r->stage = ST_ANSWERED;
    log_request(r, rs->status, r->method == GM_HTTP_HEAD ? 0 : rs->len);
    return ok;
}

static enum MHD_Result send_resp_kept(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                                      gm_resp *rs, bool keep);

/* Queues rs (consuming it) on c. MHD_NO closes the connection. */
static enum MHD_Result send_resp(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                                 gm_resp *rs)
{
    return send_resp_kept(srv, c, r, rs, false);
}

/* The built answers are of the newest sample only. */
static gm_resp_cache *built_cache(gm_server *srv)
{
    gm_resp_cache *rc = srv->resp_cache;
    if (rc && rc->built_pub != srv->current) {
        built_flush(rc);
        rc->built_pub = srv->current;
    }
    return rc;
}

/* Queues the answer built for r's target in this sample; false when there is none. */
static bool send_built(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                       enum MHD_Result *ok)
{
    gm_resp_cache *rc = built_cache(srv);
    for (unsigned i = 0; rc && i < rc->built_n; i++) {
        built_answer *b = &rc->built[i];
        if (b->gzip_ok != r->gzip_ok || strcmp(b->target, r->uri) != 0)
            continue;
        gm_resp rs = {.status = b->status, .len = b->len};
        *ok = queue(srv, c, r, &rs, b->resp);
        return true;
    }
    return false;
}

/* Keeps resp (taking the caller's reference) as the answer to r's target in this sample; false
 * when there is no room. */
static bool keep_built(gm_server *srv, gm_http_req *r, const gm_resp *rs, struct MHD_Response *resp)
{
    gm_resp_cache *rc = built_cache(srv);
    if (!rc || rc->built_n >= GM_HTTP_BUILT_SLOTS ||
        rc->built_bytes + rs->len > GM_HTTP_BUILT_BYTES)
        return false;
    char *target = strdup(r->uri);
    if (!target)
        return false;
    rc->built[rc->built_n++] = (built_answer){.target = target,
                                              .gzip_ok = r->gzip_ok,
                                              .status = rs->status,
                                              .len = rs->len,
                                              .resp = resp};
    rc->built_bytes += rs->len;
    return true;
}

/* send_resp; keep: rs is a per-sample route's answer to r, kept for the same target. */
static enum MHD_Result send_resp_kept(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                                      gm_resp *rs, bool keep)
{
    struct MHD_Response *resp;
    bool cache = cacheable(srv, rs);
    gm_resp_cache *rc = srv->resp_cache;
    if (cache) {
        if (rc->pub != rs->pin) {
            cache_flush(rc);
            rc->pub = gm_published_ref(rs->pin);
        }
        for (unsigned i = 0; i < rc->n; i++)
            if (rc->body[i] == rs->body)
                return queue(srv, c, r, rs, rc->resp[i]);
        cache = rc->n < CACHE_SLOTS;
    }
    if (rs->owned || rs->pin) {
        held_body *h = calloc(1, sizeof *h);
        if (!h) {
            gm_resp_release(rs);
            return MHD_NO;
        }
        h->srv = srv;
        h->owned = rs->owned;
        h->pin = gm_published_ref(rs->pin);
        /* Owned bodies are memory held for this client alone; a cached blob is shared. */
        h->accounted = cache ? 0 : rs->len;
        srv->inflight_bytes += h->accounted;
        rs->owned = NULL;
        resp = MHD_create_response_from_buffer_with_free_callback_cls(rs->len, (void *)rs->body,
                                                                      free_held, h);
        if (!resp) {
            free_held(h);
            return MHD_NO;
        }
    } else {
        /* Static bytes (the dashboard's files, fixed messages) or no body at all. */
        resp = MHD_create_response_from_buffer(rs->len, (void *)rs->body, MHD_RESPMEM_PERSISTENT);
        if (!resp)
            return MHD_NO;
    }
    if (!add_headers(srv, resp, rs)) {
        MHD_destroy_response(resp);
        return MHD_NO;
    }
    enum MHD_Result ok = queue(srv, c, r, rs, resp);
    if (keep && !cache && keep_built(srv, r, rs, resp))
        return ok;
    if (cache) {
        rc->body[rc->n] = rs->body;
        rc->resp[rc->n++] = resp; /* the cache's reference */
    } else {
        MHD_destroy_response(resp);
    }
    return ok;
}

/* Refuses a request that cannot go on: status, message, and the connection closed after it, so
 * bytes it left unread (a body, a smuggled request) never become a request. */
static enum MHD_Result refuse(gm_server *srv, struct MHD_Connection *c, gm_http_req *r, int status,
                              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static enum MHD_Result refuse(gm_server *srv, struct MHD_Connection *c, gm_http_req *r, int status,
                              const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gm_resp rs = {0};
    gm_resp_error(&rs, status, "%s", msg);
    rs.close = true;
    srv->http_refused++;
    return send_resp(srv, c, r, &rs);
}

/* ---- the request head --------------------------------------------------------------------- */

typedef struct head_check {
    const char *head, *head_end; /* the head in the read buffer: [request line, blank line] */
    const char *prev_end;        /* the end of the previous header's value */
    const char *prev_key;        /* and its name */
    size_t prev_klen;
    bool bad_name, bad_value;
    char bad[64];
    unsigned content_length, transfer_encoding, host;
} head_check;

/* libmicrohttpd 0.9.75 ends a header value at a NUL byte and drops the rest of its line, so
 * `X: a<NUL>Content-Length: 40` would hide a header that a proxy in front sees. The head stays in
 * the connection's read buffer with its line ends and colons turned into NULs: anything but NULs
 * between the end of one value and the next header's name (or the end of the head) is the rest of
 * a line cut at a NUL. True when [from, to) holds NULs only. */
static bool only_nuls(const head_check *h, const char *from, const char *to)
{
    if (from < h->head || to > h->head_end || from > to)
        return true; /* not in the read buffer as expected: nothing to say */
    for (const char *p = from; p < to; p++)
        if (*p)
            return false;
    return true;
}

static enum MHD_Result check_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t klen, const char *value, size_t vlen)
{
    head_check *h = cls;
    if (h->prev_end && !only_nuls(h, h->prev_end, key)) {
        h->bad_value = true;
        snprintf(h->bad, sizeof h->bad, "%.*s", (int)(h->prev_klen < 40 ? h->prev_klen : 40),
                 h->prev_key);
        return MHD_NO;
    }
    if (value && h->head) {
        h->prev_end = value + vlen;
        h->prev_key = key;
        h->prev_klen = klen;
    }
    if (!gm_http_token_ok(key, klen)) {
        h->bad_name = true;
        snprintf(h->bad, sizeof h->bad, "%.*s", (int)(klen < 40 ? klen : 40), key);
        return MHD_NO;
    }
    if (!value || !gm_http_value_ok(value, vlen)) {
        h->bad_value = true;
        snprintf(h->bad, sizeof h->bad, "%.*s", (int)(klen < 40 ? klen : 40), key);
        return MHD_NO;
    }
    if (klen == 14 && strncasecmp(key, "Content-Length", 14) == 0)
        h->content_length++;
    else if (klen == 17 && strncasecmp(key, "Transfer-Encoding", 17) == 0)
        h->transfer_encoding++;
    else if (klen == 4 && strncasecmp(key, "Host", 4) == 0)
        h->host++;
    return MHD_YES;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* True for Content-Type application/json (parameters such as charset allowed). */
static bool json_content_type(struct MHD_Connection *c)
{
    const char *ct = header(c, "Content-Type");
    if (!ct)
        return false;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

/* The peer's address, for gm_server_write_access; false when it cannot be read. */
static bool peer_address(struct MHD_Connection *c, struct sockaddr_storage *ss, socklen_t *len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return false;
    const struct sockaddr *sa = ci->client_addr;
    *len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    memcpy(ss, sa, *len);
    return true;
}

static gm_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static void fill_req(gm_server *srv, struct MHD_Connection *c, gm_http_req *r, gm_req *rq)
{
    /* A sample wakes the loop only for WebSocket clients: a request takes the newest itself. */
    gm_server_refresh(srv);
    *rq = (gm_req){.srv = srv,
                   .method = r->method,
                   .path = r->path,
                   .rest = r->route ? r->path + strlen(r->route->path) : r->path,
                   .q = &r->q,
                   .pub = srv->current,
                   .body = r->body,
                   .body_len = r->body_len,
                   .gzip_ok = r->gzip_ok,
                   .if_none_match = header(c, "If-None-Match")};
}

/* A parked request's job goes to the thread that answers its kind: the fleet thread for
 * /api/fleet (Prometheus may be slow), the session worker for the rest. */
static void job_submit(gm_server *srv, gm_worker_job *j)
{
    if (j->op == GM_JOB_FLEET)
        gm_fleet_cache_submit(srv->fleet, j);
    else
        gm_worker_submit(srv->worker, j);
}

static void job_abandon(gm_server *srv, gm_worker_job *j)
{
    if (j && j->op == GM_JOB_FLEET)
        gm_fleet_cache_abandon(srv->fleet, j);
    else
        gm_worker_abandon(srv->worker, j);
}

/* Answers rs, or parks the request until the session worker has answered rs->defer. */
static enum MHD_Result answer(gm_server *srv, struct MHD_Connection *c, gm_http_req *r, gm_resp *rs)
{
    if (!rs->defer)
        return send_resp(srv, c, r, rs);
    r->job = rs->defer;
    snprintf(r->location, sizeof r->location, "%s", rs->location);
    r->stage = ST_PARKED;
    r->parked_ms = gm_clock_mono_ms();
    gm_list_push_front(&srv->pending, &r->link);
    MHD_suspend_connection(c);
    job_submit(srv, r->job);
    /* A job refused at once (shutting down) is answered on the next turn of the loop. */
    if (gm_worker_job_done(r->job))
        gm_server_wake(srv);
    return MHD_YES;
}

/* A parked request after its resumption: the worker's answer, or 503 when it was too slow. */
static enum MHD_Result answer_parked(gm_server *srv, struct MHD_Connection *c, gm_http_req *r)
{
    gm_resp rs = {0};
    gm_worker_job *j = r->job;
    r->job = NULL;
    if (r->timed_out || !j || !gm_worker_job_done(j)) {
        bool fleet = j && j->op == GM_JOB_FLEET;
        if (j)
            job_abandon(srv, j);
        gm_resp_error(&rs, 503, "the %s did not answer within %d s",
                      fleet ? "fleet thread" : "session worker", GM_HTTP_JOB_TIMEOUT_S);
        rs.retry_after = 5;
        return send_resp(srv, c, r, &rs);
    }
    rs.status = j->status;
    if (j->body) {
        gm_resp_owned(&rs, j->status, j->ctype ? j->ctype : "application/json", j->body, j->len);
        j->body = NULL;
        rs.gzip = j->gzip;
        snprintf(rs.attachment, sizeof rs.attachment, "%s", j->filename);
    }
    rs.vary_ae = j->vary_ae;
    if (rs.status == 201)
        snprintf(rs.location, sizeof rs.location, "%s", r->location);
    gm_worker_job_free(j);
    return send_resp(srv, c, r, &rs);
}

/* Requests whose route runs on the loop share a budget of time per turn of the loop: past it they
 * wait (suspended, in order) for the next turns, so thousands of pipelined /api/history requests
 * cannot hold the loop for seconds. /api/health is answered at once, ahead of them. */
static void defer(gm_server *srv, struct MHD_Connection *c, gm_http_req *r)
{
    r->stage = ST_DEFERRED;
    gm_list_push_back(&srv->deferred, &r->link);
    MHD_suspend_connection(c);
}

static enum MHD_Result dispatch(gm_server *srv, struct MHD_Connection *c, gm_http_req *r)
{
    bool health = r->route && strcmp(r->route->path, "/api/health") == 0;
    bool per_sample = r->route && r->route->per_sample && r->method != GM_HTTP_OPTIONS;
    enum MHD_Result ok;
    if (per_sample && send_built(srv, c, r, &ok))
        return ok; /* built already: no route time */
    if (!health && srv->turn_work_us >= GM_HTTP_TURN_BUDGET_US) {
        defer(srv, c, r);
        return MHD_YES;
    }
    gm_req rq;
    gm_resp rs = {0};
    int64_t t0 = gm_clock_mono_us();
    fill_req(srv, c, r, &rq);
    gm_route_run(r->route, &rq, &rs);
    if (per_sample && !rs.defer && rs.status == 200 && rs.owned)
        ok = send_resp_kept(srv, c, r, &rs, true);
    else
        ok = answer(srv, c, r, &rs);
    srv->turn_work_us += gm_clock_mono_us() - t0;
    return ok;
}

/* The head has arrived: decide whether the request goes on, and answer it when it has no
 * body. */
/* Reads the request head's headers into hc: what check_header finds, and a value that runs on
 * past its end (only NULs may follow it). */
static void check_head(struct MHD_Connection *c, const char *method_name, head_check *hc)
{
    const union MHD_ConnectionInfo *hi =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (hi && hi->header_size <= GM_HTTP_CONN_MEMORY) {
        hc->head = method_name;
        hc->head_end = method_name + hi->header_size;
    }
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, check_header, hc);
    if (!hc->bad_name && !hc->bad_value && hc->prev_end &&
        !only_nuls(hc, hc->prev_end, hc->head_end)) {
        hc->bad_value = true;
        snprintf(hc->bad, sizeof hc->bad, "%.*s", (int)(hc->prev_klen < 40 ? hc->prev_klen : 40),
                 hc->prev_key);
    }
}

/* A path no route has: a file of the dashboard asked for with another method is a 405 (or an
 * OPTIONS preflight), anything else a 404. */
static void answer_unrouted(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                            const gm_req *rq, gm_resp *rs, bool has_body)
{
    bool file = gm_route_static(srv, r->path, rq, rs) && rs->status != 404;
    gm_resp_release(rs);
    if (file && r->method == GM_HTTP_OPTIONS) {
        rs->status = 204;
        rs->preflight = true;
        gm_http_allow_list(GM_HTTP_GET | GM_HTTP_HEAD, rs->allow, sizeof rs->allow);
    } else if (file) {
        gm_resp_error(rs, 405, "%s is not allowed on %s", gm_http_method_name(r->method), r->path);
        gm_http_allow_list(GM_HTTP_GET | GM_HTTP_HEAD, rs->allow, sizeof rs->allow);
    } else {
        gm_resp_error(rs, 404, "no such endpoint: %s", r->path);
    }
    /* A refused upgrade closes: its client may send frames next, which are no request. */
    rs->close = has_body || header(c, "Upgrade");
}

/* The route's rules a request allowed on it may still break: the token, who may write, and
 * the body (clen bytes announced). True with the refusal in rs; false when it goes on. */
static bool route_refuses(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                          unsigned long long clen, gm_resp *rs)
{
    const gm_route *rt = r->route;
    bool has_body = clen > 0;
    bool writes = r->method == GM_HTTP_POST || r->method == GM_HTTP_DELETE;
    struct sockaddr_storage peer;
    socklen_t peer_len = 0;
    bool have_peer = writes && peer_address(c, &peer, &peer_len);
    if (rt->needs_token && !gm_server_authorized(srv, header(c, "Authorization"), NULL)) {
        gm_resp_error(rs, 401,
                      "missing or wrong bearer token (send Authorization: Bearer <token>)");
        rs->www_auth = true;
        rs->close = has_body;
    } else if (writes && gm_server_write_access(srv->cfg->token_set,
                                                have_peer ? (const struct sockaddr *)&peer : NULL,
                                                peer_len) != 0) {
        gm_resp_error(rs, 403,
                      "%s from another host needs a token: restart gpumon serve with --token "
                      "(or GPU_MONITOR_TOKEN) and send Authorization: Bearer <token>",
                      gm_http_method_name(r->method));
        rs->close = has_body;
    } else if (writes && !srv->cfg->token_set &&
               !gm_server_origin_allowed(header(c, "Origin"), header(c, "Host"),
                                         srv->cfg->cors_origin)) {
        gm_resp_error(rs, 403,
                      "%s from a web page of another origin is refused without a token: set "
                      "--token, or --cors-origin to that origin",
                      gm_http_method_name(r->method));
        rs->close = has_body;
    } else if (has_body && rt->max_body == 0) {
        gm_resp_error(rs, 413, "%s takes no request body", r->path);
        rs->close = true;
    } else if (has_body && clen > rt->max_body) {
        gm_resp_error(rs, 413, "request body over the limit of %zu bytes", rt->max_body);
        rs->close = true;
    } else if (has_body && !json_content_type(c)) {
        gm_resp_error(rs, 415, "send the request body as Content-Type: application/json");
        rs->close = true;
    } else if (has_body && srv->body_bytes + clen > GM_HTTP_BODY_BUDGET) {
        /* Bodies announced and not yet answered share one budget, so connections announcing
         * large bodies and sending nothing cannot hold memory each. */
        gm_resp_error(rs, 503, "too many request bodies in progress; retry");
        rs->retry_after = 1;
        rs->close = true;
    } else {
        return false;
    }
    return true;
}

static enum MHD_Result begin(gm_server *srv, struct MHD_Connection *c, gm_http_req *r,
                             const char *method_name)
{
    gm_error err = {0};
    r->conn->deadline_ms = 0;
    r->t0_us = gm_clock_mono_us();

    /* The wire format, strictly: nothing below may be read two ways. */
    if (!gm_http_token_ok(method_name, strlen(method_name)))
        return refuse(srv, c, r, 400, "malformed request method");
    r->method = gm_http_method(method_name);
    if (!r->method)
        return refuse(srv, c, r, 501, "method %.16s is not implemented", method_name);
    head_check hc = {0};
    check_head(c, method_name, &hc);
    if (hc.bad_name)
        return refuse(srv, c, r, 400, "malformed header name \"%s\"", hc.bad);
    if (hc.bad_value)
        return refuse(srv, c, r, 400, "control character in the value of header %s", hc.bad);
    if (hc.host > 1)
        return refuse(srv, c, r, 400, "more than one Host header");
    if (hc.content_length > 1)
        return refuse(srv, c, r, 400, "more than one Content-Length header");
    if (hc.transfer_encoding)
        return refuse(srv, c, r, 411,
                      "send the request body with a Content-Length (no Transfer-Encoding)");
    if (r->uri_long)
        return refuse(srv, c, r, 414, "request target longer than %d bytes", GM_HTTP_URI_MAX);
    if (r->method == GM_HTTP_CONNECT || r->method == GM_HTTP_TRACE)
        return refuse(srv, c, r, 405, "%s is not supported", gm_http_method_name(r->method));
    if (gm_http_target_parse(r->uri, r->uri_len, r->path, sizeof r->path, &r->q, &err) < 0)
        return refuse(srv, c, r, 400, "bad request target: %s", err.msg);

    const char *cl = header(c, "Content-Length");
    unsigned long long clen = 0;
    if (cl && gm_parse_uint(cl, 0, 1ull << 40, &clen) < 0)
        return refuse(srv, c, r, 400, "malformed Content-Length");
    bool has_body = clen > 0;
    const char *ae = header(c, "Accept-Encoding");
    r->gzip_ok = ae && gm_accepts_gzip(ae);

    /* Then the route's rules. */
    gm_resp rs = {0};
    gm_req rq;
    r->route = gm_route_find(r->path);
    fill_req(srv, c, r, &rq);
    const gm_route *rt = r->route;
    bool is_static = false;
    if (!rt && (r->method == GM_HTTP_GET || r->method == GM_HTTP_HEAD) && !has_body)
        is_static = gm_route_static(srv, r->path, &rq, &rs);
    if (is_static)
        goto later;
    unsigned allowed = rt ? rt->methods : 0;

    if (!rt) {
        answer_unrouted(srv, c, r, &rq, &rs, has_body);
    } else if (r->method == GM_HTTP_OPTIONS) {
        /* Preflight: answered without the token (browsers never send it here). */
        rs.status = 204;
        rs.preflight = true;
        gm_http_allow_list(allowed, rs.allow, sizeof rs.allow);
        rs.close = has_body;
    } else if (!(allowed & r->method)) {
        gm_resp_error(&rs, 405, "%s is not allowed on %s", gm_http_method_name(r->method), r->path);
        gm_http_allow_list(allowed, rs.allow, sizeof rs.allow);
        rs.close = has_body;
    } else if (rt->websocket && r->method == GM_HTTP_GET && header(c, "Upgrade")) {
        if (has_body)
            return refuse(srv, c, r, 400, "a WebSocket upgrade carries no body");
        r->stage = ST_READY; /* the handshake is answered at the next call */
        r->upgrade = true;
        return MHD_YES;
    } else if (route_refuses(srv, c, r, clen, &rs)) {
        /* rs says why */
    } else if (has_body) {
        /* The body comes in the next calls; the route runs once it is complete. Memory is
         * taken as bytes arrive, not when Content-Length announces them. */
        r->body_max = (size_t)clen;
        r->body_reserved = (size_t)clen;
        srv->body_bytes += r->body_reserved;
        r->stage = ST_BODY;
        r->conn->deadline_ms = gm_clock_mono_ms() + GM_HTTP_BODY_TIMEOUT_S * 1000;
        return MHD_YES;
    } else {
        r->stage = ST_READY;
        return MHD_YES;
    }
    if (rs.close) {
        srv->http_refused++;
        return send_resp(srv, c, r, &rs);
    }
later:
    r->ready = rs;
    r->has_ready = true;
    r->stage = ST_READY;
    return MHD_YES;
}

/* The request is complete and keeps its connection: the answer decided at the head, the
 * WebSocket handshake, or the route. */
static enum MHD_Result ready(gm_server *srv, struct MHD_Connection *c, gm_http_req *r)
{
    if (r->has_ready) {
        r->has_ready = false;
        return send_resp(srv, c, r, &r->ready);
    }
    if (r->upgrade) {
        gm_resp rs = {0};
        if (gm_ws_handshake(srv, c, r->route, &r->q, &rs)) {
            r->stage = ST_ANSWERED;
            r->conn->upgraded = true;
            return MHD_YES;
        }
        rs.close = true;
        srv->http_refused++;
        return send_resp(srv, c, r, &rs);
    }
    return dispatch(srv, c, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    gm_server *srv = cls;
    gm_http_req *r = *req_cls;
    if (!r) /* on_uri could not allocate: close */
        return MHD_NO;
    if (!r->conn) {
        r->conn = conn_of(c);
        if (!r->conn)
            return MHD_NO;
    }
    switch (r->stage) {
    case ST_NEW:
        return begin(srv, c, r, method);
    case ST_READY:
        *upload_size = 0;
        return ready(srv, c, r);
    case ST_BODY:
        if (*upload_size) {
            /* libmicrohttpd delivers no more than Content-Length said. */
            size_t n = *upload_size;
            if (n > r->body_max - r->body_len)
                return MHD_NO;
            if (r->body_len + n + 1 > r->body_cap) {
                size_t cap = r->body_cap ? r->body_cap * 2 : 1024;
                while (cap < r->body_len + n + 1)
                    cap *= 2;
                if (cap > r->body_max + 1)
                    cap = r->body_max + 1;
                char *b = realloc(r->body, cap);
                if (!b)
                    return MHD_NO;
                r->body = b;
                r->body_cap = cap;
            }
            memcpy(r->body + r->body_len, upload, n);
            r->body_len += n;
            r->body[r->body_len] = '\0';
            *upload_size = 0;
            return MHD_YES;
        }
        r->conn->deadline_ms = 0;
        return dispatch(srv, c, r);
    case ST_PARKED:
        return r->resumed ? answer_parked(srv, c, r) : MHD_YES;
    case ST_DEFERRED:
        if (gm_list_linked(&r->link)) /* still waiting for its turn */
            return MHD_YES;
        *upload_size = 0;
        return dispatch(srv, c, r);
    default:
        *upload_size = 0;
        return MHD_YES;
    }
}

/* ---- per-request and per-connection bookkeeping ------------------------------------------- */

/* Called at each request line with the raw target: its return value becomes the request's
 * state, so the target is seen exactly as sent (before any decoding). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    gm_http_req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    size_t n = strlen(uri);
    if (n > GM_HTTP_URI_MAX)
        r->uri_long = true;
    else {
        memcpy(r->uri, uri, n + 1);
        r->uri_len = n;
    }
    gm_conn *k = conn_of(c);
    if (k)
        k->req = r;
    return r;
}

static void req_free(gm_server *srv, gm_http_req *r)
{
    gm_list_remove(&r->link); /* parked or deferred */
    if (r->job)               /* the client left before the worker answered */
        job_abandon(srv, r->job);
    if (r->has_ready)
        gm_resp_release(&r->ready);
    srv->body_bytes -= r->body_reserved;
    free(r->body);
    free(r);
}

/* libmicrohttpd 0.9.75 closes some malformed requests without an answer: a request line it
 * cannot split (two spaces between its parts) or one that leaves no room in the connection's
 * memory for its query parameters or for the answer's headers (a target near 8 KiB). The socket
 * is still open when the connection's end is reported, so the client is told why in one
 * fixed answer written here (best effort: the socket's send buffer is empty at this point). */
static void last_word(const gm_conn *k, const gm_http_req *r)
{
    static const char body414[] = "{\"error\": \"request target longer than "
                                  "4096 bytes\"}\n";
    static const char body400[] = "{\"error\": \"malformed request line, or a request "
                                  "head too large for the connection's 8 KiB\"}\n";
    if (k->fd < 0)
        return;
    bool long_target = r->uri_long || r->uri_len > GM_HTTP_URI_MAX;
    const char *body = long_target ? body414 : body400;
    char msg[512];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %s\r\nServer: gpumon/" GM_VERSION "\r\nContent-Type: "
                     "application/json\r\nCache-Control: no-store\r\nContent-Length: "
                     "%zu\r\nConnection: close\r\n\r\n%s",
                     long_target ? "414 URI Too Long" : "400 Bad Request", strlen(body), body);
    if (n > 0 && (size_t)n < sizeof msg && send(k->fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL))
        shutdown(k->fd, SHUT_WR);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    gm_server *srv = cls;
    gm_http_req *r = *req_cls;
    *req_cls = NULL;
    gm_conn *conn = conn_of(c);
    if (conn && !conn->upgraded) {
        /* The next request's head is due within the head timeout (idle keep-alive included). */
        conn->deadline_ms = gm_clock_mono_ms() + GM_HTTP_HEAD_TIMEOUT_S * 1000;
    }
    if (!r)
        return;
    if (conn && conn->req == r)
        conn->req = NULL;
    /* A 414 for a target that filled the connection's memory leaves no room for its headers. */
    if (conn && toe == MHD_REQUEST_TERMINATED_WITH_ERROR && r->uri_long && r->stage == ST_ANSWERED)
        last_word(conn, r);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && r->stage != ST_ANSWERED)
        srv->http_refused++;
    req_free(srv, r);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    gm_server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        gm_conn *k = calloc(1, sizeof *k);
        if (!k) {
            *socket_context = NULL;
            return; /* its requests are refused by on_request (no connection state) */
        }
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        k->fd = ci ? ci->connect_fd : -1;
        k->mc = c;
        k->deadline_ms = gm_clock_mono_ms() + GM_HTTP_HEAD_TIMEOUT_S * 1000;
        gm_list_push_front(&srv->conns, &k->link);
        *socket_context = k;
        return;
    }
    gm_conn *k = *socket_context;
    if (!k)
        return;
    /* libmicrohttpd 0.9.75 may close a connection without reporting its request completed:
     * after a request line whose query parameters fill the connection's memory (a 431 it never
     * sends), the connection is closed and on_completed never called. The request on_uri made
     * is freed here then, else each such request leaks 8 KiB. */
    if (k->req) {
        srv->http_refused++;
        if (k->req->stage != ST_ANSWERED)
            last_word(k, k->req);
        req_free(srv, k->req);
    }
    gm_list_remove(&k->link);
    free(k);
    *socket_context = NULL;
}

/* The path and query are decoded by request.c from the raw target; libmicrohttpd's own
 * decoding (which turns %00 into an end of string) is switched off. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

/* libmicrohttpd's messages: what a client causes (malformed requests, resets) at debug, so a
 * client cannot flood the log; before listening they explain a failure to start. */
__attribute__((format(printf, 2, 0))) static void on_log(void *cls, const char *fmt, va_list ap)
{
    gm_server *srv = cls;
    gm_log_level level = srv->listening ? GM_LOG_DEBUG : GM_LOG_ERROR;
    if (!gm_log_enabled(level))
        return;
    char text[512], q[600];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        text[--n] = '\0';
    gm_log(level, "http", "detail=%s", gm_log_quote(text, q, sizeof q));
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

/* How many connections libmicrohttpd may hold: --max-connections, less when the process may not
 * open that many descriptors (the soft limit is raised first, as redis does for maxclients; a
 * reserve stays for the database, /proc and leases). */
static unsigned conn_limit(unsigned wanted)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)wanted + GM_FD_RESERVE;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return wanted;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
        struct rlimit raised = {want, rl.rlim_max};
        if (want > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0)
            rl.rlim_cur = want;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return wanted;
    return rl.rlim_cur > 2 * GM_FD_RESERVE ? (unsigned)rl.rlim_cur - GM_FD_RESERVE
                                           : (unsigned)rl.rlim_cur / 2;
}

/* Why libmicrohttpd could not listen: a bind of the same address says whether it is taken.
 * The listening socket is never shared (no SO_REUSEPORT): a second daemon on a taken address
 * must fail, not split the requests with the first. */
static bool address_in_use(const struct sockaddr_storage *ss)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* as libmicrohttpd does */
    socklen_t len =
        ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    bool in_use = bind(fd, (const struct sockaddr *)ss, len) != 0 && errno == EADDRINUSE;
    close(fd);
    return in_use;
}

int gm_http_start(gm_server *srv, gm_error *err)
{
    const gm_listen_addr *la = &srv->cfg->listen;
    struct sockaddr_storage ss = {0};
    unsigned flags = MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
                     MHD_USE_ERROR_LOG;
    if (!la->host[0]) {
        /* All interfaces: IPv6 with IPv4 mapped in, where the host has IPv6. */
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_any;
        a6->sin6_port = htons((uint16_t)la->port);
        flags |= MHD_USE_DUAL_STACK;
    } else if (la->ipv6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)la->port);
        if (inet_pton(AF_INET6, la->host, &a6->sin6_addr) != 1)
            return gm_error_set(err, GM_EINVAL, "bad listen address %s", la->host);
        flags |= MHD_USE_IPv6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)la->port);
        if (inet_pton(AF_INET, la->host, &a4->sin_addr) != 1)
            return gm_error_set(err, GM_EINVAL, "bad listen address %s", la->host);
    }
    srv->resp_cache = calloc(1, sizeof *srv->resp_cache); /* none: every answer built anew */
    srv->conn_limit = conn_limit(srv->cfg->max_connections);
    for (int attempt = 0; attempt < 2 && !srv->mhd; attempt++) {
        srv->mhd = MHD_start_daemon(
            flags, (uint16_t)la->port, NULL, NULL, on_request, srv,
            /* The logger must come first to catch messages about the options after it. */
            MHD_OPTION_EXTERNAL_LOGGER, on_log, srv, MHD_OPTION_SOCK_ADDR,
            (const struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, srv->conn_limit,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->cfg->max_connections_per_ip,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GM_HTTP_CONN_MEMORY,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)GM_HTTP_IDLE_TIMEOUT_S,
            MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
            MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
            srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_UNESCAPE_CALLBACK,
            no_unescape, srv, MHD_OPTION_END);
        if (!srv->mhd && !la->host[0] && attempt == 0) {
            /* No IPv6 on this host: all IPv4 interfaces instead. */
            struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
            memset(&ss, 0, sizeof ss);
            a4->sin_family = AF_INET;
            a4->sin_port = htons((uint16_t)la->port);
            a4->sin_addr.s_addr = htonl(INADDR_ANY);
            flags &= ~(unsigned)MHD_USE_DUAL_STACK;
            continue;
        }
        break;
    }
    char addr[96];
    gm_listen_addr_format(la, addr, sizeof addr);
    if (!srv->mhd) {
        free(srv->resp_cache);
        srv->resp_cache = NULL;
        if (address_in_use(&ss))
            return gm_error_set(err, GM_EIO,
                                "cannot listen on %s: address already in use (another gpumon "
                                "serve or another program listens there); pick another port with "
                                "--listen HOST:PORT (or GPU_MONITOR_LISTEN), e.g. --listen "
                                "127.0.0.1:0 for any free one",
                                addr);
        return gm_error_set(err, GM_EIO, "cannot listen on %s (address not available)", addr);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : 0;
    di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_LISTEN_FD);
    srv->listen_fd = di ? di->listen_fd : -1;
    di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    srv->mhd_tag.kind = GM_POLL_MHD;
    if (!di || srv->port == 0 || gm_server_watch(srv, di->epoll_fd, &srv->mhd_tag, EPOLLIN) < 0) {
        MHD_stop_daemon(srv->mhd);
        srv->mhd = NULL;
        return gm_error_set(err, GM_EIO, "cannot listen on %s", addr);
    }
    return GM_OK;
}

/* libmicrohttpd accepts at most 10 connections per pass. A peer that reconnects as fast as its
 * connections over the per-address limit are closed keeps hundreds of them in the listen queue,
 * and a new client waited behind them for dozens of passes. The loop takes up to
 * GM_HTTP_TURN_ACCEPT a turn (a full queue in a few turns; more would let such a peer churn
 * faster, each closed connection costing the loop and it a reconnect); libmicrohttpd still
 * applies its limits (MHD_add_connection closes what they refuse). */
static void accept_waiting(gm_server *srv)
{
    if (srv->listen_fd < 0)
        return;
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    unsigned open = di ? di->num_connections : srv->conn_limit;
    for (unsigned i = 0; i < GM_HTTP_TURN_ACCEPT && open < srv->conn_limit; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd =
            accept4(srv->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == ECONNABORTED || errno == EINTR)
                continue;
            break; /* empty; or out of descriptors, which libmicrohttpd's accept reports */
        }
        if (MHD_add_connection(srv->mhd, fd, (const struct sockaddr *)&ss, len) == MHD_YES)
            open++;
    }
}

/* Resumes the oldest deferred requests: they run in this turn, within its budget. */
static void resume_deferred(gm_server *srv, unsigned max)
{
    for (unsigned i = 0; i < max && !gm_list_empty(&srv->deferred); i++) {
        gm_http_req *r = gm_list_entry(gm_list_first(&srv->deferred), gm_http_req, link);
        gm_list_remove(&r->link);
        MHD_resume_connection(r->conn->mc);
    }
}

void gm_http_run(gm_server *srv)
{
    srv->turn_work_us = 0;
    resume_deferred(srv, GM_HTTP_TURN_RESUME);
    accept_waiting(srv);
    MHD_run(srv->mhd);
}

int gm_http_timeout_ms(gm_server *srv)
{
    MHD_UNSIGNED_LONG_LONG t;
    if (!gm_list_empty(&srv->deferred))
        return 0; /* requests wait for the next turn: no sleeping */
    if (MHD_get_timeout(srv->mhd, &t) != MHD_YES)
        return -1;
    return t > 1000 ? 1000 : (int)t;
}

void gm_http_poll_pending(gm_server *srv)
{
    int64_t now = gm_clock_mono_ms();
    gm_list_each(l, next, &srv->pending) {
        gm_http_req *r = gm_list_entry(l, gm_http_req, link);
        bool overdue = now - r->parked_ms > GM_HTTP_JOB_TIMEOUT_S * 1000;
        if (!overdue && !gm_worker_job_done(r->job))
            continue;
        r->timed_out = overdue && !gm_worker_job_done(r->job);
        gm_list_remove(&r->link);
        r->resumed = true;
        MHD_resume_connection(r->conn->mc);
    }
}

void gm_http_sweep(gm_server *srv, int64_t now_ms)
{
    gm_list_each(l, next, &srv->conns) {
        gm_conn *k = gm_list_entry(l, gm_conn, link);
        if (!k->deadline_ms || now_ms < k->deadline_ms || k->fd < 0)
            continue;
        bool body = k->req && k->req->stage == ST_BODY;
        /* Out of time while the client still owed bytes (slowloris, a body that never comes,
         * an idle keep-alive): shut the socket, and libmicrohttpd closes it on its next pass. */
        gm_log(GM_LOG_DEBUG, "http connection closed", "reason=%s",
               body ? "body_timeout" : "head_timeout");
        if (body)
            srv->http_refused++;
        shutdown(k->fd, SHUT_RDWR);
        k->deadline_ms = 0;
    }
    gm_http_poll_pending(srv);
}

void gm_http_stop(gm_server *srv)
{
    if (!srv->mhd)
        return;
    /* Parked requests must be resumed before libmicrohttpd can stop; they get a 503. */
    gm_list_each(l, next, &srv->pending)
        gm_list_entry(l, gm_http_req, link)->parked_ms = 0;
    gm_http_poll_pending(srv);
    resume_deferred(srv, UINT_MAX);
    srv->turn_work_us = INT64_MIN; /* none deferred again: they run in the last pass */
    MHD_run(srv->mhd);
    if (srv->resp_cache) {
        cache_flush(srv->resp_cache);
        free(srv->resp_cache);
        srv->resp_cache = NULL;
    }
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
}
