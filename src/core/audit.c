/* audit.c - benchmark audit snapshots (inventory JSON with a power window), their validation
 * when read back, and the before/after diff with its verdict. See audit.h for the shapes. */
#include "core/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/utf8.h"
#include "core/stats.h"
#include "base/error.h"

#define MAX_SNAPSHOT_BYTES (64u << 20) /* far above any real snapshot; stops reading /dev/zero */

/* ---- JSON values ----------------------------------------------------------------------- */

/* Watts rounded to the milliwatt, NVML's resolution; longer tails are averaging noise. */
static json_t *watts(double w)
{
    return gm_json_number(round(w * 1000.0) / 1000.0);
}

static json_t *gpu_num(const gm_gpu *g, gm_metric m, double scale)
{
    return !g->lost && gm_gpu_has(g, m) ? gm_json_number(g->v[m] * scale) : json_null();
}

/* Bytes as whole MiB, rounded down as nvidia-smi prints them (and /stats does). */
static json_t *gpu_mib(const gm_gpu *g, gm_metric m)
{
    return !g->lost && gm_gpu_has(g, m) ? gm_json_number(floor(g->v[m] * gm_metric_get(m)->scale))
                                        : json_null();
}

/* ---- taking a snapshot ----------------------------------------------------------------- */

void gm_audit_options_init(gm_audit_options *o)
{
    o->power_window_ms = GM_AUDIT_DEFAULT_POWER_WINDOW_MS;
    o->power_interval_ms = GM_AUDIT_DEFAULT_POWER_INTERVAL_MS;
    o->with_processes = false;
}

