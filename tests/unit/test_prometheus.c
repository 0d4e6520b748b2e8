/* test_prometheus.c - the Prometheus API client against a small HTTP server in a thread of the
 * test (canned answers, the request captured): the URL it sends (path prefix, escaped query,
 * basic authentication from user:password@), each failure and its sentence (refused, timeout,
 * HTTP error, Prometheus's own error, not JSON, the wrong shape, too large, cancelled), that no
 * message shows the password, and the instant-vector walker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/prometheus.h"

/* ---- a canned HTTP server ----------------------------------------------------------------- */

enum { ANSWER, SILENT };

typedef struct server {
    int fd;
    int port;
    int mode;
    const char *answer; /* the whole response, head and body */
    size_t pad;         /* bytes of body padding appended after answer (a large answer) */
    char request[4096]; /* the last request head */
    pthread_t thread;
    atomic_bool done;
} server;

static void *server_main(void *arg)
{
    server *s = arg;
    while (!atomic_load(&s->done)) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            break;
        size_t n = 0;
        while (n + 1 < sizeof s->request) {
            ssize_t r = read(c, s->request + n, sizeof s->request - 1 - n);
            if (r <= 0)
                break;
            n += (size_t)r;
            s->request[n] = '\0';
            if (strstr(s->request, "\r\n\r\n"))
                break;
        }
        if (s->mode == SILENT) {
            char b[64];
            while (read(c, b, sizeof b) > 0) /* until the client gives up */
                ;
        } else {
            (void)!send(c, s->answer, strlen(s->answer), MSG_NOSIGNAL);
            char pad[4096];
            memset(pad, ' ', sizeof pad);
            for (size_t left = s->pad; left;) {
                size_t k = left < sizeof pad ? left : sizeof pad;
                if (send(c, pad, k, MSG_NOSIGNAL) <= 0)
                    break;
                left -= k;
            }
        }
        close(c);
    }
    return NULL;
}

static void serve(server *s, int mode, const char *answer)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->answer = answer;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    check_ge(s->fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 8), 0);
    socklen_t len = sizeof a;
    getsockname(s->fd, (struct sockaddr *)&a, &len);
    s->port = ntohs(a.sin_port);
    atomic_init(&s->done, false);
    assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void unserve(server *s)
{
    atomic_store(&s->done, true);
    shutdown(s->fd, SHUT_RDWR); /* wakes accept */
    pthread_join(s->thread, NULL);
    close(s->fd);
}

/* An HTTP answer with body. */
static char *http(int status, const char *ctype, const char *body)
{
    char *out = NULL;
    check_gt(asprintf(&out,
                      "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n%s",
                      status, ctype, strlen(body), body),
             0);
    return out;
}

static gm_prometheus *client(const char *url, double timeout_s, size_t max)
{
    gm_prometheus_options o = {.url = url, .timeout_s = timeout_s, .max_response = max};
    gm_prometheus *p = NULL;
    gm_error err = {0};
    if (gm_prometheus_new(&o, &p, &err) < 0)
        fail_msg("client: %s", err.msg);
    return p;
}

