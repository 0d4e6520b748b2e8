/* test_config.c - the daemon's pure parsers: `gpumon serve` flags over GPU_MONITOR_* variables
 * over defaults, each value form with its bad cases, and the bounded query parameters and
 * /api/history requests built from them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"
#include "server/query.h"

/* Loads argv (NULL-terminated, after "serve") over envp; returns the status. */
static int load(gm_serve_config *c, const char *const *env, gm_error *err, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"serve";
    va_list ap;
    va_start(ap, err);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;)
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    memset(err, 0, sizeof *err);
    return gm_serve_config_load(c, argc, argv, env, err);
}

static void test_defaults(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, NULL, &err, NULL), GM_OK);
    assert_string_equal(c.listen.host, "127.0.0.1");
    assert_int_equal(c.listen.port, 9401);
    assert_string_equal(c.provider, "auto");
    assert_int_equal(c.poll_interval_ms, 1000);
    assert_int_equal(c.history_s, 3600);
    assert_true(c.ws_max_rate_hz == 5.0);
    assert_int_equal(c.log_level, GM_LOG_INFO);
    assert_true(c.system_metrics);
    assert_false(c.token_set);
    assert_string_equal(c.cors_origin, "");
    assert_false(c.help);
    for (int i = 0; i < GM_SET__COUNT; i++)
        assert_int_equal(c.source[i], GM_CFG_DEFAULT);
}

static void test_env_then_flags(void **state)
{
    (void)state;
    const char *env[] = {"GPU_MONITOR_POLL_INTERVAL_MS=250",
                         "GPU_MONITOR_WS_MAX_RATE_HZ=2.5",
                         "GPU_MONITOR_LOG_LEVEL=DEBUG",
                         "GPU_MONITOR_ENABLE_SYSTEM_METRICS=false",
                         "GPU_MONITOR_TELEMETRY_PROVIDER=NVIDIA-SMI",
                         "GPU_MONITOR_LISTEN=[::1]:9500",
                         "GPU_MONITOR_TOKEN=abc.DEF-123",
                         "GPU_MONITOR_HISTORY=2h30m",
                         "UNRELATED=1",
                         NULL};
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, env, &err, NULL), GM_OK);
    assert_int_equal(c.poll_interval_ms, 250);
    assert_true(c.ws_max_rate_hz == 2.5);
    assert_int_equal(c.log_level, GM_LOG_DEBUG);
    assert_false(c.system_metrics);
    assert_string_equal(c.provider, "nvidia-smi");
    assert_true(c.listen.ipv6);
    assert_string_equal(c.listen.host, "::1");
    assert_int_equal(c.listen.port, 9500);
    assert_true(c.token_set);
    assert_string_equal(c.token, "abc.DEF-123");
    assert_int_equal(c.history_s, 9000);
    assert_int_equal(c.source[GM_SET_POLL], GM_CFG_ENV);

    /* Flags win over the environment, both "--flag value" and "--flag=value". */
    assert_int_equal(
        load(&c, env, &err, "--poll-interval", "500", "--log-level=warn", "--listen", ":0", NULL),
        GM_OK);
    assert_int_equal(c.poll_interval_ms, 500);
    assert_int_equal(c.log_level, GM_LOG_WARN);
    assert_string_equal(c.listen.host, "");
    assert_int_equal(c.listen.port, 0);
    assert_int_equal(c.source[GM_SET_POLL], GM_CFG_FLAG);
    assert_int_equal(c.source[GM_SET_WS_RATE], GM_CFG_ENV);
}

static void test_flag_overrides_bad_env(void **state)
{
    (void)state;
    /* A bad variable is an error only when it is used. */
    const char *env[] = {"GPU_MONITOR_POLL_INTERVAL_MS=fast", NULL};
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, env, &err, NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "GPU_MONITOR_POLL_INTERVAL_MS"));
    assert_int_equal(load(&c, env, &err, "--poll-interval", "200", NULL), GM_OK);
    assert_int_equal(c.poll_interval_ms, 200);
}

static void test_empty_env_is_unset(void **state)
{
    (void)state;
    const char *env[] = {"GPU_MONITOR_TOKEN=", "GPU_MONITOR_LISTEN=", NULL};
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, env, &err, NULL), GM_OK);
    assert_false(c.token_set);
    assert_int_equal(c.listen.port, 9401);
}

