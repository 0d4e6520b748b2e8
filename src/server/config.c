/* config.c - parses `gpumon serve` flags and GPU_MONITOR_* variables into one validated
 * configuration; pure functions (no getenv, no printing) so every rule is unit-tested. The
 * settings are the rows of gm_serve_options: flag, variable, /api/config key, parser and help
 * in one place, read by base/opt for argv, the environment and --help. */
#include "server/config.h"
#include "base/json.h"
#include "base/parse.h"
#include "collect/podres.h"
#include "core/docker.h"
#include "base/error.h"
#include "collect/registry.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void gm_serve_config_defaults(gm_serve_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen.host, sizeof c->listen.host, "%s", GM_SERVE_DEFAULT_HOST);
    c->listen.port = GM_SERVE_DEFAULT_PORT;
    snprintf(c->provider, sizeof c->provider, "auto");
    c->history_s = GM_SERVE_HISTORY_DEFAULT_S;
    c->poll_interval_ms = GM_SERVE_POLL_DEFAULT_MS;
    c->ws_max_rate_hz = GM_SERVE_WS_RATE_DEFAULT;
    c->max_connections = GM_SERVE_CONN_DEFAULT;
    c->max_connections_per_ip = GM_SERVE_CONN_IP_DEFAULT;
    c->log_level = GM_LOG_INFO;
    c->system_metrics = true;
    snprintf(c->prometheus_job, sizeof c->prometheus_job, "%s", GM_FLEET_JOB_DEFAULT);
    snprintf(c->pod_resources, sizeof c->pod_resources, "%s", GM_PODRES_DEFAULT_SOCKET);
}

const char *gm_log_level_name(gm_log_level l)
{
    return (unsigned)l < sizeof level_names / sizeof *level_names ? level_names[l] : "info";
}

int gm_config_parse_log_level(const char *s, gm_log_level *out)
{
    static const struct {
        const char *name;
        gm_log_level level;
    } names[] = {{"debug", GM_LOG_DEBUG},  {"info", GM_LOG_INFO},   {"warn", GM_LOG_WARN},
                 {"warning", GM_LOG_WARN}, {"error", GM_LOG_ERROR}, {"critical", GM_LOG_ERROR}};
    if (!s)
        return GM_EINVAL;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].level;
            return GM_OK;
        }
    return GM_EINVAL;
}

int gm_config_parse_listen(const char *s, gm_listen_addr *out, gm_error *err)
{
    gm_listen_addr a = {0};
    const char *port_str;
    if (!s || !*s)
        return gm_error_set(err, GM_EINVAL, "empty listen address");
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof a.host)
            goto bad;
        memcpy(a.host, s + 1, (size_t)(close - s - 1));
        struct in6_addr in6;
        if (inet_pton(AF_INET6, a.host, &in6) != 1)
            goto bad;
        a.ipv6 = true;
        port_str = close + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (!colon) { /* a bare port keeps the loopback default: never widen by accident */
            snprintf(a.host, sizeof a.host, "%s", GM_SERVE_DEFAULT_HOST);
            port_str = s;
        } else {
            size_t hl = (size_t)(colon - s);
            if (memchr(s, ':', hl) || hl >= sizeof a.host) /* unbracketed IPv6 */
                goto bad;
            memcpy(a.host, s, hl);
            a.host[hl] = '\0';
            if (strcasecmp(a.host, "localhost") == 0)
                snprintf(a.host, sizeof a.host, "127.0.0.1");
            struct in_addr in4;
            if (hl && inet_pton(AF_INET, a.host, &in4) != 1)
                goto bad;
            port_str = colon + 1;
        }
    }
    unsigned long long port;
    if (gm_parse_uint(port_str, 0, 65535, &port) < 0)
        goto bad;
    a.port = (unsigned)port;
    *out = a;
    return GM_OK;
bad:
    return gm_error_set(err, GM_EINVAL,
                        "\"%s\" is not a listen address (use HOST:PORT with a numeric host, "
                        "[IPv6]:PORT, :PORT for all interfaces, or PORT for 127.0.0.1)",
                        s);
}

bool gm_listen_addr_is_loopback(const gm_listen_addr *a)
{
    if (a->ipv6) {
        struct in6_addr in6;
        return inet_pton(AF_INET6, a->host, &in6) == 1 && IN6_IS_ADDR_LOOPBACK(&in6);
    }
    struct in_addr in4;
    return a->host[0] && inet_pton(AF_INET, a->host, &in4) == 1 && (ntohl(in4.s_addr) >> 24) == 127;
}

