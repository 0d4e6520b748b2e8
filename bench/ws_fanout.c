/* ws_fanout.c - benchmark client: opens N WebSocket connections to a gpumon daemon, counts the
 * frames each one receives during a measurement window, and reads the daemon's CPU time from
 * /proc over the same window. Raw sockets + epoll, so that one client process can keep up with
 * 1000 connections at 5 Hz without stealing much of the 2-core machine from the server.
 *
 * Build: cc -O2 -o ws_fanout ws_fanout.c   (bench/ws-fanout.sh does it)
 * Usage: ws_fanout -p PORT [-h 127.0.0.1] [-P /ws/gpu] [-n 1000] [-d 60] [-w 3] [-r 5] [-s PID]
 *                  [-t FILE]
 *   -n clients, -d window seconds, -w warm-up seconds after the last connect, -r expected frames
 *   per second, -s server pid (CPU read from /proc/PID/stat at window start and end), -t a
 *   cadence log: one line per frame the first client receives inside the window, "RECV_MS SEQ
 *   TIMESTAMP_MS" (its arrival on CLOCK_REALTIME, the frame's "seq" and "timestamp_ms").
 *   SIGUSR1 ends the window early (the figures are then per the window's actual length).
 * Prints one JSON object on stdout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SEQ_BITS 16384

enum { ST_CONNECTING, ST_HANDSHAKE, ST_OPEN, ST_REFUSED, ST_CLOSED };

typedef struct client {
    int fd;
    int state;
    char hs[4096]; /* handshake response so far */
    size_t hs_len;
    /* frame parser */
    unsigned char hdr[14];
    size_t hdr_len, hdr_need;
    uint64_t payload_left;
    int opcode;
    char head[128]; /* first bytes of the current text payload: "seq" is near the start */
    size_t head_len;
    unsigned char ctrl[125]; /* payload of a control frame (ping) */
    size_t ctrl_len;
    /* counts */
    uint64_t frames_total, frames_window;
    unsigned char got[SEQ_BITS / 8]; /* bit i: the sample with seq base_seq + i arrived */
    int status;                      /* HTTP status of the upgrade answer */
} client;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime+stime of a process in clock ticks, or -1. */
static long long proc_ticks(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* fields after the command: state(3) ... utime(14) stime(15) */
    unsigned long long ut = 0, st = 0;
    int field = 2;
    for (char *t = strtok(p + 1, " "); t; t = strtok(NULL, " ")) {
        field++;
        if (field == 14)
            ut = strtoull(t, NULL, 10);
        else if (field == 15) {
            st = strtoull(t, NULL, 10);
            break;
        }
    }
    return (long long)(ut + st);
}

/* Sum of the scheduler's run time (ns) of every thread of pid, or -1. Finer than the clock
 * ticks of /proc/PID/stat (10 ms each). */
static long long proc_sched_ns(int pid)
{
    char path[300], buf[256];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long long ns = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/schedstat", pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(buf, sizeof buf, f))
            ns += strtoll(buf, NULL, 10);
        fclose(f);
    }
    closedir(d);
    return ns;
}

