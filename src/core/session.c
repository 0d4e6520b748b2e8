/* session.c - monitoring sessions: per-GPU exact statistics, energy and the samples of the
 * timeline (written by core/timeline.c). */
#include "core/session.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/json.h"
#include "base/utf8.h"
#include "core/stats.h"
#include "base/clock.h"
#include "base/error.h"

static const char *const metric_names[GM_SM__COUNT] = {
#define GM__SESSION_METRIC_NAME(id, name, stats) name,
    GM_SESSION_METRIC_MAP(GM__SESSION_METRIC_NAME)
#undef GM__SESSION_METRIC_NAME
};

static const bool metric_has_stats[GM_SM__COUNT] = {
#define GM__SESSION_METRIC_STATS(id, name, stats) stats,
    GM_SESSION_METRIC_MAP(GM__SESSION_METRIC_STATS)
#undef GM__SESSION_METRIC_STATS
};

/* Energy bookkeeping of one GPU (see the top of session.h for the method). */
typedef struct energy_acc {
    size_t counter_readings;
    double counter_last_j;
    double counter_sum_j;
    size_t power_readings;
    double power_last_w;
    double power_last_t;
    double integral_j;
} energy_acc;

struct gm_session {
    char id[GM_SESSION_ID_LEN];
    char *label;
    char kind[16];
    json_t *command; /* array of strings, or NULL */
    bool has_exit;
    int exit_code;
    int signal;
    json_t *extra; /* attached top-level fields */
    double interval_s;
    int64_t started_ms, ended_ms;
    int64_t start_mono_ms, end_mono_ms;
    bool restored; /* rebuilt by the store: no monotonic clock of its own */
    bool finished;

    bool gpus_fixed;
    size_t ngpus;
    gm_session_gpu gpus[GM_MAX_GPUS];
    gm_stats stats[GM_MAX_GPUS][GM_SM__COUNT];
    gm_values values[GM_MAX_GPUS][GM_SM__COUNT];
    energy_acc energy[GM_MAX_GPUS];

    /* Timeline: t[i] and ngpus * GM_SM__COUNT values per sample, for the first n samples
     * (all of them unless a limit is set). */
    size_t n, cap;
    double *t;
    double *v;
    size_t limit;  /* most samples kept in the timeline and for percentiles; 0: no limit */
    size_t total;  /* samples added: the streaming statistics and the energy cover them all */
    double last_t; /* the newest sample, kept whatever the limit */
    double last_v[GM_MAX_GPUS * GM_SM__COUNT];
};

const char *gm_session_metric_name(int m)
{
    return m >= 0 && m < GM_SM__COUNT ? metric_names[m] : NULL;
}

void gm_session_make_id(char *buf, size_t len, int64_t started_ms)
{
    time_t sec = (time_t)(started_ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char stamp[20];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    unsigned char r[3] = {0};
    /* Random bits only disambiguate sessions started in the same second; when getrandom is
     * unavailable, the monotonic clock's nanoseconds do that job well enough. */
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r[0] = (unsigned char)ts.tv_nsec;
        r[1] = (unsigned char)(ts.tv_nsec >> 8);
        r[2] = (unsigned char)(ts.tv_nsec >> 16);
    }
    snprintf(buf, len, "%s-%02x%02x%02x", stamp, r[0], r[1], r[2]);
}

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

int gm_session_new(const char *label, const unsigned *gpus, size_t ngpus, double interval_s,
                   gm_session **out, gm_error *err)
{
    *out = NULL;
    if (ngpus > GM_MAX_GPUS || !(interval_s >= 0) || (ngpus && !gpus))
        return gm_error_set(err, GM_EINVAL, "session: invalid GPU list or interval");
    gm_session *s = calloc(1, sizeof *s);
    if (!s)
        return gm_error_set(err, GM_ENOMEM, "session: out of memory");
    if (label && !(s->label = strdup(label))) {
        free(s);
        return gm_error_set(err, GM_ENOMEM, "session: out of memory");
    }
    snprintf(s->kind, sizeof s->kind, "session");
    s->interval_s = interval_s;
    s->started_ms = gm_clock_wall_ms();
    s->start_mono_ms = gm_clock_mono_ms();
    gm_session_make_id(s->id, sizeof s->id, s->started_ms);
    for (size_t k = 0; k < GM_MAX_GPUS; k++)
        for (int m = 0; m < GM_SM__COUNT; m++)
            gm_stats_init(&s->stats[k][m]);
    if (gpus) {
        unsigned sorted[GM_MAX_GPUS];
        if (ngpus) {
            memcpy(sorted, gpus, ngpus * sizeof *gpus);
            qsort(sorted, ngpus, sizeof *sorted, cmp_unsigned);
        }
        for (size_t i = 0; i < ngpus; i++)
            if (s->ngpus == 0 || s->gpus[s->ngpus - 1].index != sorted[i])
                s->gpus[s->ngpus++].index = sorted[i];
        s->gpus_fixed = true;
    }
    *out = s;
    return GM_OK;
}

