/* test_sampler.c - the daemon's sampler thread against the sim provider (published bundles,
 * their sequence, bodies and reference counts, the per-sample hook, stop and join), plus the
 * daemon's pure request helpers that have no other home: the loopback and origin rules for
 * state-changing requests (the POST /api/sessions body is tested in test_session_body.c). Static
 * files and their headers are tested in test_assets.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/sampler.h"
#include "server/server_int.h"
#include "server/worker.h"

/* ---- the sampler ---------------------------------------------------------------------------- */

typedef struct hook_state {
    atomic_uint calls;
    atomic_uint last_gpu_count;
    atomic_uint wakes;
} hook_state;

static void on_sample(void *arg, const gm_snapshot *snap)
{
    hook_state *h = arg;
    atomic_store(&h->last_gpu_count, snap->gpu_count);
    atomic_fetch_add(&h->calls, 1);
}

static void on_wake(void *arg)
{
    hook_state *h = arg;
    atomic_fetch_add(&h->wakes, 1);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits (up to 20 s, generous for sanitizer builds) for a bundle newer than seq. */
static gm_published *wait_newer(gm_sampler *s, uint64_t seq)
{
    for (int i = 0; i < 2000; i++) {
        gm_published *p = gm_sampler_latest(s);
        if (p && p->seq > seq)
            return p;
        gm_published_unref(p);
        sleep_ms(10);
    }
    return NULL;
}

/* Every body of a bundle renders on first use and parses as JSON (or is the Prometheus text),
 * non-empty; a second ask gives the same bytes (rendered once). */
static void check_bodies(gm_published *p)
{
    /* Published with nothing rendered: a sample nobody reads costs only the reading. */
    const gm_blob *json_blobs[] = {
        gm_published_blob(p, GM_BLOB_FULL),        gm_published_blob(p, GM_BLOB_PROCESSES),
        gm_published_blob(p, GM_BLOB_GPU_METRICS), gm_published_blob(p, GM_BLOB_STATS),
        gm_published_blob(p, GM_BLOB_WS_METRICS),  gm_published_blob(p, GM_BLOB_SYSTEM)};
    for (size_t i = 0; i < sizeof json_blobs / sizeof *json_blobs; i++) {
        const gm_blob *b = json_blobs[i];
        if (i == 5 && !p->host_valid) {
            assert_null(b->data);
            continue;
        }
        assert_non_null(b->data);
        check_gt(b->len, 0);
        assert_int_equal(b->data[b->len], '\0');
        json_error_t jerr;
        json_t *j = json_loadb((const char *)b->data, b->len, 0, &jerr);
        assert_non_null(j);
        json_decref(j);
    }
    assert_ptr_equal(gm_published_blob(p, GM_BLOB_FULL), json_blobs[0]);
    for (unsigned i = 0; i < p->gpu_count; i++) {
        const gm_blob *g = gm_published_gpu(p, p->gpu_index[i]);
        json_t *j = json_loadb((const char *)g->data, g->len, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "index")), p->gpu_index[i]);
        json_decref(j);
    }
    assert_null(gm_published_gpu(p, 63));
    const gm_blob *prom = gm_published_blob(p, GM_BLOB_PROM);
    check_gt(prom->len, 0);
    assert_non_null(strstr((const char *)prom->data, "DCGM_FI_DEV_GPU_UTIL"));
    /* gzip'd forms decompress to the plain ones' sizes, which the gzip trailer states. */
    const gm_blob *gz = gm_published_blob(p, GM_BLOB_PROM_GZ);
    check_gt(gz->len, 18);
    check_eq(gz->data[0], 0x1f);
    check_eq(gz->data[1], 0x8b);
    uint32_t isize = (uint32_t)gz->data[gz->len - 4] | (uint32_t)gz->data[gz->len - 3] << 8 |
                     (uint32_t)gz->data[gz->len - 2] << 16 | (uint32_t)gz->data[gz->len - 1] << 24;
    assert_int_equal(isize, prom->len);
    /* The snapshot copy: the GPUs, and the processes it had. */
    assert_non_null(p->snap);
    assert_int_equal(p->snap->gpu_count, p->gpu_count);
    assert_int_equal(p->snap->seq, p->seq);
    check_gt(p->snap->proc_count, 0); /* the simulator runs two processes per GPU */
    assert_non_null(p->snap->procs);
}

