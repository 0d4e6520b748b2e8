/* server.c - the daemon's lifecycle and its one event loop: collector, sampler thread, session
 * worker, and an epoll loop that drives libmicrohttpd (HTTP) and the WebSocket clients and reads
 * SIGINT/SIGTERM from a signalfd; then an orderly shutdown that frees everything. */
#include "server/server.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "base/file.h"
#include "core/lease.h"
#include "server/assets.h"
#include "server/log.h"
#include "server/server_int.h"
#include "store/store.h"
#include "base/error.h"

#define HISTORY_MAX_BYTES    (1024u << 20) /* refuse a history that would take more than 1 GiB */
#define FIRST_SAMPLE_WAIT_MS 30000         /* nvidia-smi alone may take 5 s; NVML init a few */
#define SWEEP_MS             1000          /* deadlines and pings are checked this often */

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

/* On a terminal, the dashboard's address with the token in its fragment (never sent to a
 * server, and the page takes it out of the address bar), so a person can open it at once. Never
 * when stderr is a file or a journal: logs must not hold the secret. */
static void print_dashboard_url(const gm_serve_config *cfg, const char *host, unsigned port)
{
    const char *h = host;
    if (!cfg->listen.host[0] || strcmp(host, "0.0.0.0") == 0)
        h = "127.0.0.1";
    else if (strcmp(host, "[::]") == 0)
        h = "[::1]";
    char tok[3 * GM_SERVE_TOKEN_MAX + 1];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)cfg->token; *p; p++) {
        if (isalnum(*p) || strchr("-._~", *p))
            tok[n++] = (char)*p;
        else
            n += (size_t)snprintf(tok + n, sizeof tok - n, "%%%02X", *p);
    }
    tok[n] = '\0';
    fprintf(stderr, "gpumon: dashboard: http://%s:%u/#token=%s\n", h, port, tok);
}