void gm_session_free(gm_session *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < GM_MAX_GPUS; k++)
        for (int m = 0; m < GM_SM__COUNT; m++)
            gm_values_free(&s->values[k][m]);
    free(s->t);
    free(s->v);
    free(s->label);
    json_decref(s->command);
    json_decref(s->extra);
    free(s);
}

static void add_energy(energy_acc *e, double t, const double *v)
{
    double c = v[GM_SM_ENERGY_J];
    if (isfinite(c)) {
        /* A counter that steps back was reset (driver reload): that interval is unknown, so
         * it adds nothing rather than a negative or guessed amount. */
        if (e->counter_readings && c >= e->counter_last_j)
            e->counter_sum_j += c - e->counter_last_j;
        e->counter_last_j = c;
        e->counter_readings++;
    }
    double p = v[GM_SM_POWER_W];
    if (isfinite(p)) {
        if (e->power_readings && t > e->power_last_t)
            e->integral_j += (p + e->power_last_w) / 2.0 * (t - e->power_last_t);
        e->power_last_w = p;
        e->power_last_t = t;
        e->power_readings++;
    }
}

/* Grows the timeline by one slot when full, never past the limit. */
static int grow_timeline(gm_session *s, size_t width, gm_error *err)
{
    if (s->n < s->cap)
        return GM_OK;
    size_t cap = s->cap ? s->cap * 2 : 64;
    if (s->limit && cap > s->limit)
        cap = s->limit; /* a bounded session allocates exactly its bound, not up to twice it */
    double *nt = realloc(s->t, cap * sizeof *nt);
    if (!nt)
        return gm_error_set(err, GM_ENOMEM, "session: out of memory for the timeline");
    s->t = nt;
    if (width) {
        double *nv = realloc(s->v, cap * width * sizeof *nv);
        if (!nv)
            return gm_error_set(err, GM_ENOMEM, "session: out of memory for the timeline");
        s->v = nv;
    }
    s->cap = cap;
    return GM_OK;
}

int gm_session_add_values(gm_session *s, double t_s, const double *values, gm_error *err)
{
    if (s->finished)
        return gm_error_set(err, GM_ESTATE, "session %s is finished", s->id);
    s->gpus_fixed = true;
    size_t width = s->ngpus * GM_SM__COUNT;
    /* Past the limit the sample still feeds the streaming statistics and the energy, but
     * neither the timeline nor the values kept for percentiles. */
    bool keep = !s->limit || s->n < s->limit;
    if (keep) {
        int rc = grow_timeline(s, width, err);
        if (rc < 0)
            return rc;
        /* Keep the values for percentiles first, so a failed allocation leaves the sample out
         * of every statistic instead of half of them. */
        for (size_t k = 0; k < s->ngpus; k++)
            for (int m = 0; m < GM_SM__COUNT; m++)
                if (metric_has_stats[m] &&
                    gm_values_add(&s->values[k][m], values[k * GM_SM__COUNT + m], err) < 0)
                    return err ? err->code : GM_ENOMEM;
        s->t[s->n] = t_s;
        if (width)
            memcpy(s->v + s->n * width, values, width * sizeof *values);
        s->n++;
    }
    s->total++;
    s->last_t = t_s;
    if (width)
        memcpy(s->last_v, values, width * sizeof *values);
    for (size_t k = 0; k < s->ngpus; k++) {
        const double *gv = values + k * GM_SM__COUNT;
        for (int m = 0; m < GM_SM__COUNT; m++)
            if (metric_has_stats[m])
                gm_stats_add(&s->stats[k][m], gv[m]);
        add_energy(&s->energy[k], t_s, gv);
    }
    return GM_OK;
}

