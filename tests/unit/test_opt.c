/* test_opt.c - base/opt: one table parses argv, sets one option by name, applies a JSON object
 * of options and renders --help within its width. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/opt.h"
#include "base/error.h"

typedef struct shared {
    const char *provider;
    unsigned simulate;
    bool simulate_given;
} shared;

typedef struct opts {
    bool quiet;
    const char *label;
    unsigned count;
    uint64_t seed;
    double util;
    double interval_s;
    double loop_s;
    char env[256]; /* repeatable: "A,B" */
    shared src;
} opts;

static int add_env(void *base, const gm_opt *row, const char *value, gm_error *err)
{
    opts *o = base;
    (void)row;
    if (!value || !*value)
        return gm_error_set(err, GM_EINVAL, "--env needs NAME or NAME=VALUE");
    size_t len = strlen(o->env);
    snprintf(o->env + len, sizeof o->env - len, "%s%s", len ? "," : "", value);
    return GM_OK;
}

static const gm_opt shared_table[] = {
    {.type = GM_OPT_STRING,
     .name = "provider",
     .arg = "NAME",
     GM_OPT_AT(shared, provider),
     .group = "Provider",
     .help = "nvml, nvidia-smi, sim or auto."},
    {.type = GM_OPT_UINT,
     .name = "simulate",
     .arg = "N",
     GM_OPT_AT(shared, simulate),
     .min = 1,
     .max = 64,
     GM_OPT_GIVEN(shared, simulate_given),
     .help = "Use N simulated GPUs."},
    {0},
};

static const gm_opt table[] = {
    {.type = GM_OPT_FLAG,
     .name = "quiet",
     .letter = 'q',
     GM_OPT_AT(opts, quiet),
     .help = "No progress lines."},
    {.type = GM_OPT_STRING,
     .name = "label",
     .arg = "TEXT",
     GM_OPT_AT(opts, label),
     .help = "A label for the session, shown in history and the dashboard's list of sessions, "
             "which is long enough to wrap twice over within eighty columns of text."},
    {.type = GM_OPT_UINT,
     .name = "count",
     .letter = 'n',
     .arg = "N",
     GM_OPT_AT(opts, count),
     .min = 1,
     .max = 64,
     .aliases = "gpus",
     .help = "How many GPUs."},
    {.type = GM_OPT_UINT,
     .name = "seed",
     .arg = "N",
     GM_OPT_AT(opts, seed),
     .min = 0,
     .max = 18446744073709551615.0,
     .help = "Seed."},
    {.type = GM_OPT_DOUBLE,
     .name = "max-util",
     .letter = 'u',
     .arg = "PCT",
     GM_OPT_AT(opts, util),
     .min = 0,
     .max = 100,
     .help = "Busiest a GPU may be."},
    {.type = GM_OPT_DURATION,
     .name = "interval",
     .arg = "SECONDS",
     GM_OPT_AT(opts, interval_s),
     .min = 0.01,
     .max = 3600,
     .help = "Sampling interval."},
    {.type = GM_OPT_DURATION,
     .name = "loop",
     .letter = 'l',
     .arg = "SECONDS",
     GM_OPT_AT(opts, loop_s),
     .min = 0.1,
     .max = 86400,
     .flags = GM_OPT_OPTARG,
     .def = "5",
     .help = "Repeat."},
    {.type = GM_OPT_CALLBACK,
     .name = "env",
     .letter = 'e',
     .arg = "NAME[=VALUE]",
     .set = add_env,
     .flags = GM_OPT_REPEAT,
     .help = "Pass a variable."},
    {.type = GM_OPT_FLAG, .name = "secret", GM_OPT_AT(opts, quiet), .flags = GM_OPT_HIDDEN},
    {.type = GM_OPT_STRING,
     .name = "output",
     .letter = 'o',
     .arg = "FILE",
     GM_OPT_AT(opts, label),
     .flags = GM_OPT_CLI_ONLY,
     .help = "Write here."},
    {.type = GM_OPT_REMOVED, .name = "interval", .letter = 'x', .help = "-x is gone"},
    {.type = GM_OPT_INCLUDE, .include = shared_table, .offset = offsetof(opts, src)},
    {0},
};

static const gm_opt_command cmd = {
    .name = "demo",
    .usage = "demo [options] [--] COMMAND...\ndemo --list",
    .description = "Runs a demonstration of every kind of option the table knows about, "
                   "wrapped to the width the help is rendered at.",
    .table = table,
    .epilogue = "Exit status: 0 ok.\n",
};

