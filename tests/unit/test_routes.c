/* test_routes.c - server/routes: the route table and what each handler answers, with no socket.
 * A gm_server is built by hand around the real sampler (two simulated GPUs, the x86 procfs
 * fixture, one sample: the poll interval outlasts the test), requests are parsed by the real
 * target parser, and each answer's status, headers and body are checked: health, the latest
 * sample plain and gzip'd, GPUs by index, host metrics on and off, history and allocation
 * parameters, sessions handed to the worker, 405 with Allow, 426, and static files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "server/assets.h"
#include "server/prom.h"
#include "server/server_int.h"

#define POLL_MS 60000 /* one sample for the whole test */

static gm_serve_config cfg;
static gm_server srv;
static gm_collector *collector;
static gm_published *pub;

static int group_setup(void **state)
{
    (void)state;
    const char *fix = getenv("GM_FIXTURES");
    if (!fix)
        return -1;
    static char procfs[4096];
    snprintf(procfs, sizeof procfs, "%s/proc/x86", fix);
    gm_collector_options copt = {
        .simulate = 2, .seed = 3, .procfs_root = procfs, .no_first_cpu_wait = true};
    gm_error err = {0};
    if (gm_collector_open(&copt, &collector, &err) != GM_OK)
        return -1;
    gm_serve_config_defaults(&cfg);
    cfg.poll_interval_ms = POLL_MS;
    cfg.history_s = 3600;
    memset(&srv, 0, sizeof srv);
    srv.cfg = &cfg;
    srv.collector = collector;
    srv.started_mono_ms = gm_clock_mono_ms();
    snprintf(srv.provider, sizeof srv.provider, "%s", gm_collector_provider(collector));
    srv.port = 9401;
    gm_sampler_options sopt = {
        .collector = collector, .poll_ms = POLL_MS, .history_s = cfg.history_s};
    if (gm_sampler_start(&sopt, NULL, NULL, &srv.sampler, &err) != GM_OK ||
        gm_sampler_wait_first(srv.sampler, 20000, &err) != GM_OK)
        return -1;
    pub = gm_sampler_latest(srv.sampler);
    return pub && pub->gpu_count == 2 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    gm_published_unref(pub);
    gm_sampler_free(srv.sampler);
    gm_collector_close(collector);
    return 0;
}

/* Each test starts from the default settings. */
static int setup(void **state)
{
    (void)state;
    cfg.system_metrics = true;
    cfg.history_s = 3600;
    snprintf(srv.provider, sizeof srv.provider, "sim");
    srv.diagnosis[0] = '\0';
    srv.web_root[0] = '\0';
    srv.lease_dir[0] = '\0';
    srv.inflight_bytes = 0;
    return 0;
}

/* One request as http.c hands it over: the target parsed, the route found, rest set. */
typedef struct call {
    gm_query q;
    char path[GM_HTTP_PATH_MAX];
    gm_req rq;
    gm_resp rs;
    const gm_route *route;
} call;

static call *request(unsigned method, const char *target, gm_published *p, bool gzip_ok,
                     const char *body)
{
    call *c = calloc(1, sizeof *c);
    assert_non_null(c);
    gm_error err = {0};
    if (gm_http_target_parse(target, strlen(target), c->path, sizeof c->path, &c->q, &err) < 0)
        fail_msg("%s: %s", target, err.msg);
    c->route = gm_route_find(c->path);
    if (!c->route)
        fail_msg("%s: no route", c->path);
    c->rq = (gm_req){.srv = &srv,
                     .method = method,
                     .path = c->path,
                     .rest = c->path + strlen(c->route->path),
                     .q = &c->q,
                     .pub = p,
                     .body = body,
                     .body_len = body ? strlen(body) : 0,
                     .gzip_ok = gzip_ok};
    gm_route_run(c->route, &c->rq, &c->rs);
    return c;
}

static call *get(const char *target)
{
    return request(GM_HTTP_GET, target, pub, false, NULL);
}

static void done(call *c)
{
    gm_resp_release(&c->rs);
    gm_worker_job_free(c->rs.defer);
    free(c);
}

/* The body as JSON (the caller decrefs). */
static json_t *body_json(const call *c)
{
    assert_non_null(c->rs.body);
    assert_string_equal(c->rs.ctype, "application/json");
    json_error_t jerr;
    json_t *j = json_loadb((const char *)c->rs.body, c->rs.len, 0, &jerr);
    if (!j)
        fail_msg("%s: not JSON (%s): %.*s", c->path, jerr.text, (int)c->rs.len,
                 (const char *)c->rs.body);
    return j;
}

