/* ws.c - the WebSocket streams: /ws/gpu sends full samples, /ws/metrics the compact frame.
 *
 * The handshake is an HTTP answer (libmicrohttpd's upgrade hands over the socket); from then on
 * the loop owns the socket. Frames out: a server's frames are not masked, so each sample's frame
 * is the pre-rendered bytes with a header written in front once, and every client gets the same
 * bytes with one send(). A client busy with an older frame gets the newest due one when it has
 * finished, never a queue, so memory does not grow with slow readers; one that takes no bytes
 * for GM_WS_STUCK_S is dropped. Frames in (RFC 6455, parsed by wslay): they must be masked,
 * control frames short and whole, text valid UTF-8, messages at most GM_WS_MAX_MESSAGE bytes;
 * otherwise the client gets a close frame with the matching code. What clients send is
 * otherwise ignored: the streams are one-way. */
#include "server/server_int.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <wslay/wslay.h>

#include "base/utf8.h"
#include "server/log.h"

enum { WS_GPU = 1, WS_METRICS = 2, WS_BENCH = 3 };

/* RFC 6455 close codes used here. */
enum {
    CLOSE_NORMAL = 1000,
    CLOSE_GOING_AWAY = 1001,
    CLOSE_PROTOCOL = 1002,
    CLOSE_BAD_DATA = 1007,
    CLOSE_TOO_BIG = 1009,
};

#define CTL_MAX 125
#define OUT_CTL (2 * (2 + CTL_MAX)) /* room for a pong and a close */

struct gm_ws_client {
    gm_poll tag; /* first: what the epoll event points at */
    gm_server *srv;
    gm_list link; /* on srv->ws_clients */
    int fd;
    const char *dead; /* why it is to be freed (gm_ws_reap, after the loop's callbacks); NULL */
    struct MHD_UpgradeResponseHandle *urh;
    int kind;
    wslay_frame_context_ptr rx;

    /* in */
    char *extra; /* bytes libmicrohttpd read past the handshake, read first */
    size_t extra_len, extra_off;
    bool eof, io_error;
    bool in_frame;        /* between a frame's header and its last payload byte */
    uint64_t frame_left;  /* payload bytes of the current frame still to come */
    uint8_t frame_opcode; /* of the current frame */
    bool frame_fin;
    uint8_t msg_opcode; /* 1 text, 2 binary: a (fragmented) message in progress; 0 none */
    uint64_t msg_len;
    gm_utf8_stream utf8;
    uint8_t ctl[CTL_MAX]; /* a control frame's payload */
    size_t ctl_len;
    uint8_t hdr[14];   /* the frame header being read, as seen by track_headers */
    size_t hdr_have;   /* its bytes so far */
    uint64_t hdr_skip; /* payload bytes before the next header */
    bool hdr_too_big;  /* a data frame's header announced more than a message may hold */

    /* out */
    gm_published *pin;     /* the bundle of the data frame being sent */
    gm_ws_job_frame *jpin; /* or the benchmark jobs' frame being sent (/ws/benchmarks) */
    const uint8_t *out;
    size_t out_len, out_off;
    uint8_t ctlq[OUT_CTL]; /* control frames waiting (sent between data frames) */
    size_t ctlq_len, ctlq_off;
    bool closing;      /* a close frame is queued: close once it has gone */
    bool draining;     /* our close frame has gone: reading what is left until the peer closes */
    unsigned watching; /* the epoll events asked for */
    bool sent_any;
    uint64_t sent_seq;

    int64_t last_rx_ms, last_progress_ms, ping_ms;
};

static const char *kind_name(int kind)
{
    return kind == WS_GPU ? "gpu" : kind == WS_BENCH ? "benchmarks" : "metrics";
}

/* The benchmark jobs' frame (/ws/benchmarks): made by the loop from the queue's state at a
 * sample's broadcast, shared by every client of the stream; the header's room in front. */
