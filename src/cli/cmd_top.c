/* cmd_top.c - `gpumon top`: a live terminal view of the GPUs, their history and their processes,
 * read here or from a daemon (--connect); the keys select, sort and kill (SIGTERM, after a
 * question, one's own processes only unless root). Data: top_source.c; screen: top_view.c. */
#include <errno.h>
#include <math.h>
#include <ncurses.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/remote.h"
#include "cli/term.h"
#include "cli/top_source.h"
#include "cli/top_view.h"
#include "collect/host.h"
#include "base/error.h"

typedef struct top_opts {
    const char *connect;
    const char *token;
    double interval_s;
    double timeout_s;
    gm_color_mode color;
    gm_top_sort sort;
    gm_cli_gpu_filter filter;
    gm_cli_source src;
} top_opts;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int set_sort(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row;
    top_opts *o = base;
    if (strcmp(arg, "mem") == 0 || strcmp(arg, "memory") == 0)
        o->sort = GM_TOP_SORT_GPU_MEM;
    else if (strcmp(arg, "cpu") == 0)
        o->sort = GM_TOP_SORT_CPU;
    else if (strcmp(arg, "pid") == 0)
        o->sort = GM_TOP_SORT_PID;
    else if (strcmp(arg, "sm") == 0)
        o->sort = GM_TOP_SORT_SM;
    else
        return gm_error_set(err, GM_EINVAL, "invalid --sort \"%s\" (expected mem, cpu, pid or sm)",
                            arg);
    return GM_OK;
}

static const gm_opt top_table[] = {
    GM_CLI_OPT_ID(top_opts, filter, .help = GM_CLI_ID_HELP),
    {.type = GM_OPT_STRING,
     .name = "connect",
     .arg = "URL",
     GM_OPT_AT(top_opts, connect),
     .help = "Watch the daemon at URL (gpumon serve, e.g. http://127.0.0.1:9401) through its "
             "REST API instead of reading the GPUs here."},
    {.type = GM_OPT_STRING,
     .name = "token",
     .arg = "T",
     GM_OPT_AT(top_opts, token),
     .help = "The daemon's token (default $GPU_MONITOR_TOKEN)."},
    {.type = GM_OPT_DURATION,
     .name = "interval",
     .arg = "SECONDS",
     GM_OPT_AT(top_opts, interval_s),
     .min = 0.1,
     .max = 3600,
     .help = "Between readings (0.1 to 3600, default 1)."},
    {.type = GM_OPT_CALLBACK,
     .name = "sort",
     .arg = "KEY",
     .set = set_sort,
     .values = "mem cpu pid sm",
     .help = "Order of the processes: mem (GPU memory, default), cpu, pid, or sm (share of "
             "the GPU's SMs)."},
    GM_CLI_OPT_COLOR(top_opts, color,
                     .help = "auto (default: unless NO_COLOR is set), always or never."),
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(top_opts, src)},
    {0},
};

const gm_opt_command gm_cli_top_command = {
    .name = "top",
    .usage = "top [-i LIST] [--connect URL [--token T]] [options]",
    .description = "A live view of the GPUs in the terminal, like nvtop or nvitop: per GPU bars "
                   "of utilization, memory, power and temperature, the history of one GPU as "
                   "graphs, and the processes using the GPUs with their GPU memory, CPU and host "
                   "memory. Needs a terminal of at least 80x24; redraws when it is resized.",
    .table = top_table,
    .epilogue = "Keys: q quit; Up/Down or j/k (PgUp, PgDn, Home, End) select a process and\n"
                "scroll the list; K or F9 send it SIGTERM, after a y/N question (only your own\n"
                "processes unless you are root, and only processes of this host: reading here,\n"
                "or a daemon on a loopback address); u show one user's processes, / those whose\n"
                "user or command has a text (Enter alone shows all again); s sort by the next\n"
                "column, m/c/p/S by GPU memory, CPU, PID, SM share; g or Tab graph the next\n"
                "GPU; ? help.\n\n"
                "Exit status: 0 ok, 2 usage error or not a terminal, 3 no GPU found.\n",
};

