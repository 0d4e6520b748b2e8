/* config.h - the daemon's configuration: flags, then GPU_MONITOR_* environment, then defaults,
 * parsed by pure functions so tests feed argv and an environment array. Each setting is one row
 * of gm_serve_options (base/opt.h says how to add one). */
#ifndef GM_SERVER_CONFIG_H
#define GM_SERVER_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/opt.h"
#include "core/fleet.h"
#include "core/prometheus.h"
#include "gpumon.h"

#define GM_SERVE_DEFAULT_HOST      "127.0.0.1"
#define GM_SERVE_DEFAULT_PORT      9401
#define GM_SERVE_POLL_DEFAULT_MS   1000
#define GM_SERVE_POLL_MIN_MS       100
#define GM_SERVE_POLL_MAX_MS       3600000
#define GM_SERVE_WS_RATE_DEFAULT   5.0
#define GM_SERVE_WS_RATE_MIN       0.1
#define GM_SERVE_WS_RATE_MAX       100.0
#define GM_SERVE_HISTORY_DEFAULT_S 3600
#define GM_SERVE_HISTORY_MAX_S     (7u * 86400u)
#define GM_SERVE_TOKEN_MAX         256
#define GM_SERVE_ORIGIN_MAX        256
#define GM_SERVE_PATH_MAX          1024
#define GM_SERVE_SOCKET_PATH_MAX   107  /* sockaddr_un's sun_path, without its NUL */
#define GM_SERVE_CONN_DEFAULT      4096 /* lowered to what RLIMIT_NOFILE allows at start */
#define GM_SERVE_CONN_MIN          16
#define GM_SERVE_CONN_MAX          65536
#define GM_SERVE_CONN_IP_DEFAULT   1024 /* per client address; 0: no limit */
#define GM_SERVE_RETENTION_MIN_S   1
#define GM_SERVE_RETENTION_MAX_S   (100u * 366u * 86400u)
#define GM_SERVE_ALLOW_IMAGE_MAX   32 /* --allow-image patterns */
#define GM_SERVE_ALLOW_IMAGE_LEN   256

typedef enum gm_log_level {
    GM_LOG_DEBUG = 0,
    GM_LOG_INFO = 1,
    GM_LOG_WARN = 2,
    GM_LOG_ERROR = 3,
} gm_log_level;

/* Where an effective value came from, reported by /api/config. */
typedef gm_opt_source gm_cfg_source;
#define GM_CFG_DEFAULT GM_OPT_FROM_DEFAULT
#define GM_CFG_ENV     GM_OPT_FROM_ENV
#define GM_CFG_FLAG    GM_OPT_FROM_FLAG

/* The settings whose origin /api/config reports: each indexes gm_serve_config.source, and its
 * row in config.c's table (gm_serve_options) gives its flag, variable, key and parser. */
typedef enum gm_serve_setting {
    GM_SET_LISTEN,
    GM_SET_PROVIDER,
    GM_SET_TOKEN,
    GM_SET_HISTORY,
    GM_SET_POLL,
    GM_SET_WS_RATE,
    GM_SET_CORS,
    GM_SET_LOG_LEVEL,
    GM_SET_SYSTEM,
    GM_SET_PROCESS_METRICS,
    GM_SET_DB,
    GM_SET_POD_RESOURCES,
    GM_SET_PROCFS,
    GM_SET_WEB_ROOT,
    GM_SET_MAX_CONN,
    GM_SET_MAX_CONN_IP,
    GM_SET_HOSTNAME,
    GM_SET_PROMETHEUS,
    GM_SET_PROMETHEUS_JOB,
    GM_SET_RETENTION,
    GM_SET_DOCKER,
    GM_SET_ALLOW_IMAGE,
    GM_SET__COUNT
} gm_serve_setting;

/* A listening address. */
typedef struct gm_listen_addr {
    char host[64]; /* numeric IPv4 or IPv6 literal without brackets; "" means all interfaces */
    unsigned port; /* 0: the kernel picks one */
    bool ipv6;     /* host is an IPv6 literal */
} gm_listen_addr;

