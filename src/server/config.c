/* config.c - parses `gpumon serve` flags and GPU_MONITOR_* variables into one validated
 * configuration; pure functions (no getenv, no printing) so every rule is unit-tested. */
#include "server/config.h"
#include "base/json.h"
#include "base/parse.h"
#include "base/suggest.h"
#include "collect/podres.h"
#include "core/docker.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

static const struct {
    const char *flag;
    const char *env;
    const char *key;
} settings[GM_SET__COUNT] = {
#define GM__SETTING_ROW(id, flag, env, key) [GM_SET_##id] = {flag, "GPU_MONITOR_" env, key},
    GM_SERVE_SETTING_MAP(GM__SETTING_ROW)
#undef GM__SETTING_ROW
};

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

static int parse_provider(const char *v, gm_serve_config *c)
{
    const char *name = gm_provider_canonical(v);
    if (!name)
        return GM_EINVAL;
    snprintf(c->provider, sizeof c->provider, "%s", name);
    return GM_OK;
}

/* Applies one setting's text to c. `who` names its origin for messages ("--poll-interval",
 * "GPU_MONITOR_POLL_INTERVAL_MS"). */
static int apply(gm_serve_config *c, gm_serve_setting id, const char *who, const char *v,
                 gm_error *err)
{
    gm_error sub = {0};
    unsigned long long n;
    switch (id) {
    case GM_SET_LISTEN:
        if (gm_config_parse_listen(v, &c->listen, &sub) < 0)
            return gm_error_set(err, GM_EINVAL, "%s: %s", who, sub.msg);
        return GM_OK;
    case GM_SET_PROVIDER:
        if (parse_provider(v, c) < 0)
            return gm_error_set(err, GM_EINVAL, "%s: \"%s\" is not one of %s", who, v,
                                gm_provider_names());
        return GM_OK;
    case GM_SET_TOKEN:
        if (strcmp(v, "generate") == 0) {
            /* 128 random bits as 32 hex digits: nothing to quote in a header or a URL. */
            unsigned char r[16];
            if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
                return gm_error_set(err, GM_EIO, "%s generate: no random bytes: %s", who,
                                    strerror(errno));
            for (size_t i = 0; i < sizeof r; i++)
                snprintf(c->token + 2 * i, 3, "%02x", r[i]);
            c->token_set = c->token_generated = true;
            return GM_OK;
        }
        if (!token_ok(v))
            return gm_error_set(err, GM_EINVAL,
                                "%s: the token must be 1 to %d visible ASCII characters", who,
                                GM_SERVE_TOKEN_MAX);
        snprintf(c->token, sizeof c->token, "%s", v);
        c->token_set = true;
        return GM_OK;
    case GM_SET_HISTORY: {
        int64_t ms;
        if (gm_parse_duration_ms(v, 0, (int64_t)GM_SERVE_HISTORY_MAX_S * 1000, &ms) < 0)
            return gm_error_set(err, GM_EINVAL, "%s: \"%s\" is not %s, at most %ud", who, v,
                                gm_parse_duration_help(), GM_SERVE_HISTORY_MAX_S / 86400);
        c->history_s = (unsigned)((ms + 999) / 1000); /* whole seconds, never rounded to 0 */
        return GM_OK;
    }
    case GM_SET_POLL:
        if (gm_parse_uint(v, GM_SERVE_POLL_MIN_MS, GM_SERVE_POLL_MAX_MS, &n) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%s\" is not a whole number of milliseconds from %d to %d",
                                who, v, GM_SERVE_POLL_MIN_MS, GM_SERVE_POLL_MAX_MS);
        c->poll_interval_ms = (unsigned)n;
        return GM_OK;
    case GM_SET_WS_RATE:
        if (gm_parse_number(v, GM_SERVE_WS_RATE_MIN, GM_SERVE_WS_RATE_MAX, &c->ws_max_rate_hz) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%s\" is not a rate in Hz from %g to %g (e.g. 5 or 0.5)", who,
                                v, GM_SERVE_WS_RATE_MIN, GM_SERVE_WS_RATE_MAX);
        return GM_OK;
    case GM_SET_CORS:
        if (!origin_ok(v))
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%s\" is not an origin (use \"*\" or scheme://host[:port], "
                                "e.g. http://localhost:5173)",
                                who, v);
        snprintf(c->cors_origin, sizeof c->cors_origin, "%s", v);
        return GM_OK;
    case GM_SET_LOG_LEVEL:
        if (gm_config_parse_log_level(v, &c->log_level) < 0)
            return gm_error_set(err, GM_EINVAL, "%s: \"%s\" is not one of debug, info, warn, error",
                                who, v);
        return GM_OK;
    case GM_SET_SYSTEM:
        if (gm_parse_bool(v, &c->system_metrics) < 0)
            return gm_error_set(err, GM_EINVAL, "%s: \"%s\" is not true or false", who, v);
        return GM_OK;
    case GM_SET_PROCESS_METRICS:
        if (gm_parse_bool(v, &c->process_metrics) < 0)
            return gm_error_set(err, GM_EINVAL, "%s: \"%s\" is not true or false", who, v);
        return GM_OK;
    case GM_SET_DB:
        if (!*v || strlen(v) >= sizeof c->db)
            return gm_error_set(err, GM_EINVAL, "%s: a path of 1 to %zu bytes, or \"none\"", who,
                                sizeof c->db - 1);
        c->no_db = strcmp(v, "none") == 0;
        snprintf(c->db, sizeof c->db, "%s", c->no_db ? "" : v);
        return GM_OK;
    case GM_SET_POD_RESOURCES:
        /* Whether a socket is there is the watcher's business: the kubelet may come later. */
        if (!*v || strlen(v) > GM_SERVE_SOCKET_PATH_MAX)
            return gm_error_set(err, GM_EINVAL, "%s: a socket path of 1 to %d bytes, or \"none\"",
                                who, GM_SERVE_SOCKET_PATH_MAX);
        c->no_pod_resources = strcmp(v, "none") == 0;
        snprintf(c->pod_resources, sizeof c->pod_resources, "%s", c->no_pod_resources ? "" : v);
        return GM_OK;
    case GM_SET_PROCFS:
        if (!*v || strlen(v) >= sizeof c->procfs)
            return gm_error_set(err, GM_EINVAL, "%s: a directory path of 1 to %zu bytes", who,
                                sizeof c->procfs - 1);
        snprintf(c->procfs, sizeof c->procfs, "%s", v);
        return GM_OK;
    case GM_SET_WEB_ROOT:
        /* Whether it exists is checked when the daemon starts (config parsing touches no file). */
        if (!*v || strlen(v) >= sizeof c->web_root)
            return gm_error_set(err, GM_EINVAL, "%s: a directory path of 1 to %zu bytes", who,
                                sizeof c->web_root - 1);
        snprintf(c->web_root, sizeof c->web_root, "%s", v);
        return GM_OK;
    case GM_SET_MAX_CONN:
        if (gm_parse_uint(v, GM_SERVE_CONN_MIN, GM_SERVE_CONN_MAX, &n) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%s\" is not a whole number of connections from %d to %d",
                                who, v, GM_SERVE_CONN_MIN, GM_SERVE_CONN_MAX);
        c->max_connections = (unsigned)n;
        return GM_OK;
    case GM_SET_MAX_CONN_IP:
        if (gm_parse_uint(v, 0, GM_SERVE_CONN_MAX, &n) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%s\" is not a whole number of connections from 0 (no limit) "
                                "to %d",
                                who, v, GM_SERVE_CONN_MAX);
        c->max_connections_per_ip = (unsigned)n;
        return GM_OK;
    case GM_SET_HOSTNAME:
        if (!hostname_ok(v))
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%.64s\" is not a host name (1 to %d letters, digits, '.', "
                                "'-' or '_')",
                                who, v, GM_HOSTNAME_LEN - 1);
        snprintf(c->hostname, sizeof c->hostname, "%s", v);
        return GM_OK;
    case GM_SET_PROMETHEUS:
        if (gm_prometheus_url_check(v, c->prometheus_display, sizeof c->prometheus_display, &sub) <
            0)
            return gm_error_set(err, GM_EINVAL, "%s: %s", who, sub.msg);
        snprintf(c->prometheus, sizeof c->prometheus, "%s", v);
        return GM_OK;
    case GM_SET_PROMETHEUS_JOB:
        if (!gm_fleet_job_ok(v))
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%.64s\" is not a job name (1 to %d letters, digits, '_', "
                                "'-', '.', ':', '/')",
                                who, v, GM_FLEET_JOB_MAX - 1);
        snprintf(c->prometheus_job, sizeof c->prometheus_job, "%s", v);
        return GM_OK;
    case GM_SET_RETENTION: {
        int64_t ms;
        if (strcmp(v, "0") == 0 || strcasecmp(v, "forever") == 0) {
            c->retention_s = 0;
            return GM_OK;
        }
        if (gm_parse_duration_ms(v, (int64_t)GM_SERVE_RETENTION_MIN_S * 1000,
                                 (int64_t)GM_SERVE_RETENTION_MAX_S * 1000, &ms) < 0)
            return gm_error_set(err, GM_EINVAL,
                                "%s: \"%s\" is not %s of at least 1s (or 0: keep everything)", who,
                                v, gm_parse_duration_help());
        c->retention_s = (unsigned)((ms + 999) / 1000);
        return GM_OK;
    }
    case GM_SET_DOCKER: {
        /* A bare socket path is taken for unix://PATH; "" (--docker alone) is the default. */
        char host[GM_SERVE_PATH_MAX];
        if ((size_t)snprintf(host, sizeof host, "%s%s", v[0] == '/' ? "unix://" : "",
                             *v ? v : GM_DOCKER_DEFAULT_HOST) >= sizeof host)
            return gm_error_set(err, GM_EINVAL, "%s: too long", who);
        gm_docker *d = NULL;
        if (gm_docker_open(host, &d, &sub) < 0)
            return gm_error_set(err, GM_EINVAL, "%s: %s", who, sub.msg);
        gm_docker_close(d);
        snprintf(c->docker_host, sizeof c->docker_host, "%s", host);
        return GM_OK;
    }
    case GM_SET_ALLOW_IMAGE:
        /* Repeatable, and a comma-separated list (no image reference holds a comma). */
        for (const char *p = v; *p;) {
            size_t len = strcspn(p, ",");
            if (len == 0 || len >= GM_SERVE_ALLOW_IMAGE_LEN || memchr(p, ' ', len) ||
                memchr(p, '\t', len))
                return gm_error_set(err, GM_EINVAL,
                                    "%s: \"%.*s\" is not an image pattern (such as "
                                    "nvcr.io/nim/*:1.*, without spaces)",
                                    who, (int)(len > 80 ? 80 : len), p);
            if (c->nallow_image == GM_SERVE_ALLOW_IMAGE_MAX)
                return gm_error_set(err, GM_EINVAL, "%s: at most %d patterns", who,
                                    GM_SERVE_ALLOW_IMAGE_MAX);
            snprintf(c->allow_image[c->nallow_image++], GM_SERVE_ALLOW_IMAGE_LEN, "%.*s", (int)len,
                     p);
            p += len + (p[len] == ',');
        }
        return GM_OK;
    case GM_SET__COUNT:
        break;
    }
    return gm_error_set(err, GM_EINVAL, "%s: unknown setting", who);
}

