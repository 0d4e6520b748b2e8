/* fleet.c - the fleet model: Prometheus's answers to four instant queries turned into one row
 * per node (targets, GPUs, aggregates, health), and the choice of a node for N GPUs. Lookups
 * by instance, GPU and node name go through jansson objects used as hash tables, so a fleet of
 * thousands of GPUs is built in one pass over the answers. */
#include "core/fleet.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/error.h"

/* The per-GPU series read, by the suffix of their DCGM_FI_DEV_ name: utilization through
 * GM_FLEET_Q_GPUS, the others through GM_FLEET_Q_READINGS. */
enum { M_UTIL, M_FB_USED, M_FB_FREE, M_POWER, M_TEMP, M_XID, M_ECC_DBE, M_REMAP_FAIL, M__COUNT };
static const char *const metric_names[M__COUNT] = {
    "GPU_UTIL", "FB_USED",    "FB_FREE",           "POWER_USAGE",
    "GPU_TEMP", "XID_ERRORS", "ECC_DBE_VOL_TOTAL", "ROW_REMAP_FAILURE"};
#define METRIC_PREFIX "DCGM_FI_DEV_"

typedef struct raw_gpu {
    gm_fleet_gpu g;
    char host[GM_HOSTNAME_LEN]; /* its Hostname label, "" when none */
} raw_gpu;

typedef struct raw_target {
    gm_fleet_target t;
    bool has_up;
} raw_target;

struct gm_fleet {
    bool have[GM_FLEET_Q__COUNT];
    double time_s;

    raw_target *targets;
    size_t ntargets, targets_cap;
    json_t *target_ix; /* instance -> index in targets */

    json_t *names; /* instance -> Hostname (GM_FLEET_Q_NAMES) */

    raw_gpu *gpus;
    size_t ngpus, gpus_cap;
    json_t *gpu_ix; /* instance "\n" gpu -> index in gpus */

    bool built;
    gm_fleet_node *nodes;
    size_t nnodes;
};

/* ---- queries ------------------------------------------------------------------------------ */

bool gm_fleet_job_ok(const char *job)
{
    size_t n = job ? strlen(job) : 0;
    if (n == 0 || n >= GM_FLEET_JOB_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)job[i]) && !strchr("_-.:/", job[i]))
            return false;
    return true;
}

int gm_fleet_query_expr(gm_fleet_query q, const char *job, char *buf, size_t cap)
{
    if (!gm_fleet_job_ok(job))
        return GM_EINVAL;
    int n = -1;
    switch (q) {
    case GM_FLEET_Q_UP:
        n = snprintf(buf, cap, "up{job=\"%s\"}", job);
        break;
    case GM_FLEET_Q_SCRAPE_TIME:
        n = snprintf(buf, cap, "timestamp(up{job=\"%s\"})", job);
        break;
    case GM_FLEET_Q_NAMES:
        /* A target that is down has no current series: its node's name is the one its series
         * had before, so a dead daemon still shows under its node's name. */
        n = snprintf(buf, cap,
                     "count by (instance, Hostname) (last_over_time(" METRIC_PREFIX
                     "GPU_UTIL{job=\"%s\"}[" GM_FLEET_NAME_WINDOW "]))",
                     job);
        break;
    case GM_FLEET_Q_GPUS:
        /* Aggregated to the labels that are read: series that differ only in other labels
         * (pod attribution, a driver upgrade) count once, and the answer is half as large. */
        n = snprintf(buf, cap,
                     "max by (instance, Hostname, gpu, UUID, modelName) (" METRIC_PREFIX
                     "GPU_UTIL{job=\"%s\"})",
                     job);
        break;
    case GM_FLEET_Q_READINGS: {
        /* One query for the other per-GPU series: fewer round trips than one per metric. */
        char alt[256];
        size_t o = 0;
        for (int m = M_UTIL + 1; m < M__COUNT; m++)
            o += (size_t)snprintf(alt + o, sizeof alt - o, "%s%s", m > M_UTIL + 1 ? "|" : "",
                                  metric_names[m]);
        n = snprintf(buf, cap,
                     "max by (__name__, instance, Hostname, gpu) ({__name__=~\"" METRIC_PREFIX
                     "(%s)\",job=\"%s\"})",
                     alt, job);
        break;
    }
    case GM_FLEET_Q__COUNT:
        break;
    }
    return n > 0 && (size_t)n < cap ? GM_OK : GM_EINVAL;
}

