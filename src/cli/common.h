/* common.h - pieces every CLI command shares: option parsing and its messages, provider
 * selection, opening the collector, GPU id lists and JSON output. */
#ifndef GM_CLI_COMMON_H
#define GM_CLI_COMMON_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/opt.h"
#include "gpumon.h"

/* Provider flags shared by commands that read GPUs. */
typedef struct gm_cli_source {
    const char *provider; /* --provider, else $GPU_MONITOR_TELEMETRY_PROVIDER, else auto */
    unsigned simulate;    /* --simulate N */
    uint64_t seed;        /* --seed */
    /* --simulate and --seed as given (NULL when not given), for passing them on. */
    const char *simulate_arg, *seed_arg;
} gm_cli_source;

/* True when getopt_long left no operands; otherwise prints "unexpected argument" naming the
 * first one and returns false. */
bool gm_cli_no_operands(const char *cmd, int argc, char **argv);

/* For a command that reads once (query, smi, snapshot): without --seed, simulated GPUs start
 * from the clock, so that two runs read differently as real GPUs would; their models and UUIDs
 * stay the same. */
void gm_cli_vary_simulation(const gm_cli_source *src, gm_collector_options *opt);

/* Parses a --simulate or --seed style unsigned number; false (with a message on stderr naming
 * flag) when value is not a number in [min, max]. */
bool gm_cli_parse_uint(const char *cmd, const char *flag, const char *value, unsigned long long min,
                       unsigned long long max, unsigned long long *out);

/* A decimal number in [min, max] (gm_parse_number: no hex, exponent or sign games), printing
 * "gpumon <cmd>: <flag> expects <what> from <min> to <max>, got ..." when arg is not one; what
 * is e.g. "a number" or "a utilization in %". */
bool gm_cli_parse_double(const char *cmd, const char *flag, const char *what, const char *arg,
                         double min, double max, double *out);

/* A duration (gm_parse_duration_ms: "90", "0.5", "500ms", "15m", "1h30m") in [min_s, max_s]
 * seconds into *out_s; false with a message naming flag otherwise. */
bool gm_cli_parse_duration(const char *cmd, const char *flag, const char *arg, double min_s,
                           double max_s, double *out_s);

/* Fills opt from src and the environment. Returns false (message printed) on an invalid
 * environment value. */
bool gm_cli_collector_options(const char *cmd, const gm_cli_source *src, gm_collector_options *opt);

/* Opens a collector with opt; on failure prints "gpumon <cmd>: <why>", sets *exit_code
 * (GM_EXIT_USAGE for an invalid provider name, else GM_EXIT_NO_GPU) and returns NULL. */
gm_collector *gm_cli_collector_open(const char *cmd, const gm_collector_options *opt,
                                    int *exit_code);

/* True when c reads GPUs through some provider. Otherwise prints "gpumon <cmd>: no GPU found;
 * tried:" and the collector's diagnosis, one provider per line, plus (with hint) how to try
 * simulated GPUs, and returns false. */
bool gm_cli_require_gpu(const char *cmd, gm_collector *c, bool hint);

/* A GPU selection from -i/--id: indices, UUIDs or PCI bus ids, comma-separated. */
typedef struct gm_cli_gpu_filter {
    bool all;
    size_t count;
    char items[GM_MAX_GPUS][GM_UUID_LEN];
} gm_cli_gpu_filter;

/* Parses list into f; false (message printed) when malformed or too long. */
bool gm_cli_parse_gpu_filter(const char *cmd, const char *list, gm_cli_gpu_filter *f);
/* True when g is selected by f. */
bool gm_cli_gpu_selected(const gm_cli_gpu_filter *f, const gm_gpu *g);
/* GM_OK when every item of f matches a GPU in s; else GM_ENOENT with "no GPU matches \"3\" (have
 * 2 GPUs)" in err. */
int gm_cli_gpu_filter_check(const gm_cli_gpu_filter *f, const gm_snapshot *s, gm_error *err);
/* Writes to out (GM_MAX_GPUS entries) the driver indices of s's GPUs that f selects, in
 * snapshot order, and their number to *n. False, with "no GPU matches ..." printed, when an
 * item of f matches no GPU in s. */
bool gm_cli_gpu_filter_resolve(const char *cmd, const gm_cli_gpu_filter *f, const gm_snapshot *s,
                               unsigned *out, size_t *n);

/* ---- option tables (base/opt.h) ---------------------------------------------------------- */

/* The --provider, --simulate and --seed rows over a gm_cli_source: include them with
 * {.type = GM_OPT_INCLUDE, .include = gm_cli_source_table, .offset = offsetof(T, src)}. */
extern const gm_opt gm_cli_source_table[];

/* Sets the gm_cli_gpu_filter at base + row->offset from a list of indices, UUIDs or bus ids. */
int gm_cli_set_gpu_filter(void *base, const gm_opt *row, const char *value, gm_error *err);

/* The -i/--id row, the one GPU selection of every command (f: a gm_cli_gpu_filter in T), with
 * further members (aliases, given, help) after it. */
#define GM_CLI_OPT_ID(T, f, ...)                                                              \
    {                                                                                         \
        .type = GM_OPT_CALLBACK, .name = "id", .letter = 'i', .arg = "LIST", GM_OPT_AT(T, f), \
        .set = gm_cli_set_gpu_filter, .complete = "gpus", __VA_ARGS__                         \
    }

