/* cmd_record.c - `gpumon record`: run a command while sampling GPUs, forward signals to it, exit
 * with its status, and keep the session (statistics, energy, timeline) in the database and an
 * optional JSON file. Also the engine behind `gpumon run`. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/audit.h"
#include "base/json.h"
#include "core/select.h"
#include "core/session.h"
#include "store/store.h"
#include "base/clock.h"

/* The engine, shared with cmd_run.c: argv as `gpumon record` takes it (argv[0] names the
 * command in messages), kind stored with the session, attach (may be NULL; stolen) merged into
 * the session document. Returns the exit status. */

/* Signals passed on to the command: the ones a person or a job scheduler sends to stop,
 * reload or poke a job. SIGKILL and SIGSTOP cannot be caught; SIGTSTP from a terminal reaches
 * the whole foreground process group anyway. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof forwarded / sizeof *forwarded)

static volatile sig_atomic_t child_pid;

/* SIGXFSZ as gpumon was started with, given back to the command. gpumon itself ignores it: a
 * file-size limit (ulimit -f) reached by a database write is then a failed write, handled like
 * a full disk, instead of a death that leaves the command unwatched. */
static struct sigaction xfsz_orig;

typedef struct record_opts {
    const char *name; /* "record" or "run", for messages */
    gm_cli_gpu_filter filter;
    bool have_filter;
    double interval_s;
    const char *output;
    const char *label;
    const char *db;
    bool no_db;
    bool quiet;
    bool snapshot;
    unsigned snapshot_window_ms;
    gm_cli_source src;
    char **command;
} record_opts;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpumon record [options] -- COMMAND [ARGS...]\n\n"
        "Runs COMMAND while sampling GPUs every interval, then prints per-GPU statistics\n"
        "(min/max/mean/p50/p95 of utilization, memory, temperature, power) and energy to\n"
        "stderr. COMMAND keeps stdin/stdout; gpumon exits with its exit status (128+N when\n"
        "signal N ended it, 127 when it cannot be run). SIGINT, SIGTERM, SIGHUP, SIGQUIT,\n"
        "SIGUSR1 and SIGUSR2 sent to gpumon are passed on to COMMAND.\n\n"
        "Options:\n"
        "  -i, --gpus LIST        GPUs to sample: indices, UUIDs or PCI bus ids, comma-separated\n"
        "                         (default: those in CUDA_VISIBLE_DEVICES, else all)\n"
        "  -n, --interval SECONDS between samples, fractions allowed (0.01-3600, default 1)\n"
        "  -o, --output FILE      also write the session as JSON, with its full timeline\n"
        "  -l, --label TEXT       a name to find the session by in gpumon history\n"
        "      --snapshot         take a system snapshot before and after; the output gets both\n"
        "                         and their diff (did the machine change during the run?)\n"
        "      --snapshot-window-ms MS  power averaging window of each snapshot (default %d)\n"
        "      --db PATH          database (default: $GPU_MONITOR_DB, else\n"
        "                         $XDG_STATE_HOME/gpumon/gpumon.db or\n"
        "                         ~/.local/state/gpumon/gpumon.db)\n"
        "      --no-db            do not store the session\n"
        "  -q, --quiet            no summary or progress on stderr\n"
        "      --provider NAME    nvml, nvidia-smi, sim or auto (default: auto)\n"
        "      --simulate N       use N simulated GPUs\n"
        "      --seed N           seed of the simulated GPUs' dynamics\n"
        "  -h, --help             show this help\n\n"
        "Samples are stored as they are taken: if gpumon is killed, `gpumon history` shows the\n"
        "session as interrupted with what it had. A database that cannot be opened is warned\n"
        "about and the command still runs. One that fails during the run (a full disk) gets\n"
        "the samples when it works again; at the end the session is stored whole, or removed,\n"
        "or gpumon says how many samples the database kept.\n\n"
        "Exit status: COMMAND's; 2 usage error; 3 no GPU found (with --gpus); 127 COMMAND cannot\n"
        "be run.\n",
        GM_AUDIT_DEFAULT_POWER_WINDOW_MS);
}

