/* opt.c - option tables: argv through getopt_long, one option by name, JSON objects, --help. */
#include "base/opt.h"

#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "base/suggest.h"
#include "base/error.h"

/* A table with its includes spliced: each row with the offset its table starts at. */
#define MAX_ROWS 256

typedef struct flat_row {
    const gm_opt *row;
    size_t base;
} flat_row;

typedef struct flat {
    flat_row rows[MAX_ROWS];
    size_t n;
} flat;

static int flatten(const gm_opt *t, size_t base, flat *f, gm_error *err)
{
    for (; t && t->type != GM_OPT_END; t++) {
        if (t->type == GM_OPT_INCLUDE) {
            if (flatten(t->include, base + t->offset, f, err) < 0)
                return GM_EINVAL;
            continue;
        }
        if (f->n >= MAX_ROWS)
            return gm_error_set(err, GM_EINVAL, "option table has more than %d rows", MAX_ROWS);
        f->rows[f->n++] = (flat_row){t, base};
    }
    return GM_OK;
}

int gm_opt_each(const gm_opt *table, int (*fn)(const gm_opt *row, void *ctx), void *ctx)
{
    flat *f = calloc(1, sizeof *f);
    if (!f)
        return GM_ENOMEM;
    int rc = flatten(table, 0, f, NULL);
    for (size_t i = 0; rc == GM_OK && i < f->n; i++)
        rc = fn(f->rows[i].row, ctx);
    free(f);
    return rc;
}

/* True when name (length len) is the row's long name or one of its aliases. */
static bool names_row(const gm_opt *r, const char *name, size_t len)
{
    if (r->name && strlen(r->name) == len && strncmp(r->name, name, len) == 0)
        return true;
    for (const char *a = r->aliases; a && *a;) {
        const char *comma = strchr(a, ',');
        size_t alen = comma ? (size_t)(comma - a) : strlen(a);
        if (alen == len && strncmp(a, name, len) == 0)
            return true;
        a = comma ? comma + 1 : NULL;
    }
    return false;
}

static const flat_row *find_name(const flat *f, const char *name, size_t len)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->rows[i].row->type != GM_OPT_REMOVED && names_row(f->rows[i].row, name, len))
            return &f->rows[i];
    return NULL;
}

/* Sets r's value in the struct at base + r->offset from text (NULL: a flag given). */
static int set_row(const gm_opt *r, void *base, const char *value, gm_error *err)
{
    return gm_opt_set_row(r, base, value, err);
}

int gm_opt_set_row(const gm_opt *r, void *base, const char *value, gm_error *err)
{
    char *p = (char *)base + r->offset;
    const char *name = r->name;
    switch (r->type) {
    case GM_OPT_FLAG: {
        bool b = true;
        if (value && gm_parse_bool(value, &b) != GM_OK)
            return gm_error_set(err, GM_EINVAL, "--%s expects true or false, got \"%s\"", name,
                                value);
        *(bool *)p = b;
        break;
    }
    case GM_OPT_STRING:
        if (!value)
            return gm_error_set(err, GM_EINVAL, "--%s needs a value", name);
        *(const char **)p = value;
        break;
    case GM_OPT_UINT: {
        unsigned long long v;
        unsigned long long lo = (unsigned long long)r->min;
        unsigned long long hi =
            r->max >= 18446744073709551615.0 ? UINT64_MAX : (unsigned long long)r->max;
        if (r->size == 4 && hi > UINT32_MAX)
            hi = UINT32_MAX;
        if (gm_parse_uint(value, lo, hi, &v) != GM_OK)
            return gm_error_set(err, GM_EINVAL,
                                "--%s expects a whole number from %llu to %llu, got \"%s\"", name,
                                lo, hi, value ? value : "");
        if (r->size == 4)
            *(unsigned *)p = (unsigned)v;
        else
            *(uint64_t *)p = v;
        break;
    }
    case GM_OPT_DOUBLE:
        if (gm_parse_number(value, r->min, r->max, (double *)p) != GM_OK)
            return gm_error_set(err, GM_EINVAL,
                                "--%s expects a number from %.15g to %.15g, got \"%s\"", name,
                                r->min, r->max, value ? value : "");
        break;
    case GM_OPT_DURATION: {
        int64_t ms;
        if (gm_parse_duration_ms(value, (int64_t)ceil(r->min * 1000), (int64_t)floor(r->max * 1000),
                                 &ms) != GM_OK)
            return gm_error_set(err, GM_EINVAL,
                                "--%s expects a duration from %.15gs to %.15gs (such as 90, 0.5, "
                                "500ms, 15m, 1h30m), got \"%s\"",
                                name, r->min, r->max, value ? value : "");
        *(double *)p = (double)ms / 1000.0;
        break;
    }
    case GM_OPT_CALLBACK: {
        int rc = r->set(base, r, value, err);
        if (rc < 0)
            return rc;
        break;
    }
    default:
        return gm_error_set(err, GM_EINVAL, "--%s cannot be set", name);
    }
    if (r->given)
        *((bool *)((char *)base + r->given - 1)) = true;
    if (r->source)
        *((gm_opt_source *)((char *)base + r->source - 1)) = GM_OPT_FROM_FLAG;
    return GM_OK;
}

