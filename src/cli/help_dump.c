/* help_dump.c - the bash completion, docs/CLI.md's option tables and a JSON dump, written from
 * the commands' option tables. */
#include "cli/help_dump.h"

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "cli/commands.h"
#include "collect/registry.h"

/* The completion's fixed part: command words, `--` of record and run, and the values of the
 * options of the command that parses its own (smi). */
static const char bash_body[] =
    "_gpumon() {\n"
    "    local cur prev words cword\n"
    "    local split\n"
    "    _init_completion -s || return\n"
    "\n"
    "    local commands='query serve record select wait estimate run snapshot diff bench "
    "containers\n"
    "        history smi cluster top'\n"
    "    if [[ $cword -eq 1 ]]; then\n"
    "        COMPREPLY=($(compgen -W \"$commands help --help --version -v\" -- \"$cur\"))\n"
    "        return\n"
    "    fi\n"
    "    local cmd=${words[1]} i\n"
    "    if [[ $cmd == help ]]; then\n"
    "        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
    "        return\n"
    "    fi\n"
    "\n"
    "    # After `--`, record and run take a command line of their own (not with --image, where\n"
    "    # the words go to the container).\n"
    "    if [[ $cmd == record || ($cmd == run && \" ${words[*]} \" != *\" --image \"*) ]]; then\n"
    "        for ((i = 2; i < cword; i++)); do\n"
    "            if [[ ${words[i]} == -- ]]; then\n"
    "                _command_offset $((i + 1))\n"
    "                return\n"
    "            fi\n"
    "        done\n"
    "    fi\n"
    "\n"
    "    # Values of the options that take one (--opt VALUE, or --opt=VALUE split by -s): first\n"
    "    # as the commands' option tables say, then for the commands that parse their own.\n"
    "    _gpumon_table_value \"$cmd\" \"$prev\" && return\n"
    "    case $prev in\n"
    "    --format)\n"
    "        case $cmd in\n"
    "        query) COMPREPLY=($(compgen -W 'table json csv csv,noheader csv,nounits "
    "csv,noheader,nounits' -- \"$cur\")) ;;\n"
    "        smi) COMPREPLY=($(compgen -W 'csv csv,noheader csv,nounits csv,noheader,nounits' -- "
    "\"$cur\")) ;;\n"
    "        select | wait) COMPREPLY=($(compgen -W 'list uuid json' -- \"$cur\")) ;;\n"
    "        history) COMPREPLY=($(compgen -W 'table json csv vllm html' -- \"$cur\")) ;;\n"
    "        containers) COMPREPLY=($(compgen -W 'table json' -- \"$cur\")) ;;\n"
    "        cluster)\n"
    "            if [[ ${words[2]} == status ]]; then\n"
    "                COMPREPLY=($(compgen -W 'table json' -- \"$cur\"))\n"
    "            else\n"
    "                COMPREPLY=($(compgen -W 'text json' -- \"$cur\"))\n"
    "            fi\n"
    "            ;;\n"
    "        *) COMPREPLY=($(compgen -W 'text json' -- \"$cur\")) ;;\n"
    "        esac\n"
    "        return\n"
    "        ;;\n"
    "    --provider)\n"
    "        COMPREPLY=($(compgen -W '@PROVIDERS@' -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --color)\n"
    "        COMPREPLY=($(compgen -W 'auto always never' -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --sort)\n"
    "        COMPREPLY=($(compgen -W 'mem cpu pid sm' -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --api)\n"
    "        COMPREPLY=($(compgen -W 'completions chat' -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --method)\n"
    "        COMPREPLY=($(compgen -W 'model seed' -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --dtype | --kv-dtype)\n"
    "        COMPREPLY=($(compgen -W 'fp32 fp16 bf16 fp8 int8 int4 awq gptq' -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --env)\n"
    "        # NAME alone passes gpumon's own value: offer the variables set here.\n"
    "        COMPREPLY=($(compgen -v -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --volume)\n"
    "        _filedir -d\n"
    "        return\n"
    "        ;;\n"
    "    --api-key-env)\n"
    "        COMPREPLY=($(compgen -v -- \"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    --prompts | --trace)\n"
    "        _filedir\n"
    "        return\n"
    "        ;;\n"
    "    -d | --display)\n"
    "        [[ $cmd == smi ]] && COMPREPLY=($(compgen -W 'MEMORY UTILIZATION ECC TEMPERATURE "
    "POWER\n"
    "            CLOCK COMPUTE PIDS PERFORMANCE PAGE_RETIREMENT ENCODER_STATS ROW_REMAPPER' -- "
    "\"$cur\"))\n"
    "        return\n"
    "        ;;\n"
    "    -o | --output | --db | -f | --task | --filename)\n"
    "        _filedir\n"
    "        return\n"
    "        ;;\n"
    "    --lease-dir)\n"
    "        _filedir -d\n"
    "        return\n"
    "        ;;\n"
    "    --query-gpu)\n"
    "        # The field list is the program's own (--list-fields prints one per line, first "
    "column).\n"
    "        local fields\n"
    "        fields=$(\"${words[0]}\" query --list-fields 2>/dev/null | awk 'NR > 1 && $1 ~ "
    "/^[a-z]/ { print $1 }')\n"
    "        local prefix=\"\"\n"
    "        [[ $cur == *,* ]] && prefix=${cur%,*},\n"
    "        COMPREPLY=($(compgen -P \"$prefix\" -W \"$fields\" -- \"${cur##*,}\"))\n"
    "        compopt -o nospace\n"
    "        return\n"
    "        ;;\n"
    "    --query-compute-apps | --query-retired-pages | --query-remapped-rows | -lms | --loop-ms)\n"
    "        return\n"
    "        ;;\n"
    "    -i | --id | --gpus | -l | --loop | --simulate | --seed | -n | --interval | --label | \\\n"
    "        --snapshot-window-ms | -m | --min-free-mb | -u | --max-util | -t | --timeout | -c | "
    "\\\n"
    "        --count | -w | --wait | --check-interval | --power-window | --power-interval | \\\n"
    "        --mem-tolerance-mb | --power-tolerance-w | --limit | --url | --model | --concurrency "
    "| \\\n"
    "        --request-rate | --burstiness | --requests | --duration | --warmup | --input-tokens | "
    "\\\n"
    "        --output-tokens | --slo | --header | --timeout | --idle-seconds | --image | \\\n"
    "        --container-port | --shm-size | --ready-path | --ready-timeout | --context | --batch "
    "| \\\n"
    "        --overhead-mib | --stop-timeout | --prometheus | --job | --max-mem-percent | \\\n"
    "        --older-than | --connect)\n"
    "        return\n"
    "        ;;\n"
    "    esac\n"
    "\n"
    "    local opts_var=\"_gpumon_opts_$cmd\"\n"
    "    if [[ $cur == -* ]]; then\n"
    "        COMPREPLY=($(compgen -W \"${!opts_var}\" -- \"$cur\"))\n"
    "    elif [[ $cmd == history ]]; then\n"
    "        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W 'list show export import compare delete "
    "prune' "
    "-- \"$cur\"))\n"
    "    elif [[ $cmd == containers ]]; then\n"
    "        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W 'list cleanup follow' -- \"$cur\"))\n"
    "    elif [[ $cmd == cluster ]]; then\n"
    "        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W 'status select' -- \"$cur\"))\n"
    "    elif [[ $cmd == diff ]]; then\n"
    "        _filedir json\n"
    "    fi\n"
    "}\n"
    "complete -F _gpumon gpumon\n";