struct gm_ws_job_frame {
    unsigned refs; /* loop only */
    uint64_t seq;
    size_t len;
    uint8_t bytes[]; /* 10 bytes of header room, then len bytes of JSON */
};

static void job_frame_unref(gm_ws_job_frame *f)
{
    if (f && --f->refs == 0)
        free(f);
}

/* Bytes of the header of a server frame (unmasked) with len payload bytes. */
static size_t header_len(size_t len)
{
    return len < 126 ? 2 : len < 65536 ? 4 : 10;
}

/* Writes a text frame's header into the headroom in front of b's bytes. */
static void frame_in_place(const gm_blob *b)
{
    if (!b->data)
        return;
    size_t n = b->len, h = header_len(n);
    uint8_t *p = b->data - h;
    p[0] = 0x80 | WSLAY_TEXT_FRAME;
    if (h == 2) {
        p[1] = (uint8_t)n;
    } else if (h == 4) {
        p[1] = 126;
        p[2] = (uint8_t)(n >> 8);
        p[3] = (uint8_t)n;
    } else {
        p[1] = 127;
        for (int i = 0; i < 8; i++)
            p[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
    }
}

/* The frame of a stream: its body rendered (on first use) with the header written in front.
 * Writing the header again for each client is harmless: the bytes are the same. */
static const gm_blob *frame_blob(gm_published *p, int kind)
{
    const gm_blob *b = gm_published_blob(p, kind == WS_GPU ? GM_BLOB_FULL : GM_BLOB_WS_METRICS);
    frame_in_place(b);
    return b;
}

/* ---- closing ------------------------------------------------------------------------------ */

/* A client is never freed where it is being worked on: it is marked dead, taken out of the
 * epoll set so no event reaches it again, and freed by gm_ws_reap once the loop's callbacks are
 * done with it (as redis frees a client asynchronously). Every function that is handed a client
 * may rely on it being valid until it returns. */
static void mark_dead(gm_server *srv, gm_ws_client *c, const char *why)
{
    if (c->dead)
        return;
    c->dead = why;
    srv->ws_dead++;
    gm_server_unwatch(srv, c->fd);
}

static void client_free(gm_server *srv, gm_ws_client *c)
{
    gm_list_remove(&c->link);
    srv->ws_count--;
    gm_published_unref(c->pin);
    job_frame_unref(c->jpin);
    if (c->rx)
        wslay_frame_context_free(c->rx);
    free(c->extra);
    /* Hands the socket back to libmicrohttpd, which closes it. */
    MHD_upgrade_action(c->urh, MHD_UPGRADE_ACTION_CLOSE);
    gm_log(GM_LOG_DEBUG, "websocket closed", "stream=%s reason=%s clients=%u", kind_name(c->kind),
           c->dead, srv->ws_count);
    free(c);
}

void gm_ws_reap(gm_server *srv)
{
    if (!srv->ws_dead)
        return;
    srv->ws_dead = 0;
    gm_list_each(l, next, &srv->ws_clients) {
        gm_ws_client *c = gm_list_entry(l, gm_ws_client, link);
        if (c->dead)
            client_free(srv, c);
    }
}

/* Queues a control frame; a close frame makes the client close once it has been sent, and
 * nothing is queued after it. */
static void queue_ctl(gm_ws_client *c, uint8_t opcode, const uint8_t *payload, size_t n)
{
    if (c->closing || n > CTL_MAX)
        return;
    if (opcode == WSLAY_PONG && c->ctlq_len > c->ctlq_off && c->ctlq_off == 0)
        c->ctlq_len = 0; /* an unsent pong is replaced: only the latest ping needs an answer */
    if (c->ctlq_len + 2 + n > sizeof c->ctlq) {
        if (opcode != WSLAY_CONNECTION_CLOSE)
            return;
        c->ctlq_len = c->ctlq_off; /* drop what has not started; the close must go */
        if (c->ctlq_len + 2 + n > sizeof c->ctlq)
            return;
    }
    uint8_t *p = c->ctlq + c->ctlq_len;
    p[0] = 0x80 | opcode;
    p[1] = (uint8_t)n;
    if (n)
        memcpy(p + 2, payload, n);
    c->ctlq_len += 2 + n;
    if (opcode == WSLAY_CONNECTION_CLOSE)
        c->closing = true;
}

static void queue_close(gm_ws_client *c, unsigned code, const char *reason)
{
    uint8_t p[CTL_MAX];
    size_t rl = strlen(reason);
    if (rl > CTL_MAX - 2)
        rl = CTL_MAX - 2;
    p[0] = (uint8_t)(code >> 8);
    p[1] = (uint8_t)code;
    memcpy(p + 2, reason, rl);
    queue_ctl(c, WSLAY_CONNECTION_CLOSE, p, 2 + rl);
}

/* ---- sending ------------------------------------------------------------------------------ */

/* Reading stops once a close frame is queued (what follows it is not read: level-triggered
 * epoll would otherwise spin on it); writing is watched only while the socket is full. */
static void watch(gm_server *srv, gm_ws_client *c, bool blocked)
{
    unsigned want = (c->closing ? 0u : (unsigned)EPOLLIN) | (blocked ? (unsigned)EPOLLOUT : 0u);
    if (want != c->watching && gm_server_rewatch(srv, c->fd, &c->tag, want) == 0)
        c->watching = want;
}

static void start_job_frame(gm_ws_client *c, gm_ws_job_frame *f)
{
    size_t h = header_len(f->len);
    uint8_t *p = f->bytes + 10 - h;
    /* The same header for every client: written once per client, harmless. */
    p[0] = 0x80 | WSLAY_TEXT_FRAME;
    if (h == 2) {
        p[1] = (uint8_t)f->len;
    } else if (h == 4) {
        p[1] = 126;
        p[2] = (uint8_t)(f->len >> 8);
        p[3] = (uint8_t)f->len;
    } else {
        p[1] = 127;
        for (int i = 0; i < 8; i++)
            p[2 + i] = (uint8_t)((uint64_t)f->len >> (56 - 8 * i));
    }
    f->refs++;
    c->jpin = f;
    c->out = p;
    c->out_len = f->len + h;
    c->out_off = 0;
    c->sent_any = true;
    c->sent_seq = f->seq;
    c->last_progress_ms = gm_clock_mono_ms();
}

static void start_frame(gm_ws_client *c, gm_published *p)
{
    const gm_blob *b = frame_blob(p, c->kind);
    if (!b->data)
        return;
    size_t h = header_len(b->len);
    c->pin = gm_published_ref(p);
    c->out = b->data - h;
    c->out_len = b->len + h;
    c->out_off = 0;
    c->sent_any = true;
    c->sent_seq = p->seq;
    c->last_progress_ms = gm_clock_mono_ms();
}

/* Sends what the socket takes: a control frame in progress, else the data frame in progress,
 * else waiting control frames, else the newest due frame. A failed send marks the client
 * dead. */
static void send_queued(gm_server *srv, gm_ws_client *c)
{
    if (c->draining || c->dead)
        return;
    for (;;) {
        const uint8_t *p;
        size_t *off, len;
        bool ctl = c->ctlq_off > 0 || (c->ctlq_len > 0 && (!c->out || c->out_off == 0));
        if (ctl) {
            p = c->ctlq;
            off = &c->ctlq_off;
            len = c->ctlq_len;
        } else if (c->out) {
            p = c->out;
            off = &c->out_off;
            len = c->out_len;
        } else if (c->kind == WS_BENCH) {
            if (c->closing || !srv->ws_jobs || (c->sent_any && c->sent_seq == srv->ws_jobs->seq))
                break;
            start_job_frame(c, srv->ws_jobs);
            continue;
        } else if (!c->closing && srv->ws_due &&
                   (!c->sent_any || c->sent_seq != srv->ws_due->seq)) {
            start_frame(c, srv->ws_due);
            if (!c->out)
                break;
            continue;
        } else {
            break;
        }
        ssize_t n = send(c->fd, p + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            watch(srv, c, true);
            return;
        }
        if (n <= 0) {
            mark_dead(srv, c, "send failed");
            return;
        }
        *off += (size_t)n;
        c->last_progress_ms = gm_clock_mono_ms();
        if (*off < len)
            continue;
        if (ctl) {
            c->ctlq_len = c->ctlq_off = 0;
            if (c->closing) {
                /* A lingering close: closing a socket with unread input sends a reset, which can
                 * destroy the close frame before the peer reads it. So shut our side, then read
                 * and discard until the peer closes (or GM_WS_DRAIN_S passes). */
                shutdown(c->fd, SHUT_WR);
                c->draining = true;
                c->last_progress_ms = gm_clock_mono_ms();
                gm_server_rewatch(srv, c->fd, &c->tag, EPOLLIN);
                c->watching = EPOLLIN;
                return;
            }
        } else {
            gm_published_unref(c->pin);
            c->pin = NULL;
            job_frame_unref(c->jpin);
            c->jpin = NULL;
            c->out = NULL;
        }
    }
    watch(srv, c, false);
}

/* ---- receiving ---------------------------------------------------------------------------- */

static ssize_t on_recv_raw(uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    gm_ws_client *c = user;
    if (c->extra_off < c->extra_len) {
        size_t n = c->extra_len - c->extra_off;
        if (n > len)
            n = len;
        memcpy(buf, c->extra + c->extra_off, n);
        c->extra_off += n;
        return (ssize_t)n;
    }
    ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);
    if (n == 0)
        c->eof = true;
    else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        c->io_error = true;
    if (n > 0)
        c->last_rx_ms = gm_clock_mono_ms();
    return n > 0 ? n : -1; /* anything else reads as "want more" to wslay */
}

