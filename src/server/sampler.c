/* sampler.c - the sampling thread: collector -> history -> one pre-rendered, refcounted bundle
 * per sample, swapped under a mutex so readers only ever take a reference. */
#include "server/sampler.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/gzip.h"
#include "base/json.h"
#include "server/compat.h"
#include "server/log.h"
#include "server/prom.h"
#include "base/error.h"

_Static_assert(GM_BLOB_PRE >= 10, "blob headroom must hold a WebSocket frame header");

struct gm_sampler {
    gm_sampler_options opt;
    void (*wake)(void *arg);
    void *wake_arg;

    pthread_t thread;
    bool started, joined;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC: stop requests and "first pass done" */

    /* Under mu. */
    bool stop;
    bool first_done;
    int first_rc;
    char first_msg[512];
    gm_published *latest;
    gm_ring *history;
    gm_sampler_stats stats;

    /* Sampler thread only. */
    bool history_sized;
    gm_snapshot *snap;
    gm_topology *topo;
    gm_prom_rates *rates; /* previous NVLink readings, for DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL */
    uint64_t k8s_changes; /* the pod-resources state last logged */
    gm_k8s_state k8s_state;
};

/* ---- bundles ------------------------------------------------------------------------------ */

static void blob_free(gm_blob *b)
{
    if (b->data)
        free(b->data - GM_BLOB_PRE);
    b->data = NULL;
    b->len = 0;
}

/* Copies text into a blob with headroom; false when out of memory. */
static bool blob_set(gm_blob *b, const char *text, size_t len)
{
    unsigned char *m = malloc(GM_BLOB_PRE + len + 1);
    if (!m)
        return false;
    memcpy(m + GM_BLOB_PRE, text, len);
    m[GM_BLOB_PRE + len] = '\0';
    b->data = m + GM_BLOB_PRE;
    b->len = len;
    return true;
}

/* Compresses src into dst as a gzip stream. The big bodies (/metrics, /api/gpus) are served
 * far more often than they change, and the text repeats its labels, so compressing once per
 * sample turns 60 KB of /metrics for 8 GPUs into about 5 KB per scrape. Failure leaves dst
 * empty: clients then get the plain body. */
static void blob_gzip(gm_blob *dst, const gm_blob *src)
{
    size_t n;
    unsigned char *m = src->data ? gm_gzip(src->data, src->len, GM_BLOB_PRE, &n) : NULL;
    if (m) {
        dst->data = m + GM_BLOB_PRE;
        dst->len = n;
    }
}

/* Serialises j (stolen) into b; false when out of memory. */
static bool blob_json(gm_blob *b, json_t *j)
{
    if (!j)
        return false;
    size_t len = 0;
    char *text = gm_json_dump(j, &len);
    json_decref(j);
    if (!text)
        return false;
    bool ok = blob_set(b, text, len);
    free(text);
    return ok;
}

gm_published *gm_published_ref(gm_published *p)
{
    if (p)
        atomic_fetch_add(&p->refs, 1);
    return p;
}

void gm_published_unref(gm_published *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    for (int k = 0; k < GM_BLOB__COUNT; k++)
        blob_free(&p->blob[k]);
    for (unsigned i = 0; i < p->gpu_count; i++)
        blob_free(&p->gpu[i]);
    free((void *)p->health.calls);
    if (p->snap)
        free(p->snap->procs);
    free(p->snap);
    free(p);
}

/* /stats with the collector's call times added: "sampler_calls", one object per kind of call
 * (an NVML function, a /proc read...), in the order first made. Takes j; NULL stays NULL. */
static json_t *stats_with_calls(json_t *j, const gm_prom_health *h)
{
    json_t *calls = j ? json_array() : NULL;
    if (!calls)
        return j;
    for (size_t i = 0; i < h->call_count; i++)
        json_array_append_new(calls,
                              json_pack("{s:s, s:I, s:f, s:f}", "call", h->calls[i].name, "count",
                                        (json_int_t)h->calls[i].count, "wall_seconds",
                                        h->calls[i].wall_s, "cpu_seconds", h->calls[i].cpu_s));
    json_object_set_new(j, "sampler_calls", calls);
    return j;
}

