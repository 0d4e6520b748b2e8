/* cmd_query.c - `gpumon query`: one reading (or one per --loop interval) as a table, JSON, or
 * nvidia-smi compatible CSV. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/remote.h"
#include "cli/term.h"
#include "base/json.h"
#include "base/smi_format.h"
#include "base/utf8.h"
#include "base/clock.h"
#include "base/error.h"

enum out_format { OUT_TABLE, OUT_JSON, OUT_CSV };

typedef struct query_opts {
    enum out_format format;
    unsigned csv_flags;
    const char *query_gpu;
    gm_cli_gpu_filter filter;
    double loop_s;
    bool no_processes;
    bool profile; /* --profile: where the reading's time went, on stderr */
    bool format_given, list_fields;
    gm_cli_source src;
    const char *connect, *token; /* --connect: a daemon's GPUs instead of these */
    gm_color_mode color;
    /* The table's layout, decided once output starts. */
    bool redraw;         /* --loop on a terminal: each frame over the last, no scrolling */
    int width;           /* columns: 80, or up to 96 on a wider terminal (longer names) */
    int rows;            /* lines a redrawn frame may take; 0: as many as it needs */
    gm_term_style style; /* colour sequences, or "" */
} query_opts;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* --format table|json|csv[,noheader][,nounits] */
static int set_format(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    query_opts *o = base;
    (void)row;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    char *save = NULL;
    bool first = true;
    o->csv_flags = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        if (first && strcmp(tok, "csv") == 0)
            o->format = OUT_CSV;
        else if (first && strcmp(tok, "json") == 0)
            o->format = OUT_JSON;
        else if (first && strcmp(tok, "table") == 0)
            o->format = OUT_TABLE;
        else if (!first && o->format == OUT_CSV && strcmp(tok, "noheader") == 0)
            o->csv_flags |= GM_SMI_NOHEADER;
        else if (!first && o->format == OUT_CSV && strcmp(tok, "nounits") == 0)
            o->csv_flags |= GM_SMI_NOUNITS;
        else
            return gm_error_set(err, GM_EINVAL,
                                "invalid --format \"%s\" (expected table, json or "
                                "csv[,noheader][,nounits])",
                                arg);
        first = false;
    }
    if (first)
        return gm_error_set(err, GM_EINVAL, "--format needs a value");
    o->format_given = true;
    return GM_OK;
}

/* The fields of --format csv without --query-gpu. */
#define DEFAULT_CSV_FIELDS \
    "index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw"

static const gm_opt query_table[] = {
    GM_CLI_OPT_ID(query_opts, filter, .help = GM_CLI_ID_HELP),
    {.type = GM_OPT_DURATION,
     .name = "loop",
     .letter = 'l',
     .arg = "SECONDS",
     GM_OPT_AT(query_opts, loop_s),
     .min = 0.1,
     .max = 86400,
     .flags = GM_OPT_OPTARG,
     .def = "5",
     .aliases = "interval",
     .help = "Repeat every SECONDS (default 5; fractions allowed) until interrupted: on a "
             "terminal the table is redrawn in place, like watch; piped, the readings follow "
             "each other."},
    {.type = GM_OPT_CALLBACK,
     .name = "format",
     .arg = "FMT",
     .set = set_format,
     .group = "Output",
     .values = "table json csv csv,noheader csv,nounits csv,noheader,nounits",
     .help = "table (default), json, or csv[,noheader][,nounits]."},
    GM_CLI_OPT_JSON(query_opts, format, OUT_JSON, GM_OPT_GIVEN(query_opts, format_given)),
    {.type = GM_OPT_STRING,
     .name = "query-gpu",
     .arg = "LIST",
     GM_OPT_AT(query_opts, query_gpu),
     .complete = "fields",
     .help = "nvidia-smi compatible fields, e.g. index,name,utilization.gpu (implies --format "
             "csv; without it csv prints " DEFAULT_CSV_FIELDS "); see --list-fields."},
    {.type = GM_OPT_FLAG,
     .name = "list-fields",
     GM_OPT_AT(query_opts, list_fields),
     .flags = GM_OPT_CLI_ONLY,
     .help = "Print the fields --query-gpu accepts and exit."},
    {.type = GM_OPT_FLAG,
     .name = "no-processes",
     GM_OPT_AT(query_opts, no_processes),
     .help = "Skip the GPU process list."},
    GM_CLI_OPT_COLOR(query_opts, color,
                     .help = "Colour the table: auto (default: on a terminal, unless NO_COLOR is "
                             "set), always or never."),
    {.type = GM_OPT_FLAG,
     .name = "profile",
     GM_OPT_AT(query_opts, profile),
     .help = "Print on stderr where the reading's time went: each driver call and host read "
             "with its count, wall and CPU time, slowest first, and the collector's open, "
             "sample and close."},
    {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, GM_OPT_AT(query_opts, src)},
    {.type = GM_OPT_STRING,
     .name = "connect",
     .arg = "URL",
     GM_OPT_AT(query_opts, connect),
     .group = "Daemon",
     .help = "Read the GPUs of the daemon at URL (gpumon serve, e.g. http://127.0.0.1:9401) "
             "through its REST API instead of the GPUs here; the output is the same."},
    {.type = GM_OPT_STRING,
     .name = "token",
     .arg = "T",
     GM_OPT_AT(query_opts, token),
     .help = "The daemon's token (default $GPU_MONITOR_TOKEN)."},
    {0},
};