/* ---- the model ---------------------------------------------------------------------------- */

int gm_fleet_new(gm_fleet **out, gm_error *err)
{
    *out = NULL;
    gm_fleet *f = calloc(1, sizeof *f);
    if (!f)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    f->time_s = NAN;
    f->target_ix = json_object();
    f->names = json_object();
    f->gpu_ix = json_object();
    if (!f->target_ix || !f->names || !f->gpu_ix) {
        gm_fleet_free(f);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    *out = f;
    return GM_OK;
}

static void free_nodes(gm_fleet *f)
{
    for (size_t i = 0; i < f->nnodes; i++) {
        free(f->nodes[i].targets);
        free(f->nodes[i].gpus);
    }
    free(f->nodes);
    f->nodes = NULL;
    f->nnodes = 0;
    f->built = false;
}

void gm_fleet_free(gm_fleet *f)
{
    if (!f)
        return;
    free_nodes(f);
    free(f->targets);
    free(f->gpus);
    json_decref(f->target_ix);
    json_decref(f->names);
    json_decref(f->gpu_ix);
    free(f);
}

/* Grows an array of elements of size sz to hold one more; false when out of memory. */
static bool grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, c * sz);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

/* Fills dst from the label when dst is still empty: a GPU's labels come from whichever of its
 * series has them (its readings carry no UUID or model). */
static void copy_label(char *dst, size_t cap, const json_t *metric, const char *name)
{
    const char *v = gm_prometheus_label(metric, name);
    if (!dst[0] && v)
        snprintf(dst, cap, "%s", v);
}

/* The target of instance, created when new; NULL when out of memory. */
static raw_target *target_of(gm_fleet *f, const char *instance)
{
    json_t *ix = json_object_get(f->target_ix, instance);
    if (ix)
        return &f->targets[json_integer_value(ix)];
    if (!grow((void **)&f->targets, &f->targets_cap, f->ntargets, sizeof *f->targets))
        return NULL;
    raw_target *t = &f->targets[f->ntargets];
    memset(t, 0, sizeof *t);
    snprintf(t->t.instance, sizeof t->t.instance, "%s", instance);
    t->t.last_scrape_s = NAN;
    if (json_object_set_new(f->target_ix, instance, json_integer((json_int_t)f->ntargets)))
        return NULL;
    f->ntargets++;
    return t;
}

typedef struct add_ctx {
    gm_fleet *f;
    gm_fleet_query q;
    gm_error *err;
} add_ctx;

static int oom(add_ctx *c)
{
    return gm_error_set(c->err, GM_ENOMEM, "out of memory");
}