/* Value of NAME in envp, NULL when unset or empty (an empty variable counts as unset). */
static const char *env_get(const char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return (*envp)[n + 1] ? *envp + n + 1 : NULL;
    return NULL;
}

/* Flags that exist only as flags. --interval is the sampling period as a duration, the name
 * every gpumon command gives it (--poll-interval takes milliseconds, as its variable does). */
enum {
    EXTRA_PORT_FILE = GM_SET__COUNT,
    EXTRA_SIMULATE,
    EXTRA_SEED,
    EXTRA_HELP,
    EXTRA_INTERVAL,
    EXTRA__END
};
static const char *const extra[] = {"port-file", "simulate", "seed", "help", "interval"};

/* The flag closest to a mistyped one, NULL when none is close. */
static const char *suggest_flag(const char *name, size_t len)
{
    const char *names[GM_SET__COUNT + EXTRA__END];
    size_t n = 0;
    char word[GM_SUGGEST_MAX_LEN + 1];
    if (len > GM_SUGGEST_MAX_LEN)
        return NULL;
    snprintf(word, sizeof word, "%.*s", (int)len, name);
    for (int i = 0; i < GM_SET__COUNT; i++)
        names[n++] = settings[i].flag;
    for (int i = 0; i < EXTRA__END - GM_SET__COUNT; i++)
        names[n++] = extra[i];
    return gm_suggest(word, names, n);
}