int gm_session_set_sample_limit(gm_session *s, size_t n)
{
    if (n && s->n > n)
        return GM_ESTATE;
    s->limit = n;
    return GM_OK;
}

size_t gm_session_sample_limit(const gm_session *s)
{
    return s->limit;
}

static void gpu_values(const gm_gpu *g, double *v)
{
    for (int m = 0; m < GM_SM__COUNT; m++)
        v[m] = NAN;
    if (!g || g->lost)
        return;
    if (gm_gpu_has(g, GM_M_UTIL_GPU_PCT))
        v[GM_SM_UTIL] = g->v[GM_M_UTIL_GPU_PCT];
    if (gm_gpu_has(g, GM_M_MEM_USED_BYTES)) {
        v[GM_SM_MEM_USED_MB] =
            g->v[GM_M_MEM_USED_BYTES] * gm_metric_get(GM_M_MEM_USED_BYTES)->scale;
        if (gm_gpu_has(g, GM_M_MEM_TOTAL_BYTES) && g->v[GM_M_MEM_TOTAL_BYTES] > 0)
            v[GM_SM_MEM_PCT] = g->v[GM_M_MEM_USED_BYTES] / g->v[GM_M_MEM_TOTAL_BYTES] * 100.0;
    }
    if (gm_gpu_has(g, GM_M_TEMP_C))
        v[GM_SM_TEMP_C] = g->v[GM_M_TEMP_C];
    if (gm_gpu_has(g, GM_M_POWER_MW))
        v[GM_SM_POWER_W] = g->v[GM_M_POWER_MW] / 1000.0;
    if (gm_gpu_has(g, GM_M_ENERGY_MJ))
        v[GM_SM_ENERGY_J] = g->v[GM_M_ENERGY_MJ] / 1000.0;
}

int gm_session_add(gm_session *s, const gm_snapshot *snap, gm_error *err)
{
    if (s->finished)
        return gm_error_set(err, GM_ESTATE, "session %s is finished", s->id);
    if (!s->gpus_fixed) {
        for (unsigned i = 0; i < snap->gpu_count && s->ngpus < GM_MAX_GPUS; i++)
            s->gpus[s->ngpus++].index = snap->gpus[i].index;
        s->gpus_fixed = true;
    }
    double v[GM_MAX_GPUS * GM_SM__COUNT];
    for (size_t k = 0; k < s->ngpus; k++) {
        const gm_gpu *g = gm_snapshot_gpu(snap, s->gpus[k].index);
        /* Names come from the first snapshot that has them (a lost GPU may lack them). */
        if (g && !s->gpus[k].name[0] && g->name[0])
            snprintf(s->gpus[k].name, sizeof s->gpus[k].name, "%s", g->name);
        if (g && !s->gpus[k].uuid[0] && g->uuid[0])
            snprintf(s->gpus[k].uuid, sizeof s->gpus[k].uuid, "%s", g->uuid);
        gpu_values(g, v + k * GM_SM__COUNT);
    }
    double t = (double)(snap->mono_ms - s->start_mono_ms) / 1000.0;
    return gm_session_add_values(s, t, v, err);
}

void gm_session_finish(gm_session *s)
{
    if (s->finished)
        return;
    s->finished = true;
    s->ended_ms = gm_clock_wall_ms();
    s->end_mono_ms = gm_clock_mono_ms();
}

bool gm_session_finished(const gm_session *s)
{
    return s->finished;
}

const char *gm_session_id(const gm_session *s)
{
    return s->id;
}

const char *gm_session_label(const gm_session *s)
{
    return s->label;
}

const char *gm_session_kind(const gm_session *s)
{
    return s->kind;
}

double gm_session_interval(const gm_session *s)
{
    return s->interval_s;
}

int64_t gm_session_started_ms(const gm_session *s)
{
    return s->started_ms;
}

int64_t gm_session_ended_ms(const gm_session *s)
{
    return s->ended_ms;
}