static int add_gpu_sample(add_ctx *c, const gm_prometheus_sample *s)
{
    gm_fleet *f = c->f;
    /* The aggregation of GM_FLEET_Q_GPUS drops the name: those samples are utilization. */
    const char *name = gm_prometheus_label(s->metric, "__name__");
    int m = 0;
    if (!name && c->q == GM_FLEET_Q_GPUS) {
        m = M_UTIL;
    } else {
        if (!name || strncmp(name, METRIC_PREFIX, sizeof METRIC_PREFIX - 1) != 0)
            return GM_OK;
        while (m < M__COUNT && strcmp(name + sizeof METRIC_PREFIX - 1, metric_names[m]) != 0)
            m++;
        if (m == M__COUNT)
            return GM_OK;
    }
    const char *instance = gm_prometheus_label(s->metric, "instance");
    const char *gpu = gm_prometheus_label(s->metric, "gpu");
    const char *uuid = gm_prometheus_label(s->metric, "UUID");
    if (!gpu && !uuid)
        return GM_OK; /* not a GPU's series */
    char key[GM_FLEET_INSTANCE_MAX + GM_UUID_LEN + 8];
    snprintf(key, sizeof key, "%s\n%s", instance ? instance : "", gpu ? gpu : uuid);
    json_t *ix = json_object_get(f->gpu_ix, key);
    raw_gpu *r;
    if (ix) {
        r = &f->gpus[json_integer_value(ix)];
    } else {
        if (!grow((void **)&f->gpus, &f->gpus_cap, f->ngpus, sizeof *f->gpus) ||
            json_object_set_new(f->gpu_ix, key, json_integer((json_int_t)f->ngpus)))
            return oom(c);
        r = &f->gpus[f->ngpus++];
        memset(r, 0, sizeof *r);
        gm_fleet_gpu *g = &r->g;
        g->util_pct = g->fb_used_mib = g->fb_free_mib = g->power_w = g->temp_c = NAN;
        g->xid_last = g->ecc_dbe_volatile = g->row_remap_failure = NAN;
    }
    gm_fleet_gpu *g = &r->g;
    copy_label(g->gpu, sizeof g->gpu, s->metric, "gpu");
    copy_label(g->uuid, sizeof g->uuid, s->metric, "UUID");
    copy_label(g->model, sizeof g->model, s->metric, "modelName");
    copy_label(g->instance, sizeof g->instance, s->metric, "instance");
    copy_label(r->host, sizeof r->host, s->metric, "Hostname");
    double v = isnan(s->value) ? NAN : s->value; /* NaN means "no reading": absent */
    double *slot[M__COUNT] = {&g->util_pct,         &g->fb_used_mib,      &g->fb_free_mib,
                              &g->power_w,          &g->temp_c,           &g->xid_last,
                              &g->ecc_dbe_volatile, &g->row_remap_failure};
    *slot[m] = v;
    return GM_OK;
}

static int add_sample(void *arg, const gm_prometheus_sample *s)
{
    add_ctx *c = arg;
    gm_fleet *f = c->f;
    if (isnan(f->time_s))
        f->time_s = s->time_s;
    const char *instance = gm_prometheus_label(s->metric, "instance");
    switch (c->q) {
    case GM_FLEET_Q_UP:
    case GM_FLEET_Q_SCRAPE_TIME: {
        if (!instance)
            return GM_OK;
        raw_target *t = target_of(f, instance);
        if (!t)
            return oom(c);
        if (c->q == GM_FLEET_Q_UP) {
            t->has_up = true;
            t->t.up = s->value == 1;
        } else if (isfinite(s->value)) {
            t->t.last_scrape_s = s->value;
        }
        return GM_OK;
    }
    case GM_FLEET_Q_NAMES: {
        const char *host = gm_prometheus_label(s->metric, "Hostname");
        if (!instance || !host || !*host)
            return GM_OK;
        /* Two names for one instance in the window (a daemon restarted with another
         * --hostname): the smaller, so the answer does not depend on Prometheus's order. The
         * current series' name wins over both when the target is up. */
        const char *have = json_string_value(json_object_get(f->names, instance));
        if (have && strcmp(have, host) <= 0)
            return GM_OK;
        return json_object_set_new(f->names, instance, json_string(host)) ? oom(c) : GM_OK;
    }
    case GM_FLEET_Q_GPUS:
    case GM_FLEET_Q_READINGS:
        return add_gpu_sample(c, s);
    case GM_FLEET_Q__COUNT:
        break;
    }
    return GM_OK;
}

int gm_fleet_add(gm_fleet *f, gm_fleet_query q, const json_t *data, gm_error *err)
{
    if ((unsigned)q >= GM_FLEET_Q__COUNT)
        return gm_error_set(err, GM_EINVAL, "no such fleet query");
    free_nodes(f);
    add_ctx c = {.f = f, .q = q, .err = err};
    gm_error sub = {0};
    int rc = gm_prometheus_vector_each(data, add_sample, &c, &sub);
    if (rc == GM_EPARSE)
        return gm_error_set(err, rc, "%s", sub.msg);
    if (rc < 0)
        return rc;
    f->have[q] = true;
    return GM_OK;
}

