/* opt.h - declarative option tables: one table per command says each option's names, value,
 * range, help text and where it lands in the command's options struct. From the table come the
 * argv parser (getopt_long underneath), the --help text, gm_opt_set (one option by its long
 * name) and gm_opt_apply_json (a JSON object of options, as an API body carries them), so that
 * help, parsing, completion and validation cannot drift apart. Errors go into a gm_error; nothing
 * here prints (except the help renderer, to the FILE it is given) or exits. */
#ifndef GM_OPT_H
#define GM_OPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "gpumon.h"

typedef enum gm_opt_type {
    GM_OPT_END = 0,  /* ends a table */
    GM_OPT_FLAG,     /* bool, set to true (JSON: true or false) */
    GM_OPT_STRING,   /* const char *, pointing at the value (argv or the JSON document) */
    GM_OPT_UINT,     /* unsigned (4 bytes) or uint64_t (8 bytes) in [min, max] */
    GM_OPT_DOUBLE,   /* double in [min, max] */
    GM_OPT_DURATION, /* double seconds; the value is a duration (90, 0.5, 500ms, 1h30m) */
    GM_OPT_CALLBACK, /* set(table base, row, value) does the rest; value NULL for a flag */
    GM_OPT_INCLUDE,  /* splices another table whose base is this row's offset */
    GM_OPT_REMOVED,  /* a short letter given up: using it says what to type instead */
} gm_opt_type;

enum {
    GM_OPT_HIDDEN = 1 << 0,   /* parsed but not in --help, completion or docs */
    GM_OPT_REPEAT = 1 << 1,   /* may be given several times (each is passed to the callback) */
    GM_OPT_CLI_ONLY = 1 << 2, /* not settable by gm_opt_apply_json */
    GM_OPT_OPTARG = 1 << 3,   /* the value is optional: --loop, --loop=5, -l5, or -l 5 when the
                               * next word does not start with '-'; absent, def is used */
};

/* Where a value came from, for rows that record it (GM_OPT_SOURCE): the higher wins. */
typedef enum gm_opt_source {
    GM_OPT_FROM_DEFAULT = 0,
    GM_OPT_FROM_ENV,  /* its environment variable (gm_opt_apply_env) */
    GM_OPT_FROM_FLAG, /* argv, gm_opt_set or a JSON object */
} gm_opt_source;

struct gm_opt;
/* A callback's message starts with "--NAME" (its row's long name), as the built-in types' do:
 * gm_opt_apply_env puts the variable's name in its place. */
typedef int (*gm_opt_setter)(void *base, const struct gm_opt *row, const char *value,
                             gm_error *err);

typedef struct gm_opt {
    gm_opt_type type;
    const char *name;             /* long name without "--" */
    int letter;                   /* short letter, or 0 */
    const char *arg;              /* value name in help ("LIST"); NULL for a flag */
    const char *help;             /* one or two sentences, wrapped when rendered */
    size_t offset;                /* of the value in the options struct (offsetof) */
    size_t size;                  /* sizeof the value (GM_OPT_UINT: 4 or 8) */
    size_t given;                 /* offset + 1 of a bool set when the option is given, or 0 */
    double min, max;              /* range of UINT, DOUBLE and DURATION (seconds) */
    gm_opt_setter set;            /* GM_OPT_CALLBACK */
    const struct gm_opt *include; /* GM_OPT_INCLUDE */
    const char *group;            /* heading this row starts in --help (NULL: the current one) */
    unsigned flags;               /* GM_OPT_HIDDEN, ... */
    const char *aliases;          /* other long names, comma-separated ("gpus") */
    const char *def;              /* GM_OPT_OPTARG: the value when none is given */
    const char *values;   /* accepted words, space-separated, for completion ("auto always") */
    const char *complete; /* completion of the value: "file", "dir", "command" or NULL */
    /* The accepted words when a higher layer keeps their list (gm_provider_names: "a, b, c"):
     * "{words}" in help is replaced by them and completion offers them, as .values. */
    const char *(*words)(void);
    int code; /* the callback's own datum (e.g. which option of a shared parser) */
    /* Settings (the daemon's): the environment variable that sets the row when no flag did
     * ("GPU_MONITOR_LISTEN"), the setting's name in a configuration document (/api/config and
     * its "sources"), and where the struct records which of default, variable or flag set it
     * (offset + 1 of a gm_opt_source; rows with env must have one). */
    const char *env;
    const char *key;
    size_t source;
} gm_opt;

/* Where a row's value lands: T is the options struct, f its field. Rows are written with
 * designated initializers: {.type = GM_OPT_UINT, .name = "count", .letter = 'n', .arg = "N",
 * GM_OPT_AT(T, count), .min = 1, .max = 64, .help = "..."}. */
#define GM_OPT_AT(T, f)    .offset = offsetof(T, f), .size = sizeof(((T *)0)->f)
#define GM_OPT_GIVEN(T, f) .given = offsetof(T, f) + 1
/* The gm_opt_source that records where the row's value came from (f may index an array:
 * source[GM_SET_LISTEN]). Two rows may share one (--interval and --poll-interval). */