/* wslay reports a frame only with its first payload byte, so a header announcing 1 GB and no
 * payload would hold the connection open unanswered. This follows the frame headers in the bytes
 * handed to wslay, so such a frame is refused at its header. */
static void track_headers(gm_ws_client *c, const uint8_t *p, size_t n)
{
    while (n) {
        if (c->hdr_skip) {
            size_t k = (uint64_t)n < c->hdr_skip ? n : (size_t)c->hdr_skip;
            c->hdr_skip -= k;
            p += k;
            n -= k;
            continue;
        }
        c->hdr[c->hdr_have++] = *p++;
        n--;
        if (c->hdr_have < 2)
            continue;
        unsigned l7 = c->hdr[1] & 0x7f;
        size_t need = 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0) + (c->hdr[1] & 0x80 ? 4 : 0);
        if (c->hdr_have < need)
            continue;
        uint64_t len = l7;
        if (l7 == 126) {
            len = (uint64_t)c->hdr[2] << 8 | c->hdr[3];
        } else if (l7 == 127) {
            len = 0;
            for (int i = 0; i < 8; i++)
                len = len << 8 | c->hdr[2 + i];
        }
        if ((c->hdr[0] & 0x0f) < 0x8 && len > GM_WS_MAX_MESSAGE)
            c->hdr_too_big = true;
        c->hdr_have = 0;
        c->hdr_skip = len;
    }
}

