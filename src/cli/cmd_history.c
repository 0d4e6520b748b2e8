/* cmd_history.c - `gpumon history`: list, show and export the sessions, runs, snapshots and
 * benchmarks kept in the database, and compare benchmarks. */
#include <getopt.h> /* optind */
#include <math.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/term.h"
#include "base/clock.h"
#include "base/file.h"
#include "base/json.h"
#include "base/suggest.h"
#include "core/bench_html.h"
#include "core/bench_import.h"
#include "core/bench_report.h"
#include "core/session.h"
#include "store/store.h"
#include "core/timeline.h"
#include "base/error.h"

enum hist_format { FMT_DEFAULT, FMT_TABLE, FMT_JSON, FMT_CSV, FMT_VLLM, FMT_HTML };

typedef struct history_opts {
    const char *db;
    enum hist_format format;
    const char *output;
    unsigned long long limit;
    const char *action;
    const char *id;
    const char *ids[16]; /* compare */
    size_t nids;
    double older_than_s;      /* prune: --older-than, 0 when not given */
    unsigned long long point; /* export --format vllm: --point K (1-based), 0 when not given */
    int argc;                 /* import stores the command line */
    char **argv;
} history_opts;

static int set_format(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row;
    history_opts *o = base;
    if (strcmp(arg, "table") == 0)
        o->format = FMT_TABLE;
    else if (strcmp(arg, "json") == 0)
        o->format = FMT_JSON;
    else if (strcmp(arg, "csv") == 0)
        o->format = FMT_CSV;
    else if (strcmp(arg, "vllm") == 0)
        o->format = FMT_VLLM;
    else if (strcmp(arg, "html") == 0)
        o->format = FMT_HTML;
    else
        return gm_error_set(err, GM_EINVAL,
                            "invalid --format \"%s\" (table, json, csv, vllm or html)", arg);
    return GM_OK;
}

static const gm_opt history_table[] = {
    GM_CLI_OPT_DB(history_opts, db, .help = GM_CLI_DB_HELP),
    {.type = GM_OPT_CALLBACK,
     .name = "format",
     .arg = "FMT",
     .set = set_format,
     .values = "table json csv vllm html",
     .help = "table, json, csv, vllm or html (see below)."},
    {.type = GM_OPT_UINT,
     .name = "point",
     .arg = "K",
     GM_OPT_AT(history_opts, point),
     .min = 1,
     .max = 1000000,
     .help = "export --format vllm: point K (1 is the first)."},
    GM_CLI_OPT_JSON(history_opts, format, FMT_JSON),
    {.type = GM_OPT_UINT,
     .name = "limit",
     .arg = "N",
     GM_OPT_AT(history_opts, limit),
     .min = 1,
     .max = 1000000000,
     .help = "list: at most N entries."},
    GM_CLI_OPT_OUTPUT(history_opts, output, .help = "export: into FILE instead of stdout."),
    {.type = GM_OPT_DURATION,
     .name = "older-than",
     .arg = "D",
     GM_OPT_AT(history_opts, older_than_s),
     .min = 1,
     .max = 100 * 366 * 86400.0,
     .help = "prune: the age past which entries go."},
    {.type = GM_OPT_REMOVED,
     .name = "limit",
     .letter = 'n',
     .help = "-n is --count, a number of GPUs, in every command"},
    {0},
};