static int find_flag(const char *name, size_t len)
{
    for (int i = 0; i < GM_SET__COUNT; i++)
        if (strlen(settings[i].flag) == len && strncmp(settings[i].flag, name, len) == 0)
            return i;
    for (int i = 0; i < EXTRA__END - GM_SET__COUNT; i++)
        if (strlen(extra[i]) == len && strncmp(extra[i], name, len) == 0)
            return GM_SET__COUNT + i;
    return -1;
}

int gm_serve_config_load(gm_serve_config *c, int argc, char **argv, const char *const *envp,
                         gm_error *err)
{
    gm_serve_config_defaults(c);
    bool simulate_flag = false;

    /* Flags first, remembering which settings they fixed; the environment then fills the rest. */
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0) {
            c->help = true;
            return GM_OK;
        }
        /* serve has long options only; a short one is still an option, named as such. */
        if (arg[0] == '-' && arg[1] && arg[1] != '-')
            return gm_error_set(err, GM_EINVAL, "unknown option \"%s\" (see gpumon serve --help)",
                                arg);
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return gm_error_set(err, GM_EINVAL, "unexpected argument \"%s\"", arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        int id = find_flag(name, nlen);
        const char *guess = id < 0 ? suggest_flag(name, nlen) : NULL;
        if (guess)
            return gm_error_set(err, GM_EINVAL, "unknown option \"--%.*s\"; did you mean \"--%s\"?",
                                (int)nlen, name, guess);
        if (id < 0)
            return gm_error_set(err, GM_EINVAL,
                                "unknown option \"--%.*s\" (see gpumon serve --help)", (int)nlen,
                                name);
        char who[48];
        snprintf(who, sizeof who, "--%.*s", (int)nlen, name);
        if (id == EXTRA_HELP) {
            c->help = true;
            return GM_OK;
        }
        if (id == GM_SET_SYSTEM) { /* --no-system-metrics takes no value */
            if (eq)
                return gm_error_set(err, GM_EINVAL, "%s takes no value", who);
            c->system_metrics = false;
            c->source[id] = GM_CFG_FLAG;
            continue;
        }
        if (id == GM_SET_PROCESS_METRICS) { /* --process-metrics takes no value */
            if (eq)
                return gm_error_set(err, GM_EINVAL, "%s takes no value", who);
            c->process_metrics = true;
            c->source[id] = GM_CFG_FLAG;
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v && id == GM_SET_DOCKER && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0))
            v = ""; /* --docker alone: the default socket */
        if (!v) {
            if (i + 1 >= argc)
                return gm_error_set(err, GM_EINVAL, "%s needs a value", who);
            v = argv[++i];
        }
        int rc;
        unsigned long long n;
        switch (id) {
        case EXTRA_PORT_FILE:
            if (!*v || strlen(v) >= sizeof c->port_file)
                return gm_error_set(err, GM_EINVAL, "%s: a path of 1 to %zu bytes", who,
                                    sizeof c->port_file - 1);
            snprintf(c->port_file, sizeof c->port_file, "%s", v);
            break;
        case EXTRA_SIMULATE:
            if (gm_parse_uint(v, 1, GM_MAX_GPUS, &n) < 0)
                return gm_error_set(err, GM_EINVAL,
                                    "%s: \"%s\" is not a number of GPUs from 1 to %d", who, v,
                                    GM_MAX_GPUS);
            c->simulate = (unsigned)n;
            simulate_flag = true;
            break;
        case EXTRA_INTERVAL: {
            int64_t ms;
            if (gm_parse_duration_ms(v, GM_SERVE_POLL_MIN_MS, GM_SERVE_POLL_MAX_MS, &ms) < 0)
                return gm_error_set(err, GM_EINVAL, "%s: \"%s\" is not %s from %gs to %gs", who, v,
                                    gm_parse_duration_help(), GM_SERVE_POLL_MIN_MS / 1000.0,
                                    GM_SERVE_POLL_MAX_MS / 1000.0);
            c->poll_interval_ms = (unsigned)ms;
            c->source[GM_SET_POLL] = GM_CFG_FLAG;
            break;
        }
        case EXTRA_SEED:
            if (gm_parse_uint(v, 0, UINT64_MAX, &n) < 0)
                return gm_error_set(err, GM_EINVAL, "%s: \"%s\" is not a whole number", who, v);
            c->seed = n;
            break;
        default:
            rc = apply(c, (gm_serve_setting)id, who, v, err);
            if (rc < 0)
                return rc;
            c->source[id] = GM_CFG_FLAG;
            break;
        }
    }

    for (int id = 0; id < GM_SET__COUNT; id++) {
        if (c->source[id] == GM_CFG_FLAG)
            continue;
        const char *v = env_get(envp, settings[id].env);
        if (!v)
            continue;
        int rc = apply(c, (gm_serve_setting)id, settings[id].env, v, err);
        if (rc < 0)
            return rc;
        c->source[id] = GM_CFG_ENV;
    }

    /* Under Kubernetes the node's name comes as NODE_NAME (the DaemonSet's downward API). */
    const char *node =
        c->source[GM_SET_HOSTNAME] == GM_CFG_DEFAULT ? env_get(envp, "NODE_NAME") : NULL;
    if (node) {
        int rc = apply(c, GM_SET_HOSTNAME, "NODE_NAME", node, err);
        if (rc < 0)
            return rc;
        c->source[GM_SET_HOSTNAME] = GM_CFG_ENV;
    }

    /* The container tools' own variable enables the engine as it names it. */
    const char *dh =
        c->source[GM_SET_DOCKER] == GM_CFG_DEFAULT ? env_get(envp, "DOCKER_HOST") : NULL;
    if (dh) {
        int rc = apply(c, GM_SET_DOCKER, "DOCKER_HOST", dh, err);
        if (rc < 0)
            return rc;
        c->source[GM_SET_DOCKER] = GM_CFG_ENV;
    }

    if (simulate_flag) {
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
    for (int id = 0; id < GM_SET__COUNT; id++)
        if (json_object_set_new(sources, settings[id].key, json_string(source_name(c->source[id]))))
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

const char *gm_serve_usage(void)
{
    return "usage: gpumon serve [options]\n"
           "\n"
           "Runs the daemon: one sampler thread reads the GPUs every poll interval and\n"
           "serves the latest sample over REST, WebSocket and Prometheus /metrics.\n"
           "\n"
           "Options (each overrides its GPU_MONITOR_* variable, which overrides the\n"
           "default):\n"
           "  --listen ADDR          127.0.0.1:9401 | [::1]:9401 | :9401 (all interfaces) |\n"
           "                         9401 (loopback); port 0 picks a free port      [LISTEN]\n"
           "  --port-file PATH       write the bound port to PATH once listening\n"
           "  --provider P           nvml | nvidia-smi | amdgpu | nvtop | sim | auto\n"
           "                                                   [TELEMETRY_PROVIDER]\n"
           "  --simulate N           N simulated GPUs (provider sim)\n"
           "  --seed N               seed of the simulation\n"
           "  --token T              require \"Authorization: Bearer T\" (WebSocket: also\n"
           "                         ?token=T); \"generate\": a random one, shown with the\n"
           "                         dashboard's address on the terminal           [TOKEN]\n"
           "  --history D            history kept: 3600, 90s, 15m, 1h, 2h30m, 1d (default\n"
           "                         1h; 0 keeps none)                           [HISTORY]\n"
           "  --interval D           sampling period: 1, 0.5, 500ms, 2m (0.1s to 1h,\n"
           "                         default 1s)\n"
           "  --poll-interval MS     the same in milliseconds, 100 to 3600000\n"
           "                                                            [POLL_INTERVAL_MS]\n"
           "  --ws-max-rate HZ       most WebSocket frames per second per client, 0.1 to 100\n"
           "                         (default 5)                          [WS_MAX_RATE_HZ]\n"
           "  --cors-origin ORIGIN   send Access-Control-Allow-Origin: ORIGIN and answer\n"
           "                         preflights (default off)                [CORS_ORIGIN]\n"
           "  --log-level L          debug | info | warn | error (default info) [LOG_LEVEL]\n"
           "  --no-system-metrics    skip host metrics        [ENABLE_SYSTEM_METRICS=false]\n"
           "  --process-metrics      per-process utilisation on /metrics (one series per\n"
           "                         process and engine)           [PROCESS_METRICS=true]\n"
           "  --db PATH              session store (SQLite); \"none\" keeps sessions in memory\n"
           "                         (default $XDG_STATE_HOME/gpumon/gpumon.db)         [DB]\n"
           "  --retention D          delete stored sessions, runs and benchmarks that ended\n"
           "                         more than D ago (30d, 12h...), at start and then\n"
           "                         periodically; 0 keeps all (default)      [RETENTION]\n"
           "  --web-root DIR         serve the dashboard from DIR instead of the embedded\n"
           "                         copy (development)                          [WEB_ROOT]\n"
           "  --pod-resources PATH   the kubelet's pod-resources socket, read for the pods\n"
           "                         and containers that hold the GPUs; \"none\" never\n"
           "                         reads it (default\n"
           "                         /var/lib/kubelet/pod-resources/kubelet.sock)\n"
           "                                                               [POD_RESOURCES]\n"
           "  --procfs DIR           where the host's /proc is mounted: host metrics, GPU\n"
           "                         processes' users, commands and cgroups (default /proc)\n"
           "                                                                      [PROCFS]\n"
           "  --hostname NAME        the node's name in the Hostname label, JSON and the\n"
           "                         dashboard (default: $NODE_NAME, else this host's)\n"
           "                                                                    [HOSTNAME]\n"
           "  --max-connections N    HTTP and WebSocket connections at once, 16 to 65536\n"
           "                         (default 4096, or what the open-file limit allows)\n"
           "                                                             [MAX_CONNECTIONS]\n"
           "  --max-connections-per-ip N\n"
           "                         of them from one client address, 0 (no limit) to 65536\n"
           "                         (default 1024); a reverse proxy on this host is one\n"
           "                         address for all its clients\n"
           "                                                      [MAX_CONNECTIONS_PER_IP]\n"
           "  --prometheus URL       the Prometheus that scrapes the fleet's daemons: serves\n"
           "                         GET /api/fleet and the dashboard's Fleet page (default\n"
           "                         off)                                 [PROMETHEUS_URL]\n"
           "  --prometheus-job NAME  the daemons' scrape job (default gpumon)\n"
           "                                                              [PROMETHEUS_JOB]\n"
           "  --docker [HOST]        benchmark jobs may start containers through the\n"
           "                         engine at HOST (a socket path or unix:///PATH; alone:\n"
           "                         /var/run/docker.sock); DOCKER_HOST also turns it on.\n"
           "                         The engine is root on this host: see --allow-image\n"
           "                                                                 [DOCKER_HOST]\n"
           "  --allow-image PATTERN  an image jobs may start (fnmatch: nvcr.io/nim/*);\n"
           "                         repeatable or comma-separated; none: no image\n"
           "                                                                 [ALLOW_IMAGE]\n"
           "  -h, --help             show this help\n"
           "\n"
           "Variables are named GPU_MONITOR_<NAME>, e.g. GPU_MONITOR_POLL_INTERVAL_MS=500.\n"
           "Endpoints: /api/health /api/config /api/gpus[/N] /api/processes /api/system\n"
           "/api/history /api/sessions /api/allocation /api/fleet /metrics /stats\n"
           "/api/v1/monitoring/gpu-metrics, WebSocket /ws/gpu and /ws/metrics. See\n"
           "docs/API.md.\n"
           "\n"
           "Exit status: 0 after SIGINT/SIGTERM, 1 runtime failure, 2 bad configuration.\n";
}
