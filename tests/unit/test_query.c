/* test_query.c - server/query: the bounded query parameters of one request (splitting, decoding,
 * limits) and the /api/history requests validated from them (GPU and metric lists, ranges,
 * steps, point limits, and the message of each refusal). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/query.h"

/* ---- query parameters ----------------------------------------------------------------------- */

static void add(gm_query *q, const char *frag)
{
    gm_error err = {0};
    assert_int_equal(gm_query_parse(q, frag, strlen(frag), &err), GM_OK);
}

static void test_query_params(void **state)
{
    (void)state;
    gm_query q;
    gm_error err = {0};
    gm_query_init(&q);
    add(&q, "a=1");
    add(&q, "flag");
    add(&q, "b==x"); /* the first '=' splits */
    add(&q, "");     /* "a=1&&b" has an empty fragment: skipped */
    add(&q, "a=2");
    assert_int_equal(q.count, 4);
    assert_string_equal(gm_query_get(&q, "a"), "1");
    assert_string_equal(gm_query_get(&q, "flag"), "");
    assert_string_equal(gm_query_get(&q, "b"), "=x");
    assert_null(gm_query_get(&q, "c"));
    /* Decoded once, after splitting: an encoded "=" or "&" stays data, "+" is a space. */
    add(&q, "p=%41&e%3D=x%26y&s=a+b");
    assert_string_equal(gm_query_get(&q, "p"), "A");
    assert_string_equal(gm_query_get(&q, "e="), "x&y");
    assert_string_equal(gm_query_get(&q, "s"), "a b");

    assert_int_equal(gm_query_parse(&q, "=v", 2, &err), GM_EINVAL);
    assert_int_equal(gm_query_parse(&q, "a=\x01", 3, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "control"));
    assert_int_equal(gm_query_parse(&q, "a\0b=1", 5, &err), GM_EINVAL);
    assert_int_equal(gm_query_parse(&q, "a=%01", 5, &err), GM_EINVAL);
    assert_int_equal(gm_query_parse(&q, "a=%00", 5, &err), GM_EINVAL);
    assert_int_equal(gm_query_parse(&q, "a=%zz", 5, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "percent"));
    assert_int_equal(gm_query_parse(&q, "a=%4", 4, &err), GM_EINVAL);

    gm_query_init(&q);
    for (int i = 0; i < GM_QUERY_MAX_PARAMS; i++)
        add(&q, "k=v");
    assert_int_equal(gm_query_parse(&q, "k=v", 3, &err), GM_EINVAL);

    gm_query_init(&q);
    char big[GM_QUERY_MAX_BYTES];
    memset(big, 'x', sizeof big);
    big[0] = 'k';
    big[1] = '=';
    assert_int_equal(gm_query_parse(&q, big, sizeof big, &err), GM_EINVAL);
    assert_int_equal(q.count, 0);
}

static int parse_history(gm_history_params *out, gm_error *err, unsigned gpus, unsigned history_s,
                         unsigned poll_ms, ...)
{
    gm_query q;
    gm_query_init(&q);
    va_list ap;
    va_start(ap, poll_ms);
    for (const char *f; (f = va_arg(ap, const char *)) != NULL;)
        assert_int_equal(gm_query_parse(&q, f, strlen(f), err), GM_OK);
    va_end(ap);
    memset(err, 0, sizeof *err);
    return gm_history_params_parse(&q, gpus, NULL, history_s, poll_ms, out, err);
}

static void test_history_default_every_gpu(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    /* No gpu: every recorded GPU; seconds defaults to 60. */
    assert_int_equal(parse_history(&p, &err, 4, 3600, 1000, "metric=utilization.gpu", NULL), GM_OK);
    assert_int_equal(p.count, 4);
    assert_int_equal(p.range_ms, 60000);
    assert_int_equal(p.step_ms, 0);
    assert_int_equal(p.series[3].gpu, 3);
    assert_int_equal(p.series[0].metric, GM_M_UTIL_GPU_PCT);
}

/* GPU indexes with a gap (only 1 and 3 exist): the default lists those two, and asking for an
 * index that is not in the sample is an error, never a series of nulls. */
static void test_history_gpu_gap(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    gm_query q;
    gm_query_init(&q);
    const bool present[4] = {false, true, false, true};
    assert_int_equal(gm_query_parse(&q, "metric=power.draw", 17, &err), GM_OK);
    assert_int_equal(gm_history_params_parse(&q, 4, present, 3600, 1000, &p, &err), GM_OK);
    assert_int_equal(p.count, 2);
    assert_int_equal(p.series[0].gpu, 1);
    assert_int_equal(p.series[1].gpu, 3);
    assert_int_equal(gm_query_parse(&q, "gpu=0", 5, &err), GM_OK);
    assert_int_equal(gm_history_params_parse(&q, 4, present, 3600, 1000, &p, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "not in the latest sample"));
}

