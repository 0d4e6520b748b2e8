/* top_source.c - `gpumon top`'s readings: a local collector or a daemon's /api/gpus, made into
 * one frame with per-GPU history, and each local process's CPU rate from two /proc readings. */
#include "cli/top_source.h"

#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "cli/commands.h"
#include "collect/host.h"

/* The previous CPU reading of a process, for its rate. */
typedef struct proc_prev {
    uint32_t pid;
    uint64_t start_ticks;
    double cpu_s, at_s;
} proc_prev;

struct gm_top_source {
    /* Local. */
    gm_collector *collector;
    gm_snapshot *snap;
    /* Remote. */
    CURL *curl;
    struct curl_slist *headers;
    char url[1024]; /* .../api/gpus */
    char where[1024];
    bool loopback;
    /* CPU rates: last reading of each process seen, swapped each read. */
    proc_prev *prev, *cur;
    size_t nprev, ncur;
    gm_top_gpu *old; /* the previous reading's GPUs, whose history the new one continues */
};

/* ---- opening -------------------------------------------------------------------------------- */

static gm_top_source *alloc_source(void)
{
    gm_top_source *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->prev = calloc(GM_TOP_MAX_PROCS, sizeof *s->prev);
    s->cur = calloc(GM_TOP_MAX_PROCS, sizeof *s->cur);
    s->old = calloc(GM_MAX_GPUS, sizeof *s->old);
    if (!s->prev || !s->cur || !s->old) {
        gm_top_close(s);
        return NULL;
    }
    return s;
}

gm_top_source *gm_top_open_local(const gm_cli_source *src, int *exit_code)
{
    gm_collector_options copt;
    *exit_code = GM_EXIT_USAGE;
    if (!gm_cli_collector_options("top", src, &copt))
        return NULL;
    copt.no_first_cpu_wait = true; /* top reads again within a second */
    gm_top_source *s = alloc_source();
    if (!s) {
        fprintf(stderr, "gpumon top: out of memory\n");
        *exit_code = GM_EXIT_FAILURE;
        return NULL;
    }
    s->collector = gm_cli_collector_open("top", &copt, exit_code);
    if (!s->collector) {
        gm_top_close(s);
        return NULL;
    }
    if (!gm_cli_require_gpu("top", s->collector, true)) {
        *exit_code = GM_EXIT_NO_GPU;
        gm_top_close(s);
        return NULL;
    }
    s->snap = gm_snapshot_new();
    if (!s->snap) {
        fprintf(stderr, "gpumon top: out of memory\n");
        *exit_code = GM_EXIT_FAILURE;
        gm_top_close(s);
        return NULL;
    }
    snprintf(s->where, sizeof s->where, "%s", gm_collector_provider(s->collector));
    s->loopback = true;
    return s;
}

/* Whether host (as written in a URL) is this machine. */
static bool host_is_loopback(const char *host, size_t len)
{
    return (len == 9 && strncasecmp(host, "localhost", 9) == 0) ||
           (len >= 4 && strncmp(host, "127.", 4) == 0) ||
           (len == 5 && strncmp(host, "[::1]", 5) == 0);
}

