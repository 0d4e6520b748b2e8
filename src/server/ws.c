/* ws.c - the WebSocket stream: /ws/gpu sends full samples, /ws/metrics the compact frame. Each
 * client gets the newest pre-rendered frame when it can take one, at most ws_max_rate_hz times a
 * second; frames a slow client missed are skipped, never queued, and a client that takes none
 * for GM_WS_STUCK_S seconds is dropped, so memory does not grow with slow readers. */
#include "server/server_int.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "server/log.h"

enum { WS_NONE = 0, WS_GPU = 1, WS_METRICS = 2 };

/* Per-connection state; lws allocates and zeroes it. */
struct gm_ws_client {
    struct lws *wsi;
    gm_ws_client *prev, *next;
    int kind;
    bool linked;
    bool sent_any;
    uint64_t sent_seq;
    int64_t tat_us;   /* earliest time the next frame conforms to the rate cap (GCRA) */
    bool timer_set;   /* a rate-limit timer will ask for writable */
    bool stuck_armed; /* the "no frame taken" timeout is running */
};

size_t gm_ws_pss_size(void)
{
    return sizeof(gm_ws_client);
}

static int path_kind(const char *path)
{
    if (strcmp(path, "/ws/gpu") == 0)
        return WS_GPU;
    if (strcmp(path, "/ws/metrics") == 0)
        return WS_METRICS;
    return WS_NONE;
}

static void unlink_client(gm_server *srv, gm_ws_client *c)
{
    if (!c->linked)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->ws_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->linked = false;
    srv->ws_count--;
}

static const gm_blob *frame_of(const gm_published *p, int kind)
{
    return kind == WS_GPU ? &p->full : &p->ws_metrics;
}

/* Asks for a writable callback for every client behind the newest bundle. */
static void broadcast(gm_server *srv)
{
    if (!srv->current)
        return;
    for (gm_ws_client *c = srv->ws_head; c; c = c->next) {
        if (c->sent_any && c->sent_seq == srv->current->seq)
            continue;
        if (!c->stuck_armed) {
            lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, GM_WS_STUCK_S);
            c->stuck_armed = true;
        }
        lws_callback_on_writable(c->wsi);
    }
}

static int on_writeable(gm_server *srv, gm_ws_client *c)
{
    /* Writable again: whatever was stuck has drained. */
    if (c->stuck_armed) {
        lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
        c->stuck_armed = false;
    }
    gm_published *p = srv->current;
    if (!p || (c->sent_any && c->sent_seq == p->seq))
        return 0;
    /* The cap as a generic cell rate algorithm: a frame may go a quarter gap early, so samples
     * that arrive with a little jitter at the capped rate go out as they come instead of each
     * waiting on a timer of its own (1000 clients at 5 Hz cost 24-29 % of a core that way). */
    int64_t now = lws_now_usecs();
    int64_t early = c->tat_us - srv->ws_min_gap_us / 4 - now;
    if (c->sent_any && early > 0) {
        if (!c->timer_set) {
            lws_set_timer_usecs(c->wsi, early);
            c->timer_set = true;
        }
        return 0;
    }
    const gm_blob *b = frame_of(p, c->kind);
    if (!b->data)
        return 0;
    /* The frame header goes into the blob's headroom; the payload is shared by every client and
     * lws copies only what the socket did not take. A short write means the peer is gone. */
    if (lws_write(c->wsi, b->data, b->len, LWS_WRITE_TEXT) < (int)b->len)
        return -1;
    c->sent_any = true;
    c->sent_seq = p->seq;
    c->tat_us = (c->tat_us > now ? c->tat_us : now) + srv->ws_min_gap_us;
    return 0;
}

int gm_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                   size_t len)
{
    gm_server *srv = lws_context_user(lws_get_context(wsi));
    gm_ws_client *c = user;
    char path[128];

    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        if (lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) < 0)
            path[0] = '\0';
        int kind = path_kind(path);
        char q[160];
        if (!kind) {
            gm_log(GM_LOG_DEBUG, "websocket refused", "path=%s status=404",
                   gm_log_quote(path, q, sizeof q));
            gm_server_refuse(wsi, 404, "no WebSocket endpoint here (use /ws/gpu or /ws/metrics)",
                             NULL);
            return 1;
        }
        if (!gm_server_authorized(srv, wsi, true)) {
            gm_log(GM_LOG_DEBUG, "websocket refused", "path=%s status=401",
                   gm_log_quote(path, q, sizeof q));
            gm_server_refuse(
                wsi, 401,
                "missing or wrong token (Authorization: Bearer <token> or ?token=<token>)",
                "www-authenticate: Bearer realm=\"gpumon\"\r\n");
            return 1;
        }
        if (srv->ws_count >= GM_WS_MAX_CLIENTS) {
            gm_log(GM_LOG_WARN, "websocket refused: too many clients", "clients=%u", srv->ws_count);
            gm_server_refuse(wsi, 503, "too many WebSocket clients", "retry-after: 5\r\n");
            return 1;
        }
        if (c)
            c->kind = kind;
        return 0;
    }
    case LWS_CALLBACK_ESTABLISHED: {
        if (!c)
            return -1;
        if (!c->kind) {
            if (lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) < 0)
                return -1;
            c->kind = path_kind(path);
            if (!c->kind)
                return -1;
        }
        c->wsi = wsi;
        c->next = srv->ws_head;
        if (srv->ws_head)
            srv->ws_head->prev = c;
        srv->ws_head = c;
        c->linked = true;
        srv->ws_count++;
        /* A small send buffer: without it loopback sockets soak up megabytes per client before
         * frames start being skipped. */
        int fd = lws_get_socket_fd(wsi), sndbuf = 65536;
        if (fd >= 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        gm_log(GM_LOG_DEBUG, "websocket connected", "stream=%s clients=%u",
               c->kind == WS_GPU ? "gpu" : "metrics", srv->ws_count);
        lws_callback_on_writable(wsi);
        return 0;
    }
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return gm_server_confirm_upgrade(wsi, in);
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return c ? on_writeable(srv, c) : 0;
    case LWS_CALLBACK_TIMER:
        if (c) {
            c->timer_set = false;
            lws_callback_on_writable(wsi);
        }
        return 0;
    case LWS_CALLBACK_RECEIVE:
        return 0; /* the streams are one-way; what clients send is ignored */
    case LWS_CALLBACK_CLOSED:
        if (c) {
            unlink_client(srv, c);
            gm_log(GM_LOG_DEBUG, "websocket closed", "clients=%u", srv->ws_count);
        }
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* The sampler published (or a signal asked to quit): take the newest bundle once, here,
         * for every client and every HTTP request that follows. */
        if (srv && gm_server_refresh(srv))
            broadcast(srv);
        return 0;
    default:
        break;
    }
    return 0;
}