int gm_fleet_fetch(gm_prometheus *p, const char *job, gm_fleet **out, gm_error *err)
{
    *out = NULL;
    if (!gm_fleet_job_ok(job))
        return gm_error_set(err, GM_EINVAL,
                            "\"%.64s\" is not a job name (letters, digits, '_', '-', '.', ':')",
                            job ? job : "");
    gm_fleet *f;
    int rc = gm_fleet_new(&f, err);
    if (rc < 0)
        return rc;
    for (int q = 0; q < GM_FLEET_Q__COUNT; q++) {
        char expr[512];
        gm_fleet_query_expr((gm_fleet_query)q, job, expr, sizeof expr);
        json_t *data = NULL;
        rc = gm_prometheus_query(p, expr, &data, NULL, err);
        if (rc == GM_OK) {
            gm_error sub = {0};
            rc = gm_fleet_add(f, (gm_fleet_query)q, data, &sub);
            if (rc < 0)
                gm_error_set(err, rc, "Prometheus at %s, query %s: %s", gm_prometheus_url(p), expr,
                             sub.msg);
        }
        json_decref(data);
        if (rc < 0) {
            gm_fleet_free(f);
            return rc;
        }
    }
    *out = f;
    return GM_OK;
}

/* ---- building the rows -------------------------------------------------------------------- */

/* The node named name, created when new (named: a Hostname); NULL when out of memory. */
static gm_fleet_node *node_of(gm_fleet *f, json_t *index, size_t *cap, const char *name, bool named)
{
    json_t *ix = json_object_get(index, name);
    if (ix)
        return &f->nodes[json_integer_value(ix)];
    if (!grow((void **)&f->nodes, cap, f->nnodes, sizeof *f->nodes) ||
        json_object_set_new(index, name, json_integer((json_int_t)f->nnodes)))
        return NULL;
    gm_fleet_node *n = &f->nodes[f->nnodes++];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->named = named;
    return n;
}

static bool push_target(gm_fleet_node *n, const gm_fleet_target *t)
{
    void *p = realloc(n->targets, (n->ntargets + 1) * sizeof *n->targets);
    if (!p)
        return false;
    n->targets = p;
    n->targets[n->ntargets++] = *t;
    return true;
}

static bool push_gpu(gm_fleet_node *n, const gm_fleet_gpu *g)
{
    /* Nodes have a handful of GPUs: growing one at a time costs nothing that matters. */
    void *p = realloc(n->gpus, (n->ngpus + 1) * sizeof *n->gpus);
    if (!p)
        return false;
    n->gpus = p;
    n->gpus[n->ngpus++] = *g;
    return true;
}

/* gpu labels are driver indices: "2" before "10". */
static int cmp_gpu(const void *a, const void *b)
{
    const gm_fleet_gpu *x = a, *y = b;
    size_t lx = strlen(x->gpu), ly = strlen(y->gpu);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    int c = strcmp(x->gpu, y->gpu);
    if (c)
        return c;
    c = strcmp(x->instance, y->instance);
    return c ? c : strcmp(x->uuid, y->uuid);
}

static int cmp_target(const void *a, const void *b)
{
    return strcmp(((const gm_fleet_target *)a)->instance, ((const gm_fleet_target *)b)->instance);
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const gm_fleet_node *)a)->name, ((const gm_fleet_node *)b)->name);
}

