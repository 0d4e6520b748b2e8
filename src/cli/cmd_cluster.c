/* cmd_cluster.c - `gpumon cluster status|select`: the fleet as Prometheus sees it (one gpumon
 * daemon per node, scraped as one job), one row per node, and the node for a job of N GPUs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/suggest.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/fleet.h"
#include "core/prometheus.h"
#include "base/error.h"

#define PROMETHEUS_ENV  "GPU_MONITOR_PROMETHEUS_URL"
#define TIMEOUT_MAX_S   600.0
#define GPUS_NEEDED_MAX 4096

typedef struct cluster_opts {
    const char *sub; /* "status" or "select" */
    const char *cmd; /* "cluster status", for messages */
    const char *url;
    const char *url_from; /* "--prometheus" or the variable */
    const char *job;
    unsigned gpus;
    bool gpus_given, gpus_alias;
    const char *format;
    gm_fleet_thresholds thr;
    double timeout_s;
    bool json;
} cluster_opts;

_Static_assert((int)GM_FLEET_MAX_UTIL_DEFAULT == 30 && (int)GM_FLEET_MAX_MEM_DEFAULT == 50 &&
                   (int)GM_PROMETHEUS_TIMEOUT_DEFAULT_S == 10,
               "the help states these defaults");

static int set_prometheus(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row, (void)err;
    cluster_opts *o = base;
    o->url = arg;
    o->url_from = "--prometheus";
    return GM_OK;
}

static int set_job(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    (void)row;
    if (!gm_fleet_job_ok(arg))
        return gm_error_set(err, GM_EINVAL,
                            "--job expects a job name (1 to %d letters, digits, '_', '-', '.', "
                            "':', '/'), got \"%s\"",
                            GM_FLEET_JOB_MAX - 1, arg);
    ((cluster_opts *)base)->job = arg;
    return GM_OK;
}

/* --gpus N: the old name of --count here, still read, with a note. */
static int set_gpus(void *base, const gm_opt *row, const char *arg, gm_error *err)
{
    const gm_opt as_count = {.type = GM_OPT_UINT,
                             .name = row->name,
                             GM_OPT_AT(cluster_opts, gpus),
                             GM_OPT_GIVEN(cluster_opts, gpus_given),
                             .min = 1,
                             .max = GPUS_NEEDED_MAX};
    int rc = gm_opt_set_row(&as_count, base, arg, err);
    if (rc == GM_OK)
        ((cluster_opts *)base)->gpus_alias = true;
    return rc;
}

static const gm_opt cluster_table[] = {
    {.type = GM_OPT_CALLBACK,
     .name = "prometheus",
     .arg = "URL",
     .set = set_prometheus,
     .help = "Prometheus's base URL, e.g. http://prometheus:9090 (default $" PROMETHEUS_ENV
             "; user:password@ is sent as basic authentication)."},
    {.type = GM_OPT_CALLBACK,
     .name = "job",
     .arg = "NAME",
     .set = set_job,
     .help = "The daemons' scrape job (default " GM_FLEET_JOB_DEFAULT ")."},
    {.type = GM_OPT_UINT,
     .name = "count",
     .letter = 'n',
     .arg = "N",
     GM_OPT_AT(cluster_opts, gpus),
     GM_OPT_GIVEN(cluster_opts, gpus_given),
     .min = 1,
     .max = GPUS_NEEDED_MAX,
     .help = "(select) Idle GPUs needed, 1 to 4096."},
    {.type = GM_OPT_CALLBACK,
     .name = "gpus",
     .arg = "N",
     .set = set_gpus,
     .help = "Deprecated spelling of --count."},
    {.type = GM_OPT_DOUBLE,
     .name = "max-util",
     .letter = 'u',
     .arg = "PCT",
     GM_OPT_AT(cluster_opts, thr.max_util_pct),
     .min = 0,
     .max = 100,
     .help = "Idle: utilization below PCT % (default 30)."},
    {.type = GM_OPT_DOUBLE,
     .name = "max-mem-percent",
     .arg = "PCT",
     GM_OPT_AT(cluster_opts, thr.max_mem_pct),
     .min = 0,
     .max = 100,
     .help = "Idle: memory used below PCT % (default 50)."},
    {.type = GM_OPT_STRING,
     .name = "format",
     .arg = "FMT",
     GM_OPT_AT(cluster_opts, format),
     /* no .values: the completion offers status's and select's words apart */
     .help = "status: table (default) or json; select: text (the node's name, default) or json "
             "(every node, and why it was or was not chosen)."},
    GM_CLI_OPT_JSON(cluster_opts, json, true),
    {.type = GM_OPT_DURATION,
     .name = "timeout",
     .arg = "SECONDS",
     GM_OPT_AT(cluster_opts, timeout_s),
     .min = 0.001,
     .max = TIMEOUT_MAX_S,
     .help = "Per query to Prometheus (default 10)."},
    {0},
};