double gm_session_duration(const gm_session *s)
{
    if (s->restored) {
        /* A stored session that never finished lasted at least until its last sample. */
        if (s->ended_ms)
            return (double)(s->ended_ms - s->started_ms) / 1000.0;
        return s->total ? s->last_t : 0.0;
    }
    int64_t end = s->finished ? s->end_mono_ms : gm_clock_mono_ms();
    return (double)(end - s->start_mono_ms) / 1000.0;
}

size_t gm_session_gpu_count(const gm_session *s)
{
    return s->ngpus;
}

const gm_session_gpu *gm_session_gpu_at(const gm_session *s, size_t k)
{
    return k < s->ngpus ? &s->gpus[k] : NULL;
}

size_t gm_session_sample_count(const gm_session *s)
{
    return s->total;
}

size_t gm_session_timeline_count(const gm_session *s)
{
    return s->n;
}

int gm_session_sample(const gm_session *s, size_t i, double *t_s, const double **values)
{
    if (i >= s->n)
        return GM_EINVAL;
    *t_s = s->t[i];
    *values = s->v ? s->v + i * s->ngpus * GM_SM__COUNT : NULL;
    return GM_OK;
}

int gm_session_last(const gm_session *s, double *t_s, const double **values)
{
    if (!s->total)
        return GM_EINVAL;
    *t_s = s->last_t;
    *values = s->ngpus ? s->last_v : NULL;
    return GM_OK;
}

int gm_session_set_kind(gm_session *s, const char *kind)
{
    if (!kind || !*kind || strlen(kind) >= sizeof s->kind)
        return GM_EINVAL;
    snprintf(s->kind, sizeof s->kind, "%s", kind);
    return GM_OK;
}

int gm_session_set_command(gm_session *s, const char *const *argv)
{
    json_decref(s->command);
    s->command = NULL;
    if (!argv)
        return GM_OK;
    json_t *a = json_array();
    if (!a)
        return GM_ENOMEM;
    for (size_t i = 0; argv[i]; i++) {
        /* An argument that is not text is still shown, its stray bytes as U+FFFD. */
        json_t *str = gm_json_str(argv[i]);
        if (!str || json_array_append_new(a, str) < 0) {
            json_decref(a);
            return GM_ENOMEM;
        }
    }
    s->command = a;
    return GM_OK;
}

void gm_session_set_exit(gm_session *s, int exit_code, int signal)
{
    s->has_exit = true;
    s->exit_code = exit_code;
    s->signal = signal;
}

const json_t *gm_session_command(const gm_session *s)
{
    return s->command;
}

const json_t *gm_session_attached(const gm_session *s)
{
    return s->extra;
}

bool gm_session_exit(const gm_session *s, int *exit_code, int *signal)
{
    if (s->has_exit && exit_code)
        *exit_code = s->exit_code;
    if (s->has_exit && signal)
        *signal = s->signal;
    return s->has_exit;
}

int gm_session_attach(gm_session *s, const char *key, json_t *value)
{
    if (!key || !value) {
        json_decref(value);
        return GM_EINVAL;
    }
    if (!s->extra && !(s->extra = json_object())) {
        json_decref(value);
        return GM_ENOMEM;
    }
    return json_object_set_new(s->extra, key, value) == 0 ? GM_OK : GM_ENOMEM;
}

int gm_session_set_id(gm_session *s, const char *id)
{
    if (!id || !*id || strlen(id) >= sizeof s->id)
        return GM_EINVAL;
    snprintf(s->id, sizeof s->id, "%s", id);
    return GM_OK;
}

int gm_session_restore(gm_session *s, const char *id, int64_t started_ms, int64_t ended_ms)
{
    if (!id || strlen(id) >= sizeof s->id)
        return GM_EINVAL;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->started_ms = started_ms;
    s->ended_ms = ended_ms;
    s->restored = true;
    return GM_OK;
}

void gm_session_set_gpu(gm_session *s, unsigned index, const char *name, const char *uuid)
{
    for (size_t k = 0; k < s->ngpus; k++) {
        if (s->gpus[k].index != index)
            continue;
        snprintf(s->gpus[k].name, sizeof s->gpus[k].name, "%s", name ? name : "");
        snprintf(s->gpus[k].uuid, sizeof s->gpus[k].uuid, "%s", uuid ? uuid : "");
    }
}