const gm_opt_command gm_cli_query_command = {
    .name = "query",
    .usage = "query [options]\nquery --connect URL [--token T] [options]",
    .description = "Reads every GPU (and the host) once and prints the result.",
    .table = query_table,
    .epilogue = "The table fits 80 columns (GPU names are shortened on word boundaries). With\n"
                "--format csv the output matches `nvidia-smi --query-gpu=... --format=csv` field\n"
                "for field: header names with units, [N/A] for values the GPU does not report.\n\n"
                "Exit status: 0 ok, 1 failure (with --connect: the daemon cannot be reached,\n"
                "refuses the token or does not answer with its API), 2 usage error (unknown\n"
                "field, bad flag, an -i item that matches no GPU), 3 no GPU found.\n",
};

static void fmt_mib(char *buf, size_t len, const gm_gpu *g, gm_metric m)
{
    if (gm_gpu_has(g, m))
        snprintf(buf, len, "%.0f",
                 ceil(g->v[m] / (double)GM_BYTES_PER_MIB)); /* as nvidia-smi rounds */
    else
        snprintf(buf, len, "N/A");
}

static void fmt_val(char *buf, size_t len, const gm_gpu *g, gm_metric m, const char *suffix)
{
    if (gm_gpu_has(g, m))
        snprintf(buf, len, "%.0f%s", g->v[m] * gm_metric_get(m)->scale, suffix);
    else
        snprintf(buf, len, "N/A");
}

/* The table's lines: each at most o->width columns; on a terminal redrawn in place, each ends
 * by clearing the rest of its row (the previous frame may have been longer). */
static void end_line(const query_opts *o)
{
    fputs(o->redraw ? "\033[K\n" : "\n", stdout);
}

/* text cut to the width left after used columns. */
static void put_cut(const query_opts *o, int used, const char *text)
{
    int room = o->width - used;
    printf("%.*s", room > 0 ? room : 0, text);
}

