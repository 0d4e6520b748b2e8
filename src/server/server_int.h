/* server_int.h - state shared by the daemon's parts: the event loop and lifecycle (server.c),
 * the HTTP transport on libmicrohttpd (http.c), the routes (routes.c) and the WebSocket streams
 * (ws.c). Everything marked "loop" is touched only by the loop thread. */
#ifndef GM_SERVER_INT_H
#define GM_SERVER_INT_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/list.h"
#include "server/config.h"
#include "server/fleet_cache.h"
#include "server/jobs.h"
#include "server/log.h"
#include "server/query.h"
#include "server/request.h"
#include "server/sampler.h"
#include "server/worker.h"

/* Limits; docs/API.md lists each one. */
#define GM_FD_RESERVE          64          /* kept for the database, /proc, leases, logs */
#define GM_HTTP_CONN_MEMORY    8192        /* per connection: request line + headers + buffers */
#define GM_HTTP_HEAD_TIMEOUT_S 10          /* a request head must be complete within this */
#define GM_HTTP_BODY_TIMEOUT_S 10          /* and its body within this after the head */
#define GM_HTTP_IDLE_TIMEOUT_S 30          /* a response that makes no progress for this long */
#define GM_HTTP_JOB_TIMEOUT_S  60          /* the session worker's answer to a parked request */
#define GM_HTTP_INFLIGHT_LIMIT (64u << 20) /* response bytes held for unfinished responses */
#define GM_HTTP_TURN_BUDGET_US 5000        /* route time per turn of the loop; then deferred */
#define GM_HTTP_TURN_RESUME    64          /* deferred requests resumed per turn */
#define GM_HTTP_TURN_ACCEPT    128         /* connections taken from the listen queue per turn */
#define GM_HTTP_BUILT_SLOTS    16          /* per-sample answers kept (distinct targets) */
#define GM_HTTP_BUILT_BYTES    (16u << 20) /* and their bytes, at most */
#define GM_HTTP_BODY_BUDGET    (8u << 20)  /* request body bytes announced and not yet answered */
#define GM_WS_MAX_CLIENTS      2048        /* more upgrades are answered 503 */
#define GM_WS_STUCK_S          10          /* a client that takes no frame bytes for this long */
#define GM_WS_DRAIN_S          2           /* a closed client may send its last bytes this long */
#define GM_WS_PING_S           30          /* an idle client is pinged after this long */
#define GM_WS_DEAD_S           60          /* and dropped when it has sent nothing for this long */
#define GM_WS_MAX_MESSAGE      4096        /* bytes of a message a client may send (ignored) */

/* What an epoll event points at: the first member of each watched object. */
typedef enum gm_poll_kind {
    GM_POLL_MHD = 1,
    GM_POLL_WAKE,
    GM_POLL_WS,
    GM_POLL_SIGNAL
} gm_poll_kind;
typedef struct gm_poll {
    gm_poll_kind kind;
} gm_poll;

/* The two streams as libmicrohttpd's upgrade callback sees them. */
typedef struct gm_ws_stream {
    struct gm_server *srv;
    int kind;
} gm_ws_stream;

typedef struct gm_resp_cache gm_resp_cache; /* answers built once per sample (http.c) */
typedef struct gm_conn gm_conn;             /* one TCP connection libmicrohttpd serves (http.c) */
typedef struct gm_http_req gm_http_req;     /* one request on it (http.c) */
typedef struct gm_ws_client gm_ws_client;
typedef struct gm_ws_job_frame gm_ws_job_frame; /* /ws/benchmarks' frame (ws.c) */
struct MHD_Daemon;
struct MHD_Connection;

