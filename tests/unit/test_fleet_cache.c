/* test_fleet_cache.c - the daemon's fleet thread against a small Prometheus in a thread of the
 * test (it answers the fleet's queries by their text and counts them): a request answered from one
 * refresh, the answer kept for the cache time (no new query) and refreshed after it, other
 * thresholds and a choice rendered from the same answers, a failing Prometheus answered 502 and
 * kept too, a timeout 504, requests given up while queued, and a stop that answers what waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "base/clock.h"
#include "server/fleet_cache.h"

/* ---- a small Prometheus: its answers by the text of the query ------------------------------- */

static const char up_doc[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
    "{\"metric\":{\"instance\":\"a:1\",\"job\":\"gpumon\"},\"value\":[100,\"1\"]},"
    "{\"metric\":{\"instance\":\"b:1\",\"job\":\"gpumon\"},\"value\":[100,\"1\"]}]}}";
static const char ts_doc[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
    "{\"metric\":{\"instance\":\"a:1\"},\"value\":[100,\"99\"]}]}}";
static const char names_doc[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}";
#define S(name, inst, host, gpu, v)                                                               \
    "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_" name "\",\"instance\":\"" inst "\",\"gpu\":\"" gpu \
    "\",\"Hostname\":\"" host "\"},\"value\":[100,\"" v "\"]}"
/* clang-format off */
/* node-a: one GPU at 20 %; node-b: one at 5 %. Both idle below 30 %. */
static const char ids_doc[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
    "{\"metric\":{\"instance\":\"a:1\",\"gpu\":\"0\",\"Hostname\":\"node-a\"},\"value\":[100,\"20\"]},"
    "{\"metric\":{\"instance\":\"b:1\",\"gpu\":\"0\",\"Hostname\":\"node-b\"},\"value\":[100,\"5\"]}"
    "]}}";
static const char readings_doc[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
    S("FB_USED", "a:1", "node-a", "0", "1") "," S("FB_FREE", "a:1", "node-a", "0", "99") ","
    S("FB_USED", "b:1", "node-b", "0", "1") "," S("FB_FREE", "b:1", "node-b", "0", "99")
    "]}}";
/* clang-format on */

enum { OK, FAIL, SILENT };

typedef struct prom {
    int fd, port;
    atomic_int mode;
    atomic_int queries;
    atomic_bool done;
    pthread_t thread;
} prom;

static void reply(int c, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: "
                     "%zu\r\nConnection: close\r\n\r\n",
                     status, strlen(body));
    (void)!send(c, head, (size_t)n, MSG_NOSIGNAL);
    (void)!send(c, body, strlen(body), MSG_NOSIGNAL);
}

static void *prom_main(void *arg)
{
    prom *p = arg;
    while (!atomic_load(&p->done)) {
        int c = accept(p->fd, NULL, NULL);
        if (c < 0)
            break;
        char req[4096] = "";
        size_t n = 0;
        while (n + 1 < sizeof req && !strstr(req, "\r\n\r\n")) {
            ssize_t r = read(c, req + n, sizeof req - 1 - n);
            if (r <= 0)
                break;
            n += (size_t)r;
            req[n] = '\0';
        }
        atomic_fetch_add(&p->queries, 1);
        int mode = atomic_load(&p->mode);
        if (mode == SILENT) {
            char b[64];
            while (read(c, b, sizeof b) > 0)
                ;
        } else if (mode == FAIL) {
            reply(c, 503,
                  "{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"TSDB is "
                  "closing\"}");
        } else {
            const char *line_end = strstr(req, "\r\n");
            size_t ll = line_end ? (size_t)(line_end - req) : n;
            const char *body = memmem(req, ll, "timestamp", 9)   ? ts_doc
                               : memmem(req, ll, "count", 5)     ? names_doc
                               : memmem(req, ll, "__name__", 8)  ? readings_doc
                               : memmem(req, ll, "modelName", 9) ? ids_doc
                                                                 : up_doc;
            reply(c, 200, body);
        }
        close(c);
    }
    return NULL;
}

static void prom_start(prom *p)
{
    memset(p, 0, sizeof *p);
    p->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(p->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(p->fd, 16), 0);
    socklen_t len = sizeof a;
    getsockname(p->fd, (struct sockaddr *)&a, &len);
    p->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&p->thread, NULL, prom_main, p), 0);
}

static void prom_stop(prom *p)
{
    atomic_store(&p->done, true);
    shutdown(p->fd, SHUT_RDWR);
    pthread_join(p->thread, NULL);
    close(p->fd);
}

/* ---- the fleet thread ---------------------------------------------------------------------- */

static atomic_int wakes;

static void on_wake(void *arg)
{
    (void)arg;
    atomic_fetch_add(&wakes, 1);
}

static gm_fleet_cache *start(const prom *p, double ttl_s, double timeout_s)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", p->port);
    gm_fleet_cache_options o = {
        .url = url, .job = "gpumon", .ttl_s = ttl_s, .timeout_s = timeout_s, .wake = on_wake};
    gm_fleet_cache *c = NULL;
    gm_error err = {0};
    if (gm_fleet_cache_start(&o, &c, &err) < 0)
        fail_msg("start: %s", err.msg);
    assert_string_equal(gm_fleet_cache_url(c), url);
    return c;
}