static void test_history_lists_folded(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    char name[64];
    /* Comma-separated and repeated, GPU and host metrics, duplicates folded. */
    assert_int_equal(parse_history(&p, &err, 4, 3600, 1000, "gpu=1,2", "gpu=2",
                                   "metric=power.draw,host.cpu.utilization", "metric=power.draw",
                                   "seconds=15m", "step=2.5", NULL),
                     GM_OK);
    assert_int_equal(p.count, 3);
    assert_int_equal(p.series[0].source, GM_RING_GPU);
    assert_int_equal(p.series[0].gpu, 1);
    assert_int_equal(p.series[1].gpu, 2);
    assert_int_equal(p.series[2].source, GM_RING_HOST);
    assert_string_equal(gm_history_series_name(&p.series[2], name, sizeof name),
                        "host.cpu.utilization");
    assert_string_equal(gm_history_series_name(&p.series[0], name, sizeof name), "power.draw");
    assert_int_equal(p.range_ms, 900000);
    assert_int_equal(p.step_ms, 2500);
}

static void test_history_short_history_range(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    /* A short history shortens the default range. */
    assert_int_equal(parse_history(&p, &err, 1, 30, 1000, "metric=host.load.1m", NULL), GM_OK);
    assert_int_equal(p.range_ms, 30000);
    assert_int_equal(p.count, 1);
}