/* Asserts an error answer: status, and that {"error": ...} contains says. */
static void assert_error(call *c, int status, const char *says)
{
    if (c->rs.status != status)
        fail_msg("%s: status %d, want %d (%.*s)", c->path, c->rs.status, status, (int)c->rs.len,
                 c->rs.body ? (const char *)c->rs.body : "");
    json_t *j = body_json(c);
    const char *e = json_string_value(json_object_get(j, "error"));
    if (!e || !strstr(e, says))
        fail_msg("%s: error \"%s\", want \"%s\"", c->path, e ? e : "(none)", says);
    json_decref(j);
    assert_null(c->rs.pin);
    done(c);
}

/* ---- the route table ----------------------------------------------------------------------- */

static void test_route_table(void **state)
{
    (void)state;
    static const char *const exact[] = {
        "/api/health",    "/api/config",     "/api/gpus",
        "/api/processes", "/api/system",     "/api/history",
        "/api/sessions",  "/api/allocation", "/api/v1/monitoring/gpu-metrics",
        "/stats",         "/metrics",        "/ws/gpu",
        "/ws/metrics"};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
        const gm_route *r = gm_route_find(exact[i]);
        if (!r || strcmp(r->path, exact[i]) != 0)
            fail_msg("%s: no route of its own", exact[i]);
        assert_false(r->prefix);
        assert_non_null(r->fn);
        assert_true(r->needs_token); /* every API route; the dashboard's files are not routes */
        assert_true(r->methods & GM_HTTP_GET);
        assert_true(r->methods & GM_HTTP_HEAD);
        assert_int_equal(r->websocket, strncmp(exact[i], "/ws/", 4) == 0);
        /* Only sessions take a body or POST. */
        bool sessions = strcmp(exact[i], "/api/sessions") == 0;
        assert_int_equal(r->max_body > 0, sessions);
        assert_int_equal((r->methods & GM_HTTP_POST) != 0, sessions);
    }
    /* Prefix routes: a GPU by index, a session by id. */
    const gm_route *r = gm_route_find("/api/gpus/3");
    assert_non_null(r);
    assert_true(r->prefix);
    assert_string_equal(r->path, "/api/gpus/");
    assert_ptr_equal(gm_route_find("/api/gpus/"), r);
    r = gm_route_find("/api/sessions/abc/stop");
    assert_non_null(r);
    assert_string_equal(r->path, "/api/sessions/");
    assert_true(r->methods & GM_HTTP_DELETE);
    assert_true(r->max_body > 0);
    /* Exact means exact. */
    static const char *const none[] = {
        "/",           "/index.html", "/api",     "/api/", "/api/gpusx",    "/api/health/",
        "/API/health", "/metrics/",   "/api/gpu", "/ws",   "/ws/gpu/extra", "/api/health?x=1"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        if (gm_route_find(none[i]))
            fail_msg("%s has a route", none[i]);
}

/* ---- the latest sample ---------------------------------------------------------------------- */

static void test_health(void **state)
{
    (void)state;
    call *c = get("/api/health");
    assert_int_equal(c->rs.status, 200);
    json_t *j = body_json(c);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(j, "provider")), "sim");
    assert_int_equal(json_integer_value(json_object_get(j, "gpu_count")), 2);
    assert_string_equal(json_string_value(json_object_get(j, "version")), GM_VERSION);
    assert_int_equal(json_integer_value(json_object_get(j, "poll_interval_ms")), POLL_MS);
    assert_true(json_integer_value(json_object_get(j, "samples_total")) >= 1);
    assert_int_equal(json_integer_value(json_object_get(j, "sample_errors_total")), 0);
    assert_true(json_is_null(json_object_get(j, "last_error")));
    assert_true(json_is_number(json_object_get(j, "last_sample_age_seconds")));
    assert_int_equal(json_array_size(json_object_get(j, "lost_gpus")), 0);
    assert_null(json_object_get(j, "diagnosis"));
    json_decref(j);
    done(c);

    /* No GPU source: still 200 (the host is served), saying why and what to do. */
    snprintf(srv.provider, sizeof srv.provider, "none");
    snprintf(srv.diagnosis, sizeof srv.diagnosis, "nvml: gone\nnvidia-smi: not found on PATH");
    c = get("/api/health");
    assert_int_equal(c->rs.status, 200);
    j = body_json(c);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "no_gpu");
    assert_string_equal(json_string_value(json_object_get(j, "diagnosis")), srv.diagnosis);
    assert_non_null(strstr(json_string_value(json_object_get(j, "hint")), "--simulate"));
    json_decref(j);
    done(c);
}

/* Inflates a gzip body. */
static char *gunzip(const unsigned char *in, size_t n, size_t *len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
    size_t cap = n * 20 + 4096;
    char *out = malloc(cap);
    assert_non_null(out);
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)n;
    zs.next_out = (unsigned char *)out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
    *len = zs.total_out;
    inflateEnd(&zs);
    return out;
}

