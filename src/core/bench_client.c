/* bench_client.c - the libcurl-multi load generator (see bench_client.h). */
#include "core/bench_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/curl.h"
#include "base/utf8.h"
#include "core/bench_schedule.h"
#include "core/bench_sse.h"
#include "base/error.h"

#define PROGRESS_NS 200000000LL

typedef struct slot slot;

struct gm_bench_client {
    char base[GM_BENCH_URL_MAX];
    char url[GM_BENCH_URL_MAX + 32]; /* base + the API path */
    gm_bench_api api;
    struct curl_slist *headers;     /* the POSTs' */
    struct curl_slist *get_headers; /* GET /v1/models' */
    double timeout_s;
    bool https;
    size_t max_in_flight;
    CURLM *multi;
    int ep, tfd;
    int64_t curl_due_ns; /* curl's timeout, absolute; 0: none */
    /* What to send: one body per prompt. */
    char **bodies;
    size_t *body_len;
    unsigned *asked, *prompt_tokens;
    size_t nbodies, next_body;
    /* Slots: one per request in flight, each with its easy handle, reused. */
    slot **slots;
    size_t nslots;
    slot *free_list;
    /* The run in progress. */
    const gm_bench_run *run;
    gm_bench_point *point;
    int64_t wake_ns; /* when the loop last woke */
    size_t in_flight;
    uint64_t seq;
    bool unreached; /* the last GET /v1/models got no answer at all */
};

struct slot {
    gm_bench_client *c;
    CURL *easy;
    gm_sse sse;
    gm_bench_result r;
    bool warmup;
    bool busy; /* a request of it is with curl */
    bool status_checked;
    bool failed;       /* the outcome is decided (an error event, a malformed chunk) */
    int64_t t_recv;    /* the receive time of the piece being parsed */
    int64_t queued_ns; /* handed to curl */
    bool count_lag;    /* its lateness counts (not the first fill of a closed loop) */
    bool prereq_seen;  /* sent_ns is the request's actual send, not its hand-over to curl */
    int64_t freed_ns;  /* when it last finished in this run: the due time of its next request
                        * (closed loop); 0 before */
    gm_buf body;       /* an error body, or the start of an answer without events */
    char id[64];
    char err[256];
    char curl_err[CURL_ERROR_SIZE];
    double *itl; /* this request's gaps, kept until it is known to have completed */
    size_t nitl, capitl;
    bool usage_prompt;
    long long usage_completion, usage_prompt_tokens;
    uint64_t seq;
    slot *next;
};

const char *gm_bench_client_curl_version(void)
{
    return curl_version_info(CURLVERSION_NOW)->version;
}

const char *gm_bench_client_url(const gm_bench_client *c)
{
    return c->base;
}

/* ---- URL -------------------------------------------------------------------------------- */

int gm_bench_url_base(const char *url, char *buf, size_t cap, gm_error *err)
{
    if (!url || !*url)
        return gm_error_set(err, GM_EINVAL, "empty URL");
    size_t n = strlen(url);
    if (n >= GM_BENCH_URL_MAX || n >= cap)
        return gm_error_set(err, GM_EINVAL, "URL longer than %d bytes", GM_BENCH_URL_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f)
            return gm_error_set(err, GM_EINVAL, "URL \"%s\" has a space or a control character",
                                url);
    size_t scheme = strncasecmp(url, "http://", 7) == 0    ? 7
                    : strncasecmp(url, "https://", 8) == 0 ? 8
                                                           : 0;
    if (!scheme)
        return gm_error_set(err, GM_EINVAL, "URL \"%s\" must start with http:// or https://", url);
    if (url[scheme] == '\0' || url[scheme] == '/' || url[scheme] == ':')
        return gm_error_set(err, GM_EINVAL, "URL \"%s\" has no host", url);
    if (strpbrk(url + scheme, "?#"))
        return gm_error_set(err, GM_EINVAL, "URL \"%s\": give the base URL, without ? or #", url);
    memcpy(buf, url, n + 1);
    while (n > scheme && buf[n - 1] == '/')
        buf[--n] = '\0';
    if (n >= scheme + 3 && strcmp(buf + n - 3, "/v1") == 0)
        buf[n -= 3] = '\0';
    while (n > scheme && buf[n - 1] == '/')
        buf[--n] = '\0';
    return GM_OK;
}

