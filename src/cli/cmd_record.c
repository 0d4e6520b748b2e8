/* cmd_record.c - `gpumon record`: run a command while sampling GPUs (the loop is core/record.c),
 * exit with its status, and keep the session (statistics, energy, timeline) in the database and
 * an optional JSON file. Its engine is also `gpumon run`'s (cli/record.h). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/file.h"
#include "base/json.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/record.h"
#include "core/audit.h"
#include "core/record.h"
#include "core/recorder.h"
#include "core/select.h"
#include "core/session.h"
#include "core/timeline.h"
#include "store/store.h"
#include "base/error.h"

typedef gm_cli_record_opts record_opts;

_Static_assert(GM_AUDIT_DEFAULT_POWER_WINDOW_MS == 2000 && GM_STORE_RESERVE_BYTES >> 20 == 8,
               "the help states these figures");

static const gm_opt record_table[] = {
    GM_CLI_OPT_ID(record_opts, filter, GM_OPT_GIVEN(record_opts, have_filter), .aliases = "gpus",
                  .help = "GPUs to sample: indices, UUIDs or PCI bus ids, comma-separated "
                          "(default: those in CUDA_VISIBLE_DEVICES, else all)."),
    {.type = GM_OPT_DURATION,
     .name = "interval",
     .arg = "SECONDS",
     GM_OPT_AT(record_opts, interval_s),
     .min = 0.01,
     .max = 3600,
     .help = "Between samples, fractions allowed (0.01 to 3600, default 1)."},
    {.type = GM_OPT_STRING,
     .name = "label",
     .arg = "TEXT",
     GM_OPT_AT(record_opts, label),
     .help = "A name to find the session by in gpumon history."},
    GM_CLI_OPT_SNAPSHOT(.type = GM_OPT_FLAG, GM_OPT_AT(record_opts, snapshot)),
    GM_CLI_OPT_SNAPSHOT_WINDOW(.type = GM_OPT_UINT, GM_OPT_AT(record_opts, snapshot_window_ms),
                               GM_OPT_GIVEN(record_opts, snapshot_window_set)),
    GM_CLI_OPT_OUTPUT(record_opts, output, .group = "Output",
                      .help = "Also write the session as JSON, with its full timeline."),
    {.type = GM_OPT_FLAG,
     .name = "quiet",
     .letter = 'q',
     GM_OPT_AT(record_opts, quiet),
     .help = "No summary or progress on stderr."},
    GM_CLI_OPT_DB(record_opts, db, .group = "Database", .help = GM_CLI_DB_HELP),
    GM_CLI_OPT_NO_DB(record_opts, no_db, .help = "Do not store the session."),
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(record_opts, src)},
    {.type = GM_OPT_REMOVED,
     .name = "interval",
     .letter = 'n',
     .help = "-n is --count, a number of GPUs, in every command"},
    GM_CLI_OPT_L_REMOVED,
    {0},
};

const gm_opt_command gm_cli_record_command = {
    .name = "record",
    .usage = "record [options] -- COMMAND [ARGS...]",
    .description = "Runs COMMAND while sampling GPUs every interval, then prints per-GPU "
                   "statistics (min/max/mean/p50/p95 of utilization, memory, temperature, power) "
                   "and energy to stderr. COMMAND keeps stdin/stdout; gpumon exits with its exit "
                   "status (128+N when signal N ended it, 127 when it cannot be run). SIGINT, "
                   "SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to gpumon are passed on "
                   "to COMMAND.",
    .table = record_table,
    .stop_at_operand = true,
    .epilogue = "Samples are stored as they are taken: if gpumon is killed, `gpumon history`\n"
                "shows the session as interrupted with what it had. A database that cannot be\n"
                "opened is warned about and the command still runs. One that fails during the\n"
                "run gets the samples when it works again; none is stored while less than 8 MiB\n"
                "is free on its filesystem, and 8 MiB are held there for the session's end. At\n"
                "the end the session is stored whole, or as incomplete with the samples the\n"
                "database took, or removed, or gpumon says how many samples the database kept.\n\n"
                "Exit status: COMMAND's; 1 when COMMAND succeeded but --output could not be\n"
                "written; 2 usage error; 3 no GPU found (with --id); 127 COMMAND cannot be run.\n",
};

static int read_options(int argc, char **argv, record_opts *o)
{
    const char *cmd = o->name;
    int first;
    /* stop_at_operand: COMMAND's own flags are never ours. */
    int rc = gm_cli_parse(&gm_cli_record_command, argc, argv, o, &first);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (first >= argc) {
        fprintf(stderr, "gpumon %s: no command to run (usage: gpumon %s [options] -- COMMAND)\n",
                cmd, cmd);
        return GM_EXIT_USAGE;
    }
    o->command = argv + first;
    return GM_CLI_PROCEED;
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
    /* Samples stop short of a full disk, and space stays held for the session's end. Where
     * that space cannot be held, the guard alone still stops the samples first. */
    gm_store_guard_space(st, NULL);
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