static int parse_args(int argc, char **argv, record_opts *o)
{
    enum { OPT_SNAPSHOT = 256, OPT_WINDOW, OPT_DB, OPT_NODB };
    static const struct option longopts[] = {
        {"gpus", required_argument, NULL, 'i'},
        {"id", required_argument, NULL, 'i'},
        {"interval", required_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"label", required_argument, NULL, 'l'},
        {"quiet", no_argument, NULL, 'q'},
        {"snapshot", no_argument, NULL, OPT_SNAPSHOT},
        {"snapshot-window-ms", required_argument, NULL, OPT_WINDOW},
        {"db", required_argument, NULL, OPT_DB},
        {"no-db", no_argument, NULL, OPT_NODB},
        GM_CLI_SOURCE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = o->name;
    unsigned long long v;
    int c;
    optind = 1;
    opterr = 0;
    /* '+': stop at the first non-option, so COMMAND's own flags are never ours. */
    while ((c = getopt_long(argc, argv, "+:i:n:o:l:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (!gm_cli_parse_gpu_filter(cmd, optarg, &o->filter))
                return GM_EXIT_USAGE;
            o->have_filter = true;
            break;
        case 'n':
            if (!gm_cli_parse_duration(cmd, "--interval", optarg, 0.01, 3600, &o->interval_s))
                return GM_EXIT_USAGE;
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'l':
            o->label = optarg;
            break;
        case 'q':
            o->quiet = true;
            break;
        case OPT_SNAPSHOT:
            o->snapshot = true;
            break;
        case OPT_WINDOW:
            if (!gm_cli_parse_uint(cmd, "--snapshot-window-ms", optarg, 0, 60000, &v))
                return GM_EXIT_USAGE;
            o->snapshot_window_ms = (unsigned)v;
            break;
        case OPT_DB:
            o->db = optarg;
            break;
        case OPT_NODB:
            o->no_db = true;
            break;
        case 'h':
            usage(stdout);
            return GM_EXIT_OK;
        default:
            if (!gm_cli_default_option(cmd, c, argv, &o->src))
                return GM_EXIT_USAGE;
            break;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "gpumon %s: no command to run (usage: gpumon %s [options] -- COMMAND)\n",
                cmd, cmd);
        return GM_EXIT_USAGE;
    }
    o->command = argv + optind;
    return -1;
}

static void on_forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int saved = errno;
    pid_t pid = (pid_t)child_pid;
    /* A signal the terminal generated (Ctrl-C, Ctrl-\, hangup) reached the command too, since it
     * shares our process group: the kernel marks those SI_KERNEL. Passing them on would
     * deliver them twice. */
    if (pid > 0 && !(si && si->si_code == SI_KERNEL))
        kill(pid, sig);
    errno = saved;
}

static void on_child(int sig)
{
    (void)sig; /* only here so that ppoll() wakes up */
}

/* The session's copy in the database. Storage is best effort and never stops the command:
 * while the database fails (a full disk) the samples stay in memory, as the whole session
 * does, and are written when it works again; at the end the copy is whole, or removed, or
 * said to be partial. */
typedef struct rec_store {
    gm_store *st;        /* NULL: not stored (no database, or it could not be opened) */
    bool begun;          /* the session's row is written */
    size_t stored;       /* samples written: 0 .. stored - 1 */
    bool failing;        /* the latest write failed */
    double retry_at;     /* when failing: next try (monotonic seconds) */
    double backoff;      /* seconds */
    gm_error last_error; /* why the latest write failed */
} rec_store;

#define STORE_RETRY_MAX_S 60.0

/* Writes what the database lacks of s: its row (with the samples so far) on the first call,
 * then the samples since, and with final its end. Tries again only when due, unless final.
 * Returns true when the database is caught up. */
static bool store_sync(const record_opts *o, rec_store *rs, gm_session *s, double now, bool final)
{
    if (!rs->st)
        return false;
    if (rs->failing && !final && now < rs->retry_at)
        return false;
    gm_error err = {0};
    int rc = GM_OK;
    size_t total = gm_session_sample_count(s);
    if (!rs->begun) {
        rc = gm_store_session_begin(rs->st, s, &err);
        if (rc == GM_OK || rc == GM_EEXIST) {
            rs->begun = true;
            /* No sample limit here: the timeline holds every sample. EEXIST: a begin reported
             * failed did land, so its samples are found stored one by one below. */
            rs->stored = rc == GM_OK ? total : 0;
            rc = GM_OK;
        }
    }
    while (rc == GM_OK && rs->stored < total) {
        rc = gm_store_session_sample(rs->st, s, rs->stored, &err);
        if (rc == GM_EEXIST) /* a commit reported failed that did land */
            rc = GM_OK;
        if (rc == GM_OK)
            rs->stored++;
    }
    if (rc == GM_OK && final)
        rc = gm_store_session_end(rs->st, s, &err);
    if (rc == GM_OK) {
        rs->failing = false;
        return true;
    }
    if (!rs->failing && !final)
        fprintf(stderr,
                "gpumon %s: warning: %s; samples are kept and written when the database can "
                "take them\n",
                o->name, err.msg);
    rs->backoff = rs->failing ? fmin(rs->backoff * 2, STORE_RETRY_MAX_S) : fmax(o->interval_s, 1);
    rs->retry_at = now + rs->backoff;
    rs->failing = true;
    rs->last_error = err;
    return false;
}

/* After a final store_sync that failed: removes the partial copy, so that the database does
 * not keep a run cut short that would read as interrupted, and says what it holds. */
static void store_give_up(const record_opts *o, rec_store *rs, const gm_session *s)
{
    gm_error err = {0};
    if (!rs->begun || gm_store_session_delete(rs->st, gm_session_id(s), &err) == GM_OK) {
        fprintf(stderr, "gpumon %s: warning: %s; the session is not stored\n", o->name,
                rs->last_error.msg);
        return;
    }
    fprintf(stderr,
            "gpumon %s: warning: %s; the session is not stored whole: the database keeps %s "
            "with %zu of %zu samples, which gpumon history shows as interrupted\n",
            o->name, rs->last_error.msg, gm_session_id(s), rs->stored, gm_session_sample_count(s));
}

static gm_store *open_store(const record_opts *o)
{
    if (o->no_db)
        return NULL;
    char path[4096];
    gm_error err = {0};
    gm_store *st = NULL;
    if (o->db)
        snprintf(path, sizeof path, "%s", o->db);
    else if (gm_store_default_path(path, sizeof path, &err) < 0) {
        fprintf(stderr, "gpumon %s: warning: %s; the session is not stored\n", o->name, err.msg);
        return NULL;
    }
    if (gm_store_open(path, &st, &err) < 0) {
        fprintf(stderr, "gpumon %s: warning: %s; the session is not stored\n", o->name, err.msg);
        return NULL;
    }
    return st;
}

/* The driver indices to follow: --gpus, else CUDA_VISIBLE_DEVICES, else every GPU. Returns -1
 * with *all set when every GPU is wanted, else how many indices were written; GM_EXIT_USAGE
 * style failures print and return -2. */
static int resolve_gpus(const record_opts *o, const gm_snapshot *s, unsigned *out, bool *all)
{
    *all = false;
    int n = 0;
    if (o->have_filter) {
        size_t k;
        return gm_cli_gpu_filter_resolve(o->name, &o->filter, s, out, &k) ? (int)k : -2;
    }
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (cvd) {
        /* What the command itself can see, read the way the CUDA runtime reads it. */
        bool visible[GM_MAX_GPUS] = {0};
        gm_select_visible(cvd, s, visible);
        for (unsigned i = 0; i < s->gpu_count; i++)
            if (visible[i])
                out[n++] = s->gpus[i].index;
        return n;
    }
    *all = true;
    return -1;
}

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 80;
}