/* ---- set-up ----------------------------------------------------------------------------- */

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    gm_bench_client *c = userp;
    (void)e;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(c->ep, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) |
                                       ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
                             .data.fd = s};
    if (epoll_ctl(c->ep, socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev) < 0) {
        /* The descriptor number was reused by curl after a close we did not see. */
        if (errno == EEXIST)
            epoll_ctl(c->ep, EPOLL_CTL_MOD, s, &ev);
        else if (errno == ENOENT)
            epoll_ctl(c->ep, EPOLL_CTL_ADD, s, &ev);
    }
    if (!socketp)
        curl_multi_assign(c->multi, s, c);
    return 0;
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    gm_bench_client *c = userp;
    (void)m;
    c->curl_due_ns = timeout_ms < 0 ? 0 : gm_clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    if (c->curl_due_ns == 0)
        c->curl_due_ns = 1; /* "now" must not read as "none" */
    return 0;
}

static bool add_header(struct curl_slist **list, const char *text)
{
    struct curl_slist *h = curl_slist_append(*list, text);
    if (!h)
        return false;
    *list = h;
    return true;
}

int gm_bench_client_new(const gm_bench_client_options *o, gm_bench_client **out, gm_error *err)
{
    *out = NULL;
    if (gm_curl_start(err) < 0)
        return GM_EIO;
    gm_bench_client *c = calloc(1, sizeof *c);
    if (!c)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    c->ep = c->tfd = -1;
    int rc = gm_bench_url_base(o->url, c->base, sizeof c->base, err);
    if (rc < 0)
        goto fail;
    c->https = strncasecmp(c->base, "https://", 8) == 0;
    c->api = o->api;
    snprintf(c->url, sizeof c->url, "%s%s", c->base, gm_bench_api_path(o->api));
    c->timeout_s = o->timeout_s;
    c->max_in_flight = o->max_in_flight && o->max_in_flight < GM_BENCH_IN_FLIGHT_MAX
                           ? o->max_in_flight
                           : GM_BENCH_IN_FLIGHT_MAX;
    /* Two header lists: the POSTs' (JSON in, an event stream out; "Expect:" turns off curl's
     * 100-continue wait before a large body, a long prompt, which would add up to a second to
     * the TTFT of a server that does not answer 100), and the GET of the model list's (only
     * the user's headers and the key). */
    const char *fixed[] = {"Content-Type: application/json", "Accept: text/event-stream",
                           "Expect:"};
    for (size_t i = 0; i < 3; i++)
        if (!add_header(&c->headers, fixed[i]))
            goto oom;
    for (size_t i = 0; i < o->nheaders; i++)
        if (!add_header(&c->headers, o->headers[i]) || !add_header(&c->get_headers, o->headers[i]))
            goto oom;
    if (o->api_key && *o->api_key) {
        gm_buf b;
        gm_buf_init(&b, 0);
        gm_buf_printf(&b, "Authorization: Bearer %s", o->api_key);
        bool ok = !b.failed && add_header(&c->headers, b.p) && add_header(&c->get_headers, b.p);
        /* The key is kept nowhere else: wipe this copy before freeing it. */
        if (b.p)
            memset(b.p, 0, b.len);
        gm_buf_free(&b);
        if (!ok)
            goto oom;
    }
    if (!(c->multi = curl_multi_init()))
        goto oom;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* Keep every connection a run may use, so they are reused rather than reopened. */
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)c->max_in_flight);
    c->ep = epoll_create1(EPOLL_CLOEXEC);
    c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = c->tfd};
    if (c->ep < 0 || c->tfd < 0 || epoll_ctl(c->ep, EPOLL_CTL_ADD, c->tfd, &ev) < 0) {
        rc = gm_error_set(err, GM_EIO, "bench: cannot set up the event loop: %s", strerror(errno));
        goto fail;
    }
    if (!(c->slots = calloc(c->max_in_flight, sizeof *c->slots)))
        goto oom;
    *out = c;
    return GM_OK;
oom:
    rc = gm_error_set(err, GM_ENOMEM, "out of memory");
fail:
    gm_bench_client_free(c);
    return rc;
}

static void free_bodies(gm_bench_client *c)
{
    for (size_t i = 0; i < c->nbodies; i++)
        free(c->bodies[i]);
    free(c->bodies);
    free(c->body_len);
    free(c->asked);
    free(c->prompt_tokens);
    c->bodies = NULL;
    c->body_len = NULL;
    c->asked = c->prompt_tokens = NULL;
    c->nbodies = 0;
}

void gm_bench_client_free(gm_bench_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (!s)
            continue;
        if (s->easy) {
            curl_multi_remove_handle(c->multi, s->easy);
            curl_easy_cleanup(s->easy);
        }
        gm_sse_free(&s->sse);
        gm_buf_free(&s->body);
        free(s->itl);
        free(s);
    }
    free(c->slots);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    curl_slist_free_all(c->headers);
    curl_slist_free_all(c->get_headers);
    if (c->ep >= 0)
        close(c->ep);
    if (c->tfd >= 0)
        close(c->tfd);
    free_bodies(c);
    free(c);
}