void gm_listen_addr_format(const gm_listen_addr *a, char *buf, size_t len)
{
    if (a->ipv6)
        snprintf(buf, len, "[%s]:%u", a->host, a->port);
    else
        snprintf(buf, len, "%s:%u", a->host, a->port);
}

/* A token travels in an Authorization header: visible ASCII only, so it can neither break the
 * header nor hide in whitespace. */
static bool token_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > GM_SERVE_TOKEN_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return false;
    return true;
}

/* An origin is echoed in a response header: "*" or scheme://host[:port], nothing else. */
static bool origin_ok(const char *s)
{
    if (strcmp(s, "*") == 0)
        return true;
    size_t n = strlen(s);
    const char *rest;
    if (n > GM_SERVE_ORIGIN_MAX)
        return false;
    if (strncmp(s, "http://", 7) == 0)
        rest = s + 7;
    else if (strncmp(s, "https://", 8) == 0)
        rest = s + 8;
    else
        return false;
    if (!*rest)
        return false;
    for (const char *p = rest; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-:[]", *p))
            return false;
    return true;
}

/* A node name as Kubernetes and DNS write them; nothing that would need escaping in a label. */
static bool hostname_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= GM_HOSTNAME_LEN)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-_", *p))
            return false;
    return true;
}

#define CFG(base) ((gm_serve_config *)(base))

/* "--NAME: ..." (gm_opt_apply_env names the variable in its place). */
static int refuse(gm_error *err, const gm_opt *row, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(gm_error *err, const gm_opt *row, const char *fmt, ...)
{
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gm_error_set(err, GM_EINVAL, "--%s: %s", row->name, msg);
}

static int set_listen(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_error sub = {0};
    if (gm_config_parse_listen(v, &CFG(base)->listen, &sub) < 0)
        return refuse(err, row, "%s", sub.msg);
    return GM_OK;
}

static int set_port_file(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!*v || strlen(v) >= sizeof c->port_file)
        return refuse(err, row, "a path of 1 to %zu bytes", sizeof c->port_file - 1);
    snprintf(c->port_file, sizeof c->port_file, "%s", v);
    return GM_OK;
}

static int set_provider(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    const char *name = gm_provider_canonical(v);
    if (!name)
        return refuse(err, row, "\"%s\" is not one of %s", v, gm_provider_names());
    snprintf(c->provider, sizeof c->provider, "%s", name);
    return GM_OK;
}

static int set_simulate(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    unsigned long long n;
    if (gm_parse_uint(v, 1, GM_MAX_GPUS, &n) < 0)
        return refuse(err, row, "\"%s\" is not a number of GPUs from 1 to %d", v, GM_MAX_GPUS);
    CFG(base)->simulate = (unsigned)n;
    return GM_OK;
}

static int set_seed(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    unsigned long long n;
    if (gm_parse_uint(v, 0, UINT64_MAX, &n) < 0)
        return refuse(err, row, "\"%s\" is not a whole number", v);
    CFG(base)->seed = n;
    return GM_OK;
}

static int set_token(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (strcmp(v, "generate") == 0) {
        /* 128 random bits as 32 hex digits: nothing to quote in a header or a URL. */
        unsigned char r[16];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            return gm_error_set(err, GM_EIO, "--%s generate: no random bytes: %s", row->name,
                                strerror(errno));
        for (size_t i = 0; i < sizeof r; i++)
            snprintf(c->token + 2 * i, 3, "%02x", r[i]);
        c->token_set = c->token_generated = true;
        return GM_OK;
    }
    if (!token_ok(v))
        return refuse(err, row, "the token must be 1 to %d visible ASCII characters",
                      GM_SERVE_TOKEN_MAX);
    snprintf(c->token, sizeof c->token, "%s", v);
    c->token_set = true;
    return GM_OK;
}

static int set_history(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    int64_t ms;
    if (gm_parse_duration_ms(v, 0, (int64_t)GM_SERVE_HISTORY_MAX_S * 1000, &ms) < 0)
        return refuse(err, row, "\"%s\" is not %s, at most %ud", v, gm_parse_duration_help(),
                      GM_SERVE_HISTORY_MAX_S / 86400);
    CFG(base)->history_s = (unsigned)((ms + 999) / 1000); /* whole seconds, never rounded to 0 */
    return GM_OK;
}