/* One line, rewritten in place on a terminal: elapsed time, samples, and each GPU now. */
static void progress(const gm_session *s)
{
    char line[512];
    int used = snprintf(line, sizeof line, "gpumon: %.1f s, %zu samples", gm_session_duration(s),
                        gm_session_sample_count(s));
    double t;
    const double *v;
    size_t n = gm_session_sample_count(s);
    if (n && gm_session_sample(s, n - 1, &t, &v) == GM_OK && v) {
        for (size_t k = 0; k < gm_session_gpu_count(s) && used < (int)sizeof line; k++) {
            const double *g = v + k * GM_SM__COUNT;
            used += snprintf(line + used, sizeof line - (size_t)used, " | GPU%u",
                             gm_session_gpu_at(s, k)->index);
            if (isfinite(g[GM_SM_UTIL]) && used < (int)sizeof line)
                used += snprintf(line + used, sizeof line - (size_t)used, " %.0f%%", g[GM_SM_UTIL]);
            if (isfinite(g[GM_SM_MEM_USED_MB]) && used < (int)sizeof line)
                used += snprintf(line + used, sizeof line - (size_t)used, " %.0fMiB",
                                 g[GM_SM_MEM_USED_MB]);
            if (isfinite(g[GM_SM_POWER_W]) && used < (int)sizeof line)
                used +=
                    snprintf(line + used, sizeof line - (size_t)used, " %.0fW", g[GM_SM_POWER_W]);
        }
    }
    int width = term_width() - 1;
    fprintf(stderr, "\r\033[K%.*s", width, line);
    fflush(stderr);
}

