/* server_harness.h - the real daemon in-process for the transport tests (test_http.c,
 * test_ws.c): gm_server_run on a thread of its own (two simulated GPUs, no database, an
 * ephemeral loopback port read from --port-file), stopped by SIGTERM as a service manager would,
 * and a raw-socket client that reads HTTP/1.1 responses and leaves whatever follows them (a
 * pipelined answer, WebSocket frames) in its buffer. Include after <cmocka.h>. Every wait is
 * bounded by HX_TIMEOUT_MS, a guard against a hang, never a measure of speed. */
#ifndef GM_TEST_SERVER_HARNESS_H
#define GM_TEST_SERVER_HARNESS_H

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "base/clock.h"
#include "server/config.h"
#include "server/server.h"

#define HX_TIMEOUT_MS 10000 /* generous: the sanitizer build on a shared machine is slow */

/* ---- the daemon --------------------------------------------------------------------------- */

typedef struct hx_server {
    pthread_t thread;
    gm_serve_config cfg;
    gm_error err;
    int rc;
    atomic_bool done;
    char dir[64];
    char port_file[128];
    unsigned port;
} hx_server;

static void *hx_server_main(void *arg)
{
    hx_server *s = arg;
    s->rc = gm_server_run(&s->cfg, &s->err);
    atomic_store(&s->done, true);
    return NULL;
}

/* Starts the daemon with the common flags plus extra (n of them); returns 0 once it listens, -1
 * (with the reason on stderr) when it cannot start. */
static int hx_server_start(hx_server *s, const char *const *extra, int n)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/gm-unit-srv-XXXXXX");
    if (!mkdtemp(s->dir))
        return -1;
    snprintf(s->port_file, sizeof s->port_file, "%s/port", s->dir);
    const char *base[] = {"serve",      "--listen",        "127.0.0.1:0", "--port-file",
                          s->port_file, "--simulate",      "2",           "--db",
                          "none",       "--poll-interval", "100",         "--history",
                          "60",         "--pod-resources", "none"};
    char *argv[32];
    int argc = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        argv[argc++] = (char *)base[i];
    for (int i = 0; i < n && argc < 31; i++)
        argv[argc++] = (char *)extra[i];
    argv[argc] = NULL;
    if (gm_serve_config_load(&s->cfg, argc, argv, NULL, &s->err) != GM_OK) {
        fprintf(stderr, "config: %s\n", s->err.msg);
        return -1;
    }
    /* The daemon's loop takes SIGTERM from a signalfd: every thread (this one and, by
     * inheritance, the server's) must block it, or kill() would end the process. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (pthread_create(&s->thread, NULL, hx_server_main, s) != 0)
        return -1;
    int64_t deadline = gm_clock_mono_ms() + 30000; /* the first sample comes before listening */
    while (gm_clock_mono_ms() < deadline) {
        if (atomic_load(&s->done)) {
            pthread_join(s->thread, NULL);
            fprintf(stderr, "gm_server_run returned %d: %s\n", s->rc, s->err.msg);
            return -1;
        }
        FILE *f = fopen(s->port_file, "r");
        if (f) {
            char line[32] = "";
            bool whole = fgets(line, sizeof line, f) && strchr(line, '\n');
            fclose(f);
            if (whole && sscanf(line, "%u", &s->port) == 1 && s->port)
                return 0;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    fprintf(stderr, "the daemon did not listen within 30 s\n");
    return -1;
}

/* SIGTERM, join, and the daemon's verdict: GM_OK after an orderly shutdown. */
static int hx_server_stop(hx_server *s)
{
    if (!atomic_load(&s->done))
        kill(getpid(), SIGTERM);
    pthread_join(s->thread, NULL);
    unlink(s->port_file); /* removed by the daemon itself after GM_OK */
    rmdir(s->dir);
    if (s->rc != GM_OK)
        fprintf(stderr, "gm_server_run returned %d: %s\n", s->rc, s->err.msg);
    return s->rc;
}

/* ---- a raw client ------------------------------------------------------------------------- */

typedef struct hx_conn {
    int fd;
    char *buf; /* bytes received and not yet parsed */
    size_t len, cap;
    bool eof; /* the server closed (or reset) the connection */
} hx_conn;

static void hx_connect(hx_conn *c, unsigned port)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof a), 0);
}

static void hx_close(hx_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

/* Sends everything; a server that already closed after refusing the request is not an error
 * here (what it answered is what the test checks). */
static void hx_send(hx_conn *c, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        p += k;
        n -= (size_t)k;
    }
}