/* Groups targets and GPUs into nodes. False when out of memory (then no node is kept). */
static bool build(gm_fleet *f)
{
    free_nodes(f);
    json_t *index = json_object();   /* node name -> index in nodes */
    json_t *current = json_object(); /* instance -> Hostname of its current series */
    size_t cap = 0;
    bool ok = index && current;
    for (size_t i = 0; ok && i < f->ngpus; i++)
        if (f->gpus[i].host[0] && !json_object_get(current, f->gpus[i].g.instance))
            ok = json_object_set_new(current, f->gpus[i].g.instance,
                                     json_string(f->gpus[i].host)) == 0;
    for (size_t i = 0; ok && i < f->ntargets; i++) {
        const gm_fleet_target *t = &f->targets[i].t;
        const char *host = json_string_value(json_object_get(current, t->instance));
        if (!host)
            host = json_string_value(json_object_get(f->names, t->instance));
        gm_fleet_node *n = node_of(f, index, &cap, host ? host : t->instance, host != NULL);
        ok = n && push_target(n, t);
    }
    for (size_t i = 0; ok && i < f->ngpus; i++) {
        const raw_gpu *r = &f->gpus[i];
        const char *name = r->host[0] ? r->host : r->g.instance;
        gm_fleet_node *n = node_of(f, index, &cap, name, r->host[0] != '\0');
        ok = n && push_gpu(n, &r->g);
    }
    json_decref(index);
    json_decref(current);
    if (!ok) {
        free_nodes(f);
        return false;
    }
    for (size_t i = 0; i < f->nnodes; i++) {
        gm_fleet_node *n = &f->nodes[i];
        if (n->ngpus > 1)
            qsort(n->gpus, n->ngpus, sizeof *n->gpus, cmp_gpu);
        if (n->ntargets > 1)
            qsort(n->targets, n->ntargets, sizeof *n->targets, cmp_target);
    }
    if (f->nnodes > 1)
        qsort(f->nodes, f->nnodes, sizeof *f->nodes, cmp_node);
    f->built = true;
    return true;
}

