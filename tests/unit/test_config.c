/* test_config.c - server/config: `gpumon serve` flags over GPU_MONITOR_* variables over defaults,
 * each value form with its bad cases, listen addresses, log levels and the /api/config form. The
 * query parameters and /api/history requests are tested in test_query.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"

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

static void test_hostname(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err = {0};
    char *argv[] = {"serve", "--hostname", "node-a", NULL};
    const char *env_node[] = {"NODE_NAME=k8s-7", NULL};
    const char *env_both[] = {"NODE_NAME=k8s-7", "GPU_MONITOR_HOSTNAME=gm-9", NULL};
    /* The flag, then GPU_MONITOR_HOSTNAME, then Kubernetes' NODE_NAME, then none. */
    assert_int_equal(gm_serve_config_load(&c, 3, argv, env_both, &err), GM_OK);
    assert_string_equal(c.hostname, "node-a");
    assert_int_equal(gm_serve_config_load(&c, 1, argv, env_both, &err), GM_OK);
    assert_string_equal(c.hostname, "gm-9");
    assert_int_equal(gm_serve_config_load(&c, 1, argv, env_node, &err), GM_OK);
    assert_string_equal(c.hostname, "k8s-7");
    assert_int_equal(c.source[GM_SET_HOSTNAME], GM_CFG_ENV);
    assert_int_equal(gm_serve_config_load(&c, 1, argv, NULL, &err), GM_OK);
    assert_string_equal(c.hostname, "");
    char *bad[] = {"serve", "--hostname", "a b\"c", NULL};
    assert_int_equal(gm_serve_config_load(&c, 3, bad, NULL, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--hostname"));
    const char *env_bad[] = {"NODE_NAME=x{y}", NULL};
    assert_int_equal(gm_serve_config_load(&c, 1, argv, env_bad, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "NODE_NAME"));
}

static void test_prometheus(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err;
    /* Off by default; the job defaults to gpumon. */
    assert_int_equal(load(&c, NULL, &err, NULL), GM_OK);
    assert_string_equal(c.prometheus, "");
    assert_string_equal(c.prometheus_job, "gpumon");
    const char *env[] = {"GPU_MONITOR_PROMETHEUS_URL=http://u:pw@prom:9090/",
                         "GPU_MONITOR_PROMETHEUS_JOB=dcgm", NULL};
    assert_int_equal(load(&c, env, &err, NULL), GM_OK);
    assert_string_equal(c.prometheus, "http://u:pw@prom:9090/");
    assert_string_equal(c.prometheus_display, "http://prom:9090");
    assert_string_equal(c.prometheus_job, "dcgm");
    assert_int_equal(c.source[GM_SET_PROMETHEUS], GM_CFG_ENV);
    /* /api/config shows where it points, never the password. */
    json_t *j = gm_serve_config_json(&c);
    char *text = json_dumps(j, 0);
    assert_null(strstr(text, "pw"));
    assert_string_equal(json_string_value(json_object_get(j, "prometheus")), "http://prom:9090");
    assert_string_equal(json_string_value(json_object_get(j, "prometheus_job")), "dcgm");
    free(text);
    json_decref(j);
    assert_int_equal(load(&c, env, &err, "--prometheus", "https://mon.example/prometheus", NULL),
                     GM_OK);
    assert_string_equal(c.prometheus_display, "https://mon.example/prometheus");
    assert_int_equal(c.source[GM_SET_PROMETHEUS], GM_CFG_FLAG);

    assert_int_equal(load(&c, NULL, &err, "--prometheus", "prom:9090", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--prometheus"));
    assert_non_null(strstr(err.msg, "http://"));
    const char *bad_env[] = {"GPU_MONITOR_PROMETHEUS_URL=http://prom:9090/?q=1", NULL};
    assert_int_equal(load(&c, bad_env, &err, NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "GPU_MONITOR_PROMETHEUS_URL"));
    assert_int_equal(load(&c, NULL, &err, "--prometheus-job", "a\"b", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--prometheus-job"));
    j = gm_serve_config_json(&(gm_serve_config){0});
    assert_true(json_is_null(json_object_get(j, "prometheus")));
    json_decref(j);
}

/* The kubelet's pod-resources socket: on by default at the kubelet's path, "none" turns it
 * off, a path longer than a unix socket's is refused; the procfs root. */
static void test_pod_resources_and_procfs(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, NULL, &err, NULL), GM_OK);
    assert_string_equal(c.pod_resources, "/var/lib/kubelet/pod-resources/kubelet.sock");
    assert_false(c.no_pod_resources);
    assert_string_equal(c.procfs, "");
    assert_int_equal(load(&c, NULL, &err, "--pod-resources", "none", NULL), GM_OK);
    assert_true(c.no_pod_resources);
    const char *env[] = {"GPU_MONITOR_POD_RESOURCES=/run/k/kubelet.sock",
                         "GPU_MONITOR_PROCFS=/host/proc", NULL};
    assert_int_equal(load(&c, env, &err, NULL), GM_OK);
    assert_string_equal(c.pod_resources, "/run/k/kubelet.sock");
    assert_int_equal(c.source[GM_SET_POD_RESOURCES], GM_CFG_ENV);
    assert_string_equal(c.procfs, "/host/proc");
    json_t *j = gm_serve_config_json(&c);
    assert_string_equal(json_string_value(json_object_get(j, "pod_resources")),
                        "/run/k/kubelet.sock");
    assert_string_equal(json_string_value(json_object_get(j, "procfs")), "/host/proc");
    json_decref(j);
    char longpath[200];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    assert_int_equal(load(&c, NULL, &err, "--pod-resources", longpath, NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--pod-resources"));
    assert_non_null(strstr(err.msg, "107"));
    assert_int_equal(load(&c, NULL, &err, "--procfs", "", NULL), GM_EINVAL);
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

/* --interval: the sampling period as a duration, the name every command gives it;
 * --retention: how long stored sessions are kept; a mistyped flag gets the likely one. */
static void test_interval_retention_and_typos(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, NULL, &err, NULL), GM_OK);
    assert_int_equal(c.retention_s, 0);
    assert_int_equal(load(&c, NULL, &err, "--interval", "0.5", NULL), GM_OK);
    assert_int_equal(c.poll_interval_ms, 500);
    assert_int_equal(c.source[GM_SET_POLL], GM_CFG_FLAG);
    assert_int_equal(load(&c, NULL, &err, "--interval=2m", NULL), GM_OK);
    assert_int_equal(c.poll_interval_ms, 120000);
    /* Over the environment's milliseconds, as any flag. */
    static const char *const env_poll[] = {"GPU_MONITOR_POLL_INTERVAL_MS=250", NULL};
    assert_int_equal(load(&c, env_poll, &err, "--interval", "1s", NULL), GM_OK);
    assert_int_equal(c.poll_interval_ms, 1000);
    assert_int_equal(load(&c, NULL, &err, "--interval", "50ms", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--interval"));

    assert_int_equal(load(&c, NULL, &err, "--retention", "30d", NULL), GM_OK);
    assert_int_equal(c.retention_s, 30 * 86400);
    assert_int_equal(load(&c, NULL, &err, "--retention", "0", NULL), GM_OK);
    assert_int_equal(c.retention_s, 0);
    static const char *const env_ret[] = {"GPU_MONITOR_RETENTION=12h", NULL};
    assert_int_equal(load(&c, env_ret, &err, NULL), GM_OK);
    assert_int_equal(c.retention_s, 12 * 3600);
    assert_int_equal(c.source[GM_SET_RETENTION], GM_CFG_ENV);
    json_t *j = gm_serve_config_json(&c);
    assert_int_equal(json_integer_value(json_object_get(j, "retention_seconds")), 12 * 3600);
    json_decref(j);
    assert_int_equal(load(&c, NULL, &err, "--retention", "0.5", NULL), GM_EINVAL);
    assert_int_equal(load(&c, NULL, &err, "--retention", "-1d", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--retention"));

    assert_int_equal(load(&c, NULL, &err, "--retenton", "1d", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "unknown option \"--retenton\"; did you mean \"--retention\"?");
    assert_int_equal(load(&c, NULL, &err, "--intervall=1", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "unknown option \"--intervall\"; did you mean \"--interval\"?");
    assert_int_equal(load(&c, NULL, &err, "--frobnicate", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "unknown option \"--frobnicate\" (see gpumon serve --help)");
    assert_int_equal(load(&c, NULL, &err, "-Z", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "unknown option \"-Z\""));
    assert_int_equal(load(&c, NULL, &err, "extra", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "unexpected argument \"extra\"");
}

/* --docker [HOST] gives benchmark jobs an engine (DOCKER_HOST too); --allow-image the images
 * they may start, repeatable. */
static void test_docker_and_allow_image(void **state)
{
    (void)state;
    gm_serve_config c;
    gm_error err;
    assert_int_equal(load(&c, NULL, &err, NULL), GM_OK);
    assert_string_equal(c.docker_host, "");
    assert_int_equal(c.nallow_image, 0);
    assert_int_equal(load(&c, NULL, &err, "--docker", NULL), GM_OK);
    assert_string_equal(c.docker_host, "unix:///var/run/docker.sock");
    assert_int_equal(load(&c, NULL, &err, "--docker", "--token", "t", NULL), GM_OK);
    assert_string_equal(c.docker_host, "unix:///var/run/docker.sock");
    assert_true(c.token_set);
    assert_int_equal(load(&c, NULL, &err, "--docker", "/run/podman/podman.sock", NULL), GM_OK);
    assert_string_equal(c.docker_host, "unix:///run/podman/podman.sock");
    assert_int_equal(load(&c, NULL, &err, "--docker=unix:///x.sock", NULL), GM_OK);
    assert_string_equal(c.docker_host, "unix:///x.sock");
    assert_int_equal(load(&c, NULL, &err, "--docker", "tcp://h:2375", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--docker"));
    static const char *const env_dh[] = {"DOCKER_HOST=unix:///e.sock", NULL};
    assert_int_equal(load(&c, env_dh, &err, NULL), GM_OK);
    assert_string_equal(c.docker_host, "unix:///e.sock");
    assert_int_equal(c.source[GM_SET_DOCKER], GM_CFG_ENV);
    static const char *const env_both[] = {"DOCKER_HOST=unix:///e.sock",
                                           "GPU_MONITOR_DOCKER_HOST=/g.sock", NULL};
    assert_int_equal(load(&c, env_both, &err, NULL), GM_OK);
    assert_string_equal(c.docker_host, "unix:///g.sock");

    assert_int_equal(
        load(&c, NULL, &err, "--allow-image", "nvcr.io/nim/*", "--allow-image", "a/b:1,c/*", NULL),
        GM_OK);
    assert_int_equal(c.nallow_image, 3);
    assert_string_equal(c.allow_image[0], "nvcr.io/nim/*");
    assert_string_equal(c.allow_image[2], "c/*");
    json_t *j = gm_serve_config_json(&c);
    assert_int_equal(json_array_size(json_object_get(j, "allow_image")), 3);
    assert_true(json_is_null(json_object_get(j, "docker")));
    json_decref(j);
    assert_int_equal(load(&c, NULL, &err, "--allow-image", "a b", NULL), GM_EINVAL);
    assert_int_equal(load(&c, NULL, &err, "--allow-image", "a,,b", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "--allow-image"));
}

static void test_generated_token(void **state)
{
    (void)state;
    gm_serve_config a, b;
    gm_error err;
    assert_int_equal(load(&a, NULL, &err, "--token", "generate", NULL), GM_OK);
    assert_true(a.token_set && a.token_generated);
    assert_int_equal(strlen(a.token), 32);
    assert_int_equal(strspn(a.token, "0123456789abcdef"), 32);
    const char *env[] = {"GPU_MONITOR_TOKEN=generate", NULL};
    assert_int_equal(load(&b, env, &err, NULL), GM_OK);
    assert_true(b.token_generated);
    assert_string_not_equal(a.token, b.token); /* random each time */
    assert_int_equal(load(&b, NULL, &err, "--token", "literal", NULL), GM_OK);
    assert_false(b.token_generated);
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

/* The flag's message for value of row r ("--NAME..."), by argv or, for a row without a value,
 * as a configuration document would set it. */
static int by_flag(const gm_opt *r, const char *value, gm_serve_config *c, gm_error *err)
{
    char arg[1200];
    if (!r->arg) {
        gm_serve_config_defaults(c);
        memset(err, 0, sizeof *err);
        return gm_opt_set(gm_serve_options, c, r->name, value, err);
    }
    snprintf(arg, sizeof arg, "--%s=%s", r->name, value);
    return load(c, NULL, err, arg, NULL);
}

static int by_env(const gm_opt *r, const char *value, gm_serve_config *c, gm_error *err)
{
    char var[1200];
    snprintf(var, sizeof var, "%s=%s", r->env, value);
    const char *env[] = {var, NULL};
    return load(c, env, err, NULL);
}

/* Every setting with a variable is one row: its flag and its variable take the same values with
 * the same message (naming the one used), and /api/config reports it under the row's key with
 * where it came from. Read from the table, so a new row is held to it too. */
static void test_each_setting_by_flag_variable_and_key(void **state)
{
    (void)state;
    char longest[1101];
    memset(longest, 'x', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    const char *bad[] = {"\x01", longest};
    const char *good[] = {
        "5", "1000", "true", "info", "auto", "http://prom:9090", "*", "/run/gm-test.sock"};
    size_t rows = 0;
    for (const gm_opt *r = gm_serve_options; r->type != GM_OPT_END; r++) {
        if (!r->env)
            continue;
        rows++;
        gm_serve_config c;
        gm_error ef, ee;
        assert_non_null(r->key);
        assert_int_not_equal(r->source, 0);

        size_t b = 0;
        while (b < 2 && by_flag(r, bad[b], &c, &ef) == GM_OK)
            b++;
        if (b == 2)
            fail_msg("--%s: no value refused", r->name);
        assert_int_equal(by_env(r, bad[b], &c, &ee), GM_EINVAL);
        size_t nl = strlen(r->name), el = strlen(r->env);
        if (strncmp(ef.msg, "--", 2) != 0 || strncmp(ef.msg + 2, r->name, nl) != 0 ||
            strncmp(ee.msg, r->env, el) != 0 || strncmp(ef.msg + 2 + nl, ee.msg + el, 60) != 0)
            fail_msg("--%s and %s refuse differently:\n  %s\n  %s", r->name, r->env, ef.msg,
                     ee.msg);

        size_t g = 0;
        while (g < sizeof good / sizeof *good && by_flag(r, good[g], &c, &ef) != GM_OK)
            g++;
        if (g == sizeof good / sizeof *good)
            fail_msg("--%s: no value accepted", r->name);
        if (by_env(r, good[g], &c, &ee) != GM_OK)
            fail_msg("%s=%s refused where --%s took it: %s", r->env, good[g], r->name, ee.msg);
        json_t *j = gm_serve_config_json(&c);
        assert_non_null(j);
        if (!json_object_get(j, r->key))
            fail_msg("/api/config has no \"%s\" (--%s)", r->key, r->name);
        const char *from =
            json_string_value(json_object_get(json_object_get(j, "sources"), r->key));
        if (!from || strcmp(from, "environment") != 0)
            fail_msg("%s=%s: sources.%s is %s", r->env, good[g], r->key, from ? from : "absent");
        json_decref(j);
    }
    assert_int_equal(rows, GM_SET__COUNT); /* each origin /api/config reports has its row */
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
        cmocka_unit_test(test_hostname),
        cmocka_unit_test(test_prometheus),
        cmocka_unit_test(test_pod_resources_and_procfs),
        cmocka_unit_test(test_generated_token),
        cmocka_unit_test(test_docker_and_allow_image),
        cmocka_unit_test(test_config_json_hides_token),
        cmocka_unit_test(test_interval_retention_and_typos),
        cmocka_unit_test(test_each_setting_by_flag_variable_and_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