static void hx_send_str(hx_conn *c, const char *s)
{
    hx_send(c, s, strlen(s));
}

/* Reads what arrives within timeout_ms onto the buffer: true when bytes came. */
static bool hx_fill(hx_conn *c, int timeout_ms)
{
    if (c->eof)
        return false;
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int r = poll(&pfd, 1, timeout_ms);
    if (r <= 0)
        return false;
    if (c->cap - c->len < 65536) {
        c->cap = c->cap * 2 + 65536;
        c->buf = realloc(c->buf, c->cap + 1);
        assert_non_null(c->buf);
    }
    ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (k <= 0) {
        c->eof = true;
        return false;
    }
    c->len += (size_t)k;
    c->buf[c->len] = '\0';
    return true;
}

/* Reads until the server closes; false when it is still open after the guard. */
static bool hx_wait_closed(hx_conn *c)
{
    int64_t deadline = gm_clock_mono_ms() + HX_TIMEOUT_MS;
    while (!c->eof && gm_clock_mono_ms() < deadline)
        hx_fill(c, 200);
    return c->eof;
}

/* Drops the first n bytes of the buffer. */
static void hx_consume(hx_conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
    if (c->buf)
        c->buf[c->len] = '\0';
}

typedef struct hx_resp {
    int status;
    char *head; /* status line and headers, NUL-terminated */
    char *body; /* NUL-terminated */
    size_t body_len;
} hx_resp;

static void hx_resp_free(hx_resp *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* A header's value (first occurrence, trimmed) into out; NULL when absent. */
static const char *hx_header(const hx_resp *r, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nl) != 0 || line[nl] != ':')
            continue;
        const char *v = line + nl + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strcspn(v, "\r");
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
            vl--;
        snprintf(out, outlen, "%.*s", (int)vl, v);
        return out;
    }
    return NULL;
}

/* Takes one whole response off the buffer, reading no more: false when it is not all there.
 * head_only: the answer to a HEAD (a Content-Length but no body). */
static bool hx_parse_resp(hx_conn *c, hx_resp *r, bool head_only)
{
    memset(r, 0, sizeof *r);
    if (!c->buf || c->len < 12 || strncmp(c->buf, "HTTP/1.", 7) != 0)
        return false;
    char *end = strstr(c->buf, "\r\n\r\n");
    if (!end)
        return false;
    size_t hl = (size_t)(end - c->buf) + 4;
    int status = atoi(c->buf + 9);
    r->head = strndup(c->buf, hl - 2);
    assert_non_null(r->head);
    char v[32];
    size_t bl = 0;
    bool bodiless = head_only || status < 200 || status == 204 || status == 304;
    if (!bodiless && hx_header(r, "Content-Length", v, sizeof v))
        bl = strtoul(v, NULL, 10);
    if (c->len - hl < bl) {
        hx_resp_free(r);
        return false;
    }
    r->status = status;
    r->body = malloc(bl + 1);
    assert_non_null(r->body);
    memcpy(r->body, c->buf + hl, bl);
    r->body[bl] = '\0';
    r->body_len = bl;
    hx_consume(c, hl + bl);
    return true;
}

/* Reads one response (waiting for it, within the guard). */
static bool hx_read_resp(hx_conn *c, hx_resp *r, bool head_only)
{
    int64_t deadline = gm_clock_mono_ms() + HX_TIMEOUT_MS;
    for (;;) {
        if (hx_parse_resp(c, r, head_only))
            return true;
        if (c->eof || gm_clock_mono_ms() >= deadline)
            return false;
        hx_fill(c, 200);
    }
}

/* One request on a fresh connection, answered and then closed by the server (a refusal, or
 * Connection: close): the status of the first answer, -1 when none came; *closed says whether
 * the server closed. The answer goes to r when r is not NULL. */
static int hx_exchange(unsigned port, const void *data, size_t n, hx_resp *r, bool *closed)
{
    hx_conn c;
    hx_resp tmp;
    hx_connect(&c, port);
    hx_send(&c, data, n);
    bool eof = hx_wait_closed(&c);
    if (closed)
        *closed = eof;
    int status = hx_parse_resp(&c, &tmp, false) ? tmp.status : -1;
    if (r && status > 0)
        *r = tmp;
    else if (status > 0)
        hx_resp_free(&tmp);
    hx_close(&c);
    return status;
}

#endif