const gm_opt_command gm_cli_history_command = {
    .name = "history",
    .usage = "history [list] [--format table|json] [--limit N]\n"
             "history show ID [--format table|json]\n"
             "history export ID [--format json|csv|vllm|html] [--point K]\n"
             "                      [--output FILE]\n"
             "history export ID,ID... --format html [--output FILE]\n"
             "history import FILE\n"
             "history compare ID ID... [--format table|json]\n"
             "history delete ID...\n"
             "history prune --older-than DURATION",
    .description = "Sessions recorded by gpumon record / gpumon run, benchmarks of gpumon bench "
                   "(kind bench) and stored snapshots. ID may be any unambiguous prefix of an "
                   "id.",
    .table = history_table,
    .epilogue = "Actions:\n"
                "  list     id, kind, label, start, duration, status, samples and command, newest\n"
                "           first; status is running, stopped or interrupted (its gpumon died),\n"
                "           as the API says; runs on simulated GPUs are marked \"(sim)\"\n"
                "  show     the statistics summary of one session, or a benchmark's results\n"
                "           (json: the document, no timeline)\n"
                "  export   json (default): the document gpumon record or gpumon bench writes,\n"
                "           with \"simulated\"; csv: the timeline, one row per sample per GPU\n"
                "           (time in ISO 8601 UTC, t_s, gpu, utilization_percent,\n"
                "           memory_used_mib, memory_used_percent, temperature_c, power_w,\n"
                "           energy_j, simulated; empty where absent), or a benchmark's points,\n"
                "           one row each; vllm: a benchmark's points as vllm bench serve\n"
                "           --save-result writes them, one object per line (--point K: point K\n"
                "           alone); html: one self-contained page with the benchmark's charts and\n"
                "           points, or several benchmarks' (IDs joined by commas) side by side\n"
                "  import   a vllm bench serve --save-result file (one result per line with\n"
                "           --append-result: each a point) or GenAI-Perf's\n"
                "           profile_export_genai_perf.json, stored as a benchmark\n"
                "  compare  benchmarks side by side, point by point (matched by load), each\n"
                "           figure with its change from the first benchmark's (2 to 16 IDs)\n"
                "  delete   remove entries with everything stored with them (samples, benchmark\n"
                "           points); one still being recorded by a running gpumon is left alone\n"
                "           (stop it first); 1 to 16 IDs\n"
                "  prune    delete what ended more than DURATION ago (30d, 12h, 90m): sessions,\n"
                "           runs, benchmarks, snapshots; a session still recording is kept\n\n"
                "Exit status: 0 ok, 1 failure, 2 usage error or unknown ID.\n",
};

/* The IDs after the action (from optind) into o->ids: true when there are at least min and
 * no more than o->ids holds. */
static bool take_ids(int argc, char **argv, history_opts *o, size_t min)
{
    while (optind < argc && o->nids < sizeof o->ids / sizeof *o->ids)
        o->ids[o->nids++] = argv[optind++];
    return o->nids >= min && optind >= argc;
}