bool gm_server_authorized(const gm_server *srv, const char *authorization, const char *query_token)
{
    const gm_serve_config *cfg = srv->cfg;
    if (!cfg->token_set)
        return true;
    size_t wlen = strlen(cfg->token);
    if (authorization) {
        const char *p = authorization;
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
    return query_token && ct_equal(query_token, strlen(query_token), cfg->token, wlen);
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
    /* The daemon's own pages, directly or through a proxy that terminates TLS and passes the
     * browser's Host on (deploy/nginx): the same host under either scheme. */
    size_t skip = strncasecmp(origin, "http://", 7) == 0    ? 7
                  : strncasecmp(origin, "https://", 8) == 0 ? 8
                                                            : 0;
    if (host && *host && skip && strcasecmp(origin + skip, host) == 0)
        return true;
    return cors_origin && *cors_origin && strcmp(cors_origin, "*") != 0 &&
           strcasecmp(origin, cors_origin) == 0;
}

/* ---- the loop's plumbing ----------------------------------------------------------------- */

void gm_server_wake(gm_server *srv)
{
    uint64_t one = 1;
    /* A full counter already means "wake up": nothing to do on EAGAIN. */
    (void)!write(srv->wakefd, &one, sizeof one);
}

int gm_server_watch(gm_server *srv, int fd, gm_poll *tag, unsigned events)
{
    struct epoll_event ev = {.events = events, .data.ptr = tag};
    return epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int gm_server_rewatch(gm_server *srv, int fd, gm_poll *tag, unsigned events)
{
    struct epoll_event ev = {.events = events, .data.ptr = tag};
    return epoll_ctl(srv->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void gm_server_unwatch(gm_server *srv, int fd)
{
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* ---- signals ------------------------------------------------------------------------------ */

/* SIGINT or SIGTERM, read from the signalfd: the loop stops. Every thread blocks both (they
 * inherit the mask set before any starts), so they only ever arrive here. */
static void take_signal(gm_server *srv)
{
    struct signalfd_siginfo si;
    if (read(srv->sigfd, &si, sizeof si) != (ssize_t)sizeof si)
        return;
    gm_log(GM_LOG_INFO, "shutting down", "signal=%s",
           si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&srv->quit, true);
}

static void wake_loop(void *arg)
{
    gm_server_wake(arg);
}

/* The sampler's wake: a new sample is work for the loop only while a client is connected
 * (WebSocket clients wait for it); HTTP requests take the newest sample themselves
 * (gm_server_refresh). */
static void sample_ready(void *arg)
{
    gm_server *srv = arg;
    if (atomic_load(&srv->sample_wake))
        gm_server_wake(srv);
}

/* The sampler's hook: every published sample goes to the session worker. */
static void feed_sessions(void *arg, const gm_snapshot *snap)
{
    gm_server *srv = arg;
    gm_worker_feed(srv->worker, snap);
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

/* Written by the output rules (base/file.h): a temporary file with a fresh name renamed into
 * place, so a reader never sees a half-written number and a link planted beside the target is
 * never followed; *id says which file to remove at exit. */
static int write_port_file(const char *path, unsigned port, gm_file_id *id, gm_error *err)
{
    char text[16];
    int n = snprintf(text, sizeof text, "%u\n", port);
    return gm_file_write(path, text, (size_t)n, id, err);
}

/* The loop: one thread serves HTTP (libmicrohttpd runs when its epoll descriptor is ready or
 * its timeout is due), the WebSocket clients, and the wake-ups from the other threads (a sample
 * for WebSocket clients, a session job done, a signal); deadlines are swept once a second while
 * there is a connection to sweep. With none, it sleeps until one comes. */
static int serve_loop(gm_server *srv)
{
    struct epoll_event evs[64];
    int64_t next_sweep = gm_clock_mono_ms() + SWEEP_MS;
    bool was_busy = false;
    while (!atomic_load(&srv->quit)) {
        int64_t now = gm_clock_mono_ms();
        bool idle = gm_list_empty(&srv->conns) && gm_list_empty(&srv->ws_clients) &&
                    gm_list_empty(&srv->pending);
        /* With a connection open, each sample also runs libmicrohttpd once more: it takes at
         * most 10 new connections a pass, and a backlog left behind the connection cap waits
         * for a turn. With none, samples do not wake the loop. */
        atomic_store(&srv->sample_wake, !idle);
        if (idle)
            next_sweep = now + SWEEP_MS; /* a connection gets its first sweep a second on */
        int timeout = idle ? -1 : (int)(next_sweep > now ? next_sweep - now : 0);
        /* The turn after the last connection closed runs libmicrohttpd once more: one that
         * stopped listening at the connection cap listens again only in a pass of its own, and
         * the backlog must wake the loop. */
        if (idle && was_busy)
            timeout = 0;
        was_busy = !idle;
        int mt = gm_http_timeout_ms(srv);
        if (mt >= 0 && (timeout < 0 || mt < timeout))
            timeout = mt;
        int n = epoll_wait(srv->epfd, evs, (int)(sizeof evs / sizeof *evs), timeout);
        if (n < 0 && errno != EINTR) {
            gm_log(GM_LOG_ERROR, "event loop failed", "error=\"%s\"", strerror(errno));
            return -1;
        }
        bool woke = false;
        for (int i = 0; i < n; i++) {
            gm_poll *tag = evs[i].data.ptr;
            if (tag->kind == GM_POLL_WAKE) {
                uint64_t v;
                (void)!read(srv->wakefd, &v, sizeof v);
                woke = true;
            } else if (tag->kind == GM_POLL_SIGNAL) {
                take_signal(srv);
            } else if (tag->kind == GM_POLL_WS) {
                gm_ws_event(srv, tag, evs[i].events);
            }
            /* GM_POLL_MHD: libmicrohttpd runs below, every turn. */
        }
        if (woke) {
            /* A request may have taken the newest sample already: it is broadcast all the same
             * (gm_ws_broadcast sends each sample once). */
            gm_server_refresh(srv);
            gm_ws_broadcast(srv);
            gm_http_poll_pending(srv);
        }
        /* Before libmicrohttpd runs: the sockets of clients that died in this turn are handed
         * back to it to close in this pass. */
        gm_ws_reap(srv);
        gm_http_run(srv);
        gm_ws_reap(srv); /* clients that died in its callbacks (an upgrade) */
        now = gm_clock_mono_ms();
        if (now >= next_sweep) {
            gm_http_sweep(srv, now);
            gm_ws_sweep(srv, now);
            next_sweep = now + SWEEP_MS;
        }
    }
    return 0;
}

/* Samples every poll_ms; the WebSocket cap lets every ws_every-th through, decided once per
 * sample for all clients. */
static unsigned ws_every(const gm_serve_config *cfg)
{
    double gap_ms = 1000.0 / cfg->ws_max_rate_hz;
    unsigned every = 1;
    while ((double)every * cfg->poll_interval_ms < gap_ms - 1e-6)
        every++;
    return every;
}

/* The loop's descriptors: the epoll set, the eventfd other threads wake it through, and the
 * signalfd (SIGINT, SIGTERM: blocked by the caller before any thread starts). */
static int open_loop(gm_server *srv, const sigset_t *signals, gm_error *err)
{
    srv->epfd = epoll_create1(EPOLL_CLOEXEC);
    srv->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    srv->sigfd = signalfd(-1, signals, SFD_NONBLOCK | SFD_CLOEXEC);
    srv->wake_tag.kind = GM_POLL_WAKE;
    srv->sig_tag.kind = GM_POLL_SIGNAL;
    if (srv->epfd < 0 || srv->wakefd < 0 || srv->sigfd < 0 ||
        gm_server_watch(srv, srv->wakefd, &srv->wake_tag, EPOLLIN) < 0 ||
        gm_server_watch(srv, srv->sigfd, &srv->sig_tag, EPOLLIN) < 0)
        return gm_error_set(err, GM_EIO, "cannot set up the event loop: %s", strerror(errno));
    return GM_OK;
}

/* The telemetry provider, as serve's settings choose it. Returns GM_OK or the collector's
 * error code (GM_EIO when it has none), logged. */
static int open_collector(gm_server *srv, gm_error *err)
{
    const gm_serve_config *cfg = srv->cfg;
    gm_collector_options copt = {0};
    copt.provider = strcmp(cfg->provider, "auto") == 0 ? NULL : cfg->provider;
    copt.simulate = cfg->simulate;
    copt.seed = cfg->seed;
    copt.no_host = !cfg->system_metrics;
    copt.no_first_cpu_wait = true; /* serve the first sample at once; CPU % from the second */
    copt.hostname = cfg->hostname[0] ? cfg->hostname : NULL;
    copt.watch_xid = true; /* XID errors from NVML events, on a thread of the collector */
    copt.procfs_root = cfg->procfs[0] ? cfg->procfs : NULL;
    /* Kubernetes: the kubelet's allocations, on a thread of the collector too. */
    copt.pod_resources_socket = cfg->no_pod_resources ? NULL : cfg->pod_resources;
    char q[1100], q2[300];
    if (gm_collector_open(&copt, &srv->collector, err) < 0) {
        gm_log(GM_LOG_ERROR, "cannot open the telemetry provider", "provider=%s error=%s",
               cfg->provider, gm_log_quote(err->msg, q, sizeof q));
        return err->code < 0 ? err->code : GM_EIO;
    }
    snprintf(srv->provider, sizeof srv->provider, "%s", gm_collector_provider(srv->collector));
    snprintf(srv->diagnosis, sizeof srv->diagnosis, "%s", gm_collector_diagnosis(srv->collector));
    if (strcmp(srv->provider, "none") == 0)
        gm_log(GM_LOG_WARN, "no GPU found: serving host metrics only", "diagnosis=%s hint=%s",
               gm_log_quote(srv->diagnosis, q, sizeof q),
               gm_log_quote("try `make demo` or `gpumon serve --simulate 4`", q2, sizeof q2));
    return GM_OK;
}

/* The threads beside the loop: session worker, benchmark jobs, fleet cache (with
 * --prometheus) and the sampler, whose first sample is waited for. GM_OK; GM_EINVAL when the
 * first sample says the settings cannot work; GM_EIO otherwise. */
static int start_threads(gm_server *srv, gm_error *err)
{
    const gm_serve_config *cfg = srv->cfg;
    gm_worker_options mopt = {.db_path = srv->db_path,
                              .poll_ms = cfg->poll_interval_ms,
                              /* The collector keeps its default slow period for energy. */
                              .energy_fresh = false,
                              .retention_s = cfg->retention_s,
                              .wake = wake_loop,
                              .wake_arg = srv};
    if (gm_worker_start(&mopt, &srv->worker, err) < 0)
        return GM_EIO;
    gm_jobs_options jopt = {.db_path = srv->db_path,
                            .lease_dir = srv->lease_dir,
                            .provider = cfg->provider,
                            .simulate = cfg->simulate,
                            .seed = cfg->seed,
                            .procfs_root = cfg->procfs[0] ? cfg->procfs : NULL,
                            .docker_host = cfg->docker_host,
                            .allow_image = cfg->allow_image,
                            .nallow_image = cfg->nallow_image};
    if (gm_jobs_start(&jopt, &srv->jobs, err) < 0)
        return GM_EIO;
    if (cfg->prometheus[0]) {
        gm_fleet_cache_options fopt = {
            .url = cfg->prometheus, .job = cfg->prometheus_job, .wake = wake_loop, .wake_arg = srv};
        if (gm_fleet_cache_start(&fopt, &srv->fleet, err) < 0)
            return GM_EIO;
    }
    gm_sampler_options sopt = {.collector = srv->collector,
                               .poll_ms = cfg->poll_interval_ms,
                               .history_s = cfg->history_s,
                               .history_max_bytes = HISTORY_MAX_BYTES,
                               .process_metrics = cfg->process_metrics,
                               .on_sample = feed_sessions,
                               .on_sample_arg = srv};
    if (gm_sampler_start(&sopt, sample_ready, srv, &srv->sampler, err) < 0)
        return GM_EIO;
    gm_error first = {0};
    int frc = gm_sampler_wait_first(srv->sampler, FIRST_SAMPLE_WAIT_MS, &first);
    if (frc == GM_EINVAL) {
        *err = first;
        return GM_EINVAL;
    }
    char q[1100];
    if (frc < 0)
        gm_log(GM_LOG_WARN, "first sample not ready; serving 503 until it is", "error=%s",
               gm_log_quote(first.msg, q, sizeof q));
    if (gm_server_refresh(srv))
        gm_ws_broadcast(srv);
    return GM_OK;
}

/* Writes --port-file, then says where the daemon listens: on stderr for a person (with the
 * dashboard's address when a token was given on a terminal, and what was tried when no GPU was
 * found) and in the log. GM_EIO with a message when the port file cannot be written. */
static int announce(gm_server *srv, gm_file_id *port_id, gm_error *err)
{
    const gm_serve_config *cfg = srv->cfg;
    char host[80];
    if (!cfg->listen.host[0])
        snprintf(host, sizeof host, "0.0.0.0");
    else if (cfg->listen.ipv6)
        snprintf(host, sizeof host, "[%s]", cfg->listen.host);
    else
        snprintf(host, sizeof host, "%s", cfg->listen.host);
    gm_error perr = {0};
    if (cfg->port_file[0] && write_port_file(cfg->port_file, srv->port, port_id, &perr) < 0) {
        gm_error_set(err, perr.code, "--port-file: %s", perr.msg);
        return GM_EIO;
    }
    fprintf(stderr, "gpumon: listening on http://%s:%u%s\n", host, srv->port,
            cfg->listen.host[0] ? "" : " (all interfaces)");
    if (cfg->token_set && isatty(STDERR_FILENO))
        print_dashboard_url(cfg, host, srv->port);
    if (strcmp(srv->provider, "none") == 0) {
        fprintf(stderr, "gpumon: no GPU found, serving host metrics only. Tried:\n  ");
        for (const char *p = srv->diagnosis; *p; p++)
            fputs(*p == '\n' ? "\n  " : (char[]){*p, '\0'}, stderr);
        fprintf(stderr, "\ngpumon: for a first look with simulated GPUs: make demo (or gpumon "
                        "serve --simulate 4)\n");
    }
    char qdb[PATH_MAX + 8], qweb[PATH_MAX + 8], qprom[GM_PROMETHEUS_URL_MAX + 8];
    gm_log(GM_LOG_INFO, "listening",
           "addr=%s:%u provider=%s gpus=%u poll_ms=%u history_s=%u "
           "ws_max_rate_hz=%g token=%s cors=%s db=%s web=%s prometheus=%s",
           host, srv->port, srv->provider, srv->current ? srv->current->gpu_count : 0,
           cfg->poll_interval_ms, cfg->history_s, cfg->ws_max_rate_hz,
           cfg->token_set ? "set" : "unset", cfg->cors_origin[0] ? cfg->cors_origin : "off",
           gm_log_quote(srv->db_path[0] ? srv->db_path : "none", qdb, sizeof qdb),
           gm_log_quote(srv->web_root[0]       ? srv->web_root
                        : gm_assets_embedded() ? "embedded"
                                               : "builtin",
                        qweb, sizeof qweb),
           gm_log_quote(cfg->prometheus[0] ? cfg->prometheus_display : "off", qprom, sizeof qprom));
    if (!cfg->token_set && !gm_listen_addr_is_loopback(&cfg->listen))
        gm_log(GM_LOG_WARN, "listening beyond this host without a token", "addr=%s detail=%s", host,
               gm_log_quote("anybody who reaches the port can read the GPUs; POST and DELETE "
                            "are refused from other hosts until --token is set",
                            qweb, sizeof qweb));
    return GM_OK;
}

/* Clients first (they hold bundle references and parked session jobs), then the sampler and
 * the session worker, which stops the running sessions with their end written. Both wake the
 * loop through wakefd, which stays open until they are joined. */
static void stop_threads(gm_server *srv)
{
    atomic_store(&srv->quit, true);
    gm_ws_close_all(srv);
    gm_http_stop(srv);
    /* A running benchmark job stops, keeps what it measured and releases its lease. */
    gm_jobs_stop(srv->jobs);
    gm_sampler_stop(srv->sampler);
    gm_worker_stop(srv->worker);
    gm_fleet_cache_stop(srv->fleet);
}

/* Frees whatever was started (each part may be absent), and the port file of a clean run. */
static void free_all(gm_server *srv, const gm_file_id *port_id, int rc)
{
    gm_ws_close_all(srv);
    gm_http_stop(srv);
    gm_jobs_free(srv->jobs);
    srv->jobs = NULL;
    gm_worker_free(srv->worker);
    srv->worker = NULL;
    gm_fleet_cache_free(srv->fleet);
    srv->fleet = NULL;
    gm_published_unref(srv->current);
    srv->current = NULL;
    gm_sampler_free(srv->sampler);
    gm_collector_close(srv->collector);
    if (srv->wakefd >= 0)
        close(srv->wakefd);
    if (srv->sigfd >= 0) {
        /* A signal that came while starting or stopping was for this server: taken here, it
         * cannot end the process when the old mask is restored. */
        struct signalfd_siginfo si;
        while (read(srv->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
            ;
        close(srv->sigfd);
    }
    if (srv->epfd >= 0)
        close(srv->epfd);
    /* Only the file written above: never a device, a FIFO, or a file put there since. */
    if (srv->cfg->port_file[0] && rc == GM_OK)
        gm_file_remove_if_same(port_id);
}

int gm_server_run(const gm_serve_config *cfg, gm_error *err)
{
    gm_server srv_storage = {0}, *srv = &srv_storage;
    gm_file_id port_id = {0};
    srv->cfg = cfg;
    srv->started_mono_ms = gm_clock_mono_ms();
    srv->ws_every = ws_every(cfg);
    srv->epfd = srv->wakefd = srv->sigfd = -1;
    gm_list_init(&srv->conns);
    gm_list_init(&srv->pending);
    gm_list_init(&srv->deferred);
    gm_list_init(&srv->ws_clients);
    atomic_init(&srv->quit, false);
    gm_log_set_level(cfg->log_level);
    errno = 0;
    /* A generated token is shown on the terminal only (never into a journal or a file): with
     * none to show it on, nobody could use the daemon. */
    if (cfg->token_generated && !isatty(STDERR_FILENO))
        return gm_error_set(err, GM_EINVAL,
                            "--token generate shows the token on a terminal, and stderr is not "
                            "one: give the token (--token T, or GPU_MONITOR_TOKEN from a file "
                            "only you can read)");
    if (resolve_paths(srv, err) < 0)
        return GM_EINVAL;

    /* Signals are read by the loop from a signalfd: block them here before any thread starts,
     * so every thread (sampler, session worker) inherits the mask. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);
    /* Under a file-size limit a write fails (the store keeps what it could not write and
     * retries) instead of the signal killing the daemon. */
    signal(SIGXFSZ, SIG_IGN);

    int rc = open_loop(srv, &set, err);
    if (rc == GM_OK)
        rc = open_collector(srv, err);
    if (rc == GM_OK) {
        char q[1100];
        if (gm_http_start(srv, err) < 0) {
            gm_log(GM_LOG_ERROR, "cannot listen", "error=%s", gm_log_quote(err->msg, q, sizeof q));
            rc = GM_EIO;
        } else {
            rc = start_threads(srv, err);
            if (rc == GM_OK)
                rc = announce(srv, &port_id, err);
            srv->listening = rc == GM_OK;
            if (rc == GM_OK && serve_loop(srv) < 0) {
                gm_error_set(err, GM_EIO, "the event loop failed: %s", strerror(errno));
                rc = GM_EIO;
            }
            stop_threads(srv);
        }
    }
    free_all(srv, &port_id, rc);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == GM_OK)
        gm_log(GM_LOG_INFO, "stopped", "%s", "");
    return rc;
}