int gm_bench_client_prepare(gm_bench_client *c, const char *model, const gm_bench_prompts *ps,
                            unsigned output_tokens, gm_error *err)
{
    free_bodies(c);
    c->bodies = calloc(ps->n, sizeof *c->bodies);
    c->body_len = calloc(ps->n, sizeof *c->body_len);
    c->asked = calloc(ps->n, sizeof *c->asked);
    c->prompt_tokens = calloc(ps->n, sizeof *c->prompt_tokens);
    if (!c->bodies || !c->body_len || !c->asked || !c->prompt_tokens)
        goto oom;
    for (size_t i = 0; i < ps->n; i++) {
        unsigned want = ps->v[i].max_tokens ? ps->v[i].max_tokens : output_tokens;
        c->bodies[i] = gm_bench_request_body(c->api, model, &ps->v[i], want, &c->body_len[i]);
        if (!c->bodies[i])
            goto oom;
        c->nbodies = i + 1;
        c->asked[i] = want;
        c->prompt_tokens[i] = ps->v[i].input_tokens;
    }
    c->next_body = 0;
    return GM_OK;
oom:
    free_bodies(c);
    return gm_error_set(err, GM_ENOMEM, "out of memory building the requests");
}

/* ---- the models list -------------------------------------------------------------------- */

static size_t collect_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    gm_buf *b = ud;
    gm_buf_put(b, ptr, size * nmemb);
    return b->failed ? 0 : size * nmemb;
}

const char *gm_bench_reach_reason(int curl_code, long os_errno)
{
    switch ((CURLcode)curl_code) {
    case CURLE_COULDNT_RESOLVE_HOST:
        return "the host name does not resolve (DNS)";
    case CURLE_COULDNT_RESOLVE_PROXY:
        return "the proxy's host name does not resolve (DNS)";
    case CURLE_COULDNT_CONNECT:
        return os_errno == ECONNREFUSED ? "connection refused: nothing listens on that port"
               : os_errno == EHOSTUNREACH || os_errno == ENETUNREACH
                   ? "no route to the host (unreachable)"
               : os_errno == ETIMEDOUT ? "the connection timed out"
                                       : "the connection could not be made";
    case CURLE_OPERATION_TIMEDOUT:
        return "timed out: no answer in time";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
        return "the TLS handshake failed";
    case CURLE_GOT_NOTHING:
        return "the server closed the connection without answering";
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        return "the connection was reset";
    case CURLE_UNSUPPORTED_PROTOCOL:
        return "the URL's scheme is not supported (http or https)";
    default:
        return "it did not answer";
    }
}

bool gm_bench_client_unreached(const gm_bench_client *c)
{
    return c->unreached;
}

int gm_bench_client_first_model(gm_bench_client *c, char *buf, size_t cap, gm_error *err)
{
    c->unreached = false;
    char url[GM_BENCH_URL_MAX + 16];
    snprintf(url, sizeof url, "%s/v1/models", c->base);
    CURL *e = curl_easy_init();
    if (!e)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    gm_buf b;
    gm_buf_init(&b, 4u << 20);
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->get_headers);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
    CURLcode cc = curl_easy_perform(e);
    long status = 0, os_errno = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
    curl_easy_cleanup(e);
    int rc;
    if (cc != CURLE_OK && status == 0) {
        /* No answer at all: the server was not reached, which is what people need first. */
        c->unreached = true;
        rc = gm_error_set(err, cc == CURLE_OPERATION_TIMEDOUT ? GM_ETIMEDOUT : GM_EIO,
                          "cannot reach the server at %s: %s (GET %s: %s)", c->base,
                          gm_bench_reach_reason((int)cc, os_errno), url,
                          cerr[0] ? cerr : curl_easy_strerror(cc));
    } else if (cc != CURLE_OK) {
        rc = gm_error_set(err, GM_EIO, "GET %s failed: %s", url,
                          cerr[0] ? cerr : curl_easy_strerror(cc));
    } else if (status != 200) {
        char msg[256];
        gm_bench_error_text(b.p, b.len, msg, sizeof msg);
        rc = gm_error_set(err, GM_EIO, "GET %s answered HTTP %ld%s%s", url, status,
                          msg[0] ? ": " : "", msg);
    } else {
        gm_error e2 = {0};
        rc = gm_bench_models_first(b.p ? b.p : "", b.len, buf, cap, &e2);
        if (rc < 0)
            gm_error_set(err, rc, "GET %s: %s", url, e2.msg);
    }
    gm_buf_free(&b);
    return rc;
}