static int read_options(int argc, char **argv, history_opts *o)
{
    int first;
    int rc = gm_cli_parse(&gm_cli_history_command, argc, argv, o, &first);
    if (rc != GM_CLI_PROCEED)
        return rc;
    optind = first; /* the operands, as getopt left them */
    o->action = optind < argc ? argv[optind++] : "list";
    bool import = strcmp(o->action, "import") == 0;
    bool needs_id = strcmp(o->action, "show") == 0 || strcmp(o->action, "export") == 0 || import;
    bool compare = strcmp(o->action, "compare") == 0;
    bool prune = strcmp(o->action, "prune") == 0;
    bool del = strcmp(o->action, "delete") == 0;
    if (!needs_id && !compare && !prune && !del && strcmp(o->action, "list") != 0) {
        static const char *const actions[] = {"list",   "show",  "export", "compare",
                                              "delete", "prune", "import"};
        const char *guess = gm_suggest(o->action, actions, sizeof actions / sizeof *actions);
        if (guess)
            fprintf(stderr, "gpumon history: unknown action \"%s\"; did you mean \"%s\"?\n",
                    o->action, guess);
        else
            fprintf(stderr,
                    "gpumon history: unknown action \"%s\" (list, show, export, import, "
                    "compare, delete or prune)\n",
                    o->action);
        return GM_EXIT_USAGE;
    }
    if (prune != (o->older_than_s > 0)) {
        fprintf(stderr, prune ? "gpumon history: prune needs --older-than DURATION (e.g. 30d)\n"
                              : "gpumon history: --older-than is for prune\n");
        return GM_EXIT_USAGE;
    }
    if (del) {
        if (!take_ids(argc, argv, o, 1)) {
            fprintf(stderr, "gpumon history: delete takes 1 to %zu IDs (see gpumon history list)\n",
                    sizeof o->ids / sizeof *o->ids);
            return GM_EXIT_USAGE;
        }
        if (o->format != FMT_DEFAULT || o->output) {
            fprintf(stderr, "gpumon history: delete takes no --format or --output\n");
            return GM_EXIT_USAGE;
        }
        return GM_CLI_PROCEED;
    }
    if (compare) {
        if (!take_ids(argc, argv, o, 2)) {
            fprintf(stderr, "gpumon history: compare takes 2 to %zu benchmark IDs\n",
                    sizeof o->ids / sizeof *o->ids);
            return GM_EXIT_USAGE;
        }
    }
    if (needs_id) {
        if (optind >= argc) {
            if (import)
                fprintf(stderr, "gpumon history: import needs a FILE (a vLLM or GenAI-Perf "
                                "result)\n");
            else
                fprintf(stderr, "gpumon history: %s needs a session ID (see gpumon history list)\n",
                        o->action);
            return GM_EXIT_USAGE;
        }
        o->id = argv[optind++];
    }
    if (!gm_cli_no_operands("history", argc, argv))
        return GM_EXIT_USAGE;
    if (strcmp(o->action, "export") == 0 && o->format == FMT_DEFAULT)
        o->format = FMT_JSON; /* the whole document; CSV when asked */
    bool ok = strcmp(o->action, "export") == 0 ? o->format != FMT_TABLE
              : prune || import
                  ? o->format == FMT_DEFAULT
                  : o->format == FMT_DEFAULT || o->format == FMT_TABLE || o->format == FMT_JSON;
    if (!ok) {
        if (prune || import)
            fprintf(stderr, "gpumon history: %s takes no --format\n", o->action);
        else
            fprintf(stderr, "gpumon history: %s takes --format %s\n", o->action,
                    strcmp(o->action, "export") == 0 ? "json, csv, vllm or html" : "table or json");
        return GM_EXIT_USAGE;
    }
    if (o->point && o->format != FMT_VLLM) {
        fprintf(stderr, "gpumon history: --point is for export --format vllm\n");
        return GM_EXIT_USAGE;
    }
    if (strchr(o->id ? o->id : "", ',') && o->format != FMT_HTML && !import) {
        fprintf(stderr, "gpumon history: several IDs are for export --format html\n");
        return GM_EXIT_USAGE;
    }
    if (o->output && strcmp(o->action, "export") != 0) {
        fprintf(stderr, "gpumon history: --output is for export\n");
        return GM_EXIT_USAGE;
    }
    return GM_CLI_PROCEED;
}

static bool is_bench(const json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    return kind && strcmp(kind, "bench") == 0 && json_object_get(doc, "points");
}

/* Read from simulated GPUs: not a measurement of real hardware. */
static bool is_simulated(const json_t *doc)
{
    const char *prov = json_string_value(json_object_get(doc, "provider"));
    return prov && strcmp(prov, "sim") == 0;
}