static void test_history_bad_params(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    static const struct {
        const char *frag;
        const char *says;
    } bad[] = {
        {"metric=utilisation.gpu", "unknown metric"},
        {"metric=host.nope", "unknown metric"},
        {"metric=utilization.gpu&gpu=4", "not recorded"},
        {"gpu=x", "metric is required"},
        {"seconds=abc", "seconds"},
        {"seconds=0", "seconds"},
        {"seconds=7200", "history kept"},
        {"step=0", "step"},
        {"step=-1", "step"},
        {"step=61", "step"},
        {"metrics=power.draw", "unknown parameter"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gm_query q;
        gm_query_init(&q);
        char frag[128];
        snprintf(frag, sizeof frag, "%s", bad[i].frag);
        assert_int_equal(gm_query_parse(&q, frag, strlen(frag), &err), GM_OK);
        if (!gm_query_get(&q, "metric") && !strstr(bad[i].says, "required") &&
            !strstr(bad[i].says, "parameter"))
            assert_int_equal(gm_query_parse(&q, "metric=utilization.gpu", 22, &err), GM_OK);
        memset(&err, 0, sizeof err);
        int rc = gm_history_params_parse(&q, 4, NULL, 3600, 1000, &p, &err);
        if (rc != GM_EINVAL || !strstr(err.msg, bad[i].says))
            fail_msg("case \"%s\": rc %d \"%s\"", bad[i].frag, rc, err.msg);
    }
}

static void test_history_point_limits(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    /* 1 h at 100 ms is 36001 points per series; a step brings it under. */
    assert_int_equal(
        parse_history(&p, &err, 1, 3600, 100, "metric=utilization.gpu", "seconds=3600", NULL),
        GM_EINVAL);
    assert_non_null(strstr(err.msg, "step="));
    assert_int_equal(parse_history(&p, &err, 1, 3600, 100, "metric=utilization.gpu", "seconds=3600",
                                   "step=1", NULL),
                     GM_OK);
    /* Many series of many points: over the per-request total. */
    assert_int_equal(parse_history(&p, &err, 64, 3600, 1000, "metric=utilization.gpu,memory.used",
                                   "seconds=3600", NULL),
                     GM_EINVAL);
    assert_non_null(strstr(err.msg, "points per request"));
}

static void test_history_disabled(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    assert_int_equal(parse_history(&p, &err, 1, 0, 1000, "metric=utilization.gpu", NULL),
                     GM_EINVAL);
    assert_non_null(strstr(err.msg, "disabled"));
}

static void test_history_no_gpu_host_only(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    assert_int_equal(parse_history(&p, &err, 0, 3600, 1000, "metric=host.memory.used", NULL),
                     GM_OK);
    assert_int_equal(p.count, 1);
    assert_int_equal(
        parse_history(&p, &err, 0, 3600, 1000, "metric=utilization.gpu", "gpu=0", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "no GPU"));
}

static void test_query_order_and_limits(void **state)
{
    (void)state;
    gm_query q;
    gm_error err = {0};
    gm_query_init(&q);
    /* A whole query string at once: request order kept, the first value of a key wins. */
    const char raw[] = "gpu=0&metric=a&gpu=1&&flag&empty=&x=%2B+%2b";
    assert_int_equal(gm_query_parse(&q, raw, sizeof raw - 1, &err), GM_OK);
    assert_int_equal(q.count, 6);
    assert_string_equal(q.p[0].key, "gpu");
    assert_string_equal(q.p[2].key, "gpu");
    assert_string_equal(q.p[2].value, "1");
    assert_string_equal(gm_query_get(&q, "gpu"), "0");
    assert_string_equal(gm_query_get(&q, "flag"), "");
    assert_string_equal(gm_query_get(&q, "empty"), "");
    assert_string_equal(gm_query_get(&q, "x"), "+ +");
    assert_null(gm_query_get(&q, "GPU")); /* keys are case-sensitive */
    /* Only n bytes are read: what follows is not part of the query. */
    gm_query_init(&q);
    assert_int_equal(gm_query_parse(&q, "a=1&b=2", 3, &err), GM_OK);
    assert_int_equal(q.count, 1);
    assert_null(gm_query_get(&q, "b"));
    /* Nothing at all is no parameter. */
    gm_query_init(&q);
    assert_int_equal(gm_query_parse(&q, "", 0, &err), GM_OK);
    assert_int_equal(gm_query_parse(&q, "&&&", 3, &err), GM_OK);
    assert_int_equal(q.count, 0);

    /* GM_QUERY_MAX_PARAMS in one string is fine, one more is not, and says so. */
    char many[GM_QUERY_MAX_PARAMS * 4 + 8] = "";
    for (int i = 0; i < GM_QUERY_MAX_PARAMS; i++)
        strcat(many, i ? "&k=v" : "k=v");
    gm_query_init(&q);
    assert_int_equal(gm_query_parse(&q, many, strlen(many), &err), GM_OK);
    assert_int_equal(q.count, GM_QUERY_MAX_PARAMS);
    strcat(many, "&k=v");
    gm_query_init(&q);
    memset(&err, 0, sizeof err);
    assert_int_equal(gm_query_parse(&q, many, strlen(many), &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "more than 32 query parameters"));

    /* A string longer than GM_QUERY_MAX_BYTES is refused before anything is read. */
    char big[GM_QUERY_MAX_BYTES + 2];
    memset(big, 'x', sizeof big);
    big[0] = 'k';
    big[1] = '=';
    gm_query_init(&q);
    assert_int_equal(gm_query_parse(&q, big, sizeof big, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "longer than 2048 bytes"));
    assert_int_equal(q.count, 0);
    /* The longest value that fits the buffer with its key and two terminators is kept whole. */
    gm_query_init(&q);
    assert_int_equal(gm_query_parse(&q, big, GM_QUERY_MAX_BYTES - 1, &err), GM_OK);
    assert_int_equal(strlen(gm_query_get(&q, "k")), GM_QUERY_MAX_BYTES - 3);
    /* Several parameters that each fit but together overflow the buffer are refused. */
    gm_query_init(&q);
    assert_int_equal(gm_query_parse(&q, big, 1500, &err), GM_OK);
    assert_int_equal(gm_query_parse(&q, big, 1500, &err), GM_EINVAL);
    assert_int_equal(q.count, 1);
}

/* Parses one query string and builds a history request over gpus GPUs. */
static int history_of(const char *raw, unsigned gpus, gm_history_params *p, gm_error *err)
{
    gm_query q;
    gm_query_init(&q);
    if (gm_query_parse(&q, raw, strlen(raw), err) < 0)
        fail_msg("query \"%s\": %s", raw, err->msg);
    memset(err, 0, sizeof *err);
    return gm_history_params_parse(&q, gpus, NULL, 3600, 1000, p, err);
}

static void test_history_more_cases(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    char name[64];

    /* "token" is accepted everywhere (browsers' WebSocket clients send it in the query). */
    assert_int_equal(history_of("metric=temperature.gpu&token=abc", 2, &p, &err), GM_OK);
    assert_int_equal(p.count, 2);
    assert_string_equal(gm_history_series_name(&p.series[1], name, sizeof name), "temperature.gpu");
    assert_int_equal(p.series[1].gpu, 1);

    /* Series come metric by metric, each over the GPUs in index order, host series last. */
    assert_int_equal(
        history_of("metric=host.load.1m,power.draw,utilization.gpu&gpu=1,0", 2, &p, &err), GM_OK);
    assert_int_equal(p.count, 5);
    static const struct {
        gm_ring_source source;
        unsigned gpu;
        const char *name;
    } want[] = {{GM_RING_GPU, 0, "power.draw"},
                {GM_RING_GPU, 1, "power.draw"},
                {GM_RING_GPU, 0, "utilization.gpu"},
                {GM_RING_GPU, 1, "utilization.gpu"},
                {GM_RING_HOST, 0, "host.load.1m"}};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(p.series[i].source, want[i].source);
        if (want[i].source == GM_RING_GPU)
            assert_int_equal(p.series[i].gpu, want[i].gpu);
        assert_string_equal(gm_history_series_name(&p.series[i], name, sizeof name), want[i].name);
    }

    /* Every host metric is reachable by host.<its name>. */
    for (int m = 0; m < GM_H__COUNT; m++) {
        char raw[96];
        snprintf(raw, sizeof raw, "metric=host.%s", gm_host_metric_name((gm_host_metric)m));
        assert_int_equal(history_of(raw, 0, &p, &err), GM_OK);
        assert_int_equal(p.count, 1);
        assert_int_equal(p.series[0].source, GM_RING_HOST);
        assert_int_equal(p.series[0].metric, m);
    }
    /* GPU metric names are not host names, nor the other way round. */
    assert_int_equal(history_of("metric=host.utilization.gpu", 1, &p, &err), GM_EINVAL);
    assert_int_equal(history_of("metric=cpu.utilization", 1, &p, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "unknown metric \"cpu.utilization\""));

    /* Durations in any form of the one grammar; the step may not exceed the range. */
    assert_int_equal(history_of("metric=power.draw&seconds=5m&step=1m", 1, &p, &err), GM_OK);
    assert_int_equal(p.range_ms, 300000);
    assert_int_equal(p.step_ms, 60000);
    assert_int_equal(history_of("metric=power.draw&seconds=500ms", 1, &p, &err), GM_OK);
    assert_int_equal(p.range_ms, 500);
    assert_int_equal(history_of("metric=power.draw&seconds=10&step=11", 1, &p, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "step=\"11\""));
    assert_int_equal(history_of("metric=power.draw&seconds=1h&step=0x10", 1, &p, &err), GM_EINVAL);
    assert_int_equal(history_of("metric=power.draw&seconds=-5", 1, &p, &err), GM_EINVAL);

    /* GPU indexes: decimal only. */
    static const char *const bad_gpu[] = {
        "gpu=+1", "gpu=1.0", "gpu=0x1", "gpu=", "gpu=0,,1", "gpu=-0", "gpu= 1"};
    for (size_t i = 0; i < sizeof bad_gpu / sizeof *bad_gpu; i++) {
        char raw[64];
        snprintf(raw, sizeof raw, "metric=power.draw&%s", bad_gpu[i]);
        if (history_of(raw, 4, &p, &err) != GM_EINVAL || !strstr(err.msg, "is not a GPU index"))
            fail_msg("%s: \"%s\"", bad_gpu[i], err.msg);
    }

    /* More series than one request may carry. */
    assert_int_equal(history_of("metric=power.draw,utilization.gpu,memory.used", 64, &p, &err),
                     GM_EINVAL);
    assert_non_null(strstr(err.msg, "more than 128 series"));
    /* An empty metric list names nothing. */
    assert_int_equal(history_of("metric=", 1, &p, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "unknown metric \"\""));
}