const char *gm_opt_env_get(const char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return (*envp)[n + 1] ? *envp + n + 1 : NULL;
    return NULL;
}

/* Row r from its variable's value v: the flag's message with the variable's name for "--NAME". */
static int set_from_env(const gm_opt *r, void *base, const char *v, gm_error *err)
{
    gm_error e = {0};
    int rc = gm_opt_set_row(r, base, v, &e);
    if (rc < 0) {
        size_t n = strlen(r->name);
        char after = strncmp(e.msg, "--", 2) == 0 && strncmp(e.msg + 2, r->name, n) == 0
                         ? e.msg[2 + n]
                         : '-';
        if (after == '\0' || after == ' ' || after == ':')
            return gm_error_set(err, rc, "%s%s", r->env, e.msg + 2 + n);
        return gm_error_set(err, rc, "%s: %s", r->env, e.msg); /* a message naming no flag */
    }
    *((gm_opt_source *)((char *)base + r->source - 1)) = GM_OPT_FROM_ENV;
    return GM_OK;
}

int gm_opt_apply_env(const gm_opt *table, void *opts, const char *const *envp, gm_error *err)
{
    flat *f = calloc(1, sizeof *f);
    if (!f)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = flatten(table, 0, f, err);
    for (size_t i = 0; rc == GM_OK && i < f->n; i++) {
        const gm_opt *r = f->rows[i].row;
        char *base = (char *)opts + f->rows[i].base;
        if (!r->env || r->type == GM_OPT_REMOVED)
            continue;
        if (!r->source) {
            rc = gm_error_set(err, GM_EINVAL, "--%s has a variable but no source", r->name);
            break;
        }
        if (*(gm_opt_source *)(base + r->source - 1) == GM_OPT_FROM_FLAG)
            continue;
        const char *v = gm_opt_env_get(envp, r->env);
        if (v)
            rc = set_from_env(r, base, v, err);
    }
    free(f);
    return rc;
}

/* The value of an optional-value row: attached, the next word, or the row's default. */
static const char *optional_value(const gm_opt *r, int argc, char **argv)
{
    if (optarg)
        return optarg;
    if (optind < argc && argv[optind][0] != '-')
        return argv[optind++];
    return r->def;
}

/* getopt_long's codes: 256 + the row's index for long names; the letter for short ones. */
#define CODE_BASE 256
#define CODE_HELP (CODE_BASE + MAX_ROWS)

/* The long option that arg ("--name" or "--name=value") names, exactly or as the one option it
 * abbreviates; *ambiguous when it abbreviates several. */
static const struct option *find_long(const struct option *longopts, const char *arg,
                                      bool *ambiguous)
{
    *ambiguous = false;
    if (strncmp(arg, "--", 2) != 0)
        return NULL;
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option *hit = NULL;
    size_t hits = 0;
    for (const struct option *o = longopts; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len)
            return o;
        /* Two names of one option (--gpus, --id) are not an ambiguity. */
        if (!hit || hit->val != o->val || hit->has_arg != o->has_arg)
            hits++;
        if (!hit)
            hit = o;
    }
    *ambiguous = hits > 1;
    return hits == 1 ? hit : NULL;
}