gm_top_source *gm_top_open_remote(const char *url, const char *token, double timeout_s,
                                  gm_error *err)
{
    const char *rest = url;
    const char *scheme = "http://";
    if (strncmp(url, "http://", 7) == 0)
        rest = url + 7;
    else if (strncmp(url, "https://", 8) == 0) {
        rest = url + 8;
        scheme = "https://";
    } else if (strstr(url, "://")) {
        gm_error_set(err, GM_EINVAL, "--connect \"%s\": only http:// and https:// URLs", url);
        return NULL;
    }
    size_t hostlen = strcspn(rest, ":/");
    if (rest[0] == '[') {
        const char *close = strchr(rest, ']');
        hostlen = close ? (size_t)(close - rest) + 1 : strlen(rest);
    }
    size_t len = strlen(rest);
    while (len && rest[len - 1] == '/')
        len--;
    if (hostlen == 0 || len + strlen(scheme) + 16 > 1000) {
        gm_error_set(err, GM_EINVAL, "--connect \"%s\" is not a URL such as http://127.0.0.1:9401",
                     url);
        return NULL;
    }
    gm_top_source *s = alloc_source();
    if (!s) {
        gm_error_set(err, GM_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(s->where, sizeof s->where, "%s%.*s", scheme, (int)len, rest);
    snprintf(s->url, sizeof s->url, "%s/api/gpus", s->where);
    s->loopback = host_is_loopback(rest, hostlen);
    s->curl = curl_easy_init();
    if (!s->curl) {
        gm_error_set(err, GM_ENOMEM, "cannot start libcurl");
        gm_top_close(s);
        return NULL;
    }
    if (token && *token) {
        char h[64 + 1024];
        snprintf(h, sizeof h, "Authorization: Bearer %s", token);
        s->headers = curl_slist_append(NULL, h);
    }
    long ms = (long)(timeout_s * 1000);
    curl_easy_setopt(s->curl, CURLOPT_URL, s->url);
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 2000);
    curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 2000);
    curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->curl, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(s->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    return s;
}

void gm_top_close(gm_top_source *s)
{
    if (!s)
        return;
    gm_collector_close(s->collector);
    gm_snapshot_free(s->snap);
    if (s->curl)
        curl_easy_cleanup(s->curl);
    curl_slist_free_all(s->headers);
    free(s->prev);
    free(s->cur);
    free(s->old);
    free(s);
}

bool gm_top_local_pids(const gm_top_source *s)
{
    return s->loopback;
}

const char *gm_top_where(const gm_top_source *s)
{
    return s->where;
}

/* ---- the frame ------------------------------------------------------------------------------ */

/* Appends each GPU's readings to its history (by index; a GPU new to the frame starts one). */
static void push_history(gm_top_gpu *g, const gm_top_gpu *old)
{
    if (old && old->index == g->index && strcmp(old->uuid, g->uuid) == 0) {
        memcpy(g->hist, old->hist, sizeof g->hist);
        g->nhist = old->nhist;
    } else {
        g->nhist = 0;
    }
    double v[GM_TOP_H__COUNT] = {
        g->util_pct,
        g->mem_total_mib > 0 ? 100 * g->mem_used_mib / g->mem_total_mib : NAN,
        g->power_limit_w > 0 ? 100 * g->power_w / g->power_limit_w : NAN,
        g->temp_c,
    };
    if (g->nhist == GM_TOP_HISTORY) {
        for (int k = 0; k < GM_TOP_H__COUNT; k++)
            memmove(g->hist[k], g->hist[k] + 1, (GM_TOP_HISTORY - 1) * sizeof g->hist[k][0]);
        g->nhist--;
    }
    for (int k = 0; k < GM_TOP_H__COUNT; k++)
        g->hist[k][g->nhist] = (float)v[k];
    g->nhist++;
}

/* Fills the /proc part of p (CPU rate, resident memory, owner) when PIDs are this host's. */
static void proc_usage(gm_top_source *s, gm_top_proc *p, double now, double uptime_s)
{
    p->cpu_pct = p->rss_mib = p->elapsed_s = NAN;
    p->has_uid = false;
    p->start_ticks = 0;
    gm_host_proc_usage u;
    if (!s->loopback || gm_host_process_usage(NULL, p->pid, &u) < 0)
        return;
    p->rss_mib = (double)u.rss_bytes / 1048576.0;
    p->has_uid = u.has_uid;
    p->uid = u.uid;
    p->start_ticks = u.start_ticks;
    long hz = sysconf(_SC_CLK_TCK);
    if (!isnan(uptime_s) && hz > 0 && uptime_s >= (double)u.start_ticks / (double)hz)
        p->elapsed_s = uptime_s - (double)u.start_ticks / (double)hz;
    for (size_t i = 0; i < s->nprev; i++)
        if (s->prev[i].pid == p->pid && s->prev[i].start_ticks == u.start_ticks &&
            now > s->prev[i].at_s) {
            p->cpu_pct = 100 * (u.cpu_s - s->prev[i].cpu_s) / (now - s->prev[i].at_s);
            if (p->cpu_pct < 0)
                p->cpu_pct = NAN;
            break;
        }
    for (size_t i = 0; i < s->ncur; i++)
        if (s->cur[i].pid == p->pid)
            return; /* on two GPUs: one reading is enough */
    if (s->ncur < GM_TOP_MAX_PROCS)
        s->cur[s->ncur++] = (proc_prev){p->pid, u.start_ticks, u.cpu_s, now};
}

static double num(const json_t *j)
{
    return json_is_number(j) ? json_number_value(j) : NAN;
}

static double path_num(const json_t *j, const char *a, const char *b)
{
    const json_t *x = json_object_get(j, a);
    return num(b ? json_object_get(x, b) : x);
}

static void copy_str(char *dst, size_t len, const json_t *j)
{
    snprintf(dst, len, "%s", json_is_string(j) ? json_string_value(j) : "");
}

/* The frame from a snapshot read here. */
static void from_snapshot(const gm_snapshot *sn, gm_top_frame *f)
{
    f->time_ms = sn->time_ms;
    snprintf(f->hostname, sizeof f->hostname, "%s", sn->host.hostname);
    snprintf(f->provider, sizeof f->provider, "%s", sn->provider);
    snprintf(f->driver, sizeof f->driver, "%s", sn->driver_version);
    snprintf(f->cuda, sizeof f->cuda, "%s", sn->cuda_version);
    const gm_host *h = &sn->host;
    f->host_cpu_pct =
        sn->host_valid && gm_host_has(h, GM_H_CPU_UTIL_PCT) ? h->v[GM_H_CPU_UTIL_PCT] : NAN;
    f->host_cpus = sn->host_valid && gm_host_has(h, GM_H_CPU_COUNT) ? h->v[GM_H_CPU_COUNT] : NAN;
    bool mem = sn->host_valid && gm_host_has(h, GM_H_MEM_USED_BYTES) &&
               gm_host_has(h, GM_H_MEM_TOTAL_BYTES);
    f->host_mem_used_gib = mem ? h->v[GM_H_MEM_USED_BYTES] / 1073741824.0 : NAN;
    f->host_mem_total_gib = mem ? h->v[GM_H_MEM_TOTAL_BYTES] / 1073741824.0 : NAN;
    f->ngpu = sn->gpu_count;
    for (unsigned i = 0; i < sn->gpu_count; i++) {
        const gm_gpu *g = &sn->gpus[i];
        gm_top_gpu *t = &f->gpus[i];
#define V(m, scale) (gm_gpu_has(g, m) ? g->v[m] * (scale) : NAN)
        t->index = g->index;
        snprintf(t->name, sizeof t->name, "%s", g->name);
        snprintf(t->uuid, sizeof t->uuid, "%s", g->uuid);
        t->lost = g->lost;
        t->util_pct = V(GM_M_UTIL_GPU_PCT, 1);
        t->mem_used_mib = V(GM_M_MEM_USED_BYTES, 1.0 / 1048576);
        t->mem_total_mib = V(GM_M_MEM_TOTAL_BYTES, 1.0 / 1048576);
        t->power_w = V(GM_M_POWER_MW, 1e-3);
        t->power_limit_w = V(GM_M_POWER_LIMIT_MW, 1e-3);
        t->temp_c = V(GM_M_TEMP_C, 1);
        t->fan_pct = V(GM_M_FAN_PCT, 1);
#undef V
        if (gm_gpu_has(g, GM_M_PSTATE))
            snprintf(t->pstate, sizeof t->pstate, "P%.0f", g->v[GM_M_PSTATE]);
        else
            t->pstate[0] = '\0';
    }
    f->nproc = 0;
    f->proc_dropped = sn->proc_dropped;
    for (size_t i = 0; i < sn->proc_count; i++) {
        const gm_process *p = &sn->procs[i];
        if (f->nproc == GM_TOP_MAX_PROCS) {
            f->proc_dropped++;
            continue;
        }
        gm_top_proc *t = &f->procs[f->nproc++];
        memset(t, 0, sizeof *t);
        t->gpu = p->gpu_index;
        t->pid = p->pid;
        t->gpu_mem_mib = p->mem_valid ? (double)p->used_mem_bytes / 1048576.0 : NAN;
        t->sm_pct = p->util_valid & (1u << GM_PROC_UTIL_SM) ? p->util_pct[GM_PROC_UTIL_SM] : NAN;
        snprintf(t->user, sizeof t->user, "%s", p->user);
        snprintf(t->command, sizeof t->command, "%s", p->command);
    }
}

/* The frame from the daemon's GET /api/gpus document (the model gpumon query --format json
 * prints). */
static void from_json(const json_t *doc, gm_top_frame *f)
{
    f->time_ms = (int64_t)json_integer_value(json_object_get(doc, "timestamp_ms"));
    copy_str(f->hostname, sizeof f->hostname, json_object_get(doc, "hostname"));
    copy_str(f->provider, sizeof f->provider, json_object_get(doc, "provider"));
    copy_str(f->driver, sizeof f->driver, json_object_get(doc, "driver_version"));
    copy_str(f->cuda, sizeof f->cuda, json_object_get(doc, "cuda_version"));
    const json_t *sys = json_object_get(doc, "system");
    f->host_cpu_pct = path_num(sys, "cpu_percent", NULL);
    f->host_cpus = path_num(sys, "cpu_count", NULL);
    f->host_mem_used_gib = path_num(sys, "memory", "used_bytes") / 1073741824.0;
    f->host_mem_total_gib = path_num(sys, "memory", "total_bytes") / 1073741824.0;
    const json_t *gpus = json_object_get(doc, "gpus");
    f->ngpu = 0;
    f->nproc = 0;
    f->proc_dropped = (size_t)json_integer_value(json_object_get(doc, "processes_dropped"));
    size_t i;
    const json_t *g;
    json_array_foreach(gpus, i, g)
    {
        if (f->ngpu == GM_MAX_GPUS)
            break;
        gm_top_gpu *t = &f->gpus[f->ngpu++];
        t->index = (unsigned)json_integer_value(json_object_get(g, "index"));
        copy_str(t->name, sizeof t->name, json_object_get(g, "name"));
        copy_str(t->uuid, sizeof t->uuid, json_object_get(g, "uuid"));
        t->lost = json_is_true(json_object_get(g, "lost"));
        t->util_pct = path_num(g, "utilization", "gpu");
        t->mem_used_mib = path_num(g, "memory", "used_bytes") / 1048576.0;
        t->mem_total_mib = path_num(g, "memory", "total_bytes") / 1048576.0;
        t->power_w = path_num(g, "power", "draw_w");
        t->power_limit_w = path_num(g, "power", "limit_w");
        t->temp_c = path_num(g, "temperature_c", NULL);
        t->fan_pct = path_num(g, "fan_percent", NULL);
        copy_str(t->pstate, sizeof t->pstate, json_object_get(g, "pstate"));
        size_t k;
        const json_t *p;
        json_array_foreach(json_object_get(g, "processes"), k, p)
        {
            if (f->nproc == GM_TOP_MAX_PROCS) {
                f->proc_dropped++;
                continue;
            }
            gm_top_proc *tp = &f->procs[f->nproc++];
            memset(tp, 0, sizeof *tp);
            tp->gpu = t->index;
            tp->pid = (uint32_t)json_integer_value(json_object_get(p, "pid"));
            tp->gpu_mem_mib = num(json_object_get(p, "used_memory_bytes")) / 1048576.0;
            tp->sm_pct = path_num(p, "utilization", "sm");
            copy_str(tp->user, sizeof tp->user, json_object_get(p, "user"));
            copy_str(tp->command, sizeof tp->command, json_object_get(p, "command"));
        }
    }
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    gm_buf *b = ud;
    /* A /api/gpus body is some KiB per GPU; refuse anything absurd rather than grow forever. */
    if (b->len + size * n > (64u << 20))
        return 0;
    gm_buf_put(b, data, size * n);
    return b->failed ? 0 : size * n;
}

/* GET /api/gpus into doc; GM_OK, or an error with f->error set. */
static int fetch(gm_top_source *s, gm_top_frame *f, json_t **doc)
{
    gm_buf b;
    gm_buf_init(&b, 0);
    curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, &b);
    CURLcode cc = curl_easy_perform(s->curl);
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    int rc = GM_OK;
    if (cc != CURLE_OK) {
        snprintf(f->error, sizeof f->error, "%s: %s", s->where, curl_easy_strerror(cc));
        rc = GM_EIO;
    } else if (status == 401 || status == 403) {
        snprintf(f->error, sizeof f->error,
                 "%s answered %ld: give its token with --token or GPU_MONITOR_TOKEN", s->where,
                 status);
        rc = GM_EPERM;
    } else if (status != 200) {
        snprintf(f->error, sizeof f->error, "%s answered %ld to GET /api/gpus", s->where, status);
        rc = GM_EIO;
    } else {
        json_error_t jerr;
        *doc = json_loadb(b.p ? b.p : "", b.len, 0, &jerr);
        if (!json_is_object(*doc)) {
            json_decref(*doc);
            *doc = NULL;
            snprintf(f->error, sizeof f->error, "%s: /api/gpus is not the JSON expected: %s",
                     s->where, jerr.text);
            rc = GM_EIO;
        }
    }
    gm_buf_free(&b);
    return rc;
}