static void test_gpus_plain_and_gzip(void **state)
{
    (void)state;
    call *c = get("/api/gpus");
    assert_int_equal(c->rs.status, 200);
    assert_string_equal(c->rs.ctype, "application/json");
    /* The published bytes themselves, pinned while sent; never rendered per request. */
    assert_ptr_equal(c->rs.body, gm_published_blob(pub, GM_BLOB_FULL)->data);
    assert_int_equal(c->rs.len, gm_published_blob(pub, GM_BLOB_FULL)->len);
    assert_ptr_equal(c->rs.pin, pub);
    assert_null(c->rs.owned);
    assert_false(c->rs.gzip);
    assert_true(c->rs.vary_ae);
    json_t *j = body_json(c);
    assert_int_equal(json_array_size(json_object_get(j, "gpus")), 2);
    json_decref(j);
    done(c);

    /* A client that accepts gzip gets the gzip'd form of the same document. */
    c = request(GM_HTTP_GET, "/api/gpus", pub, true, NULL);
    assert_int_equal(c->rs.status, 200);
    assert_true(c->rs.gzip);
    assert_true(c->rs.vary_ae);
    assert_ptr_equal(c->rs.body, gm_published_blob(pub, GM_BLOB_FULL_GZ)->data);
    size_t len = 0;
    char *plain = gunzip(c->rs.body, c->rs.len, &len);
    assert_int_equal(len, gm_published_blob(pub, GM_BLOB_FULL)->len);
    assert_memory_equal(plain, gm_published_blob(pub, GM_BLOB_FULL)->data, len);
    free(plain);
    done(c);

    /* Prometheus likewise. */
    c = request(GM_HTTP_GET, "/metrics", pub, true, NULL);
    assert_int_equal(c->rs.status, 200);
    assert_string_equal(c->rs.ctype, GM_PROM_CONTENT_TYPE);
    assert_true(c->rs.gzip);
    assert_ptr_equal(c->rs.body, gm_published_blob(pub, GM_BLOB_PROM_GZ)->data);
    done(c);
    c = get("/metrics");
    assert_false(c->rs.gzip);
    assert_ptr_equal(c->rs.body, gm_published_blob(pub, GM_BLOB_PROM)->data);
    assert_non_null(strstr((const char *)c->rs.body, "DCGM_FI_DEV_GPU_UTIL"));
    done(c);

    /* The other published bodies. */
    static const struct {
        const char *path;
        gm_blob_kind kind;
    } blobs[] = {{"/api/processes", GM_BLOB_PROCESSES},
                 {"/stats", GM_BLOB_STATS},
                 {"/api/v1/monitoring/gpu-metrics", GM_BLOB_GPU_METRICS},
                 {"/api/system", GM_BLOB_SYSTEM}};
    for (size_t i = 0; i < sizeof blobs / sizeof *blobs; i++) {
        const gm_blob *b = gm_published_blob(pub, blobs[i].kind);
        c = get(blobs[i].path);
        assert_int_equal(c->rs.status, 200);
        assert_ptr_equal(c->rs.body, b->data);
        assert_int_equal(c->rs.len, b->len);
        assert_ptr_equal(c->rs.pin, pub);
        done(c);
    }
}

static void test_before_the_first_sample(void **state)
{
    (void)state;
    static const char *const paths[] = {"/api/gpus",
                                        "/api/gpus/0",
                                        "/api/processes",
                                        "/api/system",
                                        "/metrics",
                                        "/stats",
                                        "/api/v1/monitoring/gpu-metrics"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        call *c = request(GM_HTTP_GET, paths[i], NULL, true, NULL);
        assert_int_equal(c->rs.retry_after, 1);
        assert_error(c, 503, "no sample yet");
    }
    /* Parameters are still checked first: a bad request is a 400 whatever the state. */
    assert_error(request(GM_HTTP_GET, "/api/gpus/x", NULL, false, NULL), 400, "GPU index");
    assert_error(request(GM_HTTP_GET, "/api/allocation?count=0", NULL, false, NULL), 400,
                 "count=\"0\"");
    call *c = request(GM_HTTP_GET, "/api/allocation?count=1", NULL, false, NULL);
    assert_int_equal(c->rs.retry_after, 1);
    assert_error(c, 503, "no sample yet");
}