typedef struct names {
    char buf[4096];
    size_t len;
} names;

/* Appends " word" (or " --word" with dashes) to n. */
static void add(names *n, const char *dashes, const char *s)
{
    if (n->len < sizeof n->buf)
        n->len += (size_t)snprintf(n->buf + n->len, sizeof n->buf - n->len, " %s%s", dashes, s);
}

/* Every spelling of row, "-i --id --gpus", into n (each preceded by a space). */
static void row_names(const gm_opt *r, names *n)
{
    if (r->letter) {
        char l[3] = {'-', (char)r->letter, 0};
        add(n, "", l);
    }
    add(n, "--", r->name);
    for (const char *a = r->aliases; a && *a;) {
        size_t alen = strcspn(a, ",");
        char one[64];
        snprintf(one, sizeof one, "%.*s", (int)alen, a);
        add(n, "--", one);
        a += alen + (a[alen] == ',');
    }
}

static bool listed(const gm_opt *r)
{
    return r->type != GM_OPT_REMOVED && !(r->flags & GM_OPT_HIDDEN);
}

typedef struct bash_ctx {
    FILE *out;
    const char *cmd;
    names *n;
} bash_ctx;

static int opt_list(const gm_opt *r, void *ctx)
{
    if (listed(r))
        row_names(r, ((bash_ctx *)ctx)->n);
    return 0;
}