static int read_options(int argc, char **argv, top_opts *o)
{
    int rc = gm_cli_parse(&gm_cli_top_command, argc, argv, o, NULL);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (o->connect && (o->src.provider || o->src.simulate)) {
        fprintf(stderr, "gpumon top: --connect reads the daemon's GPUs; --provider and "
                        "--simulate are for reading them here\n");
        return GM_EXIT_USAGE;
    }
    o->token = gm_cli_remote_token(o->token);
    return GM_CLI_PROCEED;
}

/* Moves the selection to the process with pid on gpu after the list was re-read and sorted,
 * so it stays on the same process. */
static void keep_selection(const gm_top_frame *f, gm_top_view_state *st, uint32_t pid, unsigned gpu)
{
    const gm_top_proc *p;
    for (size_t i = 0; (p = gm_top_view_proc(f, st, i)); i++)
        if (p->pid == pid && p->gpu == gpu) {
            st->selected = i;
            return;
        }
}

/* The selected process's pid and GPU (0, 0 when none), to find it again after a change. */
static void selection(const gm_top_frame *f, const gm_top_view_state *st, uint32_t *pid,
                      unsigned *gpu)
{
    const gm_top_proc *p = gm_top_view_proc(f, st, st->selected);
    *pid = p ? p->pid : 0;
    *gpu = p ? p->gpu : 0;
}

/* A key while a filter is typed: text, Backspace, Enter (applies it; empty shows all) or Esc
 * (leaves the filter as it was). */
static void filter_key(const gm_top_frame *f, gm_top_view_state *st, int ch)
{
    size_t len = strlen(st->input_buf);
    if (ch == 27) {
        st->input = false;
    } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        uint32_t pid;
        unsigned gpu;
        selection(f, st, &pid, &gpu);
        st->input = false;
        snprintf(st->filter, sizeof st->filter, "%s", st->input_buf);
        st->filter_user = st->input_kind == 'u';
        st->selected = st->first = 0;
        keep_selection(f, st, pid, gpu);
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (len)
            st->input_buf[len - 1] = '\0';
    } else if (ch >= 32 && ch < 127 && len + 1 < sizeof st->input_buf) {
        st->input_buf[len] = (char)ch;
        st->input_buf[len + 1] = '\0';
    }
}

/* Checks that the selected process may be sent SIGTERM here and asks; or says why not. */
static void ask_kill(const gm_top_frame *f, gm_top_view_state *st, bool local, gm_top_proc *target)
{
    st->message_error = true;
    const gm_top_proc *p = gm_top_view_proc(f, st, st->selected);
    if (!p) {
        snprintf(st->message, sizeof st->message, "no process selected");
        return;
    }
    if (!local) {
        snprintf(st->message, sizeof st->message,
                 "kill: pid %u is on the daemon's host, not this one", p->pid);
        return;
    }
    if (!p->has_uid) {
        snprintf(st->message, sizeof st->message,
                 "kill: pid %u is not a process this host shows in /proc", p->pid);
        return;
    }
    if (geteuid() != 0 && p->uid != getuid()) {
        snprintf(st->message, sizeof st->message,
                 "kill: pid %u belongs to %s: only your own processes (or run as root)", p->pid,
                 p->user[0] ? p->user : "another user");
        return;
    }
    *target = *p;
    st->confirm = true;
    st->message[0] = '\0';
    snprintf(st->prompt, sizeof st->prompt, "Send SIGTERM to pid %u (%s) of %s?", p->pid,
             p->command[0] ? p->command : "?", p->user[0] ? p->user : "?");
}

/* Sends SIGTERM to target if it is still the process that was asked about. */
static void do_kill(gm_top_view_state *st, const gm_top_proc *target)
{
    gm_host_proc_usage u;
    st->message_error = true;
    if (gm_host_process_usage(NULL, target->pid, &u) < 0 ||
        (target->start_ticks && u.start_ticks != target->start_ticks)) {
        snprintf(st->message, sizeof st->message, "pid %u has already exited", target->pid);
        return;
    }
    if (kill((pid_t)target->pid, SIGTERM) < 0) {
        snprintf(st->message, sizeof st->message, "kill %u: %s", target->pid, strerror(errno));
        return;
    }
    st->message_error = false;
    snprintf(st->message, sizeof st->message, "sent SIGTERM to pid %u", target->pid);
}