static ssize_t on_recv(uint8_t *buf, size_t len, int flags, void *user)
{
    ssize_t got = on_recv_raw(buf, len, flags, user);
    if (got > 0)
        track_headers(user, buf, (size_t)got);
    return got;
}

static ssize_t on_send_unused(const uint8_t *data, size_t len, int flags, void *user)
{
    (void)data;
    (void)len;
    (void)flags;
    (void)user;
    return -1; /* frames out are written by send_queued(), never through wslay */
}

/* A protocol violation: say why with a close frame, then go. */
static void fail(gm_ws_client *c, unsigned code, const char *why)
{
    queue_close(c, code, why);
    c->in_frame = false;
}

static bool valid_close_code(unsigned code)
{
    if (code >= 3000 && code <= 4999)
        return true;
    return code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006;
}

/* A complete control frame. */
static void on_control(gm_ws_client *c)
{
    if (c->frame_opcode == WSLAY_PING) {
        queue_ctl(c, WSLAY_PONG, c->ctl, c->ctl_len);
    } else if (c->frame_opcode == WSLAY_CONNECTION_CLOSE) {
        if (c->ctl_len == 1)
            return fail(c, CLOSE_PROTOCOL, "close frame with a 1-byte payload");
        unsigned code = c->ctl_len >= 2 ? (unsigned)(c->ctl[0] << 8 | c->ctl[1]) : 0;
        if (c->ctl_len >= 2 && !valid_close_code(code))
            return fail(c, CLOSE_PROTOCOL, "invalid close code");
        if (c->ctl_len > 2 && !gm_utf8_valid((const char *)c->ctl + 2, c->ctl_len - 2))
            return fail(c, CLOSE_BAD_DATA, "close reason is not UTF-8");
        queue_close(c, c->ctl_len >= 2 ? code : CLOSE_NORMAL, "");
    }
    /* A pong needs nothing: receiving it already counted as life (last_rx_ms). */
}