/* ---- JSON ------------------------------------------------------------------------------- */

static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *str_or_null(const char *str)
{
    return str && *str ? gm_json_str(str) : json_null();
}

static json_t *time_or_null(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    char buf[40];
    gm_json_time(ms, buf, sizeof buf);
    return json_string(buf);
}

static json_t *metric_stats_json(const gm_stats *st, gm_values *vals, bool seed_samples)
{
    /* Absent in every sample: null, never a block of zeros. */
    if (st->count == 0)
        return json_null();
    json_t *o =
        json_pack("{s:f, s:f, s:f, s:o, s:o, s:I}", "min", st->min, "max", st->max, "mean",
                  st->mean, "p50", real_or_null(gm_values_percentile(vals, 50)), "p95",
                  real_or_null(gm_values_percentile(vals, 95)), "count", (json_int_t)st->count);
    if (o && seed_samples)
        json_object_set_new(o, "samples", json_integer((json_int_t)st->count));
    return o;
}

static bool gpu_energy(const gm_session *s, size_t k, double *joules, const char **source)
{
    const energy_acc *e = &s->energy[k];
    if (e->counter_readings >= 2) {
        *joules = e->counter_sum_j;
        *source = "counter";
        return true;
    }
    if (e->power_readings >= 2) {
        *joules = e->integral_j;
        *source = "power_integration";
        return true;
    }
    return false;
}

static json_t *gpu_stats_json(gm_session *s)
{
    json_t *all = json_object();
    if (!all)
        return NULL;
    for (size_t k = 0; k < s->ngpus; k++) {
        json_t *g = json_pack("{s:o, s:o}", "name", str_or_null(s->gpus[k].name), "uuid",
                              str_or_null(s->gpus[k].uuid));
        if (!g)
            goto oom;
        for (int m = 0; m < GM_SM__COUNT; m++)
            if (metric_has_stats[m])
                json_object_set_new(
                    g, metric_names[m],
                    metric_stats_json(&s->stats[k][m], &s->values[k][m], m == GM_SM_UTIL));
        double joules;
        const char *source;
        if (gpu_energy(s, k, &joules, &source)) {
            json_object_set_new(g, "energy_j", json_real(joules));
            json_object_set_new(g, "energy_source", json_string(source));
        } else {
            json_object_set_new(g, "energy_j", json_null());
            json_object_set_new(g, "energy_source", json_null());
        }
        char key[16];
        snprintf(key, sizeof key, "%u", s->gpus[k].index);
        json_object_set_new(all, key, g);
    }
    return all;
oom:
    json_decref(all);
    return NULL;
}

static json_t *brief_json(double sum, double count, double max, bool energy_known, double energy)
{
    return json_pack("{s:o, s:o, s:o}", "utilization_mean",
                     count > 0 ? json_real(sum / count) : json_null(), "utilization_max",
                     count > 0 ? json_real(max) : json_null(), "energy_j",
                     energy_known ? json_real(energy) : json_null());
}

json_t *gm_session_brief(const gm_session *s)
{
    double sum = 0, count = 0, max = -INFINITY, energy = 0;
    bool energy_known = s->ngpus > 0;
    for (size_t k = 0; k < s->ngpus; k++) {
        const gm_stats *u = &s->stats[k][GM_SM_UTIL];
        if (u->count > 0) {
            sum += u->mean * (double)u->count;
            count += (double)u->count;
            max = fmax(max, u->max);
        }
        double joules;
        const char *source;
        if (gpu_energy(s, k, &joules, &source))
            energy += joules;
        else
            energy_known = false;
    }
    return brief_json(sum, count, max, energy_known, energy);
}

json_t *gm_session_doc_brief(const json_t *doc)
{
    double sum = 0, count = 0, max = -INFINITY;
    const char *key;
    json_t *g;
    json_object_foreach((json_t *)json_object_get(doc, "gpu_stats"), key, g)
    {
        json_t *u = json_object_get(g, "utilization");
        double n = json_number_value(json_object_get(u, "count"));
        if (json_is_object(u) && n > 0) {
            sum += json_number_value(json_object_get(u, "mean")) * n;
            count += n;
            max = fmax(max, json_number_value(json_object_get(u, "max")));
        }
    }
    json_t *e = json_object_get(doc, "energy_j");
    return brief_json(sum, count, max, json_is_number(e), json_number_value(e));
}