static const char vector_up[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
    "{\"metric\":{\"__name__\":\"up\",\"instance\":\"a:9400\",\"job\":\"gpumon\"},"
    "\"value\":[1764148800.5,\"1\"]},"
    "{\"metric\":{\"__name__\":\"up\",\"instance\":\"b:9400\",\"job\":\"gpumon\"},"
    "\"value\":[1764148800.5,\"0\"]}]}}";

/* ---- the URL ------------------------------------------------------------------------------ */

static void test_url_check(void **state)
{
    (void)state;
    char d[256];
    gm_error err = {0};
    assert_int_equal(gm_prometheus_url_check("http://prometheus:9090", d, sizeof d, &err), GM_OK);
    assert_string_equal(d, "http://prometheus:9090");
    assert_int_equal(
        gm_prometheus_url_check("https://u:secret@mon.example/prometheus/", d, sizeof d, &err),
        GM_OK);
    assert_string_equal(d, "https://mon.example/prometheus");
    assert_int_equal(gm_prometheus_url_check("HTTP://[::1]:9090/", d, sizeof d, &err), GM_OK);
    assert_string_equal(d, "http://[::1]:9090");

    const char *bad[] = {"",
                         "prometheus:9090",
                         "ftp://prometheus:9090",
                         "http://",
                         "http://prometheus:9090/?x=1",
                         "http://prometheus:9090/#top",
                         "http://prometheus:99999",
                         "http://a b:9090"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&err, 0, sizeof err);
        assert_int_equal(gm_prometheus_url_check(bad[i], d, sizeof d, &err), GM_EINVAL);
        assert_true(err.msg[0]);
    }
    char longer[GM_PROMETHEUS_URL_MAX + 10];
    memset(longer, 'a', sizeof longer - 1);
    memcpy(longer, "http://", 7);
    longer[sizeof longer - 1] = '\0';
    assert_int_equal(gm_prometheus_url_check(longer, d, sizeof d, &err), GM_EINVAL);
}

/* ---- queries ------------------------------------------------------------------------------ */

static void test_query_ok(void **state)
{
    (void)state;
    server s;
    char *ans = http(200, "application/json", vector_up);
    serve(&s, ANSWER, ans);
    char url[128];
    snprintf(url, sizeof url, "http://alice:s3cret@127.0.0.1:%d/prom/", s.port);
    gm_prometheus *p = client(url, 5, 0);
    char want[64];
    snprintf(want, sizeof want, "http://127.0.0.1:%d/prom", s.port);
    assert_string_equal(gm_prometheus_url(p), want);
    json_t *data = NULL, *warn = NULL;
    gm_error err = {0};
    assert_int_equal(gm_prometheus_query(p, "up{job=\"gpumon\"} == 1", &data, &warn, &err), GM_OK);
    assert_non_null(data);
    assert_null(warn);
    assert_string_equal(json_string_value(json_object_get(data, "resultType")), "vector");
    /* The path prefix kept, the expression escaped, the password sent as basic auth. */
    assert_non_null(strstr(s.request, "GET /prom/api/v1/query?query=up%7Bjob%3D%22gpumon%22%7D%20"
                                      "%3D%3D%201 HTTP/1.1\r\n"));
    assert_non_null(strstr(s.request, "Authorization: Basic YWxpY2U6czNjcmV0\r\n"));
    assert_non_null(strstr(s.request, "Accept: application/json\r\n"));
    json_decref(data);
    gm_prometheus_free(p);
    unserve(&s);
    free(ans);
}

static void test_query_warnings(void **state)
{
    (void)state;
    server s;
    char *ans = http(200, "application/json",
                     "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]},"
                     "\"warnings\":[\"partial answer\"]}");
    serve(&s, ANSWER, ans);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    gm_prometheus *p = client(url, 5, 0);
    json_t *data = NULL, *warn = NULL;
    gm_error err = {0};
    assert_int_equal(gm_prometheus_query(p, "up", &data, &warn, &err), GM_OK);
    assert_string_equal(json_string_value(json_array_get(warn, 0)), "partial answer");
    json_decref(data);
    json_decref(warn);
    gm_prometheus_free(p);
    unserve(&s);
    free(ans);
}

/* One failing answer: the code and words the message must contain. */
static void expect_failure(const char *answer, size_t pad, size_t max, int code,
                           const char *const *words)
{
    server s;
    serve(&s, ANSWER, answer);
    char url[96];
    snprintf(url, sizeof url, "http://bob:hunter2@127.0.0.1:%d", s.port);
    gm_prometheus *p = client(url, 5, max);
    s.pad = pad;
    json_t *data = NULL;
    gm_error err = {0};
    assert_int_equal(gm_prometheus_query(p, "up", &data, NULL, &err), code);
    assert_null(data);
    for (size_t i = 0; words[i]; i++)
        if (!strstr(err.msg, words[i]))
            fail_msg("\"%s\" lacks \"%s\"", err.msg, words[i]);
    assert_null(strstr(err.msg, "hunter2"));
    assert_non_null(strstr(err.msg, "http://127.0.0.1:"));
    gm_prometheus_free(p);
    unserve(&s);
}