/* ---- one request ------------------------------------------------------------------------ */

static void keep_body(slot *s, const char *p, size_t n)
{
    size_t room = GM_BENCH_ERROR_BODY_MAX - s->body.len;
    if (s->body.len < GM_BENCH_ERROR_BODY_MAX)
        gm_buf_put(&s->body, p, n < room ? n : room);
}

static void set_err(slot *s, const char *msg)
{
    gm_utf8_repair(s->err, sizeof s->err, msg, strlen(msg));
}

static int on_event(void *arg, const char *event, const char *data, size_t len)
{
    slot *s = arg;
    gm_bench_chunk ch;
    gm_bench_chunk_parse(data, len, s->id[0] == '\0', &ch);
    if (ch.kind == GM_CHUNK_DATA && strcmp(event, "error") == 0) {
        ch.kind = GM_CHUNK_ERROR;
        snprintf(ch.error, sizeof ch.error, "an error event");
    }
    switch (ch.kind) {
    case GM_CHUNK_DONE:
        return 0;
    case GM_CHUNK_ERROR:
        s->r.outcome = GM_BENCH_STREAM_ERROR;
        s->failed = true;
        set_err(s, ch.error);
        return 1;
    case GM_CHUNK_MALFORMED: {
        s->r.outcome = GM_BENCH_NOT_SSE;
        s->failed = true;
        char msg[300];
        snprintf(msg, sizeof msg, "a chunk that is not JSON: %s", ch.error);
        set_err(s, msg);
        return 1;
    }
    case GM_CHUNK_DATA:
        break;
    }
    if (ch.id[0] && !s->id[0])
        snprintf(s->id, sizeof s->id, "%s", ch.id);
    if (ch.content_bytes) {
        if (!s->r.first_ns) {
            s->r.first_ns = s->t_recv;
        } else if (!s->warmup) {
            if (s->nitl == s->capitl) {
                size_t cap = s->capitl ? s->capitl * 2 : 256;
                double *n = realloc(s->itl, cap * sizeof *n);
                if (n) {
                    s->itl = n;
                    s->capitl = cap;
                }
            }
            if (s->nitl < s->capitl)
                s->itl[s->nitl++] = (double)(s->t_recv - s->r.last_ns) / 1e6;
        }
        s->r.last_ns = s->t_recv;
        s->r.chunks++;
        if (s->r.asked_tokens && s->r.chunks > gm_bench_chunks_max(s->r.asked_tokens)) {
            /* A stream that runs on past max_tokens would hold its request (and the
             * benchmark) until the timeout, its gaps filling memory: cut it here. */
            s->r.outcome = GM_BENCH_TOO_LONG;
            s->failed = true;
            char msg[200];
            snprintf(msg, sizeof msg,
                     "the stream went on past %llu content chunks for %u tokens asked (cut)",
                     (unsigned long long)gm_bench_chunks_max(s->r.asked_tokens), s->r.asked_tokens);
            set_err(s, msg);
            return 1;
        }
    }
    if (ch.completion_tokens >= 0)
        s->usage_completion = ch.completion_tokens;
    if (ch.prompt_tokens >= 0)
        s->usage_prompt_tokens = ch.prompt_tokens;
    return 0;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    slot *s = ud;
    size_t n = size * nmemb;
    gm_bench_client *c = s->c;
    /* The piece was in the socket when the loop woke up to read it: it is stamped with that
     * wake-up, not with the moment curl got to it, so the 256th stream of a burst is not
     * charged for the parsing of the 255 before it (wake_to_receive reports that work). */
    int64_t t_cb = gm_clock_mono_ns();
    /* Only a wake-up after the request went out can have found its answer waiting: on a
     * loaded machine one long pass may send a request and read its answer, and stamping that
     * with the pass's start would give a TTFT of 0. */
    s->t_recv = c->wake_ns && c->wake_ns >= s->r.sent_ns && c->wake_ns <= t_cb ? c->wake_ns : t_cb;
    if (!s->status_checked) {
        long status = 0;
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
        s->r.http_status = (int16_t)(status > 0 && status < 1000 ? status : 0);
        s->status_checked = true;
    }
    if (c->point && !s->warmup)
        c->point->bytes_received += n;
    if (s->r.http_status != 200) {
        keep_body(s, ptr, n);
        return n;
    }
    if (s->failed)
        return 0;
    if (s->sse.events == 0 && s->body.len < 256)
        keep_body(s, ptr, n < 256 ? n : 256); /* what it was, should it never become a stream */
    int rc = gm_sse_feed(&s->sse, ptr, n, on_event, s);
    if (rc == GM_EPARSE || rc == GM_ENOMEM) {
        s->r.outcome = GM_BENCH_NOT_SSE;
        s->failed = true;
        set_err(s, "the answer is not an event stream (a line over the limit)");
    }
    if (c->point && !s->warmup) {
        int64_t t = gm_clock_mono_ns();
        gm_bench_dist_add(&c->point->recv_parse_us, (double)(t - t_cb) / 1e3);
        if (c->wake_ns && t_cb >= c->wake_ns)
            gm_bench_dist_add(&c->point->wake_recv_us, (double)(t_cb - c->wake_ns) / 1e3);
    }
    return s->failed ? 0 : n;
}