const gm_opt_command gm_cli_cluster_command = {
    .name = "cluster",
    .usage = "cluster status --prometheus URL [--format table|json] [options]\n"
             "cluster select --prometheus URL -n N [--format text|json]",
    .description = "The fleet as Prometheus sees it: one gpumon daemon per node (or "
                   "dcgm-exporter), scraped as one job (deploy/prometheus). A node is a Hostname "
                   "label (gpumon serve --hostname).",
    .table = cluster_table,
    .epilogue =
        "  status   one row per node: its state (up, last scrape), GPUs, idle GPUs,\n"
        "           mean utilization, memory, power, hottest GPU and health (XID,\n"
        "           uncorrectable ECC errors, failed row remapping, when exported)\n"
        "  select   prints the node with the most idle GPUs among those that have N\n"
        "           (ties: the lowest mean utilization, then the name); a node whose\n"
        "           target is down is never chosen: ssh \"$(gpumon cluster select -n 4)\"\n\n"
        "A GPU is idle when its utilization is below --max-util and its memory used below\n"
        "--max-mem-percent of used + free (as the recording rule\n"
        "Hostname:gpumon_gpus_idle:count counts them).\n\n"
        "Exit status: 0 ok, 1 Prometheus unreachable, answering an error or without a\n"
        "target of the job, 2 usage error, 4 no node that is up has N idle GPUs\n"
        "(select).\n",
};