/* The summary's width: 80 columns, fewer where COLUMNS or the terminal says so. */
static int summary_width(void)
{
    int width = 80;
    const char *env = getenv("COLUMNS");
    char *end;
    long cols = env && *env ? strtol(env, &end, 10) : 0;
    if (env && *env && !*end && cols >= 20 && cols < width)
        width = (int)cols;
    struct winsize ws;
    if (isatty(STDERR_FILENO) && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20 &&
        ws.ws_col < width)
        width = ws.ws_col;
    return width;
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
    ao.with_processes = true; /* start_reading lists processes under --snapshot */
    json_t *doc = NULL;
    gm_error err = {0};
    if (gm_audit_take(c, &ao, &doc, &err) < 0) {
        fprintf(stderr, "gpumon %s: warning: snapshot %s the command failed: %s\n", o->name, when,
                err.msg);
        return NULL;
    }
    return doc;
}

/* Writes the session's document and its timeline to --output, as indented JSON. */
static int write_output(const record_opts *o, const json_t *doc, const gm_session *s)
{
    if (!o->output)
        return 0;
    gm_error err = {0};
    gm_file *file = NULL;
    if (gm_file_open_output(o->output, GM_FILE_REPLACE, &file, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o->name, err.msg);
        return -1;
    }
    gm_buf b;
    gm_buf_init(&b, 0);
    gm_timeline *tl = NULL;
    int rc = gm_timeline_open_doc(GM_TIMELINE_JSON_PRETTY, doc, &b, gm_file_stream(file), &tl);
    if (rc == GM_OK) {
        gm_timeline_add_session(tl, s);
        rc = gm_timeline_close(tl, &err);
    } else {
        gm_error_set(&err, rc, "out of memory");
    }
    gm_buf_free(&b);
    if (rc < 0) {
        gm_file_abort(file);
        fprintf(stderr, "gpumon %s: cannot write %s: %s\n", o->name, o->output, err.msg);
        return -1;
    }
    if (gm_file_commit(file, NULL, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o->name, err.msg);
        return -1;
    }
    return 0;
}

/* What the recorder says about the database, said as warnings. */
typedef struct say_ctx {
    const record_opts *o;
    bool tty;
    /* With --snapshot: the GPU processes of the command's own tree seen at any sample, which
     * the audit's diff must not report as another job on the machine. */
    const gm_snapshot *snap;
    pid_t run_pids[256];
    size_t run_pid_count;
} say_ctx;

/* The parent of pid from /proc/PID/stat (after the command's name, which may hold ") "), or 0. */
static pid_t parent_of(pid_t pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *end = strrchr(line, ')');
    char state;
    long ppid;
    return end && sscanf(end + 1, " %c %ld", &state, &ppid) == 2 && ppid > 0 ? (pid_t)ppid : 0;
}

/* Whether pid is gpumon's descendant: the recorded command or a process it started. */
static bool of_this_run(pid_t pid)
{
    pid_t self = getpid();
    for (int depth = 0; pid > 1 && depth < 64; depth++) {
        pid = parent_of(pid);
        if (pid == self)
            return true;
    }
    return false;
}

static void note_run_processes(say_ctx *sc)
{
    const gm_snapshot *snap = sc->snap;
    for (size_t i = 0; snap && i < snap->proc_count; i++) {
        pid_t pid = (pid_t)snap->procs[i].pid;
        size_t k = 0;
        while (k < sc->run_pid_count && sc->run_pids[k] != pid)
            k++;
        if (k == sc->run_pid_count && k < sizeof sc->run_pids / sizeof *sc->run_pids &&
            of_this_run(pid))
            sc->run_pids[sc->run_pid_count++] = pid;
    }
}