/* libcurl calls this when the request's connection is ready (opened or reused), right before
 * it writes the request: the send time of the request ("just before the POST"). What came
 * before (queueing behind other requests, opening a connection) is the client's lateness,
 * counted as schedule lag, not as the server's latency. */
static int prereq_cb(void *ud, char *ip, char *local_ip, int port, int local_port)
{
    slot *s = ud;
    (void)ip;
    (void)local_ip;
    (void)port;
    (void)local_port;
    s->r.sent_ns = gm_clock_mono_ns();
    s->prereq_seen = true;
    return CURL_PREREQFUNC_OK;
}

static slot *slot_get(gm_bench_client *c, gm_error *err)
{
    if (c->free_list) {
        slot *s = c->free_list;
        c->free_list = s->next;
        return s;
    }
    if (c->nslots >= c->max_in_flight)
        return NULL;
    slot *s = calloc(1, sizeof *s);
    if (!s || !(s->easy = curl_easy_init())) {
        free(s);
        gm_error_set(err, GM_ENOMEM, "out of memory");
        return NULL;
    }
    s->c = c;
    gm_sse_init(&s->sse, 0);
    gm_buf_init(&s->body, 0);
    CURL *e = s->easy;
    curl_easy_setopt(e, CURLOPT_URL, c->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e, CURLOPT_PRIVATE, s);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->curl_err);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, prereq_cb);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, s);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     c->https ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    if (c->timeout_s > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(c->timeout_s * 1000));
    c->slots[c->nslots++] = s;
    return s;
}

/* Sends the next request on a free slot, due at sched_ns (its lateness counted when
 * count_lag). False when no slot is free. */
static bool send_one(gm_bench_client *c, int64_t sched_ns, bool count_lag, gm_error *err)
{
    slot *s = slot_get(c, err);
    if (!s)
        return false;
    size_t b = c->next_body++ % c->nbodies;
    memset(&s->r, 0, sizeof s->r);
    gm_sse_reset(&s->sse);
    s->body.len = 0;
    s->body.failed = false;
    s->warmup = c->run->warmup;
    s->status_checked = s->failed = false;
    s->id[0] = s->err[0] = s->curl_err[0] = '\0';
    s->nitl = 0;
    s->usage_completion = s->usage_prompt_tokens = -1;
    s->seq = c->seq++;
    s->r.asked_tokens = c->asked[b];
    s->r.prompt_tokens = c->prompt_tokens[b];
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, c->bodies[b]);
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len[b]);
    s->r.sched_ns = sched_ns;
    s->r.sent_ns = s->queued_ns = gm_clock_mono_ns(); /* until curl says when it sends it */
    s->prereq_seen = false;
    s->count_lag = count_lag;
    if (curl_multi_add_handle(c->multi, s->easy) != CURLM_OK) {
        gm_error_set(err, GM_EIO, "libcurl refused a request");
        s->next = c->free_list;
        c->free_list = s;
        return false;
    }
    c->in_flight++;
    s->busy = true;
    if (c->point && !s->warmup) {
        if (!c->point->start_ns)
            c->point->start_ns = s->r.sent_ns;
        if (c->in_flight > c->point->peak_in_flight)
            c->point->peak_in_flight = c->in_flight;
    }
    return true;
}

static void trace_line(gm_bench_client *c, const slot *s)
{
    FILE *f = c->run->trace;
    char key[32];
    gm_bench_outcome_key((gm_bench_outcome)s->r.outcome, s->r.http_status, key, sizeof key);
    long connects = 0;
    curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &connects);
    json_t *o = json_pack(
        "{s:I, s:I, s:s, s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:s, "
        "s:s}",
        "point", (json_int_t)c->run->trace_point, "seq", (json_int_t)s->seq, "id", s->id,
        "sched_ns", (json_int_t)s->r.sched_ns, "queued_ns", (json_int_t)s->queued_ns, "sent_ns",
        (json_int_t)s->r.sent_ns, "new_connection", connects > 0, "first_ns",
        (json_int_t)s->r.first_ns, "last_ns", (json_int_t)s->r.last_ns, "done_ns",
        (json_int_t)s->r.done_ns, "output_tokens", (json_int_t)s->r.output_tokens, "chunks",
        (json_int_t)s->r.chunks, "prompt_tokens", (json_int_t)s->r.prompt_tokens, "status",
        (json_int_t)s->r.http_status, "usage", s->r.output_from_usage, "usage_distrusted",
        s->r.usage_distrusted, "outcome", key, "error", s->err);
    if (o) {
        json_dumpf(o, f, JSON_COMPACT);
        fputc('\n', f);
        json_decref(o);
    }
}