/* --interval is the sampling period as a duration, the name every gpumon command gives it;
 * --poll-interval takes milliseconds, as its variable does. Both set one setting. */
static int set_interval(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    int64_t ms;
    if (gm_parse_duration_ms(v, GM_SERVE_POLL_MIN_MS, GM_SERVE_POLL_MAX_MS, &ms) < 0)
        return refuse(err, row, "\"%s\" is not %s from %gs to %gs", v, gm_parse_duration_help(),
                      GM_SERVE_POLL_MIN_MS / 1000.0, GM_SERVE_POLL_MAX_MS / 1000.0);
    CFG(base)->poll_interval_ms = (unsigned)ms;
    return GM_OK;
}

static int set_poll(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    unsigned long long n;
    if (gm_parse_uint(v, GM_SERVE_POLL_MIN_MS, GM_SERVE_POLL_MAX_MS, &n) < 0)
        return refuse(err, row, "\"%s\" is not a whole number of milliseconds from %d to %d", v,
                      GM_SERVE_POLL_MIN_MS, GM_SERVE_POLL_MAX_MS);
    CFG(base)->poll_interval_ms = (unsigned)n;
    return GM_OK;
}

static int set_ws_rate(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    if (gm_parse_number(v, GM_SERVE_WS_RATE_MIN, GM_SERVE_WS_RATE_MAX, &CFG(base)->ws_max_rate_hz) <
        0)
        return refuse(err, row, "\"%s\" is not a rate in Hz from %g to %g (e.g. 5 or 0.5)", v,
                      GM_SERVE_WS_RATE_MIN, GM_SERVE_WS_RATE_MAX);
    return GM_OK;
}

static int set_cors(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!origin_ok(v))
        return refuse(err, row,
                      "\"%s\" is not an origin (use \"*\" or scheme://host[:port], e.g. "
                      "http://localhost:5173)",
                      v);
    snprintf(c->cors_origin, sizeof c->cors_origin, "%s", v);
    return GM_OK;
}

static int set_log_level(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    if (gm_config_parse_log_level(v, &CFG(base)->log_level) < 0)
        return refuse(err, row, "\"%s\" is not one of debug, info, warn, error", v);
    return GM_OK;
}

/* The flag turns host metrics off; its variable says true or false. */
static int set_system(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!v)
        c->system_metrics = false;
    else if (gm_parse_bool(v, &c->system_metrics) < 0)
        return refuse(err, row, "\"%s\" is not true or false", v);
    return GM_OK;
}

static int set_process_metrics(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!v)
        c->process_metrics = true;
    else if (gm_parse_bool(v, &c->process_metrics) < 0)
        return refuse(err, row, "\"%s\" is not true or false", v);
    return GM_OK;
}

static int set_db(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!*v || strlen(v) >= sizeof c->db)
        return refuse(err, row, "a path of 1 to %zu bytes, or \"none\"", sizeof c->db - 1);
    c->no_db = strcmp(v, "none") == 0;
    snprintf(c->db, sizeof c->db, "%s", c->no_db ? "" : v);
    return GM_OK;
}

static int set_pod_resources(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    /* Whether a socket is there is the watcher's business: the kubelet may come later. */
    if (!*v || strlen(v) > GM_SERVE_SOCKET_PATH_MAX)
        return refuse(err, row, "a socket path of 1 to %d bytes, or \"none\"",
                      GM_SERVE_SOCKET_PATH_MAX);
    c->no_pod_resources = strcmp(v, "none") == 0;
    snprintf(c->pod_resources, sizeof c->pod_resources, "%s", c->no_pod_resources ? "" : v);
    return GM_OK;
}

static int set_procfs(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!*v || strlen(v) >= sizeof c->procfs)
        return refuse(err, row, "a directory path of 1 to %zu bytes", sizeof c->procfs - 1);
    snprintf(c->procfs, sizeof c->procfs, "%s", v);
    return GM_OK;
}

static int set_web_root(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    /* Whether it exists is checked when the daemon starts (config parsing touches no file). */
    if (!*v || strlen(v) >= sizeof c->web_root)
        return refuse(err, row, "a directory path of 1 to %zu bytes", sizeof c->web_root - 1);
    snprintf(c->web_root, sizeof c->web_root, "%s", v);
    return GM_OK;
}