static void on_record_event(void *arg, const gm_session *s, gm_record_event ev, const char *detail)
{
    const say_ctx *sc = arg;
    (void)s;
    if (ev == GM_RECORD_STORE_FAILING)
        fprintf(stderr,
                "%sgpumon %s: warning: %s; samples are kept and written when the database can "
                "take them\n",
                sc->tty ? "\r\033[K" : "", sc->o->name, detail);
}

static void on_warn(void *arg, const char *msg)
{
    const say_ctx *sc = arg;
    fprintf(stderr, "%sgpumon %s: warning: %s\n", sc->tty ? "\r\033[K" : "", sc->o->name, msg);
}

static void on_tick(void *arg, const gm_session *s)
{
    say_ctx *sc = arg;
    if (sc->o->snapshot)
        note_run_processes(sc);
    if (sc->tty)
        progress(s);
}

/* At the end: the store gets the whole session; when it still fails, the partial copy is
 * marked incomplete if that one update can be written, else removed so it never reads as
 * interrupted; says which. True when stored whole. */
static bool store_finish(const record_opts *o, gm_store *st, gm_recorder *rec)
{
    gm_error err = {0};
    int rc = GM_OK;
    /* Force through the backoff; a large backlog takes a few rounds. */
    for (int i = 0; i < 1000 && gm_recorder_behind(rec); i++)
        if ((rc = gm_recorder_sync(rec, gm_clock_mono_ms(), true, &err)) < 0)
            break;
    if (!gm_recorder_behind(rec))
        return gm_recorder_persisted(rec);
    gm_session *s = gm_recorder_session(rec);
    gm_error why = err;
    /* The samples cannot be written, but one small update may still be: the partial copy
     * then says that the run ended and what it lacks, instead of reading as interrupted. */
    if (gm_recorder_begun(rec) && gm_session_finished(s) &&
        gm_store_session_end_incomplete(st, s, gm_recorder_stored(rec), why.msg, NULL) == GM_OK) {
        fprintf(stderr,
                "gpumon %s: warning: %s; the session is not stored whole: the database keeps %s "
                "as incomplete, with %zu of %zu samples\n",
                o->name, why.msg, gm_session_id(s), gm_recorder_stored(rec),
                gm_session_sample_count(s));
        return false;
    }
    gm_recorder_give_up(rec, why.msg);
    gm_recorder_sync(rec, gm_clock_mono_ms(), true, NULL); /* removes the partial copy */
    if (!gm_recorder_begun(rec)) {
        fprintf(stderr, "gpumon %s: warning: %s; the session is not stored\n", o->name, why.msg);
        return false;
    }
    /* Neither the end nor the removal could be written: the row reads as a killed gpumon's. */
    fprintf(stderr,
            "gpumon %s: warning: %s; the session stays interrupted in the database: %s holds %zu "
            "of %zu samples and not its end\n",
            o->name, why.msg, gm_session_id(s), gm_recorder_stored(rec),
            gm_session_sample_count(s));
    return false;
}

/* Opens the collector and takes a first sample into a new *snap. Without a GPU, and no GPU
 * asked for, it records the command's duration only (*c NULL, *snap empty). False with the exit
 * status in *rc when it cannot go on. */
static bool start_reading(const record_opts *o, gm_collector **c, gm_snapshot **snap, int *rc)
{
    gm_collector_options copt;
    gm_error err = {0};
    if (!gm_cli_collector_options(o->name, &o->src, &copt)) {
        *rc = GM_EXIT_USAGE;
        return false;
    }
    copt.no_processes = !o->snapshot; /* statistics need no process list; snapshots show it */
    copt.no_host = !o->snapshot;
    copt.slow_period_ms = -1; /* energy read at every sample: the total must be exact */
    if (!(*c = gm_cli_collector_open(o->name, &copt, rc)))
        return false;
    if (!(*snap = gm_snapshot_new())) {
        fprintf(stderr, "gpumon %s: out of memory\n", o->name);
        *rc = GM_EXIT_FAILURE;
        return false;
    }
    bool have_gpus = strcmp(gm_collector_provider(*c), "none") != 0 &&
                     gm_collector_sample(*c, *snap, &err) == GM_OK;
    if (have_gpus)
        return true;
    if (o->have_filter) {
        fprintf(stderr, "gpumon %s: no GPU found: %s\n", o->name,
                err.msg[0] ? err.msg : gm_collector_diagnosis(*c));
        *rc = GM_EXIT_NO_GPU;
        return false;
    }
    fprintf(stderr, "gpumon %s: warning: no GPU found; recording the command's duration only\n",
            o->name);
    gm_collector_close(*c);
    *c = NULL;
    gm_snapshot_reset(*snap);
    return true;
}