/* getopt_long's ':' or '?' as a message, from optind and optopt. */
static int getopt_error(const gm_opt_command *cmd, const flat *f, int c, char **argv,
                        const struct option *longopts, gm_error *err)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    /* optopt is 0 for an unknown or ambiguous long option, else the option's letter or code;
     * a short option's error may come from inside a cluster such as -qx, where argv[optind - 1]
     * is still the argument before it. */
    bool dashdash = strncmp(arg, "--", 2) == 0 && arg[2];
    bool ambiguous = false;
    const struct option *o = dashdash ? find_long(longopts, arg, &ambiguous) : NULL;
    const char *eq = dashdash ? strchr(arg, '=') : NULL;
    bool is_long = dashdash && (optopt == 0 || c == ':' || (eq && o && o->val == optopt));
    int nlen = eq ? (int)(eq - arg) : (int)strlen(arg);
    if (c == ':') {
        if (is_long)
            return gm_error_set(err, GM_EINVAL, "%.*s needs a value", nlen, arg);
        return gm_error_set(err, GM_EINVAL, "-%c needs a value", optopt);
    }
    if (is_long && o && eq && o->has_arg == no_argument)
        return gm_error_set(err, GM_EINVAL, "--%s takes no value", o->name);
    if (is_long && ambiguous) {
        char list[400] = "";
        size_t used = 0;
        for (const struct option *x = longopts; x->name; x++)
            if (strncmp(x->name, arg + 2, (size_t)nlen - 2) == 0 && used < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s--%s",
                                         used ? ", " : "", x->name);
        return gm_error_set(err, GM_EINVAL, "option \"%.*s\" is ambiguous; it could be %s", nlen,
                            arg, list);
    }
    if (!is_long && optopt > 0 && optopt < 128) {
        for (size_t i = 0; i < f->n; i++) {
            const gm_opt *r = f->rows[i].row;
            if (r->type == GM_OPT_REMOVED && r->letter == optopt)
                return gm_error_set(err, GM_EINVAL,
                                    "-%c is no longer short for --%s; use --%s (%s)", optopt,
                                    r->name, r->name, r->help);
        }
        return gm_error_set(err, GM_EINVAL, "unknown option \"-%c\" (see gpumon %s --help)", optopt,
                            cmd->name);
    }
    const char *guess = NULL;
    char word[GM_SUGGEST_MAX_LEN + 1];
    if (is_long && nlen - 2 <= GM_SUGGEST_MAX_LEN) {
        const char *names[MAX_ROWS * 2];
        size_t n = 0;
        for (const struct option *x = longopts; x->name && n < MAX_ROWS * 2; x++)
            names[n++] = x->name;
        snprintf(word, sizeof word, "%.*s", nlen - 2, arg + 2);
        guess = gm_suggest(word, names, n);
    }
    if (guess)
        return gm_error_set(err, GM_EINVAL, "unknown option \"%.*s\"; did you mean \"--%s\"?", nlen,
                            arg, guess);
    return gm_error_set(err, GM_EINVAL, "unknown option \"%.*s\" (see gpumon %s --help)", nlen, arg,
                        cmd->name);
}

static int arg_kind(const gm_opt *r)
{
    if (r->flags & GM_OPT_OPTARG)
        return optional_argument;
    return r->arg ? required_argument : no_argument;
}