static json_t *processes_json(const gm_snapshot *s, const gm_gpu *g)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (size_t i = 0; i < s->proc_count; i++) {
        const gm_process *p = &s->procs[i];
        if (p->gpu_index != g->index)
            continue;
        json_t *mem = p->mem_valid
                          ? json_integer((json_int_t)(p->used_mem_bytes / GM_BYTES_PER_MIB))
                          : json_null();
        if (json_array_append_new(a,
                                  json_pack("{s:I, s:o, s:o, s:o}", "pid", (json_int_t)p->pid,
                                            "user", gm_json_text(p->user, sizeof p->user),
                                            "command", gm_json_text(p->command, sizeof p->command),
                                            "used_memory_mib", mem)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* One GPU: identity and memory of the last reading, power over the window (pw). */
static json_t *gpu_json(const gm_snapshot *s, const gm_gpu *g, const gm_stats *pw, bool procs)
{
    bool have_pw = !g->lost && pw->count > 0;
    json_t *persist = !g->lost && gm_gpu_has(g, GM_M_PERSISTENCE_MODE)
                          ? json_boolean(g->v[GM_M_PERSISTENCE_MODE] != 0)
                          : json_null();
    json_t *j = json_pack(
        "{s:I, s:o, s:o, s:o, s:b,"
        " s:o, s:o, s:o, s:o,"
        " s:o, s:o, s:o, s:I, s:o, s:o,"
        " s:{s:o, s:o, s:o, s:o, s:o, s:o}, s:o}",
        "index", (json_int_t)g->index, "name", gm_json_text(g->name, sizeof g->name), "uuid",
        gm_json_text(g->uuid, sizeof g->uuid), "pci_bus_id",
        gm_json_text(g->pci_bus_id, sizeof g->pci_bus_id), "lost", g->lost,
        /* memory */
        "memory_total_mib", gpu_mib(g, GM_M_MEM_TOTAL_BYTES), "memory_used_mib",
        gpu_mib(g, GM_M_MEM_USED_BYTES), "memory_total_bytes",
        gpu_num(g, GM_M_MEM_TOTAL_BYTES, 1.0), "memory_used_bytes",
        gpu_num(g, GM_M_MEM_USED_BYTES, 1.0),
        /* power */
        "power_draw_w", have_pw ? watts(pw->mean) : json_null(), "power_draw_min_w",
        have_pw ? watts(pw->min) : json_null(), "power_draw_max_w",
        have_pw ? watts(pw->max) : json_null(), "power_draw_samples",
        (json_int_t)(g->lost ? 0 : pw->count), "power_limit_w",
        gpu_num(g, GM_M_POWER_LIMIT_MW, 0.001), "persistence_mode", persist,
        /* PCIe */
        "pcie", "gen_current", gpu_num(g, GM_M_PCIE_GEN_CUR, 1.0), "gen_max",
        gpu_num(g, GM_M_PCIE_GEN_MAX, 1.0), "width_current", gpu_num(g, GM_M_PCIE_WIDTH_CUR, 1.0),
        "width_max", gpu_num(g, GM_M_PCIE_WIDTH_MAX, 1.0), "bandwidth_current_gb_per_s",
        gm_json_pcie_gbps(g, GM_M_PCIE_GEN_CUR, GM_M_PCIE_WIDTH_CUR), "bandwidth_max_gb_per_s",
        gm_json_pcie_gbps(g, GM_M_PCIE_GEN_MAX, GM_M_PCIE_WIDTH_MAX),
        /* who used the GPU; null when the caller's collector does not list processes */
        "processes", procs && !g->lost ? processes_json(s, g) : json_null());
    /* The clocks a GPU may reach and the application clocks set on it: what nvidia-smi -ac
     * or a changed board setting moves between two runs. */
    static const struct {
        const char *key;
        gm_metric m;
    } clocks[] = {
        {"clock_max_sm_mhz", GM_M_CLOCK_MAX_SM_MHZ},
        {"clock_max_mem_mhz", GM_M_CLOCK_MAX_MEM_MHZ},
        {"clock_applications_graphics_mhz", GM_M_CLOCK_APP_GR_MHZ},
        {"clock_applications_memory_mhz", GM_M_CLOCK_APP_MEM_MHZ},
    };
    for (size_t i = 0; j && i < sizeof clocks / sizeof *clocks; i++)
        json_object_set_new(j, clocks[i].key, gpu_num(g, clocks[i].m, 1.0));
    return j;
}

typedef struct window {
    const gm_audit_options *opt;
    unsigned readings;           /* successful readings */
    int64_t elapsed_ms;          /* from the first successful reading to the last */
    gm_stats power[GM_MAX_GPUS]; /* watts, by driver index */
} window;

static json_t *snapshot_json(const gm_snapshot *s, const window *w, const gm_topology *t,
                             const char *p2p_error)
{
    char ts[32];
    gm_json_time(s->time_ms, ts, sizeof ts);
    json_t *gpus = json_array();
    if (!gpus)
        return NULL;
    for (unsigned i = 0; i < s->gpu_count && i < GM_MAX_GPUS; i++) {
        const gm_gpu *g = &s->gpus[i];
        static const gm_stats none = {0};
        const gm_stats *pw = g->index < GM_MAX_GPUS ? &w->power[g->index] : &none;
        if (json_array_append_new(gpus, gpu_json(s, g, pw, w->opt->with_processes)) != 0) {
            json_decref(gpus);
            return NULL;
        }
    }
    bool known = t && t->known;
    json_t *p2p = gm_json_p2p(s, t);
    if (!p2p) {
        json_decref(gpus);
        return NULL;
    }
    const gm_host *h = &s->host;
    bool hv = s->host_valid;
    unsigned interval =
        w->opt->power_interval_ms ? w->opt->power_interval_ms : GM_AUDIT_DEFAULT_POWER_INTERVAL_MS;
    json_t *doc = json_pack(
        "{s:s, s:i, s:s, s:s, s:I, s:o, s:o, s:o, s:o,"
        " s:{s:o, s:o, s:o, s:o, s:o},"
        " s:{s:I, s:I, s:I, s:I},"
        " s:I, s:o, s:b, s:o}",
        "kind", GM_AUDIT_KIND, "schema", GM_AUDIT_SCHEMA, "gpumon_version", GM_VERSION, "timestamp",
        ts, "timestamp_ms", (json_int_t)s->time_ms, "provider",
        gm_json_text(s->provider, sizeof s->provider), "driver_version",
        gm_json_text(s->driver_version, sizeof s->driver_version), "cuda_version",
        gm_json_text(s->cuda_version, sizeof s->cuda_version), "nvml_version",
        gm_json_text(s->nvml_version, sizeof s->nvml_version),
        /* the host, named as in /stats */
        "system", "hostname", gm_json_text(h->hostname, sizeof h->hostname), "kernel",
        hv ? gm_json_text(h->kernel, sizeof h->kernel) : json_null(), "processor_name",
        hv ? gm_json_text(h->cpu_model, sizeof h->cpu_model) : json_null(), "cpu_count",
        gm_json_host_number(s, GM_H_CPU_COUNT), "memory_total_bytes",
        gm_json_host_number(s, GM_H_MEM_TOTAL_BYTES),
        /* how power was averaged */
        "power_window", "window_ms", (json_int_t)w->opt->power_window_ms, "interval_ms",
        (json_int_t)interval, "samples", (json_int_t)w->readings, "elapsed_ms",
        (json_int_t)w->elapsed_ms,
        /* GPUs and their P2P matrix */
        "gpu_count", (json_int_t)s->gpu_count, "gpus", gpus, "p2p_known", known, "p2p", p2p);
    if (doc && p2p_error && json_object_set_new(doc, "p2p_error", json_string(p2p_error)) != 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

static void sleep_until(const struct timespec *t0, uint64_t offset_ms)
{
    struct timespec t = *t0;
    gm_clock_ts_add_ms(&t, (int64_t)offset_ms);
    /* Absolute deadlines keep the readings on the interval grid even when one read is slow. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
        ;
}

/* GM_ENODEV naming what was tried, one "provider: reason" per line of the diagnosis. */
static int no_gpu_source(gm_collector *c, gm_error *err)
{
    char tried[400] = "";
    const char *d = gm_collector_diagnosis(c);
    size_t o = 0;
    for (; d && *d && o + 2 < sizeof tried; d++) {
        if (*d == '\n')
            tried[o++] = ';';
        tried[o++] = *d == '\n' ? ' ' : *d;
    }
    tried[o] = '\0';
    return gm_error_set(err, GM_ENODEV, "no GPU found%s%s", tried[0] ? "; tried " : "", tried);
}

int gm_audit_take(gm_collector *c, const gm_audit_options *o, json_t **out, gm_error *err)
{
    gm_audit_options defaults;
    if (!o) {
        gm_audit_options_init(&defaults);
        o = &defaults;
    }
    *out = NULL;
    if (strcmp(gm_collector_provider(c), "none") == 0)
        return no_gpu_source(c, err);

    int rc = GM_OK;
    gm_snapshot *cur = gm_snapshot_new(), *last = gm_snapshot_new();
    window *w = calloc(1, sizeof *w);
    gm_topology *topo = malloc(sizeof *topo);
    if (!cur || !last || !w || !topo) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto done;
    }
    w->opt = o;
    for (unsigned i = 0; i < GM_MAX_GPUS; i++)
        gm_stats_init(&w->power[i]);

    uint64_t interval =
        o->power_interval_ms ? o->power_interval_ms : GM_AUDIT_DEFAULT_POWER_INTERVAL_MS;
    uint64_t n = 1 + o->power_window_ms / interval;
    gm_error serr = {0};
    int64_t first_ms = 0;
    struct timespec t0;
    for (uint64_t k = 0; k < n; k++) {
        /* The grid starts after the first reading, which may wait for the CPU counters. */
        if (k > 0)
            sleep_until(&t0, k * interval);
        int src = gm_collector_sample(c, cur, &serr);
        if (k == 0)
            clock_gettime(CLOCK_MONOTONIC, &t0);
        if (src < 0)
            continue; /* one failed pass shortens the window, it does not void it */
        for (unsigned i = 0; i < cur->gpu_count && i < GM_MAX_GPUS; i++) {
            const gm_gpu *g = &cur->gpus[i];
            if (!g->lost && gm_gpu_has(g, GM_M_POWER_MW) && g->index < GM_MAX_GPUS)
                gm_stats_add(&w->power[g->index], g->v[GM_M_POWER_MW] / 1000.0);
        }
        if (w->readings++ == 0)
            first_ms = cur->mono_ms;
        w->elapsed_ms = cur->mono_ms - first_ms;
        gm_snapshot_copy(last, cur);
    }
    if (w->readings == 0) {
        rc = gm_error_set(err, serr.code < 0 ? serr.code : GM_EIO, "%s",
                          serr.msg[0] ? serr.msg : "no reading succeeded");
        goto done;
    }
    if (last->gpu_count == 0) {
        rc = gm_error_set(err, GM_ENODEV, "no GPU found: provider %s enumerates none",
                          last->provider);
        goto done;
    }
    /* The matrix is static for a boot, so one read after the window is enough; failing to read
     * it is recorded, not fatal: the rest of the inventory still stands. */
    gm_error terr = {0};
    bool topo_ok = gm_collector_topology(c, topo, &terr) == GM_OK;
    *out = snapshot_json(last, w, topo_ok ? topo : NULL, topo_ok ? NULL : terr.msg);
    if (!*out)
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
done:
    free(topo);
    free(w);
    gm_snapshot_free(last);
    gm_snapshot_free(cur);
    return rc;
}

/* ---- reading a snapshot back ----------------------------------------------------------- */

enum {
    T_NULL = 1,
    T_STR = 2,
    T_INT = 4,
    T_NUM = 8, /* integer or real */
    T_BOOL = 16,
    T_OBJ = 32,
    T_ARR = 64,
};

typedef struct key_rule {
    const char *key;
    unsigned types;
    bool required;
} key_rule;

static const key_rule top_rules[] = {
    {"kind", T_STR, true},
    {"schema", T_INT, true},
    {"gpumon_version", T_STR | T_NULL, false},
    {"timestamp", T_STR | T_NULL, false},
    {"timestamp_ms", T_INT | T_NULL, false},
    {"provider", T_STR | T_NULL, false},
    {"driver_version", T_STR | T_NULL, false},
    {"cuda_version", T_STR | T_NULL, false},
    {"nvml_version", T_STR | T_NULL, false},
    {"system", T_OBJ | T_NULL, false},
    {"power_window", T_OBJ | T_NULL, false},
    {"gpu_count", T_INT, false},
    {"gpus", T_ARR, true},
    {"p2p_known", T_BOOL, true},
    {"p2p", T_OBJ | T_NULL, false},
};

static const key_rule system_rules[] = {
    {"hostname", T_STR | T_NULL, false},           {"kernel", T_STR | T_NULL, false},
    {"processor_name", T_STR | T_NULL, false},     {"cpu_count", T_NUM | T_NULL, false},
    {"memory_total_bytes", T_NUM | T_NULL, false},
};

static const key_rule gpu_rules[] = {
    {"index", T_INT, true},
    {"name", T_STR | T_NULL, false},
    {"uuid", T_STR | T_NULL, false},
    {"pci_bus_id", T_STR | T_NULL, false},
    {"lost", T_BOOL, false},
    {"memory_total_mib", T_NUM | T_NULL, false},
    {"memory_used_mib", T_NUM | T_NULL, false},
    {"memory_total_bytes", T_NUM | T_NULL, false},
    {"memory_used_bytes", T_NUM | T_NULL, false},
    {"power_draw_w", T_NUM | T_NULL, false},
    {"power_draw_min_w", T_NUM | T_NULL, false},
    {"power_draw_max_w", T_NUM | T_NULL, false},
    {"power_draw_samples", T_INT | T_NULL, false},
    {"power_limit_w", T_NUM | T_NULL, false},
    {"persistence_mode", T_BOOL | T_NULL, false},
    {"clock_max_sm_mhz", T_NUM | T_NULL, false},
    {"clock_max_mem_mhz", T_NUM | T_NULL, false},
    {"clock_applications_graphics_mhz", T_NUM | T_NULL, false},
    {"clock_applications_memory_mhz", T_NUM | T_NULL, false},
    {"pcie", T_OBJ | T_NULL, false},
    {"processes", T_ARR | T_NULL, false},
};

static const key_rule process_rules[] = {
    {"pid", T_INT, true},
    {"user", T_STR | T_NULL, false},
    {"command", T_STR | T_NULL, false},
    {"used_memory_mib", T_NUM | T_NULL, false},
    {"start_time", T_INT | T_NULL, false},
};

static const key_rule pcie_rules[] = {
    {"gen_current", T_NUM | T_NULL, false},
    {"gen_max", T_NUM | T_NULL, false},
    {"width_current", T_NUM | T_NULL, false},
    {"width_max", T_NUM | T_NULL, false},
    {"bandwidth_current_gb_per_s", T_NUM | T_NULL, false},
    {"bandwidth_max_gb_per_s", T_NUM | T_NULL, false},
};

static unsigned type_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_NULL:
        return T_NULL;
    case JSON_STRING:
        return T_STR;
    case JSON_INTEGER:
        return T_INT | T_NUM;
    case JSON_REAL:
        return T_NUM;
    case JSON_TRUE:
    case JSON_FALSE:
        return T_BOOL;
    case JSON_OBJECT:
        return T_OBJ;
    case JSON_ARRAY:
        return T_ARR;
    }
    return 0;
}

static const char *type_name(unsigned t)
{
    return t & T_STR    ? "a string"
           : t & T_INT  ? "an integer"
           : t & T_NUM  ? "a number"
           : t & T_BOOL ? "true or false"
           : t & T_OBJ  ? "an object"
           : t & T_ARR  ? "an array"
                        : "null";
}

/* "a string or null" from the allowed set, for messages. */
static void types_text(unsigned types, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", type_name(types & ~(unsigned)T_NULL),
             types & T_NULL ? " or null" : "");
}

static int check_keys(const json_t *obj, const char *where, const key_rule *rules, size_t n,
                      gm_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(obj, rules[i].key);
        if (!v) {
            if (rules[i].required)
                return gm_error_set(err, GM_EPARSE, "%s%s\"%s\" is missing", where,
                                    where[0] ? ": " : "", rules[i].key);
            continue;
        }
        if (!(type_of(v) & rules[i].types)) {
            char want[48];
            types_text(rules[i].types, want, sizeof want);
            return gm_error_set(err, GM_EPARSE, "%s%s%s must be %s, not %s", where,
                                where[0] ? "." : "", rules[i].key, want, type_name(type_of(v)));
        }
    }
    return GM_OK;
}

static const char *str_or_null(const json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int check_p2p(const json_t *p2p, gm_error *err)
{
    if (!json_is_object(p2p))
        return gm_error_set(err, GM_EPARSE, "p2p_known is true but p2p is not an object");
    const json_t *rows = json_object_get(p2p, "gpus");
    if (!json_is_array(rows))
        return gm_error_set(err, GM_EPARSE, "p2p.gpus must be an array of GPU indices");
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++)
        if (!json_is_integer(json_array_get(rows, i)))
            return gm_error_set(err, GM_EPARSE, "p2p.gpus[%zu] must be an integer", i);
    for (int c = 0; c < GM_P2P__COUNT; c++) {
        const char *cap = gm_json_p2p_cap_name(c);
        const json_t *m = json_object_get(p2p, cap);
        if (!json_is_array(m) || json_array_size(m) != n)
            return gm_error_set(err, GM_EPARSE, "p2p.%s must be a %zu x %zu array of codes", cap, n,
                                n);
        for (size_t i = 0; i < n; i++) {
            const json_t *row = json_array_get(m, i);
            if (!json_is_array(row) || json_array_size(row) != n)
                return gm_error_set(err, GM_EPARSE, "p2p.%s[%zu] must be an array of %zu codes",
                                    cap, i, n);
            for (size_t j = 0; j < n; j++)
                if (!json_is_string(json_array_get(row, j)))
                    return gm_error_set(err, GM_EPARSE, "p2p.%s[%zu][%zu] must be a string", cap, i,
                                        j);
        }
    }
    return GM_OK;
}

int gm_audit_validate(const json_t *doc, gm_error *err)
{
    if (!json_is_object(doc))
        return gm_error_set(err, GM_EPARSE, "not a gpumon snapshot (the document is %s, not %s)",
                            doc ? type_name(type_of(doc)) : "empty", "an object");
    const char *kind = str_or_null(json_object_get(doc, "kind"));
    if (!kind)
        return gm_error_set(err, GM_EPARSE,
                            "not a gpumon snapshot (no \"kind\": \"%s\"; write one with "
                            "`gpumon snapshot -o FILE`)",
                            GM_AUDIT_KIND);
    if (strcmp(kind, GM_AUDIT_KIND) != 0)
        return gm_error_set(err, GM_EPARSE, "not a gpumon snapshot (\"kind\" is \"%.64s\")", kind);
    const json_t *schema = json_object_get(doc, "schema");
    if (!json_is_integer(schema) || json_integer_value(schema) < 1)
        return gm_error_set(err, GM_EPARSE, "\"schema\" must be a positive integer");
    if (json_integer_value(schema) > GM_AUDIT_SCHEMA)
        return gm_error_set(err, GM_EPARSE,
                            "snapshot schema %lld is newer than this gpumon %s reads (%d); "
                            "compare it with a newer gpumon",
                            (long long)json_integer_value(schema), GM_VERSION, GM_AUDIT_SCHEMA);
    int rc = check_keys(doc, "", top_rules, sizeof top_rules / sizeof *top_rules, err);
    if (rc < 0)
        return rc;
    const json_t *sys = json_object_get(doc, "system");
    if (json_is_object(sys) &&
        (rc = check_keys(sys, "system", system_rules, sizeof system_rules / sizeof *system_rules,
                         err)) < 0)
        return rc;

    const json_t *gpus = json_object_get(doc, "gpus");
    size_t n = json_array_size(gpus);
    const json_t *count = json_object_get(doc, "gpu_count");
    if (count && (json_integer_value(count) < 0 || (size_t)json_integer_value(count) != n))
        return gm_error_set(err, GM_EPARSE, "gpu_count is %lld but gpus lists %zu",
                            (long long)json_integer_value(count), n);
    for (size_t i = 0; i < n; i++) {
        const json_t *g = json_array_get(gpus, i);
        char where[32];
        snprintf(where, sizeof where, "gpus[%zu]", i);
        if (!json_is_object(g))
            return gm_error_set(err, GM_EPARSE, "%s must be an object", where);
        if ((rc = check_keys(g, where, gpu_rules, sizeof gpu_rules / sizeof *gpu_rules, err)) < 0)
            return rc;
        const json_t *pcie = json_object_get(g, "pcie");
        if (json_is_object(pcie)) {
            char pwhere[48];
            snprintf(pwhere, sizeof pwhere, "%s.pcie", where);
            if ((rc = check_keys(pcie, pwhere, pcie_rules, sizeof pcie_rules / sizeof *pcie_rules,
                                 err)) < 0)
                return rc;
        }
        const json_t *procs = json_object_get(g, "processes");
        for (size_t k = 0; k < json_array_size(procs); k++) {
            const json_t *p = json_array_get(procs, k);
            char pwhere[64];
            snprintf(pwhere, sizeof pwhere, "%s.processes[%zu]", where, k);
            if (!json_is_object(p))
                return gm_error_set(err, GM_EPARSE, "%s must be an object", pwhere);
            if ((rc = check_keys(p, pwhere, process_rules,
                                 sizeof process_rules / sizeof *process_rules, err)) < 0)
                return rc;
        }
        /* The diff pairs GPUs by UUID and P2P rows by index: both must name one GPU. */
        const char *uuid = str_or_null(json_object_get(g, "uuid"));
        json_int_t index = json_integer_value(json_object_get(g, "index"));
        for (size_t j = 0; j < i; j++) {
            const json_t *h = json_array_get(gpus, j);
            const char *u2 = str_or_null(json_object_get(h, "uuid"));
            if (uuid && u2 && strcmp(uuid, u2) == 0)
                return gm_error_set(err, GM_EPARSE, "gpus[%zu] and gpus[%zu] have one UUID %.96s",
                                    j, i, uuid);
            if (json_integer_value(json_object_get(h, "index")) == index)
                return gm_error_set(err, GM_EPARSE, "gpus[%zu] and gpus[%zu] have one index %lld",
                                    j, i, (long long)index);
        }
    }
    if (json_is_true(json_object_get(doc, "p2p_known")))
        return check_p2p(json_object_get(doc, "p2p"), err);
    return GM_OK;
}

int gm_audit_parse(const char *text_in, size_t len, const char *name, json_t **out, gm_error *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *doc = gm_json_loadb(text_in, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        if (json_error_code(&jerr) == json_error_out_of_memory)
            return gm_error_set(err, GM_ENOMEM, "%s: out of memory", name);
        return gm_error_set(err, GM_EPARSE, "%s: not JSON: %s (line %d, column %d)", name,
                            jerr.text, jerr.line, jerr.column);
    }
    gm_error verr = {0};
    if (gm_audit_validate(doc, &verr) < 0) {
        json_decref(doc);
        return gm_error_set(err, verr.code, "%s: %s", name, verr.msg);
    }
    *out = doc;
    return GM_OK;
}

int gm_audit_load(const char *path, json_t **out, gm_error *err)
{
    *out = NULL;
    char *buf;
    size_t len;
    int rc = gm_file_read_all(path, MAX_SNAPSHOT_BYTES, "snapshot", &buf, &len, err);
    if (rc < 0)
        return rc;
    if (len == 0)
        rc = gm_error_set(err, GM_EPARSE, "%s: empty file, not a snapshot", path);
    else
        rc = gm_audit_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

int gm_audit_write(const json_t *doc, const char *path, gm_error *err)
{
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    if (!s)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    size_t len = strlen(s);
    int rc = GM_OK;
    if (!path || strcmp(path, "-") == 0) {
        if (fwrite(s, 1, len, stdout) != len || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
            rc = gm_error_set(err, GM_EIO, "cannot write to standard output: %s", strerror(errno));
        free(s);
        return rc;
    }
    /* Written by the output rules (base/file.h): a device or FIFO in place, a regular file
     * replaced whole through a temporary file beside it. */
    s[len] = '\n';
    rc = gm_file_write(path, s, len + 1, NULL, err);
    free(s);
    return rc;
}

/* ---- diff ------------------------------------------------------------------------------ */

void gm_audit_tolerance_init(gm_audit_tolerance *t)
{
    t->mem_mib = GM_AUDIT_DEFAULT_MEM_TOLERANCE_MIB;
    t->power_w = GM_AUDIT_DEFAULT_POWER_TOLERANCE_W;
    t->strict = false;
    t->ignore_pids = NULL;
    t->ignore_pid_count = 0;
}

enum severity { SEV_NOTE, SEV_WARNING, SEV_CHANGED };
static const char *const severity_names[] = {"note", "warning", "changed"};

/* How a value reads in a message. */
enum unit {
    U_PLAIN,
    U_ONOFF,     /* true/false as on/off */
    U_W,         /* watts, one decimal */
    U_MIB,       /* whole MiB */
    U_BYTES_MIB, /* bytes shown as MiB */
    U_BYTES_GIB, /* bytes shown as GiB */
    U_WIDTH,     /* PCIe lanes: x16 */
    U_MHZ,       /* clocks, whole MHz */
};

typedef struct differ {
    json_t *items;
    unsigned counts[3];
    int rc; /* GM_ENOMEM once an item could not be stored */
} differ;

static bool is_null(const json_t *v)
{
    return !v || json_is_null(v);
}

/* Equal values; numbers by value so 700 and 700.0 agree. */
static bool same(const json_t *a, const json_t *b)
{
    if (is_null(a) || is_null(b))
        return is_null(a) && is_null(b);
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

static void fmt_value(const json_t *v, enum unit u, char *buf, size_t len)
{
    if (is_null(v)) {
        snprintf(buf, len, "unknown");
        return;
    }
    if (json_is_string(v)) {
        snprintf(buf, len, "%s", json_string_value(v));
        return;
    }
    if (json_is_boolean(v)) {
        snprintf(buf, len, "%s",
                 u == U_ONOFF ? (json_is_true(v) ? "on" : "off")
                              : (json_is_true(v) ? "yes" : "no"));
        return;
    }
    if (!json_is_number(v)) {
        snprintf(buf, len, "(%s)", type_name(type_of(v)));
        return;
    }
    double x = json_number_value(v);
    switch (u) {
    case U_W:
        snprintf(buf, len, "%.1f W", x);
        break;
    case U_MIB:
        snprintf(buf, len, "%.0f MiB", x);
        break;
    case U_BYTES_MIB:
        snprintf(buf, len, "%.0f MiB", floor(x / GM_BYTES_PER_MIB));
        break;
    case U_BYTES_GIB:
        snprintf(buf, len, "%.2f GiB", x / 1073741824.0);
        break;
    case U_WIDTH:
        snprintf(buf, len, "x%.0f", x);
        break;
    case U_MHZ:
        snprintf(buf, len, "%.0f MHz", x);
        break;
    default:
        snprintf(buf, len, x == floor(x) && fabs(x) < 1e15 ? "%.0f" : "%g", x);
    }
}

/* "GPU 1 " for an item about a GPU, "" otherwise. */
static void gpu_prefix(const json_t *gpu, char *buf, size_t len)
{
    if (gpu)
        snprintf(buf, len, "GPU %lld ",
                 (long long)json_integer_value(json_object_get(gpu, "index")));
    else
        buf[0] = '\0';
}

static json_t *copy_or_null(const json_t *v)
{
    return v ? json_deep_copy(v) : json_null();
}

__attribute__((format(printf, 7, 8))) static void add(differ *d, enum severity sev,
                                                      const char *field, const json_t *gpu,
                                                      const json_t *before, const json_t *after,
                                                      const char *fmt, ...)
{
    char msg[1024], clean[3 * sizeof msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* The message quotes values cut to fit (a long host name): a character cut in two is not
     * UTF-8, and jansson would refuse the item, which then read as out of memory. */
    gm_utf8_repair(clean, sizeof clean, msg, strlen(msg));
    json_t *item =
        json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:s}", "severity", severity_names[sev], "field",
                  field, "gpu", gpu ? copy_or_null(json_object_get(gpu, "index")) : json_null(),
                  "uuid", gpu ? copy_or_null(json_object_get(gpu, "uuid")) : json_null(), "before",
                  copy_or_null(before), "after", copy_or_null(after), "message", clean);
    if (json_array_append_new(d->items, item) != 0) {
        d->rc = GM_ENOMEM;
        return;
    }
    d->counts[sev]++;
}

/* A value known on one side only is a warning: an unreadable value is no evidence of change. */
static bool one_sided(differ *d, const char *field, const char *label, enum unit u,
                      const json_t *gpu, const json_t *b, const json_t *a)
{
    if (is_null(b) == is_null(a))
        return false;
    char pre[32], val[160];
    gpu_prefix(gpu, pre, sizeof pre);
    fmt_value(is_null(a) ? b : a, u, val, sizeof val);
    if (is_null(a))
        add(d, SEV_WARNING, field, gpu, b, a, "%s%s no longer reported (was %s)", pre, label, val);
    else
        add(d, SEV_WARNING, field, gpu, b, a, "%s%s now reported (%s), unknown before", pre, label,
            val);
    return true;
}

/* An invariant: any difference is an item of severity sev; why (may be NULL) explains it. */
static void compare(differ *d, enum severity sev, const char *field, const char *label, enum unit u,
                    const json_t *gpu, const json_t *b, const json_t *a, const char *why)
{
    if (same(b, a) || one_sided(d, field, label, u, gpu, b, a))
        return;
    char pre[32], vb[160], va[160];
    gpu_prefix(gpu, pre, sizeof pre);
    fmt_value(b, u, vb, sizeof vb);
    fmt_value(a, u, va, sizeof va);
    if (strcmp(vb, va) == 0) { /* rounding hid the difference: show the raw values */
        fmt_value(b, U_PLAIN, vb, sizeof vb);
        fmt_value(a, U_PLAIN, va, sizeof va);
    }
    add(d, sev, field, gpu, b, a, "%s%s %s -> %s%s%s%s", pre, label, vb, va, why ? " (" : "",
        why ? why : "", why ? ")" : "");
}

/* A level that may fall freely but rise only by tol (in display units: value * scale). */
static void rise(differ *d, const char *field, const char *label, const json_t *gpu,
                 const json_t *b, const json_t *a, double scale, const char *unit, double tol)
{
    if (same(b, a))
        return;
    if (one_sided(d, field, label, U_PLAIN, gpu, b, a))
        return;
    char pre[32];
    gpu_prefix(gpu, pre, sizeof pre);
    double vb = json_number_value(b) * scale, va = json_number_value(a) * scale;
    double delta = va - vb;
    /* MiB as whole numbers, watts to a tenth: what a person compares. */
    int prec = strcmp(unit, "MiB") == 0 ? 0 : 1;
    if (delta > tol + 1e-9)
        add(d, SEV_CHANGED, field, gpu, b, a,
            "%s%s %.*f %s -> %.*f %s (+%.*f %s, over the %g %s tolerance)", pre, label, prec, vb,
            unit, prec, va, unit, prec, delta, unit, tol, unit);
    else
        add(d, SEV_NOTE, field, gpu, b, a, "%s%s %.*f %s -> %.*f %s (%+.*f %s%s)", pre, label, prec,
            vb, unit, prec, va, unit, prec, delta, unit, delta > 0 ? ", within tolerance" : "");
}

static const json_t *get(const json_t *obj, const char *key)
{
    return json_object_get(obj, key);
}

static const json_t *get2(const json_t *obj, const char *key, const char *sub)
{
    return json_object_get(json_object_get(obj, key), sub);
}

static void diff_system(differ *d, const json_t *b, const json_t *a)
{
    compare(d, SEV_CHANGED, "driver_version", "driver", U_PLAIN, NULL, get(b, "driver_version"),
            get(a, "driver_version"), NULL);
    compare(d, SEV_CHANGED, "cuda_version", "CUDA", U_PLAIN, NULL, get(b, "cuda_version"),
            get(a, "cuda_version"), NULL);
    compare(d, SEV_CHANGED, "nvml_version", "NVML", U_PLAIN, NULL, get(b, "nvml_version"),
            get(a, "nvml_version"), NULL);
    compare(d, SEV_WARNING, "provider", "provider", U_PLAIN, NULL, get(b, "provider"),
            get(a, "provider"), "the snapshots read the GPUs through different sources");
    compare(d, SEV_NOTE, "gpumon_version", "gpumon", U_PLAIN, NULL, get(b, "gpumon_version"),
            get(a, "gpumon_version"), NULL);
    static const struct {
        const char *key, *field, *label;
        enum unit u;
    } sys[] = {
        {"hostname", "system.hostname", "host name", U_PLAIN},
        {"kernel", "system.kernel", "kernel", U_PLAIN},
        {"processor_name", "system.processor_name", "CPU model", U_PLAIN},
        {"cpu_count", "system.cpu_count", "CPU count", U_PLAIN},
        {"memory_total_bytes", "system.memory_total_bytes", "host memory", U_BYTES_GIB},
    };
    for (size_t i = 0; i < sizeof sys / sizeof *sys; i++)
        compare(d, SEV_CHANGED, sys[i].field, sys[i].label, sys[i].u, NULL,
                get2(b, "system", sys[i].key), get2(a, "system", sys[i].key), NULL);
    compare(d, SEV_CHANGED, "gpu_count", "GPU count", U_PLAIN, NULL, get(b, "gpu_count"),
            get(a, "gpu_count"), NULL);
}

static bool has_text(const json_t *g, const char *key)
{
    const char *s = str_or_null(get(g, key));
    return s && *s;
}

/* The same physical GPU: by UUID, by bus id when a UUID is missing, else by index. */
static bool same_gpu(const json_t *x, const json_t *y)
{
    if (has_text(x, "uuid") && has_text(y, "uuid"))
        return strcmp(json_string_value(get(x, "uuid")), json_string_value(get(y, "uuid"))) == 0;
    if (has_text(x, "pci_bus_id") && has_text(y, "pci_bus_id"))
        return strcasecmp(json_string_value(get(x, "pci_bus_id")),
                          json_string_value(get(y, "pci_bus_id"))) == 0;
    return json_integer_value(get(x, "index")) == json_integer_value(get(y, "index"));
}

/* {"name", "uuid", "pci_bus_id"} of a GPU, for the added/removed items. */
static json_t *gpu_identity(const json_t *g)
{
    return json_pack("{s:o, s:o, s:o, s:o}", "index", copy_or_null(get(g, "index")), "name",
                     copy_or_null(get(g, "name")), "uuid", copy_or_null(get(g, "uuid")),
                     "pci_bus_id", copy_or_null(get(g, "pci_bus_id")));
}

static void added_or_removed(differ *d, const json_t *g, bool removed)
{
    json_t *id = gpu_identity(g);
    if (!id) {
        d->rc = GM_ENOMEM;
        return;
    }
    const char *name = str_or_null(get(g, "name")), *uuid = str_or_null(get(g, "uuid")),
               *bus = str_or_null(get(g, "pci_bus_id"));
    add(d, SEV_CHANGED, "gpu", g, removed ? id : NULL, removed ? NULL : id,
        "GPU %lld %s: %s %s at %s", (long long)json_integer_value(get(g, "index")),
        removed ? "removed" : "added", name ? name : "(unnamed)", uuid ? uuid : "(no UUID)",
        bus ? bus : "(unknown bus)");
    json_decref(id);
}

/* The same process: same pid, and the same start time when both recorded it (a pid reused by
 * a new process then differs), else the same command. */
static bool same_process(const json_t *x, const json_t *y)
{
    if (json_integer_value(get(x, "pid")) != json_integer_value(get(y, "pid")))
        return false;
    const json_t *sx = get(x, "start_time"), *sy = get(y, "start_time");
    if (json_is_integer(sx) && json_is_integer(sy))
        return json_integer_value(sx) == json_integer_value(sy);
    const char *cx = str_or_null(get(x, "command")), *cy = str_or_null(get(y, "command"));
    return strcmp(cx ? cx : "", cy ? cy : "") == 0;
}

static bool ignored_pid(const gm_audit_tolerance *t, const json_t *p)
{
    json_int_t pid = json_integer_value(get(p, "pid"));
    for (size_t i = 0; t->ignore_pids && i < t->ignore_pid_count; i++)
        if ((json_int_t)t->ignore_pids[i] == pid)
            return true;
    return false;
}

/* Processes on one side of a GPU only: each in `from` unmatched in `to` started (ended when
 * `ended`) during the run. */
static void process_changes(differ *d, const gm_audit_tolerance *t, const json_t *gpu,
                            const json_t *from, const json_t *to, bool ended)
{
    size_t nf = json_array_size(from), nt = json_array_size(to);
    bool *taken = calloc(nt + 1, sizeof *taken);
    if (!taken) {
        d->rc = GM_ENOMEM;
        return;
    }
    for (size_t i = 0; i < nf; i++) {
        const json_t *p = json_array_get(from, i);
        size_t j = 0;
        while (j < nt && (taken[j] || !same_process(p, json_array_get(to, j))))
            j++;
        if (j < nt) {
            taken[j] = true;
            continue;
        }
        if (ignored_pid(t, p))
            continue;
        /* A process holding GPU memory is work sharing the GPU's memory, SMs and bandwidth with
         * the run: its numbers were not measured on the machine of the other snapshot. One with
         * a few MiB or an amount the driver withholds (a tool that opened the device to read it,
         * a context being torn down) is worth seeing but is no evidence of shared work. */
        const json_t *mem = get(p, "used_memory_mib");
        bool heavy = json_is_number(mem) && json_number_value(mem) > GM_AUDIT_PROCESS_MEM_MIB;
        char amount[48];
        if (json_is_number(mem))
            snprintf(amount, sizeof amount, "%.0f MiB", json_number_value(mem));
        else
            snprintf(amount, sizeof amount, "memory unknown");
        const char *cmd = str_or_null(get(p, "command"));
        add(d, heavy ? SEV_CHANGED : SEV_WARNING, "processes", gpu, ended ? p : NULL,
            ended ? NULL : p, "GPU %lld: process %lld (%s) %s during the run, %s",
            (long long)json_integer_value(get(gpu, "index")),
            (long long)json_integer_value(get(p, "pid")), cmd && *cmd ? cmd : "command unknown",
            ended ? "ended" : "started", amount);
    }
    free(taken);
}

static void diff_processes(differ *d, const gm_audit_tolerance *t, const json_t *b, const json_t *a)
{
    const json_t *pb = get(b, "processes"), *pa = get(a, "processes");
    bool lb = json_is_array(pb), la = json_is_array(pa);
    if (lb != la) {
        /* One side was taken without the process list: unknown, not "none". */
        add(d, SEV_WARNING, "processes", b, NULL, NULL, "GPU %lld: processes %s before, %s after",
            (long long)json_integer_value(get(b, "index")), lb ? "listed" : "not listed",
            la ? "listed" : "not listed");
        return;
    }
    if (!lb)
        return;
    process_changes(d, t, a, pa, pb, false);
    process_changes(d, t, b, pb, pa, true);
}

static void diff_gpu(differ *d, const gm_audit_tolerance *t, const json_t *b, const json_t *a)
{
    compare(d, SEV_CHANGED, "index", "index", U_PLAIN, b, get(b, "index"), get(a, "index"),
            "enumeration order changed");
    compare(d, SEV_CHANGED, "name", "model", U_PLAIN, b, get(b, "name"), get(a, "name"), NULL);
    compare(d, SEV_CHANGED, "pci_bus_id", "PCI bus id", U_PLAIN, b, get(b, "pci_bus_id"),
            get(a, "pci_bus_id"), NULL);
    bool lost_b = json_is_true(get(b, "lost")), lost_a = json_is_true(get(a, "lost"));
    if (lost_b != lost_a) {
        char pre[32];
        gpu_prefix(b, pre, sizeof pre);
        add(d, SEV_CHANGED, "lost", b, get(b, "lost"), get(a, "lost"), "%s%s", pre,
            lost_a ? "is lost (fell off the bus)" : "answers again (was lost)");
    }
    if (lost_b || lost_a)
        return; /* a lost GPU reports nothing else to compare */

    /* Exact bytes when both sides have them; whole MiB from older or hand-made documents. */
    bool bytes = json_is_number(get(b, "memory_total_bytes")) &&
                 json_is_number(get(a, "memory_total_bytes"));
    compare(d, SEV_CHANGED, bytes ? "memory_total_bytes" : "memory_total_mib", "memory capacity",
            bytes ? U_BYTES_MIB : U_MIB, b,
            get(b, bytes ? "memory_total_bytes" : "memory_total_mib"),
            get(a, bytes ? "memory_total_bytes" : "memory_total_mib"), NULL);
    bytes =
        json_is_number(get(b, "memory_used_bytes")) && json_is_number(get(a, "memory_used_bytes"));
    rise(d, bytes ? "memory_used_bytes" : "memory_used_mib", "memory used", b,
         get(b, bytes ? "memory_used_bytes" : "memory_used_mib"),
         get(a, bytes ? "memory_used_bytes" : "memory_used_mib"),
         bytes ? 1.0 / GM_BYTES_PER_MIB : 1.0, "MiB", t->mem_mib);
    rise(d, "power_draw_w", "mean power", b, get(b, "power_draw_w"), get(a, "power_draw_w"), 1.0,
         "W", t->power_w);
    compare(d, SEV_CHANGED, "power_limit_w", "power limit", U_W, b, get(b, "power_limit_w"),
            get(a, "power_limit_w"), NULL);
    compare(d, SEV_CHANGED, "persistence_mode", "persistence mode", U_ONOFF, b,
            get(b, "persistence_mode"), get(a, "persistence_mode"), NULL);
    static const struct {
        const char *key, *label;
    } clocks[] = {
        {"clock_max_sm_mhz", "max SM clock"},
        {"clock_max_mem_mhz", "max memory clock"},
        {"clock_applications_graphics_mhz", "application graphics clock"},
        {"clock_applications_memory_mhz", "application memory clock"},
    };
    for (size_t i = 0; i < sizeof clocks / sizeof *clocks; i++)
        compare(d, SEV_CHANGED, clocks[i].key, clocks[i].label, U_MHZ, b, get(b, clocks[i].key),
                get(a, clocks[i].key), NULL);
    compare(d, SEV_CHANGED, "pcie.gen_max", "PCIe max link generation", U_PLAIN, b,
            get2(b, "pcie", "gen_max"), get2(a, "pcie", "gen_max"), NULL);
    compare(d, SEV_CHANGED, "pcie.width_max", "PCIe max link width", U_WIDTH, b,
            get2(b, "pcie", "width_max"), get2(a, "pcie", "width_max"), NULL);
    /* NVIDIA GPUs retrain the link to a lower generation when idle to save power (current gen
     * 1 at rest is normal), so a current-link change alone is not a changed system. */
    static const char idle[] = "links train down at idle; --strict fails on this";
    compare(d, SEV_WARNING, "pcie.gen_current", "PCIe current link generation", U_PLAIN, b,
            get2(b, "pcie", "gen_current"), get2(a, "pcie", "gen_current"), idle);
    compare(d, SEV_WARNING, "pcie.width_current", "PCIe current link width", U_WIDTH, b,
            get2(b, "pcie", "width_current"), get2(a, "pcie", "width_current"), idle);
    diff_processes(d, t, b, a);
}

/* Row of the GPU with driver index `index` in a P2P matrix, -1 when absent. */
static long p2p_row(const json_t *p2p, const json_t *gpu)
{
    json_int_t index = json_integer_value(get(gpu, "index"));
    const json_t *rows = get(p2p, "gpus");
    for (size_t i = 0; i < json_array_size(rows); i++)
        if (json_integer_value(json_array_get(rows, i)) == index)
            return (long)i;
    return -1;
}

static const json_t *p2p_cell(const json_t *p2p, int cap, long i, long j)
{
    return json_array_get(json_array_get(get(p2p, gm_json_p2p_cap_name(cap)), (size_t)i),
                          (size_t)j);
}

/* mb[k] and ma[k] are the same GPU in before and after. */
static void diff_p2p(differ *d, const json_t *b, const json_t *a, const json_t **mb,
                     const json_t **ma, size_t matched)
{
    bool kb = json_is_true(get(b, "p2p_known")), ka = json_is_true(get(a, "p2p_known"));
    if (kb != ka) {
        const char *prov = str_or_null(get(kb ? a : b, "provider"));
        add(d, SEV_WARNING, "p2p_known", NULL, get(b, "p2p_known"), get(a, "p2p_known"),
            "P2P matrix %s before, %s after (provider %s cannot read it)", kb ? "known" : "unknown",
            ka ? "known" : "unknown", prov ? prov : "unknown");
        return;
    }
    if (!kb)
        return;
    const json_t *pb = get(b, "p2p"), *pa = get(a, "p2p");
    for (size_t x = 0; x < matched; x++)
        for (size_t y = x + 1; y < matched; y++) {
            long bx = p2p_row(pb, mb[x]), by = p2p_row(pb, mb[y]);
            long ax = p2p_row(pa, ma[x]), ay = p2p_row(pa, ma[y]);
            if (bx < 0 || by < 0 || ax < 0 || ay < 0)
                continue; /* a GPU outside a matrix: added/removed already said so */
            if (json_is_true(get(mb[x], "lost")) || json_is_true(get(mb[y], "lost")) ||
                json_is_true(get(ma[x], "lost")) || json_is_true(get(ma[y], "lost")))
                continue; /* a lost GPU answers no P2P query: its "U"s are not news */
            long long ix = json_integer_value(get(mb[x], "index"));
            long long iy = json_integer_value(get(mb[y], "index"));
            for (int c = 0; c < GM_P2P__COUNT; c++) {
                const json_t *bxy = p2p_cell(pb, c, bx, by), *byx = p2p_cell(pb, c, by, bx);
                const json_t *axy = p2p_cell(pa, c, ax, ay), *ayx = p2p_cell(pa, c, ay, ax);
                bool cxy = !same(bxy, axy), cyx = !same(byx, ayx);
                const char *cap = gm_json_p2p_cap_name(c);
                char field[32];
                snprintf(field, sizeof field, "p2p.%s", cap);
                /* Most capabilities are symmetric: one line for both directions then. */
                if (cxy && cyx && same(bxy, byx) && same(axy, ayx)) {
                    add(d, SEV_CHANGED, field, mb[x], bxy, axy,
                        "P2P %s GPU %lld <-> GPU %lld %s -> %s", cap, ix, iy,
                        json_string_value(bxy), json_string_value(axy));
                    continue;
                }
                if (cxy)
                    add(d, SEV_CHANGED, field, mb[x], bxy, axy,
                        "P2P %s GPU %lld -> GPU %lld %s -> %s", cap, ix, iy, json_string_value(bxy),
                        json_string_value(axy));
                if (cyx)
                    add(d, SEV_CHANGED, field, mb[y], byx, ayx,
                        "P2P %s GPU %lld -> GPU %lld %s -> %s", cap, iy, ix, json_string_value(byx),
                        json_string_value(ayx));
            }
        }
}

static json_t *side_summary(const json_t *s)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o}", "timestamp", copy_or_null(get(s, "timestamp")),
                     "hostname", copy_or_null(get2(s, "system", "hostname")), "provider",
                     copy_or_null(get(s, "provider")), "gpumon_version",
                     copy_or_null(get(s, "gpumon_version")), "gpu_count",
                     json_integer((json_int_t)json_array_size(get(s, "gpus"))));
}