int gm_top_read(gm_top_source *s, gm_top_frame *f)
{
    gm_top_gpu *old = s->old;
    unsigned nold = f->ngpu;
    memcpy(old, f->gpus, nold * sizeof *old);
    if (s->collector) {
        gm_error err = {0};
        if (gm_collector_sample(s->collector, s->snap, &err) < 0) {
            snprintf(f->error, sizeof f->error, "%s", err.msg);
            return GM_EIO;
        }
        from_snapshot(s->snap, f);
    } else {
        json_t *doc = NULL;
        int rc = fetch(s, f, &doc);
        if (rc < 0)
            return rc;
        from_json(doc, f);
        json_decref(doc);
    }
    f->error[0] = '\0';
    for (unsigned i = 0; i < f->ngpu; i++)
        push_history(&f->gpus[i], i < nold ? &old[i] : NULL);
    double now = gm_clock_mono_s();
    /* A process's start is in clock ticks after boot: its age needs the seconds since boot. */
    char up[64];
    double uptime_s = NAN;
    if (s->loopback && gm_host_read_small("/proc/uptime", up, sizeof up) > 0)
        uptime_s = strtod(up, NULL);
    s->ncur = 0;
    for (size_t i = 0; i < f->nproc; i++)
        proc_usage(s, &f->procs[i], now, uptime_s);
    proc_prev *t = s->prev;
    s->prev = s->cur;
    s->cur = t;
    s->nprev = s->ncur;
    return GM_OK;
}