int gm_opt_parse(const gm_opt_command *cmd, int argc, char **argv, void *opts, int *first_operand,
                 gm_error *err)
{
    flat *f = calloc(1, sizeof *f);
    struct option *longopts = calloc(MAX_ROWS * 3 + 2, sizeof *longopts);
    char *shorts = calloc(MAX_ROWS * 3 + 8, 1);
    int rc = GM_OK;
    if (!f || !longopts || !shorts) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = flatten(cmd->table, 0, f, err)) < 0)
        goto out;
    size_t nl = 0, ns = 0;
    shorts[ns++] = cmd->stop_at_operand ? '+' : ':';
    if (cmd->stop_at_operand)
        shorts[ns++] = ':';
    bool has_h = false, has_help = false;
    for (size_t i = 0; i < f->n; i++) {
        const gm_opt *r = f->rows[i].row;
        if (r->type == GM_OPT_REMOVED)
            continue;
        int kind = arg_kind(r), code = CODE_BASE + (int)i;
        if (r->name)
            longopts[nl++] = (struct option){r->name, kind, NULL, code};
        has_help |= r->name && strcmp(r->name, "help") == 0;
        for (const char *a = r->aliases; a && *a;) {
            const char *comma = strchr(a, ',');
            /* getopt_long keeps the pointer: aliases are split in place of a copy. */
            size_t alen = comma ? (size_t)(comma - a) : strlen(a);
            char *name = strndup(a, alen);
            if (!name) {
                rc = gm_error_set(err, GM_ENOMEM, "out of memory");
                goto out;
            }
            longopts[nl++] = (struct option){name, kind, NULL, code};
            a = comma ? comma + 1 : NULL;
        }
        if (r->letter) {
            has_h |= r->letter == 'h';
            shorts[ns++] = (char)r->letter;
            if (kind != no_argument)
                shorts[ns++] = ':';
            if (kind == optional_argument)
                shorts[ns++] = ':';
        }
    }
    if (!has_help)
        longopts[nl++] = (struct option){"help", no_argument, NULL, CODE_HELP};
    if (!has_h)
        shorts[ns++] = 'h';
    shorts[ns] = '\0';

    optind = 0; /* GNU getopt: start over, as for a new argv */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        if (c == CODE_HELP || (c == 'h' && !has_h)) {
            rc = GM_OPT_HELP_REQUESTED;
            goto out;
        }
        if (c == ':' || c == '?') {
            rc = getopt_error(cmd, f, c, argv, longopts, err);
            goto out;
        }
        const flat_row *fr = NULL;
        if (c >= CODE_BASE && c < CODE_BASE + (int)f->n)
            fr = &f->rows[c - CODE_BASE];
        else
            for (size_t i = 0; i < f->n && !fr; i++)
                if (f->rows[i].row->letter == c && f->rows[i].row->type != GM_OPT_REMOVED)
                    fr = &f->rows[i];
        if (!fr) {
            rc = gm_error_set(err, GM_EINVAL, "unknown option (see gpumon %s --help)", cmd->name);
            goto out;
        }
        const char *value = optarg;
        if (fr->row->flags & GM_OPT_OPTARG)
            value = optional_value(fr->row, argc, argv);
        if ((rc = set_row(fr->row, (char *)opts + fr->base, value, err)) < 0)
            goto out;
    }
    if (first_operand)
        *first_operand = optind;
out:
    if (longopts)
        for (size_t i = 0; longopts[i].name; i++)
            if (longopts[i].val >= CODE_BASE && longopts[i].val < CODE_HELP &&
                longopts[i].name != f->rows[longopts[i].val - CODE_BASE].row->name)
                free((char *)longopts[i].name);
    free(longopts);
    free(shorts);
    free(f);
    return rc;
}

/* The row called name ('_' read as '-'), or NULL. */
static const flat_row *lookup(const flat *f, const char *name)
{
    char buf[128];
    size_t len = strlen(name);
    if (len >= sizeof buf)
        return NULL;
    for (size_t i = 0; i <= len; i++)
        buf[i] = name[i] == '_' ? '-' : name[i];
    return find_name(f, buf, len);
}

/* "unknown option "x"" or "unknown field "x"", with the likely name. */
static int unknown(const flat *f, const char *what, const char *name, bool underscores,
                   gm_error *err)
{
    const char *names[MAX_ROWS];
    char conv[MAX_ROWS][64];
    size_t n = 0;
    for (size_t i = 0; i < f->n && n < MAX_ROWS; i++) {
        const gm_opt *r = f->rows[i].row;
        if (r->type == GM_OPT_REMOVED || (r->flags & GM_OPT_HIDDEN))
            continue;
        snprintf(conv[n], sizeof conv[n], "%s", r->name);
        for (char *p = conv[n]; underscores && *p; p++)
            if (*p == '-')
                *p = '_';
        names[n] = conv[n];
        n++;
    }
    const char *guess = strlen(name) <= GM_SUGGEST_MAX_LEN ? gm_suggest(name, names, n) : NULL;
    if (guess)
        return gm_error_set(err, GM_EINVAL, "unknown %s \"%s\"; did you mean \"%s\"?", what, name,
                            guess);
    return gm_error_set(err, GM_EINVAL, "unknown %s \"%s\"", what, name);
}

int gm_opt_set(const gm_opt *table, void *opts, const char *name, const char *value, gm_error *err)
{
    flat *f = calloc(1, sizeof *f);
    if (!f)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = flatten(table, 0, f, err);
    if (rc == GM_OK) {
        const flat_row *fr = lookup(f, name);
        if (!fr)
            rc = unknown(f, "option", name, false, err);
        else
            rc = set_row(fr->row, (char *)opts + fr->base, value, err);
    }
    free(f);
    return rc;
}

/* The text of a JSON scalar, kept in keep when made here; NULL for other types. */
static const char *json_text(const json_t *v, json_t *keep)
{
    char buf[64];
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "true" : "false");
    else
        return NULL;
    json_t *s = json_string(buf);
    if (!s || json_array_append_new(keep, s) < 0)
        return NULL;
    return json_string_value(s);
}