static void print_host(const gm_snapshot *s, const query_opts *o)
{
    const gm_host *h = &s->host;
    if (!s->host_valid)
        return;
    char line[512];
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, __VA_ARGS__)
    ADD("host %s", h->hostname);
    /* Without two readings far enough apart there is no CPU figure to show: n/a, not 0.0. */
    if (gm_host_has(h, GM_H_CPU_UTIL_PCT))
        ADD("  cpu %.1f%%", h->v[GM_H_CPU_UTIL_PCT]);
    else
        ADD("  cpu n/a");
    if (gm_host_has(h, GM_H_CPU_COUNT))
        ADD(" of %.0f", h->v[GM_H_CPU_COUNT]);
    if (gm_host_has(h, GM_H_MEM_USED_BYTES) && gm_host_has(h, GM_H_MEM_TOTAL_BYTES))
        ADD("  mem %.1f / %.1f GiB", h->v[GM_H_MEM_USED_BYTES] / 1073741824.0,
            h->v[GM_H_MEM_TOTAL_BYTES] / 1073741824.0);
    if (gm_host_has(h, GM_H_LOAD1))
        ADD("  load %.2f %.2f %.2f", h->v[GM_H_LOAD1], h->v[GM_H_LOAD5], h->v[GM_H_LOAD15]);
    if (gm_host_has(h, GM_H_UPTIME_S)) {
        long up = (long)h->v[GM_H_UPTIME_S];
        ADD("  up %ldd %ldh %ldm", up / 86400, up / 3600 % 24, up / 60 % 60);
    }
    if (h->cpu_model[0] && n + 2 + strlen(h->cpu_model) <= (size_t)o->width)
        ADD("  %s", h->cpu_model); /* whole or not at all */
#undef ADD
    put_cut(o, 0, line);
    end_line(o);
}

/* One cell right-aligned in w columns, coloured (the padding stays outside the colour). */
static void cell(const char *color, const char *reset, int w, const char *text)
{
    int pad = w - (int)strlen(text);
    printf(" %*s%s%s%s", pad > 0 ? pad : 0, "", color, text, *color ? reset : "");
}

/* Columns: GPU 3, NAME (what is left of the width), TEMP 4, UTIL 4, MEMORY (MiB) 15,
 * POWER (W) 11, FAN 4, PST 3, PCIE 4, spaced: 80 columns with a name of 24. */
#define FIXED_COLS 56

/* What a frame of o->rows lines has room for: every GPU row, with its process rows when they
 * fit too (else one line says how many were left out); when even the GPU rows do not fit, as
 * many as leave a line saying how many more there are. Title, column header and host take
 * 3 lines. */
typedef struct table_fit {
    unsigned gpus;  /* GPU rows shown */
    bool processes; /* their process rows too */
} table_fit;

static table_fit fit_table(const gm_snapshot *s, const query_opts *o)
{
    unsigned ngpu = 0;
    size_t nproc = 0;
    for (unsigned i = 0; i < s->gpu_count; i++) {
        if (!gm_cli_gpu_selected(&o->filter, &s->gpus[i]))
            continue;
        ngpu++;
        for (size_t p = 0; p < s->proc_count; p++)
            nproc += s->procs[p].gpu_index == s->gpus[i].index;
    }
    table_fit f = {ngpu, true};
    if (o->rows <= 0)
        return f;
    long room = (long)o->rows - 3;
    long want = (long)ngpu + (long)nproc + (s->proc_dropped ? 1 : 0);
    if (want <= room)
        return f;
    f.processes = false;
    if ((long)ngpu + (nproc || s->proc_dropped ? 1 : 0) <= room)
        return f;
    f.gpus = room > 1 ? (unsigned)(room - 1) : 0;
    return f;
}

