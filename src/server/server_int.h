/* server_int.h - state shared by the daemon's libwebsockets callbacks (http.c, ws.c) and its
 * lifecycle (server.c). Everything marked "loop" is touched only by the lws service thread. */
#ifndef GM_SERVER_INT_H
#define GM_SERVER_INT_H

#include <libwebsockets.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <limits.h>
#include <sys/socket.h>

#include "server/config.h"
#include "server/sampler.h"
#include "server/sessions.h"

#define GM_WS_MAX_CLIENTS      2048        /* more upgrades are answered 503 */
#define GM_WS_STUCK_S          10          /* a client that takes no frame for this long goes */
#define GM_HTTP_INFLIGHT_LIMIT (64u << 20) /* bytes of response bodies held for slow readers */
#define GM_HTTP_URI_MAX        4096        /* longer request targets get 414 */
#define GM_HTTP_HEADER_SPACE   8192        /* lws header space; beyond it lws drops the request */
#define GM_FD_LIMIT            4096        /* connections, all kinds together */

typedef struct gm_ws_client gm_ws_client;
struct http_pss;

typedef struct gm_server {
    const gm_serve_config *cfg;
    gm_collector *collector;
    gm_sampler *sampler;
    struct lws_context *ctx;
    struct lws_protocols protocols[3]; /* live as long as ctx */
    atomic_bool quit;
    int64_t started_mono_ms;
    char provider[16];
    char diagnosis[1024];
    unsigned port;            /* bound port */
    gm_sessions *sessions;    /* the session worker (POST/GET/DELETE /api/sessions) */
    char db_path[PATH_MAX];   /* the session store in use, "" when none (--db none) */
    char lease_dir[PATH_MAX]; /* where gpumon leases live, "" when unknown */
    char web_root[PATH_MAX];  /* canonical --web-root, "" to serve the embedded files */

    /* loop */
    gm_published *current; /* the loop's reference to the newest bundle */
    size_t inflight_bytes; /* response bodies held by unfinished HTTP responses */
    gm_ws_client *ws_head; /* connected WebSocket clients */
    unsigned ws_count;
    int64_t ws_min_gap_us;    /* 1 / ws_max_rate_hz */
    struct http_pss *pending; /* HTTP requests waiting for the session worker's answer */
} gm_server;

/* protocols[0]: every plain HTTP request. */
int gm_http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                     size_t len);
/* The vhost's default protocol: WebSocket /ws/gpu and /ws/metrics. */
int gm_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                   size_t len);
/* Bytes of per-session data each protocol needs. */
size_t gm_http_pss_size(void);
size_t gm_ws_pss_size(void);

/* Answers a request that lws has not routed yet (a refused upgrade) with status and
 * {"error": msg}, and "connection: close"; extra_header is NULL or "name: value\r\n". The caller
 * then makes lws close the connection. */
void gm_server_refuse(struct lws *wsi, int status, const char *msg, const char *extra_header);

/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE (lws delivers it to whichever protocol the wsi is bound
 * to): 0 lets a WebSocket upgrade proceed; anything else (h2c) is refused, -1. */
int gm_server_confirm_upgrade(struct lws *wsi, const char *to);

/* Loop: replaces srv->current with the sampler's newest bundle; true when it changed. */
bool gm_server_refresh(gm_server *srv);

/* True when the request carries the token: "Authorization: Bearer <token>", or with
 * allow_query the "token" query parameter (for browsers' WebSocket, which cannot set headers).
 * Always true when no token is configured. Compares in constant time. */
bool gm_server_authorized(gm_server *srv, struct lws *wsi, bool allow_query);

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
 * an Origin, for the daemon's own pages (origin "http://" + host) and for the configured
 * origin unless that is "*"; false otherwise, so another web site open in a browser on this
 * host cannot start, stop or delete sessions through it (a form or no-cors fetch needs no
 * preflight). */
bool gm_server_origin_allowed(const char *origin, const char *host, const char *cors_origin);

/* Loop: on a wake-up, asks for a writable callback for every request whose session job is
 * done (http.c). */
void gm_http_poll_pending(gm_server *srv);

#endif