/* ---- sorting -------------------------------------------------------------------------------- */

static int cmp_desc(double a, double b)
{
    bool ha = !isnan(a), hb = !isnan(b);
    if (ha != hb)
        return ha ? -1 : 1; /* absent last */
    if (!ha || a == b)
        return 0;
    return a > b ? -1 : 1;
}

static int by_pid(const void *x, const void *y)
{
    const gm_top_proc *a = x, *b = y;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->gpu < b->gpu ? -1 : a->gpu > b->gpu;
}

static int by_gpu_mem(const void *x, const void *y)
{
    int c = cmp_desc(((const gm_top_proc *)x)->gpu_mem_mib, ((const gm_top_proc *)y)->gpu_mem_mib);
    return c ? c : by_pid(x, y);
}

static int by_cpu(const void *x, const void *y)
{
    int c = cmp_desc(((const gm_top_proc *)x)->cpu_pct, ((const gm_top_proc *)y)->cpu_pct);
    return c ? c : by_gpu_mem(x, y);
}

static int by_sm(const void *x, const void *y)
{
    int c = cmp_desc(((const gm_top_proc *)x)->sm_pct, ((const gm_top_proc *)y)->sm_pct);
    return c ? c : by_gpu_mem(x, y);
}

void gm_top_sort_procs(gm_top_frame *f, gm_top_sort by)
{
    qsort(f->procs, f->nproc, sizeof *f->procs,
          by == GM_TOP_SORT_CPU   ? by_cpu
          : by == GM_TOP_SORT_PID ? by_pid
          : by == GM_TOP_SORT_SM  ? by_sm
                                  : by_gpu_mem);
}