/* A key while a filter is typed, the help is shown or a kill awaits y/n: true when one of those
 * took it (the help closes on any key; anything but y leaves the process alone). */
static bool modal_key(const gm_top_frame *f, gm_top_view_state *st, const gm_top_proc *target,
                      int ch)
{
    if (st->input) {
        filter_key(f, st, ch);
        return true;
    }
    if (st->help) {
        st->help = false;
        return true;
    }
    if (!st->confirm)
        return false;
    st->confirm = false;
    if (ch == 'y' || ch == 'Y') {
        do_kill(st, target);
    } else {
        st->message_error = false;
        snprintf(st->message, sizeof st->message, "not sent");
    }
    return true;
}

/* Moves the selection for Up/Down (j/k), PgUp/PgDn, Home and End; false for another key. */
static bool move_key(const gm_top_frame *f, gm_top_view_state *st, int ch)
{
    size_t page = st->list_rows ? st->list_rows : 1;
    size_t nvis = gm_top_view_count(f, st);
    switch (ch) {
    case KEY_UP:
    case 'k':
        if (st->selected > 0)
            st->selected--;
        return true;
    case KEY_DOWN:
    case 'j':
        if (st->selected + 1 < nvis)
            st->selected++;
        return true;
    case KEY_PPAGE:
        st->selected = st->selected > page ? st->selected - page : 0;
        return true;
    case KEY_NPAGE:
        st->selected = nvis ? (st->selected + page < nvis ? st->selected + page : nvis - 1) : 0;
        return true;
    case KEY_HOME:
        st->selected = 0;
        return true;
    case KEY_END:
        st->selected = nvis ? nvis - 1 : 0;
        return true;
    default:
        return false;
    }
}

/* Sorts by the column a key names (s: the next one), the selection staying on its process. */
static void sort_key(gm_top_frame *f, gm_top_view_state *st, int ch)
{
    uint32_t pid;
    unsigned gpu;
    selection(f, st, &pid, &gpu);
    st->sort = ch == 'm'   ? GM_TOP_SORT_GPU_MEM
               : ch == 'c' ? GM_TOP_SORT_CPU
               : ch == 'p' ? GM_TOP_SORT_PID
               : ch == 'S' ? GM_TOP_SORT_SM
                           : (gm_top_sort)((st->sort + 1) % GM_TOP_SORT__COUNT);
    gm_top_sort_procs(f, st->sort);
    keep_selection(f, st, pid, gpu);
}

/* A key of the screen itself: quit, kill, sort, the next graph, help or a filter. */
static void command_key(gm_top_source *src, gm_top_frame *f, gm_top_view_state *st,
                        gm_top_proc *target, int ch)
{
    switch (ch) {
    case 'q':
    case 'Q':
    case KEY_F(10):
        stop_requested = 1;
        break;
    case 'K':
    case KEY_F(9):
        ask_kill(f, st, gm_top_local_pids(src), target);
        break;
    case 's':
    case 'm':
    case 'c':
    case 'p':
    case 'S':
        sort_key(f, st, ch);
        break;
    case 'g':
    case '\t':
        st->graph_gpu = f->ngpu ? (st->graph_gpu + 1) % f->ngpu : 0;
        break;
    case '?':
    case 'h':
        st->help = true;
        break;
    case 'u':
    case '/':
        st->input = true;
        st->input_kind = (char)ch;
        /* The filter of the same kind is there to edit; the other kind starts empty. */
        snprintf(st->input_buf, sizeof st->input_buf, "%s",
                 st->filter_user == (ch == 'u') ? st->filter : "");
        break;
    default:
        break;
    }
}

/* Takes the next reading into f, the selection staying on its process and the graph on its GPU
 * when the frame's GPUs move. */