const gm_blob *gm_published_blob(gm_published *p, gm_blob_kind k)
{
    if ((unsigned)k >= GM_BLOB__COUNT)
        return NULL;
    gm_blob *b = &p->blob[k];
    if (p->rendered[k])
        return b;
    p->rendered[k] = true; /* one try per sample: out of memory stays absent, not retried */
    const gm_snapshot *snap = p->snap;
    switch (k) {
    case GM_BLOB_FULL:
        blob_json(b, gm_json_snapshot(snap));
        break;
    case GM_BLOB_FULL_GZ:
        blob_gzip(b, gm_published_blob(p, GM_BLOB_FULL));
        break;
    case GM_BLOB_PROCESSES:
        blob_json(b, gm_json_processes(snap));
        break;
    case GM_BLOB_SYSTEM:
        if (snap->host_valid)
            blob_json(b, gm_json_host(&snap->host));
        break;
    case GM_BLOB_PROM: {
        size_t len = 0;
        char *text = gm_prom_render(snap, &p->health, &len);
        if (text)
            blob_set(b, text, len);
        free(text);
        break;
    }
    case GM_BLOB_PROM_GZ:
        blob_gzip(b, gm_published_blob(p, GM_BLOB_PROM));
        break;
    case GM_BLOB_GPU_METRICS:
        blob_json(b, gm_compat_gpu_metrics(snap));
        break;
    case GM_BLOB_STATS:
        blob_json(b, stats_with_calls(gm_compat_stats(snap, p->topo), &p->health));
        break;
    case GM_BLOB_WS_METRICS:
        blob_json(b, gm_compat_ws_metrics(snap));
        break;
    case GM_BLOB__COUNT:
        break;
    }
    return b;
}

const gm_blob *gm_published_gpu(gm_published *p, unsigned index)
{
    for (unsigned i = 0; p && i < p->gpu_count; i++) {
        if (p->gpu_index[i] != index)
            continue;
        if (!p->gpu_rendered[i]) {
            p->gpu_rendered[i] = true;
            blob_json(&p->gpu[i], gm_json_gpu(p->snap, &p->snap->gpus[i]));
        }
        return &p->gpu[i];
    }
    return NULL;
}

/* Publishes one snapshot: a copy of it and what rendering needs later. Nothing is rendered
 * here (see gm_published_blob). NULL when out of memory. */
static gm_published *publish(gm_sampler *s, const gm_snapshot *snap)
{
    gm_published *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    atomic_init(&p->refs, 1);
    p->seq = snap->seq;
    p->time_ms = snap->time_ms;
    snprintf(p->provider, sizeof p->provider, "%s", snap->provider);
    p->gpu_count = snap->gpu_count;
    p->host_valid = snap->host_valid;
    p->topo = s->topo;
    /* A flat copy whose process table holds just the processes there are (the snapshot's
     * table has room for GM_MAX_PROCS, which would multiply the bundle's size). */
    p->snap = malloc(sizeof *p->snap);
    if (!p->snap)
        goto oom;
    memcpy(p->snap, snap, sizeof *p->snap);
    p->snap->procs = NULL;
    if (snap->proc_count) {
        p->snap->procs = malloc(snap->proc_count * sizeof *snap->procs);
        if (!p->snap->procs)
            goto oom;
        memcpy(p->snap->procs, snap->procs, snap->proc_count * sizeof *snap->procs);
    }
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gm_gpu *g = &snap->gpus[i];
        p->gpu_index[i] = g->index;
        if (g->lost)
            p->lost[p->lost_count++] = g->index;
    }
    pthread_mutex_lock(&s->mu);
    p->health.samples_total = s->stats.samples_total;
    p->health.sample_errors_total = s->stats.errors_total;
    p->health.last_sample_duration_s = s->stats.last_duration_s;
    p->health.uptime_s = (double)(gm_clock_mono_ms() - s->stats.started_mono_ms) / 1000.0;
    pthread_mutex_unlock(&s->mu);
    p->health.no_per_core = s->opt.no_per_core;
    p->health.process_utilization = s->opt.process_metrics;
    /* The collector is this thread's: its call table is copied here, not read by renderers. */
    gm_call_stat one;
    size_t n = gm_collector_call_stats(s->opt.collector, &one, 1);
    gm_call_stat *calls = n ? malloc(n * sizeof *calls) : NULL;
    if (calls) {
        p->health.call_count = gm_collector_call_stats(s->opt.collector, calls, n);
        if (p->health.call_count > n)
            p->health.call_count = n;
        p->health.calls = calls;
    }
    gm_prom_rates_update(s->rates, snap, &p->health);
    return p;