static void test_prometheus_error(void **state)
{
    (void)state;
    char *a = http(400, "application/json",
                   "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"invalid parameter "
                   "\\\"query\\\": 1:4: parse error: unexpected end of input\"}");
    expect_failure(a, 0, 0, GM_EINVAL,
                   (const char *[]){"answered an error", "HTTP 400", "bad_data",
                                    "parse error: unexpected end of input", NULL});
    free(a);
    /* A query that timed out inside Prometheus: its error, whatever the status. */
    a = http(503, "application/json",
             "{\"status\":\"error\",\"errorType\":\"timeout\",\"error\":\"query timed out in "
             "expression evaluation\"}");
    expect_failure(a, 0, 0, GM_EINVAL,
                   (const char *[]){"HTTP 503", "timeout", "query timed out", NULL});
    free(a);
}

static void test_http_error(void **state)
{
    (void)state;
    char *a = http(502, "text/html", "<html>\n<body>Bad Gateway</body>\n</html>\n");
    expect_failure(a, 0, 0, GM_EIO,
                   (const char *[]){"answered HTTP 502", "<html> <body>Bad Gateway", NULL});
    free(a);
    a = http(404, "text/plain", "404 page not found\n");
    expect_failure(a, 0, 0, GM_EIO, (const char *[]){"HTTP 404: 404 page not found", NULL});
    free(a);
}

static void test_not_json(void **state)
{
    (void)state;
    char *a = http(200, "text/html", "<html>Grafana</html>");
    expect_failure(a, 0, 0, GM_EPARSE, (const char *[]){"not JSON", "Prometheus server", NULL});
    free(a);
    a = http(200, "application/json", "");
    expect_failure(a, 0, 0, GM_EPARSE, (const char *[]){"empty body", NULL});
    free(a);
    a = http(200, "application/json", "{\"status\":\"ok\",\"data\":[1,2]}");
    expect_failure(a, 0, 0, GM_EPARSE, (const char *[]){"not the query API's", NULL});
    free(a);
}

static void test_too_large(void **state)
{
    (void)state;
    /* 64 KiB of JSON padding behind a small head, with a 16 KiB limit. */
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               "Connection: close\r\n\r\n{\"status\":\"success\",\"data\":{}}";
    expect_failure(head, 64 << 10, 16 << 10, GM_ENOMEM, (const char *[]){"more than", NULL});
}