static long long proc_rss_kib(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtoll(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Answers a ping with a masked pong carrying the same payload (clients must mask). */
static void send_pong(client *c)
{
    unsigned char f[2 + 4 + 125];
    f[0] = 0x8A;
    f[1] = 0x80 | (unsigned char)c->ctrl_len;
    memset(f + 2, 0, 4); /* zero mask: payload unchanged */
    memcpy(f + 6, c->ctrl, c->ctrl_len);
    send_all(c->fd, f, 6 + c->ctrl_len);
}

static int in_window;           /* 1 while frames count towards the window */
static int recording;           /* 1 from the window start until the grace period ends */
static long long base_seq = -1; /* first sample published after the window started */
static long long max_seq = -1;  /* newest seq any client has received */
static FILE *cadence;           /* -t: the first client's frames, with arrival times */
static client *cadence_client;
static volatile sig_atomic_t end_window; /* SIGUSR1: the watched run is over */

static void on_usr1(int sig)
{
    (void)sig;
    end_window = 1;
}

static void frame_done(client *c)
{
    if (c->opcode == 0x9) {
        send_pong(c);
        return;
    }
    if (c->opcode != 0x1 && c->opcode != 0x0)
        return;
    if (!(c->hdr[0] & 0x80))
        return; /* a fragment: the message counts when its last fragment (FIN) arrives */
    c->frames_total++;
    if (in_window)
        c->frames_window++;
    long long seq = -1;
    c->head[c->head_len < sizeof c->head ? c->head_len : sizeof c->head - 1] = '\0';
    char *s = strstr(c->head, "\"seq\":");
    if (s)
        seq = strtoll(s + 6, NULL, 10);
    if (seq > max_seq && (in_window || !recording))
        max_seq = seq;
    if (recording && seq >= base_seq && seq - base_seq < SEQ_BITS)
        c->got[(seq - base_seq) / 8] |= (unsigned char)(1u << ((seq - base_seq) % 8));
    if (cadence && c == cadence_client && in_window) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        char *t = strstr(c->head, "\"timestamp_ms\":");
        fprintf(cadence, "%.3f %lld %s\n", (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6, seq,
                t ? strtok(t + 15, ",}") : "-");
        fflush(cadence); /* readable while the run goes on, and complete if killed */
    }
}

/* Feeds received bytes through the frame parser. */
static void parse(client *c, const unsigned char *p, size_t n)
{
    while (n) {
        if (c->payload_left == 0 && c->hdr_need == 0) {
            c->hdr_len = 0;
            c->hdr_need = 2;
        }
        if (c->hdr_need) {
            while (n && c->hdr_len < c->hdr_need) {
                c->hdr[c->hdr_len++] = *p++;
                n--;
                if (c->hdr_len == 2) {
                    unsigned l7 = c->hdr[1] & 0x7f;
                    c->hdr_need = 2 +
                                  (l7 == 126   ? 2
                                   : l7 == 127 ? 8
                                               : 0) +
                                  ((c->hdr[1] & 0x80) ? 4 : 0);
                }
            }
            if (c->hdr_len < c->hdr_need)
                return;
            unsigned l7 = c->hdr[1] & 0x7f;
            uint64_t len = l7;
            if (l7 == 126)
                len = ((uint64_t)c->hdr[2] << 8) | c->hdr[3];
            else if (l7 == 127) {
                len = 0;
                for (int i = 0; i < 8; i++)
                    len = (len << 8) | c->hdr[2 + i];
            }
            c->opcode = c->hdr[0] & 0x0f;
            c->payload_left = len;
            c->hdr_need = 0;
            if (c->opcode == 0x1) /* a new text message; continuations keep its first bytes */
                c->head_len = 0;
            c->ctrl_len = 0;
            if (len == 0) {
                frame_done(c);
                continue;
            }
        }
        size_t take = n < c->payload_left ? n : (size_t)c->payload_left;
        if ((c->opcode == 0x1 || c->opcode == 0x0) && c->head_len < sizeof c->head - 1) {
            size_t k = sizeof c->head - 1 - c->head_len;
            if (k > take)
                k = take;
            memcpy(c->head + c->head_len, p, k);
            c->head_len += k;
        }
        if (c->opcode == 0x9 && c->ctrl_len + take <= sizeof c->ctrl) {
            memcpy(c->ctrl + c->ctrl_len, p, take);
            c->ctrl_len += take;
        }
        p += take;
        n -= take;
        c->payload_left -= take;
        if (c->payload_left == 0)
            frame_done(c);
    }
}

static int open_client(client *c, struct sockaddr_in *sa, int ep)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0)
        return -1;
    int r = connect(c->fd, (struct sockaddr *)sa, sizeof *sa);
    if (r < 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    c->state = ST_CONNECTING;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void on_event(client *c, uint32_t events, int ep, const char *req, size_t req_len)
{
    if (c->state == ST_CONNECTING && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err || send_all(c->fd, req, req_len) < 0) {
            c->state = ST_CLOSED;
            epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
            c->fd = -1;
            return;
        }
        c->state = ST_HANDSHAKE;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    unsigned char buf[65536];
    for (;;) {
        ssize_t r = recv(c->fd, buf, sizeof buf, 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            if (c->state != ST_REFUSED)
                c->state = ST_CLOSED;
            epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
            c->fd = -1;
            return;
        }
        size_t off = 0;
        if (c->state == ST_HANDSHAKE) {
            size_t k = (size_t)r;
            if (k > sizeof c->hs - 1 - c->hs_len)
                k = sizeof c->hs - 1 - c->hs_len;
            memcpy(c->hs + c->hs_len, buf, k);
            size_t before = c->hs_len;
            c->hs_len += k;
            c->hs[c->hs_len] = '\0';
            char *end = strstr(c->hs, "\r\n\r\n");
            if (!end)
                continue;
            c->status = atoi(c->hs + 9);
            if (c->status != 101) {
                c->state = ST_REFUSED;
                continue; /* read until the server closes */
            }
            c->state = ST_OPEN;
            off = (size_t)(end + 4 - c->hs) - before;
        }
        if (c->state == ST_OPEN && (size_t)r > off)
            parse(c, buf + off, (size_t)r - off);
    }
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *path = "/ws/gpu";
    int port = 0, n = 1000, pid = 0;
    const char *cadence_path = NULL;
    double dur = 60, warm = 3, rate = 5;
    int opt;
    while ((opt = getopt(argc, argv, "h:p:P:n:d:w:r:s:t:")) != -1) {
        switch (opt) {
        case 'h':
            host = optarg;
            break;
        case 'p':
            port = atoi(optarg);
            break;
        case 'P':
            path = optarg;
            break;
        case 'n':
            n = atoi(optarg);
            break;
        case 'd':
            dur = atof(optarg);
            break;
        case 'w':
            warm = atof(optarg);
            break;
        case 'r':
            rate = atof(optarg);
            break;
        case 's':
            pid = atoi(optarg);
            break;
        case 't':
            cadence_path = optarg;
            break;
        default:
            fprintf(stderr,
                    "usage: %s -p PORT [-h HOST] [-P PATH] [-n N] [-d S] [-w S] [-r HZ] "
                    "[-s PID] [-t FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!port || n < 1) {
        fprintf(stderr, "ws_fanout: -p PORT and -n >= 1 needed\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    char req[512];
    int req_len = snprintf(req, sizeof req,
                           "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n",
                           path, host, port);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    int ep = epoll_create1(0);
    client *cs = calloc((size_t)n, sizeof *cs);
    struct epoll_event evs[256];

    /* Connect in batches of 50, servicing the loop in between, so the listen backlog is never
     * the limit being measured. */
    double t_conn0 = now_s();
    int opened = 0;
    while (opened < n) {
        for (int k = 0; k < 50 && opened < n; k++, opened++)
            if (open_client(&cs[opened], &sa, ep) < 0)
                cs[opened].state = ST_CLOSED;
        double until = now_s() + 0.02;
        while (now_s() < until) {
            int m = epoll_wait(ep, evs, 256, 5);
            for (int i = 0; i < m; i++)
                on_event(evs[i].data.ptr, evs[i].events, ep, req, (size_t)req_len);
        }
    }
    /* Wait until every handshake is answered (or 10 s). */
    double deadline = now_s() + 10;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < n; i++)
            pending += cs[i].state == ST_CONNECTING || cs[i].state == ST_HANDSHAKE;
        if (!pending || now_s() > deadline)
            break;
        int m = epoll_wait(ep, evs, 256, 10);
        for (int i = 0; i < m; i++)
            on_event(evs[i].data.ptr, evs[i].events, ep, req, (size_t)req_len);
    }
    double t_connected = now_s();
    for (int i = 0; cadence_path && i < n; i++)
        if (cs[i].state == ST_OPEN) {
            cadence_client = &cs[i];
            break;
        }
    if (cadence_path && !(cadence = fopen(cadence_path, "w"))) {
        perror(cadence_path);
        return 1;
    }

    struct sigaction sa_usr1 = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa_usr1, NULL);
    /* Warm-up, then the window. */
    double t0 = t_connected + warm, t1 = t0 + dur;
    long long srv_t0 = -1, srv_t1 = -1, srv_ns0 = -1, srv_ns1 = -1, rss0 = -1, rss1 = -1;
    struct rusage ru0, ru1;
    long long last_seq = -1; /* newest sample published before the window ended */
    int phase = 0;
    for (;;) {
        double t = now_s();
        if (phase == 0 && t >= t0) {
            phase = 1;
            in_window = 1;
            recording = 1;
            base_seq = max_seq + 1;
            if (pid) {
                srv_t0 = proc_ticks(pid);
                srv_ns0 = proc_sched_ns(pid);
                rss0 = proc_rss_kib(pid);
            }
            getrusage(RUSAGE_SELF, &ru0);
        } else if (phase == 1 && (t >= t1 || end_window)) {
            if (t < t1) { /* ended early: the window is what it was */
                t1 = t;
                dur = t1 - t0;
            }
            phase = 2;
            in_window = 0;
            last_seq = max_seq;
            if (pid) {
                srv_t1 = proc_ticks(pid);
                srv_ns1 = proc_sched_ns(pid);
                rss1 = proc_rss_kib(pid);
            }
            getrusage(RUSAGE_SELF, &ru1);
        } else if (phase == 2 && t >= t1 + 2.0) {
            break; /* grace: frames of samples published inside the window still arriving */
        }
        double next = phase == 0 ? t0 : phase == 1 ? t1 : t1 + 2.0;
        int ms = (int)((next - t) * 1000) + 1;
        if (ms > 50)
            ms = 50;
        int m = epoll_wait(ep, evs, 256, ms);
        for (int i = 0; i < m; i++)
            on_event(evs[i].data.ptr, evs[i].events, ep, req, (size_t)req_len);
    }

    /* Results. Delivery per client: of the samples published inside the window (seq base_seq ..
     * last_seq, read from the frames), how many reached this client; and, as a cross-check, the
     * frames received inside the window against duration x rate. */
    int open_n = 0, refused = 0, closed = 0, status503 = 0, accepted = 0;
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        client *c = &cs[i];
        if (c->state == ST_REFUSED) {
            refused++;
            status503 += c->status == 503;
        } else if (c->state == ST_CLOSED)
            closed++;
        if (c->status == 101) {
            accepted++;
            open_n += c->state == ST_OPEN;
            total += c->frames_window;
        }
    }
    double *pct_dur = calloc((size_t)(accepted ? accepted : 1), sizeof(double));
    double *pct_seq = calloc((size_t)(accepted ? accepted : 1), sizeof(double));
    double expected_dur = dur * rate;
    long long span = base_seq >= 0 && last_seq >= base_seq ? last_seq - base_seq + 1 : 0;
    if (span > SEQ_BITS)
        span = SEQ_BITS;
    double expected_seq = (double)span;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (cs[i].status != 101)
            continue;
        long long got = 0;
        for (long long q = 0; q < span; q++)
            got += (cs[i].got[q / 8] >> (q % 8)) & 1;
        pct_dur[k] = 100.0 * (double)cs[i].frames_window / expected_dur;
        pct_seq[k] = span ? 100.0 * (double)got / expected_seq : 0;
        k++;
    }
    qsort(pct_dur, (size_t)k, sizeof(double), cmp_double);
    qsort(pct_seq, (size_t)k, sizeof(double), cmp_double);
    int below98 = 0;
    for (int i = 0; i < k; i++)
        below98 += (span ? pct_seq[i] : pct_dur[i]) < 98.0;
    double cli_cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                     (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                     (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                     (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    long hz = sysconf(_SC_CLK_TCK);
    double srv_cpu_ticks = srv_t0 >= 0 && srv_t1 >= 0 ? (double)(srv_t1 - srv_t0) / (double)hz : -1;
    double srv_cpu_ns = srv_ns0 >= 0 && srv_ns1 >= 0 ? (double)(srv_ns1 - srv_ns0) / 1e9 : -1;
    printf("{\"path\":\"%s\",\"clients_requested\":%d,\"accepted\":%d,\"refused\":%d,"
           "\"refused_503\":%d,\"closed_early\":%d,\"open_at_end\":%d,"
           "\"connect_s\":%.2f,\"window_s\":%.1f,\"expected_frames_by_duration\":%.0f,"
           "\"samples_in_window_by_seq\":%.0f,\"frames_total\":%llu,"
           "\"per_client_pct_by_seq\":{\"min\":%.2f,\"median\":%.2f,\"max\":%.2f},"
           "\"per_client_pct_by_duration\":{\"min\":%.2f,\"median\":%.2f,\"max\":%.2f},"
           "\"clients_below_98pct\":%d,"
           "\"server_cpu_pct_of_core\":%.2f,\"server_cpu_pct_of_core_schedstat\":%.2f,"
           "\"server_rss_kib\":[%lld,%lld],\"client_cpu_pct_of_core\":%.2f}\n",
           path, n, accepted, refused, status503, closed, open_n, t_connected - t_conn0, dur,
           expected_dur, expected_seq, (unsigned long long)total, k ? pct_seq[0] : 0,
           k ? pct_seq[k / 2] : 0, k ? pct_seq[k - 1] : 0, k ? pct_dur[0] : 0,
           k ? pct_dur[k / 2] : 0, k ? pct_dur[k - 1] : 0, below98,
           srv_cpu_ticks >= 0 ? 100.0 * srv_cpu_ticks / dur : -1,
           srv_cpu_ns >= 0 ? 100.0 * srv_cpu_ns / dur : -1, rss0, rss1, 100.0 * cli_cpu / dur);
    if (cadence)
        fclose(cadence);
    for (int i = 0; i < n; i++)
        if (cs[i].fd > 2)
            close(cs[i].fd);
    free(cs);
    free(pct_dur);
    free(pct_seq);
    return 0;
}