static gm_worker_job *job(double max_util, unsigned gpus)
{
    gm_worker_job *j = gm_worker_job_new(GM_JOB_FLEET);
    j->fleet = (gm_fleet_thresholds){max_util, 50};
    j->fleet_gpus = gpus;
    return j;
}

static void wait_done(gm_worker_job *j)
{
    for (int i = 0; i < 1000 && !gm_worker_job_done(j); i++)
        gm_clock_sleep_ms(10);
    assert_true(gm_worker_job_done(j));
}

/* Submits a job, waits for it, returns its answer as JSON (the job is freed). */
static json_t *ask(gm_fleet_cache *c, double max_util, unsigned gpus, int *status)
{
    gm_worker_job *j = job(max_util, gpus);
    gm_fleet_cache_submit(c, j);
    wait_done(j);
    *status = j->status;
    json_error_t e;
    json_t *doc = json_loadb(j->body, j->len, 0, &e);
    if (!doc)
        fail_msg("not JSON (%s): %.*s", e.text, (int)j->len, j->body);
    gm_worker_job_free(j);
    return doc;
}

static void test_answers_and_cache(void **state)
{
    (void)state;
    prom p;
    prom_start(&p);
    gm_fleet_cache *c = start(&p, 0.5, 5);
    assert_int_equal(atomic_load(&p.queries), 0); /* nothing asked before a request */
    int status;
    int w0 = atomic_load(&wakes);
    json_t *d = ask(c, 30, 0, &status);
    assert_int_equal(status, 200);
    check_gt(atomic_load(&wakes), w0);
    assert_int_equal(atomic_load(&p.queries), GM_FLEET_Q__COUNT);
    assert_string_equal(json_string_value(json_object_get(d, "job")), "gpumon");
    assert_non_null(json_object_get(d, "fetched_at"));
    assert_null(json_object_get(d, "chosen"));
    json_t *nodes = json_object_get(d, "nodes");
    assert_int_equal(json_array_size(nodes), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0), "name")),
                        "node-a");
    json_decref(d);

    /* Within the cache time: the same answer, and other parameters, without a query. */
    d = ask(c, 30, 0, &status);
    assert_int_equal(status, 200);
    json_decref(d);
    d = ask(c, 10, 1, &status);
    assert_int_equal(status, 200);
    assert_string_equal(json_string_value(json_object_get(d, "chosen")), "node-b");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "totals"), "idle_gpus")),
                     1);
    json_decref(d);
    d = ask(c, 30, 1, &status); /* both idle: node-b, the lower utilization */
    assert_string_equal(json_string_value(json_object_get(d, "chosen")), "node-b");
    json_decref(d);
    assert_int_equal(atomic_load(&p.queries), GM_FLEET_Q__COUNT);

    /* After it: asked again. */
    gm_clock_sleep_ms(600);
    d = ask(c, 30, 0, &status);
    assert_int_equal(status, 200);
    assert_int_equal(atomic_load(&p.queries), 2 * GM_FLEET_Q__COUNT);
    json_decref(d);
    gm_fleet_cache_free(c);
    prom_stop(&p);
}

/* The answer inflated from a gzip stream (zlib, windowBits 15 + 16: gzip's wrapper). */
static char *gunzip(const void *src, size_t len, size_t *out_len)
{
    size_t cap = 1 << 20;
    char *out = malloc(cap);
    assert_non_null(out);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (unsigned char *)src;
    z.avail_in = (uInt)len;
    z.next_out = (unsigned char *)out;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = z.total_out;
    inflateEnd(&z);
    return out;
}