/* The title (host, time, driver, CUDA, provider) and the column header. */
static void print_title(const gm_snapshot *s, const query_opts *o, int name_w)
{
    const gm_term_style *st = &o->style;
    char ts[32], line[256];
    time_t t = (time_t)(s->time_ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(line, sizeof line, "%s  %s  driver %s  CUDA %s  provider %s", s->host.hostname, ts,
             s->driver_version[0] ? s->driver_version : "N/A",
             s->cuda_version[0] ? s->cuda_version : "N/A", s->provider);
    put_cut(o, 0, line);
    end_line(o);
    printf("%s%-3s %-*s %4s %4s %15s %11s %4s %3s %-4s%s", st->bold, "GPU", name_w, "NAME", "TEMP",
           "UTIL", "MEMORY (MiB)", "POWER (W)", "FAN", "PST", "PCIE", st->reset);
    end_line(o);
}

/* A GPU row's cells after its name: TEMP to PCIE. */
static void print_gpu_cells(const gm_gpu *g, const gm_term_style *st)
{
    char temp[16], util[16], used[24], total[24], mem[64], draw[24], limit[24], pw[64], fan[16],
        pst[8], pcie[24];
    fmt_val(temp, sizeof temp, g, GM_M_TEMP_C, "C");
    fmt_val(util, sizeof util, g, GM_M_UTIL_GPU_PCT, "%");
    fmt_mib(used, sizeof used, g, GM_M_MEM_USED_BYTES);
    fmt_mib(total, sizeof total, g, GM_M_MEM_TOTAL_BYTES);
    snprintf(mem, sizeof mem, "%s / %s", used, total);
    fmt_val(draw, sizeof draw, g, GM_M_POWER_MW, "");
    fmt_val(limit, sizeof limit, g, GM_M_POWER_LIMIT_MW, "");
    snprintf(pw, sizeof pw, "%s / %s", draw, limit);
    fmt_val(fan, sizeof fan, g, GM_M_FAN_PCT, "%");
    if (gm_gpu_has(g, GM_M_PSTATE))
        snprintf(pst, sizeof pst, "P%.0f", g->v[GM_M_PSTATE]);
    else
        snprintf(pst, sizeof pst, "N/A");
    if (gm_gpu_has(g, GM_M_PCIE_GEN_CUR) && gm_gpu_has(g, GM_M_PCIE_WIDTH_CUR))
        snprintf(pcie, sizeof pcie, "%.0fx%.0f", g->v[GM_M_PCIE_GEN_CUR],
                 g->v[GM_M_PCIE_WIDTH_CUR]);
    else
        snprintf(pcie, sizeof pcie, "N/A");
    /* Colour by level where a level means something: heat, load, memory and power
     * against what the GPU has. */
    const char *c_temp =
        gm_gpu_has(g, GM_M_TEMP_C) ? gm_term_level(st, g->v[GM_M_TEMP_C], 70, 85) : st->dim;
    const char *c_util = gm_gpu_has(g, GM_M_UTIL_GPU_PCT)
                             ? gm_term_level(st, g->v[GM_M_UTIL_GPU_PCT], 70, 90)
                             : st->dim;
    const char *c_mem = st->dim, *c_pw = st->dim;
    if (gm_gpu_has(g, GM_M_MEM_USED_BYTES) && gm_gpu_has(g, GM_M_MEM_TOTAL_BYTES) &&
        g->v[GM_M_MEM_TOTAL_BYTES] > 0)
        c_mem =
            gm_term_level(st, 100 * g->v[GM_M_MEM_USED_BYTES] / g->v[GM_M_MEM_TOTAL_BYTES], 70, 90);
    if (gm_gpu_has(g, GM_M_POWER_MW) && gm_gpu_has(g, GM_M_POWER_LIMIT_MW) &&
        g->v[GM_M_POWER_LIMIT_MW] > 0)
        c_pw = gm_term_level(st, 100 * g->v[GM_M_POWER_MW] / g->v[GM_M_POWER_LIMIT_MW], 80, 95);
    cell(c_temp, st->reset, 4, temp);
    cell(c_util, st->reset, 4, util);
    cell(c_mem, st->reset, 15, mem);
    cell(c_pw, st->reset, 11, pw);
    printf(" %4s %3s %-4s", fan, pst, pcie);
}

/* A GPU's row; false for a lost GPU, whose row says so and has no process rows under it. */
static bool print_gpu_row(const gm_gpu *g, const query_opts *o, int name_w)
{
    const gm_term_style *st = &o->style;
    char name[128];
    gm_utf8_shorten_name(g->name, (size_t)name_w, name, sizeof name);
    printf("%s%-3u%s %-*s", st->bold, g->index, st->reset, name_w, name);
    if (g->lost) {
        printf(" %s", st->red);
        put_cut(o, 4 + name_w + 1, "GPU is lost (fell off the bus); reset or reboot");
        printf("%s", st->reset);
        end_line(o);
        return false;
    }
    print_gpu_cells(g, st);
    end_line(o);
    return true;
}

/* The process rows under GPU g, or none when the frame has no room for them; returns how many
 * it left out. */
static size_t print_gpu_procs(const gm_snapshot *s, const gm_gpu *g, const query_opts *o, bool room)
{
    size_t hidden = 0;
    for (size_t p = 0; p < s->proc_count; p++) {
        const gm_process *pr = &s->procs[p];
        if (pr->gpu_index != g->index)
            continue;
        if (!room) {
            hidden++;
            continue;
        }
        char pmem[24];
        if (pr->mem_valid)
            snprintf(pmem, sizeof pmem, "%llu MiB",
                     (unsigned long long)(pr->used_mem_bytes / GM_BYTES_PER_MIB));
        else
            snprintf(pmem, sizeof pmem, "N/A");
        /* SM share only where the driver gave one; the MIG device's profile where known. */
        char sm[16] = "";
        if (pr->util_valid & (1u << GM_PROC_UTIL_SM))
            snprintf(sm, sizeof sm, "sm %3u%%  ", pr->util_pct[GM_PROC_UTIL_SM]);
        const gm_mig_device *mig = gm_gpu_process_mig(g, pr);
        char migs[GM_MIG_PROFILE_LEN + 8] = "";
        if (mig)
            snprintf(migs, sizeof migs, "MIG %s  ", mig->profile[0] ? mig->profile : "?");
        int n = printf("    pid %-8u %-12.12s %10s  %s%s", pr->pid, pr->user[0] ? pr->user : "?",
                       pmem, sm, migs);
        put_cut(o, n, pr->command[0] ? pr->command : "?");
        end_line(o);
    }
    return hidden;
}

/* The line saying what the frame left out: GPUs first, else processes. */
static void print_left_out(const gm_snapshot *s, const query_opts *o, const table_fit *fit,
                           unsigned hidden, size_t procs_hidden)
{
    const gm_term_style *st = &o->style;
    char more[128];
    if (hidden) {
        snprintf(more, sizeof more, "+%u GPU%s not shown (a taller terminal shows them)", hidden,
                 hidden == 1 ? "" : "s");
        printf("%s", st->dim);
        put_cut(o, 0, more);
        printf("%s", st->reset);
        end_line(o);
    } else if (procs_hidden || s->proc_dropped) {
        if (fit->processes)
            snprintf(more, sizeof more, "    (%zu more processes not shown)", s->proc_dropped);
        else
            snprintf(more, sizeof more,
                     "    (%zu processes not shown: a taller terminal shows them)",
                     procs_hidden + s->proc_dropped);
        put_cut(o, 0, more);
        end_line(o);
    }
}

static void print_table(const gm_snapshot *s, const query_opts *o)
{
    int name_w = o->width - FIXED_COLS;
    table_fit fit = fit_table(s, o);
    unsigned shown = 0, hidden = 0;
    size_t procs_hidden = 0;
    print_title(s, o, name_w);
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gm_gpu *g = &s->gpus[i];
        if (!gm_cli_gpu_selected(&o->filter, g))
            continue;
        if (shown == fit.gpus) {
            hidden++;
            continue;
        }
        shown++;
        if (print_gpu_row(g, o, name_w))
            procs_hidden += print_gpu_procs(s, g, o, fit.processes);
    }
    print_left_out(s, o, &fit, hidden, procs_hidden);
    print_host(s, o);
}