typedef struct gm_server {
    const gm_serve_config *cfg;
    gm_collector *collector;
    gm_sampler *sampler;
    gm_worker *worker;      /* the session worker (POST/GET/DELETE /api/sessions) */
    gm_fleet_cache *fleet;  /* GET /api/fleet's thread; NULL without --prometheus */
    gm_jobs *jobs;          /* POST /api/benchmarks: the benchmark jobs' queue and thread */
    struct MHD_Daemon *mhd; /* HTTP, driven by the loop (no thread of its own) */
    int epfd;               /* the loop's epoll set */
    int wakefd;             /* eventfd: the sampler, session worker and fleet thread wake the
                             * loop through it; the only cross-thread call into the loop */
    int sigfd;              /* signalfd: SIGINT and SIGTERM, read by the loop */
    gm_poll mhd_tag, wake_tag, sig_tag;
    atomic_bool quit;
    atomic_bool sample_wake; /* a client is connected: only then does a sample wake the loop */
    int64_t started_mono_ms;
    char provider[32];
    char diagnosis[1024];
    unsigned port;            /* bound port */
    unsigned conn_limit;      /* connections libmicrohttpd accepts (--max-connections) */
    int listen_fd;            /* libmicrohttpd's listening socket, emptied by the loop */
    char db_path[PATH_MAX];   /* the session store in use, "" when none (--db none) */
    char lease_dir[PATH_MAX]; /* where gpumon leases live, "" when unknown */
    char web_root[PATH_MAX];  /* canonical --web-root, "" to serve the embedded files */
    bool listening;           /* startup done: libmicrohttpd's messages are client-caused now */

    /* loop */
    gm_published *current; /* the loop's reference to the newest bundle */
    size_t inflight_bytes; /* response bodies held by unfinished HTTP responses */
    size_t body_bytes;     /* request bodies announced by Content-Length and not yet freed */
    gm_list conns;         /* open HTTP connections (gm_conn), for the per-phase deadlines */
    gm_resp_cache *resp_cache;
    gm_list pending;       /* requests (gm_http_req) parked until the session worker answers */
    gm_list deferred;      /* requests waiting for a turn with route time left, oldest first */
    int64_t turn_work_us;  /* route time spent in this turn */
    gm_list ws_clients;    /* connected WebSocket clients (gm_ws_client) */
    unsigned ws_count;     /* entries in ws_clients */
    unsigned ws_dead;      /* of them marked dead, freed by gm_ws_reap */
    unsigned ws_every;     /* the rate cap: clients get every ws_every-th sample */
    gm_published *ws_due;  /* the newest bundle due to WebSocket clients, frames framed */
    uint64_t http_refused; /* requests refused before routing (malformed, deadlines) */
    gm_log_limit ws_refused_log; /* "websocket refused" lines: one per GM_LOG_LIMIT_S */
    gm_ws_job_frame *ws_jobs;    /* the newest benchmark jobs' frame (/ws/benchmarks) */
    gm_ws_stream ws_streams[3];
} gm_server;

/* ---- routes (routes.c): what each endpoint answers, with no knowledge of sockets ---------- */

/* What a handler sees. */
typedef struct gm_req {
    gm_server *srv;
    unsigned method; /* GM_HTTP_* */
    const char *path;
    const char *rest; /* path after a prefix route's prefix */
    const gm_query *q;
    gm_published *pub; /* newest bundle (loop-owned reference), NULL before the first sample */
    const char *body;  /* the request body (routes with max_body), NULL when none */
    size_t body_len;
    bool gzip_ok;              /* the client accepts a gzip'd answer */
    const char *if_none_match; /* the If-None-Match header, NULL when absent */
} gm_req;

/* What a handler answers. The body is either borrowed (static, or a blob of `pin`) or owned
 * (malloc'd, freed once sent). */
typedef struct gm_resp {
    int status;
    const char *ctype;
    const unsigned char *body;
    size_t len;
    char *owned;
    gm_published *pin; /* the bundle body points into, referenced while it is being sent */
    char allow[80];    /* Allow header for 405 and OPTIONS */
    bool www_auth;
    bool gzip;
    bool preflight;  /* OPTIONS: add the CORS preflight answers when CORS is on */
    bool close;      /* close the connection after this answer */
    bool ws_version; /* Sec-WebSocket-Version: 13 (a 426 to another WebSocket version) */
    int retry_after;
    const char *cache;    /* NULL: no-store */
    const char *etag;     /* ETag header, NULL: none */
    bool vary_ae;         /* Vary: Accept-Encoding (the path has a gzip'd form) */
    char location[96];    /* Location header, "" none */
    char attachment[64];  /* Content-Disposition: attachment; filename="...", "" none */
    gm_worker_job *defer; /* answered later by the session worker (status etc. unset) */
} gm_resp;

typedef void (*gm_handler)(const gm_req *rq, gm_resp *rs);

/* One endpoint. A request body is read (up to max_body, as application/json) only for routes
 * with a max_body; elsewhere any body is answered 413 and the connection closed. */
typedef struct gm_route {
    const char *path;
    bool prefix; /* path matches every request path that starts with it */
    unsigned methods;
    bool needs_token;
    size_t max_body;
    gm_handler fn;
    bool websocket;  /* a WebSocket stream: upgrades go to ws.c */
    bool per_sample; /* its answer depends on the newest sample and the request target alone:
                      * built once per sample for each target (http.c) */
} gm_route;

/* The route of path, NULL when none. */
const gm_route *gm_route_find(const char *path);
/* Runs r's handler for rq into rs (and fills Allow for a 405). */
void gm_route_run(const gm_route *r, const gm_req *rq, gm_resp *rs);
/* A static file of the dashboard (embedded or --web-root) into rs: false when there is none. */
bool gm_route_static(gm_server *srv, const char *path, const gm_req *rq, gm_resp *rs);