json_t *gm_session_to_json(gm_session *s)
{
    json_t *gpus = json_array();
    for (size_t k = 0; gpus && k < s->ngpus; k++)
        json_array_append_new(
            gpus, json_pack("{s:I, s:o, s:o}", "index", (json_int_t)s->gpus[k].index, "name",
                            str_or_null(s->gpus[k].name), "uuid", str_or_null(s->gpus[k].uuid)));
    json_t *stats = gpu_stats_json(s);

    /* The session's energy is only known when every GPU's is. */
    double total = 0;
    bool total_known = s->ngpus > 0;
    for (size_t k = 0; k < s->ngpus; k++) {
        double joules;
        const char *source;
        if (gpu_energy(s, k, &joules, &source))
            total += joules;
        else
            total_known = false;
    }

    json_t *doc = json_pack(
        "{s:s, s:s, s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:I, s:b, s:I, s:o, s:o, "
        "s:o}",
        "id", s->id, "session_id", s->id, "kind", s->kind, "label", str_or_null(s->label), "status",
        s->finished ? "stopped" : "running", "command",
        s->command ? json_incref(s->command) : json_null(), "exit_code",
        s->has_exit ? json_integer(s->exit_code) : json_null(), "signal",
        s->has_exit && s->signal ? json_integer(s->signal) : json_null(), "started_at",
        time_or_null(s->started_ms), "ended_at", time_or_null(s->finished ? s->ended_ms : 0),
        "interval_seconds", s->interval_s > 0 ? json_real(s->interval_s) : json_null(),
        "monitoring_duration_seconds", gm_session_duration(s), "sample_count", (json_int_t)s->total,
        "timeline_truncated", s->total > s->n, "percentiles_over_samples", (json_int_t)s->n, "gpus",
        gpus ? gpus : json_null(), "gpu_stats", stats ? stats : json_null(), "energy_j",
        total_known ? json_real(total) : json_null());
    if (!doc)
        return NULL;
    if (s->extra)
        json_object_update(doc, s->extra);
    return doc;
}

/* ---- summary ---------------------------------------------------------------------------- */

static void put_num(FILE *out, const json_t *block, const char *field, int width, int prec)
{
    const json_t *v = json_is_object(block) ? json_object_get(block, field) : NULL;
    if (json_is_number(v))
        fprintf(out, " %*.*f", width, prec, json_number_value(v));
    else
        fprintf(out, " %*s", width, "-");
}

/* Appends arg to buf at *used, single-quoted when a shell would split or expand it. */
/* Appends text to buf at *used, keeping room for the terminating NUL. */
static void append(char *buf, size_t len, size_t *used, const char *text, size_t n)
{
    for (size_t i = 0; i < n && *used + 1 < len; i++)
        buf[(*used)++] = text[i];
    buf[*used] = '\0';
}

/* Appends arg, single-quoted when a shell would split or expand it. */
static void append_arg(char *buf, size_t len, size_t *used, const char *arg)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "-_./=:,+@%";
    bool quote = !*arg || strspn(arg, plain) != strlen(arg);
    if (*used)
        append(buf, len, used, " ", 1);
    if (quote)
        append(buf, len, used, "'", 1);
    for (const char *p = arg; *p; p++) {
        if (quote && *p == '\'')
            append(buf, len, used, "'\\''", 4); /* close, escaped quote, reopen */
        else
            append(buf, len, used, p, 1);
    }
    if (quote)
        append(buf, len, used, "'", 1);
}

size_t gm_session_command_line(const json_t *argv, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return 0;
    buf[0] = '\0';
    size_t i;
    const json_t *a;
    json_array_foreach((json_t *)argv, i, a)
    {
        if (json_is_string(a))
            append_arg(buf, len, &used, json_string_value(a));
    }
    return used;
}

/* Characters (not bytes) of UTF-8 text; continuation bytes do not count. */
static size_t text_columns(const char *s, size_t n)
{
    size_t cols = 0;
    for (size_t i = 0; i < n; i++)
        cols += ((unsigned char)s[i] & 0xC0) != 0x80;
    return cols;
}