static int set_max_conn(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    unsigned long long n;
    if (gm_parse_uint(v, GM_SERVE_CONN_MIN, GM_SERVE_CONN_MAX, &n) < 0)
        return refuse(err, row, "\"%s\" is not a whole number of connections from %d to %d", v,
                      GM_SERVE_CONN_MIN, GM_SERVE_CONN_MAX);
    CFG(base)->max_connections = (unsigned)n;
    return GM_OK;
}

static int set_max_conn_ip(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    unsigned long long n;
    if (gm_parse_uint(v, 0, GM_SERVE_CONN_MAX, &n) < 0)
        return refuse(err, row,
                      "\"%s\" is not a whole number of connections from 0 (no limit) to %d", v,
                      GM_SERVE_CONN_MAX);
    CFG(base)->max_connections_per_ip = (unsigned)n;
    return GM_OK;
}

static int set_hostname(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!hostname_ok(v))
        return refuse(err, row,
                      "\"%.64s\" is not a host name (1 to %d letters, digits, '.', '-' or '_')", v,
                      GM_HOSTNAME_LEN - 1);
    snprintf(c->hostname, sizeof c->hostname, "%s", v);
    return GM_OK;
}

static int set_prometheus(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    gm_error sub = {0};
    if (gm_prometheus_url_check(v, c->prometheus_display, sizeof c->prometheus_display, &sub) < 0)
        return refuse(err, row, "%s", sub.msg);
    snprintf(c->prometheus, sizeof c->prometheus, "%s", v);
    return GM_OK;
}

static int set_prometheus_job(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    if (!gm_fleet_job_ok(v))
        return refuse(err, row,
                      "\"%.64s\" is not a job name (1 to %d letters, digits, '_', '-', '.', ':', "
                      "'/')",
                      v, GM_FLEET_JOB_MAX - 1);
    snprintf(c->prometheus_job, sizeof c->prometheus_job, "%s", v);
    return GM_OK;
}

static int set_retention(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    int64_t ms;
    if (strcmp(v, "0") == 0 || strcasecmp(v, "forever") == 0) {
        c->retention_s = 0;
        return GM_OK;
    }
    if (gm_parse_duration_ms(v, (int64_t)GM_SERVE_RETENTION_MIN_S * 1000,
                             (int64_t)GM_SERVE_RETENTION_MAX_S * 1000, &ms) < 0)
        return refuse(err, row, "\"%s\" is not %s of at least 1s (or 0: keep everything)", v,
                      gm_parse_duration_help());
    c->retention_s = (unsigned)((ms + 999) / 1000);
    return GM_OK;
}

/* A bare socket path is taken for unix://PATH; "" (--docker alone) is the default. */
static int set_docker(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    char host[GM_SERVE_PATH_MAX];
    gm_error sub = {0};
    if (!v)
        v = "";
    if ((size_t)snprintf(host, sizeof host, "%s%s", v[0] == '/' ? "unix://" : "",
                         *v ? v : GM_DOCKER_DEFAULT_HOST) >= sizeof host)
        return refuse(err, row, "too long");
    gm_docker *d = NULL;
    if (gm_docker_open(host, &d, &sub) < 0)
        return refuse(err, row, "%s", sub.msg);
    gm_docker_close(d);
    snprintf(c->docker_host, sizeof c->docker_host, "%s", host);
    return GM_OK;
}

/* Repeatable, and a comma-separated list (no image reference holds a comma). */
static int set_allow_image(void *base, const gm_opt *row, const char *v, gm_error *err)
{
    gm_serve_config *c = CFG(base);
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= GM_SERVE_ALLOW_IMAGE_LEN || memchr(p, ' ', len) ||
            memchr(p, '\t', len))
            return refuse(err, row,
                          "\"%.*s\" is not an image pattern (such as nvcr.io/nim/*:1.*, without "
                          "spaces)",
                          (int)(len > 80 ? 80 : len), p);
        if (c->nallow_image == GM_SERVE_ALLOW_IMAGE_MAX)
            return refuse(err, row, "at most %d patterns", GM_SERVE_ALLOW_IMAGE_MAX);
        snprintf(c->allow_image[c->nallow_image++], GM_SERVE_ALLOW_IMAGE_LEN, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
    }
    return GM_OK;
}