/* The first bytes of a frame: is it allowed here? */
static void on_frame_start(gm_ws_client *c, const struct wslay_frame_iocb *f)
{
    c->in_frame = true;
    c->frame_left = f->payload_length;
    c->frame_opcode = f->opcode;
    c->frame_fin = f->fin;
    c->ctl_len = 0;
    if (!f->mask)
        return fail(c, CLOSE_PROTOCOL, "client frames must be masked");
    if (f->rsv)
        return fail(c, CLOSE_PROTOCOL, "reserved bits set without an extension");
    switch (f->opcode) {
    case WSLAY_PING:
    case WSLAY_PONG:
    case WSLAY_CONNECTION_CLOSE:
        return; /* wslay checked they are whole and at most 125 bytes */
    case WSLAY_TEXT_FRAME:
    case WSLAY_BINARY_FRAME:
        if (c->msg_opcode)
            return fail(c, CLOSE_PROTOCOL, "new message before the last one ended");
        c->msg_opcode = f->opcode;
        c->msg_len = 0;
        memset(&c->utf8, 0, sizeof c->utf8);
        break;
    case WSLAY_CONTINUATION_FRAME:
        if (!c->msg_opcode)
            return fail(c, CLOSE_PROTOCOL, "continuation frame without a message");
        break;
    default:
        return fail(c, CLOSE_PROTOCOL, "unknown opcode");
    }
    if (f->payload_length > GM_WS_MAX_MESSAGE - c->msg_len)
        return fail(c, CLOSE_TOO_BIG, "message too big");
}

/* Payload bytes of the current frame. */
static void on_payload(gm_ws_client *c, const uint8_t *p, size_t n)
{
    c->frame_left -= n;
    if (c->frame_opcode >= 0x8) {
        memcpy(c->ctl + c->ctl_len, p, n); /* at most 125 in all: wslay checked */
        c->ctl_len += n;
    } else {
        c->msg_len += n;
        if (c->msg_opcode == WSLAY_TEXT_FRAME && !gm_utf8_feed(&c->utf8, p, n))
            return fail(c, CLOSE_BAD_DATA, "text message is not UTF-8");
    }
    if (c->frame_left)
        return;
    c->in_frame = false;
    if (c->frame_opcode >= 0x8)
        return on_control(c);
    if (!c->frame_fin)
        return;
    if (c->msg_opcode == WSLAY_TEXT_FRAME && !gm_utf8_complete(&c->utf8))
        return fail(c, CLOSE_BAD_DATA, "text message is not UTF-8");
    c->msg_opcode = 0; /* a whole message, ignored */
}