oom:
    gm_published_unref(p);
    return NULL;
}

/* ---- the thread --------------------------------------------------------------------------- */

/* Creates the history once a sample tells how many GPU indexes to keep. Returns GM_OK, or
 * GM_EINVAL (message in msg) when it would exceed the memory limit, or the allocation error. */
static int make_history(gm_sampler *s, const gm_snapshot *snap, char *msg, size_t msg_len)
{
    if (!s->opt.history_s)
        return GM_OK;
    unsigned gpus = 0;
    for (unsigned i = 0; i < snap->gpu_count; i++)
        if (snap->gpus[i].index + 1 > gpus && snap->gpus[i].index < GM_MAX_GPUS)
            gpus = snap->gpus[i].index + 1;
    size_t slots = ((size_t)s->opt.history_s * 1000 + s->opt.poll_ms - 1) / s->opt.poll_ms;
    /* The size formula of history.h: a time ring plus one float ring per series. */
    double bytes =
        (double)slots * (8.0 + 4.0 * ((double)gpus * (double)gm_ring_gpu_columns() + GM_H__COUNT));
    if (s->opt.history_max_bytes && bytes > (double)s->opt.history_max_bytes) {
        snprintf(msg, msg_len,
                 "history of %u s at %u ms for %u GPU(s) needs %.0f MiB, over the %zu MiB "
                 "limit: shorten --history or lengthen --poll-interval",
                 s->opt.history_s, s->opt.poll_ms, gpus, bytes / (double)GM_BYTES_PER_MIB,
                 (size_t)(s->opt.history_max_bytes / GM_BYTES_PER_MIB));
        return GM_EINVAL;
    }
    gm_ring *h = NULL;
    gm_error err = {0};
    if (gm_ring_new(gpus, slots, &h, &err) < 0) {
        snprintf(msg, msg_len, "history: %.480s", err.msg);
        return err.code ? err.code : GM_ENOMEM;
    }
    pthread_mutex_lock(&s->mu);
    s->history = h;
    pthread_mutex_unlock(&s->mu);
    gm_log(GM_LOG_INFO, "history allocated", "slots=%zu gpus=%u bytes=%zu", slots, gpus,
           gm_ring_memory_bytes(h));
    return GM_OK;
}

/* Records how long a whole pass took (reading, history, rendering, publishing), to the
 * microsecond: a pass over simulated GPUs takes about a millisecond, which whole milliseconds
 * showed as 0. /metrics therefore reports the pass before the one it comes from. */
static void pass_done(gm_sampler *s, int64_t t0_us)
{
    double dur = (double)(gm_clock_mono_us() - t0_us) / 1e6;
    pthread_mutex_lock(&s->mu);
    s->stats.last_duration_s = dur;
    pthread_mutex_unlock(&s->mu);
}

/* The kubelet's pod-resources API, read by a thread of the collector: one log line when its
 * state or error changes, never one per sample. A node without a kubelet says so only at debug
 * level; a socket that goes away after answering is worth a warning. */
