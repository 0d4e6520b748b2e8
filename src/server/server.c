/* server.c - the daemon's lifecycle: collector, sampler thread, libwebsockets context, a signal
 * thread, the service loop, and an orderly shutdown that frees everything. */
#include "server/server.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/lease.h"
#include "server/assets.h"
#include "server/log.h"
#include "server/server_int.h"
#include "store/store.h"

#define HISTORY_MAX_BYTES    (1024u << 20) /* refuse a history that would take more than 1 GiB */
#define FIRST_SAMPLE_WAIT_MS 30000         /* nvidia-smi alone may take 5 s; NVML init a few */

bool gm_server_refresh(gm_server *srv)
{
    gm_published *p = gm_sampler_latest(srv->sampler);
    if (!p)
        return false;
    if (p == srv->current) { /* both references are held, so equal pointers mean same bundle */
        gm_published_unref(p);
        return false;
    }
    gm_published_unref(srv->current);
    srv->current = p;
    return true;
}

/* Compares a presented secret with the expected one in time that depends only on the expected
 * length, so response timing does not reveal how much of a guess was right. */
static bool ct_equal(const char *given, size_t glen, const char *want, size_t wlen)
{
    unsigned char d = 0;
    for (size_t i = 0; i < wlen; i++)
        d |= (unsigned char)(want[i] ^ (i < glen ? given[i] : 0));
    return (d | (glen != wlen)) == 0;
}

bool gm_server_authorized(gm_server *srv, struct lws *wsi, bool allow_query)
{
    const gm_serve_config *cfg = srv->cfg;
    if (!cfg->token_set)
        return true;
    size_t wlen = strlen(cfg->token);
    char buf[GM_SERVE_TOKEN_MAX + 64];
    int n = lws_hdr_copy(wsi, buf, sizeof buf, WSI_TOKEN_HTTP_AUTHORIZATION);
    if (n > 0) {
        char *p = buf;
        while (*p == ' ')
            p++;
        if (strncasecmp(p, "Bearer ", 7) == 0) {
            p += 7;
            while (*p == ' ')
                p++;
            size_t glen = strlen(p);
            while (glen && p[glen - 1] == ' ')
                glen--;
            if (ct_equal(p, glen, cfg->token, wlen))
                return true;
        }
    }
    if (!allow_query)
        return false;
    for (int i = 0; i < 64; i++) {
        n = lws_hdr_copy_fragment(wsi, buf, sizeof buf, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n < 0)
            break;
        if (strncmp(buf, "token=", 6) == 0 && ct_equal(buf + 6, (size_t)n - 6, cfg->token, wlen))
            return true;
    }
    return false;
}

bool gm_server_peer_is_loopback(const struct sockaddr *sa, socklen_t len)
{
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}

int gm_server_write_access(bool token_set, const struct sockaddr *peer, socklen_t len)
{
    /* With a token, the token decided already. Without one, only this host may change state:
     * the default listen address is loopback, but --listen :9401 opens the port to anybody. */
    if (token_set || gm_server_peer_is_loopback(peer, len))
        return 0;
    return 403;
}

bool gm_server_origin_allowed(const char *origin, const char *host, const char *cors_origin)
{
    if (!origin || !*origin)
        return true;
    if (host && *host && strncasecmp(origin, "http://", 7) == 0 &&
        strcasecmp(origin + 7, host) == 0)
        return true;
    return cors_origin && *cors_origin && strcmp(cors_origin, "*") != 0 &&
           strcasecmp(origin, cors_origin) == 0;
}

/* ---- signals ------------------------------------------------------------------------------ */

typedef struct sig_ctx {
    gm_server *srv;
    pthread_t thread;
} sig_ctx;

static void *signal_main(void *arg)
{
    sig_ctx *sc = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    while (!atomic_load(&sc->srv->quit)) {
        struct timespec ts = {0, 200 * 1000000L};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig < 0)
            continue; /* timeout or EINTR: look at quit again */
        gm_log(GM_LOG_INFO, "shutting down", "signal=%s", sig == SIGINT ? "SIGINT" : "SIGTERM");
        atomic_store(&sc->srv->quit, true);
        lws_cancel_service(sc->srv->ctx); /* the one lws call that is safe from another thread */
        break;
    }
    return NULL;
}

static void wake_loop(void *arg)
{
    gm_server *srv = arg;
    lws_cancel_service(srv->ctx);
}

