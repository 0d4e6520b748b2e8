/* test_bench_client.c - the libcurl-multi load generator against the fake OpenAI server
 * (tests/fakes/fake_openai): closed and open loop, what each failure becomes (HTTP 500, an error
 * mid-stream, a dropped connection, a non-SSE answer), token counts with and without usage, a
 * timed run, and a stop request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/bench_client.h"

typedef struct server {
    pid_t pid;
    int port;
    char url[64];
    char port_file[64];
} server;

/* Starts the fake server with the given flags (NULL-terminated). */
static void start(server *s, ...)
{
    const char *bin = getenv("GM_FAKE_OPENAI");
    if (!bin)
        fail_msg("GM_FAKE_OPENAI is not set (run through ctest)");
    const char *argv[32] = {bin, "--port-file", s->port_file};
    snprintf(s->port_file, sizeof s->port_file, "/tmp/gm-fo-%d.port", (int)getpid());
    argv[2] = s->port_file;
    int n = 3;
    va_list ap;
    va_start(ap, s);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 31)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    unlink(s->port_file);
    s->pid = fork();
    if (s->pid == 0) {
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(s->port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &s->port);
            fclose(f);
            if (ok == 1)
                break;
        }
        gm_clock_sleep_ms(10);
    }
    check_gt(s->port, 0);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d/v1/", s->port);
}

static void stop(server *s)
{
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    unlink(s->port_file);
}

static gm_bench_client *client(const server *s, gm_bench_api api, unsigned in, unsigned out)
{
    gm_bench_client_options o = {.url = s->url, .api = api, .timeout_s = 30};
    gm_bench_client *c = NULL;
    gm_error err = {0};
    if (gm_bench_client_new(&o, &c, &err) < 0)
        fail_msg("client: %s", err.msg);
    gm_bench_prompts ps;
    assert_int_equal(gm_bench_prompts_synthetic(in, 16, 1, &ps, &err), GM_OK);
    assert_int_equal(gm_bench_client_prepare(c, "fake-model", &ps, out, &err), GM_OK);
    gm_bench_prompts_free(&ps);
    return c;
}

static size_t count(const gm_bench_point *p, gm_bench_outcome o)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += p->res[i].outcome == o;
    return n;
}

static void test_url_base(void **state)
{
    (void)state;
    char b[GM_BENCH_URL_MAX];
    gm_error err = {0};
    const char *in[][2] = {
        {"http://h:8000", "http://h:8000"},        {"http://h:8000/", "http://h:8000"},
        {"http://h:8000/v1", "http://h:8000"},     {"https://h/v1/", "https://h"},
        {"HTTP://h/prefix/v1", "HTTP://h/prefix"}, {"http://[::1]:8000", "http://[::1]:8000"}};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        assert_int_equal(gm_bench_url_base(in[i][0], b, sizeof b, &err), GM_OK);
        assert_string_equal(b, in[i][1]);
    }
    const char *bad[] = {"",          "h:8000",     "ftp://h",       "http://",
                         "http:///x", "http://h x", "http://h/?q=1", "http://h/#f"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(gm_bench_url_base(bad[i], b, sizeof b, &err), GM_EINVAL);
}

static void test_why_unreachable(void **state)
{
    (void)state;
    assert_string_equal(gm_bench_reach_reason(6 /* CURLE_COULDNT_RESOLVE_HOST */, 0),
                        "the host name does not resolve (DNS)");
    assert_string_equal(gm_bench_reach_reason(7 /* CURLE_COULDNT_CONNECT */, ECONNREFUSED),
                        "connection refused: nothing listens on that port");
    assert_string_equal(gm_bench_reach_reason(7, EHOSTUNREACH),
                        "no route to the host (unreachable)");
    assert_string_equal(gm_bench_reach_reason(7, ETIMEDOUT), "the connection timed out");
    assert_string_equal(gm_bench_reach_reason(28 /* CURLE_OPERATION_TIMEDOUT */, 0),
                        "timed out: no answer in time");
    assert_string_equal(gm_bench_reach_reason(52 /* CURLE_GOT_NOTHING */, 0),
                        "the server closed the connection without answering");
}

