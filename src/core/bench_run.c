/* bench_run.c - the benchmark engine and its configuration (bench_run.h). */
#include "core/bench_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/parse.h"
#include "core/audit.h"
#include "core/bench_report.h"
#include "core/bench_validity.h"
#include "core/session.h"
#include "base/error.h"

/* Distinct synthetic prompts made; requests take them in turn. */
#define SYNTHETIC_PROMPTS 1024

/* ---- the configuration ---------------------------------------------------------------- */

void gm_bench_config_init(gm_bench_config *c)
{
    memset(c, 0, sizeof *c);
    c->api = GM_BENCH_API_COMPLETIONS;
    c->burstiness = 1;
    c->input_tokens = 128;
    c->output_tokens = 128;
    c->timeout_s = 600;
    c->interval_s = 0.1;
    c->idle_s = 2;
    c->snapshot_window_ms = GM_AUDIT_DEFAULT_POWER_WINDOW_MS;
    gm_bench_slo_none(&c->slo);
}

void gm_bench_config_free(gm_bench_config *c)
{
    if (!c)
        return;
    char **s[] = {&c->url,    &c->model, &c->prompts, &c->api_key_env, &c->gpus,
                  &c->output, &c->label, &c->trace,   &c->db};
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        free(*s[i]);
        *s[i] = NULL;
    }
    for (size_t i = 0; i < c->nheaders; i++)
        free(c->headers[i]);
    c->nheaders = 0;
}

static int set_str(char **dst, const char *v, gm_error *err)
{
    char *d = strdup(v);
    if (!d)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    free(*dst);
    *dst = d;
    return GM_OK;
}

static int want_uint(const char *flag, const char *v, unsigned long long min,
                     unsigned long long max, unsigned long long *out, gm_error *err)
{
    if (gm_parse_uint(v, min, max, out) == GM_OK)
        return GM_OK;
    return gm_error_set(err, GM_EINVAL, "%s expects a whole number from %llu to %llu, got \"%s\"",
                        flag, min, max, v);
}

static int want_number(const char *flag, const char *what, const char *v, double min, double max,
                       double *out, gm_error *err)
{
    if (gm_parse_number(v, min, max, out) == GM_OK)
        return GM_OK;
    return gm_error_set(err, GM_EINVAL, "%s expects %s from %.15g to %.15g, got \"%s\"", flag, what,
                        min, max, v);
}

static int want_duration(const char *flag, const char *v, double min_s, double max_s, double *out,
                         gm_error *err)
{
    int64_t ms;
    if (gm_parse_duration_ms(v, (int64_t)ceil(min_s * 1000), (int64_t)floor(max_s * 1000), &ms) ==
        GM_OK) {
        *out = (double)ms / 1000.0;
        return GM_OK;
    }
    return gm_error_set(err, GM_EINVAL,
                        "%s expects a duration from %.15gs to %.15gs (such as 90, 0.5, 500ms, "
                        "15m, 1h30m), got \"%s\"",
                        flag, min_s, max_s, v);
}

static int parse_list(const char *flag, const char *arg, bool rate, gm_bench_config *o,
                      gm_error *err)
{
    size_t n_points = 0;
    unsigned conc[GM_BENCH_POINTS_MAX];
    double rates[GM_BENCH_POINTS_MAX];
    const char *p = arg;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];
        if (n == 0 || n >= sizeof item || n_points == GM_BENCH_POINTS_MAX)
            return gm_error_set(err, GM_EINVAL,
                                "%s expects up to %d comma-separated values, got \"%s\"", flag,
                                GM_BENCH_POINTS_MAX, arg);
        memcpy(item, p, n);
        item[n] = '\0';
        if (rate) {
            double v;
            if (strcmp(item, "inf") == 0)
                v = INFINITY;
            else if (gm_parse_number(item, 0, 1e6, &v) < 0 || v <= 0)
                return gm_error_set(err, GM_EINVAL,
                                    "%s expects requests per second above 0 (or inf), got \"%s\"",
                                    flag, item);
            rates[n_points++] = v;
        } else {
            unsigned long long v;
            if (gm_parse_uint(item, 1, GM_BENCH_IN_FLIGHT_MAX, &v) < 0)
                return gm_error_set(err, GM_EINVAL,
                                    "%s expects whole numbers from 1 to %d, got \"%s\"", flag,
                                    GM_BENCH_IN_FLIGHT_MAX, item);
            conc[n_points++] = (unsigned)v;
        }
        p = comma ? comma + 1 : NULL;
        if (comma && !*p)
            return gm_error_set(err, GM_EINVAL, "%s \"%s\" ends with a comma", flag, arg);
    }
    if (n_points == 0)
        return gm_error_set(err, GM_EINVAL, "%s needs a value", flag);
    o->npoints = n_points;
    for (size_t i = 0; i < n_points; i++) {
        if (rate)
            o->rate[i] = rates[i];
        else
            o->conc[i] = conc[i];
    }
    return GM_OK;
}