static int print_json(const gm_snapshot *s, const query_opts *o)
{
    json_t *j = gm_json_snapshot(s);
    if (!j)
        return -1;
    if (o->filter.count) {
        json_t *gpus = json_object_get(j, "gpus");
        json_t *kept = json_array();
        for (unsigned i = 0; i < s->gpu_count; i++)
            if (gm_cli_gpu_selected(&o->filter, &s->gpus[i]))
                json_array_append(kept, json_array_get(gpus, i));
        json_object_set_new(j, "gpus", kept);
        json_object_set_new(j, "gpu_count", json_integer((json_int_t)json_array_size(kept)));
    }
    /* One document per line, so --loop output is NDJSON. Pretty output only for a person. */
    gm_cli_write_json(stdout, j, isatty(STDOUT_FILENO) && o->loop_s == 0);
    json_decref(j);
    return 0;
}

/* One field a line in 80 columns: its name, then the CSV header it prints (the unit is in the
 * header); a long name puts its header on the next line. */
static void list_fields(void)
{
    printf("Fields accepted by --query-gpu, and the CSV header each prints:\n");
    for (int i = 0; i < GM_SMI_F__COUNT; i++) {
        const char *name = gm_smi_field_name(i), *header = gm_smi_field_header(i);
        int nl = (int)strlen(name), hl = (int)strlen(header);
        if (2 + 36 + 1 + hl <= 80 && nl <= 36)
            printf("  %-36s %s\n", name, header);
        else
            printf("  %s\n      %s\n", name, header);
    }
}