/* Where the row records who set setting id. */
#define FROM(id) GM_OPT_SOURCE(gm_serve_config, source[GM_SET_##id])

const gm_opt gm_serve_options[] = {
    {.type = GM_OPT_CALLBACK,
     .name = "listen",
     .arg = "ADDR",
     .set = set_listen,
     .env = "GPU_MONITOR_LISTEN",
     .key = "listen",
     FROM(LISTEN),
     .group = "Listening",
     .help = "127.0.0.1:9401 (default), [::1]:9401, :9401 (all interfaces) or 9401 "
             "(loopback); port 0 picks a free port."},
    {.type = GM_OPT_CALLBACK,
     .name = "port-file",
     .arg = "PATH",
     .set = set_port_file,
     .complete = "file",
     .help = "Write the bound port to PATH once listening."},
    {.type = GM_OPT_CALLBACK,
     .name = "token",
     .arg = "T",
     .set = set_token,
     .env = "GPU_MONITOR_TOKEN",
     .key = "token_set",
     FROM(TOKEN),
     .help = "Require \"Authorization: Bearer T\" (WebSocket: also ?token=T), 1 to 256 visible "
             "ASCII characters; \"generate\": a random one, shown with the dashboard's address "
             "on the terminal."},
    {.type = GM_OPT_CALLBACK,
     .name = "cors-origin",
     .arg = "ORIGIN",
     .set = set_cors,
     .env = "GPU_MONITOR_CORS_ORIGIN",
     .key = "cors_origin",
     FROM(CORS),
     .help = "Send Access-Control-Allow-Origin: ORIGIN (\"*\" or scheme://host[:port]) and "
             "answer preflights (default off)."},
    {.type = GM_OPT_CALLBACK,
     .name = "max-connections",
     .arg = "N",
     .set = set_max_conn,
     .env = "GPU_MONITOR_MAX_CONNECTIONS",
     .key = "max_connections",
     FROM(MAX_CONN),
     .help = "HTTP and WebSocket connections at once, 16 to 65536 (default 4096, or what the "
             "open-file limit allows)."},
    {.type = GM_OPT_CALLBACK,
     .name = "max-connections-per-ip",
     .arg = "N",
     .set = set_max_conn_ip,
     .env = "GPU_MONITOR_MAX_CONNECTIONS_PER_IP",
     .key = "max_connections_per_ip",
     FROM(MAX_CONN_IP),
     .help = "Of them from one client address, 0 (no limit) to 65536 (default 1024); a reverse "
             "proxy on this host is one address for all its clients."},
    {.type = GM_OPT_CALLBACK,
     .name = "provider",
     .arg = "NAME",
     .set = set_provider,
     .env = "GPU_MONITOR_TELEMETRY_PROVIDER",
     .key = "provider",
     FROM(PROVIDER),
     .group = "Sampling",
     .words = gm_provider_names,
     .help = "One of {words} (default auto), case-insensitive."},
    {.type = GM_OPT_CALLBACK,
     .name = "simulate",
     .arg = "N",
     .set = set_simulate,
     .help = "N simulated GPUs, 1 to 64 (provider sim)."},
    {.type = GM_OPT_CALLBACK,
     .name = "seed",
     .arg = "N",
     .set = set_seed,
     .help = "Seed of the simulation (default 0)."},
    {.type = GM_OPT_CALLBACK,
     .name = "interval",
     .arg = "D",
     .set = set_interval,
     FROM(POLL),
     .help = "Sampling period: 1, 0.5, 500ms, 2m (0.1s to 1h, default 1s); the setting of "
             "--poll-interval, as a duration."},
    {.type = GM_OPT_CALLBACK,
     .name = "poll-interval",
     .arg = "MS",
     .set = set_poll,
     .env = "GPU_MONITOR_POLL_INTERVAL_MS",
     .key = "poll_interval_ms",
     FROM(POLL),
     .help = "Sampling period in milliseconds, 100 to 3600000 (default 1000)."},
    {.type = GM_OPT_CALLBACK,
     .name = "history",
     .arg = "D",
     .set = set_history,
     .env = "GPU_MONITOR_HISTORY",
     .key = "history_seconds",
     FROM(HISTORY),
     .help = "History kept: 3600, 90s, 15m, 1h, 2h30m, 1d (default 1h, at most 7d; 0 keeps "
             "none)."},
    {.type = GM_OPT_CALLBACK,
     .name = "ws-max-rate",
     .arg = "HZ",
     .set = set_ws_rate,
     .env = "GPU_MONITOR_WS_MAX_RATE_HZ",
     .key = "ws_max_rate_hz",
     FROM(WS_RATE),
     .help = "Most WebSocket frames per second per client, 0.1 to 100 (default 5)."},
    {.type = GM_OPT_CALLBACK,
     .name = "no-system-metrics",
     .set = set_system,
     .env = "GPU_MONITOR_ENABLE_SYSTEM_METRICS",
     .key = "system_metrics",
     FROM(SYSTEM),
     .help = "Skip host metrics (the variable: false skips them; default true)."},
    {.type = GM_OPT_CALLBACK,
     .name = "process-metrics",
     .set = set_process_metrics,
     .env = "GPU_MONITOR_PROCESS_METRICS",
     .key = "process_metrics",
     FROM(PROCESS_METRICS),
     .help = "Per-process utilization on /metrics, one series per process and engine (the "
             "variable: true or false; default false)."},
    {.type = GM_OPT_CALLBACK,
     .name = "procfs",
     .arg = "DIR",
     .set = set_procfs,
     .env = "GPU_MONITOR_PROCFS",
     .key = "procfs",
     FROM(PROCFS),
     .complete = "dir",
     .help = "Where the host's /proc is mounted: host metrics, GPU processes' users, commands "
             "and cgroups (default /proc)."},
    {.type = GM_OPT_CALLBACK,
     .name = "pod-resources",
     .arg = "PATH",
     .set = set_pod_resources,
     .env = "GPU_MONITOR_POD_RESOURCES",
     .key = "pod_resources",
     FROM(POD_RESOURCES),
     .complete = "file",
     .help = "The kubelet's pod-resources socket, read for the pods and containers that hold "
             "the GPUs; \"none\" never reads it (default "
             "/var/lib/kubelet/pod-resources/kubelet.sock)."},
    {.type = GM_OPT_CALLBACK,
     .name = "hostname",
     .arg = "NAME",
     .set = set_hostname,
     .env = "GPU_MONITOR_HOSTNAME",
     .key = "hostname",
     FROM(HOSTNAME),
     .help = "The node's name in the Hostname label, JSON and the dashboard (default: "
             "$NODE_NAME, else this host's)."},
    {.type = GM_OPT_CALLBACK,
     .name = "db",
     .arg = "PATH",
     .set = set_db,
     .env = "GPU_MONITOR_DB",
     .key = "db",
     FROM(DB),
     .complete = "file",
     .group = "Storage",
     .help = "Session store (SQLite), created when a session first needs it; \"none\" keeps "
             "sessions in memory (default $XDG_STATE_HOME/gpumon/gpumon.db)."},
    {.type = GM_OPT_CALLBACK,
     .name = "retention",
     .arg = "D",
     .set = set_retention,
     .env = "GPU_MONITOR_RETENTION",
     .key = "retention_seconds",
     FROM(RETENTION),
     .help = "Delete stored sessions, runs and benchmarks that ended more than D ago (30d, "
             "12h...), at start and then periodically; 0 keeps all (default)."},
    {.type = GM_OPT_CALLBACK,
     .name = "prometheus",
     .arg = "URL",
     .set = set_prometheus,
     .env = "GPU_MONITOR_PROMETHEUS_URL",
     .key = "prometheus",
     FROM(PROMETHEUS),
     .group = "Fleet",
     .help = "The Prometheus that scrapes the fleet's daemons: serves GET /api/fleet and the "
             "dashboard's Fleet page (default off)."},
    {.type = GM_OPT_CALLBACK,
     .name = "prometheus-job",
     .arg = "NAME",
     .set = set_prometheus_job,
     .env = "GPU_MONITOR_PROMETHEUS_JOB",
     .key = "prometheus_job",
     FROM(PROMETHEUS_JOB),
     .help = "The daemons' scrape job (default gpumon)."},
    {.type = GM_OPT_CALLBACK,
     .name = "log-level",
     .arg = "L",
     .set = set_log_level,
     .env = "GPU_MONITOR_LOG_LEVEL",
     .key = "log_level",
     FROM(LOG_LEVEL),
     .values = "debug info warn error",
     .group = "Other",
     .help = "debug, info (default), warn or error."},
    {.type = GM_OPT_CALLBACK,
     .name = "web-root",
     .arg = "DIR",
     .set = set_web_root,
     .env = "GPU_MONITOR_WEB_ROOT",
     .key = "web_root",
     FROM(WEB_ROOT),
     .complete = "dir",
     .help = "Serve the dashboard from DIR instead of the embedded copy (development)."},
    {.type = GM_OPT_CALLBACK,
     .name = "docker",
     .arg = "HOST",
     .flags = GM_OPT_OPTARG,
     .def = "",
     .set = set_docker,
     .env = "GPU_MONITOR_DOCKER_HOST",
     .key = "docker",
     FROM(DOCKER),
     .group = "Benchmark jobs",
     .help = "Jobs may start containers through the engine at HOST (a socket path or "
             "unix:///PATH; alone: /var/run/docker.sock); DOCKER_HOST also turns it on. The "
             "engine is root on this host: see --allow-image."},
    {.type = GM_OPT_CALLBACK,
     .name = "allow-image",
     .arg = "PATTERN",
     .flags = GM_OPT_REPEAT,
     .set = set_allow_image,
     .env = "GPU_MONITOR_ALLOW_IMAGE",
     .key = "allow_image",
     FROM(ALLOW_IMAGE),
     .help = "An image jobs may start (fnmatch: nvcr.io/nim/*); repeatable or comma-separated; "
             "none: no image."},
    {0},
};