/* The help text of -i/--id. */
#define GM_CLI_ID_HELP "Only these GPUs: indices, UUIDs or PCI bus ids, comma-separated."

/* ---- shared option groups: each row declared once, used by every command that takes it ----
 * The macros take the options struct T, the field, and further members (help, group, flags,
 * given) after them, where commands word the same option for their own case. */

/* --color WHEN (alias --colour): auto, always or never into the gm_color_mode field f. */
int gm_cli_set_color(void *base, const gm_opt *row, const char *value, gm_error *err);
#define GM_CLI_OPT_COLOR(T, f, ...)                                                              \
    {                                                                                            \
        .type = GM_OPT_CALLBACK, .name = "color", .arg = "WHEN", GM_OPT_AT(T, f),                \
        .set = gm_cli_set_color, .aliases = "colour", .values = "auto always never", __VA_ARGS__ \
    }

/* --format text|json into the bool field f (true: json), for commands that print text or
 * JSON. */
int gm_cli_set_text_json(void *base, const gm_opt *row, const char *value, gm_error *err);
#define GM_CLI_OPT_FORMAT_TEXT_JSON(T, f, ...)                                                 \
    {                                                                                          \
        .type = GM_OPT_CALLBACK, .name = "format", .arg = "FMT", GM_OPT_AT(T, f),              \
        .set = gm_cli_set_text_json, .values = "text json", .help = "text (default) or json.", \
        __VA_ARGS__                                                                            \
    }

/* --json, gpustat's spelling of --format json: sets the field f (a bool, or an int-sized enum)
 * to value. */
int gm_cli_set_json(void *base, const gm_opt *row, const char *value, gm_error *err);
#define GM_CLI_OPT_JSON(T, f, value, ...)                                                 \
    {                                                                                     \
        .type = GM_OPT_CALLBACK, .name = "json", GM_OPT_AT(T, f), .set = gm_cli_set_json, \
        .code = (value), .help = "Same as --format json.", __VA_ARGS__                    \
    }

/* -o/--output FILE into the string field f. */
#define GM_CLI_OPT_OUTPUT(T, f, ...)                                                            \
    {                                                                                           \
        .type = GM_OPT_STRING, .name = "output", .letter = 'o', .arg = "FILE", GM_OPT_AT(T, f), \
        .complete = "file", .flags = GM_OPT_CLI_ONLY, __VA_ARGS__                               \
    }

/* The database group: --db PATH (the string field f) and --no-db (the bool field f). */
#define GM_CLI_DB_HELP                                                              \
    "Database (default: $GPU_MONITOR_DB, else $XDG_STATE_HOME/gpumon/gpumon.db or " \
    "~/.local/state/gpumon/gpumon.db)."
#define GM_CLI_OPT_DB(T, f, ...)                                                                 \
    {                                                                                            \
        .type = GM_OPT_STRING, .name = "db", .arg = "PATH", GM_OPT_AT(T, f), .complete = "file", \
        .flags = GM_OPT_CLI_ONLY, __VA_ARGS__                                                    \
    }
/* --snapshot and --snapshot-window-ms, the same rows in record and bench: each command adds
 * how its value is kept (record: fields of its options; bench: its config's setter). */
#define GM_CLI_OPT_SNAPSHOT(...)                                                                \
    {                                                                                           \
        .name = "snapshot",                                                                     \
        .help = "Take a system snapshot before and after; the output gets both and their diff " \
                "(did the machine change during the run?).",                                    \
        __VA_ARGS__                                                                             \
    }
#define GM_CLI_OPT_SNAPSHOT_WINDOW(...)                                                \
    {                                                                                  \
        .name = "snapshot-window-ms", .arg = "MS", .min = 0, .max = 60000,             \
        .help = "Power averaging window of each snapshot (default 2000).", __VA_ARGS__ \
    }
#define GM_CLI_OPT_NO_DB(T, f, ...)                                        \
    {                                                                      \
        .type = GM_OPT_FLAG, .name = "no-db", GM_OPT_AT(T, f), __VA_ARGS__ \
    }

/* The -l row of record, run and bench: -l is --loop in query and smi, and using it here says
 * so. */
#define GM_CLI_OPT_L_REMOVED                                    \
    {                                                           \
        .type = GM_OPT_REMOVED, .name = "label", .letter = 'l', \
        .help = "-l is --loop, in query and smi"                \
    }

/* What gm_cli_parse and each command's read_options return when the command goes on with the
 * options read; any other value is the exit status to end with at once (GM_EXIT_OK after
 * --help, GM_EXIT_USAGE with the message printed). No exit status is negative. */
#define GM_CLI_PROCEED (-1)

/* Parses argv with cmd's table into opts: prints the help (returns GM_EXIT_OK) or the error as
 * "gpumon <cmd>: <message>" (returns GM_EXIT_USAGE); returns GM_CLI_PROCEED to go on, with
 * *first_operand (which may be NULL: then operands are an error) set. */
int gm_cli_parse(const gm_opt_command *cmd, int argc, char **argv, void *opts, int *first_operand);

/* Seconds for a progress line: "0.4 s" below 10 s, else whole seconds ("40 s"). */
void gm_cli_format_seconds(double s, char *buf, size_t len);

/* Writes j and a newline to f with reals at 12 significant digits, indented when pretty, else
 * on one line. Returns json_dumpf's result (0 ok, -1 failure). */
int gm_cli_write_json(FILE *f, const json_t *j, bool pretty);

#endif