static void test_models_and_unreachable(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--model", "org/model-7b", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 4);
    char m[64];
    gm_error err = {0};
    assert_int_equal(gm_bench_client_first_model(c, m, sizeof m, &err), GM_OK);
    assert_string_equal(m, "org/model-7b");
    assert_false(gm_bench_client_unreached(c));
    char want[64];
    snprintf(want, sizeof want, "http://127.0.0.1:%d", s.port);
    assert_string_equal(gm_bench_client_url(c), want); /* "/v1/" dropped */
    gm_bench_client_free(c);
    stop(&s);
    /* The port is closed now. */
    c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 4);
    assert_int_equal(gm_bench_client_first_model(c, m, sizeof m, &err), GM_EIO);
    assert_non_null(strstr(err.msg, "/v1/models"));
    /* Said first: not reached, and why. */
    assert_true(gm_bench_client_unreached(c));
    char head[128];
    snprintf(head, sizeof head,
             "cannot reach the server at %s: connection refused: nothing listens on that port",
             want);
    check_eq(strncmp(err.msg, head, strlen(head)), 0);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.concurrency = 2, .requests = 4};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    assert_int_equal(count(&p, GM_BENCH_CONNECTION), 4);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
}

static void test_closed_loop(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--ttft-ms", "5", "--itl-ms", "2", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 8, 5);
    gm_bench_point p;
    gm_bench_point_init(&p);
    char tpath[64];
    snprintf(tpath, sizeof tpath, "/tmp/gm-trace-%d.jsonl", (int)getpid());
    FILE *trace = fopen(tpath, "w");
    gm_bench_run r = {.concurrency = 3, .requests = 20, .trace = trace};
    gm_error err = {0};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    fclose(trace);
    assert_int_equal(p.n, 20);
    assert_int_equal(count(&p, GM_BENCH_OK), 20);
    assert_int_equal(p.peak_in_flight, 3);
    for (size_t i = 0; i < p.n; i++) {
        const gm_bench_result *x = &p.res[i];
        assert_int_equal(x->output_tokens, 5);
        assert_int_equal(x->chunks, 5);
        assert_true(x->output_from_usage && x->prompt_from_usage);
        assert_int_equal(x->prompt_tokens, 8); /* the fake counts words */
        assert_int_equal(x->asked_tokens, 5);
        assert_int_equal(x->http_status, 200);
        check_lt(x->sent_ns, x->first_ns);
        check_lt(x->first_ns, x->last_ns);
        check_le(x->last_ns, x->done_ns);
        double ttft = gm_bench_result_ttft_ms(x);
        check_ge(ttft, 4.9);
        check_lt(ttft, 500);
    }
    assert_int_equal(p.itl_ms.st.count, 20 * 4);
    assert_true(p.start_ns);
    check_gt(p.end_ns, p.start_ns);
    check_gt(p.cpu_s, 0);
    check_gt(p.bytes_received, 0);
    assert_int_equal(p.recv_parse_us.st.count > 0, 1);
    /* One trace line per request. */
    FILE *f = fopen(tpath, "r");
    int lines = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        lines += ch == '\n';
    fclose(f);
    unlink(tpath);
    assert_int_equal(lines, 20);
    gm_bench_point_free(&p);
    /* A warmup keeps nothing, and the next run starts clean. */
    gm_bench_run w = {.concurrency = 2, .requests = 4, .warmup = true};
    assert_int_equal(gm_bench_client_run(c, &w, NULL, &err), GM_OK);
    gm_bench_point_init(&p);
    r.trace = NULL;
    r.requests = 6;
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    assert_int_equal(p.n, 6);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static void test_failures_by_kind(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--fail-every", "4", "--error-every", "5", "--drop-every", "7", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_CHAT, 4, 6);
    gm_bench_point p;
    gm_bench_point_init(&p);
    /* One at a time, so the fake's request numbers are the order sent. */
    gm_bench_run r = {.concurrency = 1, .requests = 20};
    gm_error err = {0};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    assert_int_equal(p.n, 20);
    /* 500: 4 8 12 16 20; error event: 5 10 15; dropped: 7 14; the other 10 fine. */
    assert_int_equal(count(&p, GM_BENCH_HTTP_ERROR), 5);
    assert_int_equal(count(&p, GM_BENCH_STREAM_ERROR), 3);
    assert_int_equal(count(&p, GM_BENCH_CONNECTION), 2);
    assert_int_equal(count(&p, GM_BENCH_OK), 10);
    for (size_t i = 0; i < p.n; i++)
        if (p.res[i].outcome == GM_BENCH_HTTP_ERROR)
            assert_int_equal(p.res[i].http_status, 500);
    json_t *ex = p.error_examples;
    assert_string_equal(json_string_value(json_object_get(ex, "http_500")), "fake failure 4");
    assert_string_equal(json_string_value(json_object_get(ex, "stream_error")),
                        "fake mid-stream failure");
    assert_non_null(json_object_get(ex, "connection"));
    /* Failed requests' partial output is not in ITL: 10 requests x 5 gaps. */
    assert_int_equal(p.itl_ms.st.count, 50);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static void test_no_usage_counts_chunks(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--no-usage", "--tokens-per-chunk", "3", "--role-chunk", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_CHAT, 4, 10);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.concurrency = 2, .requests = 4};
    gm_error err = {0};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    for (size_t i = 0; i < p.n; i++) {
        /* 3 + 3 + 3 + 1 tokens in 4 content chunks; the role chunk is not one. */
        assert_int_equal(p.res[i].outcome, GM_BENCH_OK);
        assert_int_equal(p.res[i].chunks, 4);
        assert_int_equal(p.res[i].output_tokens, 4);
        assert_false(p.res[i].output_from_usage);
        assert_false(p.res[i].prompt_from_usage);
        assert_int_equal(p.res[i].prompt_tokens, 4); /* the estimate of the prompt */
    }
    json_t *j = gm_bench_point_json(&p, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "output_tokens_source")), "chunks");
    assert_int_equal(json_integer_value(json_object_get(j, "short_outputs")), 4);
    json_decref(j);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static void test_lying_usage_is_distrusted(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--usage-completion-tokens", "1000000000000", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 4);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.concurrency = 2, .requests = 6};
    gm_error err = {0};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    assert_int_equal(count(&p, GM_BENCH_OK), 6);
    for (size_t i = 0; i < p.n; i++) {
        /* Not 10^12, nor 10^12 cut to 32 bits (3567587328): the 4 chunks streamed. */
        assert_int_equal(p.res[i].output_tokens, 4);
        assert_false(p.res[i].output_from_usage);
        assert_true(p.res[i].usage_distrusted);
        check_eq(p.res[i].usage_claimed, 1000000000000ULL);
    }
    json_t *j = gm_bench_point_json(&p, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "output_tokens")), 24);
    assert_string_equal(json_string_value(json_object_get(j, "output_tokens_source")), "chunks");
    assert_int_equal(json_integer_value(json_object_get(j, "usage_distrusted")), 6);
    json_decref(j);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static void test_hostile_streams_end_with_a_reason(void **state)
{
    (void)state;
    gm_error err = {0};
    /* A stream that never ends is cut past 2 x max_tokens + 16 chunks, at once. */
    server s = {0};
    start(&s, "--endless", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_CHAT, 4, 8);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.concurrency = 2, .requests = 3};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    assert_int_equal(count(&p, GM_BENCH_TOO_LONG), 3);
    for (size_t i = 0; i < p.n; i++)
        assert_int_equal(p.res[i].chunks, gm_bench_chunks_max(8) + 1);
    assert_non_null(strstr(json_string_value(json_object_get(p.error_examples, "too_long")),
                           "went on past 32 content chunks for 8 tokens asked"));
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
    /* A 10 MB line is refused at the parser's limit, not buffered. */
    server l = {0};
    start(&l, "--line-bytes", "10000000", NULL);
    c = client(&l, GM_BENCH_API_COMPLETIONS, 4, 4);
    gm_bench_point_init(&p);
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    assert_int_equal(count(&p, GM_BENCH_NOT_SSE), 3);
    check_lt(p.bytes_received, 3 * 10000000ULL);
    assert_non_null(strstr(json_string_value(json_object_get(p.error_examples, "not_sse")),
                           "a line over the limit"));
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&l);
}