static bool header_ok(const char *h)
{
    const char *colon = strchr(h, ':');
    if (!colon || colon == h)
        return false;
    for (const char *p = h; p < colon; p++)
        if (!strchr("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                    *p))
            return false;
    for (const char *p = colon + 1; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return false;
    return true;
}

/* A GPU list as --gpus takes it: the grammar of -i everywhere (base/parse). */
static bool gpu_list_ok(const char *list)
{
    char items[GM_MAX_GPUS][GM_UUID_LEN];
    size_t n;
    return gm_parse_gpu_list(list, items, &n, NULL) == GM_OK;
}

/* A group setter's answer for a name that is not one of its settings. */
#define NOT_MINE 1

/* What to ask the server: where, which model, which API, and the request shape. */
static int set_request(gm_bench_config *o, const char *n, const char *v, gm_error *err)
{
    if (strcmp(n, "url") == 0)
        return set_str(&o->url, v, err);
    if (strcmp(n, "model") == 0) {
        if (!*v)
            return gm_error_set(err, GM_EINVAL, "--model is empty");
        return set_str(&o->model, v, err);
    }
    if (strcmp(n, "api") == 0) {
        if (gm_bench_api_parse(v, &o->api) < 0)
            return gm_error_set(err, GM_EINVAL, "--api \"%s\" is not completions or chat", v);
        return GM_OK;
    }
    if (strcmp(n, "input-tokens") == 0) {
        int rc = want_uint("--input-tokens", v, 1, GM_BENCH_TOKENS_MAX, &o->input_tokens, err);
        if (rc == GM_OK)
            o->have_input_tokens = true;
        return rc;
    }
    if (strcmp(n, "output-tokens") == 0)
        return want_uint("--output-tokens", v, 1, GM_BENCH_TOKENS_MAX, &o->output_tokens, err);
    if (strcmp(n, "prompts") == 0)
        return set_str(&o->prompts, v, err);
    if (strcmp(n, "header") == 0) {
        if (!header_ok(v))
            return gm_error_set(err, GM_EINVAL,
                                "--header expects 'Name: value' (a token name, no control "
                                "characters)");
        if (o->nheaders == GM_BENCH_HEADERS_MAX)
            return gm_error_set(err, GM_EINVAL, "at most %d --header", GM_BENCH_HEADERS_MAX);
        if (!(o->headers[o->nheaders] = strdup(v)))
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        o->nheaders++;
        return GM_OK;
    }
    if (strcmp(n, "api-key-env") == 0)
        return set_str(&o->api_key_env, v, err);
    if (strcmp(n, "timeout") == 0)
        return want_duration("--timeout", v, 0.1, 86400, &o->timeout_s, err);
    return NOT_MINE;
}

/* How much load, for how long, and what counts as meeting it. */
static int set_load(gm_bench_config *o, const char *n, const char *v, gm_error *err)
{
    if (strcmp(n, "concurrency") == 0 || strcmp(n, "request-rate") == 0) {
        bool rate = n[0] == 'r';
        int rc = parse_list(rate ? "--request-rate" : "--concurrency", v, rate, o, err);
        if (rc < 0)
            return rc;
        if (rate)
            o->have_rate = true;
        else
            o->have_conc = true;
        o->open_loop = rate;
        return GM_OK;
    }
    if (strcmp(n, "burstiness") == 0) {
        int rc = want_number("--burstiness", "a number", v, 0.01, 100, &o->burstiness, err);
        if (rc == GM_OK)
            o->have_burstiness = true;
        return rc;
    }
    if (strcmp(n, "requests") == 0)
        return want_uint("--requests", v, 1, GM_BENCH_REQUESTS_MAX, &o->requests, err);
    if (strcmp(n, "duration") == 0)
        return want_duration("--duration", v, 0.1, 7 * 86400, &o->duration_s, err);
    if (strcmp(n, "warmup") == 0)
        return want_uint("--warmup", v, 0, 100000, &o->warmup, err);
    if (strcmp(n, "slo") == 0) {
        gm_error e = {0};
        if (gm_bench_slo_parse(v, &o->slo, &e) < 0)
            return gm_error_set(err, GM_EINVAL, "--slo %s", e.msg);
        return GM_OK;
    }
    return NOT_MINE;
}

/* Which GPUs to watch while the load runs, and how often. */
static int set_telemetry(gm_bench_config *o, const char *n, const char *v, gm_error *err)
{
    if (strcmp(n, "gpus") == 0 || strcmp(n, "id") == 0) {
        if (!gpu_list_ok(v))
            return gm_error_set(err, GM_EINVAL,
                                *v ? "invalid GPU list \"%s\" (expected indices, UUIDs or PCI bus "
                                     "ids separated by commas)"
                                   : "empty GPU list%s",
                                v);
        return set_str(&o->gpus, v, err);
    }
    if (strcmp(n, "interval") == 0)
        return want_duration("--interval", v, 0.01, 3600, &o->interval_s, err);
    if (strcmp(n, "idle-seconds") == 0)
        return want_duration("--idle-seconds", v, 0, 600, &o->idle_s, err);
    return NOT_MINE;
}

/* Where the results go and what they are called. */
static int set_output(gm_bench_config *o, const char *n, const char *v, gm_error *err)
{
    if (strcmp(n, "output") == 0)
        return set_str(&o->output, v, err);
    if (strcmp(n, "label") == 0) {
        if (strlen(v) > GM_BENCH_LABEL_MAX)
            return gm_error_set(err, GM_EINVAL, "--label is longer than %d bytes",
                                GM_BENCH_LABEL_MAX);
        return set_str(&o->label, v, err);
    }
    if (strcmp(n, "trace") == 0)
        return set_str(&o->trace, v, err);
    if (strcmp(n, "db") == 0)
        return set_str(&o->db, v, err);
    return NOT_MINE;
}

int gm_bench_config_set(gm_bench_config *o, const char *name, const char *value, gm_error *err)
{
    char n[32];
    size_t len = strlen(name);
    if (len >= sizeof n)
        return gm_error_set(err, GM_ENOENT, "unknown option \"%.40s\"", name);
    for (size_t i = 0; i <= len; i++)
        n[i] = name[i] == '_' ? '-' : name[i];
    bool flag_only = strcmp(n, "no-db") == 0 || strcmp(n, "snapshot") == 0;
    if (strcmp(n, "snapshot") == 0) {
        /* A flag: no value on the command line; true or false from a JSON body. */
        if (value && strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
            return gm_error_set(err, GM_EINVAL, "--snapshot takes no value (true or false)");
        o->snapshot = !value || strcmp(value, "true") == 0;
        return GM_OK;
    }
    if (strcmp(n, "snapshot-window-ms") == 0 && value) {
        unsigned long long ms;
        int rc = want_uint("--snapshot-window-ms", value, 0, 60000, &ms, err);
        if (rc == GM_OK)
            o->snapshot_window_ms = (unsigned)ms;
        return rc;
    }
    if (!flag_only && !value)
        return gm_error_set(err, GM_EINVAL, "--%s needs a value", n);
    if (flag_only) {
        o->no_db = true;
        return GM_OK;
    }
    int (*const groups[])(gm_bench_config *, const char *, const char *,
                          gm_error *) = {set_request, set_load, set_telemetry, set_output};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        int rc = groups[i](o, n, value, err);
        if (rc != NOT_MINE)
            return rc;
    }
    return gm_error_set(err, GM_ENOENT, "unknown option \"--%s\"", n);
}

int gm_bench_config_finish(gm_bench_config *o, bool image, gm_error *err)
{
    const char *conflict =
        !o->url && !image                     ? "--url or --image is required"
        : o->url && image                     ? "give --url or --image, not both"
        : o->have_conc && o->have_rate        ? "give --concurrency or --request-rate, not both"
        : o->have_burstiness && !o->have_rate ? "--burstiness is for --request-rate"
        : o->requests && o->duration_s > 0    ? "give --requests or --duration, not both"
        : o->prompts && o->have_input_tokens
            ? "--input-tokens is for synthetic prompts, not --prompts"
        : o->db && o->no_db ? "give --db or --no-db, not both"
                            : NULL;
    if (conflict)
        return gm_error_set(err, GM_EINVAL, "%s", conflict);
    if (!o->have_conc && !o->have_rate) {
        o->conc[0] = 1;
        o->npoints = 1;
    }
    if (!o->requests && !(o->duration_s > 0))
        o->requests = 1000;
    return GM_OK;
}

/* ---- the run ------------------------------------------------------------------------------ */

struct gm_bench_runner {
    gm_bench_runner_options o;
    const gm_bench_config *cfg;
    gm_bench_prompts prompts;
    gm_bench_client *client;
    char base[GM_BENCH_URL_MAX];
    char model[512];
    gm_bench_gpu *gpu;
    gm_collector *collector;
    json_t *gpus_json;
    json_t *points;
    double idle_w;
    int64_t gpu_samples;
    bool any_empty, cut_short;
    json_t *audit; /* cfg->snapshot: the document's "audit", once the points are over */
};

int gm_bench_runner_new(const gm_bench_runner_options *o, gm_bench_runner **out, gm_error *err)
{
    *out = NULL;
    gm_bench_runner *r = calloc(1, sizeof *r);
    if (!r)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    r->o = *o;
    r->cfg = o->cfg;
    r->idle_w = NAN;
    const gm_bench_config *c = r->cfg;
    gm_error e = {0};
    int rc;
    if (c->prompts) {
        if ((rc = gm_bench_prompts_load(c->prompts, c->api, &r->prompts, &e)) < 0) {
            gm_error_set(err, GM_EINVAL, "--prompts %s", e.msg);
            gm_bench_runner_free(r);
            return GM_EINVAL;
        }
    } else {
        size_t total = c->requests ? (size_t)c->requests * c->npoints : SYNTHETIC_PROMPTS;
        size_t count = total < SYNTHETIC_PROMPTS ? total : SYNTHETIC_PROMPTS;
        if ((rc = gm_bench_prompts_synthetic((unsigned)c->input_tokens, count, c->seed, &r->prompts,
                                             err)) < 0) {
            gm_bench_runner_free(r);
            return rc;
        }
    }
    if (!(r->points = json_array()) || !(r->gpus_json = json_array())) {
        gm_bench_runner_free(r);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    *out = r;
    return GM_OK;
}

void gm_bench_runner_free(gm_bench_runner *r)
{
    if (!r)
        return;
    gm_bench_gpu_free(r->gpu);
    gm_bench_client_free(r->client);
    gm_bench_prompts_free(&r->prompts);
    json_decref(r->gpus_json);
    json_decref(r->points);
    json_decref(r->audit);
    free(r);
}

static bool stopped(const gm_bench_runner *r)
{
    return r->o.stop && *r->o.stop;
}

static void set_sim(gm_bench_runner *r, double v)
{
    if (r->o.sim_load)
        *r->o.sim_load = v;
}

int gm_bench_runner_connect(gm_bench_runner *r, const char *url, gm_error *err)
{
    const gm_bench_config *c = r->cfg;
    gm_error e = {0};
    if (gm_bench_url_base(url, r->base, sizeof r->base, &e) < 0)
        return gm_error_set(err, GM_EINVAL, "--url: %s", e.msg);
    gm_bench_client_options copt = {.url = url,
                                    .api = c->api,
                                    .headers = (const char *const *)c->headers,
                                    .nheaders = c->nheaders,
                                    .api_key = r->o.api_key,
                                    .timeout_s = c->timeout_s,
                                    .max_in_flight = r->o.max_in_flight};
    int rc = gm_bench_client_new(&copt, &r->client, err);
    if (rc < 0)
        return rc == GM_EINVAL ? GM_EINVAL : GM_EIO;
    if (c->model) {
        snprintf(r->model, sizeof r->model, "%s", c->model);
    } else if (gm_bench_client_first_model(r->client, r->model, sizeof r->model, &e) < 0) {
        /* Unreached, --model would not help: say that first. */
        if (gm_bench_client_unreached(r->client))
            return gm_error_set(err, GM_EIO, "%s", e.msg);
        return gm_error_set(err, GM_EIO, "cannot learn the model (give --model): %s", e.msg);
    }
    if (gm_bench_client_prepare(r->client, r->model, &r->prompts, (unsigned)c->output_tokens, &e) <
        0)
        return gm_error_set(err, GM_EIO, "%s", e.msg);
    return GM_OK;
}

static double session_idle_power(gm_session *s, json_t *gpus)
{
    json_t *doc = gm_session_to_json(s);
    double total = 0;
    bool known = json_array_size(gpus) > 0;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        char key[16];
        snprintf(key, sizeof key, "%lld",
                 (long long)json_integer_value(json_object_get(g, "index")));
        const json_t *mean =
            json_object_get(json_object_get(json_object_get(json_object_get(doc, "gpu_stats"), key),
                                            "power_draw_w"),
                            "mean");
        if (json_is_number(mean)) {
            json_object_set_new(g, "idle_power_w", json_real(json_number_value(mean)));
            total += json_number_value(mean);
        } else {
            json_object_set_new(g, "idle_power_w", json_null());
            known = false;
        }
    }
    json_decref(doc);
    return known ? total : NAN;
}

static void report(gm_bench_runner *r, gm_bench_phase ph)
{
    if (!r->o.progress)
        return;
    gm_bench_progress p = {.phase = ph,
                           .npoints = r->cfg->npoints,
                           .ttft_p50_ms = NAN,
                           .ttft_p99_ms = NAN,
                           .output_tokens_per_s = NAN};
    r->o.progress(r->o.arg, &p, NULL);
}

int gm_bench_runner_gpus(gm_bench_runner *r, gm_collector *c, const unsigned *gpus, size_t ngpus,
                         bool server_later, gm_error *err)
{
    gm_bench_gpu_options gopt = {.collector = c,
                                 .gpus = gpus,
                                 .ngpus = ngpus,
                                 .interval_s = r->cfg->interval_s,
                                 .server_later = server_later};
    gm_error e = {0};
    if (gm_bench_gpu_start(&gopt, &r->gpu, &e) < 0)
        return gm_error_set(err, GM_EIO, "cannot sample the GPUs: %s", e.msg);
    r->collector = c;
    /* The followed GPUs as the document lists them (idle power filled in below). */
    unsigned idx[GM_MAX_GPUS];
    size_t n = gm_bench_gpu_indices(r->gpu, idx);
    for (size_t k = 0; k < n; k++) {
        const gm_gpu *g = gm_snapshot_gpu(gm_bench_gpu_first(r->gpu), idx[k]);
        json_array_append_new(
            r->gpus_json,
            json_pack("{s:I, s:o, s:o, s:n}", "index", (json_int_t)idx[k], "name",
                      g ? gm_json_text(g->name, sizeof g->name) : json_null(), "uuid",
                      g ? gm_json_text(g->uuid, sizeof g->uuid) : json_null(), "idle_power_w"));
    }
    if (!(r->cfg->idle_s > 0))
        return GM_OK;
    report(r, GM_BENCH_PHASE_IDLE);
    gm_bench_gpu_point ip;
    if (gm_bench_gpu_begin(r->gpu, "idle", &e) == GM_OK) {
        gm_clock_sleep_until(gm_clock_mono_s() + r->cfg->idle_s, r->o.stop);
        if (gm_bench_gpu_end(r->gpu, &ip, &e) == GM_OK) {
            r->idle_w = session_idle_power(ip.session, r->gpus_json);
            r->gpu_samples += (int64_t)gm_session_sample_count(ip.session);
            gm_bench_gpu_point_free(&ip);
        }
    }
    report(r, GM_BENCH_PHASE_IDLE_END);
    return GM_OK;
}

void gm_bench_runner_set_trace(gm_bench_runner *r, FILE *trace)
{
    r->o.trace = trace;
}

gm_bench_gpu *gm_bench_runner_gpu(gm_bench_runner *r)
{
    return r->gpu;
}

void gm_bench_runner_add_samples(gm_bench_runner *r, int64_t n)
{
    r->gpu_samples += n;
}

int gm_bench_runner_check(gm_bench_runner *r, gm_error *err)
{
    if (stopped(r))
        return GM_OK;
    report(r, GM_BENCH_PHASE_CHECK);
    gm_bench_point check;
    gm_bench_point_init(&check);
    gm_bench_run cr = {.concurrency = 1, .requests = 1, .stop = r->o.stop};
    gm_error e = {0};
    int crc = gm_bench_client_run(r->client, &cr, &check, &e);
    const gm_bench_result *res = check.n ? &check.res[0] : NULL;
    int rc = GM_OK;
    if (crc < 0 || (!stopped(r) && (!res || res->outcome != GM_BENCH_OK))) {
        const char *k;
        json_t *v;
        const char *why = crc < 0 ? e.msg : "no answer";
        json_object_foreach(check.error_examples, k, v) why = json_string_value(v);
        char key_name[32] = "";
        if (res)
            gm_bench_outcome_key((gm_bench_outcome)res->outcome, res->http_status, key_name,
                                 sizeof key_name);
        rc = gm_error_set(err, GM_EIO, "the server at %s%s failed the first request (%s): %s",
                          r->base, gm_bench_api_path(r->cfg->api), key_name[0] ? key_name : "error",
                          why);
    }
    gm_bench_point_free(&check);
    return rc;
}

/* How hard a point loads simulated GPUs: busier with more requests in flight, as a batching
 * server is (an open loop's rate stands for its concurrency). */
static double sim_level(const gm_bench_config *o, size_t i)
{
    double c = o->open_loop ? o->rate[i] : o->conc[i];
    return isinf(c) ? 1 : 0.55 + 0.45 * c / (c + 8);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct point_ctx {
    gm_bench_runner *r;
    const char *load;
    size_t point;
    /* The live figures, refreshed at most every FIGURES_S: the client's loop calls back at
     * every completion, and its timing is what is measured. */
    size_t summed;   /* results whose tokens are in tokens */
    uint64_t tokens; /* content chunks of those */
    double next_figures;
    double p50, p99;
} point_ctx;

#define FIGURES_S 0.25

/* The client's progress, turned into figures (when the caller asked for them): TTFT of the
 * latest 256 completed requests and output tokens per second so far. */
static void on_client_progress(void *arg, const gm_bench_point *p, size_t done, size_t total,
                               double elapsed)
{
    point_ctx *pc = arg;
    gm_bench_runner *r = pc->r;
    if (!r->o.progress)
        return;
    gm_bench_progress g = {.phase = GM_BENCH_PHASE_POINT,
                           .point = pc->point,
                           .npoints = r->cfg->npoints,
                           .load = pc->load,
                           .done = done,
                           .total = total,
                           .elapsed_s = elapsed,
                           .duration_s = r->cfg->duration_s,
                           .ttft_p50_ms = NAN,
                           .ttft_p99_ms = NAN,
                           .output_tokens_per_s = NAN};
    if (p && r->o.live_figures) {
        for (; pc->summed < p->n; pc->summed++)
            pc->tokens += p->res[pc->summed].chunks;
        double now = gm_clock_mono_s();
        if (now >= pc->next_figures) {
            pc->next_figures = now + FIGURES_S;
            double v[256];
            size_t n = 0;
            for (size_t i = p->n; i > 0 && n < 256; i--) {
                double t = gm_bench_result_ttft_ms(&p->res[i - 1]);
                if (isfinite(t))
                    v[n++] = t;
            }
            pc->p50 = pc->p99 = NAN;
            if (n) {
                qsort(v, n, sizeof *v, cmp_double);
                /* Nearest rank: p99 is never below p50, whatever n. */
                pc->p50 = v[(size_t)ceil(0.5 * (double)n) - 1];
                pc->p99 = v[(size_t)ceil(0.99 * (double)n) - 1];
            }
        }
        g.ttft_p50_ms = pc->p50;
        g.ttft_p99_ms = pc->p99;
        if (elapsed > 0 && p->n)
            g.output_tokens_per_s = (double)pc->tokens / elapsed;
    }
    r->o.progress(r->o.arg, &g, p);
}

static bool gone(gm_bench_runner *r, bool before)
{
    return r->o.gone && r->o.gone(r->o.arg, before);
}

/* ---- the system snapshots (--snapshot) ------------------------------------------------------ */

typedef struct audit_take {
    const gm_bench_config *cfg;
    json_t *doc;
    gm_error err;
} audit_take;

static int take_snapshot(gm_collector *c, void *arg)
{
    audit_take *t = arg;
    gm_audit_options ao;
    gm_audit_options_init(&ao);
    ao.power_window_ms = t->cfg->snapshot_window_ms;
    /* The sampler's collector lists processes (the foreign-process rule needs them). */
    ao.with_processes = true;
    return gm_audit_take(c, &ao, &t->doc, &t->err);
}

/* A snapshot through the GPU sampler's collector; NULL with why in reason. */
static json_t *snapshot_now(gm_bench_runner *r, const char *when, char *reason, size_t len)
{
    if (!r->gpu) {
        snprintf(reason, len, "no GPU was sampled, so no snapshot was taken");
        return NULL;
    }
    audit_take t = {.cfg = r->cfg};
    int rc = gm_bench_gpu_with_collector(r->gpu, take_snapshot, &t);
    if (rc < 0) {
        snprintf(reason, len, "the snapshot %s the run failed: %s", when,
                 t.err.msg[0] ? t.err.msg : "a point was being sampled");
        json_decref(t.doc);
        return NULL;
    }
    return t.doc;
}

json_t *gm_bench_audit_json(const json_t *before, const json_t *after, const char *reason)
{
    gm_audit_verdict v = {0};
    gm_error e = {0};
    char why[512];
    if (before && after && gm_audit_diff(before, after, NULL, &v, &e) < 0) {
        if (e.code == GM_ENOMEM)
            return NULL;
        snprintf(why, sizeof why, "the snapshots cannot be compared: %s", e.msg);
        reason = why;
    }
    json_t *changes = json_array();
    if (!changes) {
        gm_audit_verdict_free(&v);
        return NULL;
    }
    size_t i;
    const json_t *d;
    json_array_foreach(json_object_get(v.report, "differences"), i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "severity")) ?: "", "changed") != 0)
            continue;
        json_array_append_new(
            changes,
            json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "what", json_object_get(d, "field"), "gpu",
                      json_object_get(d, "gpu"), "before", json_object_get(d, "before"), "after",
                      json_object_get(d, "after"), "message", json_object_get(d, "message")));
    }
    const char *verdict = !v.report ? "unknown" : v.changed ? "changed" : "unchanged";
    json_t *a = json_pack("{s:s, s:o, s:O?, s:O?, s:O?}", "verdict", verdict, "changes", changes,
                          "before", before, "after", after, "diff", v.report);
    if (a && !v.report)
        json_object_set_new(a, "reason",
                            json_string(reason ? reason : "no snapshot could be compared"));
    gm_audit_verdict_free(&v);
    return a;
}