/* A line of the summary: whole with width 0, else cut to width columns with "..." at its end
 * (on a character boundary). */
static void put_line(FILE *out, int width, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put_line(FILE *out, int width, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (width > 3 && text_columns(line, len) > (size_t)width) {
        size_t cols = 0, i = 0;
        for (; i < len; i++) {
            if (((unsigned char)line[i] & 0xC0) != 0x80 && ++cols > (size_t)width - 3)
                break;
        }
        len = i;
        fprintf(out, "%.*s...\n", (int)len, line);
        return;
    }
    fprintf(out, "%.*s\n", (int)len, line);
}

/* The per-GPU table in at most width (<= 80) columns: utilization mean, p95 and max; the most
 * memory used (MiB and %); the hottest temperature; power mean and max; energy (marked * when
 * it comes from power readings, as a line below says). */
static void print_gpu_table_fit(FILE *out, const json_t *stats, int width)
{
    int name_w = 14 - (80 - width);
    if (name_w < 4)
        name_w = 4;
    fprintf(out, "%-3s %-*s %17s %7s %5s %4s %13s %9s\n", "GPU", name_w, "NAME", "UTILIZATION %",
            "MEM MiB", "MEM %", "TEMP", "POWER W", "ENERGY J");
    fprintf(out, "%-3s %-*s %5s %5s %5s %7s %5s %4s %6s %6s\n", "", name_w, "", "mean", "p95",
            "max", "max", "max", "max", "mean", "max");
    bool from_power = false;
    const char *key;
    const json_t *g;
    json_object_foreach((json_t *)stats, key, g)
    {
        const char *name = json_string_value(json_object_get(g, "name"));
        char shown[64];
        gm_utf8_shorten_name(name ? name : "-", (size_t)name_w, shown, sizeof shown);
        fprintf(out, "%-3s %-*s", key, name_w, shown);
        const json_t *u = json_object_get(g, "utilization");
        put_num(out, u, "mean", 5, 1);
        put_num(out, u, "p95", 5, 1);
        put_num(out, u, "max", 5, 1);
        put_num(out, json_object_get(g, "memory_used_mb"), "max", 7, 0);
        put_num(out, json_object_get(g, "memory_usage_percent"), "max", 5, 1);
        put_num(out, json_object_get(g, "temperature_c"), "max", 4, 0);
        const json_t *p = json_object_get(g, "power_draw_w");
        put_num(out, p, "mean", 6, 1);
        put_num(out, p, "max", 6, 1);
        const json_t *e = json_object_get(g, "energy_j");
        const char *src = json_string_value(json_object_get(g, "energy_source"));
        bool est = src && strcmp(src, "counter") != 0;
        if (json_is_number(e))
            fprintf(out, " %9.*f%s", json_number_value(e) < 1e6 ? 1 : 0, json_number_value(e),
                    est ? "*" : "");
        else
            fprintf(out, " %9s", "-");
        from_power |= est && json_is_number(e);
        fprintf(out, "\n");
    }
    if (from_power)
        put_line(out, width, "* energy from power readings: the GPU has no energy counter");
}

void gm_session_print_summary(FILE *out, const json_t *doc)
{
    gm_session_print_summary_fit(out, doc, 0);
}

void gm_session_print_summary_fit(FILE *out, const json_t *doc, int width)
{
    if (width > 80)
        width = 80;
    const char *id = json_string_value(json_object_get(doc, "id"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *status = json_string_value(json_object_get(doc, "status"));
    const char *label = json_string_value(json_object_get(doc, "label"));
    char ended[96] = "";
    const json_t *code = json_object_get(doc, "exit_code");
    const json_t *sig = json_object_get(doc, "signal");
    if (json_is_integer(sig))
        snprintf(ended, sizeof ended, ", command killed by signal %d (exit %d)",
                 (int)json_integer_value(sig), (int)json_integer_value(code));
    else if (json_is_integer(code))
        snprintf(ended, sizeof ended, ", command exited %d", (int)json_integer_value(code));
    put_line(out, width, "%s %s%s%s%s: %s%s", kind ? kind : "session", id ? id : "?",
             label ? " \"" : "", label ? label : "", label ? "\"" : "", status ? status : "?",
             ended);
    /* Ended normally, but the database could not take every sample (a full disk). */
    const json_t *inc = json_object_get(doc, "incomplete");
    if (json_is_object(inc)) {
        const char *why = json_string_value(json_object_get(inc, "reason"));
        put_line(out, width, "incomplete: %lld samples not stored (%s)",
                 (long long)json_integer_value(json_object_get(inc, "samples_not_stored")),
                 why ? why : "the database failed");
    }
    const char *prov = json_string_value(json_object_get(doc, "provider"));
    if (prov && strcmp(prov, "sim") == 0)
        put_line(out, width, "simulated GPUs (provider sim): not a measurement of real hardware");

    const json_t *cmd = json_object_get(doc, "command");
    if (json_array_size(cmd)) {
        char line[1024];
        gm_session_command_line(cmd, line, sizeof line);
        put_line(out, width, "command: %s", line);
    }
    const json_t *dur = json_object_get(doc, "monitoring_duration_seconds");
    const json_t *iv = json_object_get(doc, "interval_seconds");
    fprintf(out, "duration %.2f s, %lld samples", json_number_value(dur),
            (long long)json_integer_value(json_object_get(doc, "sample_count")));
    if (json_is_number(iv))
        fprintf(out, " every %g s", json_number_value(iv));
    const json_t *energy = json_object_get(doc, "energy_j");
    if (json_is_number(energy))
        fprintf(out, ", energy %.1f J", json_number_value(energy));
    fprintf(out, "\n");
    /* A bounded session: min/max/mean cover every sample, the percentiles only the first. */
    const json_t *pct_n = json_object_get(doc, "percentiles_over_samples");
    if (json_is_integer(pct_n) &&
        json_integer_value(pct_n) < json_integer_value(json_object_get(doc, "sample_count")))
        put_line(out, width, "p50/p95 over the first %lld samples",
                 (long long)json_integer_value(pct_n));

    const json_t *stats = json_object_get(doc, "gpu_stats");
    if (!json_object_size(stats)) {
        fprintf(out, "no GPU sampled\n");
        return;
    }
    if (width > 0) {
        print_gpu_table_fit(out, stats, width);
        return;
    }
    /* Group titles centred over their columns: widths match the rows printed below. */
    fprintf(out, "%-4s %-24s %21s %18s %7s %14s %21s %9s\n", "GPU", "NAME", "UTILIZATION %  ",
            "MEMORY USED MiB", "MEM %", "TEMP C  ", "POWER W      ", "ENERGY J");
    fprintf(out, "%-4s %-24s %6s %6s %6s %8s %8s %6s %6s %6s %6s %6s %6s\n", "", "", "mean", "p95",
            "max", "mean", "max", "max", "mean", "max", "mean", "p95", "max");
    const char *key;
    const json_t *g;
    json_object_foreach((json_t *)stats, key, g)
    {
        const char *name = json_string_value(json_object_get(g, "name"));
        char shown[25];
        gm_utf8_shorten_name(name ? name : "-", 24, shown, sizeof shown);
        fprintf(out, "%-4s %-24s", key, shown);
        const json_t *u = json_object_get(g, "utilization");
        put_num(out, u, "mean", 6, 1);
        put_num(out, u, "p95", 6, 1);
        put_num(out, u, "max", 6, 1);
        const json_t *mem = json_object_get(g, "memory_used_mb");
        put_num(out, mem, "mean", 8, 0);
        put_num(out, mem, "max", 8, 0);
        put_num(out, json_object_get(g, "memory_usage_percent"), "max", 6, 1);
        const json_t *t = json_object_get(g, "temperature_c");
        put_num(out, t, "mean", 6, 1);
        put_num(out, t, "max", 6, 0);
        const json_t *p = json_object_get(g, "power_draw_w");
        put_num(out, p, "mean", 6, 1);
        put_num(out, p, "p95", 6, 1);
        put_num(out, p, "max", 6, 1);
        const json_t *e = json_object_get(g, "energy_j");
        const char *src = json_string_value(json_object_get(g, "energy_source"));
        if (json_is_number(e))
            fprintf(out, " %9.1f%s", json_number_value(e),
                    src && strcmp(src, "counter") ? " (from power)" : "");
        else
            fprintf(out, " %9s", "-");
        fprintf(out, "\n");
    }
}