const gm_opt_command gm_serve_command = {
    .name = "serve",
    .usage = "serve [options]",
    .description = "Runs the daemon: one sampler thread reads the GPUs every poll interval and "
                   "serves the latest sample over REST, WebSocket and Prometheus /metrics.",
    .table = gm_serve_options,
    .epilogue = "An option with a [VARIABLE] is read from it when not given as a flag (an empty\n"
                "variable counts as unset); a flag's variable takes true or false.\n"
                "Endpoints: /api/health /api/config /api/gpus[/N] /api/processes /api/system\n"
                "/api/history /api/sessions /api/allocation /api/fleet /metrics /stats\n"
                "/api/v1/monitoring/gpu-metrics, WebSocket /ws/gpu and /ws/metrics. See\n"
                "docs/API.md.\n"
                "\n"
                "Exit status: 0 after SIGINT/SIGTERM, 1 runtime failure, 2 bad configuration.\n",
};

int gm_serve_config_load(gm_serve_config *c, int argc, char **argv, const char *const *envp,
                         gm_error *err)
{
    gm_serve_config_defaults(c);
    int first = argc;
    int rc = gm_opt_parse(&gm_serve_command, argc, argv, c, &first, err);
    if (rc == GM_OPT_HELP_REQUESTED) {
        c->help = true;
        return GM_OK;
    }
    if (rc < 0)
        return rc;
    if (first < argc)
        return gm_error_set(err, GM_EINVAL, "unexpected argument \"%s\"", argv[first]);
    if ((rc = gm_opt_apply_env(gm_serve_options, c, envp, err)) < 0)
        return rc;

    /* Under Kubernetes the node's name comes as NODE_NAME (the DaemonSet's downward API). */
    const char *node =
        c->source[GM_SET_HOSTNAME] == GM_CFG_DEFAULT ? gm_opt_env_get(envp, "NODE_NAME") : NULL;
    if (node) {
        gm_error sub = {0};
        if (set_hostname(c, &(gm_opt){.name = "hostname"}, node, &sub) < 0)
            return gm_error_set(err, GM_EINVAL, "NODE_NAME%s", sub.msg + strlen("--hostname"));
        c->source[GM_SET_HOSTNAME] = GM_CFG_ENV;
    }

    /* The container tools' own variable enables the engine as it names it. */
    const char *dh =
        c->source[GM_SET_DOCKER] == GM_CFG_DEFAULT ? gm_opt_env_get(envp, "DOCKER_HOST") : NULL;
    if (dh) {
        gm_error sub = {0};
        if (set_docker(c, &(gm_opt){.name = "docker"}, dh, &sub) < 0)
            return gm_error_set(err, GM_EINVAL, "DOCKER_HOST%s", sub.msg + strlen("--docker"));
        c->source[GM_SET_DOCKER] = GM_CFG_ENV;
    }

    if (c->simulate) { /* only --simulate sets it */
        if (c->source[GM_SET_PROVIDER] == GM_CFG_FLAG && strcmp(c->provider, "sim") != 0 &&
            strcmp(c->provider, "auto") != 0)
            return gm_error_set(err, GM_EINVAL, "--simulate conflicts with --provider %s",
                                c->provider);
        snprintf(c->provider, sizeof c->provider, "sim");
        c->source[GM_SET_PROVIDER] = GM_CFG_FLAG;
    }
    return GM_OK;
}