static void test_sampler_publishes(void **state)
{
    (void)state;
    gm_collector_options copt = {.simulate = 2, .seed = 7};
    gm_collector *c = NULL;
    gm_error err = {0};
    assert_int_equal(gm_collector_open(&copt, &c, &err), GM_OK);

    hook_state hs;
    atomic_init(&hs.calls, 0);
    atomic_init(&hs.last_gpu_count, 0);
    atomic_init(&hs.wakes, 0);
    gm_sampler_options sopt = {.collector = c,
                               .poll_ms = 100,
                               .history_s = 10,
                               .on_sample = on_sample,
                               .on_sample_arg = &hs};
    gm_sampler *s = NULL;
    assert_int_equal(gm_sampler_start(&sopt, on_wake, &hs, &s, &err), GM_OK);
    assert_int_equal(gm_sampler_wait_first(s, 20000, &err), GM_OK);

    gm_published *first = gm_sampler_latest(s);
    assert_non_null(first);
    assert_int_equal(first->gpu_count, 2);
    assert_string_equal(first->provider, "sim");
    check_bodies(first);

    /* Newer bundles come with increasing sequence numbers while `first` stays whole: its
     * reference keeps its bytes alive after the sampler let it go. */
    uint64_t seq = first->seq;
    const gm_blob *ffull = gm_published_blob(first, GM_BLOB_FULL);
    char *copy = strndup((const char *)ffull->data, ffull->len);
    assert_non_null(copy);
    for (int k = 0; k < 4; k++) {
        gm_published *p = wait_newer(s, seq);
        assert_non_null(p);
        check_gt(p->seq, seq);
        check_ne(p, first);
        check_bodies(p);
        seq = p->seq;
        gm_published_unref(p);
    }
    assert_int_equal(ffull->len, strlen(copy));
    assert_memory_equal(ffull->data, copy, ffull->len);
    check_bodies(first);
    free(copy);

    /* A second reference to the latest is the same bundle; dropping one leaves it intact. */
    gm_published *a = gm_sampler_latest(s), *b = gm_published_ref(a);
    assert_ptr_equal(a, b);
    gm_published_unref(b);
    check_bodies(a);
    gm_published_unref(a);

    gm_sampler_stats st;
    gm_sampler_get_stats(s, &st);
    check_ge(st.samples_total, 5);
    assert_int_equal(st.errors_total, 0);
    check_gt(st.last_ok_mono_ms, 0);
    gm_ring *h = gm_sampler_history(s);
    assert_non_null(h);
    assert_int_equal(gm_ring_gpu_count(h), 2);

    /* The hook saw every publication, with the snapshot's GPUs; wake ran as often. */
    check_ge(atomic_load(&hs.calls), 5);
    assert_int_equal(atomic_load(&hs.last_gpu_count), 2);
    check_ge(atomic_load(&hs.wakes), 5);

    gm_sampler_stop(s);
    unsigned calls = atomic_load(&hs.calls);
    gm_sampler_stop(s); /* idempotent */
    sleep_ms(250);
    assert_int_equal(atomic_load(&hs.calls), calls); /* joined: nothing runs any more */
    /* The latest bundle outlives the stopped sampler while referenced. */
    gm_published *last = gm_sampler_latest(s);
    assert_non_null(last);
    gm_sampler_free(s);
    check_bodies(last);
    gm_published_unref(last);
    gm_published_unref(first);
    gm_collector_close(c);
}