/* Reads and checks what the client sent; a client that has gone (or whose socket failed) is
 * marked dead. A chatty client gets a bounded amount of work per wake-up (epoll is
 * level-triggered and comes back). */
static void read_frames(gm_server *srv, gm_ws_client *c)
{
    for (int i = 0; i < 64 && !c->closing; i++) {
        struct wslay_frame_iocb f;
        ssize_t n = wslay_frame_recv(c->rx, &f);
        if (n == WSLAY_ERR_WANT_READ) {
            if (c->hdr_too_big)
                fail(c, CLOSE_TOO_BIG, "message too big");
            break;
        }
        if (n == WSLAY_ERR_PROTO) {
            fail(c, CLOSE_PROTOCOL, "malformed frame");
            break;
        }
        if (n < 0) {
            mark_dead(srv, c, "receive failed");
            return;
        }
        if (!c->in_frame)
            on_frame_start(c, &f);
        if (c->closing)
            break;
        on_payload(c, f.data, f.data_length);
    }
    if (c->io_error || c->eof) /* gone: no one to say goodbye to */
        mark_dead(srv, c, c->eof ? "peer closed" : "receive failed");
}

/* ---- the loop's entry points -------------------------------------------------------------- */

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra,
                       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)conn;
    (void)req_cls;
    const gm_ws_stream *st = cls;
    gm_server *srv = st->srv;
    static const struct wslay_frame_callbacks cb = {on_send_unused, on_recv, NULL};
    gm_ws_client *c = calloc(1, sizeof *c);
    if (!c || wslay_frame_context_init(&c->rx, &cb, c) != 0 ||
        (extra_len && !(c->extra = malloc(extra_len)))) {
        if (c && c->rx)
            wslay_frame_context_free(c->rx);
        free(c);
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        return;
    }
    c->tag.kind = GM_POLL_WS;
    c->srv = srv;
    c->fd = sock;
    c->urh = urh;
    c->kind = st->kind;
    if (extra_len)
        memcpy(c->extra, extra, extra_len);
    c->extra_len = extra_len;
    c->last_rx_ms = c->last_progress_ms = gm_clock_mono_ms();
    int fl = fcntl(sock, F_GETFL);
    if (fl >= 0)
        fcntl(sock, F_SETFL, fl | O_NONBLOCK);
    /* A small send buffer: without it loopback sockets soak up megabytes per client before
     * frames start being skipped. */
    int sndbuf = 65536;
    setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    c->watching = EPOLLIN;
    if (gm_server_watch(srv, sock, &c->tag, EPOLLIN) < 0) {
        wslay_frame_context_free(c->rx);
        free(c->extra);
        free(c);
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        return;
    }
    /* Samples wake the loop only while a client listens: for the first client the newest
     * sample is made due here (with others connected, the loop is already up to date). */
    if (gm_list_empty(&srv->ws_clients)) {
        gm_server_refresh(srv);
        gm_ws_broadcast(srv);
    }
    gm_list_push_front(&srv->ws_clients, &c->link);
    srv->ws_count++;
    gm_log(GM_LOG_DEBUG, "websocket connected", "stream=%s clients=%u", kind_name(c->kind),
           srv->ws_count);
    if (c->extra_len)
        read_frames(srv, c);
    send_queued(srv, c);
}