/* One JSON value into row fr. */
static int apply_value(const flat_row *fr, void *opts, const json_t *v, json_t *keep, gm_error *err)
{
    const gm_opt *r = fr->row;
    void *base = (char *)opts + fr->base;
    if (r->type == GM_OPT_FLAG) {
        if (!json_is_boolean(v))
            return gm_error_set(err, GM_EINVAL, "expects true or false");
        int rc = set_row(r, base, json_is_true(v) ? "true" : "false", err);
        return rc;
    }
    if (json_is_array(v)) {
        if (r->flags & GM_OPT_REPEAT) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e)
            {
                const char *t = json_is_array(e) || json_is_object(e) ? NULL : json_text(e, keep);
                if (!t)
                    return gm_error_set(err, GM_EINVAL, "expects a list of values");
                int rc = set_row(r, base, t, err);
                if (rc < 0)
                    return rc;
            }
            return GM_OK;
        }
        /* A list flag takes "a,b,c". */
        size_t i, len = 0;
        json_t *e;
        json_array_foreach(v, i, e)
        {
            const char *t = json_is_array(e) || json_is_object(e) ? NULL : json_text(e, keep);
            if (!t)
                return gm_error_set(err, GM_EINVAL, "expects a list of values");
            len += strlen(t) + 1;
        }
        char *joined = calloc(1, len + 1);
        if (!joined)
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        json_array_foreach(v, i, e)
        {
            if (i)
                strcat(joined, ",");
            strcat(joined, json_text(e, keep));
        }
        json_t *s = json_string(joined);
        free(joined);
        if (!s || json_array_append_new(keep, s) < 0)
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        return set_row(r, base, json_string_value(s), err);
    }
    const char *t = json_is_object(v) ? NULL : json_text(v, keep);
    if (!t)
        return gm_error_set(err, GM_EINVAL, "expects a string, a number or a list");
    return set_row(r, base, t, err);
}

int gm_opt_apply_json(const gm_opt *table, void *opts, const json_t *obj, json_t *keep,
                      gm_error *err)
{
    if (!json_is_object(obj))
        return gm_error_set(err, GM_EINVAL, "expected a JSON object of options");
    if (!json_is_array(keep))
        return gm_error_set(err, GM_EINVAL, "no array to keep converted values in");
    flat *f = calloc(1, sizeof *f);
    if (!f)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    int rc = flatten(table, 0, f, err);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (rc < 0)
            break;
        if (strchr(key, '-')) { /* the JSON spelling is the one with underscores */
            rc = unknown(f, "field", key, true, err);
            break;
        }
        const flat_row *fr = lookup(f, key);
        if (!fr || (fr->row->flags & GM_OPT_HIDDEN)) {
            rc = unknown(f, "field", key, true, err);
            break;
        }
        if (fr->row->flags & GM_OPT_CLI_ONLY) {
            rc = gm_error_set(err, GM_EINVAL, "field \"%s\" cannot be set here", key);
            break;
        }
        if (json_is_null(v))
            continue; /* null: not given */
        gm_error e = {0};
        if ((rc = apply_value(fr, opts, v, keep, &e)) < 0)
            gm_error_set(err, rc, "field \"%s\": %s", key, e.msg);
    }
    free(f);
    return rc;
}

const char *gm_opt_help_text(const gm_opt *r, char *buf, size_t len)
{
    const char *help = r->help ? r->help : "";
    const char *at = r->words ? strstr(help, "{words}") : NULL;
    if (at)
        snprintf(buf, len, "%.*s%s%s", (int)(at - help), help, r->words(), at + strlen("{words}"));
    else
        snprintf(buf, len, "%s", help);
    return buf;
}

const char *gm_opt_values(const gm_opt *r, char *buf, size_t len)
{
    if (r->values) {
        snprintf(buf, len, "%s", r->values);
        return buf;
    }
    if (!r->words || !len)
        return NULL;
    size_t n = 0;
    for (const char *p = r->words(); *p && n + 1 < len; p++)
        if (*p != ',')
            buf[n++] = *p;
    buf[n] = '\0';
    return buf;
}

int gm_opt_help_width(void)
{
    const char *env = getenv("COLUMNS");
    unsigned long long cols;
    if (env && gm_parse_uint(env, 40, 80, &cols) == GM_OK)
        return (int)cols;
    return 80;
}