static void test_sampler_refuses_huge_history(void **state)
{
    (void)state;
    gm_collector_options copt = {.simulate = 4};
    gm_collector *c = NULL;
    gm_error err = {0};
    assert_int_equal(gm_collector_open(&copt, &c, &err), GM_OK);
    gm_sampler_options sopt = {
        .collector = c, .poll_ms = 100, .history_s = 86400, .history_max_bytes = 1 << 20};
    gm_sampler *s = NULL;
    assert_int_equal(gm_sampler_start(&sopt, NULL, NULL, &s, &err), GM_OK);
    assert_int_equal(gm_sampler_wait_first(s, 20000, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--history"));
    gm_sampler_free(s);
    gm_collector_close(c);
}

static void test_sampler_bad_options(void **state)
{
    (void)state;
    gm_sampler *s = NULL;
    gm_error err = {0};
    gm_sampler_options sopt = {.collector = NULL, .poll_ms = 100};
    assert_int_equal(gm_sampler_start(&sopt, NULL, NULL, &s, &err), GM_EINVAL);
    gm_sampler_free(NULL);
    gm_published_unref(NULL);
    assert_null(gm_published_ref(NULL));
}

/* ---- who may change state ------------------------------------------------------------------- */

static void test_loopback_rule(void **state)
{
    (void)state;
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    const struct sockaddr *sa4 = (const struct sockaddr *)&v4, *sa6 = (const struct sockaddr *)&v6;

    inet_pton(AF_INET, "127.0.0.1", &v4.sin_addr);
    assert_true(gm_server_peer_is_loopback(sa4, sizeof v4));
    inet_pton(AF_INET, "127.8.9.10", &v4.sin_addr);
    assert_true(gm_server_peer_is_loopback(sa4, sizeof v4));
    assert_false(gm_server_peer_is_loopback(sa4, 4)); /* short */
    inet_pton(AF_INET, "192.0.2.7", &v4.sin_addr);
    assert_false(gm_server_peer_is_loopback(sa4, sizeof v4));
    inet_pton(AF_INET, "128.0.0.1", &v4.sin_addr);
    assert_false(gm_server_peer_is_loopback(sa4, sizeof v4));

    inet_pton(AF_INET6, "::1", &v6.sin6_addr);
    assert_true(gm_server_peer_is_loopback(sa6, sizeof v6));
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &v6.sin6_addr);
    assert_true(gm_server_peer_is_loopback(sa6, sizeof v6));
    inet_pton(AF_INET6, "::ffff:10.0.0.1", &v6.sin6_addr);
    assert_false(gm_server_peer_is_loopback(sa6, sizeof v6));
    inet_pton(AF_INET6, "fd00::2", &v6.sin6_addr);
    assert_false(gm_server_peer_is_loopback(sa6, sizeof v6));
    assert_false(gm_server_peer_is_loopback(NULL, 0));

    /* The decision: no token and a remote peer (or an unknown one) is refused. */
    inet_pton(AF_INET, "192.0.2.7", &v4.sin_addr);
    assert_int_equal(gm_server_write_access(false, sa4, sizeof v4), 403);
    assert_int_equal(gm_server_write_access(false, NULL, 0), 403);
    assert_int_equal(gm_server_write_access(true, sa4, sizeof v4), 0);
    inet_pton(AF_INET, "127.0.0.1", &v4.sin_addr);
    assert_int_equal(gm_server_write_access(false, sa4, sizeof v4), 0);
    inet_pton(AF_INET6, "::1", &v6.sin6_addr);
    assert_int_equal(gm_server_write_access(false, sa6, sizeof v6), 0);
}

static void test_origin_rule(void **state)
{
    (void)state;
    /* No Origin: not a browser's cross-site request. */
    assert_true(gm_server_origin_allowed(NULL, "127.0.0.1:9401", ""));
    assert_true(gm_server_origin_allowed("", "127.0.0.1:9401", ""));
    /* The daemon's own pages. */
    assert_true(gm_server_origin_allowed("http://127.0.0.1:9401", "127.0.0.1:9401", ""));
    assert_true(gm_server_origin_allowed("HTTP://LOCALHOST:9401", "localhost:9401", ""));
    assert_false(gm_server_origin_allowed("http://127.0.0.1:9402", "127.0.0.1:9401", ""));
    /* The same host under https: a proxy that terminates TLS and passes the Host on. */
    assert_true(gm_server_origin_allowed("https://gpu.example", "gpu.example", ""));
    assert_false(gm_server_origin_allowed("https://gpu.example.evil", "gpu.example", ""));
    assert_false(gm_server_origin_allowed("ftp://127.0.0.1:9401", "127.0.0.1:9401", ""));
    assert_false(gm_server_origin_allowed("http://127.0.0.1:9401", NULL, ""));
    /* Another site, unless it is the configured CORS origin (never through "*"). */
    assert_false(gm_server_origin_allowed("https://evil.example", "127.0.0.1:9401", ""));
    assert_false(gm_server_origin_allowed("null", "127.0.0.1:9401", ""));
    assert_true(gm_server_origin_allowed("http://localhost:5173", "127.0.0.1:9401",
                                         "http://localhost:5173"));
    assert_false(gm_server_origin_allowed("https://evil.example", "127.0.0.1:9401", "*"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler_publishes),
        cmocka_unit_test(test_sampler_refuses_huge_history),
        cmocka_unit_test(test_sampler_bad_options),
        cmocka_unit_test(test_loopback_rule),
        cmocka_unit_test(test_origin_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