static void test_short_outputs(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--short-every", "2", "--short-tokens", "3", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 8);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.concurrency = 1, .requests = 6};
    gm_error err = {0};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    size_t shorts = 0;
    for (size_t i = 0; i < p.n; i++)
        shorts += p.res[i].output_tokens == 3;
    assert_int_equal(shorts, 3);
    json_t *j = gm_bench_point_json(&p, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "short_outputs")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "output_tokens")), 3 * 8 + 3 * 3);
    json_decref(j);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static void test_not_an_event_stream(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--garbage", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 4);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.concurrency = 2, .requests = 3};
    gm_error err = {0};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    assert_int_equal(count(&p, GM_BENCH_NOT_SSE), 3);
    const char *msg = json_string_value(json_object_get(p.error_examples, "not_sse"));
    assert_non_null(strstr(msg, "not an event stream"));
    assert_non_null(strstr(msg, "this is not an inference server"));
    char m[64];
    assert_int_equal(gm_bench_client_first_model(c, m, sizeof m, &err), GM_EPARSE);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static void test_open_loop(void **state)
{
    (void)state;
    server s = {0};
    start(&s, NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 4);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.open_loop = true, .rate = 400, .burstiness = 1, .seed = 3, .requests = 40};
    gm_error err = {0};
    int64_t t0 = gm_clock_mono_ns();
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    double took = (double)(gm_clock_mono_ns() - t0) / 1e9;
    assert_int_equal(count(&p, GM_BENCH_OK), 40);
    assert_int_equal(p.lag_ms.st.count, 40);
    assert_true(p.open_loop);
    /* 39 gaps of 2.5 ms on average: about 0.1 s, never all at once. */
    check_gt(took, 0.02);
    check_lt(took, 5);
    for (size_t i = 0; i < p.n; i++)
        check_ge(p.res[i].sent_ns, p.res[i].sched_ns);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static void test_timed_run(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--itl-ms", "10", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 5);
    gm_bench_point p;
    gm_bench_point_init(&p);
    gm_bench_run r = {.concurrency = 2, .duration_s = 0.3};
    gm_error err = {0};
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    /* About 0.04 s per request, 2 at a time, for 0.3 s. */
    check_ge(p.n, 4);
    check_le(p.n, 30);
    assert_int_equal(count(&p, GM_BENCH_OK), p.n);
    check_ge(gm_bench_point_duration(&p), 0.29);
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

static volatile sig_atomic_t stop_now;

static void stop_on_progress(void *arg, const gm_bench_point *p, size_t done, size_t total,
                             double elapsed)
{
    (void)arg;
    (void)p;
    (void)done;
    (void)total;
    (void)elapsed;
    stop_now = 1;
}

static void test_stop_keeps_what_was_measured(void **state)
{
    (void)state;
    server s = {0};
    start(&s, "--ttft-ms", "5000", NULL);
    gm_bench_client *c = client(&s, GM_BENCH_API_COMPLETIONS, 4, 4);
    gm_bench_point p;
    gm_bench_point_init(&p);
    stop_now = 0;
    gm_bench_run r = {
        .concurrency = 4, .requests = 8, .stop = &stop_now, .progress = stop_on_progress};
    gm_error err = {0};
    int64_t t0 = gm_clock_mono_ns();
    assert_int_equal(gm_bench_client_run(c, &r, &p, &err), GM_OK);
    check_lt((double)(gm_clock_mono_ns() - t0) / 1e9, 2);
    assert_true(p.interrupted);
    assert_int_equal(p.n, 0); /* nothing had finished: nothing counted */
    gm_bench_point_free(&p);
    gm_bench_client_free(c);
    stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_base),
        cmocka_unit_test(test_why_unreachable),
        cmocka_unit_test(test_models_and_unreachable),
        cmocka_unit_test(test_closed_loop),
        cmocka_unit_test(test_failures_by_kind),
        cmocka_unit_test(test_no_usage_counts_chunks),
        cmocka_unit_test(test_short_outputs),
        cmocka_unit_test(test_lying_usage_is_distrusted),
        cmocka_unit_test(test_hostile_streams_end_with_a_reason),
        cmocka_unit_test(test_not_an_event_stream),
        cmocka_unit_test(test_open_loop),
        cmocka_unit_test(test_timed_run),
        cmocka_unit_test(test_stop_keeps_what_was_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