static void test_refused(void **state)
{
    (void)state;
    /* A port nobody listens on: bind one, close it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    gm_prometheus *p = client(url, 5, 0);
    json_t *data = NULL;
    gm_error err = {0};
    assert_int_equal(gm_prometheus_query(p, "up", &data, NULL, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "cannot reach Prometheus at http://127.0.0.1:"));
    gm_prometheus_free(p);
}

static void test_timeout(void **state)
{
    (void)state;
    server s;
    serve(&s, SILENT, NULL);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    gm_prometheus *p = client(url, 0.3, 0);
    json_t *data = NULL;
    gm_error err = {0};
    assert_int_equal(gm_prometheus_query(p, "up", &data, NULL, &err), GM_ETIMEDOUT);
    assert_non_null(strstr(err.msg, "did not answer within 0.3 s"));
    gm_prometheus_free(p);
    unserve(&s);
}

static atomic_bool stop_flag;

static void *set_stop(void *arg)
{
    (void)arg;
    gm_clock_sleep_ms(200);
    atomic_store(&stop_flag, true);
    return NULL;
}

static void test_cancel(void **state)
{
    (void)state;
    server s;
    serve(&s, SILENT, NULL);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    atomic_init(&stop_flag, false);
    gm_prometheus_options o = {.url = url, .timeout_s = 60, .stop = &stop_flag};
    gm_prometheus *p = NULL;
    gm_error err = {0};
    assert_int_equal(gm_prometheus_new(&o, &p, &err), GM_OK);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, set_stop, NULL), 0);
    json_t *data = NULL;
    assert_int_equal(gm_prometheus_query(p, "up", &data, NULL, &err), GM_ECANCELED);
    assert_non_null(strstr(err.msg, "cancelled"));
    pthread_join(t, NULL);
    gm_prometheus_free(p);
    unserve(&s);
}

static void test_new_refuses_bad_url(void **state)
{
    (void)state;
    gm_prometheus_options o = {.url = "localhost:9090"};
    gm_prometheus *p = (gm_prometheus *)1;
    gm_error err = {0};
    assert_int_equal(gm_prometheus_new(&o, &p, &err), GM_EINVAL);
    assert_null(p);
    assert_non_null(strstr(err.msg, "http://"));
}

/* ---- instant vectors ---------------------------------------------------------------------- */

typedef struct seen {
    size_t n;
    double v[8];
    char inst[8][32];
    int stop_at;
} seen;

static int collect(void *arg, const gm_prometheus_sample *s)
{
    seen *x = arg;
    const char *i = gm_prometheus_label(s->metric, "instance");
    snprintf(x->inst[x->n], sizeof x->inst[x->n], "%s", i ? i : "");
    x->v[x->n++] = s->value;
    return x->stop_at && (int)x->n == x->stop_at ? 7 : 0;
}

static json_t *data_of(const char *doc)
{
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    json_t *d = json_incref(json_object_get(j, "data"));
    json_decref(j);
    return d;
}

static void test_vector(void **state)
{
    (void)state;
    json_t *d = data_of(vector_up);
    seen x = {0};
    gm_error err = {0};
    assert_int_equal(gm_prometheus_vector_each(d, collect, &x, &err), GM_OK);
    assert_int_equal(x.n, 2);
    assert_string_equal(x.inst[0], "a:9400");
    check_eq(x.v[0], 1);
    check_eq(x.v[1], 0);
    x = (seen){.stop_at = 1};
    assert_int_equal(gm_prometheus_vector_each(d, collect, &x, &err), 7);
    assert_int_equal(x.n, 1);
    json_decref(d);

    /* Values as Prometheus writes them. */
    d = data_of("{\"data\":{\"resultType\":\"vector\",\"result\":["
                "{\"metric\":{},\"value\":[1,\"NaN\"]},{\"metric\":{},\"value\":[1,\"+Inf\"]},"
                "{\"metric\":{},\"value\":[1,\"-Inf\"]},{\"metric\":{},\"value\":[1,\"1e+06\"]},"
                "{\"metric\":{},\"value\":[1,\"-0.25\"]}]}}");
    x = (seen){0};
    assert_int_equal(gm_prometheus_vector_each(d, collect, &x, &err), GM_OK);
    assert_int_equal(x.n, 5);
    assert_true(isnan(x.v[0]));
    assert_true(isinf(x.v[1]));
    check_gt(x.v[1], 0);
    assert_true(isinf(x.v[2]));
    check_lt(x.v[2], 0);
    check_eq(x.v[3], 1e6);
    check_eq(x.v[4], -0.25);
    json_decref(d);

    const char *bad[] = {
        "{\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
        "{\"data\":{\"resultType\":\"vector\",\"result\":{}}}",
        "{\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,\"abc\"]}]}}",
        "{\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,2]}]}}",
        "{\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1]}]}}",
        "{\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,\"0x1\"]}]}}",
        "{\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":[1,\"1\"]}]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        d = data_of(bad[i]);
        x = (seen){0};
        err = (gm_error){0};
        assert_int_equal(gm_prometheus_vector_each(d, collect, &x, &err), GM_EPARSE);
        assert_true(err.msg[0]);
        json_decref(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_check),
        cmocka_unit_test(test_query_ok),
        cmocka_unit_test(test_query_warnings),
        cmocka_unit_test(test_prometheus_error),
        cmocka_unit_test(test_http_error),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_new_refuses_bad_url),
        cmocka_unit_test(test_vector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