static void fmt_duration(double s, char *buf, size_t len)
{
    if (!isfinite(s))
        snprintf(buf, len, "-");
    else if (s < 60)
        snprintf(buf, len, "%.1fs", s);
    else if (s < 3600)
        snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* The width a table is held to: $COLUMNS when set (as a shell sets it, or a person to
 * narrow or widen the table), else the terminal's, else (a pipe, a file) 80. */
static int list_width(void)
{
    const char *c = getenv("COLUMNS");
    char *end = NULL;
    long v = c && *c ? strtol(c, &end, 10) : 0;
    if (end && *end == '\0' && v >= 40 && v <= 4096)
        return (int)v;
    int t = gm_term_columns(STDOUT_FILENO);
    return t >= 40 ? t : 80;
}

/* s cut to at most w columns ("..." ending what was cut); s is ASCII or UTF-8, counted by
 * characters. */
static void put_cut(const char *s, int w)
{
    int chars = 0;
    for (const char *c = s; *c; c++)
        chars += ((unsigned char)*c & 0xC0) != 0x80;
    if (chars <= w) {
        fputs(s, stdout);
        return;
    }
    int keep = w > 3 ? w - 3 : 0, n = 0;
    const char *c = s;
    for (; *c; c++) {
        if (((unsigned char)*c & 0xC0) != 0x80 && n++ == keep)
            break;
        putchar(*c);
    }
    fputs(w > 3 ? "..." : "", stdout);
}

/* The listing in width columns. From 120 columns: every column, the command cut to what is
 * left. Narrower: id, kind, start (month, day, time), duration and status, then the label, or
 * the command when there is none, cut to what is left (show and --format json have the rest). */
static void print_list(const gm_store_entry *v, size_t n, int width)
{
    bool wide = width >= 120;
    if (wide)
        printf("%-22s %-12s %-16s %-19s %9s %-11s %7s %4s  %s\n", "ID", "KIND", "LABEL", "STARTED",
               "DURATION", "STATUS", "SAMPLES", "EXIT", "COMMAND");
    else
        printf("%-22s %-12s %-11s %8s %-11s %s\n", "ID", "KIND", "STARTED", "DURATION", "STATUS",
               width - 71 >= 13 ? "LABEL/COMMAND" : "LABEL");
    for (size_t i = 0; i < n; i++) {
        char ts[32], dur[32], code[16], kind[32];
        snprintf(kind, sizeof kind, "%s%s", v[i].kind, v[i].simulated ? " (sim)" : "");
        time_t t = (time_t)(v[i].started_ms / 1000);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(ts, sizeof ts, wide ? "%Y-%m-%d %H:%M:%S" : "%m-%d %H:%M", &tm);
        fmt_duration(v[i].duration_s, dur, sizeof dur);
        const char *cmd = v[i].command[0] ? v[i].command : "-";
        if (wide) {
            if (v[i].has_exit)
                snprintf(code, sizeof code, "%d", v[i].exit_code);
            else
                snprintf(code, sizeof code, "-");
            printf("%-22s %-12s %-16.16s %-19s %9s %-11s %7lld %4s  ", v[i].id, kind,
                   v[i].label[0] ? v[i].label : "-", ts, dur, v[i].status, (long long)v[i].samples,
                   code);
            put_cut(cmd, width - 110);
        } else {
            printf("%-22s %-12s %-11s %8s %-11s ", v[i].id, kind, ts, dur, v[i].status);
            put_cut(v[i].label[0] ? v[i].label : cmd, width - 69);
        }
        putchar('\n');
    }
}

static int do_list(gm_store *st, const history_opts *o, const char *path)
{
    gm_store_entry *v = NULL;
    size_t n = 0;
    gm_error err = {0};
    if (st && gm_store_list(st, (size_t)o->limit, &v, &n, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    if (o->format == FMT_JSON) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            char ts[40];
            gm_json_time(v[i].started_ms, ts, sizeof ts);
            json_array_append_new(
                a, json_pack(
                       "{s:s, s:s, s:o, s:o, s:s, s:o, s:s, s:I, s:o, s:b}", "id", v[i].id, "kind",
                       v[i].kind, "label", v[i].label[0] ? gm_json_str(v[i].label) : json_null(),
                       "command", v[i].command[0] ? gm_json_str(v[i].command) : json_null(),
                       "started_at", ts, "duration_seconds",
                       isfinite(v[i].duration_s) ? json_real(v[i].duration_s) : json_null(),
                       "status", v[i].status, "samples", (json_int_t)v[i].samples, "exit_code",
                       v[i].has_exit ? json_integer(v[i].exit_code) : json_null(), "simulated",
                       v[i].simulated));
        }
        gm_cli_write_json(stdout, a, true);
        json_decref(a);
        free(v);
        return GM_EXIT_OK;
    }
    if (n == 0) {
        if (st)
            printf("no sessions stored yet\n");
        else
            printf("no sessions stored yet (no database at %s)\n", path);
        free(v);
        return GM_EXIT_OK;
    }
    print_list(v, n, list_width());
    free(v);
    return GM_EXIT_OK;
}

static int do_one(gm_store *st, const history_opts *o, const char *path)
{
    gm_error err = {0};
    char id[GM_SESSION_ID_LEN];
    if (!st) {
        fprintf(stderr,
                "gpumon history: no session \"%s\": no database at %s (nothing recorded "
                "there yet)\n",
                o->id, path);
        return GM_EXIT_USAGE;
    }
    if (gm_store_resolve(st, o->id, id, sizeof id, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        return err.code == GM_ENOENT || err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
    }
    FILE *out = stdout;
    gm_file *file = NULL;
    if (o->output) {
        if (gm_file_open_output(o->output, GM_FILE_REPLACE, &file, &err) < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            return GM_EXIT_FAILURE;
        }
        out = gm_file_stream(file);
    }
    int rc = GM_EXIT_OK;
    bool export = strcmp(o->action, "export") == 0;
    json_t *doc = NULL;
    char kind[16] = "";
    gm_store_kind(st, id, kind, sizeof kind, NULL);
    bool bench = strcmp(kind, "bench") == 0;
    if (export && o->format == FMT_CSV && bench) {
        /* A benchmark's points, one row each, from its points table. */
        if (gm_store_bench_csv(st, id, out, &err) < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        }
    } else if (gm_store_load(st, id, &doc, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
    } else if (!export && o->format != FMT_JSON && json_object_get(doc, "gpu_stats")) {
        gm_session_print_summary(out, doc);
    } else if (!export && o->format != FMT_JSON && is_bench(doc)) {
        gm_bench_print_report_width(out, doc, list_width());
    } else if (!export || (o->format != FMT_CSV && !json_object_get(doc, "gpu_stats"))) {
        /* JSON asked for, or not a session (a stored snapshot): its document is its summary,
         * and what export gives. */
        if (export)
            json_object_set_new(doc, "simulated", json_boolean(is_simulated(doc)));
        gm_cli_write_json(out, doc, true);
    } else {
        /* export: the document and its timeline (JSON), or the samples alone (CSV), written
         * as they are read. */
        gm_buf b;
        gm_buf_init(&b, 0);
        gm_timeline *tl = NULL;
        if (o->format != FMT_CSV)
            json_object_set_new(doc, "simulated", json_boolean(is_simulated(doc)));
        int trc = o->format == FMT_CSV
                      ? gm_timeline_open(GM_TIMELINE_CSV, &b, out, &tl)
                      : gm_timeline_open_doc(GM_TIMELINE_JSON_PRETTY, doc, &b, out, &tl);
        if (trc < 0) {
            gm_error_set(&err, trc, "out of memory");
        } else {
            gm_timeline_set_simulated(tl, is_simulated(doc));
            trc = gm_store_timeline(st, id, tl, &err);
            gm_error cerr = {0};
            int crc = gm_timeline_close(tl, &cerr);
            if (trc == GM_OK && crc < 0) {
                trc = crc;
                err = cerr;
            }
        }
        gm_buf_free(&b);
        if (trc < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        }
    }
    json_decref(doc);
    /* A failed export leaves the target as it was. */
    if (file && rc != GM_EXIT_OK) {
        gm_file_abort(file);
    } else if (file && gm_file_commit(file, NULL, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
    }
    return rc;
}

/* prune: what ended more than --older-than ago goes (gm_store_prune). */
static int do_prune(const history_opts *o, const char *path)
{
    char before[40];
    int64_t cutoff = gm_clock_wall_ms() - (int64_t)llround(o->older_than_s * 1000);
    gm_json_time(cutoff, before, sizeof before);
    if (access(path, F_OK) != 0) {
        printf("nothing to prune: no database at %s\n", path);
        return GM_EXIT_OK;
    }
    gm_store *st = NULL;
    gm_error err = {0};
    size_t deleted = 0;
    if (gm_store_open(path, &st, &err) < 0 ||
        gm_store_prune(st, cutoff, 0, &deleted, NULL, &err) < 0) {
        fprintf(stderr, "gpumon history: %s%s\n", deleted ? "stopped partway: " : "", err.msg);
        if (deleted)
            fprintf(stderr, "gpumon history: %zu entr%s deleted before that\n", deleted,
                    deleted == 1 ? "y was" : "ies were");
        gm_store_close(st);
        return GM_EXIT_FAILURE;
    }
    gm_store_close(st);
    printf("deleted %zu entr%s that ended before %s\n", deleted, deleted == 1 ? "y" : "ies",
           before);
    return GM_EXIT_OK;
}

/* Loads the benchmarks named by ids (IDs or their prefixes) into docs, in order, until one
 * fails: GM_EXIT_USAGE for an unknown ID or a session that is not a benchmark,
 * GM_EXIT_FAILURE when the store fails (message printed). */
static int load_benches(gm_store *st, const char *const *ids, size_t n, json_t **docs)
{
    gm_error err = {0};
    int rc = GM_EXIT_OK;
    for (size_t i = 0; i < n && rc == GM_EXIT_OK; i++) {
        char id[GM_SESSION_ID_LEN];
        if (gm_store_resolve(st, ids[i], id, sizeof id, &err) < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = err.code == GM_ENOENT || err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
        } else if (gm_store_load(st, id, &docs[i], &err) < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        } else if (!is_bench(docs[i])) {
            fprintf(stderr, "gpumon history: %s is not a benchmark (kind %s)\n", id,
                    json_string_value(json_object_get(docs[i], "kind")) ?: "?");
            rc = GM_EXIT_USAGE;
        }
    }
    return rc;
}

static int do_compare(gm_store *st, const history_opts *o, const char *path)
{
    if (!st) {
        fprintf(stderr, "gpumon history: no benchmark \"%s\": no database at %s\n", o->ids[0],
                path);
        return GM_EXIT_USAGE;
    }
    json_t *docs[16] = {0};
    gm_error err = {0};
    int rc = load_benches(st, o->ids, o->nids, docs);
    if (rc == GM_EXIT_OK && o->format == FMT_JSON) {
        json_t *j = gm_bench_compare_json((const json_t *const *)docs, o->nids, &err);
        if (j)
            gm_cli_write_json(stdout, j, true);
        else {
            fprintf(stderr, "gpumon history: %s\n", err.msg[0] ? err.msg : "out of memory");
            rc = GM_EXIT_FAILURE;
        }
        json_decref(j);
    } else if (rc == GM_EXIT_OK &&
               gm_bench_print_compare(stdout, (const json_t *const *)docs, o->nids,
                                      gm_term_use_color(GM_COLOR_AUTO, STDOUT_FILENO), list_width(),
                                      &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        rc = GM_EXIT_USAGE;
    }
    for (size_t i = 0; i < o->nids; i++)
        json_decref(docs[i]);
    return rc;
}

/* history delete: every id is resolved and checked before anything is deleted, so a typo in
 * the third id deletes nothing. Opens the database for writing, but never creates one. */
static int do_delete(const history_opts *o, const char *path)
{
    gm_error err = {0};
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "gpumon history: no session \"%s\": no database at %s\n", o->ids[0], path);
        return GM_EXIT_USAGE;
    }
    gm_store *st = NULL;
    if (gm_store_open(path, &st, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    char ids[sizeof o->ids / sizeof *o->ids][GM_SESSION_ID_LEN];
    int rc = GM_EXIT_OK;
    for (size_t i = 0; i < o->nids && rc == GM_EXIT_OK; i++) {
        char status[16];
        if (gm_store_resolve(st, o->ids[i], ids[i], sizeof ids[i], &err) < 0 ||
            gm_store_status(st, ids[i], status, sizeof status, &err) < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = err.code == GM_ENOENT || err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
        } else if (strcmp(status, "running") == 0) {
            /* Its recorder (gpumon record/run, or a daemon's session) would go on writing
             * samples of a session that no longer exists. */
            fprintf(stderr,
                    "gpumon history: %s is still being recorded; stop it first (a daemon's "
                    "session: DELETE /api/sessions/%s stops and deletes it)\n",
                    ids[i], ids[i]);
            rc = GM_EXIT_FAILURE;
        }
    }
    for (size_t i = 0; i < o->nids && rc == GM_EXIT_OK; i++) {
        if (gm_store_session_delete(st, ids[i], &err) < 0) {
            if (err.code == GM_ENOENT) /* the same id twice, or deleted meanwhile */
                continue;
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        } else {
            printf("deleted %s\n", ids[i]);
        }
    }
    gm_store_close(st);
    return rc;
}

/* history import FILE: a vLLM or GenAI-Perf result file stored as a benchmark, with the command
 * that imported it. Nothing is stored when the file is refused. */
static int do_import(const history_opts *o, const char *path)
{
    gm_error err = {0};
    json_t *doc = NULL;
    int64_t started_ms = -1;
    int rc = gm_bench_import_file(o->id, &doc, &started_ms, &err);
    if (rc < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        /* A file that cannot be read fails; one that is not a result is the user's mistake. */
        return rc == GM_EIO || rc == GM_ENOENT || rc == GM_EPERM || rc == GM_ENOMEM
                   ? GM_EXIT_FAILURE
                   : GM_EXIT_USAGE;
    }
    if (started_ms < 0)
        started_ms = gm_clock_wall_ms(); /* the file does not say when it ran */
    double dur = 0;
    bool dur_known = false; /* GenAI-Perf's export says no duration: unknown, not 0 s */
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(doc, "points"), i, p)
    {
        const json_t *d = json_object_get(p, "duration_s");
        if (json_is_number(d)) {
            dur += json_number_value(d);
            dur_known = true;
        }
    }
    int64_t ended_ms = started_ms + (int64_t)llround(dur * 1000);
    char id[GM_SESSION_ID_LEN], started[40], ended[40];
    gm_session_make_id(id, sizeof id, started_ms);
    gm_json_time(started_ms, started, sizeof started);
    gm_json_time(ended_ms, ended, sizeof ended);
    json_object_set_new(doc, "id", json_string(id));
    json_object_set_new(doc, "started", json_string(started));
    json_object_set_new(doc, "ended", json_string(ended));
    json_object_set_new(doc, "duration_s", dur_known ? json_real(dur) : json_null());
    json_t *cmd = json_array();
    for (int a = 0; cmd && a < o->argc; a++)
        json_array_append_new(cmd, gm_json_str(o->argv[a]));
    /* The command as typed after "gpumon": the way bench stores its own. */
    if (cmd)
        json_array_insert_new(cmd, 0, json_string("gpumon"));
    gm_store *st = NULL;
    rc = GM_EXIT_OK;
    if (gm_store_open(path, &st, &err) < 0 ||
        gm_store_put_bench(st, doc, cmd, started_ms, ended_ms, 0, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
    } else {
        size_t n = json_array_size(json_object_get(doc, "points"));
        printf("imported %s as %s: %zu point%s, %s\n", o->id, id, n, n == 1 ? "" : "s",
               json_string_value(json_object_get(doc, "source")));
    }
    gm_store_close(st);
    json_decref(cmd);
    json_decref(doc);
    return rc;
}

/* export --format vllm (a benchmark's points as vLLM result objects) or html (the report of
 * one or several benchmarks), written through the output file. */
static int do_export_other(gm_store *st, const history_opts *o, const char *path)
{
    char list[1024];
    snprintf(list, sizeof list, "%s", o->id);
    const char *ids[16];
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == sizeof ids / sizeof *ids) {
            fprintf(stderr, "gpumon history: at most %zu benchmarks in one report\n", n);
            return GM_EXIT_USAGE;
        }
        ids[n++] = t;
    }
    if (n == 0) {
        fprintf(stderr, "gpumon history: export needs a benchmark ID\n");
        return GM_EXIT_USAGE;
    }
    if (!st) {
        fprintf(stderr, "gpumon history: no benchmark \"%s\": no database at %s\n", ids[0], path);
        return GM_EXIT_USAGE;
    }
    json_t *docs[16] = {0};
    gm_error err = {0};
    int rc = load_benches(st, ids, n, docs);
    json_t *objs = NULL;
    if (rc == GM_EXIT_OK && o->format == FMT_VLLM) {
        size_t np = json_array_size(json_object_get(docs[0], "points"));
        size_t from = o->point ? (size_t)o->point - 1 : 0, to = o->point ? from + 1 : np;
        objs = json_array();
        for (size_t k = from; k < to && rc == GM_EXIT_OK; k++) {
            json_t *v = NULL;
            if (gm_bench_export_vllm(docs[0], k, &v, &err) < 0) {
                fprintf(stderr, "gpumon history: %s\n", err.msg);
                rc = err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
            } else {
                json_array_append_new(objs, v);
            }
        }
        if (rc == GM_EXIT_OK && np == 0) {
            fprintf(stderr, "gpumon history: %s has no points to export\n", ids[0]);
            rc = GM_EXIT_FAILURE;
        }
    }
    gm_file *file = NULL;
    if (rc == GM_EXIT_OK && gm_file_open_output(o->output ? o->output : "/dev/stdout",
                                                GM_FILE_REPLACE, &file, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        rc = GM_EXIT_FAILURE;
    }
    if (rc == GM_EXIT_OK) {
        FILE *out = gm_file_stream(file);
        if (o->format == FMT_VLLM) {
            /* One object per line, as vllm bench serve --append-result writes them. */
            size_t i;
            const json_t *v;
            json_array_foreach(objs, i, v)
            {
                char *s = gm_json_dump(v, NULL);
                if (!s || fprintf(out, "%s\n", s) < 0)
                    rc = GM_EXIT_FAILURE;
                free(s);
            }
        } else if (gm_bench_html_report(out, (const json_t *const *)docs, n, &err) < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        }
        if (rc != GM_EXIT_OK)
            gm_file_abort(file);
        else if (gm_file_commit(file, NULL, &err) < 0) {
            fprintf(stderr, "gpumon history: %s\n", err.msg);
            rc = GM_EXIT_FAILURE;
        }
    }
    json_decref(objs);
    for (size_t i = 0; i < n; i++)
        json_decref(docs[i]);
    return rc;
}

int gm_cli_history(int argc, char **argv)
{
    history_opts o = {.argc = argc, .argv = argv};
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
        return rc;
    char path[4096];
    gm_error err = {0};
    if (o.db)
        snprintf(path, sizeof path, "%s", o.db);
    else if (gm_store_default_path(path, sizeof path, &err) < 0) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    if (strcmp(o.action, "prune") == 0)
        return do_prune(&o, path);
    if (strcmp(o.action, "delete") == 0)
        return do_delete(&o, path);
    if (strcmp(o.action, "import") == 0)
        return do_import(&o, path);
    /* Reading only: nothing is created, converted or upgraded, so a database this user may
     * only read can be read. A missing one simply holds nothing yet. */
    gm_store *st = NULL;
    if (gm_store_open_readonly(path, &st, &err) < 0 && err.code != GM_ENOENT) {
        fprintf(stderr, "gpumon history: %s\n", err.msg);
        return GM_EXIT_FAILURE;
    }
    rc = strcmp(o.action, "list") == 0                  ? do_list(st, &o, path)
         : strcmp(o.action, "compare") == 0             ? do_compare(st, &o, path)
         : o.format == FMT_VLLM || o.format == FMT_HTML ? do_export_other(st, &o, path)
                                                        : do_one(st, &o, path);
    gm_store_close(st);
    return rc;
}