/* The metrics the table shows (the JSON shows every metric: it asks for all). */
static void table_metrics(gm_metric_set *w)
{
    static const gm_metric shown[] = {
        GM_M_TEMP_C,       GM_M_UTIL_GPU_PCT,   GM_M_MEM_USED_BYTES, GM_M_MEM_TOTAL_BYTES,
        GM_M_POWER_MW,     GM_M_POWER_LIMIT_MW, GM_M_FAN_PCT,        GM_M_PSTATE,
        GM_M_PCIE_GEN_CUR, GM_M_PCIE_WIDTH_CUR, GM_M_MIG_MODE_CUR, /* with it the MIG devices, which
                                                                      the process lines name */
    };
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++)
        gm_metric_set_add(w, shown[i]);
}

/* --profile: the collector's calls, slowest first, with the wall time of open, sample(s) and
 * close, on stderr. */
static int by_wall_desc(const void *a, const void *b)
{
    const gm_call_stat *x = a, *y = b;
    return x->wall_s < y->wall_s ? 1 : x->wall_s > y->wall_s ? -1 : 0;
}

static void print_profile(const gm_call_stat *calls, size_t n, double open_s, double sample_s,
                          double close_s)
{
    double total = open_s + sample_s + close_s, calls_wall = 0, calls_cpu = 0;
    for (size_t i = 0; i < n; i++) {
        calls_wall += calls[i].wall_s;
        calls_cpu += calls[i].cpu_s;
    }
    fprintf(stderr,
            "collector: open %.3f ms, sample %.3f ms, close %.3f ms, total %.3f ms (wall)\n",
            open_s * 1e3, sample_s * 1e3, close_s * 1e3, total * 1e3);
    fprintf(stderr, "%-44s %7s %10s %10s %6s\n", "call", "count", "wall ms", "cpu ms", "share");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%-44s %7llu %10.3f %10.3f %5.1f%%\n", calls[i].name,
                (unsigned long long)calls[i].count, calls[i].wall_s * 1e3, calls[i].cpu_s * 1e3,
                total > 0 ? 100 * calls[i].wall_s / total : 0);
    fprintf(stderr, "%-44s %7s %10.3f %10.3f %5.1f%%\n", "(all calls above, open and samples)", "",
            calls_wall * 1e3, calls_cpu * 1e3, total > 0 ? 100 * calls_wall / total : 0);
}

/* Opens the collector the output needs into *out (the time it took in *open_s); -1 to go on,
 * else the exit status (the reason printed). */