int gm_audit_diff(const json_t *before, const json_t *after, const gm_audit_tolerance *t,
                  gm_audit_verdict *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    gm_audit_tolerance defaults;
    if (!t) {
        gm_audit_tolerance_init(&defaults);
        t = &defaults;
    }
    gm_error verr = {0};
    if (gm_audit_validate(before, &verr) < 0)
        return gm_error_set(err, verr.code, "before: %s", verr.msg);
    if (gm_audit_validate(after, &verr) < 0)
        return gm_error_set(err, verr.code, "after: %s", verr.msg);

    const json_t *gb = get(before, "gpus"), *ga = get(after, "gpus");
    size_t nb = json_array_size(gb), na = json_array_size(ga);
    differ d = {.items = json_array()};
    const json_t **mb = calloc(nb + 1, sizeof *mb), **ma = calloc(nb + 1, sizeof *ma);
    bool *taken = calloc(na + 1, sizeof *taken);
    int rc = GM_OK;
    if (!d.items || !mb || !ma || !taken) {
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
        goto done;
    }

    diff_system(&d, before, after);
    size_t matched = 0;
    for (size_t i = 0; i < nb; i++) {
        const json_t *x = json_array_get(gb, i);
        size_t j = 0;
        while (j < na && (taken[j] || !same_gpu(x, json_array_get(ga, j))))
            j++;
        if (j == na) {
            added_or_removed(&d, x, true);
            continue;
        }
        taken[j] = true;
        mb[matched] = x;
        ma[matched++] = json_array_get(ga, j);
    }
    for (size_t j = 0; j < na; j++)
        if (!taken[j])
            added_or_removed(&d, json_array_get(ga, j), false);
    for (size_t k = 0; k < matched; k++)
        diff_gpu(&d, t, mb[k], ma[k]);
    diff_p2p(&d, before, after, mb, ma, matched);
    if (d.rc < 0) {
        rc = gm_error_set(err, d.rc, "out of memory");
        goto done;
    }

    out->changes = d.counts[SEV_CHANGED];
    out->warnings = d.counts[SEV_WARNING];
    out->notes = d.counts[SEV_NOTE];
    out->changed = out->changes > 0 || (t->strict && out->warnings > 0);
    out->report =
        json_pack("{s:s, s:i, s:s, s:b, s:b, s:{s:o, s:o}, s:{s:I, s:I, s:I}, s:o, s:o, s:O}",
                  "kind", "gpumon-diff", "schema", GM_AUDIT_SCHEMA, "verdict",
                  out->changed ? "CHANGED" : "UNCHANGED", "changed", out->changed, "strict",
                  t->strict, "tolerance", "memory_mib", gm_json_number(t->mem_mib), "power_w",
                  gm_json_number(t->power_w), "counts", "changed", (json_int_t)out->changes,
                  "warning", (json_int_t)out->warnings, "note", (json_int_t)out->notes, "before",
                  side_summary(before), "after", side_summary(after), "differences", d.items);
    if (!out->report) {
        memset(out, 0, sizeof *out);
        rc = gm_error_set(err, GM_ENOMEM, "out of memory");
    }
done:
    json_decref(d.items);
    free(mb);
    free(ma);
    free(taken);
    return rc;
}