/* Writes text wrapped into columns [indent, width), the first line starting at column at (the
 * caller has written that much). '\n' in text breaks the line. */
void gm_opt_wrap(FILE *out, const char *text, int at, int indent, int width)
{
    int col = at;
    bool line_empty = true;
    if (at < indent) {
        fprintf(out, "%*s", indent - at, "");
        col = indent;
    }
    for (const char *p = text; *p;) {
        if (*p == '\n') {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            line_empty = true;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t wlen = strcspn(p, " \n");
        /* A word wider than the line (a list such as a,b,c) breaks after a comma. */
        if (indent + (int)wlen > width) {
            int room = width - col - (line_empty ? 0 : 1);
            size_t cut = 0;
            for (size_t i = 0; i < wlen && (int)i < room; i++)
                if (p[i] == ',')
                    cut = i + 1;
            if (!cut) {
                for (size_t i = 0; i < wlen && (int)i < width - indent; i++)
                    if (p[i] == ',')
                        cut = i + 1;
                if (!line_empty) {
                    fprintf(out, "\n%*s", indent, "");
                    col = indent;
                    line_empty = true;
                }
            }
            if (cut) {
                if (!line_empty) {
                    fputc(' ', out);
                    col++;
                }
                fwrite(p, 1, cut, out);
                col += (int)cut;
                p += cut;
                fprintf(out, "\n%*s", indent, "");
                col = indent;
                line_empty = true;
                continue;
            }
        }
        if (!line_empty && col + 1 + (int)wlen > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            line_empty = true;
        }
        if (!line_empty) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, wlen, out);
        col += (int)wlen;
        line_empty = false;
        p += wlen;
    }
    fputc('\n', out);
}

#define HELP_COL 26

void gm_opt_help(const gm_opt_command *cmd, FILE *out, int width)
{
    if (width <= 0 || width > 80)
        width = 80;
    const char *u = cmd->usage;
    bool first = true;
    while (u && *u) {
        size_t len = strcspn(u, "\n");
        fprintf(out, "%s%.*s\n", first ? "usage: gpumon " : "       gpumon ", (int)len, u);
        first = false;
        u += len;
        if (*u)
            u++;
    }
    if (cmd->description) {
        fputc('\n', out);
        gm_opt_wrap(out, cmd->description, 0, 0, width);
    }
    flat *f = calloc(1, sizeof *f);
    if (!f || flatten(cmd->table, 0, f, NULL) < 0) {
        free(f);
        return;
    }
    const char *group = NULL;
    bool any = false;
    for (size_t i = 0; i < f->n; i++) {
        const gm_opt *r = f->rows[i].row;
        if (r->type == GM_OPT_REMOVED || (r->flags & GM_OPT_HIDDEN))
            continue;
        if (!any || (r->group && (!group || strcmp(r->group, group) != 0))) {
            group = r->group ? r->group : "Options";
            fprintf(out, "\n%s:\n", group);
            any = true;
        }
        char label[256];
        int n;
        if (r->letter)
            n = snprintf(label, sizeof label, "  -%c, --%s", r->letter, r->name);
        else
            n = snprintf(label, sizeof label, "      --%s", r->name);
        for (const char *a = r->aliases; a && *a && n < 200;) {
            size_t alen = strcspn(a, ",");
            n += snprintf(label + n, sizeof label - (size_t)n, ", --%.*s", (int)alen, a);
            a += alen + (a[alen] == ',');
        }
        if (r->arg && (r->flags & GM_OPT_OPTARG))
            n += snprintf(label + n, sizeof label - (size_t)n, "[=%s]", r->arg);
        else if (r->arg)
            n += snprintf(label + n, sizeof label - (size_t)n, " %s", r->arg);
        fputs(label, out);
        char text[1024];
        const char *help = gm_opt_help_text(r, text, sizeof text);
        if (n + 2 > HELP_COL) {
            fputc('\n', out);
            n = 0;
        }
        char with_env[1024];
        if (r->env) { /* the variable, as the epilogue of such a command explains */
            snprintf(with_env, sizeof with_env, "%s [%s]", help, r->env);
            help = with_env;
        }
        gm_opt_wrap(out, help, n, HELP_COL, width);
    }
    fprintf(out, "%s%-*sShow this help and exit.\n", any ? "" : "\nOptions:\n", HELP_COL,
            "  -h, --help");
    free(f);
    if (cmd->epilogue && *cmd->epilogue)
        fprintf(out, "\n%s", cmd->epilogue);
}