static int parse(opts *o, gm_error *err, int *first, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "demo";
    va_list ap;
    va_start(ap, first);
    for (char *a; (a = va_arg(ap, char *)) && argc < 31;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    memset(o, 0, sizeof *o);
    memset(err, 0, sizeof *err);
    return gm_opt_parse(&cmd, argc, argv, o, first, err);
}

static void test_parse_values(void **state)
{
    (void)state;
    opts o;
    gm_error err;
    int first = -1;
    assert_int_equal(parse(&o, &err, &first, "-q", "--label=x y", "-n", "3", "--seed",
                           "18446744073709551615", "-u", "50.5", "--interval", "500ms", "--env",
                           "A", "-eB=1", "--provider", "sim", "--simulate", "2", "op", NULL),
                     GM_OK);
    assert_true(o.quiet);
    assert_string_equal(o.label, "x y");
    assert_int_equal(o.count, 3);
    assert_true(o.seed == UINT64_MAX);
    assert_true(o.util == 50.5);
    assert_true(o.interval_s == 0.5);
    assert_string_equal(o.env, "A,B=1");
    assert_string_equal(o.src.provider, "sim");
    assert_int_equal(o.src.simulate, 2);
    assert_true(o.src.simulate_given);
    assert_int_equal(first, 18);
    /* An alias is the same option. */
    assert_int_equal(parse(&o, &err, &first, "--gpus", "4", NULL), GM_OK);
    assert_int_equal(o.count, 4);
    assert_int_equal(parse(&o, &err, &first, "-h", NULL), GM_OPT_HELP_REQUESTED);
    assert_int_equal(parse(&o, &err, &first, "--help", NULL), GM_OPT_HELP_REQUESTED);
}

static void test_optional_value(void **state)
{
    (void)state;
    opts o;
    gm_error err;
    int first;
    assert_int_equal(parse(&o, &err, &first, "-l", NULL), GM_OK);
    assert_true(o.loop_s == 5);
    assert_int_equal(parse(&o, &err, &first, "-l2", NULL), GM_OK);
    assert_true(o.loop_s == 2);
    assert_int_equal(parse(&o, &err, &first, "--loop=3", NULL), GM_OK);
    assert_true(o.loop_s == 3);
    assert_int_equal(parse(&o, &err, &first, "-l", "7", "-q", NULL), GM_OK);
    assert_true(o.loop_s == 7);
    assert_true(o.quiet);
    assert_int_equal(parse(&o, &err, &first, "--loop", "-q", NULL), GM_OK);
    assert_true(o.loop_s == 5);
    assert_true(o.quiet);
    assert_int_equal(parse(&o, &err, &first, "--loop", "0.05", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "--loop expects a duration from 0.1s to 86400s (such as 90, 0.5, "
                                 "500ms, 15m, 1h30m), got \"0.05\"");
}

static void test_parse_errors(void **state)
{
    (void)state;
    opts o;
    gm_error err;
    int first;
    assert_int_equal(parse(&o, &err, &first, "--simulate", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "--simulate needs a value");
    assert_int_equal(parse(&o, &err, &first, "-n", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "-n needs a value");
    assert_int_equal(parse(&o, &err, &first, "--lable", "x", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "unknown option \"--lable\"; did you mean \"--label\"?");
    assert_int_equal(parse(&o, &err, &first, "--bogus", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "unknown option \"--bogus\" (see gpumon demo --help)");
    assert_int_equal(parse(&o, &err, &first, "-Z", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "unknown option \"-Z\" (see gpumon demo --help)");
    assert_int_equal(parse(&o, &err, &first, "-x", NULL), GM_EINVAL);
    assert_string_equal(err.msg,
                        "-x is no longer short for --interval; use --interval (-x is gone)");
    assert_int_equal(parse(&o, &err, &first, "--quiet=yes", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "--quiet takes no value");
    assert_int_equal(parse(&o, &err, &first, "--s", NULL), GM_EINVAL);
    assert_non_null(strstr(err.msg, "is ambiguous; it could be"));
    assert_int_equal(parse(&o, &err, &first, "--simulate", "0", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "--simulate expects a whole number from 1 to 64, got \"0\"");
    assert_int_equal(parse(&o, &err, &first, "-u", "0x64", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "--max-util expects a number from 0 to 100, got \"0x64\"");
    assert_int_equal(parse(&o, &err, &first, "--gpus", "0", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "--count expects a whole number from 1 to 64, got \"0\"");
    assert_int_equal(parse(&o, &err, &first, "--env", "", NULL), GM_EINVAL);
    assert_string_equal(err.msg, "--env needs NAME or NAME=VALUE");
}

static void test_set_by_name(void **state)
{
    (void)state;
    opts o = {0};
    gm_error err = {0};
    assert_int_equal(gm_opt_set(table, &o, "max_util", "20", &err), GM_OK);
    assert_true(o.util == 20);
    assert_int_equal(gm_opt_set(table, &o, "simulate", "3", &err), GM_OK);
    assert_int_equal(o.src.simulate, 3);
    assert_int_equal(gm_opt_set(table, &o, "quiet", NULL, &err), GM_OK);
    assert_true(o.quiet);
    assert_int_equal(gm_opt_set(table, &o, "quiet", "off", &err), GM_OK);
    assert_false(o.quiet);
    assert_int_equal(gm_opt_set(table, &o, "count", "65", &err), GM_EINVAL);
    assert_string_equal(err.msg, "--count expects a whole number from 1 to 64, got \"65\"");
    assert_int_equal(gm_opt_set(table, &o, "cuont", "2", &err), GM_EINVAL);
    assert_string_equal(err.msg, "unknown option \"cuont\"; did you mean \"count\"?");
}

static void test_apply_json(void **state)
{
    (void)state;
    opts o = {0};
    gm_error err = {0};
    json_t *keep = json_array();
    json_error_t jerr;
    json_t *body = json_loads("{\"count\": 2, \"max_util\": 12.5, \"interval\": \"250ms\", "
                              "\"label\": \"run a\", \"quiet\": true, \"seed\": 7, "
                              "\"env\": [\"A\", \"B=2\"], \"simulate\": 4, \"provider\": null}",
                              0, &jerr);
    assert_non_null(body);
    assert_int_equal(gm_opt_apply_json(table, &o, body, keep, &err), GM_OK);
    assert_int_equal(o.count, 2);
    assert_true(o.util == 12.5);
    assert_true(o.interval_s == 0.25);
    assert_string_equal(o.label, "run a");
    assert_true(o.quiet);
    assert_true(o.seed == 7);
    assert_string_equal(o.env, "A,B=2");
    assert_int_equal(o.src.simulate, 4);
    assert_null(o.src.provider);
    json_decref(body);

    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"{\"count\": 0}",
         "field \"count\": --count expects a whole number from 1 to 64, got \"0\""},
        {"{\"count\": 1.5}",
         "field \"count\": --count expects a whole number from 1 to 64, got \"1.5\""},
        {"{\"count\": \"two\"}",
         "field \"count\": --count expects a whole number from 1 to 64, got \"two\""},
        {"{\"max_util\": true}",
         "field \"max_util\": --max-util expects a number from 0 to 100, got \"true\""},
        {"{\"quiet\": 1}", "field \"quiet\": expects true or false"},
        {"{\"label\": {\"a\": 1}}", "field \"label\": expects a string, a number or a list"},
        {"{\"cuont\": 2}", "unknown field \"cuont\"; did you mean \"count\"?"},
        {"{\"max-util\": 2}", "unknown field \"max-util\"; did you mean \"max_util\"?"},
        {"{\"secret\": true}", "unknown field \"secret\""},
        {"{\"output\": \"/etc/passwd\"}", "field \"output\" cannot be set here"},
        {"{\"env\": [\"\"]}", "field \"env\": --env needs NAME or NAME=VALUE"},
        {"{\"env\": [[1]]}", "field \"env\": expects a list of values"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&o, 0, sizeof o);
        body = json_loads(bad[i].body, 0, &jerr);
        assert_non_null(body);
        assert_int_equal(gm_opt_apply_json(table, &o, body, keep, &err), GM_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
        json_decref(body);
    }
    /* Not an object. */
    body = json_array();
    assert_int_equal(gm_opt_apply_json(table, &o, body, keep, &err), GM_EINVAL);
    json_decref(body);
    json_decref(keep);
}

static void test_list_is_joined(void **state)
{
    (void)state;
    opts o = {0};
    gm_error err = {0};
    json_t *keep = json_array();
    json_error_t jerr;
    json_t *body = json_loads("{\"label\": [0, \"GPU-1\", 2]}", 0, &jerr);
    assert_int_equal(gm_opt_apply_json(table, &o, body, keep, &err), GM_OK);
    assert_string_equal(o.label, "0,GPU-1,2");
    json_decref(body);
    json_decref(keep); /* o.label pointed into keep: gone now, as documented */
}

static void test_help_fits(void **state)
{
    (void)state;
    for (int width = 50; width <= 80; width += 30) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        gm_opt_help(&cmd, f, width);
        fclose(f);
        assert_non_null(strstr(buf, "usage: gpumon demo [options] [--] COMMAND...\n"
                                    "       gpumon demo --list\n"));

        assert_non_null(strstr(buf, "  -n, --count, --gpus N"));
        assert_non_null(strstr(buf, "  -l, --loop[=SECONDS]"));
        assert_non_null(strstr(buf, "\nProvider:\n      --provider NAME"));
        assert_non_null(strstr(buf, "  -h, --help"));
        assert_null(strstr(buf, "secret"));
        assert_non_null(strstr(buf, "Exit status: 0 ok.\n"));
        for (char *line = buf; *line;) {
            size_t n = strcspn(line, "\n");
            if (n > (size_t)width)
                fail_msg("line over %d columns: %.*s", width, (int)n, line);
            line += n + (line[n] == '\n');
        }
        free(buf);
    }
}

static int count(const gm_opt *row, void *ctx)
{
    (void)row;
    (*(size_t *)ctx)++;
    return 0;
}

static void test_each(void **state)
{
    (void)state;
    size_t n = 0;
    assert_int_equal(gm_opt_each(table, count, &n), GM_OK);
    assert_int_equal(n, 13); /* 11 rows of table (INCLUDE not passed) + 2 of shared */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_values), cmocka_unit_test(test_optional_value),
        cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_set_by_name),
        cmocka_unit_test(test_apply_json),   cmocka_unit_test(test_list_is_joined),
        cmocka_unit_test(test_help_fits),    cmocka_unit_test(test_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
