/* fake_openai.c - a fake OpenAI-compatible inference server for `gpumon bench`'s tests and
 * benchmarks: one thread, epoll, HTTP/1.1 keep-alive, chunked text/event-stream answers with a
 * configured time to first token, inter-token delay and tokens per chunk, failures on demand, and
 * a log of when it sent each request's first and last chunk. See tests/fakes/README.md.
 *
 * Serves POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health. Fast
 * enough not to be the bottleneck of the client it measures: a request with no delays is
 * answered with one write. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define READ_MAX (4u << 20) /* a request larger than this is refused */

typedef struct opts {
    int port;
    const char *port_file;
    const char *log;
    const char *model;
    double ttft_ms, itl_ms;
    unsigned tokens_per_chunk;
    bool no_usage;
    bool role_chunk;
    unsigned fail_every, fail_status;
    unsigned error_every;
    unsigned drop_every;
    unsigned short_every, short_tokens;
    bool garbage;
    unsigned default_tokens;
    const char *api_key;   /* required as "Authorization: Bearer KEY" when set */
    const char *listen;    /* IPv4 address to listen on (default 127.0.0.1) */
    double ready_after_ms; /* GET /v1/health/ready: 503 until then, 200 after (< 0: 404) */
    bool never_ready;      /* every readiness path answers 503 */
    const char *say;       /* printed on stdout once listening (a line for logs) */
    /* Hostile servers, for the client's defences: */
    long long usage_completion; /* >= 0: the usage chunk claims this many completion tokens */
    size_t line_bytes;          /* > 0: the first content chunk is one line of this many bytes */
    bool endless;               /* content chunks forever, max_tokens ignored, no end */
    double drip_ms;             /* > 0: the answer goes out one byte every drip_ms */
    unsigned hostile_every;     /* the three above apply to every Nth request (default 1) */
} opts;

static opts O = {.model = "fake-model",
                 .tokens_per_chunk = 1,
                 .fail_status = 500,
                 .default_tokens = 16,
                 .ready_after_ms = -1,
                 .usage_completion = -1,
                 .hostile_every = 1};
static int64_t started_ns;

typedef struct buf {
    char *p;
    size_t len, cap, off;
} buf;