static int read_options(int argc, char **argv, cluster_opts *o)
{
    bool select = strcmp(o->sub, "select") == 0;
    gm_opt_command cmd = gm_cli_cluster_command;
    cmd.name = o->cmd; /* messages say "cluster status" */
    int rc = gm_cli_parse(&cmd, argc, argv, o, NULL);
    if (rc != GM_CLI_PROCEED)
        return rc;
    const char *format = o->format;
    if (o->gpus_alias)
        fprintf(stderr, "gpumon %s: --gpus is deprecated; use -n/--count\n", o->cmd);
    if (format) {
        const char *plain = select ? "text" : "table";
        if (strcmp(format, "json") == 0) {
            o->json = true;
        } else if (strcmp(format, plain) != 0) {
            fprintf(stderr, "gpumon %s: --format expects %s or json, got \"%s\"\n", o->cmd, plain,
                    format);
            return GM_EXIT_USAGE;
        }
    }
    if (select && !o->gpus_given) {
        fprintf(stderr, "gpumon %s: -n/--count N is required (the idle GPUs the job needs)\n",
                o->cmd);
        return GM_EXIT_USAGE;
    }
    if (!select && o->gpus_given) {
        fprintf(stderr, "gpumon %s: --count is for gpumon cluster select\n", o->cmd);
        return GM_EXIT_USAGE;
    }
    if (!o->url) {
        const char *env = getenv(PROMETHEUS_ENV);
        if (env && *env) {
            o->url = env;
            o->url_from = PROMETHEUS_ENV;
        }
    }
    if (!o->url) {
        fprintf(stderr,
                "gpumon %s: which Prometheus? Give --prometheus URL or set %s (e.g. "
                "http://prometheus:9090)\n",
                o->cmd, PROMETHEUS_ENV);
        return GM_EXIT_USAGE;
    }
    gm_error err = {0};
    if (gm_prometheus_url_check(o->url, NULL, 0, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s: %s\n", o->cmd, o->url_from, err.msg);
        return GM_EXIT_USAGE;
    }
    return GM_CLI_PROCEED;
}

/* ---- the table ------------------------------------------------------------------------------ */

static void fmt_num(char *buf, size_t cap, double v, const char *unit)
{
    if (isnan(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.0f%s", v, unit);
}

static void fmt_age(char *buf, size_t cap, double s)
{
    if (!isfinite(s))
        snprintf(buf, cap, "-");
    else if (s < 120)
        snprintf(buf, cap, "%.0f s ago", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.0f min ago", s / 60);
    else if (s < 172800)
        snprintf(buf, cap, "%.0f h ago", s / 3600);
    else
        snprintf(buf, cap, "%.0f d ago", s / 86400);
}

enum { C_NODE, C_STATE, C_GPUS, C_IDLE, C_UTIL, C_MEM, C_POWER, C_HOT, C_HEALTH, C_SCRAPE, C__N };
static const char *const headers[C__N] = {"NODE",   "STATE", "GPUS",    "IDLE",   "UTIL",
                                          "MEMORY", "POWER", "HOTTEST", "HEALTH", "SCRAPED"};

static void node_cells(gm_fleet *f, const gm_fleet_node *n, char cells[C__N][GM_HOSTNAME_LEN])
{
    snprintf(cells[C_NODE], GM_HOSTNAME_LEN, "%s", n->name);
    snprintf(cells[C_STATE], GM_HOSTNAME_LEN, "%s", n->up ? "up" : "DOWN");
    bool known = n->up || n->ngpus;
    if (known) {
        snprintf(cells[C_GPUS], GM_HOSTNAME_LEN, "%zu", n->ngpus);
        snprintf(cells[C_IDLE], GM_HOSTNAME_LEN, "%u", n->idle);
    } else {
        snprintf(cells[C_GPUS], GM_HOSTNAME_LEN, "-");
        snprintf(cells[C_IDLE], GM_HOSTNAME_LEN, "-");
    }
    fmt_num(cells[C_UTIL], GM_HOSTNAME_LEN, n->util_mean_pct, " %");
    if (isnan(n->mem_used_pct))
        snprintf(cells[C_MEM], GM_HOSTNAME_LEN, "-");
    else
        snprintf(cells[C_MEM], GM_HOSTNAME_LEN, "%.0f %% of %.0f GiB", n->mem_used_pct,
                 n->mem_total_mib / 1024.0);
    fmt_num(cells[C_POWER], GM_HOSTNAME_LEN, n->power_w, " W");
    if (n->hottest_gpu)
        snprintf(cells[C_HOT], GM_HOSTNAME_LEN, "%.0f C (GPU %s)", n->hottest_c, n->hottest_gpu);
    else
        snprintf(cells[C_HOT], GM_HOSTNAME_LEN, "-");
    snprintf(cells[C_HEALTH], GM_HOSTNAME_LEN, "%s",
             n->health == GM_FLEET_HEALTH_OK         ? "ok"
             : n->health == GM_FLEET_HEALTH_DEGRADED ? "DEGRADED"
                                                     : "-");
    double now = gm_fleet_time(f);
    fmt_age(cells[C_SCRAPE], GM_HOSTNAME_LEN,
            isfinite(now) && isfinite(n->last_scrape_s) ? fmax(0, now - n->last_scrape_s) : NAN);
}

static void print_table(gm_fleet *f, const cluster_opts *o)
{
    size_t nn = gm_fleet_node_count(f);
    int width[C__N];
    for (int c = 0; c < C__N; c++)
        width[c] = (int)strlen(headers[c]);
    char(*cells)[C__N][GM_HOSTNAME_LEN] = calloc(nn ? nn : 1, sizeof *cells);
    if (!cells) {
        fprintf(stderr, "gpumon %s: out of memory\n", o->cmd);
        return;
    }
    for (size_t i = 0; i < nn; i++) {
        node_cells(f, gm_fleet_node_at(f, i), cells[i]);
        for (int c = 0; c < C__N; c++) {
            int w = (int)strlen(cells[i][c]);
            if (w > width[c])
                width[c] = w;
        }
    }
    for (int c = 0; c + 1 < C__N; c++)
        printf("%-*s  ", width[c], headers[c]);
    printf("%s\n", headers[C__N - 1]);
    for (size_t i = 0; i < nn; i++)
        for (int c = 0; c < C__N; c++) {
            /* numbers right-aligned, words left */
            bool right = c == C_GPUS || c == C_IDLE || c == C_UTIL || c == C_POWER;
            if (c + 1 == C__N)
                printf("%s\n", cells[i][c]);
            else
                printf(right ? "%*s  " : "%-*s  ", width[c], cells[i][c]);
        }
    free(cells);
    unsigned up = 0, gpus = 0, idle = 0;
    for (size_t i = 0; i < nn; i++) {
        const gm_fleet_node *n = gm_fleet_node_at(f, i);
        up += n->up;
        gpus += (unsigned)n->ngpus;
        idle += n->idle;
    }
    printf("\n%zu node%s (%u up), %u GPU%s, %u idle (utilization < %g %%, memory < %g %%)\n", nn,
           nn == 1 ? "" : "s", up, gpus, gpus == 1 ? "" : "s", idle, o->thr.max_util_pct,
           o->thr.max_mem_pct);
    for (size_t i = 0; i < nn; i++) {
        const gm_fleet_node *n = gm_fleet_node_at(f, i);
        for (size_t k = 0; k < n->ntargets; k++)
            if (!n->targets[k].up)
                printf("%s: target %s is down\n", n->name, n->targets[k].instance);
        if (n->problems[0])
            printf("%s: %s\n", n->name, n->problems);
    }
}

/* ---- the command ---------------------------------------------------------------------------- */

static json_t *document(gm_fleet *f, const cluster_opts *o, const gm_prometheus *p, bool sel)
{
    json_t *j = gm_fleet_json(f, &o->thr, sel);
    if (!j)
        return NULL;
    json_object_set_new(j, "prometheus", json_string(gm_prometheus_url(p)));
    json_object_set_new(j, "job", json_string(o->job));
    return j;
}

static int run(cluster_opts *o)
{
    gm_error err = {0};
    gm_prometheus *p = NULL;
    gm_prometheus_options po = {.url = o->url, .timeout_s = o->timeout_s};
    if (gm_prometheus_new(&po, &p, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o->cmd, err.msg);
        return err.code == GM_EINVAL ? GM_EXIT_USAGE : GM_EXIT_FAILURE;
    }
    gm_fleet *f = NULL;
    int rc = GM_EXIT_FAILURE;
    if (gm_fleet_fetch(p, o->job, &f, &err) < 0) {
        fprintf(stderr, "gpumon %s: %s\n", o->cmd, err.msg);
        goto out;
    }
    gm_fleet_evaluate(f, &o->thr);
    size_t nn = gm_fleet_node_count(f);
    if (nn == 0) {
        fprintf(stderr,
                "gpumon %s: Prometheus at %s has no target in job \"%s\" (is that the job "
                "scraping the daemons? see --job)\n",
                o->cmd, gm_prometheus_url(p), o->job);
        goto out;
    }
    bool select = strcmp(o->sub, "select") == 0;
    long chosen = select ? gm_fleet_select(f, o->gpus) : -1;
    if (o->json) {
        json_t *j = document(f, o, p, select);
        if (j && select) {
            json_object_set_new(j, "gpus_needed", json_integer(o->gpus));
            json_object_set_new(j, "chosen",
                                chosen >= 0 ? json_string(gm_fleet_node_at(f, chosen)->name)
                                            : json_null());
        }
        if (!j || gm_cli_write_json(stdout, j, true) < 0) {
            json_decref(j);
            fprintf(stderr, "gpumon %s: out of memory\n", o->cmd);
            goto out;
        }
        json_decref(j);
    } else if (!select) {
        print_table(f, o);
    } else if (chosen >= 0) {
        printf("%s\n", gm_fleet_node_at(f, chosen)->name);
    }
    if (select && chosen < 0) {
        fprintf(stderr,
                "gpumon %s: no node that is up has %u idle GPU%s (utilization < %g %%, memory < "
                "%g %%):\n",
                o->cmd, o->gpus, o->gpus == 1 ? "" : "s", o->thr.max_util_pct, o->thr.max_mem_pct);
        for (size_t i = 0; i < nn; i++) {
            const gm_fleet_node *n = gm_fleet_node_at(f, i);
            fprintf(stderr, "  %s: %s\n", n->name, n->reason);
        }
        rc = GM_EXIT_NOT_ENOUGH;
        goto out;
    }
    rc = fflush(stdout) == 0 ? GM_EXIT_OK : GM_EXIT_FAILURE;
out:
    gm_fleet_free(f);
    gm_prometheus_free(p);
    return rc;
}

int gm_cli_cluster(int argc, char **argv)
{
    if (argc < 2) {
        gm_opt_help(&gm_cli_cluster_command, stderr, gm_opt_help_width());
        return GM_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
        gm_opt_help(&gm_cli_cluster_command, stdout, gm_opt_help_width());
        return GM_EXIT_OK;
    }
    cluster_opts o = {.sub = sub,
                      .job = GM_FLEET_JOB_DEFAULT,
                      .thr = {GM_FLEET_MAX_UTIL_DEFAULT, GM_FLEET_MAX_MEM_DEFAULT},
                      .timeout_s = GM_PROMETHEUS_TIMEOUT_DEFAULT_S};
    if (strcmp(sub, "status") == 0) {
        o.cmd = "cluster status";
    } else if (strcmp(sub, "select") == 0) {
        o.cmd = "cluster select";
    } else if (sub[0] == '-') {
        fprintf(stderr,
                "gpumon cluster: unknown option \"%s\" before the subcommand (status or "
                "select; see gpumon cluster --help)\n",
                sub);
        return GM_EXIT_USAGE;
    } else {
        static const char *const subs[] = {"status", "select"};
        const char *guess = gm_suggest(sub, subs, sizeof subs / sizeof *subs);
        if (guess)
            fprintf(stderr, "gpumon cluster: unknown subcommand \"%s\"; did you mean \"%s\"?\n",
                    sub, guess);
        else
            fprintf(stderr,
                    "gpumon cluster: unknown subcommand \"%s\" (status or select; see gpumon "
                    "cluster --help)\n",
                    sub);
        return GM_EXIT_USAGE;
    }
    int rc = read_options(argc - 1, argv + 1, &o);
    if (rc != GM_CLI_PROCEED)
        return rc;
    return run(&o);
}