static const char *source_name(gm_cfg_source s)
{
    return s == GM_CFG_FLAG ? "flag" : s == GM_CFG_ENV ? "environment" : "default";
}

json_t *gm_serve_config_json(const gm_serve_config *c)
{
    char listen[96];
    gm_listen_addr_format(&c->listen, listen, sizeof listen);
    json_t *sources = json_object();
    json_t *j = json_object();
    if (!sources || !j)
        goto oom;
    for (const gm_opt *r = gm_serve_options; r->type != GM_OPT_END; r++)
        if (r->key && r->source &&
            json_object_set_new(sources, r->key,
                                json_string(source_name(
                                    *(const gm_cfg_source *)((const char *)c + r->source - 1)))))
            goto oom;
    int rc = 0;
    rc |= json_object_set_new(j, "listen", json_string(listen));
    rc |= json_object_set_new(j, "provider", gm_json_str(c->provider));
    rc |= json_object_set_new(j, "simulate", json_integer(c->simulate));
    rc |= json_object_set_new(j, "token_set", json_boolean(c->token_set));
    rc |= json_object_set_new(j, "history_seconds", json_integer(c->history_s));
    rc |= json_object_set_new(j, "poll_interval_ms", json_integer(c->poll_interval_ms));
    rc |= json_object_set_new(j, "ws_max_rate_hz", json_real(c->ws_max_rate_hz));
    rc |= json_object_set_new(j, "cors_origin",
                              c->cors_origin[0] ? gm_json_str(c->cors_origin) : json_null());
    rc |= json_object_set_new(j, "log_level", json_string(gm_log_level_name(c->log_level)));
    rc |= json_object_set_new(j, "system_metrics", json_boolean(c->system_metrics));
    rc |= json_object_set_new(j, "process_metrics", json_boolean(c->process_metrics));
    rc |= json_object_set_new(j, "db",
                              c->no_db   ? json_string("none")
                              : c->db[0] ? gm_json_str(c->db)
                                         : json_null());
    rc |=
        json_object_set_new(j, "web_root", c->web_root[0] ? gm_json_str(c->web_root) : json_null());
    rc |= json_object_set_new(j, "pod_resources",
                              gm_json_str(c->no_pod_resources ? "none" : c->pod_resources));
    rc |= json_object_set_new(j, "procfs", gm_json_str(c->procfs[0] ? c->procfs : "/proc"));
    rc |= json_object_set_new(j, "max_connections", json_integer(c->max_connections));
    rc |= json_object_set_new(j, "max_connections_per_ip", json_integer(c->max_connections_per_ip));
    rc |=
        json_object_set_new(j, "hostname", c->hostname[0] ? gm_json_str(c->hostname) : json_null());
    rc |= json_object_set_new(j, "prometheus",
                              c->prometheus[0] ? gm_json_str(c->prometheus_display) : json_null());
    rc |= json_object_set_new(j, "prometheus_job", gm_json_str(c->prometheus_job));
    rc |= json_object_set_new(j, "retention_seconds",
                              c->retention_s ? json_integer(c->retention_s) : json_null());
    rc |= json_object_set_new(j, "docker",
                              c->docker_host[0] ? gm_json_str(c->docker_host) : json_null());
    json_t *allow = json_array();
    for (unsigned i = 0; allow && i < c->nallow_image; i++)
        json_array_append_new(allow, gm_json_str(c->allow_image[i]));
    rc |= json_object_set_new(j, "allow_image", allow ? allow : json_null());
    rc |= json_object_set_new(j, "sources", sources);
    sources = NULL;
    if (rc)
        goto oom;
    return j;
oom:
    json_decref(sources);
    json_decref(j);
    return NULL;
}