static void log_k8s(gm_sampler *s)
{
    gm_k8s_status st;
    gm_collector_k8s_status(s->opt.collector, &st);
    if (st.state == GM_K8S_OFF || st.state == GM_K8S_STARTING || st.changes == s->k8s_changes)
        return;
    gm_k8s_state prev = s->k8s_state;
    s->k8s_changes = st.changes;
    s->k8s_state = st.state;
    char q[400], q2[400];
    gm_log_quote(st.socket, q, sizeof q);
    if (st.state == GM_K8S_OK)
        gm_log(GM_LOG_INFO, "reading the kubelet's pod-resources",
               "socket=%s pods=%zu gpu_devices=%zu", q, st.pods, st.gpu_devices);
    else
        gm_log(st.state == GM_K8S_FAILED || prev == GM_K8S_OK ? GM_LOG_WARN : GM_LOG_DEBUG,
               "cannot read the kubelet's pod-resources: GPUs get no pod names from it",
               "socket=%s error=%s", q, gm_log_quote(st.message, q2, sizeof q2));
}

static void sample_once(gm_sampler *s, bool first)
{
    gm_error err = {0};
    int64_t t0_us = gm_clock_mono_us();
    int rc = gm_collector_sample(s->opt.collector, s->snap, &err);
    log_k8s(s);

    pthread_mutex_lock(&s->mu);
    s->stats.samples_total++;
    bool repeat = rc < 0 && strcmp(s->stats.last_error, err.msg) == 0;
    if (rc < 0) {
        s->stats.errors_total++;
        snprintf(s->stats.last_error, sizeof s->stats.last_error, "%s", err.msg);
    }
    pthread_mutex_unlock(&s->mu);

    if (rc < 0) {
        char q[300];
        /* A persistent failure is logged when it starts and when it changes, not every tick. */
        gm_log(repeat ? GM_LOG_DEBUG : GM_LOG_WARN, "sampling failed", "error=%s",
               gm_log_quote(err.msg, q, sizeof q));
        if (first) {
            pthread_mutex_lock(&s->mu);
            /* GM_EINVAL is reserved for the fatal history limit (see sampler.h). */
            s->first_rc = rc == GM_EINVAL ? GM_EIO : rc;
            snprintf(s->first_msg, sizeof s->first_msg, "%s", err.msg);
            pthread_mutex_unlock(&s->mu);
        }
        pass_done(s, t0_us);
        return;
    }

    if (!s->history_sized) {
        /* Sized by the first sample that succeeds, which knows the GPUs. */
        s->history_sized = true;
        char msg[512];
        int hrc = make_history(s, s->snap, msg, sizeof msg);
        if (hrc < 0 && first) {
            pthread_mutex_lock(&s->mu);
            s->first_rc = hrc;
            snprintf(s->first_msg, sizeof s->first_msg, "%s", msg);
            s->stop = true; /* a configuration the host cannot hold: the daemon exits */
            pthread_mutex_unlock(&s->mu);
            return;
        }
        if (hrc < 0) { /* too late to refuse the configuration: carry on without history */
            char q[600];
            gm_log(GM_LOG_ERROR, "history disabled", "error=%s", gm_log_quote(msg, q, sizeof q));
        }
    }
    gm_ring *h = gm_sampler_history(s);
    if (h)
        gm_ring_append(h, s->snap);

    gm_published *p = publish(s, s->snap);
    if (!p) {
        gm_log(GM_LOG_ERROR, "out of memory publishing a sample", "seq=%llu",
               (unsigned long long)s->snap->seq);
        return;
    }
    p->mono_ms = gm_clock_mono_ms();
    pthread_mutex_lock(&s->mu);
    gm_published *old = s->latest;
    s->latest = p;
    s->stats.last_ok_mono_ms = p->mono_ms;
    s->stats.last_error[0] = '\0';
    if (first)
        s->first_rc = GM_OK;
    pthread_mutex_unlock(&s->mu);
    gm_published_unref(old);
    if (s->wake)
        s->wake(s->wake_arg);
    if (s->opt.on_sample)
        s->opt.on_sample(s->opt.on_sample_arg, s->snap);
    pass_done(s, t0_us);
}