static void buf_put(buf *b, const void *d, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            perror("fake_openai: realloc");
            exit(1);
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(buf *b, const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < (int)sizeof small) {
        buf_put(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf_put(b, big, (size_t)n);
    free(big);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A streaming answer in progress. */
typedef struct stream {
    unsigned long n; /* request number, from 1 */
    bool chat;
    unsigned tokens; /* to send in all */
    unsigned sent;   /* tokens sent */
    unsigned chunks; /* content chunks sent */
    unsigned prompt_tokens;
    bool usage; /* send the usage chunk */
    int fail;   /* 0, 'e' error mid-stream, 'd' drop mid-stream */
    int64_t recv_ns, recv_rt_ns, first_ns, first_rt_ns, last_ns, last_rt_ns, end_ns;
    int64_t arrived_ns; /* the kernel's receipt of the request's last bytes (SO_TIMESTAMPNS) */
    int64_t next_due;
    buf drip;     /* --drip-ms: the whole answer (drip.off bytes sent), a byte at a time */
    bool hostile; /* --line-bytes, --endless, --drip-ms apply to this request */
} stream;

typedef struct conn {
    int fd;
    buf in;  /* bytes read, not yet a whole request */
    buf out; /* bytes the socket would not take yet */
    bool want_out;
    bool streaming;
    stream st;
    int heap_i;    /* position in the timer heap, -1 when not waiting */
    int64_t rx_ns; /* kernel receive time of the latest bytes read, CLOCK_MONOTONIC; 0: none */
    bool close_after;
    bool dead; /* closed; freed after the round of events that may still name it */
    struct conn *next_dead;
} conn;

static int ep, tfd;
/* When the loop last woke up: a request read in that round arrived by then. */
static int64_t wake_ns, wake_rt_ns;
static FILE *logf_;
static unsigned long requests; /* completion requests so far */

/* ---- timers: a binary heap of connections by their stream's next due time ---------------- */

static conn **heap;
static int heap_n, heap_cap;

static void heap_swap(int a, int b)
{
    conn *t = heap[a];
    heap[a] = heap[b];
    heap[b] = t;
    heap[a]->heap_i = a;
    heap[b]->heap_i = b;
}

static void heap_up(int i)
{
    while (i > 0) {
        int p = (i - 1) / 2;
        if (heap[p]->st.next_due <= heap[i]->st.next_due)
            break;
        heap_swap(i, p);
        i = p;
    }
}

static void heap_down(int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < heap_n && heap[l]->st.next_due < heap[m]->st.next_due)
            m = l;
        if (r < heap_n && heap[r]->st.next_due < heap[m]->st.next_due)
            m = r;
        if (m == i)
            return;
        heap_swap(i, m);
        i = m;
    }
}

static void heap_push(conn *c)
{
    if (heap_n == heap_cap) {
        heap_cap = heap_cap ? heap_cap * 2 : 256;
        heap = realloc(heap, (size_t)heap_cap * sizeof *heap);
        if (!heap) {
            perror("fake_openai: realloc");
            exit(1);
        }
    }
    heap[heap_n] = c;
    c->heap_i = heap_n++;
    heap_up(c->heap_i);
}

static void heap_remove(conn *c)
{
    int i = c->heap_i;
    if (i < 0)
        return;
    heap_n--;
    if (i != heap_n) {
        heap[i] = heap[heap_n];
        heap[i]->heap_i = i;
        heap_down(i);
        heap_up(i);
    }
    c->heap_i = -1;
}

static void arm(void)
{
    struct itimerspec its = {0};
    if (heap_n) {
        int64_t at = heap[0]->st.next_due;
        if (at <= 0)
            at = 1;
        its.it_value.tv_sec = (time_t)(at / 1000000000);
        its.it_value.tv_nsec = (long)(at % 1000000000);
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* ---- output ------------------------------------------------------------------------------ */

static conn *dead_conns;

static void conn_close(conn *c)
{
    if (c->dead)
        return;
    heap_remove(c);
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    /* Not freed yet: the events epoll returned in this round may still point at it (a
     * stream's timer closed it, and its socket is in the same round). */
    c->dead = true;
    c->next_dead = dead_conns;
    dead_conns = c;
}

static void conn_reap(void)
{
    while (dead_conns) {
        conn *c = dead_conns;
        dead_conns = c->next_dead;
        free(c->st.drip.p);
        free(c->in.p);
        free(c->out.p);
        free(c);
    }
}

static void want_out(conn *c, bool on)
{
    if (c->want_out == on)
        return;
    c->want_out = on;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0u), .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Sends what can go now, keeps the rest. False when the connection failed. */
static bool send_bytes(conn *c, const char *p, size_t n)
{
    if (c->out.len > c->out.off) { /* keep the order */
        buf_put(&c->out, p, n);
        return true;
    }
    while (n) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            c->out.len = c->out.off = 0;
            buf_put(&c->out, p, n);
            want_out(c, true);
            return true;
        }
        if (w < 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static bool flush_out(conn *c)
{
    while (c->out.off < c->out.len) {
        ssize_t w = send(c->fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (w < 0)
            return false;
        c->out.off += (size_t)w;
    }
    c->out.len = c->out.off = 0;
    want_out(c, false);
    return true;
}

/* One HTTP chunk carrying an SSE event "data: <text>\n\n". */
static void put_event(buf *b, const char *text, size_t n)
{
    buf_printf(b, "%zx\r\ndata: ", n + 8);
    buf_put(b, text, n);
    buf_put(b, "\n\n\r\n", 4);
}

static void simple_answer(conn *c, int status, const char *reason, const char *ctype,
                          const char *body)
{
    buf b = {0};
    buf_printf(&b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n%s", status,
               reason, ctype, strlen(body), c->close_after ? "Connection: close\r\n" : "", body);
    bool ok = send_bytes(c, b.p, b.len);
    free(b.p);
    if (!ok || (c->close_after && c->out.len == c->out.off))
        c->close_after = true;
}

static void log_stream(const stream *s, int status, const char *outcome)
{
    if (!logf_)
        return;
    fprintf(logf_,
            "{\"n\":%lu,\"id\":\"%s-%lu\",\"arrived_ns\":%lld,\"recv_ns\":%lld,"
            "\"recv_rt_ns\":%lld,\"first_ns\":%lld,"
            "\"first_rt_ns\":%lld,\"last_ns\":%lld,\"last_rt_ns\":%lld,\"end_ns\":%lld,"
            "\"tokens\":%u,\"chunks\":%u,\"prompt_tokens\":%u,\"usage\":%s,\"status\":%d,"
            "\"outcome\":\"%s\"}\n",
            s->n, s->chat ? "chatcmpl" : "cmpl", s->n, (long long)s->arrived_ns,
            (long long)s->recv_ns, (long long)s->recv_rt_ns, (long long)s->first_ns,
            (long long)s->first_rt_ns, (long long)s->last_ns, (long long)s->last_rt_ns,
            (long long)s->end_ns, s->sent, s->chunks, s->prompt_tokens, s->usage ? "true" : "false",
            status, outcome);
}

/* --line-bytes: a content chunk whose text is O.line_bytes bytes, all on one line. */
static void long_line_event(buf *b, const stream *s, bool last)
{
    buf ev = {0};
    if (s->chat)
        buf_printf(&ev,
                   "{\"id\":\"chatcmpl-%lu\",\"object\":\"chat.completion.chunk\",\"created\":0,"
                   "\"model\":\"%s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
                   s->n, O.model);
    else
        buf_printf(&ev,
                   "{\"id\":\"cmpl-%lu\",\"object\":\"text_completion\",\"created\":0,"
                   "\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\"",
                   s->n, O.model);
    char pad[65536];
    memset(pad, 'x', sizeof pad);
    for (size_t left = O.line_bytes; left;) {
        size_t k = left < sizeof pad ? left : sizeof pad;
        buf_put(&ev, pad, k);
        left -= k;
    }
    buf_printf(&ev, "\"%s,\"finish_reason\":%s}]}", s->chat ? "}" : ",\"logprobs\":null",
               last ? "\"length\"" : "null");
    put_event(b, ev.p, ev.len);
    free(ev.p);
}

/* The content chunk carrying tokens [from, from + k) of s (the last one has finish_reason). */
static void content_event(buf *b, const stream *s, unsigned k, bool last)
{
    if (O.line_bytes && s->hostile && s->chunks == 0) {
        long_line_event(b, s, last);
        return;
    }
    char text[4096];
    size_t tl = 0;
    for (unsigned i = 0; i < k && tl + 8 < sizeof text; i++)
        tl += (size_t)snprintf(text + tl, sizeof text - tl, "tok ");
    char ev[8192];
    int n;
    if (s->chat)
        n = snprintf(ev, sizeof ev,
                     "{\"id\":\"chatcmpl-%lu\",\"object\":\"chat.completion.chunk\",\"created\":0,"
                     "\"model\":\"%s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},"
                     "\"finish_reason\":%s}]}",
                     s->n, O.model, text, last ? "\"length\"" : "null");
    else
        n = snprintf(ev, sizeof ev,
                     "{\"id\":\"cmpl-%lu\",\"object\":\"text_completion\",\"created\":0,"
                     "\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\"%s\",\"logprobs\":"
                     "null,\"finish_reason\":%s}]}",
                     s->n, O.model, text, last ? "\"length\"" : "null");
    put_event(b, ev, (size_t)n);
}

static void tail_events(buf *b, const stream *s)
{
    if (s->usage) {
        char ev[512];
        unsigned long long done =
            O.usage_completion >= 0 ? (unsigned long long)O.usage_completion : s->sent;
        int n = snprintf(ev, sizeof ev,
                         "{\"id\":\"%s-%lu\",\"object\":\"%s\",\"created\":0,\"model\":\"%s\","
                         "\"choices\":[],\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":"
                         "%llu,\"total_tokens\":%llu}}",
                         s->chat ? "chatcmpl" : "cmpl", s->n,
                         s->chat ? "chat.completion.chunk" : "text_completion", O.model,
                         s->prompt_tokens, done, s->prompt_tokens + done);
        put_event(b, ev, (size_t)n);
    }
    put_event(b, "[DONE]", 6);
    buf_put(b, "0\r\n\r\n", 5);
}

/* Sends what is due of c's stream (after the bytes of pre, when given, which it frees);
 * schedules the next piece or ends it. */
static void stream_step(conn *c, buf *pre)
{
    stream *s = &c->st;
    if (s->drip.p) {
        /* One more byte of the answer; the stream ends with the last one. */
        bool ok = send_bytes(c, s->drip.p + s->drip.off++, 1);
        if (ok && s->drip.off < s->drip.len) {
            s->next_due += (int64_t)(O.drip_ms * 1e6);
            heap_push(c);
            return;
        }
        s->end_ns = mono_ns();
        free(s->drip.p);
        memset(&s->drip, 0, sizeof s->drip);
        log_stream(s, 200, ok ? "ok" : "client_gone");
        c->streaming = false;
        if (!ok)
            c->close_after = true;
        return;
    }
    if (O.endless && s->hostile && c->out.len - c->out.off > (1u << 20)) {
        /* The client is not reading: wait rather than buffer without end. */
        s->next_due = mono_ns() + 1000000;
        heap_push(c);
        return;
    }
    buf b = {0};
    if (pre) {
        b = *pre;
        memset(pre, 0, sizeof *pre);
    }
    bool zero = O.ttft_ms == 0 && O.itl_ms == 0;
    unsigned fail_at = s->fail ? (s->tokens + 1) / 2 : 0;
    for (;;) {
        unsigned k = s->tokens - s->sent;
        if (k > O.tokens_per_chunk)
            k = O.tokens_per_chunk;
        if (fail_at && s->sent + k > fail_at)
            k = fail_at > s->sent ? fail_at - s->sent : 0;
        if (k) {
            bool last = s->sent + k == s->tokens;
            content_event(&b, s, k, last);
            s->sent += k;
            s->chunks++;
            int64_t t = mono_ns();
            if (!s->first_ns) {
                s->first_ns = t;
                s->first_rt_ns = real_ns();
            }
            s->last_ns = t;
            s->last_rt_ns = real_ns();
        }
        bool done = s->sent == s->tokens || (fail_at && s->sent >= fail_at);
        if (O.endless && s->hostile && zero && s->chunks % 64 == 0) {
            /* Endless and without delays: 64 chunks a round, the rest of the loop served. */
            s->next_due = mono_ns();
            break;
        }
        if (!zero && !done) {
            /* The grid: each chunk an inter-token delay after the previous one was due. */
            s->next_due += (int64_t)(O.itl_ms * 1e6);
            break;
        }
        if (done) {
            if (s->fail == 'e') {
                const char *err = "{\"error\":{\"message\":\"fake mid-stream failure\","
                                  "\"type\":\"InternalServerError\",\"code\":500}}";
                put_event(&b, err, strlen(err));
                put_event(&b, "[DONE]", 6);
                buf_put(&b, "0\r\n\r\n", 5);
            } else if (s->fail == 'd') {
                /* dropped: what was built goes out, then the connection is cut */
            } else {
                tail_events(&b, s);
            }
            s->end_ns = mono_ns();
            bool ok = send_bytes(c, b.p, b.len);
            free(b.p);
            log_stream(s, 200, s->fail == 'e' ? "stream_error" : s->fail == 'd' ? "dropped" : "ok");
            c->streaming = false;
            if (!ok || s->fail == 'd') {
                c->close_after = true;
                if (s->fail == 'd') {
                    /* Reset, not FIN: a dropped connection. */
                    struct linger lg = {1, 0};
                    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
                }
            }
            return;
        }
    }
    bool ok = send_bytes(c, b.p, b.len);
    free(b.p);
    if (!ok) {
        c->close_after = true;
        c->streaming = false;
        log_stream(s, 200, "client_gone");
        return;
    }
    heap_push(c);
}

static unsigned count_words(const char *s)
{
    unsigned n = 0;
    bool in = false;
    for (; s && *s; s++) {
        bool sp = *s == ' ' || *s == '\n' || *s == '\t' || *s == '\r';
        if (!sp && !in)
            n++;
        in = !sp;
    }
    return n;
}

static void start_stream(conn *c, bool chat, const char *body, size_t len, int64_t recv_ns,
                         int64_t recv_rt, int64_t arrived_ns)
{
    unsigned long n = ++requests;
    json_error_t jerr;
    json_t *j = json_loadb(body, len, 0, &jerr);
    if (!json_is_object(j)) {
        json_decref(j);
        simple_answer(c, 400, "Bad Request", "application/json",
                      "{\"error\":{\"message\":\"the body is not a JSON object\",\"type\":"
                      "\"BadRequestError\",\"code\":400}}");
        return;
    }
    stream *s = &c->st;
    free(s->drip.p);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->chat = chat;
    s->recv_ns = recv_ns;
    s->recv_rt_ns = recv_rt;
    s->arrived_ns = arrived_ns && arrived_ns <= recv_ns ? arrived_ns : recv_ns;
    json_t *mt = json_object_get(j, "max_tokens");
    s->tokens = json_is_integer(mt) && json_integer_value(mt) > 0 ? (unsigned)json_integer_value(mt)
                                                                  : O.default_tokens;
    if (O.short_every && n % O.short_every == 0 && O.short_tokens < s->tokens)
        s->tokens = O.short_tokens;
    s->hostile = n % O.hostile_every == 0;
    if (O.endless && s->hostile)
        s->tokens = UINT32_MAX - 1; /* never reached */
    json_t *so = json_object_get(j, "stream_options");
    s->usage = !O.no_usage && json_is_true(json_object_get(so, "include_usage"));
    if (chat) {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(j, "messages"), i, m) s->prompt_tokens +=
            count_words(json_string_value(json_object_get(m, "content")));
    } else {
        s->prompt_tokens = count_words(json_string_value(json_object_get(j, "prompt")));
    }
    json_decref(j);
    if (O.fail_every && n % O.fail_every == 0) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "{\"error\":{\"message\":\"fake failure %lu\",\"type\":\"InternalServerError\","
                 "\"param\":null,\"code\":%u}}",
                 n, O.fail_status);
        simple_answer(c, (int)O.fail_status, "Error", "application/json", msg);
        log_stream(s, (int)O.fail_status, "http_error");
        return;
    }
    if (O.error_every && n % O.error_every == 0)
        s->fail = 'e';
    else if (O.drop_every && n % O.drop_every == 0)
        s->fail = 'd';
    buf b = {0};
    buf_printf(&b, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: "
                   "no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
    if (chat && O.role_chunk) {
        char ev[512];
        int k = snprintf(ev, sizeof ev,
                         "{\"id\":\"chatcmpl-%lu\",\"object\":\"chat.completion.chunk\","
                         "\"created\":0,\"model\":\"%s\",\"choices\":[{\"index\":0,\"delta\":"
                         "{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}",
                         n, O.model);
        put_event(&b, ev, (size_t)k);
    }
    c->streaming = true;
    bool drip = O.drip_ms > 0 && s->hostile;
    if (drip) {
        /* The whole answer is built now and goes out a byte at a time, the head at once. */
        while (s->sent < s->tokens) {
            unsigned k =
                s->tokens - s->sent < O.tokens_per_chunk ? s->tokens - s->sent : O.tokens_per_chunk;
            content_event(&s->drip, s, k, s->sent + k == s->tokens);
            s->sent += k;
            s->chunks++;
        }
        tail_events(&s->drip, s);
        s->first_ns = s->last_ns = mono_ns();
    }
    if (O.ttft_ms == 0 && O.itl_ms == 0 && !drip) {
        stream_step(c, &b); /* everything at once, in the same write as the head */
        return;
    }
    bool ok = send_bytes(c, b.p, b.len);
    free(b.p);
    if (!ok) {
        c->close_after = true;
        c->streaming = false;
        return;
    }
    s->next_due = recv_ns + (int64_t)((drip ? O.drip_ms : O.ttft_ms) * 1e6);
    heap_push(c);
}

/* ---- requests ---------------------------------------------------------------------------- */

static bool header_value(const char *head, size_t hl, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    const char *p = head, *end = head + hl;
    while (p < end) {
        const char *e = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (!e)
            e = end;
        if ((size_t)(e - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < e && *v == ' ')
                v++;
            size_t n = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return true;
        }
        p = e + 2;
    }
    return false;
}

/* Handles complete requests in c->in while no stream is running. False: close c. */
static bool handle_input(conn *c)
{
    while (!c->streaming && !c->close_after) {
        char *hend = c->in.len ? memmem(c->in.p, c->in.len, "\r\n\r\n", 4) : NULL;
        if (!hend)
            return c->in.len < 65536;
        size_t hl = (size_t)(hend - c->in.p) + 4;
        char cl[32] = "0", connh[32] = "", auth[512] = "";
        header_value(c->in.p, hl, "Content-Length", cl, sizeof cl);
        header_value(c->in.p, hl, "Connection", connh, sizeof connh);
        header_value(c->in.p, hl, "Authorization", auth, sizeof auth);
        size_t blen = strtoul(cl, NULL, 10);
        if (blen > READ_MAX)
            return false;
        if (c->in.len < hl + blen)
            return true;
        /* Stamped with the wake-up that found it, not with when this loop got to it: the
         * server's own work on other connections is then in its latency, as it should be. */
        int64_t recv_ns = wake_ns ? wake_ns : mono_ns(), recv_rt = wake_ns ? wake_rt_ns : real_ns();
        char method[8] = "", path[256] = "";
        sscanf(c->in.p, "%7s %255s", method, path);
        if (strcasecmp(connh, "close") == 0)
            c->close_after = true;
        const char *body = c->in.p + hl;
        if (O.api_key && (strncmp(auth, "Bearer ", 7) != 0 || strcmp(auth + 7, O.api_key) != 0)) {
            simple_answer(c, 401, "Unauthorized", "application/json",
                          "{\"error\":{\"message\":\"a valid API key is required\","
                          "\"type\":\"AuthenticationError\",\"code\":401}}");
        } else if (strcmp(method, "GET") == 0 &&
                   (O.never_ready ||
                    (O.ready_after_ms >= 0 && strcmp(path, "/v1/health/ready") == 0 &&
                     mono_ns() - started_ns < (int64_t)(O.ready_after_ms * 1e6))) &&
                   (strcmp(path, "/v1/health/ready") == 0 || strcmp(path, "/health") == 0 ||
                    strcmp(path, "/v1/models") == 0)) {
            simple_answer(c, 503, "Service Unavailable", "application/json",
                          "{\"error\":{\"message\":\"the model is loading\",\"code\":503}}");
        } else if (strcmp(method, "GET") == 0 && O.ready_after_ms >= 0 &&
                   strcmp(path, "/v1/health/ready") == 0) {
            simple_answer(c, 200, "OK", "application/json", "{\"status\":\"ready\"}");
        } else if (O.garbage) {
            simple_answer(c, 200, "OK", "text/html",
                          "<html><body>this is not an inference server</body></html>");
        } else if (strcmp(method, "POST") == 0 && (strcmp(path, "/v1/completions") == 0 ||
                                                   strcmp(path, "/v1/chat/completions") == 0)) {
            start_stream(c, strstr(path, "chat") != NULL, body, blen, recv_ns, recv_rt, c->rx_ns);
        } else if (strcmp(method, "GET") == 0 && strcmp(path, "/v1/models") == 0) {
            char m[512];
            snprintf(m, sizeof m,
                     "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\","
                     "\"created\":0,\"owned_by\":\"fake\"}]}",
                     O.model);
            simple_answer(c, 200, "OK", "application/json", m);
        } else if (strcmp(method, "GET") == 0 && strcmp(path, "/health") == 0) {
            simple_answer(c, 200, "OK", "application/json", "{}");
        } else {
            simple_answer(c, 404, "Not Found", "application/json",
                          "{\"error\":{\"message\":\"no such endpoint\",\"code\":404}}");
        }
        memmove(c->in.p, c->in.p + hl + blen, c->in.len - hl - blen);
        c->in.len -= hl + blen;
    }
    return true;
}

static void on_readable(conn *c)
{
    char tmp[65536];
    for (;;) {
        /* recvmsg for the kernel's receive timestamp of the data (SO_TIMESTAMPNS, wall clock),
         * turned into CLOCK_MONOTONIC: when the request arrived, whatever this loop was doing. */
        char ctl[CMSG_SPACE(sizeof(struct timespec))];
        struct iovec iov = {.iov_base = tmp, .iov_len = sizeof tmp};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
        ssize_t n = recvmsg(c->fd, &mh, 0);
        if (n > 0) {
            for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
                    struct timespec ts;
                    memcpy(&ts, CMSG_DATA(cm), sizeof ts);
                    int64_t rt = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
                    c->rx_ns = rt - (real_ns() - mono_ns());
                }
            }
            buf_put(&c->in, tmp, (size_t)n);
            if (c->in.len > READ_MAX + 65536) {
                conn_close(c);
                return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* closed by the client (or an error) */
        if (c->streaming)
            log_stream(&c->st, 200, "client_gone");
        conn_close(c);
        return;
    }
    if (!handle_input(c) || (c->close_after && !c->streaming && c->out.len == c->out.off))
        conn_close(c);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: fake_openai [--port N] [--port-file PATH] [--log PATH] [--model NAME]\n"
            "       [--ttft-ms MS] [--itl-ms MS] [--tokens-per-chunk K] [--no-usage]\n"
            "       [--role-chunk] [--fail-every N [--fail-status CODE]] [--error-every N]\n"
            "       [--drop-every N] [--short-every N --short-tokens M] [--garbage]\n"
            "       [--default-tokens N] [--api-key KEY] [--listen ADDR]\n"
            "       [--ready-after-ms MS] [--never-ready] [--say TEXT]\n"
            "       [--usage-completion-tokens N] [--line-bytes N] [--endless] [--drip-ms MS]\n"
            "       [--hostile-every N]\n");
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && ++i)
        if (ARG("--port"))
            O.port = atoi(v);
        else if (ARG("--port-file"))
            O.port_file = v;
        else if (ARG("--log"))
            O.log = v;
        else if (ARG("--model"))
            O.model = v;
        else if (ARG("--ttft-ms"))
            O.ttft_ms = atof(v);
        else if (ARG("--itl-ms"))
            O.itl_ms = atof(v);
        else if (ARG("--tokens-per-chunk"))
            O.tokens_per_chunk = (unsigned)atoi(v);
        else if (strcmp(a, "--no-usage") == 0)
            O.no_usage = true;
        else if (strcmp(a, "--role-chunk") == 0)
            O.role_chunk = true;
        else if (ARG("--fail-every"))
            O.fail_every = (unsigned)atoi(v);
        else if (ARG("--fail-status"))
            O.fail_status = (unsigned)atoi(v);
        else if (ARG("--error-every"))
            O.error_every = (unsigned)atoi(v);
        else if (ARG("--drop-every"))
            O.drop_every = (unsigned)atoi(v);
        else if (ARG("--short-every"))
            O.short_every = (unsigned)atoi(v);
        else if (ARG("--short-tokens"))
            O.short_tokens = (unsigned)atoi(v);
        else if (ARG("--default-tokens"))
            O.default_tokens = (unsigned)atoi(v);
        else if (strcmp(a, "--garbage") == 0)
            O.garbage = true;
        else if (ARG("--api-key"))
            O.api_key = v;
        else if (ARG("--listen"))
            O.listen = v;
        else if (ARG("--ready-after-ms"))
            O.ready_after_ms = atof(v);
        else if (strcmp(a, "--never-ready") == 0)
            O.never_ready = true;
        else if (ARG("--usage-completion-tokens"))
            O.usage_completion = strtoll(v, NULL, 10);
        else if (ARG("--line-bytes"))
            O.line_bytes = strtoull(v, NULL, 10);
        else if (strcmp(a, "--endless") == 0)
            O.endless = true;
        else if (ARG("--drip-ms"))
            O.drip_ms = atof(v);
        else if (ARG("--hostile-every"))
            O.hostile_every = (unsigned)atoi(v);
        else if (ARG("--say"))
            O.say = v;
        else
            usage();
#undef ARG
    }
    if (O.tokens_per_chunk == 0)
        O.tokens_per_chunk = 1;
    if (O.hostile_every == 0)
        O.hostile_every = 1;
}