/* Each bad value is refused with a message naming where it came from. */
static void test_bad_values_name_their_source(void **state)
{
    (void)state;
    static const struct {
        const char *env; /* NULL: use flag/value */
        const char *flag, *value;
        const char *named;
    } cases[] = {
        {"GPU_MONITOR_POLL_INTERVAL_MS=99", NULL, NULL, "GPU_MONITOR_POLL_INTERVAL_MS"},
        {"GPU_MONITOR_POLL_INTERVAL_MS=1000ms", NULL, NULL, "GPU_MONITOR_POLL_INTERVAL_MS"},
        {"GPU_MONITOR_POLL_INTERVAL_MS=-5", NULL, NULL, "GPU_MONITOR_POLL_INTERVAL_MS"},
        {"GPU_MONITOR_WS_MAX_RATE_HZ=0", NULL, NULL, "GPU_MONITOR_WS_MAX_RATE_HZ"},
        {"GPU_MONITOR_WS_MAX_RATE_HZ=inf", NULL, NULL, "GPU_MONITOR_WS_MAX_RATE_HZ"},
        {"GPU_MONITOR_WS_MAX_RATE_HZ=1e2", NULL, NULL, "GPU_MONITOR_WS_MAX_RATE_HZ"},
        {"GPU_MONITOR_WS_MAX_RATE_HZ=101", NULL, NULL, "GPU_MONITOR_WS_MAX_RATE_HZ"},
        {"GPU_MONITOR_LOG_LEVEL=verbose", NULL, NULL, "GPU_MONITOR_LOG_LEVEL"},
        {"GPU_MONITOR_ENABLE_SYSTEM_METRICS=maybe", NULL, NULL,
         "GPU_MONITOR_ENABLE_SYSTEM_METRICS"},
        {"GPU_MONITOR_TELEMETRY_PROVIDER=rocm", NULL, NULL, "GPU_MONITOR_TELEMETRY_PROVIDER"},
        {"GPU_MONITOR_LISTEN=0.0.0.0", NULL, NULL, "GPU_MONITOR_LISTEN"},
        {"GPU_MONITOR_TOKEN=has space", NULL, NULL, "GPU_MONITOR_TOKEN"},
        {"GPU_MONITOR_HISTORY=8d", NULL, NULL, "GPU_MONITOR_HISTORY"},
        {NULL, "--poll-interval", "50", "--poll-interval"},
        {NULL, "--poll-interval", "3600001", "--poll-interval"},
        {NULL, "--ws-max-rate", "fast", "--ws-max-rate"},
        {NULL, "--history", "1x", "--history"},
        {NULL, "--history", "30m1h", "--history"},
        {NULL, "--listen", "example.com:80", "--listen"},
        {NULL, "--listen", "127.0.0.1:65536", "--listen"},
        {NULL, "--cors-origin", "evil\r\nX: y", "--cors-origin"},
        {NULL, "--cors-origin", "localhost", "--cors-origin"},
        {NULL, "--token", "", "--token"},
        {NULL, "--simulate", "0", "--simulate"},
        {NULL, "--simulate", "65", "--simulate"},
        {NULL, "--seed", "-1", "--seed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gm_serve_config c;
        gm_error err;
        int rc;
        if (cases[i].env) {
            const char *env[] = {cases[i].env, NULL};
            rc = load(&c, env, &err, NULL);
        } else {
            rc = load(&c, NULL, &err, cases[i].flag, cases[i].value, NULL);
        }
        if (rc != GM_EINVAL || !strstr(err.msg, cases[i].named))
            fail_msg("case %zu (%s%s): rc %d, \"%s\"", i, cases[i].env ? cases[i].env : "",
                     cases[i].flag ? cases[i].flag : "", rc, err.msg);
    }
}

static void test_flag_syntax(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, NULL, &err, "--help", NULL), GM_OK);
    assert_true(c.help);
    assert_int_equal(load(&c, NULL, &err, "-h", NULL), GM_OK);
    assert_true(c.help);
    assert_int_equal(load(&c, NULL, &err, "--bogus", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--bogus"));
    assert_int_equal(load(&c, NULL, &err, "--listen", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "needs a value"));
    assert_int_equal(load(&c, NULL, &err, "extra", NULL), GM_EINVAL);
    assert_int_equal(load(&c, NULL, &err, "--no-system-metrics=1", NULL), GM_EINVAL);
    assert_int_equal(load(&c, NULL, &err, "--no-system-metrics", "--port-file", "/tmp/p", NULL),
                     GM_OK);
    assert_false(c.system_metrics);
    assert_string_equal(c.port_file, "/tmp/p");
}

static void test_simulate_selects_sim(void **state)
{
    (void)state;
    const char *env[] = {"GPU_MONITOR_TELEMETRY_PROVIDER=nvml", NULL};
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, env, &err, "--simulate", "4", "--seed", "7", NULL), GM_OK);
    assert_string_equal(c.provider, "sim");
    assert_int_equal(c.simulate, 4);
    assert_int_equal(c.seed, 7);
    assert_int_equal(load(&c, NULL, &err, "--simulate", "4", "--provider", "nvml", NULL),
                     GM_EINVAL);
    assert_non_null(strstr(err.msg, "--simulate"));
}