/* One case of _gpumon_table_value: "cmd:-x | cmd:--xyz) what ;;". */
static int value_case(const gm_opt *r, void *vctx)
{
    bash_ctx *ctx = vctx;
    if (!listed(r) || !r->arg || (r->flags & GM_OPT_OPTARG) ||
        (r->complete && strcmp(r->complete, "fields") == 0))
        return 0;
    names n = {.len = 0};
    row_names(r, &n);
    fprintf(ctx->out, "   ");
    const char *sep = " ";
    for (char *w = strtok(n.buf, " "); w; w = strtok(NULL, " ")) {
        fprintf(ctx->out, "%s%s:%s", sep, ctx->cmd, w);
        sep = " | ";
    }
    char words[512];
    if (gm_opt_values(r, words, sizeof words))
        fprintf(ctx->out, ")\n        COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", words);
    else if (r->complete && strcmp(r->complete, "file") == 0)
        fprintf(ctx->out, ")\n        _filedir\n");
    else if (r->complete && strcmp(r->complete, "dir") == 0)
        fprintf(ctx->out, ")\n        _filedir -d\n");
    else
        fprintf(ctx->out, ") # nothing to offer\n");
    fprintf(ctx->out, "        return 0\n        ;;\n");
    return 0;
}

static void dump_bash(const gm_cli_dump_command *cmds, size_t n, FILE *out)
{
    fprintf(out, "# bash completion for gpumon. Installed as "
                 "share/bash-completion/completions/gpumon.\n"
                 "# Generated by `gpumon help --dump bash` from the commands' option tables; do "
                 "not edit\n"
                 "# (tests/cli/test_opt_tables.py checks that it is current).\n\n");
    for (size_t i = 0; i < n; i++) {
        names nm = {.len = 0};
        if (cmds[i].opts) {
            bash_ctx ctx = {out, cmds[i].name, &nm};
            gm_opt_each(cmds[i].opts->table, opt_list, &ctx);
            add(&nm, "", "-h --help");
        } else
            add(&nm, "", cmds[i].legacy);
        fprintf(out, "_gpumon_opts_%s='%s'\n", cmds[i].name, nm.buf + 1);
    }
    fprintf(out, "\n# Completes the value of option $2 of command $1 when a table declares it; "
                 "false when not.\n_gpumon_table_value() {\n    case \"$1:$2\" in\n");
    for (size_t i = 0; i < n; i++)
        if (cmds[i].opts) {
            bash_ctx ctx = {out, cmds[i].name, NULL};
            gm_opt_each(cmds[i].opts->table, value_case, &ctx);
        }
    fprintf(out, "    esac\n    return 1\n}\n\n");
    /* The providers' names come from their registry, like every other list of them. */
    const char *at = strstr(bash_body, "@PROVIDERS@");
    fwrite(bash_body, 1, (size_t)(at - bash_body), out);
    for (const char *p = gm_provider_names(); *p; p++)
        if (*p != ',')
            fputc(*p, out);
    fputs(at + strlen("@PROVIDERS@"), out);
}

/* Markdown: a cell's text with | escaped. */
static void md_text(FILE *out, const char *s)
{
    for (; s && *s; s++)
        fputs(*s == '|' ? "\\|" : (char[]){*s, 0}, out);
}

typedef struct md_ctx {
    FILE *out;
    bool env; /* the table has a variable column */
} md_ctx;

static int has_env(const gm_opt *r, void *ctx)
{
    (void)ctx;
    return listed(r) && r->env ? 1 : 0;
}

static int md_row(const gm_opt *r, void *vctx)
{
    md_ctx *ctx = vctx;
    FILE *out = ctx->out;
    if (!listed(r))
        return 0;
    fputs("| ", out);
    if (r->letter)
        fprintf(out, "`-%c`, ", r->letter);
    fprintf(out, "`--%s`", r->name);
    for (const char *a = r->aliases; a && *a;) {
        size_t alen = strcspn(a, ",");
        fprintf(out, ", `--%.*s`", (int)alen, a);
        a += alen + (a[alen] == ',');
    }
    fputs(" | ", out);
    if (r->arg)
        fprintf(out, (r->flags & GM_OPT_OPTARG) ? "[%s]" : "%s", r->arg);
    fputs(" | ", out);
    if (ctx->env)
        fprintf(out, r->env ? "`%s` | " : " | ", r->env);
    char help[1024];
    md_text(out, gm_opt_help_text(r, help, sizeof help));
    fputs(" |\n", out);
    return 0;
}