static json_t *take_audit(const record_opts *o, gm_collector *c, const char *when)
{
    gm_audit_options ao;
    gm_audit_options_init(&ao);
    ao.power_window_ms = o->snapshot_window_ms;
    json_t *doc = NULL;
    gm_error err = {0};
    if (gm_audit_take(c, &ao, &doc, &err) < 0) {
        fprintf(stderr, "gpumon %s: warning: snapshot %s the command failed: %s\n", o->name, when,
                err.msg);
        return NULL;
    }
    return doc;
}

static int write_output(const record_opts *o, json_t *doc)
{
    if (!o->output)
        return 0;
    FILE *f = fopen(o->output, "w");
    if (!f) {
        fprintf(stderr, "gpumon %s: cannot write %s: %s\n", o->name, o->output, strerror(errno));
        return -1;
    }
    int rc = gm_cli_write_json(f, doc, true);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "gpumon %s: cannot write %s: %s\n", o->name, o->output, strerror(errno));
        return -1;
    }
    return 0;
}

/* Forks and execs the command with default signal handling. Returns the child's pid, or -1 when
 * it could not be started (*exec_errno says why). Signals in `block` stay blocked here. */
static pid_t start_child(char **command, const sigset_t *orig, int *exec_errno)
{
    int fds[2];
    *exec_errno = 0;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        *exec_errno = errno;
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *exec_errno = errno;
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        /* Default dispositions before unblocking, so that a signal arriving before exec acts on
         * the child itself instead of our forwarding handler. */
        for (size_t i = 0; i < N_FORWARDED; i++)
            signal(forwarded[i], SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigaction(SIGXFSZ, &xfsz_orig, NULL);
        sigprocmask(SIG_SETMASK, orig, NULL);
        close(fds[0]);
        execvp(command[0], command);
        int e = errno;
        ssize_t wr = write(fds[1], &e, sizeof e);
        (void)wr;
        _exit(127);
    }
    child_pid = pid;
    close(fds[1]);
    /* The pipe closes on a successful exec (O_CLOEXEC) with nothing written. */
    int e = 0;
    ssize_t r;
    do
        r = read(fds[0], &e, sizeof e);
    while (r < 0 && errno == EINTR);
    close(fds[0]);
    if (r == (ssize_t)sizeof e) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        child_pid = 0;
        *exec_errno = e;
        return -1;
    }
    return pid;
}

static int exit_status(int status, int *sig)
{
    *sig = 0;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        *sig = WTERMSIG(status);
        return 128 + *sig;
    }
    return GM_EXIT_FAILURE;
}

/* Samples once into the session; a failed sample is skipped with one warning. */
static void sample_once(const record_opts *o, gm_collector *c, gm_snapshot *snap, gm_session *s,
                        bool *warned)
{
    gm_error err = {0};
    if (!c)
        return;
    if (gm_collector_sample(c, snap, &err) < 0) {
        if (!*warned)
            fprintf(stderr, "gpumon %s: warning: sampling failed: %s\n", o->name, err.msg);
        *warned = true;
        return;
    }
    if (gm_session_add(s, snap, &err) < 0) {
        if (!*warned)
            fprintf(stderr, "gpumon %s: warning: %s\n", o->name, err.msg);
        *warned = true;
    }
}