static int open_local(const query_opts *o, const int *fields, size_t nfields, gm_collector **out,
                      double *open_s)
{
    int rc;
    gm_collector_options copt;
    if (!gm_cli_collector_options("query", &o->src, &copt))
        return GM_EXIT_USAGE;
    gm_cli_vary_simulation(&o->src, &copt);
    copt.no_processes = o->no_processes || o->format == OUT_CSV;
    /* Read only what the output needs: the nvidia-smi CSV has no host fields, so no host
     * metrics and no CPU window at all (110 ms a call before, 25 ms for nvidia-smi on an H200);
     * a one-shot table or JSON waits a CPU window, loops use the previous reading. The window
     * is 150 ms: /proc/stat counts 10 ms ticks, and over 30 ms a busy host could read 0.0 %. */
    copt.no_host = o->format == OUT_CSV;
    copt.first_cpu_window_ms = 150;
    /* Tests give a /proc of their own (a fake /proc/stat); nothing else sets it. */
    copt.procfs_root = getenv("GM_TEST_PROCFS_ROOT");
    /* Only the metrics printed are read (JSON prints them all). */
    gm_metric_set want = {0};
    if (o->format == OUT_CSV)
        gm_smi_fields_want(fields, nfields, &want);
    else if (o->format == OUT_TABLE)
        table_metrics(&want);
    copt.want = o->format == OUT_JSON ? NULL : &want;
    double t_open = gm_clock_mono_s();
    gm_collector *c = gm_cli_collector_open("query", &copt, &rc);
    if (!c)
        return rc;
    *open_s = gm_clock_mono_s() - t_open;
    if (!gm_cli_require_gpu("query", c, true)) {
        gm_collector_close(c);
        return GM_EXIT_NO_GPU;
    }
    *out = c;
    return -1;
}

/* The table's layout for this terminal: width, rows a redrawn frame may take, colours. */
static void set_layout(query_opts *o)
{
    int cols = gm_term_columns(STDOUT_FILENO);
    o->redraw = o->format == OUT_TABLE && o->loop_s > 0 && isatty(STDOUT_FILENO);
    o->width = cols > 80 ? (cols < 96 ? cols : 96) : 80;
    /* A redrawn frame that ran past the last line would scroll its top away: it keeps one
     * line below it for the cursor. */
    int lines = o->redraw ? gm_term_rows(STDOUT_FILENO) : 0;
    o->rows = lines > 1 ? lines - 1 : 0;
    o->style = gm_term_style_for(gm_term_use_color(o->color, STDOUT_FILENO));
}

/* What the output has printed so far, across --loop readings. */
typedef struct query_output {
    const int *fields; /* --query-gpu, for CSV */
    size_t nfields;
    bool header_done; /* the CSV header is out */
    bool first_frame; /* no table frame drawn yet */
} query_output;

/* Prints one reading as o asks; GM_EXIT_OK, else the exit status that ends the loop (the reason
 * printed). */
static int print_reading(const gm_snapshot *s, const query_opts *o, query_output *out)
{
    gm_error err = {0};
    unsigned sel[GM_MAX_GPUS];
    size_t nsel;
    if (!gm_cli_gpu_filter_resolve("query", &o->filter, s, sel, &nsel))
        return GM_EXIT_USAGE;
    if (o->format == OUT_TABLE && o->redraw) {
        /* Home (and a clear screen the first time), the frame, then clear below it. */
        fputs(out->first_frame ? "\033[H\033[2J" : "\033[H", stdout);
        print_table(s, o);
        fputs("\033[J", stdout);
        out->first_frame = false;
    } else if (o->format == OUT_TABLE)
        print_table(s, o);
    else if (o->format == OUT_JSON)
        print_json(s, o);
    else {
        unsigned flags = o->csv_flags | (out->header_done ? GM_SMI_NOHEADER : 0);
        if (gm_smi_format_csv(stdout, s, out->fields, out->nfields, flags,
                              o->filter.count ? sel : NULL, nsel, &err) < 0) {
            fprintf(stderr, "gpumon query: %s\n", err.msg);
            return GM_EXIT_FAILURE;
        }
        out->header_done = true;
    }
    fflush(stdout);
    return GM_EXIT_OK;
}

/* Closes the collector (NULL with --connect); with --profile, says where the time went. */
static void close_local(gm_collector *c, const query_opts *o, double open_s, double sample_s)
{
    gm_call_stat calls[256];
    size_t ncalls = o->profile ? gm_collector_call_stats(c, calls, 256) : 0;
    if (ncalls > 256)
        ncalls = 256;
    double t_close = gm_clock_mono_s();
    gm_collector_close(c);
    double close_s = gm_clock_mono_s() - t_close;
    if (o->profile) {
        qsort(calls, ncalls, sizeof *calls, by_wall_desc);
        print_profile(calls, ncalls, open_s, sample_s, close_s);
    }
}