/* A transfer ended with cc: decides how the request went and keeps it. */
static void finish(gm_bench_client *c, slot *s, CURLcode cc)
{
    int64_t now = gm_clock_mono_ns();
    s->r.done_ns = now;
    curl_multi_remove_handle(c->multi, s->easy);
    c->in_flight--;
    s->busy = false;
    if (!s->status_checked) {
        long status = 0;
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
        s->r.http_status = (int16_t)(status > 0 && status < 1000 ? status : 0);
    }
    if (s->failed) {
        /* decided while streaming */
    } else if (cc == CURLE_OPERATION_TIMEDOUT) {
        s->r.outcome = GM_BENCH_TIMEOUT;
        set_err(s, s->curl_err[0] ? s->curl_err : "timed out");
    } else if (cc != CURLE_OK && !(s->r.http_status && s->r.http_status != 200)) {
        s->r.outcome = GM_BENCH_CONNECTION;
        char msg[400];
        snprintf(msg, sizeof msg, "%s%s", s->curl_err[0] ? s->curl_err : curl_easy_strerror(cc),
                 s->r.chunks ? " (after some output)" : "");
        set_err(s, msg);
    } else if (s->r.http_status != 200) {
        s->r.outcome = GM_BENCH_HTTP_ERROR;
        gm_bench_error_text(s->body.p, s->body.len, s->err, sizeof s->err);
    } else {
        gm_sse_finish(&s->sse, on_event, s, NULL);
        if (s->failed) {
            /* the last event was an error */
        } else if (s->sse.events == 0) {
            s->r.outcome = GM_BENCH_NOT_SSE;
            char head[200], msg[256];
            gm_bench_error_text(s->body.p, s->body.len, head, sizeof head);
            snprintf(msg, sizeof msg, "the answer is not an event stream%s%s", head[0] ? ": " : "",
                     head);
            set_err(s, msg);
        } else if (s->r.chunks == 0) {
            s->r.outcome = GM_BENCH_NO_OUTPUT;
            set_err(s, "the stream ended without any content");
        } else {
            s->r.outcome = GM_BENCH_OK;
        }
    }
    /* The server's count only when the stream bears it out (gm_bench_usage_trusted); else the
     * chunks, and the point says so. */
    s->r.output_tokens = s->r.chunks;
    if (s->usage_completion >= 0) {
        uint64_t claimed = (uint64_t)s->usage_completion;
        if (gm_bench_usage_trusted(claimed, s->r.chunks, s->r.asked_tokens)) {
            s->r.output_tokens = claimed;
            s->r.output_from_usage = true;
        } else {
            s->r.usage_distrusted = true;
            s->r.usage_claimed = claimed;
        }
    }
    if (s->usage_prompt_tokens >= 0) {
        s->r.prompt_tokens = (uint64_t)s->usage_prompt_tokens;
        s->r.prompt_from_usage = true;
    }
    gm_bench_point *p = c->point;
    if (p && !s->warmup) {
        if (s->count_lag)
            gm_bench_dist_add(&p->lag_ms, (double)(s->r.sent_ns - s->r.sched_ns) / 1e6);
        if (s->r.outcome == GM_BENCH_OK)
            for (size_t i = 0; i < s->nitl; i++)
                gm_bench_dist_add(&p->itl_ms, s->itl[i]);
        else
            gm_bench_point_error_example(p, &s->r, s->err);
        gm_bench_point_add(p, &s->r);
        if (now > p->end_ns)
            p->end_ns = now;
        if (c->run->trace)
            trace_line(c, s);
    }
    s->freed_ns = now;
    s->next = c->free_list;
    c->free_list = s;
}

static void drain(gm_bench_client *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        slot *s = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        CURLcode cc = m->data.result;
        if (s)
            finish(c, s, cc);
    }
}

/* Drops every request in flight (Ctrl-C): not counted. */
static void cancel_all(gm_bench_client *c)
{
    for (size_t i = 0; i < c->nslots; i++) {
        slot *s = c->slots[i];
        if (!s->busy)
            continue;
        s->busy = false;
        curl_multi_remove_handle(c->multi, s->easy);
        s->next = c->free_list;
        c->free_list = s;
    }
    c->in_flight = 0;
}