bool gm_ws_handshake(gm_server *srv, struct MHD_Connection *mc, const gm_route *r,
                     const gm_query *q, gm_resp *rs)
{
    const char *upgrade = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Upgrade");
    const char *connection = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Connection");
    const char *version = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    const char *key = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    const char *auth = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Authorization");
    if (!upgrade || !gm_http_list_has(upgrade, "websocket")) {
        gm_resp_error(rs, 400, "only an upgrade to WebSocket is supported (not %.32s)",
                      upgrade ? upgrade : "");
        return false;
    }
    if (!connection || !gm_http_list_has(connection, "upgrade")) {
        gm_resp_error(rs, 400, "a WebSocket upgrade needs \"Connection: Upgrade\"");
        return false;
    }
    if (!version || strcmp(version, "13") != 0) {
        gm_resp_error(rs, 426, "WebSocket version 13 is the one supported");
        rs->ws_version = true;
        return false;
    }
    if (!gm_ws_key_ok(key)) {
        gm_resp_error(rs, 400, "Sec-WebSocket-Key is missing or not 16 bytes of base64");
        return false;
    }
    if (r->needs_token && !gm_server_authorized(srv, auth, gm_query_get(q, "token"))) {
        gm_resp_error(rs, 401,
                      "missing or wrong token (Authorization: Bearer <token> or ?token=<token>)");
        rs->www_auth = true;
        return false;
    }
    /* A quarter of the connections stay for plain requests, so streams cannot starve
     * /api/health or /metrics. */
    unsigned cap = srv->conn_limit - srv->conn_limit / 4;
    if (cap > GM_WS_MAX_CLIENTS)
        cap = GM_WS_MAX_CLIENTS;
    if (srv->ws_count >= cap) {
        uint64_t held;
        if (gm_log_limit_pass(&srv->ws_refused_log, 1, GM_LOG_LIMIT_MS, gm_clock_mono_ms(), &held))
            gm_log(GM_LOG_WARN, "websocket refused: too many clients", "clients=%u refused=%llu",
                   srv->ws_count, (unsigned long long)held + 1);
        gm_resp_error(rs, 503, "too many WebSocket clients");
        rs->retry_after = 5;
        return false;
    }

    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    struct sha1_ctx sha;
    uint8_t digest[SHA1_DIGEST_SIZE];
    char accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
    sha1_init(&sha);
    sha1_update(&sha, strlen(key), (const uint8_t *)key);
    sha1_update(&sha, sizeof guid - 1, (const uint8_t *)guid);
    sha1_digest(&sha, sizeof digest, digest);
    base64_encode_raw(accept, sizeof digest, digest);
    accept[sizeof accept - 1] = '\0';

    int kind = strcmp(r->path, "/ws/gpu") == 0          ? WS_GPU
               : strcmp(r->path, "/ws/benchmarks") == 0 ? WS_BENCH
                                                        : WS_METRICS;
    gm_ws_stream *st = &srv->ws_streams[kind - 1];
    *st = (gm_ws_stream){srv, kind};
    struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, st);
    if (!resp || MHD_add_response_header(resp, "Upgrade", "websocket") != MHD_YES ||
        MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept) != MHD_YES ||
        MHD_add_response_header(resp, "Server", "gpumon/" GM_VERSION) != MHD_YES ||
        MHD_queue_response(mc, MHD_HTTP_SWITCHING_PROTOCOLS, resp) != MHD_YES) {
        if (resp)
            MHD_destroy_response(resp);
        gm_resp_error(rs, 503, "cannot start the WebSocket stream");
        return false;
    }
    MHD_destroy_response(resp);
    return true;
}