/* The sampler's hook: every published sample goes to the session worker. */
static void feed_sessions(void *arg, const gm_snapshot *snap)
{
    gm_server *srv = arg;
    gm_sessions_feed(srv->sessions, snap);
}

/* Resolves the session store path, the lease directory and the web root. Returns GM_OK, or
 * GM_EINVAL with a message (exit 2) when --web-root is not a directory. */
static int resolve_paths(gm_server *srv, gm_error *err)
{
    const gm_serve_config *cfg = srv->cfg;
    gm_error sub = {0};
    if (cfg->no_db)
        srv->db_path[0] = '\0';
    else if (cfg->db[0])
        snprintf(srv->db_path, sizeof srv->db_path, "%s", cfg->db);
    else if (gm_store_default_path(srv->db_path, sizeof srv->db_path, &sub) < 0) {
        char q[600];
        gm_log(GM_LOG_WARN, "sessions are kept in memory only", "reason=%s",
               gm_log_quote(sub.msg, q, sizeof q));
        srv->db_path[0] = '\0';
    }
    if (gm_lease_default_dir(srv->lease_dir, sizeof srv->lease_dir, &sub) < 0)
        srv->lease_dir[0] = '\0';
    if (cfg->web_root[0]) {
        char real[PATH_MAX];
        struct stat st;
        if (!realpath(cfg->web_root, real) || stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
            return gm_error_set(err, GM_EINVAL, "--web-root %s: not a directory%s%s", cfg->web_root,
                                errno ? ": " : "", errno ? strerror(errno) : "");
        snprintf(srv->web_root, sizeof srv->web_root, "%s", real);
    }
    return GM_OK;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static int write_port_file(const char *path, unsigned port)
{
    char tmp[GM_SERVE_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%u\n", port) > 0;
    ok &= fclose(f) == 0;
    /* Renamed into place so a reader never sees a half-written number. */
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* How many descriptors the loop may use: GM_FD_LIMIT, or less when the process may not open
 * that many. The soft limit is often 1024 while the hard one is far higher, so it is raised
 * first (as redis does for maxclients): 1000 WebSocket clients need more than 1024. */
static unsigned fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return GM_FD_LIMIT;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < GM_FD_LIMIT) {
        rlim_t want =
            rl.rlim_max == RLIM_INFINITY || rl.rlim_max > GM_FD_LIMIT ? GM_FD_LIMIT : rl.rlim_max;
        struct rlimit raised = {want, rl.rlim_max};
        if (want > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0)
            rl.rlim_cur = want;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < GM_FD_LIMIT)
        return (unsigned)rl.rlim_cur;
    return GM_FD_LIMIT;
}

/* The lws context: one vhost listening on cfg->listen, plain HTTP on protocols[0] and the
 * WebSocket streams as the vhost's default protocol. NULL when it cannot listen. */
static struct lws_context *create_context(gm_server *srv)
{
    const gm_serve_config *cfg = srv->cfg;
    srv->protocols[0] =
        (struct lws_protocols){"http", gm_http_callback, gm_http_pss_size(), 0, 0, NULL, 0};
    /* Browsers send no WebSocket subprotocol, so this must be the vhost default (pvo below). */
    srv->protocols[1] =
        (struct lws_protocols){"gpumon", gm_ws_callback, gm_ws_pss_size(), 4096, 0, NULL, 65536};
    memset(&srv->protocols[2], 0, sizeof srv->protocols[2]);
    static const struct lws_protocol_vhost_options pvo_default = {NULL, NULL, "default", "1"};
    static const struct lws_protocol_vhost_options pvo = {NULL, &pvo_default, "gpumon", ""};
    /* Ping idle WebSocket clients, and hang up on those that stopped answering. */
    static const lws_retry_bo_t retry = {.secs_since_valid_ping = 30,
                                         .secs_since_valid_hangup = 60};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = (int)cfg->listen.port;
    info.iface = cfg->listen.host[0] ? cfg->listen.host : NULL;
    info.protocols = srv->protocols;
    info.pvo = &pvo;
    info.user = srv;
    info.vhost_name = "default";
    info.server_string = "gpumon/" GM_VERSION;
    info.max_http_header_data = GM_HTTP_HEADER_SPACE;
    info.max_http_header_pool = 256; /* requests being parsed at once: slow senders wait */
    info.fd_limit_per_thread = fd_limit();
    info.timeout_secs = 10;
    info.retry_and_idle_policy = &retry;
    if (cfg->listen.host[0] && !cfg->listen.ipv6)
        info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    return lws_create_context(&info);
}

int gm_server_run(const gm_serve_config *cfg)
{
    int status = GM_EXIT_FAILURE;
    gm_server srv_storage = {0}, *srv = &srv_storage;
    srv->cfg = cfg;
    srv->started_mono_ms = gm_mono_ms();
    srv->ws_min_gap_us = (int64_t)(1e6 / cfg->ws_max_rate_hz);
    /* Samples cannot come faster than the poll interval: then the cap never has to act. */
    if ((int64_t)cfg->poll_interval_ms * 1000 >= srv->ws_min_gap_us)
        srv->ws_min_gap_us = 0;
    atomic_init(&srv->quit, false);
    gm_log_set_level(cfg->log_level);
    gm_log_route_lws();
    gm_error err = {0};
    errno = 0;
    if (resolve_paths(srv, &err) < 0) {
        fprintf(stderr, "gpumon serve: %s\n", err.msg);
        return GM_EXIT_USAGE;
    }

    /* Signals are taken by the signal thread alone: block them here before any thread starts,
     * so every thread (sampler, lws) inherits the mask. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);

    gm_collector_options copt = {0};
    copt.provider = strcmp(cfg->provider, "auto") == 0 ? NULL : cfg->provider;
    copt.simulate = cfg->simulate;
    copt.seed = cfg->seed;
    copt.no_host = !cfg->system_metrics;
    copt.no_first_cpu_wait = true; /* serve the first sample at once; CPU % from the second */
    char q[1100], q2[300];
    if (gm_collector_open(&copt, &srv->collector, &err) < 0) {
        gm_log(GM_LOG_ERROR, "cannot open the telemetry provider", "provider=%s error=%s",
               cfg->provider, gm_log_quote(err.msg, q, sizeof q));
        fprintf(stderr, "gpumon serve: %s\n", err.msg);
        goto out;
    }
    snprintf(srv->provider, sizeof srv->provider, "%s", gm_collector_provider(srv->collector));
    snprintf(srv->diagnosis, sizeof srv->diagnosis, "%s", gm_collector_diagnosis(srv->collector));
    if (strcmp(srv->provider, "none") == 0)
        gm_log(GM_LOG_WARN, "no GPU found: serving host metrics only", "diagnosis=%s hint=%s",
               gm_log_quote(srv->diagnosis, q, sizeof q),
               gm_log_quote("try `make demo` or `gpumon serve --simulate 4`", q2, sizeof q2));

    char addr[96];
    gm_listen_addr_format(&cfg->listen, addr, sizeof addr);
    srv->ctx = create_context(srv);
    if (!srv->ctx) {
        gm_log(GM_LOG_ERROR, "cannot listen", "listen=%s", addr);
        fprintf(stderr, "gpumon serve: cannot listen on %s (address in use or not available)\n",
                addr);
        goto out;
    }
    struct lws_vhost *vh = lws_get_vhost_by_name(srv->ctx, "default");
    int port = vh ? lws_get_vhost_listen_port(vh) : -1;
    if (port <= 0) {
        gm_log(GM_LOG_ERROR, "cannot listen", "listen=%s", addr);
        fprintf(stderr, "gpumon serve: cannot listen on %s\n", addr);
        goto out;
    }
    srv->port = (unsigned)port;

    sig_ctx sc = {.srv = srv};
    bool sig_started = pthread_create(&sc.thread, NULL, signal_main, &sc) == 0;
    if (!sig_started) {
        fprintf(stderr, "gpumon serve: cannot start the signal thread\n");
        goto out;
    }

    gm_sessions_options mopt = {.db_path = srv->db_path,
                                .poll_ms = cfg->poll_interval_ms,
                                /* The collector keeps its default slow period for energy. */
                                .energy_fresh = false,
                                .wake = wake_loop,
                                .wake_arg = srv};
    if (gm_sessions_start(&mopt, &srv->sessions, &err) < 0) {
        fprintf(stderr, "gpumon serve: %s\n", err.msg);
        goto stop;
    }
    gm_sampler_options sopt = {.collector = srv->collector,
                               .poll_ms = cfg->poll_interval_ms,
                               .history_s = cfg->history_s,
                               .history_max_bytes = HISTORY_MAX_BYTES,
                               .on_sample = feed_sessions,
                               .on_sample_arg = srv};
    if (gm_sampler_start(&sopt, wake_loop, srv, &srv->sampler, &err) < 0) {
        fprintf(stderr, "gpumon serve: %s\n", err.msg);
        goto stop;
    }
    int rc = gm_sampler_wait_first(srv->sampler, FIRST_SAMPLE_WAIT_MS, &err);
    if (rc == GM_EINVAL) {
        fprintf(stderr, "gpumon serve: %s\n", err.msg);
        status = GM_EXIT_USAGE;
        goto stop;
    }
    if (rc < 0)
        gm_log(GM_LOG_WARN, "first sample not ready; serving 503 until it is", "error=%s",
               gm_log_quote(err.msg, q, sizeof q));
    gm_server_refresh(srv);

    char host[80];
    if (!cfg->listen.host[0])
        snprintf(host, sizeof host, "0.0.0.0");
    else if (cfg->listen.ipv6)
        snprintf(host, sizeof host, "[%s]", cfg->listen.host);
    else
        snprintf(host, sizeof host, "%s", cfg->listen.host);
    if (cfg->port_file[0] && write_port_file(cfg->port_file, srv->port) < 0) {
        fprintf(stderr, "gpumon serve: cannot write --port-file %s: %s\n", cfg->port_file,
                strerror(errno));
        goto stop;
    }
    fprintf(stderr, "gpumon: listening on http://%s:%u%s\n", host, srv->port,
            cfg->listen.host[0] ? "" : " (all interfaces)");
    if (strcmp(srv->provider, "none") == 0) {
        fprintf(stderr, "gpumon: no GPU found, serving host metrics only. Tried:\n  ");
        for (const char *p = srv->diagnosis; *p; p++)
            fputs(*p == '\n' ? "\n  " : (char[]){*p, '\0'}, stderr);
        fprintf(stderr, "\ngpumon: for a first look with simulated GPUs: make demo (or gpumon "
                        "serve --simulate 4)\n");
    }
    char qdb[PATH_MAX + 8], qweb[PATH_MAX + 8];
    gm_log(GM_LOG_INFO, "listening",
           "addr=%s:%u provider=%s gpus=%u poll_ms=%u history_s=%u "
           "ws_max_rate_hz=%g token=%s cors=%s db=%s web=%s",
           host, srv->port, srv->provider, srv->current ? srv->current->gpu_count : 0,
           cfg->poll_interval_ms, cfg->history_s, cfg->ws_max_rate_hz,
           cfg->token_set ? "set" : "unset", cfg->cors_origin[0] ? cfg->cors_origin : "off",
           gm_log_quote(srv->db_path[0] ? srv->db_path : "none", qdb, sizeof qdb),
           gm_log_quote(srv->web_root[0]       ? srv->web_root
                        : gm_assets_embedded() ? "embedded"
                                               : "builtin",
                        qweb, sizeof qweb));
    if (!cfg->token_set && !cfg->listen.host[0])
        gm_log(GM_LOG_WARN, "listening on all interfaces without a token", "detail=%s",
               gm_log_quote("anybody who reaches the port can read the GPUs; POST and DELETE "
                            "are refused from other hosts until --token is set",
                            qweb, sizeof qweb));

    while (!atomic_load(&srv->quit))
        if (lws_service(srv->ctx, 0) < 0) {
            gm_log(GM_LOG_ERROR, "service loop failed", "%s", "");
            goto stop;
        }
    status = GM_EXIT_OK;

stop:
    atomic_store(&srv->quit, true);
    /* The sampler goes first: it calls lws_cancel_service on the context destroyed below and
     * feeds the session worker, which goes next (it wakes the loop too, and stops the running
     * sessions with their end written). */
    gm_sampler_stop(srv->sampler);
    gm_sessions_stop(srv->sessions);
    pthread_join(sc.thread, NULL);
out:
    if (srv->ctx)
        lws_context_destroy(srv->ctx); /* closes every client; their callbacks drop refs and
                                        * hand parked session jobs back */
    gm_sessions_free(srv->sessions);
    srv->sessions = NULL;
    gm_published_unref(srv->current);
    srv->current = NULL;
    gm_sampler_free(srv->sampler);
    gm_collector_close(srv->collector);
    if (cfg->port_file[0] && status == GM_EXIT_OK)
        unlink(cfg->port_file);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (status == GM_EXIT_OK)
        gm_log(GM_LOG_INFO, "stopped", "%s", "");
    return status;
}