#define GM_OPT_SOURCE(T, f) .source = offsetof(T, f) + 1

/* Adding a setting of `gpumon serve` (server/config.c's table, gm_serve_options): give its field
 * in gm_serve_config a row there with .name, .arg, .help and .set (a callback that validates and
 * stores, its message starting "--NAME: "), plus .env ("GPU_MONITOR_..."), .key (its name in
 * /api/config) and GM_OPT_SOURCE(gm_serve_config, source[GM_SET_X]) with a new GM_SET_X in
 * config.h when a variable can set it; then `make man`. Flag, variable, --help, the man page,
 * completion, docs/CLI.md and docs/API.md's settings table all follow from that one row. The
 * order is flag > variable > default; a repeatable setting takes GM_OPT_REPEAT (each value is
 * passed to the callback) and its variable one comma-separated list, split by the callback. */

/* A command: its name ("query", "cluster select"), usage lines after "usage: gpumon "
 * ('\n'-separated), a description paragraph, the table and a verbatim epilogue. */
typedef struct gm_opt_command {
    const char *name;
    const char *usage;
    const char *description;
    const gm_opt *table;
    const char *epilogue;
    bool stop_at_operand; /* options end at the first operand (commands that run a child) */
} gm_opt_command;

#define GM_OPT_HELP_REQUESTED 1

/* Parses argv[1..] into opts with cmd's table: -h/--help returns GM_OPT_HELP_REQUESTED (the
 * caller prints gm_opt_help), an error returns GM_EINVAL with a message ("--seed needs a value",
 * "unknown option \"--x\"; did you mean \"--y\"?", "--simulate expects a whole number from 1 to
 * 64, got \"0\""), success GM_OK with *first_operand the index of the first operand in argv
 * (which is permuted so that operands come last, unless stop_at_operand). */
int gm_opt_parse(const gm_opt_command *cmd, int argc, char **argv, void *opts, int *first_operand,
                 gm_error *err);

/* Sets the option called name (long name, '_' read as '-', or an alias) from its text value
 * (NULL for a flag: true) as the parser would; GM_EINVAL with a message naming "--name" when
 * the name is unknown or the value invalid. The value must outlive opts for string rows. */
int gm_opt_set(const gm_opt *table, void *opts, const char *name, const char *value, gm_error *err);

/* Applies a JSON object whose keys are long names with '-' as '_' ("min_free_mb"): strings,
 * numbers and booleans as their text, arrays as comma-separated lists (or one value at a time
 * for a repeatable row). Text made here is kept in keep (a JSON array the caller owns and must
 * keep as long as opts); strings of obj are used in place. Errors name the field: "field
 * \"requests\": --requests expects ...", "unknown field \"x\"", "field \"help\" cannot be set
 * here". */
int gm_opt_apply_json(const gm_opt *table, void *opts, const json_t *obj, json_t *keep,
                      gm_error *err);

/* For each row of table with an environment variable that no flag set (its source is not
 * GM_OPT_FROM_FLAG): its value in envp (a NULL-terminated "NAME=value" array; NULL for none; an
 * empty value counts as unset) is set as the flag's would be, and recorded as GM_OPT_FROM_ENV. An
 * error names the variable: "GPU_MONITOR_LISTEN: ..." where the flag's said "--listen: ...". */
int gm_opt_apply_env(const gm_opt *table, void *opts, const char *const *envp, gm_error *err);

/* The value of NAME in envp, NULL when unset or empty. */
const char *gm_opt_env_get(const char *const *envp, const char *name);

/* Sets row's value in the struct at base from text, as the parser would (for callbacks that
 * parse a typed value and then do more). */
int gm_opt_set_row(const gm_opt *row, void *base, const char *value, gm_error *err);

/* Row r's help with "{words}" replaced by its words, into buf. Returns buf. */
const char *gm_opt_help_text(const gm_opt *r, char *buf, size_t len);

/* The words completion offers for r's value, space-separated (.values, or .words without its
 * commas), into buf; NULL when the row has none. */
const char *gm_opt_values(const gm_opt *r, char *buf, size_t len);

/* The help width: 80, or $COLUMNS when it is narrower (at least 40). */
int gm_opt_help_width(void);

/* Writes text wrapped into columns [indent, width), its first line from column at (the caller
 * has written that much), and a newline. '\n' in text breaks the line. */
void gm_opt_wrap(FILE *out, const char *text, int at, int indent, int width);

/* Writes cmd's --help to out, wrapped to width columns (no line wider). */
void gm_opt_help(const gm_opt_command *cmd, FILE *out, int width);

/* Calls fn for each row of table in order, includes spliced (GM_OPT_END, INCLUDE rows never
 * passed). Stops and returns fn's result when it is non-zero. */
int gm_opt_each(const gm_opt *table, int (*fn)(const gm_opt *row, void *ctx), void *ctx);

#endif