static void add_problem(gm_fleet_node *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_problem(gm_fleet_node *n, const char *fmt, ...)
{
    size_t o = strlen(n->problems);
    if (o + 3 >= sizeof n->problems)
        return;
    if (o)
        o += (size_t)snprintf(n->problems + o, sizeof n->problems - o, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->problems + o, sizeof n->problems - o, fmt, ap);
    va_end(ap);
}

static double mem_pct(const gm_fleet_gpu *g)
{
    double total = g->fb_used_mib + g->fb_free_mib;
    return isfinite(total) && total > 0 ? 100.0 * g->fb_used_mib / total : NAN;
}

static void evaluate_node(gm_fleet_node *n, const gm_fleet_thresholds *t)
{
    n->up = n->ntargets > 0;
    n->last_scrape_s = NAN;
    for (size_t i = 0; i < n->ntargets; i++) {
        n->up &= n->targets[i].up;
        double s = n->targets[i].last_scrape_s;
        if (isfinite(s) && (isnan(n->last_scrape_s) || s < n->last_scrape_s))
            n->last_scrape_s = s;
    }
    n->idle = 0;
    n->util_mean_pct = n->mem_used_mib = n->mem_total_mib = n->mem_used_pct = NAN;
    n->power_w = n->hottest_c = NAN;
    n->hottest_gpu = NULL;
    n->health = GM_FLEET_HEALTH_UNKNOWN;
    n->problems[0] = '\0';
    double util_sum = 0, used = 0, total = 0, power = 0;
    unsigned util_n = 0, mem_n = 0, power_n = 0;
    bool health_seen = false;
    for (size_t i = 0; i < n->ngpus; i++) {
        gm_fleet_gpu *g = &n->gpus[i];
        double mp = mem_pct(g);
        /* The idle rule of select, as the recording rule writes it: both readings present, both
         * below their threshold. */
        g->idle = isfinite(g->util_pct) && isfinite(mp) && g->util_pct < t->max_util_pct &&
                  mp < t->max_mem_pct;
        n->idle += g->idle;
        if (isfinite(g->util_pct)) {
            util_sum += g->util_pct;
            util_n++;
        }
        if (isfinite(mp)) {
            used += g->fb_used_mib;
            total += g->fb_used_mib + g->fb_free_mib;
            mem_n++;
        }
        if (isfinite(g->power_w)) {
            power += g->power_w;
            power_n++;
        }
        if (isfinite(g->temp_c) && (isnan(n->hottest_c) || g->temp_c > n->hottest_c)) {
            n->hottest_c = g->temp_c;
            n->hottest_gpu = g->gpu;
        }
        health_seen |=
            !isnan(g->xid_last) || !isnan(g->ecc_dbe_volatile) || !isnan(g->row_remap_failure);
        if (g->xid_last > 0)
            add_problem(n, "GPU %s: XID %.0f", g->gpu, g->xid_last);
        if (g->ecc_dbe_volatile > 0)
            add_problem(n, "GPU %s: %.0f uncorrectable ECC error%s", g->gpu, g->ecc_dbe_volatile,
                        g->ecc_dbe_volatile == 1 ? "" : "s");
        if (g->row_remap_failure > 0)
            add_problem(n, "GPU %s: row remapping failed", g->gpu);
    }
    if (util_n)
        n->util_mean_pct = util_sum / util_n;
    if (mem_n) {
        n->mem_used_mib = used;
        n->mem_total_mib = total;
        n->mem_used_pct = total > 0 ? 100.0 * used / total : NAN;
    }
    if (power_n)
        n->power_w = power;
    if (n->problems[0])
        n->health = GM_FLEET_HEALTH_DEGRADED;
    else if (health_seen)
        n->health = GM_FLEET_HEALTH_OK;
}

void gm_fleet_evaluate(gm_fleet *f, const gm_fleet_thresholds *t)
{
    if (!f->built && !build(f))
        return; /* out of memory: no rows */
    for (size_t i = 0; i < f->nnodes; i++)
        evaluate_node(&f->nodes[i], t);
}

size_t gm_fleet_node_count(const gm_fleet *f)
{
    return f->nnodes;
}

gm_fleet_node *gm_fleet_node_at(gm_fleet *f, size_t i)
{
    return i < f->nnodes ? &f->nodes[i] : NULL;
}

double gm_fleet_time(const gm_fleet *f)
{
    return f->time_s;
}

/* ---- choosing a node ---------------------------------------------------------------------- */

/* Negative when a is the better node for the job (both fit). */
static int better(const gm_fleet_node *a, const gm_fleet_node *b)
{
    if (a->idle != b->idle)
        return a->idle > b->idle ? -1 : 1;
    double ua = isnan(a->util_mean_pct) ? INFINITY : a->util_mean_pct;
    double ub = isnan(b->util_mean_pct) ? INFINITY : b->util_mean_pct;
    if (ua != ub)
        return ua < ub ? -1 : 1;
    return strcmp(a->name, b->name);
}

static const char *plural(unsigned n)
{
    return n == 1 ? "" : "s";
}

long gm_fleet_select(gm_fleet *f, unsigned need)
{
    long best = -1;
    for (size_t i = 0; i < f->nnodes; i++) {
        gm_fleet_node *n = &f->nodes[i];
        n->chosen = false;
        n->fits = n->up && n->idle >= need;
        if (n->fits && (best < 0 || better(n, &f->nodes[best]) < 0))
            best = (long)i;
    }
    const gm_fleet_node *b = best >= 0 ? &f->nodes[best] : NULL;
    for (size_t i = 0; i < f->nnodes; i++) {
        gm_fleet_node *n = &f->nodes[i];
        char *r = n->reason;
        size_t cap = sizeof n->reason;
        if (!n->up) {
            const char *down = NULL;
            for (size_t k = 0; k < n->ntargets && !down; k++)
                if (!n->targets[k].up)
                    down = n->targets[k].instance;
            if (down)
                snprintf(r, cap, "its target %s is down", down);
            else
                snprintf(r, cap, "no scrape target of the job reports it");
        } else if (!n->fits) {
            snprintf(r, cap, "%u idle GPU%s, %u needed", n->idle, plural(n->idle), need);
        } else if (n == b) {
            n->chosen = true;
            if (isnan(n->util_mean_pct))
                snprintf(r, cap, "chosen: the most idle GPUs (%u)", n->idle);
            else
                snprintf(r, cap, "chosen: the most idle GPUs (%u), mean utilization %.3g %%",
                         n->idle, n->util_mean_pct);
        } else if (n->idle < b->idle) {
            snprintf(r, cap, "fits (%u idle), but %s has more idle GPUs (%u)", n->idle, b->name,
                     b->idle);
        } else if (!isnan(b->util_mean_pct) &&
                   (isnan(n->util_mean_pct) || n->util_mean_pct > b->util_mean_pct)) {
            snprintf(r, cap,
                     "fits (%u idle), but %s has as many idle GPUs and a lower mean utilization "
                     "(%.3g %% vs %.3g %%)",
                     n->idle, b->name, b->util_mean_pct, n->util_mean_pct);
        } else {
            snprintf(r, cap,
                     "fits (%u idle), ties with %s on idle GPUs and mean utilization; %s comes "
                     "first by name",
                     n->idle, b->name, b->name);
        }
    }
    return best;
}

/* ---- output ------------------------------------------------------------------------------- */

void gm_fleet_node_url(const gm_fleet_node *n, char *buf, size_t cap)
{
    if (cap)
        buf[0] = '\0';
    const gm_fleet_target *t = NULL;
    for (size_t i = 0; i < n->ntargets && !t; i++)
        if (n->targets[i].up)
            t = &n->targets[i];
    if (!t && n->ntargets)
        t = &n->targets[0];
    if (!t)
        return;
    /* HOST:PORT, or [v6]:PORT: nothing that could turn into another URL (a path, a scheme, a
     * user) when pasted after "http://". */
    const char *in = t->instance;
    const char *colon = strrchr(in, ':');
    if (!colon || colon == in || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
        return;
    for (const char *p = in; p < colon; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-_[]:", *p))
            return;
    snprintf(buf, cap, "http://%s/", in);
}

static json_t *time_json(double s)
{
    if (!isfinite(s))
        return json_null();
    char buf[40];
    gm_json_time((int64_t)llround(s * 1000.0), buf, sizeof buf);
    return json_string(buf);
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

/* Sets key to v, taking v; false when either is NULL (out of memory). */
static bool put(json_t *o, const char *key, json_t *v)
{
    return o && v && json_object_set_new(o, key, v) == 0;
}

static json_t *gpu_json(const gm_fleet_gpu *g)
{
    json_t *j = json_object();
    bool ok = put(j, "gpu", json_string(g->gpu));
    ok &= put(j, "uuid", str_or_null(g->uuid));
    ok &= put(j, "model", str_or_null(g->model));
    ok &= put(j, "instance", str_or_null(g->instance));
    ok &= put(j, "idle", json_boolean(g->idle));
    ok &= put(j, "utilization_percent", gm_json_number(g->util_pct));
    double total = g->fb_used_mib + g->fb_free_mib;
    ok &= put(j, "memory_used_mib", gm_json_number(g->fb_used_mib));
    ok &= put(j, "memory_total_mib", gm_json_number(total));
    ok &= put(j, "memory_used_percent", gm_json_number(mem_pct(g)));
    ok &= put(j, "power_w", gm_json_number(g->power_w));
    ok &= put(j, "temperature_c", gm_json_number(g->temp_c));
    ok &= put(j, "xid_last", gm_json_number(g->xid_last));
    ok &= put(j, "ecc_uncorrected_volatile", gm_json_number(g->ecc_dbe_volatile));
    ok &= put(j, "row_remap_failure",
              isnan(g->row_remap_failure) ? json_null() : json_boolean(g->row_remap_failure > 0));
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static const char *health_name(gm_fleet_health h)
{
    return h == GM_FLEET_HEALTH_OK ? "ok" : h == GM_FLEET_HEALTH_DEGRADED ? "degraded" : "unknown";
}

static json_t *node_json(const gm_fleet_node *n, double now_s, bool with_selection)
{
    json_t *j = json_object();
    char url[GM_FLEET_INSTANCE_MAX + 16];
    gm_fleet_node_url(n, url, sizeof url);
    bool ok = put(j, "name", json_string(n->name));
    ok &= put(j, "url", str_or_null(url));
    ok &= put(j, "up", json_boolean(n->up));
    json_t *targets = json_array();
    for (size_t i = 0; ok && i < n->ntargets; i++) {
        const gm_fleet_target *t = &n->targets[i];
        ok &= json_array_append_new(targets, json_pack("{s:s, s:b, s:o}", "instance", t->instance,
                                                       "up", t->up, "last_scrape",
                                                       time_json(t->last_scrape_s))) == 0;
    }
    ok &= put(j, "targets", targets);
    ok &= put(j, "last_scrape", time_json(n->last_scrape_s));
    ok &= put(j, "last_scrape_age_seconds",
              isfinite(n->last_scrape_s) && isfinite(now_s)
                  ? gm_json_number(fmax(0, now_s - n->last_scrape_s))
                  : json_null());
    /* A node that is down and has no series left: its GPUs are unknown, not zero. */
    bool known = n->up || n->ngpus;
    ok &= put(j, "gpu_count", known ? json_integer((json_int_t)n->ngpus) : json_null());
    ok &= put(j, "idle_gpu_count", known ? json_integer(n->idle) : json_null());
    ok &= put(j, "utilization_mean_percent", gm_json_number(n->util_mean_pct));
    ok &= put(j, "memory",
              json_pack("{s:o, s:o, s:o}", "used_mib", gm_json_number(n->mem_used_mib), "total_mib",
                        gm_json_number(n->mem_total_mib), "used_percent",
                        gm_json_number(n->mem_used_pct)));
    ok &= put(j, "power_w", gm_json_number(n->power_w));
    ok &= put(j, "hottest",
              n->hottest_gpu ? json_pack("{s:s, s:o}", "gpu", n->hottest_gpu, "temperature_c",
                                         gm_json_number(n->hottest_c))
                             : json_null());
    json_t *problems = json_array();
    for (const char *p = n->problems; ok && *p;) {
        const char *end = strstr(p, "; ");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        ok &= json_array_append_new(problems, json_stringn(p, len)) == 0;
        p = end ? end + 2 : p + len;
    }
    ok &= put(j, "health",
              json_pack("{s:s, s:o}", "status", health_name(n->health), "problems",
                        problems ? problems : json_null()));
    json_t *gpus = json_array();
    for (size_t i = 0; ok && i < n->ngpus; i++)
        ok &= json_array_append_new(gpus, gpu_json(&n->gpus[i])) == 0;
    ok &= put(j, "gpus", gpus);
    if (with_selection) {
        ok &= put(j, "fits", json_boolean(n->fits));
        ok &= put(j, "chosen", json_boolean(n->chosen));
        ok &= put(j, "reason", json_string(n->reason));
    }
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

json_t *gm_fleet_json(const gm_fleet *f, const gm_fleet_thresholds *t, bool with_selection)
{
    json_t *j = json_object();
    json_t *nodes = json_array();
    unsigned up = 0, gpus = 0, idle = 0;
    bool ok = j && nodes;
    for (size_t i = 0; ok && i < f->nnodes; i++) {
        const gm_fleet_node *n = &f->nodes[i];
        up += n->up;
        gpus += (unsigned)n->ngpus;
        idle += n->idle;
        ok &= json_array_append_new(nodes, node_json(n, f->time_s, with_selection)) == 0;
    }
    ok &= put(j, "time", time_json(f->time_s));
    ok &= put(j, "thresholds",
              json_pack("{s:o, s:o}", "max_util_percent", gm_json_number(t->max_util_pct),
                        "max_memory_percent", gm_json_number(t->max_mem_pct)));
    ok &= put(j, "totals",
              json_pack("{s:I, s:I, s:I, s:I}", "nodes", (json_int_t)f->nnodes, "nodes_up",
                        (json_int_t)up, "gpus", (json_int_t)gpus, "idle_gpus", (json_int_t)idle));
    ok &= put(j, "nodes", nodes);
    nodes = NULL;
    if (!ok) {
        json_decref(nodes);
        json_decref(j);
        return NULL;
    }
    return j;
}