/* After the points: the snapshot after them and the verdict, in r->audit. */
static void audit_end(gm_bench_runner *r, json_t *before, const char *before_reason)
{
    char reason[600] = "";
    json_t *after = NULL;
    if (before)
        after = snapshot_now(r, "after", reason, sizeof reason);
    json_decref(r->audit);
    r->audit = gm_bench_audit_json(before, after, before ? reason : before_reason);
    json_decref(after);
}

static int run_points(gm_bench_runner *r, gm_error *err);

int gm_bench_runner_points(gm_bench_runner *r, gm_error *err)
{
    if (!r->cfg->snapshot || stopped(r))
        return run_points(r, err);
    char reason[600] = "";
    json_t *before = snapshot_now(r, "before", reason, sizeof reason);
    int rc = run_points(r, err);
    audit_end(r, before, reason);
    json_decref(before);
    return rc;
}

static int run_points(gm_bench_runner *r, gm_error *err)
{
    const gm_bench_config *o = r->cfg;
    gm_error e = {0};
    for (size_t i = 0; i < o->npoints && !stopped(r); i++) {
        if (gone(r, true))
            break;
        char load[64];
        if (o->open_loop)
            snprintf(load, sizeof load, isinf(o->rate[i]) ? "rate inf" : "rate %g/s", o->rate[i]);
        else
            snprintf(load, sizeof load, "concurrency %u", o->conc[i]);
        point_ctx pc = {.r = r, .load = load, .point = i, .p50 = NAN, .p99 = NAN};
        gm_bench_run run = {.open_loop = o->open_loop,
                            .concurrency = o->open_loop ? 0 : o->conc[i],
                            .rate = o->open_loop ? o->rate[i] : 0,
                            .burstiness = o->burstiness,
                            .seed = o->seed + i,
                            .stop = r->o.stop,
                            .progress = on_client_progress,
                            .arg = &pc};
        if (o->warmup) {
            run.warmup = true;
            run.requests = (size_t)o->warmup;
            if (gm_bench_client_run(r->client, &run, NULL, &e) < 0)
                return gm_error_set(err, GM_EIO, "%s", e.msg);
            if (stopped(r))
                break;
        }
        run.warmup = false;
        run.requests = (size_t)o->requests;
        run.duration_s = o->duration_s;
        run.trace = r->o.trace;
        run.trace_point = (unsigned)i;
        gm_bench_point pt;
        gm_bench_point_init(&pt);
        set_sim(r, sim_level(o, i));
        if (r->gpu && gm_bench_gpu_begin(r->gpu, load, &e) < 0) {
            gm_bench_point_free(&pt);
            return gm_error_set(err, GM_EIO, "%s", e.msg);
        }
        int runrc = gm_bench_client_run(r->client, &run, &pt, &e);
        gm_bench_gpu_point gp = {0};
        gm_error ge = {0};
        if (r->gpu)
            gm_bench_gpu_end(r->gpu, &gp, &ge);
        set_sim(r, 0);
        if (runrc < 0) {
            gm_bench_gpu_point_free(&gp);
            gm_bench_point_free(&pt);
            return gm_error_set(err, GM_EIO, "%s", e.msg);
        }
        json_t *pj = gm_bench_point_json(&pt, &o->slo);
        if (!pj) {
            gm_bench_gpu_point_free(&gp);
            gm_bench_point_free(&pt);
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        }
        gm_bench_point_add_gpu(pj, gp.session, r->idle_w, gp.sample_errors);
        gm_bench_point_add_timeline(pj, gp.session, r->o.started_ms);
        if (gp.session)
            r->gpu_samples += (int64_t)gm_session_sample_count(gp.session);
        /* Validity: the GPUs' observations, and the client's own load. */
        gm_bench_check chk = gp.check;
        if (!r->gpu)
            memset(&chk, 0, sizeof chk);
        chk.foreign = gp.foreign;
        chk.client_cpu_pct = gm_bench_point_cpu_pct(&pt);
        /* Schedule lag judges an open loop, whose arrivals are due at set times (all at once
         * with rate inf: no schedule to keep). In a closed loop a burst of completions is
         * refilled one request after another, tens of microseconds each, so the last of 256
         * goes a few ms after its slot freed without the client being saturated; TTFT counts
         * from each request's own send, and the CPU rule judges the client there. */
        chk.lag_p99_ms =
            o->open_loop && !isinf(o->rate[i]) ? gm_bench_dist_pct(&pt.lag_ms, 99) : NAN;
        const gm_bench_result *lie = NULL;
        chk.usage_distrusted = gm_bench_point_usage_distrusted(&pt, &lie);
        chk.completed = (size_t)json_integer_value(json_object_get(pj, "completed"));
        if (lie) {
            chk.usage_claimed = lie->usage_claimed;
            chk.usage_chunks = lie->chunks;
            chk.usage_asked = lie->asked_tokens;
        }
        json_t *reasons = gm_bench_check_reasons(&chk);
        if (reasons && gone(r, false)) {
            json_array_append_new(reasons, json_string("server_exited"));
            r->cut_short = true;
        }
        gm_bench_point_set_validity(pj, reasons);
        if (json_integer_value(json_object_get(pj, "completed")) == 0 && !pt.interrupted)
            r->any_empty = true;
        gm_bench_gpu_point_free(&gp);
        gm_bench_point_free(&pt);
        json_array_append_new(r->points, pj);
        if (r->o.on_point)
            r->o.on_point(r->o.arg, pj);
    }
    return GM_OK;
}