static void test_gzip_for_those_who_take_it(void **state)
{
    (void)state;
    prom p;
    prom_start(&p);
    gm_fleet_cache *c = start(&p, 60, 5);
    gm_worker_job *plain = job(30, 0);
    gm_fleet_cache_submit(c, plain);
    wait_done(plain);
    assert_int_equal(plain->status, 200);
    assert_false(plain->gzip);
    assert_true(plain->vary_ae);
    check_ge(plain->len, 1024);               /* big enough to be worth gzip */
    for (int round = 0; round < 2; round++) { /* rendered, then answered again from the cache */
        gm_worker_job *z = job(30, 0);
        z->gzip_ok = true;
        gm_fleet_cache_submit(c, z);
        wait_done(z);
        assert_int_equal(z->status, 200);
        assert_true(z->gzip && z->vary_ae);
        check_lt(z->len, plain->len);
        size_t n;
        char *text = gunzip(z->body, z->len, &n);
        assert_int_equal(n, plain->len);
        assert_memory_equal(text, plain->body, n);
        free(text);
        gm_worker_job_free(z);
    }
    gm_worker_job_free(plain);
    gm_fleet_cache_free(c);
    prom_stop(&p);
}

static void test_failures(void **state)
{
    (void)state;
    prom p;
    prom_start(&p);
    atomic_store(&p.mode, FAIL);
    gm_fleet_cache *c = start(&p, 0.5, 5);
    int status;
    json_t *d = ask(c, 30, 0, &status);
    assert_int_equal(status, 502);
    const char *e = json_string_value(json_object_get(d, "error"));
    assert_non_null(strstr(e, "answered an error (HTTP 503, unavailable): TSDB is closing"));
    assert_non_null(strstr(json_string_value(json_object_get(d, "prometheus")), "127.0.0.1"));
    json_decref(d);
    assert_int_equal(atomic_load(&p.queries), 1); /* the first query failed: no more */
    /* The failure is kept for the cache time too. */
    d = ask(c, 30, 0, &status);
    assert_int_equal(status, 502);
    json_decref(d);
    assert_int_equal(atomic_load(&p.queries), 1);
    /* Prometheus is back: the next refresh answers. */
    atomic_store(&p.mode, OK);
    gm_clock_sleep_ms(600);
    d = ask(c, 30, 0, &status);
    assert_int_equal(status, 200);
    json_decref(d);
    gm_fleet_cache_free(c);

    /* A Prometheus that never answers: 504 after the timeout. */
    atomic_store(&p.mode, SILENT);
    c = start(&p, 5, 0.2);
    d = ask(c, 30, 0, &status);
    assert_int_equal(status, 504);
    assert_non_null(strstr(json_string_value(json_object_get(d, "error")), "did not answer"));
    json_decref(d);
    gm_fleet_cache_free(c);
    prom_stop(&p);
}

static void test_abandon_and_stop(void **state)
{
    (void)state;
    prom p;
    prom_start(&p);
    atomic_store(&p.mode, SILENT);
    gm_fleet_cache *c = start(&p, 5, 30);
    /* The first job runs (its query hangs); the others wait behind it. */
    gm_worker_job *running = job(30, 0), *queued = job(30, 0), *left = job(30, 0);
    gm_fleet_cache_submit(c, running);
    for (int i = 0; i < 500 && atomic_load(&p.queries) == 0; i++)
        gm_clock_sleep_ms(10);
    gm_fleet_cache_submit(c, queued);
    gm_fleet_cache_submit(c, left);
    /* Given up while queued: freed at once (ASan checks). Given up while running: freed by the
     * thread when it is done. */
    gm_fleet_cache_abandon(c, left);
    gm_fleet_cache_abandon(c, running);
    /* Stopping cancels the query in flight within about a second and answers what waits. */
    int64_t t0 = gm_clock_mono_ms();
    gm_fleet_cache_stop(c);
    check_lt(gm_clock_mono_ms() - t0, 5000);
    assert_true(gm_worker_job_done(queued));
    assert_int_equal(queued->status, 503);
    assert_non_null(strstr(queued->body, "shutting down"));
    gm_worker_job_free(queued);
    /* After the stop, a request is answered at once. */
    gm_worker_job *late = job(30, 0);
    gm_fleet_cache_submit(c, late);
    assert_true(gm_worker_job_done(late));
    assert_int_equal(late->status, 503);
    gm_worker_job_free(late);
    gm_fleet_cache_free(c);
    prom_stop(&p);
}

static void test_bad_options(void **state)
{
    (void)state;
    gm_fleet_cache *c = NULL;
    gm_error err = {0};
    gm_fleet_cache_options o = {.url = "prometheus:9090", .job = "gpumon"};
    assert_int_equal(gm_fleet_cache_start(&o, &c, &err), GM_EINVAL);
    assert_null(c);
    o = (gm_fleet_cache_options){.url = "http://prometheus:9090", .job = "a\"b"};
    assert_int_equal(gm_fleet_cache_start(&o, &c, &err), GM_EINVAL);
    gm_fleet_cache_free(NULL);
    gm_fleet_cache_stop(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers_and_cache), cmocka_unit_test(test_gzip_for_those_who_take_it),
        cmocka_unit_test(test_failures),          cmocka_unit_test(test_abandon_and_stop),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