void gm_audit_verdict_free(gm_audit_verdict *v)
{
    if (!v)
        return;
    json_decref(v->report);
    memset(v, 0, sizeof *v);
}

static void print_side(FILE *f, const char *label, const json_t *s)
{
    const char *ts = str_or_null(get(s, "timestamp")), *host = str_or_null(get(s, "hostname")),
               *prov = str_or_null(get(s, "provider")),
               *ver = str_or_null(get(s, "gpumon_version"));
    long long n = json_integer_value(get(s, "gpu_count"));
    fprintf(f, "%s %s on %s, %lld GPU%s (%s, gpumon %s)\n", label, ts ? ts : "(no time)",
            host ? host : "(unknown host)", n, n == 1 ? "" : "s", prov ? prov : "unknown",
            ver ? ver : "unknown");
}

void gm_audit_print_text(FILE *f, const gm_audit_verdict *v)
{
    const json_t *r = v->report;
    if (!r) {
        fprintf(f, "no verdict\n");
        return;
    }
    print_side(f, "before:", get(r, "before"));
    print_side(f, "after: ", get(r, "after"));
    const json_t *items = get(r, "differences");
    for (size_t i = 0; i < json_array_size(items); i++) {
        const json_t *it = json_array_get(items, i);
        const char *sev = str_or_null(get(it, "severity")), *msg = str_or_null(get(it, "message"));
        const char *tag = sev && strcmp(sev, "changed") == 0   ? "CHANGED:"
                          : sev && strcmp(sev, "warning") == 0 ? "WARNING:"
                                                               : "note:";
        fprintf(f, "%-8s %s\n", tag, msg ? msg : "");
    }
    char counts[128] = "";
    size_t o = 0;
    const struct {
        unsigned n;
        const char *one, *many;
    } parts[] = {{v->changes, "change", "changes"},
                 {v->warnings, "warning", "warnings"},
                 {v->notes, "note", "notes"}};
    for (size_t i = 0; i < 3; i++)
        if (parts[i].n && o < sizeof counts)
            o += (size_t)snprintf(counts + o, sizeof counts - o, "%s%u %s", o ? ", " : "",
                                  parts[i].n, parts[i].n == 1 ? parts[i].one : parts[i].many);
    bool strict = json_is_true(get(r, "strict"));
    if (v->changed)
        fprintf(f, "CHANGED (%s%s)\n", counts, strict && v->changes == 0 ? "; strict" : "");
    else if (o)
        fprintf(f, "UNCHANGED (%s)\n", counts);
    else
        fprintf(f, "UNCHANGED\n");
}