static void read_next(gm_top_source *src, gm_top_frame *f, gm_top_view_state *st)
{
    uint32_t pid;
    unsigned gpu;
    selection(f, st, &pid, &gpu);
    char graphed[GM_UUID_LEN] = "";
    if (st->graph_gpu < f->ngpu)
        snprintf(graphed, sizeof graphed, "%s", f->gpus[st->graph_gpu].uuid);
    gm_top_read(src, f);
    for (unsigned i = 0; graphed[0] && i < f->ngpu; i++)
        if (strcmp(f->gpus[i].uuid, graphed) == 0)
            st->graph_gpu = i;
    gm_top_sort_procs(f, st->sort);
    keep_selection(f, st, pid, gpu);
}

/* The screen until q or a signal: redrawn after a key, a resize or a reading, readings every
 * interval (never to catch up after a slow one), keys in between. */
static void run_screen(gm_top_source *src, gm_top_frame *f, const top_opts *o)
{
    gm_top_sort_procs(f, o->sort);
    gm_top_view_state st = {
        .sort = o->sort, .interval_s = o->interval_s, .where = gm_top_where(src)};
    gm_top_view_start(gm_term_use_color(o->color, STDOUT_FILENO));
    double next = gm_clock_mono_s() + o->interval_s;
    gm_top_proc target = {0}; /* the process a kill question is about */
    bool dirty = true;
    while (!stop_requested) {
        if (dirty)
            gm_top_view_draw(f, &st);
        dirty = false;
        double wait = next - gm_clock_mono_s();
        timeout(wait <= 0 ? 0 : wait > 0.25 ? 250 : (int)ceil(wait * 1000));
        int ch = getch();
        if (ch == KEY_RESIZE) {
            dirty = true; /* not a key: a message or question stays */
        } else if (ch != ERR) {
            dirty = true;
            st.message[0] = '\0';
            if (modal_key(f, &st, &target, ch))
                continue;
            if (!move_key(f, &st, ch))
                command_key(src, f, &st, &target, ch);
        }
        if (gm_clock_mono_s() >= next) {
            read_next(src, f, &st);
            next += o->interval_s;
            if (next < gm_clock_mono_s()) /* a slow reading: do not try to catch up */
                next = gm_clock_mono_s() + o->interval_s;
            dirty = true;
        }
    }
    gm_top_view_end();
}

/* Opens what o watches: the daemon of --connect (each request given at most the interval, and
 * at least half a second) or the GPUs here. Returns NULL with *exit_code set after saying why. */
static gm_top_source *open_source(top_opts *o, int *exit_code)
{
    if (!o->connect)
        return gm_top_open_local(&o->src, exit_code);
    gm_error err = {0};
    if (o->interval_s < o->timeout_s)
        o->timeout_s = o->interval_s < 0.5 ? 0.5 : o->interval_s;
    gm_top_source *src = gm_top_open_remote(o->connect, o->token, o->timeout_s, &err);
    if (!src) {
        fprintf(stderr, "gpumon top: %s\n", err.msg);
        *exit_code = err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
    }
    return src;
}

/* The first reading, with -i applied. An id that names no GPU is a usage error, said before the
 * screen is taken, as query says it; later (a GPU gone from the bus) the screen says it. */
static int read_first(gm_top_source *src, const top_opts *o, gm_top_frame *f)
{
    gm_top_set_filter(src, &o->filter);
    if (gm_top_read(src, f) == GM_ENOENT) {
        fprintf(stderr, "gpumon top: %s\n", f->error);
        return GM_EXIT_USAGE;
    }
    return GM_EXIT_OK;
}

int gm_cli_top(int argc, char **argv)
{
    top_opts o = {.interval_s = 1, .timeout_s = 2};
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "gpumon top: needs a terminal; in scripts use gpumon query -l SECONDS\n");
        return GM_EXIT_USAGE;
    }
    gm_top_source *src = open_source(&o, &rc);
    if (!src)
        return rc;
    gm_top_frame *f = calloc(1, sizeof *f);
    if (!f) {
        gm_top_close(src);
        fprintf(stderr, "gpumon top: out of memory\n");
        return GM_EXIT_FAILURE;
    }
    /* Caught before curses starts, so curses leaves them to us and the terminal is restored
     * by endwin on the way out. */
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    rc = read_first(src, &o, f);
    if (rc == GM_EXIT_OK)
        run_screen(src, f, &o);
    gm_top_close(src);
    free(f);
    return rc;
}