static void test_gpu_by_index(void **state)
{
    (void)state;
    for (unsigned i = 0; i < 2; i++) {
        char target[32];
        snprintf(target, sizeof target, "/api/gpus/%u", i);
        call *c = get(target);
        assert_int_equal(c->rs.status, 200);
        assert_ptr_equal(c->rs.body, gm_published_gpu(pub, i)->data);
        assert_ptr_equal(c->rs.pin, pub);
        json_t *j = body_json(c);
        assert_int_equal(json_integer_value(json_object_get(j, "index")), i);
        json_decref(j);
        done(c);
    }
    /* Leading zeros are still the number, up to six digits. */
    call *c = get("/api/gpus/000001");
    assert_int_equal(c->rs.status, 200);
    assert_ptr_equal(c->rs.body, gm_published_gpu(pub, 1)->data);
    done(c);
    /* Not a GPU of this sample: 404 saying how many there are. */
    assert_error(get("/api/gpus/2"), 404, "no GPU with index 2 (2 GPU(s) visible)");
    assert_error(get("/api/gpus/999999"), 404, "no GPU with index 999999");
    /* Not an index: 400. */
    static const char *const bad[] = {"/api/gpus/x",    "/api/gpus/-1",     "/api/gpus/1a",
                                      "/api/gpus/0x1",  "/api/gpus/+1",     "/api/gpus/1.0",
                                      "/api/gpus/%201", "/api/gpus/1234567"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_error(get(bad[i]), 400, "GPU index must be a non-negative integer");
    /* Not a GPU path at all: 404. */
    assert_error(get("/api/gpus/"), 404, "no such endpoint: /api/gpus/");
    assert_error(get("/api/gpus/0/extra"), 404, "no such endpoint");
}

static void test_system_off_and_on(void **state)
{
    (void)state;
    cfg.system_metrics = false;
    assert_error(get("/api/system"), 404, "host metrics are disabled");
    cfg.system_metrics = true;
    call *c = get("/api/system");
    assert_int_equal(c->rs.status, 200);
    assert_ptr_equal(c->rs.body, gm_published_blob(pub, GM_BLOB_SYSTEM)->data);
    json_t *j = body_json(c);
    /* The host of the fixture /proc. */
    assert_string_equal(json_string_value(json_object_get(j, "hostname")), "gpu-node-07");
    assert_int_equal(json_integer_value(json_object_get(j, "cpu_count")), 2);
    json_decref(j);
    done(c);
}

/* ---- per-request answers -------------------------------------------------------------------- */

static void test_history(void **state)
{
    (void)state;
    call *c = get("/api/history?metric=utilization.gpu,host.memory.used&seconds=5m");
    assert_int_equal(c->rs.status, 200);
    assert_non_null(c->rs.owned); /* built for this request */
    assert_null(c->rs.pin);
    json_t *j = body_json(c);
    assert_int_equal(json_integer_value(json_object_get(j, "interval_ms")), POLL_MS);
    assert_true(json_is_null(json_object_get(j, "step_ms")));
    assert_int_equal(json_integer_value(json_object_get(j, "seconds")), 300);
    json_t *series = json_object_get(j, "series");
    assert_int_equal(json_array_size(series), 3); /* two GPUs, then the host */
    json_t *s0 = json_array_get(series, 0), *s2 = json_array_get(series, 2);
    assert_int_equal(json_integer_value(json_object_get(s0, "gpu")), 0);
    assert_string_equal(json_string_value(json_object_get(s0, "metric")), "utilization.gpu");
    assert_string_equal(json_string_value(json_object_get(s0, "unit")), "%");
    assert_true(json_array_size(json_object_get(s0, "points")) >= 1);
    assert_null(json_object_get(s2, "gpu"));
    assert_string_equal(json_string_value(json_object_get(s2, "metric")), "host.memory.used");
    json_decref(j);
    done(c);

    static const struct {
        const char *target, *says;
    } bad[] = {
        {"/api/history", "metric is required"},
        {"/api/history?gpu=0", "metric is required"},
        {"/api/history?metric=nope", "unknown metric \"nope\""},
        {"/api/history?metric=power.draw&gpu=7", "gpu=7 is not recorded"},
        {"/api/history?metric=power.draw&gpu=x", "is not a GPU index"},
        {"/api/history?metric=power.draw&seconds=2h", "more than the 3600 s of history"},
        {"/api/history?metric=power.draw&seconds=0", "seconds=\"0\""},
        {"/api/history?metric=power.draw&step=0x10", "step=\"0x10\""},
        {"/api/history?metric=power.draw&limit=5", "unknown parameter \"limit\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_error(get(bad[i].target), 400, bad[i].says);
    cfg.history_s = 0;
    assert_error(get("/api/history?metric=power.draw"), 400, "history is disabled");
    cfg.history_s = 3600;
    /* Too many unfinished responses: 503, come back later. */
    srv.inflight_bytes = GM_HTTP_INFLIGHT_LIMIT + 1;
    c = get("/api/history?metric=power.draw");
    assert_int_equal(c->rs.retry_after, 1);
    assert_error(c, 503, "server busy");
}

static void test_allocation(void **state)
{
    (void)state;
    call *c = get("/api/allocation?count=1&max_util=100&min_free_mb=0&ignore_leases=true&token=t");
    assert_int_equal(c->rs.status, 200);
    json_t *j = body_json(c);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 1);
    assert_true(json_is_boolean(json_object_get(j, "satisfied")));
    assert_true(json_is_null(json_object_get(j, "lease_dir"))); /* none configured */
    json_decref(j);
    done(c);

    static const struct {
        const char *target, *says;
    } bad[] = {
        {"/api/allocation?max_util=0x64", "max_util=\"0x64\" is not a utilization"},
        {"/api/allocation?max_util=101", "max_util=\"101\""},
        {"/api/allocation?max_util=-1", "max_util=\"-1\""},
        {"/api/allocation?max_util=", "max_util=\"\""},
        {"/api/allocation?count=0", "count=\"0\" is not a whole number of GPUs from 1 to 64"},
        {"/api/allocation?count=65", "count=\"65\""},
        {"/api/allocation?count=1.5", "count=\"1.5\""},
        {"/api/allocation?min_free_mb=-1", "min_free_mb=\"-1\""},
        {"/api/allocation?min_free_mb=1e3", "min_free_mb=\"1e3\""},
        {"/api/allocation?ignore_leases=maybe", "ignore_leases=\"maybe\""},
        {"/api/allocation?gpus=1",
         "unknown parameter \"gpus\" (accepted: count, min_free_mb, max_util, ignore_leases)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_error(get(bad[i].target), 400, bad[i].says);
}

/* ---- benchmarks: read by the worker ---------------------------------------------------------- */

static void test_benchmarks(void **state)
{
    (void)state;
    call *c = get("/api/benchmarks");
    assert_non_null(c->rs.defer);
    assert_int_equal(c->rs.defer->op, GM_JOB_BENCH_LIST);
    assert_int_equal(c->rs.defer->limit, 100);
    done(c);
    c = get("/api/benchmarks?limit=3");
    assert_int_equal(c->rs.defer->limit, 3);
    done(c);
    assert_error(get("/api/benchmarks?limit=0"), 400, "limit=\"0\"");
    assert_error(get("/api/benchmarks?kind=bench"), 400, "unknown parameter \"kind\"");
    c = get("/api/benchmarks/20261126-010516-a1b2c3");
    assert_int_equal(c->rs.defer->op, GM_JOB_BENCH_GET);
    assert_string_equal(c->rs.defer->id, "20261126-010516-a1b2c3");
    done(c);
    assert_error(get("/api/benchmarks/"), 404, "no such endpoint");
    assert_error(get("/api/benchmarks/a/b"), 404, "no such endpoint");
    c = get("/api/benchmarks/20261126-010516-a1b2c3/report.html");
    assert_int_equal(c->rs.defer->op, GM_JOB_BENCH_GET);
    assert_string_equal(c->rs.defer->id, "20261126-010516-a1b2c3");
    assert_true(c->rs.defer->html);
    done(c);
    assert_error(get("/api/benchmarks/a/report.htm"), 404, "no such endpoint");
    assert_error(get("/api/benchmarks//report.html"), 404, "no such endpoint");
    assert_error(get("/api/benchmarks/abc?timeline=0"), 400, "unknown parameter \"timeline\"");
    /* Compare: 2 to 16 ids, comma-separated. */
    c = get("/api/benchmarks/compare?ids=a-1,b.2,c_3");
    assert_int_equal(c->rs.defer->op, GM_JOB_BENCH_COMPARE);
    assert_int_equal(c->rs.defer->nids, 3);
    assert_string_equal(c->rs.defer->ids[0], "a-1");
    assert_string_equal(c->rs.defer->ids[2], "c_3");
    done(c);
    assert_error(get("/api/benchmarks/compare"), 400, "give 2 to 16 benchmark ids");
    assert_error(get("/api/benchmarks/compare?ids=a"), 400, "give 2 to 16 benchmark ids");
    assert_error(get("/api/benchmarks/compare?ids=a,,b"), 400, "\"\" is not a benchmark id");
    assert_error(get("/api/benchmarks/compare?ids=a,b%21"), 400, "\"b!\" is not a benchmark id");
    assert_error(get("/api/benchmarks/compare?ids=a,b&x=1"), 400, "unknown parameter \"x\"");
    assert_error(get("/api/benchmarks/compare?ids=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"), 400,
                 "at most 16 benchmarks");
}

/* ---- the fleet: requests handed to the fleet thread ---------------------------------------- */

static void test_fleet(void **state)
{
    (void)state;
    /* Without --prometheus: off, and the answer says how to turn it on. */
    assert_error(get("/api/fleet"), 404, "start the daemon with --prometheus URL");
    gm_fleet_cache_options o = {.url = "http://127.0.0.1:1", .job = "gpumon"};
    gm_error err = {0};
    assert_int_equal(gm_fleet_cache_start(&o, &srv.fleet, &err), GM_OK);
    call *c = get("/api/fleet");
    assert_non_null(c->rs.defer); /* answered later by the fleet thread */
    assert_int_equal(c->rs.defer->op, GM_JOB_FLEET);
    assert_true(c->rs.defer->fleet.max_util_pct == 30);
    assert_true(c->rs.defer->fleet.max_mem_pct == 50);
    assert_int_equal(c->rs.defer->fleet_gpus, 0);
    done(c);
    c = get("/api/fleet?max_util=10&max_mem_percent=25.5&gpus=4");
    assert_true(c->rs.defer->fleet.max_util_pct == 10);
    assert_true(c->rs.defer->fleet.max_mem_pct == 25.5);
    assert_int_equal(c->rs.defer->fleet_gpus, 4);
    done(c);
    assert_error(get("/api/fleet?max_util=101"), 400, "max_util=\"101\"");
    assert_error(get("/api/fleet?max_mem_percent=0x10"), 400, "max_mem_percent=\"0x10\"");
    assert_error(get("/api/fleet?gpus=0"), 400, "gpus=\"0\"");
    assert_error(get("/api/fleet?node=a"), 400, "unknown parameter \"node\"");
    gm_fleet_cache_free(srv.fleet);
    srv.fleet = NULL;
}

/* ---- sessions: requests handed to the worker ------------------------------------------------ */

static void test_sessions(void **state)
{
    (void)state;
    call *c = get("/api/sessions");
    assert_non_null(c->rs.defer); /* answered later by the session worker */
    assert_int_equal(c->rs.defer->op, GM_JOB_LIST);
    assert_int_equal(c->rs.defer->limit, 100);
    assert_string_equal(c->rs.defer->kind, "");
    done(c);
    c = get("/api/sessions?limit=5&kind=record");
    assert_int_equal(c->rs.defer->limit, 5);
    assert_string_equal(c->rs.defer->kind, "record");
    done(c);
    assert_error(get("/api/sessions?limit=0"), 400, "limit=\"0\"");
    assert_error(get("/api/sessions?kind=Record"), 400, "kind=\"Record\"");
    assert_error(get("/api/sessions?label=x"), 400, "unknown parameter \"label\"");

    /* POST: a session made now, its id in Location. */
    c = request(GM_HTTP_POST, "/api/sessions", pub, false, "{\"gpus\": [1], \"label\": \"t\"}");
    assert_non_null(c->rs.defer);
    assert_int_equal(c->rs.defer->op, GM_JOB_CREATE);
    assert_non_null(c->rs.defer->session);
    assert_int_equal(c->rs.defer->create.ngpus, 1);
    assert_int_equal(strncmp(c->rs.location, "/api/sessions/", 14), 0);
    assert_true(strlen(c->rs.location) > 14);
    done(c);
    assert_error(request(GM_HTTP_POST, "/api/sessions", pub, false, "{bad"), 400, "not valid JSON");
    assert_error(request(GM_HTTP_POST, "/api/sessions", pub, false, "{\"gpus\": [5]}"), 400,
                 "no GPU with index 5");
    assert_error(request(GM_HTTP_POST, "/api/sessions?x=1", pub, false, "{}"), 400,
                 "unknown parameter \"x\" (accepted: none)");
    c = request(GM_HTTP_POST, "/api/sessions", NULL, false, "{}");
    assert_error(c, 503, "no sample yet");

    /* One session: GET, DELETE, POST .../stop. */
    c = get("/api/sessions/20261126-010516-a1b2c3");
    assert_int_equal(c->rs.defer->op, GM_JOB_GET);
    assert_string_equal(c->rs.defer->id, "20261126-010516-a1b2c3");
    assert_true(c->rs.defer->timeline);
    done(c);
    c = get("/api/sessions/abc?timeline=0");
    assert_false(c->rs.defer->timeline);
    done(c);
    assert_error(get("/api/sessions/abc?timeline=maybe"), 400, "timeline=\"maybe\"");
    c = request(GM_HTTP_DELETE, "/api/sessions/abc", pub, false, NULL);
    assert_int_equal(c->rs.defer->op, GM_JOB_DELETE);
    assert_string_equal(c->rs.defer->id, "abc");
    done(c);
    assert_error(request(GM_HTTP_DELETE, "/api/sessions/abc?force=1", pub, false, NULL), 400,
                 "unknown parameter \"force\"");
    c = request(GM_HTTP_POST, "/api/sessions/abc/stop", pub, false, NULL);
    assert_int_equal(c->rs.defer->op, GM_JOB_STOP);
    assert_string_equal(c->rs.defer->id, "abc");
    done(c);
    /* Export: JSON unless format=csv. */
    c = get("/api/sessions/abc/export");
    assert_int_equal(c->rs.defer->op, GM_JOB_EXPORT);
    assert_string_equal(c->rs.defer->id, "abc");
    assert_false(c->rs.defer->csv);
    done(c);
    c = get("/api/sessions/abc/export?format=csv");
    assert_true(c->rs.defer->csv);
    done(c);
    c = get("/api/sessions/abc/export?format=json");
    assert_false(c->rs.defer->csv);
    done(c);
    assert_error(get("/api/sessions/abc/export?format=xml"), 400,
                 "format=\"xml\" is not csv or json");
    assert_error(get("/api/sessions/abc/export?timeline=0"), 400, "unknown parameter \"timeline\"");
    c = request(GM_HTTP_DELETE, "/api/sessions/abc/export", pub, false, NULL);
    assert_string_equal(c->rs.allow, "GET, HEAD, OPTIONS");
    assert_error(c, 405, "takes GET");
    /* Not one of our ids, or not a session path. */
    static const char *const not_ours[] = {
        "/api/sessions/",          "/api/sessions/a%21b",        "/api/sessions/a b",
        "/api/sessions/abc/start", "/api/sessions/abc/stop/now", "/api/sessions/abc/export/csv"};
    for (size_t i = 0; i < sizeof not_ours / sizeof *not_ours; i++)
        assert_error(get(not_ours[i]), 404, "no such endpoint");
    char longid[GM_SESSION_ID_LEN + 32];
    snprintf(longid, sizeof longid, "/api/sessions/");
    memset(longid + 14, 'a', GM_SESSION_ID_LEN);
    longid[14 + GM_SESSION_ID_LEN] = '\0';
    assert_error(get(longid), 404, "no such endpoint");
}

/* ---- methods -------------------------------------------------------------------------------- */

static void h_refuse(const gm_req *rq, gm_resp *rs)
{
    gm_resp_error(rs, 405, "%s refused", rq->path);
}

static void h_ok(const gm_req *rq, gm_resp *rs)
{
    (void)rq;
    gm_resp_error(rs, 200, "fine");
}

static void test_405_with_allow(void **state)
{
    (void)state;
    /* Handlers that refuse a method say which ones the path takes. */
    call *c = get("/api/sessions/abc/stop");
    assert_string_equal(c->rs.allow, "POST, OPTIONS");
    assert_error(c, 405, "takes POST");
    c = request(GM_HTTP_POST, "/api/sessions/abc", pub, false, NULL);
    assert_string_equal(c->rs.allow, "GET, HEAD, DELETE, OPTIONS");
    assert_error(c, 405, "POST is not allowed");
    c = request(GM_HTTP_DELETE, "/api/sessions/abc/stop", pub, false, NULL);
    assert_string_equal(c->rs.allow, "POST, OPTIONS");
    assert_error(c, 405, "takes POST");

    /* A 405 without an Allow of its own gets the route's methods from gm_route_run. */
    gm_route r = {"/x", false, GM_HTTP_GET | GM_HTTP_POST, true, 0, h_refuse, false, false};
    gm_req rq = {.srv = &srv, .method = GM_HTTP_PUT, .path = "/x", .rest = ""};
    gm_resp rs = {0};
    gm_route_run(&r, &rq, &rs);
    assert_int_equal(rs.status, 405);
    assert_string_equal(rs.allow, "GET, POST, OPTIONS");
    gm_resp_release(&rs);
    /* Other answers get no Allow. */
    memset(&rs, 0, sizeof rs);
    r.fn = h_ok;
    gm_route_run(&r, &rq, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.allow, "");
    gm_resp_release(&rs);
}

static void test_websocket_paths_over_plain_http(void **state)
{
    (void)state;
    assert_error(get("/ws/gpu"), 426, "/ws/gpu is a WebSocket endpoint");
    assert_error(get("/ws/metrics"), 426, "/ws/metrics is a WebSocket endpoint");
}

static void test_config(void **state)
{
    (void)state;
    call *c = get("/api/config");
    assert_int_equal(c->rs.status, 200);
    json_t *j = body_json(c);
    assert_string_equal(json_string_value(json_object_get(j, "provider_in_use")), "sim");
    assert_int_equal(json_integer_value(json_object_get(j, "port")), 9401);
    assert_int_equal(json_integer_value(json_object_get(j, "history_slots")), 60);
    assert_true(json_integer_value(json_object_get(j, "history_bytes")) > 0);
    assert_true(json_is_null(json_object_get(j, "db_path")));
    assert_true(json_is_null(json_object_get(j, "lease_dir")));
    assert_int_equal(json_integer_value(json_object_get(j, "sessions_running")), 0);
    assert_string_equal(json_string_value(json_object_get(j, "dashboard")),
                        gm_assets_embedded() ? "embedded" : "builtin");
    json_decref(j);
    done(c);
}

/* ---- static files --------------------------------------------------------------------------- */

static void test_static(void **state)
{
    (void)state;
    gm_req rq = {.srv = &srv, .method = GM_HTTP_GET};
    gm_resp rs = {0};
    /* No such file: false, nothing filled, so the caller answers its own 404. */
    assert_false(gm_route_static(&srv, "/nope.js", &rq, &rs));
    assert_int_equal(rs.status, 0);
    assert_null(rs.body);
    assert_false(gm_route_static(&srv, "/api/gpus", &rq, &rs));

    assert_true(gm_route_static(&srv, "/", &rq, &rs));
    assert_int_equal(rs.status, 200);
    assert_non_null(strstr(rs.ctype, "text/html"));
    assert_false(rs.gzip);
    assert_string_equal(rs.cache, "no-cache");
    assert_non_null(rs.etag);
    assert_int_equal(rs.vary_ae, gm_assets_has_gzip("/"));
    const char *etag = rs.etag;
    /* With gzip: the gzip'd row when the build has one. */
    rq.gzip_ok = true;
    memset(&rs, 0, sizeof rs);
    assert_true(gm_route_static(&srv, "/", &rq, &rs));
    assert_int_equal(rs.gzip, gm_assets_embedded());
    /* The client's copy is current: 304, headers only. */
    rq.gzip_ok = false;
    rq.if_none_match = etag;
    memset(&rs, 0, sizeof rs);
    assert_true(gm_route_static(&srv, "/", &rq, &rs));
    assert_int_equal(rs.status, 304);
    assert_null(rs.body);
    assert_int_equal(rs.len, 0);
    assert_null(rs.ctype);
    assert_string_equal(rs.etag, etag);
    rq.if_none_match = "\"0000000000000000\"";
    memset(&rs, 0, sizeof rs);
    assert_true(gm_route_static(&srv, "/", &rq, &rs));
    assert_int_equal(rs.status, 200);
    rq.if_none_match = NULL;

    /* --web-root: files from disk, 404 and 403 answered here. */
    char base[] = "/tmp/gm-routes-XXXXXX";
    assert_non_null(mkdtemp(base));
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/index.html", base);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("<h1>dev</h1>", f);
    fclose(f);
    assert_non_null(realpath(base, srv.web_root));
    memset(&rs, 0, sizeof rs);
    assert_true(gm_route_static(&srv, "/", &rq, &rs));
    assert_int_equal(rs.status, 200);
    assert_int_equal(rs.len, 12);
    assert_memory_equal(rs.body, "<h1>dev</h1>", 12);
    assert_non_null(rs.owned);
    gm_resp_release(&rs);
    memset(&rs, 0, sizeof rs);
    assert_true(gm_route_static(&srv, "/missing.js", &rq, &rs));
    assert_int_equal(rs.status, 404);
    gm_resp_release(&rs);
    memset(&rs, 0, sizeof rs);
    assert_true(gm_route_static(&srv, "/../etc/passwd", &rq, &rs));
    assert_int_equal(rs.status, 403);
    gm_resp_release(&rs);
    srv.web_root[0] = '\0';
    unlink(p);
    assert_int_equal(rmdir(base), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_route_table, setup),
        cmocka_unit_test_setup(test_health, setup),
        cmocka_unit_test_setup(test_gpus_plain_and_gzip, setup),
        cmocka_unit_test_setup(test_before_the_first_sample, setup),
        cmocka_unit_test_setup(test_gpu_by_index, setup),
        cmocka_unit_test_setup(test_system_off_and_on, setup),
        cmocka_unit_test_setup(test_history, setup),
        cmocka_unit_test_setup(test_allocation, setup),
        cmocka_unit_test_setup(test_sessions, setup),
        cmocka_unit_test_setup(test_benchmarks, setup),
        cmocka_unit_test_setup(test_fleet, setup),
        cmocka_unit_test_setup(test_405_with_allow, setup),
        cmocka_unit_test_setup(test_websocket_paths_over_plain_http, setup),
        cmocka_unit_test_setup(test_config, setup),
        cmocka_unit_test_setup(test_static, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