static void *sampler_main(void *arg)
{
    gm_sampler *s = arg;

    gm_error err = {0};
    if (gm_collector_topology(s->opt.collector, s->topo, &err) < 0) {
        char q[300];
        gm_log(GM_LOG_WARN, "could not read the P2P topology", "error=%s",
               gm_log_quote(err.msg, q, sizeof q));
        memset(s->topo, 0, sizeof *s->topo);
    }

    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    bool first = true;
    for (;;) {
        sample_once(s, first);
        pthread_mutex_lock(&s->mu);
        if (first) {
            s->first_done = true;
            pthread_cond_broadcast(&s->cv);
            first = false;
        }
        /* Fixed-rate schedule; ticks missed while a slow pass ran are skipped, not bunched. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        gm_clock_ts_add_ms(&next, s->opt.poll_ms);
        if (next.tv_sec < now.tv_sec || (next.tv_sec == now.tv_sec && next.tv_nsec < now.tv_nsec))
            next = now;
        while (!s->stop) {
            int rc = pthread_cond_timedwait(&s->cv, &s->mu, &next);
            if (rc == ETIMEDOUT)
                break;
        }
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
    }
    return NULL;
}

int gm_sampler_start(const gm_sampler_options *opt, void (*wake)(void *arg), void *arg,
                     gm_sampler **out, gm_error *err)
{
    if (!opt || !opt->collector || opt->poll_ms == 0 || !out)
        return gm_error_set(err, GM_EINVAL, "sampler: collector and poll interval are required");
    gm_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return gm_error_set(err, GM_ENOMEM, "sampler: out of memory");
    s->opt = *opt;
    s->wake = wake;
    s->wake_arg = arg;
    s->first_rc = GM_ETIMEDOUT;
    s->snap = gm_snapshot_new();
    s->topo = calloc(1, sizeof *s->topo);
    s->rates = gm_prom_rates_new(); /* NULL: the bandwidth is left out, nothing else */
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!s->snap || !s->topo) {
        gm_sampler_free(s);
        return gm_error_set(err, GM_ENOMEM, "sampler: out of memory");
    }
    s->stats.started_mono_ms = gm_clock_mono_ms();

    /* The thread inherits this mask: signals are for the loop's signalfd alone. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, sampler_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        gm_sampler_free(s);
        return gm_error_set(err, GM_EIO, "sampler: cannot start thread: %s", strerror(rc));
    }
    s->started = true;
    *out = s;
    return GM_OK;
}

int gm_sampler_wait_first(gm_sampler *s, int timeout_ms, gm_error *err)
{
    struct timespec deadline = gm_clock_mono_deadline(timeout_ms);
    pthread_mutex_lock(&s->mu);
    while (!s->first_done)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == ETIMEDOUT)
            break;
    int rc = s->first_done ? s->first_rc : GM_ETIMEDOUT;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", s->first_done ? s->first_msg : "first sample still running");
    pthread_mutex_unlock(&s->mu);
    if (rc < 0)
        return gm_error_set(err, rc, "%s", msg);
    return GM_OK;
}

gm_published *gm_sampler_latest(gm_sampler *s)
{
    pthread_mutex_lock(&s->mu);
    gm_published *p = gm_published_ref(s->latest);
    pthread_mutex_unlock(&s->mu);
    return p;
}

gm_ring *gm_sampler_history(gm_sampler *s)
{
    pthread_mutex_lock(&s->mu);
    gm_ring *h = s->history;
    pthread_mutex_unlock(&s->mu);
    return h;
}

void gm_sampler_get_stats(gm_sampler *s, gm_sampler_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    pthread_mutex_unlock(&s->mu);
}

void gm_sampler_stop(gm_sampler *s)
{
    if (!s || !s->started || s->joined)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->joined = true;
}

void gm_sampler_free(gm_sampler *s)
{
    if (!s)
        return;
    gm_sampler_stop(s);
    gm_published_unref(s->latest);
    gm_ring_free(s->history);
    gm_snapshot_free(s->snap);
    free(s->topo);
    gm_prom_rates_free(s->rates);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