static json_t *config_json(const gm_bench_config *o, const gm_bench_prompts *ps)
{
    json_t *loads = json_array();
    for (size_t i = 0; loads && i < o->npoints; i++)
        json_array_append_new(
            loads, o->open_loop ? (isinf(o->rate[i]) ? json_string("inf") : json_real(o->rate[i]))
                                : json_integer(o->conc[i]));
    json_t *headers = json_array();
    for (size_t i = 0; headers && i < o->nheaders; i++) {
        const char *colon = strchr(o->headers[i], ':');
        json_array_append_new(headers,
                              gm_json_strn(o->headers[i], (size_t)(colon - o->headers[i])));
    }
    json_t *c = json_object();
    if (!c) {
        json_decref(loads);
        json_decref(headers);
        return NULL;
    }
    json_object_set_new(c, "load", json_string(o->open_loop ? "request_rate" : "concurrency"));
    json_object_set_new(c, o->open_loop ? "request_rates" : "concurrencies",
                        loads ? loads : json_array());
    json_object_set_new(c, "requests",
                        o->requests ? json_integer((json_int_t)o->requests) : json_null());
    json_object_set_new(c, "duration_s",
                        o->duration_s > 0 ? json_real(o->duration_s) : json_null());
    json_object_set_new(c, "warmup", json_integer((json_int_t)o->warmup));
    json_object_set_new(c, "input_tokens",
                        o->prompts ? json_null() : json_integer((json_int_t)o->input_tokens));
    json_object_set_new(c, "output_tokens", json_integer((json_int_t)o->output_tokens));
    json_object_set_new(c, "prompts", o->prompts ? gm_json_str(o->prompts) : json_null());
    json_object_set_new(c, "prompt_count", json_integer((json_int_t)ps->n));
    json_object_set_new(c, "slo", gm_bench_slo_json(&o->slo));
    json_object_set_new(c, "headers", headers ? headers : json_array());
    json_object_set_new(c, "api_key_env",
                        o->api_key_env ? gm_json_str(o->api_key_env) : json_null());
    json_object_set_new(c, "timeout_s", json_real(o->timeout_s));
    json_object_set_new(c, "interval_s", json_real(o->interval_s));
    json_object_set_new(c, "idle_seconds", json_real(o->idle_s));
    json_object_set_new(c, "seed", json_integer((json_int_t)o->seed));
    if (o->open_loop)
        json_object_set_new(c, "burstiness", json_real(o->burstiness));
    return c;
}