/* The session of kind over the GPUs idx (all: every one), with what is known before the command
 * starts attached: provider, driver, host name, and the caller's attach. NULL when it cannot be
 * made (said). */
static gm_session *new_session(const record_opts *o, const char *kind, gm_collector *c,
                               const gm_snapshot *snap, const unsigned *idx, bool all, int n,
                               json_t *attach)
{
    gm_session *s = NULL;
    gm_error err = {0};
    if (gm_session_new(o->label, all ? NULL : idx, all ? 0 : (size_t)n, o->interval_s, &s, &err) <
            0 ||
        gm_session_set_kind(s, kind) < 0 || (o->id && gm_session_set_id(s, o->id) < 0) ||
        gm_session_set_command(
            s, (const char *const *)(o->shown_command ? o->shown_command : o->command)) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o->name, err.msg[0] ? err.msg : "out of memory");
        gm_session_free(s);
        return NULL;
    }
    if (c) {
        gm_session_attach(s, "provider", json_string(gm_collector_provider(c)));
        /* Said outright, so no reader has to know which provider is not real hardware. */
        gm_session_attach(s, "simulated",
                          json_boolean(strcmp(gm_collector_provider(c), "sim") == 0));
        if (snap->driver_version[0])
            gm_session_attach(s, "driver_version", gm_json_str(snap->driver_version));
    }
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0 && host[0])
        gm_session_attach(s, "hostname", gm_json_str(host));
    if (attach) {
        const char *key;
        json_t *val;
        json_object_foreach(attach, key, val) gm_session_attach(s, key, json_incref(val));
    }
    return s;
}

/* The system snapshot after the command, compared with the one before and attached to rs;
 * true with the comparison in *verdict when it could be made. */
static bool audit_after(const record_opts *o, gm_collector *c, gm_session *rs, json_t *before,
                        const say_ctx *sc, gm_audit_verdict *verdict)
{
    gm_error err = {0};
    bool have_verdict = false;
    json_t *after = take_audit(o, c, "after");
    gm_audit_tolerance tol;
    gm_audit_tolerance_init(&tol);
    tol.ignore_pids = sc->run_pids;
    tol.ignore_pid_count = sc->run_pid_count;
    if (after && gm_audit_diff(before, after, &tol, verdict, &err) == GM_OK) {
        have_verdict = true;
        gm_session_attach(rs, "audit",
                          json_pack("{s:O, s:O, s:O}", "before", before, "after", after, "diff",
                                    verdict->report));
    } else if (after) {
        fprintf(stderr, "gpumon %s: warning: cannot compare snapshots: %s\n", o->name, err.msg);
    }
    json_decref(after);
    return have_verdict;
}

/* Ends the recording: attaches what the caller learnt at the end, stores it, writes --output,
 * prints the summary. The exit status, from the command's own rc. */
static int finish(const record_opts *o, gm_store *st, gm_recorder *rec, int rc,
                  const gm_audit_verdict *verdict)
{
    gm_session *rs = gm_recorder_session(rec);
    json_t *late = o->ended ? o->ended(o->ended_arg) : NULL;
    const char *lkey;
    json_t *lval;
    json_object_foreach(late, lkey, lval) gm_session_attach(rs, lkey, json_incref(lval));
    json_decref(late);
    gm_recorder_ended(rec);
    bool stored = st && store_finish(o, st, rec);
    json_t *doc = gm_session_to_json(rs);
    bool written = false;
    if (!doc)
        fprintf(stderr, "gpumon %s: out of memory rendering the session\n", o->name);
    else
        written = write_output(o, doc, rs) == 0;
    /* The command's own status stays the exit code; a lost --output is still a failure. */
    if (o->output && !written && rc == GM_EXIT_OK)
        rc = GM_EXIT_FAILURE;
    if (!o->quiet && doc) {
        int width = summary_width();
        gm_session_print_summary_fit(stderr, doc, width);
        if (verdict)
            fprintf(stderr, "system snapshot: %s (%u changed, %u warnings, %u notes)\n",
                    verdict->changed ? "CHANGED" : "UNCHANGED", verdict->changes, verdict->warnings,
                    verdict->notes);
        if (stored)
            fprintf(stderr, "stored as %s%s(gpumon history show %s)\n", gm_session_id(rs),
                    width >= 77 ? " " : "\n", gm_session_id(rs));
        if (o->output && written)
            fprintf(stderr, "written to %s\n", o->output);
    }
    json_decref(doc);
    return rc;
}