/* The listening socket and the signals' fd: their addresses tag their epoll events (as tfd's
 * does), so they live here rather than in main. */
static int ls, sfd;

/* Binds the listening socket; 0 with its port in *port, or main's exit status. */
static int open_listener(int *port)
{
    ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)O.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (O.listen && inet_pton(AF_INET, O.listen, &sa.sin_addr) != 1) {
        fprintf(stderr, "fake_openai: --listen %s is not an IPv4 address\n", O.listen);
        return 2;
    }
    started_ns = mono_ns();
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 4096) < 0) {
        perror("fake_openai: bind/listen");
        return 1;
    }
    socklen_t sl = sizeof sa;
    getsockname(ls, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    return 0;
}

static void watch_events(void)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    ep = epoll_create1(EPOLL_CLOEXEC);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ls};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    ev.data.ptr = &tfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    ev.data.ptr = &sfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
}

/* Written to a temporary name and renamed, so a reader never sees half a port. */
static bool write_port_file(int port)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", O.port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, O.port_file) != 0) {
        perror(O.port_file);
        return false;
    }
    return true;
}

static void accept_all(void)
{
    int one = 1;
    for (;;) {
        int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            break;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
        conn *c = calloc(1, sizeof *c);
        c->fd = fd;
        c->heap_i = -1;
        struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
    }
}