json_t *gm_bench_runner_document(gm_bench_runner *r, const char *provider)
{
    const gm_bench_config *o = r->cfg;
    int64_t ended_ms = gm_clock_wall_ms();
    char started[40], ended[40];
    gm_json_time(r->o.started_ms, started, sizeof started);
    gm_json_time(ended_ms, ended, sizeof ended);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_t *clientj = json_pack("{s:s, s:s, s:o}", "gpumon", GM_VERSION, "libcurl",
                                gm_bench_client_curl_version(), "hostname", gm_json_str(host));
    if (!provider)
        provider = r->collector ? gm_collector_provider(r->collector) : "none";
    json_t *doc = json_pack(
        "{s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:s, s:f, s:o, s:o, s:s, s:O, s:o, s:O, s:b}", "id",
        r->o.id, "kind", "bench", "label", o->label ? gm_json_str(o->label) : json_null(), "url",
        r->base[0] ? gm_json_str(r->base) : json_null(), "model",
        r->model[0] ? gm_json_str(r->model) : json_null(), "api", gm_bench_api_name(o->api),
        "started", started, "ended", ended, "duration_s",
        (double)(ended_ms - r->o.started_ms) / 1000.0, "config", config_json(o, &r->prompts),
        "client", clientj ? clientj : json_null(), "provider", provider, "gpus", r->gpus_json,
        "idle_power_w", isfinite(r->idle_w) ? json_real(r->idle_w) : json_null(), "points",
        r->points, "interrupted", stopped(r));
    if (!doc)
        return NULL;
    const char *driver = r->gpu ? gm_bench_gpu_first(r->gpu)->driver_version : NULL;
    if (driver && *driver)
        json_object_set_new(doc, "driver_version", gm_json_str(driver));
    if (o->snapshot)
        json_object_set_new(
            doc, "audit",
            r->audit ? json_incref(r->audit)
                     : gm_bench_audit_json(NULL, NULL, "the run ended before its first point"));
    return doc;
}

bool gm_bench_runner_any_empty(const gm_bench_runner *r)
{
    return r->any_empty;
}

bool gm_bench_runner_cut_short(const gm_bench_runner *r)
{
    return r->cut_short;
}

int64_t gm_bench_runner_gpu_samples(const gm_bench_runner *r)
{
    return r->gpu_samples;
}

size_t gm_bench_runner_points_done(const gm_bench_runner *r)
{
    return json_array_size(r->points);
}