int gm_cli_record_exec(const record_opts *ro, const char *kind, json_t *attach)
{
    record_opts o = *ro;
    if (o.interval_s <= 0)
        o.interval_s = 1.0;
    if (!o.snapshot_window_set)
        o.snapshot_window_ms = GM_AUDIT_DEFAULT_POWER_WINDOW_MS;
    int rc = GM_EXIT_OK;
    gm_collector *c = NULL;
    gm_snapshot *snap = NULL;
    gm_session *s = NULL;
    gm_recorder *rec = NULL;
    gm_store *st = NULL;
    gm_record_sink sink;
    json_t *audit_before = NULL;
    gm_error err = {0};
    /* SIGXFSZ as gpumon was started with, given back to the command. gpumon itself ignores it
     * until the database is closed: a file-size limit (ulimit -f) reached by a database write
     * is then a failed write, handled like a full disk, instead of a death that leaves the
     * command unwatched. */
    struct sigaction xfsz_orig, ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    bool xfsz_ignored = false;
    if (!start_reading(&o, &c, &snap, &rc))
        goto out;
    unsigned idx[GM_MAX_GPUS];
    bool all;
    int n = resolve_gpus(&o, snap, idx, &all);
    if (n == -2) {
        rc = GM_EXIT_USAGE;
        goto out;
    }

    sigaction(SIGXFSZ, &ignore, &xfsz_orig);
    xfsz_ignored = true;
    st = open_store(&o);
    if (o.snapshot && c)
        audit_before = take_audit(&o, c, "before");
    if (!(s = new_session(&o, kind, c, snap, idx, all, n, attach))) {
        rc = GM_EXIT_FAILURE;
        goto out;
    }

    say_ctx sc = {.o = &o, .tty = !o.quiet && isatty(STDERR_FILENO), .snap = snap};
    if (st)
        gm_store_record_sink(st, &sink);
    /* The first retry after the database fails: a sample interval, at least a second. */
    gm_recorder_options ropt = {.sink = st ? &sink : NULL,
                                .retry_first_ms = (int64_t)(fmax(o.interval_s, 1.0) * 1000),
                                .event = on_record_event,
                                .event_arg = &sc};
    if (gm_recorder_new(s, &ropt, &rec, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o.name, err.msg);
        rc = GM_EXIT_FAILURE;
        goto out;
    }
    s = NULL; /* the recorder's now */
    gm_record_run_options run = {.command = o.command,
                                 .collector = c,
                                 .snap = snap,
                                 .rec = rec,
                                 .interval_s = o.interval_s,
                                 .child_sigxfsz = &xfsz_orig,
                                 .tick = on_tick,
                                 .warn = on_warn,
                                 .arg = &sc};
    gm_record_outcome outcome;
    if (gm_record_command(&run, &outcome, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o.name, err.msg);
        rc = outcome.exit_code;
        goto out;
    }
    rc = outcome.exit_code;
    if (sc.tty)
        fprintf(stderr, "\r\033[K");

    gm_audit_verdict verdict = {0};
    bool have_verdict =
        audit_before && audit_after(&o, c, gm_recorder_session(rec), audit_before, &sc, &verdict);
    rc = finish(&o, st, rec, rc, have_verdict ? &verdict : NULL);
    gm_audit_verdict_free(&verdict);

out:
    json_decref(attach);
    json_decref(audit_before);
    gm_session_free(s);
    gm_recorder_free(rec);
    gm_store_close(st);
    if (xfsz_ignored)
        sigaction(SIGXFSZ, &xfsz_orig, NULL);
    gm_snapshot_free(snap);
    gm_collector_close(c);
    return rc;
}

int gm_cli_record(int argc, char **argv)
{
    record_opts o = {.name = argv[0]};
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
        return rc;
    return gm_cli_record_exec(&o, "record", NULL);
}