static void dump_markdown(const gm_cli_dump_command *cmds, size_t n, FILE *out)
{
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (!cmds[i].opts)
            continue;
        md_ctx ctx = {out, gm_opt_each(cmds[i].opts->table, has_env, NULL) == 1};
        fprintf(out, "%s#### gpumon %s\n\n", first ? "" : "\n", cmds[i].name);
        if (ctx.env)
            fputs("| option | value | variable | meaning |\n|---|---|---|---|\n", out);
        else
            fputs("| option | value | meaning |\n|---|---|---|\n", out);
        gm_opt_each(cmds[i].opts->table, md_row, &ctx);
        first = false;
    }
}

/* The settings table of docs/API.md: each row with a variable or a configuration key. */
static int settings_row(const gm_opt *r, void *ctx)
{
    FILE *out = ctx;
    if (!listed(r) || (!r->env && !r->key))
        return 0;
    fprintf(out, "| `--%s%s%s` | ", r->name, r->arg ? " " : "", r->arg ? r->arg : "");
    fprintf(out, r->env ? "`%s` | " : " | ", r->env);
    fprintf(out, r->key ? "`%s` | " : " | ", r->key);
    char help[1024];
    md_text(out, gm_opt_help_text(r, help, sizeof help));
    fputs(" |\n", out);
    return 0;
}

static void dump_settings(const gm_cli_dump_command *cmds, size_t n, FILE *out)
{
    for (size_t i = 0; i < n; i++)
        if (cmds[i].opts && gm_opt_each(cmds[i].opts->table, has_env, NULL) == 1) {
            fprintf(out, "| flag | variable | `/api/config` key | meaning |\n|---|---|---|---|\n");
            gm_opt_each(cmds[i].opts->table, settings_row, out);
        }
}

static const char *type_name(gm_opt_type t)
{
    switch (t) {
    case GM_OPT_FLAG:
        return "flag";
    case GM_OPT_STRING:
        return "string";
    case GM_OPT_UINT:
        return "unsigned";
    case GM_OPT_DOUBLE:
        return "number";
    case GM_OPT_DURATION:
        return "duration";
    case GM_OPT_CALLBACK:
        return "callback";
    case GM_OPT_REMOVED:
        return "removed";
    default:
        return "other";
    }
}

static int json_row(const gm_opt *r, void *ctx)
{
    if (!r->name)
        return 0; /* a hidden second letter */
    json_t *row = json_pack("{s:s, s:s}", "name", r->name, "type", type_name(r->type));
    if (!row)
        return -1;
    if (r->letter)
        json_object_set_new(row, "letter", json_sprintf("%c", r->letter));
    if (r->arg)
        json_object_set_new(row, "arg", json_string(r->arg));
    if (r->aliases)
        json_object_set_new(row, "aliases", json_string(r->aliases));
    if (r->complete)
        json_object_set_new(row, "complete", json_string(r->complete));
    char words[512];
    if (gm_opt_values(r, words, sizeof words))
        json_object_set_new(row, "values", json_string(words));
    if (r->env)
        json_object_set_new(row, "env", json_string(r->env));
    if (r->key)
        json_object_set_new(row, "key", json_string(r->key));
    json_object_set_new(row, "hidden", json_boolean(r->flags & GM_OPT_HIDDEN));
    json_object_set_new(row, "optional_value", json_boolean(r->flags & GM_OPT_OPTARG));
    if (r->type == GM_OPT_UINT || r->type == GM_OPT_DOUBLE || r->type == GM_OPT_DURATION) {
        json_object_set_new(row, "min", json_real(r->min));
        json_object_set_new(row, "max", json_real(r->max));
    }
    return json_array_append_new(ctx, row);
}

static int dump_json(const gm_cli_dump_command *cmds, size_t n, FILE *out)
{
    json_t *doc = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *rows = json_array();
        if (cmds[i].opts)
            gm_opt_each(cmds[i].opts->table, json_row, rows);
        json_object_set_new(
            doc, cmds[i].name,
            json_pack("{s:b, s:o}", "table", cmds[i].opts != NULL, "options", rows));
    }
    int rc = json_dumpf(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(doc);
    return rc;
}

int gm_cli_help_dump(const char *format, const gm_cli_dump_command *cmds, size_t n, FILE *out)
{
    if (strcmp(format, "bash") == 0)
        dump_bash(cmds, n, out);
    else if (strcmp(format, "markdown") == 0)
        dump_markdown(cmds, n, out);
    else if (strcmp(format, "json") == 0)
        dump_json(cmds, n, out);
    else if (strcmp(format, "settings") == 0)
        dump_settings(cmds, n, out);
    else {
        fprintf(stderr, "gpumon help: --dump takes bash, markdown, json or settings\n");
        return GM_EXIT_USAGE;
    }
    return fflush(out) == 0 ? GM_EXIT_OK : GM_EXIT_FAILURE;
}