static void test_listen_forms(void **state)
{
    (void)state;
    static const struct {
        const char *in, *host;
        unsigned port;
        bool v6;
    } ok[] = {
        {"127.0.0.1:9401", "127.0.0.1", 9401, false},
        {"0.0.0.0:80", "0.0.0.0", 80, false},
        {":9401", "", 9401, false},
        {"9402", "127.0.0.1", 9402, false}, /* a bare port stays on loopback */
        {"localhost:0", "127.0.0.1", 0, false},
        {"[::1]:9401", "::1", 9401, true},
        {"[::]:1", "::", 1, true},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        gm_listen_addr a;
        gm_error err = {0};
        assert_int_equal(gm_config_parse_listen(ok[i].in, &a, &err), GM_OK);
        assert_string_equal(a.host, ok[i].host);
        assert_int_equal(a.port, ok[i].port);
        assert_int_equal(a.ipv6, ok[i].v6);
    }
    static const char *const bad[] = {"",          "127.0.0.1",   "::1:9401",   "[::1]",
                                      "[::1]9401", "[nope]:1",    "1.2.3:80",   "host:80",
                                      "1.2.3.4:",  "1.2.3.4:+80", "1.2.3.4:-1", "1.2.3.4:80x",
                                      "[::1]:",    "99999",       ":",          " 1.2.3.4:80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gm_listen_addr a;
        gm_error err = {0};
        if (gm_config_parse_listen(bad[i], &a, &err) != GM_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
    }
    char buf[96];
    gm_listen_addr v6 = {.host = "::1", .port = 5, .ipv6 = true};
    gm_listen_addr_format(&v6, buf, sizeof buf);
    assert_string_equal(buf, "[::1]:5");
}

static void test_log_levels(void **state)
{
    (void)state;
    /* Numbers, durations and booleans have one grammar for every input (test_parse.c). */
    gm_log_level l;
    assert_int_equal(gm_config_parse_log_level("Warning", &l), GM_OK);
    assert_int_equal(l, GM_LOG_WARN);
    assert_int_equal(gm_config_parse_log_level("CRITICAL", &l), GM_OK);
    assert_int_equal(l, GM_LOG_ERROR);
    assert_int_equal(gm_config_parse_log_level("trace", &l), GM_EINVAL);
    assert_string_equal(gm_log_level_name(GM_LOG_DEBUG), "debug");
}

static void test_config_json_hides_token(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, NULL, &err, "--token", "topsecret", NULL), GM_OK);
    json_t *j = gm_serve_config_json(&c);
    assert_non_null(j);
    char *text = json_dumps(j, 0);
    assert_non_null(text);
    assert_null(strstr(text, "topsecret"));
    assert_true(json_is_true(json_object_get(j, "token_set")));
    assert_string_equal(json_string_value(json_object_get(j, "listen")), "127.0.0.1:9401");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "sources"), "token_set")), "flag");
    free(text);
    json_decref(j);
}

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

static void test_history_params(void **state)
{
    (void)state;
    gm_history_params p;
    gm_error err;
    char name[64];

    /* No gpu: every recorded GPU; seconds defaults to 60. */
    assert_int_equal(parse_history(&p, &err, 4, 3600, 1000, "metric=utilization.gpu", NULL), GM_OK);
    assert_int_equal(p.count, 4);
    assert_int_equal(p.range_ms, 60000);
    assert_int_equal(p.step_ms, 0);
    assert_int_equal(p.series[3].gpu, 3);
    assert_int_equal(p.series[0].metric, GM_M_UTIL_GPU_PCT);

    /* GPU indexes with a gap (only 1 and 3 exist): the default lists those two, and asking for
     * an index that is not in the sample is an error, never a series of nulls. */
    {
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

    /* A short history shortens the default range. */
    assert_int_equal(parse_history(&p, &err, 1, 30, 1000, "metric=host.load.1m", NULL), GM_OK);
    assert_int_equal(p.range_ms, 30000);
    assert_int_equal(p.count, 1);

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

    /* Point limits: 1 h at 100 ms is 36001 points per series; a step brings it under. */
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
    /* History off. */
    assert_int_equal(parse_history(&p, &err, 1, 0, 1000, "metric=utilization.gpu", NULL),
                     GM_EINVAL);
    assert_non_null(strstr(err.msg, "disabled"));
    /* No GPU recorded: host series only. */
    assert_int_equal(parse_history(&p, &err, 0, 3600, 1000, "metric=host.memory.used", NULL),
                     GM_OK);
    assert_int_equal(p.count, 1);
    assert_int_equal(
        parse_history(&p, &err, 0, 3600, 1000, "metric=utilization.gpu", "gpu=0", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "no GPU"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_env_then_flags),
        cmocka_unit_test(test_flag_overrides_bad_env),
        cmocka_unit_test(test_empty_env_is_unset),
        cmocka_unit_test(test_bad_values_name_their_source),
        cmocka_unit_test(test_flag_syntax),
        cmocka_unit_test(test_simulate_selects_sim),
        cmocka_unit_test(test_listen_forms),

        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_config_json_hides_token),
        cmocka_unit_test(test_query_params),
        cmocka_unit_test(test_history_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