void gm_ws_broadcast(gm_server *srv)
{
    gm_published *p = srv->current;
    if (!p || (srv->ws_due && (p == srv->ws_due || p->seq % srv->ws_every != 0)))
        return;
    /* Due: clients start on it as they become idle; each stream's frame is rendered and framed
     * the first time a client of it takes one (never when nobody listens). */
    gm_published_unref(srv->ws_due);
    srv->ws_due = gm_published_ref(p);
    /* The jobs' frame, at the same cadence, only while a client of that stream listens: the
     * queue's mutex is held for a copy of a few jobs' state, never while one waits or runs. */
    bool bench_client = false;
    gm_list_each(l, next, &srv->ws_clients)
        bench_client |= gm_list_entry(l, gm_ws_client, link)->kind == WS_BENCH;
    if (bench_client && srv->jobs) {
        json_t *j = json_pack("{s:o}", "jobs", gm_jobs_recent(srv->jobs, 10));
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        size_t n = text ? strlen(text) : 0;
        gm_ws_job_frame *f = text ? malloc(sizeof *f + 10 + n) : NULL;
        if (f) {
            f->refs = 1;
            f->seq = p->seq;
            f->len = n;
            memcpy(f->bytes + 10, text, n);
            job_frame_unref(srv->ws_jobs);
            srv->ws_jobs = f;
        }
        free(text);
    }
    gm_list_each(l, next, &srv->ws_clients) {
        gm_ws_client *c = gm_list_entry(l, gm_ws_client, link);
        if (!c->out)
            send_queued(srv, c);
    }
}

/* Reads and drops what a closed client still sends; marks it dead at its end. */
static void drain(gm_server *srv, gm_ws_client *c)
{
    char buf[4096];
    for (int i = 0; i < 16; i++) {
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        mark_dead(srv, c, "closed");
        return;
    }
}

void gm_ws_event(gm_server *srv, gm_poll *tag, unsigned events)
{
    gm_ws_client *c = (gm_ws_client *)tag;
    if (c->dead) /* marked earlier in this turn: its events are no longer wanted */
        return;
    if (c->draining) {
        drain(srv, c);
        return;
    }
    if ((events & (EPOLLHUP | EPOLLERR)) && c->closing) {
        mark_dead(srv, c, "peer closed");
        return;
    }
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->closing)
        read_frames(srv, c);
    send_queued(srv, c);
}

void gm_ws_sweep(gm_server *srv, int64_t now)
{
    gm_list_each(l, next, &srv->ws_clients) {
        gm_ws_client *c = gm_list_entry(l, gm_ws_client, link);
        if (c->dead)
            continue;
        if (c->draining) {
            if (now - c->last_progress_ms > GM_WS_DRAIN_S * 1000)
                mark_dead(srv, c, "closed");
            continue;
        }
        bool owing = c->out || c->ctlq_len;
        if (owing && now - c->last_progress_ms > GM_WS_STUCK_S * 1000) {
            mark_dead(srv, c, "stuck: took no frame bytes");
            continue;
        }
        if (now - c->last_rx_ms > GM_WS_DEAD_S * 1000) {
            mark_dead(srv, c, "no answer to pings");
            continue;
        }
        if (now - c->last_rx_ms > GM_WS_PING_S * 1000 && c->ping_ms < c->last_rx_ms) {
            c->ping_ms = now;
            queue_ctl(c, WSLAY_PING, NULL, 0);
            send_queued(srv, c);
        }
    }
    gm_ws_reap(srv);
}

void gm_ws_close_all(gm_server *srv)
{
    gm_list_each(l, next, &srv->ws_clients) {
        gm_ws_client *c = gm_list_entry(l, gm_ws_client, link);
        /* A goodbye if the socket takes it at once; no waiting at shutdown. */
        if (!c->dead && (!c->out || c->out_off == 0)) {
            uint8_t bye[4] = {0x80 | WSLAY_CONNECTION_CLOSE, 2, CLOSE_GOING_AWAY >> 8,
                              CLOSE_GOING_AWAY & 0xff};
            if (c->ctlq_off == 0)
                (void)!send(c->fd, bye, sizeof bye, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        mark_dead(srv, c, "shutting down");
    }
    gm_ws_reap(srv);
    gm_published_unref(srv->ws_due);
    srv->ws_due = NULL;
    job_frame_unref(srv->ws_jobs);
    srv->ws_jobs = NULL;
}