/* Answers {"error": "..."}: status and a message (client bytes in it are made valid UTF-8). */
void gm_resp_error(gm_resp *rs, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Takes a malloc'd body. */
void gm_resp_owned(gm_resp *rs, int status, const char *ctype, char *text, size_t len);
/* Frees an owned body that was not sent. */
void gm_resp_release(gm_resp *rs);

/* ---- the loop (server.c) ------------------------------------------------------------------ */

/* Loop: replaces srv->current with the sampler's newest bundle; true when it changed. */
bool gm_server_refresh(gm_server *srv);

/* True when authorization (the Authorization header, NULL when absent) carries the token, or
 * with query_token the "token" query parameter does (browsers' WebSocket cannot set headers).
 * Always true when no token is configured. Compares in constant time. */
bool gm_server_authorized(const gm_server *srv, const char *authorization, const char *query_token);

/* True when sa is a loopback address: 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104 (IPv4 mapped
 * into an IPv6 socket). False for anything else, including NULL or a short length. */
bool gm_server_peer_is_loopback(const struct sockaddr *sa, socklen_t len);

/* Whether a state-changing request (POST, DELETE) may go on, once the token check has passed:
 * 0 yes; 403 when no token is configured and the peer is not loopback (then anybody who can
 * reach the port could start or delete sessions). peer NULL (unknown) counts as remote. */
int gm_server_write_access(bool token_set, const struct sockaddr *peer, socklen_t len);

/* Whether a browser may make a state-changing request without a token: origin is the request's
 * Origin header (NULL or "" when it has none: not a browser's cross-site request, e.g. curl),
 * host its Host header, cors_origin the configured --cors-origin ("" when off). True without
 * an Origin, for the daemon's own pages (origin "http://" or "https://" + host, the latter
 * behind a proxy that terminates TLS) and for the configured
 * origin unless that is "*"; false otherwise, so another web site open in a browser on this
 * host cannot start, stop or delete sessions through it (a form or no-cors fetch needs no
 * preflight). */
bool gm_server_origin_allowed(const char *origin, const char *host, const char *cors_origin);

/* Any thread: wakes the loop (eventfd). */
void gm_server_wake(gm_server *srv);

/* Loop: (un)watches fd for the object tagged by tag; events EPOLLIN/EPOLLOUT. 0 or -1. */
int gm_server_watch(gm_server *srv, int fd, gm_poll *tag, unsigned events);
int gm_server_rewatch(gm_server *srv, int fd, gm_poll *tag, unsigned events);
void gm_server_unwatch(gm_server *srv, int fd);

/* ---- HTTP on libmicrohttpd (http.c) ------------------------------------------------------- */

/* Starts libmicrohttpd on cfg->listen (no thread of its own: the loop drives it) and watches
 * its epoll descriptor. GM_EIO with a message when it cannot listen. */
int gm_http_start(gm_server *srv, gm_error *err);
/* Loop: lets libmicrohttpd process whatever is ready. */
void gm_http_run(gm_server *srv);
/* Loop: how long the loop may sleep before libmicrohttpd needs to run (ms, -1 forever). */
int gm_http_timeout_ms(gm_server *srv);
/* Loop: closes connections past their phase deadline and answers parked requests whose job
 * is done or overdue. */
void gm_http_sweep(gm_server *srv, int64_t now_ms);
/* Loop: resumes the parked requests whose session job is done. */
void gm_http_poll_pending(gm_server *srv);
/* Stops listening and closes every connection (the WebSocket clients must be gone). */
void gm_http_stop(gm_server *srv);

/* ---- WebSocket (ws.c) --------------------------------------------------------------------- */

/* Loop: a GET with an Upgrade header on WebSocket route r: queues the 101 that hands the socket
 * to ws.c (true), or fills rs with the refusal (false): 400 for a malformed handshake, 426
 * for another WebSocket version, 401 without the token (header or ?token=), 503 at the client
 * cap. */
bool gm_ws_handshake(gm_server *srv, struct MHD_Connection *c, const gm_route *r, const gm_query *q,
                     gm_resp *rs);
/* Loop: the newest bundle changed: frame it once and start sending it to idle clients. */
void gm_ws_broadcast(gm_server *srv);
/* Loop: a client's socket is ready. */
void gm_ws_event(gm_server *srv, gm_poll *tag, unsigned events);
/* Loop: pings idle clients, drops stuck and dead ones. */
void gm_ws_sweep(gm_server *srv, int64_t now_ms);
/* Loop: frees the clients marked dead during the callbacks of this turn (ws.c never frees a
 * client while a function is working on it). */
void gm_ws_reap(gm_server *srv);
/* Loop: says goodbye (1001) to every client and closes them. */
void gm_ws_close_all(gm_server *srv);

#endif