/* The effective configuration of `gpumon serve`. */
typedef struct gm_serve_config {
    gm_listen_addr listen;
    char provider[16]; /* "auto", "nvml", "nvidia-smi" or "sim" */
    unsigned simulate; /* --simulate N: N simulated GPUs (implies provider sim) */
    uint64_t seed;     /* --seed: the simulation's seed */
    bool token_set;
    bool token_generated; /* --token generate: random, shown only on a terminal */
    char token[GM_SERVE_TOKEN_MAX + 1];
    unsigned history_s; /* seconds of history kept; 0 keeps none */
    unsigned poll_interval_ms;
    double ws_max_rate_hz;
    char cors_origin[GM_SERVE_ORIGIN_MAX + 1]; /* "" leaves CORS off */
    gm_log_level log_level;
    bool system_metrics;
    bool process_metrics;              /* per-process utilisation series on /metrics */
    char port_file[GM_SERVE_PATH_MAX]; /* "" writes none */
    /* The session store (SQLite): "" means the default path (gm_store_default_path), and
     * no_db (--db none) keeps sessions in memory only. */
    char db[GM_SERVE_PATH_MAX];
    bool no_db;
    char web_root[GM_SERVE_PATH_MAX]; /* "" serves the embedded dashboard */
    /* The kubelet's pod-resources socket (default GM_PODRES_DEFAULT_SOCKET); no_pod_resources
     * (--pod-resources none) never asks it. */
    char pod_resources[GM_SERVE_SOCKET_PATH_MAX + 1];
    bool no_pod_resources;
    char procfs[GM_SERVE_PATH_MAX];  /* where procfs is mounted; "" is /proc */
    unsigned max_connections;        /* HTTP and WebSocket connections together */
    unsigned max_connections_per_ip; /* of them from one client address; 0: no limit */
    /* The node's name in the Hostname label, JSON and the dashboard: --hostname, else
     * GPU_MONITOR_HOSTNAME, else NODE_NAME (Kubernetes), else "" (the host's own name). */
    char hostname[GM_HOSTNAME_LEN + 1];
    /* The fleet view (GET /api/fleet, the dashboard's Fleet page): Prometheus's base URL, ""
     * when off, and the job that scrapes the daemons (default "gpumon"). prometheus_display is
     * the URL without user:password, for /api/config, the log and the API. */
    char prometheus[GM_PROMETHEUS_URL_MAX];
    char prometheus_display[GM_PROMETHEUS_URL_MAX];
    char prometheus_job[GM_FLEET_JOB_MAX];
    /* Stored sessions, runs and benchmarks older than this are deleted, at start and then
     * periodically by the session worker; 0 keeps everything. */
    unsigned retention_s;
    /* Benchmark jobs with an image: the engine's address ("unix:///PATH"), "" when the daemon
     * has no engine access (--docker [HOST], GPU_MONITOR_DOCKER_HOST or DOCKER_HOST), and the
     * fnmatch patterns of the images they may start (--allow-image; none: no image). */
    char docker_host[GM_SERVE_PATH_MAX];
    char allow_image[GM_SERVE_ALLOW_IMAGE_MAX][GM_SERVE_ALLOW_IMAGE_LEN];
    unsigned nallow_image;
    bool help; /* --help was given: print usage, run nothing */
    gm_cfg_source source[GM_SET__COUNT];
} gm_serve_config;

/* Fills c with the defaults (127.0.0.1:9401, provider auto, 1 s polling, 1 h history, 5 Hz). */
void gm_serve_config_defaults(gm_serve_config *c);

/* Builds the configuration from argv (argv[0] is the command name, then flags in the forms
 * "--flag value" and "--flag=value") over envp (a NULL-terminated "NAME=value" array, NULL for
 * none) over the defaults. Returns GM_OK, or GM_EINVAL with a message naming the flag or the
 * variable and what it accepts. With --help, returns GM_OK with c->help set. */
int gm_serve_config_load(gm_serve_config *c, int argc, char **argv, const char *const *envp,
                         gm_error *err);

/* Parses "host:port", "[v6]:port", ":port" (all interfaces) or "port" (loopback). host must be
 * a numeric address or "localhost"; port 0..65535. GM_EINVAL when malformed. */
int gm_config_parse_listen(const char *s, gm_listen_addr *out, gm_error *err);

/* Parses debug/info/warn/warning/error/critical (case-insensitive). GM_EINVAL otherwise. */
int gm_config_parse_log_level(const char *s, gm_log_level *out);

/* Lower-case name of a level ("info"). */
const char *gm_log_level_name(gm_log_level l);

/* True when a only reaches this host: 127.0.0.0/8 or ::1 (not "", 0.0.0.0, ::). */
bool gm_listen_addr_is_loopback(const gm_listen_addr *a);

/* "127.0.0.1:9401", "[::1]:0" or ":9401" into buf. */
void gm_listen_addr_format(const gm_listen_addr *a, char *buf, size_t len);

/* The configuration as /api/config shows it: every setting and where it came from, the token
 * only as "token_set". New reference, NULL when out of memory. */
json_t *gm_serve_config_json(const gm_serve_config *c);

/* `gpumon serve`'s options: one row per setting with its flag, GPU_MONITOR_* variable,
 * /api/config key, parser and help. gm_opt_help(&gm_serve_command, ...) is its --help. */
extern const gm_opt gm_serve_options[];
extern const gm_opt_command gm_serve_command;

#endif