static int read_options(int argc, char **argv, query_opts *o)
{
    int rc = gm_cli_parse(&gm_cli_query_command, argc, argv, o, NULL);
    if (rc != GM_CLI_PROCEED)
        return rc;
    if (o->list_fields) {
        list_fields();
        return GM_EXIT_OK;
    }
    if (o->query_gpu && !o->format_given)
        o->format = OUT_CSV;
    if (o->format == OUT_CSV && !o->query_gpu)
        o->query_gpu = DEFAULT_CSV_FIELDS;
    if (o->query_gpu && o->format != OUT_CSV) {
        fprintf(stderr, "gpumon query: --query-gpu prints CSV; use --format=csv\n");
        return GM_EXIT_USAGE;
    }
    if (o->connect && (o->src.provider || o->src.simulate || o->src.seed_arg || o->profile)) {
        fprintf(stderr, "gpumon query: --connect reads the daemon's GPUs; --provider, --simulate, "
                        "--seed and --profile are for reading them here\n");
        return GM_EXIT_USAGE;
    }
    if (!o->connect && o->token) {
        fprintf(stderr, "gpumon query: --token is for --connect\n");
        return GM_EXIT_USAGE;
    }
    o->token = gm_cli_remote_token(o->token);
    return GM_CLI_PROCEED;
}

int gm_cli_query(int argc, char **argv)
{
    query_opts o = {0};
    int rc = read_options(argc, argv, &o);
    if (rc != GM_CLI_PROCEED)
        return rc;

    int fields[GM_SMI_MAX_FIELDS];
    size_t nfields = 0;
    gm_error err = {0};
    if (o.query_gpu &&
        gm_smi_parse_fields(o.query_gpu, fields, GM_SMI_MAX_FIELDS, &nfields, &err) < 0) {
        fprintf(stderr, "gpumon query: %s\n", err.msg);
        return GM_EXIT_USAGE;
    }

    gm_collector *c = NULL;
    gm_cli_remote *remote = NULL;
    double open_s = 0, sample_s = 0;
    if (o.connect) {
        remote = gm_cli_remote_open(o.connect, o.token, 5, &err);
        if (!remote) {
            fprintf(stderr, "gpumon query: %s\n", err.msg);
            return err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
        }
    } else if ((rc = open_local(&o, fields, nfields, &c, &open_s)) >= 0) {
        return rc;
    }

    gm_snapshot *s = gm_snapshot_new();
    if (!s) {
        gm_collector_close(c);
        gm_cli_remote_close(remote);
        fprintf(stderr, "gpumon query: out of memory\n");
        return GM_EXIT_FAILURE;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rc = GM_EXIT_OK;
    set_layout(&o);
    query_output out = {.fields = fields, .nfields = nfields, .first_frame = true};
    double next = gm_clock_mono_s();
    do {
        double t_sample = gm_clock_mono_s();
        int src = remote ? gm_cli_remote_read(remote, s, &err) : gm_collector_sample(c, s, &err);
        sample_s += gm_clock_mono_s() - t_sample;
        if (src < 0) {
            fprintf(stderr, "gpumon query: %s\n", err.msg);
            rc = remote ? GM_EXIT_FAILURE : GM_EXIT_NO_GPU;
            if (o.loop_s == 0)
                break;
        } else if ((rc = print_reading(s, &o, &out)) != GM_EXIT_OK) {
            break;
        }
        next += o.loop_s;
        if (o.format == OUT_TABLE && o.loop_s > 0 && !o.redraw)
            printf("\n");
    } while (o.loop_s > 0 && gm_clock_sleep_until(next, &stop_requested));

    gm_snapshot_free(s);
    gm_cli_remote_close(remote);
    close_local(c, &o, open_s, sample_s);
    return rc;
}