static void on_timer(void)
{
    uint64_t t;
    if (read(tfd, &t, sizeof t) < 0) {
        /* spurious */
    }
    /* A few streams per round, then back to epoll: a burst of 256 streams due at once must not
     * keep new requests waiting (and stamped late) behind it. */
    int64_t now = mono_ns();
    for (int k = 0; k < 16 && heap_n && heap[0]->st.next_due <= now; k++) {
        conn *c = heap[0];
        heap_remove(c);
        stream_step(c, NULL);
        if (!c->streaming) {
            if (c->close_after && c->out.len == c->out.off)
                conn_close(c);
            else if (!handle_input(c))
                conn_close(c);
        }
    }
}

static void on_conn_event(conn *c, uint32_t events)
{
    if (c->dead)
        return;
    if (events & EPOLLOUT) {
        if (!flush_out(c)) {
            conn_close(c);
            return;
        }
        if (c->close_after && !c->streaming && c->out.len == c->out.off) {
            conn_close(c);
            return;
        }
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        on_readable(c);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    if (O.log && !(logf_ = fopen(O.log, "w"))) {
        perror(O.log);
        return 1;
    }
    int port;
    int rc = open_listener(&port);
    if (rc != 0)
        return rc;
    watch_events();
    if (O.port_file && !write_port_file(port))
        return 1;
    if (O.say) {
        printf("%s\n", O.say);
        fflush(stdout);
    }
    struct epoll_event evs[16];
    for (;;) {
        int n = epoll_wait(ep, evs, 16, -1);
        if (n < 0 && errno == EINTR)
            continue;
        wake_ns = mono_ns();
        wake_rt_ns = real_ns();
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &sfd) {
                if (logf_)
                    fclose(logf_);
                return 0;
            }
            if (p == &ls)
                accept_all();
            else if (p == &tfd)
                on_timer();
            else
                on_conn_event(p, evs[i].events);
        }
        conn_reap();
        arm();
    }
}