static void arm(gm_bench_client *c, int64_t at_ns)
{
    struct itimerspec its = {0};
    if (at_ns > 0) {
        its.it_value.tv_sec = (time_t)(at_ns / 1000000000);
        its.it_value.tv_nsec = (long)(at_ns % 1000000000);
    }
    timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t min_due(int64_t a, int64_t b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

/* Where a run stands: its schedule, its limits, what it has sent. */
typedef struct run_state {
    gm_bench_schedule sched;
    int old_slack;
    int64_t cpu0, wall0, start;
    int64_t end_send; /* no request sent from then on; 0 when the run is a count of requests */
    int64_t next_arrival, next_progress;
    size_t limit, sent;
    bool more; /* requests left to send */
} run_state;

static void run_setup(gm_bench_client *c, const gm_bench_run *r, gm_bench_point *p, run_state *st)
{
    c->run = r;
    c->point = r->warmup ? NULL : p;
    c->in_flight = 0;
    c->wake_ns = 0;
    if (p) {
        p->open_loop = r->open_loop;
        p->concurrency = r->concurrency;
        p->rate = r->rate;
        p->burstiness = r->burstiness;
    }
    /* Timers to the nanosecond: the default 50 us slack would make every arrival late. */
    st->old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    gm_bench_schedule_init(&st->sched, r->rate, r->burstiness, r->seed);
    st->cpu0 = thread_cpu_ns();
    st->wall0 = gm_clock_mono_ns();
    st->start = gm_clock_mono_ns();
    st->end_send = r->requests ? 0 : st->start + (int64_t)(r->duration_s * 1e9);
    st->limit = r->requests ? r->requests : GM_BENCH_REQUESTS_MAX;
    if (st->limit > GM_BENCH_REQUESTS_MAX && !r->warmup)
        st->limit = GM_BENCH_REQUESTS_MAX;
    st->sent = 0;
    st->more = false;
    st->next_arrival =
        r->open_loop ? st->start + (int64_t)(gm_bench_schedule_next(&st->sched) * 1e9) : 0;
    for (size_t i = 0; i < c->nslots; i++)
        c->slots[i]->freed_ns = 0;
    st->next_progress = st->start + PROGRESS_NS;
}

static void run_teardown(gm_bench_client *c, const gm_bench_run *r, gm_bench_point *p,
                         const run_state *st, int rc)
{
    arm(c, 0);
    if (st->old_slack > 0)
        prctl(PR_SET_TIMERSLACK, (unsigned long)st->old_slack, 0, 0, 0);
    if (p && !r->warmup) {
        p->cpu_s = (double)(thread_cpu_ns() - st->cpu0) / 1e9;
        p->cpu_wall_s = (double)(gm_clock_mono_ns() - st->wall0) / 1e9;
    }
    if (r->progress && rc == GM_OK)
        r->progress(r->arg, p, st->sent, r->requests,
                    (double)(gm_clock_mono_ns() - st->start) / 1e9);
    c->run = NULL;
    c->point = NULL;
}

/* Ctrl-C: drops what is in flight; the point keeps what ended before. */
static void run_interrupt(gm_bench_client *c, gm_bench_point *p, int64_t now)
{
    cancel_all(c);
    if (p) {
        p->interrupted = true;
        if (p->start_ns && !p->end_ns)
            p->end_ns = now;
    }
}

/* Lets curl act on its timers (and start what was just added), then keeps what ended. */
static void run_curl_timers(gm_bench_client *c, int64_t wake_ns)
{
    int running;
    c->curl_due_ns = 0;
    c->wake_ns = wake_ns;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    drain(c);
}

/* Open loop: sends the arrivals due by now while slots last. Returns the error of a send that
 * failed, else GM_OK. */
static int send_open_loop(gm_bench_client *c, run_state *st, int64_t now, gm_error *err)
{
    while (st->more && st->next_arrival <= now && c->in_flight < c->max_in_flight) {
        if (!send_one(c, st->next_arrival, true, err))
            return err && err->code ? err->code : GM_OK;
        st->sent++;
        st->next_arrival = st->start + (int64_t)(gm_bench_schedule_next(&st->sched) * 1e9);
        st->more = st->sent < st->limit && (!st->end_send || st->next_arrival < st->end_send);
    }
    return GM_OK;
}

/* Closed loop: fills the free places of the concurrency. */
static int send_closed_loop(gm_bench_client *c, const gm_bench_run *r, run_state *st, int64_t now,
                            gm_error *err)
{
    while (st->more && c->in_flight < r->concurrency) {
        /* Due when its slot freed; the first fill was due at the start, and its
         * ramp (one request after another) is not lateness. */
        bool refill = c->free_list && c->free_list->freed_ns;
        int64_t due = refill ? c->free_list->freed_ns : st->start;
        if (!send_one(c, due, refill, err))
            return err && err->code ? err->code : GM_OK;
        st->sent++;
        st->more = st->sent < st->limit && (!st->end_send || now < st->end_send);
    }
    return GM_OK;
}

/* Sleeps until a socket is ready or the next deadline (curl's, the next arrival, the end of
 * sending, progress, the stop check), then hands curl what happened. */
static int run_wait(gm_bench_client *c, const gm_bench_run *r, const run_state *st, int64_t now,
                    gm_error *err)
{
    /* Ask curl for its next deadline rather than trusting the last timer callback: curl
     * calls back only when the deadline changes, so one zeroed here after an early
     * wake-up (its figure is in whole milliseconds) would never come back, and a run
     * whose transfers wait on a timer alone would sleep forever. */
    long curl_ms = -1;
    if (curl_multi_timeout(c->multi, &curl_ms) == CURLM_OK)
        c->curl_due_ns = curl_ms < 0 ? 0 : gm_clock_mono_ns() + (int64_t)curl_ms * 1000000;
    if (curl_ms == 0)
        c->curl_due_ns = 1; /* due now: "now" must not read as "none" */
    int64_t due = c->curl_due_ns;
    if (r->open_loop && st->more && c->in_flight < c->max_in_flight)
        due = min_due(due, st->next_arrival);
    if (!r->open_loop && st->end_send && st->more)
        due = min_due(due, st->end_send);
    if (r->progress)
        due = min_due(due, st->next_progress);
    if (r->stop) /* a signal just before the wait is seen within 100 ms */
        due = min_due(due, now + 100000000LL);
    arm(c, due);
    /* Few events per wake-up: each piece is stamped with the wake-up that found it, so a
     * wake-up that handed over hundreds of sockets would stamp the data arriving while they are
     * processed only at the next one, late by the whole batch. Eight keep that under a few
     * hundred microseconds; an epoll_wait costs about one. */
    struct epoll_event evs[8];
    int n = epoll_wait(c->ep, evs, sizeof evs / sizeof *evs, -1);
    if (n < 0 && errno != EINTR)
        return gm_error_set(err, GM_EIO, "bench: epoll_wait: %s", strerror(errno));
    c->wake_ns = gm_clock_mono_ns();
    for (int i = 0; i < n; i++) {
        int running;
        if (evs[i].data.fd == c->tfd) {
            uint64_t ticks;
            if (read(c->tfd, &ticks, sizeof ticks) < 0) {
                /* nothing due after all (disarmed meanwhile) */
            }
            continue;
        }
        int flags = ((evs[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                    ((evs[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                    ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(c->multi, evs[i].data.fd, flags, &running);
    }
    drain(c);
    return GM_OK;
}

int gm_bench_client_run(gm_bench_client *c, const gm_bench_run *r, gm_bench_point *p, gm_error *err)
{
    if (!c->nbodies)
        return gm_error_set(err, GM_ESTATE, "bench: nothing prepared to send");
    run_state st;
    run_setup(c, r, p, &st);
    int rc = GM_OK;
    for (;;) {
        int64_t now = gm_clock_mono_ns();
        if (r->stop && *r->stop) {
            run_interrupt(c, p, now);
            break;
        }
        if (c->curl_due_ns && c->curl_due_ns <= now)
            run_curl_timers(c, now);
        /* Send what is due. */
        st.more = st.sent < st.limit &&
                  (!st.end_send || (r->open_loop ? st.next_arrival : now) < st.end_send);
        size_t sent_before = st.sent;
        int sent_rc =
            r->open_loop ? send_open_loop(c, &st, now, err) : send_closed_loop(c, r, &st, now, err);
        if (sent_rc != GM_OK)
            rc = sent_rc;
        if (rc < 0)
            break;
        if (st.sent != sent_before) {
            /* Start the new transfers now rather than on the next wake-up. */
            run_curl_timers(c, gm_clock_mono_ns());
            continue;
        }
        if (c->in_flight == 0 && !st.more)
            break;
        if (r->progress && now >= st.next_progress) {
            r->progress(r->arg, p, st.sent - c->in_flight, r->requests,
                        (double)(now - st.start) / 1e9);
            st.next_progress = now + PROGRESS_NS;
        }
        int wait_rc = run_wait(c, r, &st, now, err);
        if (wait_rc != GM_OK) {
            rc = wait_rc;
            break;
        }
    }
    run_teardown(c, r, p, &st, rc);
    return rc;
}