/* An item longer than the parser's buffer is cut before it is looked up; the cut must never
 * turn it into another valid GPU index or metric name. */
static void test_history_long_items(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    char raw[400];
    /* gpu=000...03 (leading zeros are fine for a short index: "03" is GPU 3). */
    assert_int_equal(history_of("metric=power.draw&gpu=03", 4, &p, &err), GM_OK);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.series[0].gpu, 3);
    int n = snprintf(raw, sizeof raw, "metric=power.draw&gpu=");
    for (int i = 0; i < 120; i++)
        raw[n++] = '0';
    raw[n++] = '3';
    raw[n] = '\0';
    int rc = history_of(raw, 4, &p, &err);
    if (rc == GM_OK)
        fail_msg("a 121-digit GPU index was read as GPU %u", p.series[0].gpu);
    assert_int_equal(rc, GM_EINVAL);
    assert_non_null(strstr(err.msg, "is not a GPU index"));
    /* A metric name followed by a long tail is unknown, and its quote in the message is cut. */
    n = snprintf(raw, sizeof raw, "metric=power.draw");
    for (int i = 0; i < 200; i++)
        raw[n++] = 'x';
    raw[n] = '\0';
    assert_int_equal(history_of(raw, 1, &p, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "unknown metric \"power.drawxxx"));
    check_lt(strlen(err.msg), 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_params),
        cmocka_unit_test(test_query_order_and_limits),
        cmocka_unit_test(test_history_default_every_gpu),
        cmocka_unit_test(test_history_gpu_gap),
        cmocka_unit_test(test_history_lists_folded),
        cmocka_unit_test(test_history_short_history_range),
        cmocka_unit_test(test_history_bad_params),
        cmocka_unit_test(test_history_point_limits),
        cmocka_unit_test(test_history_disabled),
        cmocka_unit_test(test_history_no_gpu_host_only),
        cmocka_unit_test(test_history_more_cases),
        cmocka_unit_test(test_history_long_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