int gm_cli_record_main(int argc, char **argv, const char *kind, json_t *attach)
{
    record_opts o = {
        .name = argv[0], .interval_s = 1.0, .snapshot_window_ms = GM_AUDIT_DEFAULT_POWER_WINDOW_MS};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) {
        json_decref(attach);
        return rc;
    }

    gm_collector_options copt;
    gm_collector *c = NULL;
    gm_snapshot *snap = NULL;
    gm_session *s = NULL;
    rec_store rs = {0};
    bool xfsz_ignored = false;
    json_t *audit_before = NULL;
    gm_error err = {0};
    if (!gm_cli_collector_options(o.name, &o.src, &copt)) {
        rc = GM_EXIT_USAGE;
        goto out;
    }
    copt.no_processes = !o.snapshot; /* statistics need no process list; snapshots show it */
    copt.no_host = !o.snapshot;
    copt.slow_period_ms = -1; /* energy read at every sample: the total must be exact */
    if (!(c = gm_cli_collector_open(o.name, &copt, &rc)))
        goto out;
    if (!(snap = gm_snapshot_new())) {
        fprintf(stderr, "gpumon %s: out of memory\n", o.name);
        rc = GM_EXIT_FAILURE;
        goto out;
    }
    bool have_gpus = strcmp(gm_collector_provider(c), "none") != 0 &&
                     gm_collector_sample(c, snap, &err) == GM_OK;
    if (!have_gpus) {
        if (o.have_filter) {
            fprintf(stderr, "gpumon %s: no GPU found: %s\n", o.name,
                    err.msg[0] ? err.msg : gm_collector_diagnosis(c));
            rc = GM_EXIT_NO_GPU;
            goto out;
        }
        fprintf(stderr, "gpumon %s: warning: no GPU found; recording the command's duration only\n",
                o.name);
        gm_collector_close(c);
        c = NULL;
        gm_snapshot_reset(snap);
    }
    unsigned idx[GM_MAX_GPUS];
    bool all;
    int n = resolve_gpus(&o, snap, idx, &all);
    if (n == -2) {
        rc = GM_EXIT_USAGE;
        goto out;
    }

    rs.st = open_store(&o);
    if (o.snapshot && c)
        audit_before = take_audit(&o, c, "before");

    if (gm_session_new(o.label, all ? NULL : idx, all ? 0 : (size_t)n, o.interval_s, &s, &err) <
            0 ||
        gm_session_set_kind(s, kind) < 0 ||
        gm_session_set_command(s, (const char *const *)o.command) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o.name, err.msg[0] ? err.msg : "out of memory");
        rc = GM_EXIT_FAILURE;
        goto out;
    }
    if (c) {
        gm_session_attach(s, "provider", json_string(gm_collector_provider(c)));
        if (snap->driver_version[0])
            gm_session_attach(s, "driver_version", json_string(snap->driver_version));
    }
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0 && host[0])
        gm_session_attach(s, "hostname", json_string(host));
    if (attach) {
        const char *key;
        json_t *val;
        json_object_foreach(attach, key, val) gm_session_attach(s, key, json_incref(val));
    }

    /* Forwarding handlers go in before the fork with the signals blocked, so one that arrives
     * while the child starts is delivered (and forwarded) as soon as its pid is known. */
    sigset_t block, orig, waitmask;
    sigemptyset(&block);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&block, forwarded[i]);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &orig);
    struct sigaction fwd = {.sa_sigaction = on_forward, .sa_flags = SA_SIGINFO};
    struct sigaction chld = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
    struct sigaction old[N_FORWARDED], old_chld;
    sigemptyset(&fwd.sa_mask);
    sigemptyset(&chld.sa_mask);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &fwd, &old[i]);
    sigaction(SIGCHLD, &chld, &old_chld);
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGXFSZ, &ignore, &xfsz_orig);
    xfsz_ignored = true; /* until the database is closed: closing writes too */

    bool warned = false;
    sample_once(&o, c, snap, s, &warned); /* the state as the command starts */
    int exec_errno;
    pid_t pid = start_child(o.command, &orig, &exec_errno);
    if (pid < 0) {
        fprintf(stderr, "gpumon %s: cannot run \"%s\": %s\n", o.name, o.command[0],
                strerror(exec_errno));
        rc = 127;
        goto restore;
    }
    /* Unblock the forwarded signals; SIGCHLD stays blocked outside ppoll so that an exit
     * between the waitpid check and the sleep still wakes the sleep. */
    sigset_t fwd_only;
    sigemptyset(&fwd_only);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&fwd_only, forwarded[i]);
    sigprocmask(SIG_UNBLOCK, &fwd_only, NULL);
    sigprocmask(SIG_SETMASK, NULL, &waitmask);
    sigdelset(&waitmask, SIGCHLD);

    store_sync(&o, &rs, s, gm_clock_mono_s(), false); /* the row, with sample 0, once it runs */
    bool tty = !o.quiet && isatty(STDERR_FILENO);
    if (tty)
        progress(s);

    int status = 0;
    double next = gm_clock_mono_s() + o.interval_s;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            break;
        double now = gm_clock_mono_s();
        if (now >= next) {
            sample_once(&o, c, snap, s, &warned);
            store_sync(&o, &rs, s, gm_clock_mono_s(), false);
            if (tty)
                progress(s);
            next += o.interval_s;
            /* Sampling slower than the interval: skip the missed ticks rather than burst. */
            if (next <= gm_clock_mono_s())
                next = gm_clock_mono_s() + o.interval_s;
            continue;
        }
        double left = next - now;
        struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
        ppoll(NULL, 0, &ts, &waitmask);
    }
    child_pid = 0;
    sample_once(&o, c, snap, s, &warned); /* the state as the command ended */
    gm_session_finish(s);
    int sig;
    rc = exit_status(status, &sig);
    gm_session_set_exit(s, rc, sig);
    if (tty)
        fprintf(stderr, "\r\033[K");

    gm_audit_verdict verdict = {0};
    bool have_verdict = false;
    if (audit_before) {
        json_t *after = take_audit(&o, c, "after");
        if (after && gm_audit_diff(audit_before, after, NULL, &verdict, &err) == GM_OK) {
            have_verdict = true;
            gm_session_attach(s, "audit",
                              json_pack("{s:O, s:O, s:O}", "before", audit_before, "after", after,
                                        "diff", verdict.report));
        } else if (after) {
            fprintf(stderr, "gpumon %s: warning: cannot compare snapshots: %s\n", o.name, err.msg);
        }
        json_decref(after);
    }

    bool stored = store_sync(&o, &rs, s, gm_clock_mono_s(), true);
    if (rs.st && !stored)
        store_give_up(&o, &rs, s);
    json_t *doc = gm_session_to_json(s, true);
    if (!doc)
        fprintf(stderr, "gpumon %s: out of memory rendering the session\n", o.name);
    else
        write_output(&o, doc);
    if (!o.quiet && doc) {
        gm_session_print_summary(stderr, doc);
        if (have_verdict)
            fprintf(stderr, "system snapshot: %s (%u changed, %u warnings, %u notes)\n",
                    verdict.changed ? "CHANGED" : "UNCHANGED", verdict.changes, verdict.warnings,
                    verdict.notes);
        if (stored)
            fprintf(stderr, "stored as %s (gpumon history show %s)\n", gm_session_id(s),
                    gm_session_id(s));
        if (o.output)
            fprintf(stderr, "written to %s\n", o.output);
    }
    json_decref(doc);
    gm_audit_verdict_free(&verdict);

restore:
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded[i], &old[i], NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
    sigprocmask(SIG_SETMASK, &orig, NULL);
out:
    json_decref(attach);
    json_decref(audit_before);
    gm_session_free(s);
    gm_store_close(rs.st);
    if (xfsz_ignored)
        sigaction(SIGXFSZ, &xfsz_orig, NULL);
    gm_snapshot_free(snap);
    gm_collector_close(c);
    return rc;
}

int gm_cli_record(int argc, char **argv)
{
    return gm_cli_record_main(argc, argv, "record", NULL);
}
