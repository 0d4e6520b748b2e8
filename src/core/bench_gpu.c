/* bench_gpu.c - GPU sampling during benchmark points, on a thread of its own (see bench_gpu.h). */
#include "core/bench_gpu.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "collect/host.h"
#include "base/error.h"

enum cmd { CMD_NONE, CMD_BEGIN, CMD_END, CMD_QUIT };

struct gm_bench_gpu {
    gm_collector *c;
    double interval_s;
    const char *procfs_root;
    gm_snapshot *first; /* the baseline sample */
    gm_snapshot *snap;  /* the thread's scratch */
    size_t ngpus;
    unsigned idx[GM_MAX_GPUS];
    bool all;   /* no list given: every GPU of the first sample */
    bool judge; /* the provider's processes are real ones (not simulated) */

    gm_bench_pidset base, server, foreign_seen;

    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* commands to the thread */
    pthread_cond_t done_cv; /* the thread's answers */
    enum cmd cmd;
    bool cmd_done;

    /* The running point: the thread's between begin and end. */
    bool running;
    gm_session *session;
    double next_due_s;
    gm_bench_gpu_point cur;
};

static bool followed(const gm_bench_gpu *g, unsigned index)
{
    for (size_t k = 0; k < g->ngpus; k++)
        if (g->idx[k] == index)
            return true;
    return false;
}

static bool parent_of(void *arg, uint32_t pid, uint32_t *ppid)
{
    const gm_bench_gpu *g = arg;
    return gm_host_parent_pid(g->procfs_root, pid, ppid) == GM_OK;
}

/* Notes what a sample says about validity: throttle reasons, foreign processes. */
static void observe(gm_bench_gpu *g, const gm_snapshot *s)
{
    gm_bench_check *c = &g->cur.check;
    for (size_t k = 0; k < g->ngpus; k++) {
        const gm_gpu *x = gm_snapshot_gpu(s, g->idx[k]);
        if (x && !x->lost && gm_gpu_has(x, GM_M_THROTTLE_REASONS))
            c->throttle[k] |= (uint64_t)x->v[GM_M_THROTTLE_REASONS];
    }
    for (size_t i = 0; i < s->proc_count && g->judge; i++) {
        const gm_process *p = &s->procs[i];
        if (!followed(g, p->gpu_index))
            continue;
        if (gm_bench_is_server_process(&g->base, &g->server, &g->foreign_seen, p->pid, parent_of,
                                       g))
            continue;
        /* Once per point per process: foreign_seen is shared by the points, so look in this
         * point's list too. */
        bool listed = false;
        for (size_t k = 0; k < c->nforeign && !listed; k++)
            listed = g->cur.foreign[k].pid == p->pid;
        if (listed)
            continue;
        c->foreign_total++;
        if (c->nforeign < GM_BENCH_FOREIGN_MAX) {
            gm_bench_foreign *f = &g->cur.foreign[c->nforeign++];
            f->gpu = p->gpu_index;
            f->pid = p->pid;
            snprintf(f->command, sizeof f->command, "%s", p->command);
        }
    }
}

/* One sample into the running session (the lock held). */
static void take(gm_bench_gpu *g)
{
    gm_error err = {0};
    if (gm_collector_sample(g->c, g->snap, &err) < 0) {
        g->cur.sample_errors++;
        snprintf(g->cur.last_error, sizeof g->cur.last_error, "%s", err.msg);
        return;
    }
    if (gm_session_add(g->session, g->snap, &err) < 0) {
        g->cur.sample_errors++;
        snprintf(g->cur.last_error, sizeof g->cur.last_error, "%s", err.msg);
    }
    observe(g, g->snap);
}

static void deadline(double at_s, struct timespec *ts)
{
    ts->tv_sec = (time_t)at_s;
    ts->tv_nsec = (long)((at_s - (double)ts->tv_sec) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *thread_main(void *arg)
{
    gm_bench_gpu *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (g->cmd == CMD_NONE) {
            if (!g->running) {
                pthread_cond_wait(&g->cv, &g->mu);
                continue;
            }
            if (gm_clock_mono_s() >= g->next_due_s)
                break;
            struct timespec ts;
            deadline(g->next_due_s, &ts);
            pthread_cond_timedwait(&g->cv, &g->mu, &ts);
        }
        enum cmd cmd = g->cmd;
        if (cmd == CMD_QUIT)
            break;
        if (cmd == CMD_BEGIN) {
            g->running = true;
            g->next_due_s = gm_clock_mono_s() + g->interval_s;
            take(g);
        } else if (cmd == CMD_END) {
            take(g);
            g->running = false;
        } else {
            /* Due: the grid goes on from the previous due time, skipping what was missed. */
            take(g);
            double now = gm_clock_mono_s();
            do
                g->next_due_s += g->interval_s;
            while (g->next_due_s <= now);
            continue;
        }
        g->cmd = CMD_NONE;
        g->cmd_done = true;
        pthread_cond_broadcast(&g->done_cv);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Hands cmd to the thread and waits for its answer (the lock held on entry and exit). */
static void command(gm_bench_gpu *g, enum cmd cmd)
{
    g->cmd = cmd;
    g->cmd_done = false;
    pthread_cond_signal(&g->cv);
    while (!g->cmd_done)
        pthread_cond_wait(&g->done_cv, &g->mu);
}

int gm_bench_gpu_start(const gm_bench_gpu_options *o, gm_bench_gpu **out, gm_error *err)
{
    *out = NULL;
    if (!o->collector || !(o->interval_s > 0) || o->ngpus > GM_MAX_GPUS)
        return gm_error_set(err, GM_EINVAL, "bench: invalid GPU sampling options");
    gm_bench_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    g->c = o->collector;
    g->interval_s = o->interval_s;
    g->procfs_root = o->procfs_root;
    g->judge = gm_bench_provider_judged(gm_collector_provider(o->collector));
    if (!(g->first = gm_snapshot_new()) || !(g->snap = gm_snapshot_new())) {
        gm_bench_gpu_free(g);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    int rc = gm_collector_sample(g->c, g->first, err);
    if (rc < 0) {
        gm_bench_gpu_free(g);
        return rc;
    }
    if (o->gpus) {
        memcpy(g->idx, o->gpus, o->ngpus * sizeof *g->idx);
        g->ngpus = o->ngpus;
    } else {
        g->all = true;
        for (unsigned i = 0; i < g->first->gpu_count; i++)
            g->idx[g->ngpus++] = g->first->gpus[i].index;
    }
    for (size_t i = 0; i < g->first->proc_count && !o->server_later; i++)
        if (followed(g, g->first->procs[i].gpu_index))
            gm_bench_pidset_add(&g->base, g->first->procs[i].pid);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, &ca);
    pthread_cond_init(&g->done_cv, NULL);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->thread, NULL, thread_main, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        pthread_cond_destroy(&g->done_cv);
        gm_bench_gpu_free(g);
        return gm_error_set(err, GM_EIO, "cannot start the GPU sampling thread");
    }
    g->started = true;
    *out = g;
    return GM_OK;
}

void gm_bench_gpu_free(gm_bench_gpu *g)
{
    if (!g)
        return;
    if (g->started) {
        pthread_mutex_lock(&g->mu);
        g->cmd = CMD_QUIT;
        pthread_cond_signal(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        pthread_cond_destroy(&g->done_cv);
    }
    gm_session_free(g->session);
    gm_snapshot_free(g->first);
    gm_snapshot_free(g->snap);
    free(g);
}

int gm_bench_gpu_add_server(gm_bench_gpu *g, uint32_t pid, gm_error *err)
{
    if (pid == 0)
        return gm_error_set(err, GM_EINVAL, "bench: no server process to name");
    pthread_mutex_lock(&g->mu);
    gm_bench_pidset_add(&g->base, pid);
    g->foreign_seen.n = 0;
    pthread_mutex_unlock(&g->mu);
    return GM_OK;
}

const gm_snapshot *gm_bench_gpu_first(const gm_bench_gpu *g)
{
    return g->first;
}

size_t gm_bench_gpu_indices(const gm_bench_gpu *g, unsigned *out)
{
    memcpy(out, g->idx, g->ngpus * sizeof *out);
    return g->ngpus;
}

int gm_bench_gpu_begin(gm_bench_gpu *g, const char *label, gm_error *err)
{
    pthread_mutex_lock(&g->mu);
    if (g->running || g->session) {
        pthread_mutex_unlock(&g->mu);
        return gm_error_set(err, GM_ESTATE, "bench: a point is already being sampled");
    }
    int rc = gm_session_new(label, g->idx, g->ngpus, g->interval_s, &g->session, err);
    if (rc < 0) {
        pthread_mutex_unlock(&g->mu);
        return rc;
    }
    gm_session_set_kind(g->session, "bench");
    memset(&g->cur, 0, sizeof g->cur);
    g->cur.check.client_cpu_pct = g->cur.check.lag_p99_ms = NAN;
    g->cur.check.ngpus = g->ngpus;
    memcpy(g->cur.check.gpu_index, g->idx, g->ngpus * sizeof *g->idx);
    command(g, CMD_BEGIN);
    pthread_mutex_unlock(&g->mu);
    return GM_OK;
}

int gm_bench_gpu_end(gm_bench_gpu *g, gm_bench_gpu_point *out, gm_error *err)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&g->mu);
    if (!g->running) {
        pthread_mutex_unlock(&g->mu);
        return gm_error_set(err, GM_ESTATE, "bench: no point is being sampled");
    }
    command(g, CMD_END);
    gm_session_finish(g->session);
    *out = g->cur;
    out->session = g->session;
    out->check.foreign = out->foreign;
    g->session = NULL;
    pthread_mutex_unlock(&g->mu);
    return GM_OK;
}

void gm_bench_gpu_point_free(gm_bench_gpu_point *p)
{
    gm_session_free(p->session);
    memset(p, 0, sizeof *p);
}

int gm_bench_gpu_with_collector(gm_bench_gpu *g, int (*fn)(gm_collector *c, void *arg), void *arg)
{
    pthread_mutex_lock(&g->mu);
    int rc = g->running ? GM_ESTATE : fn(g->c, arg);
    pthread_mutex_unlock(&g->mu);
    return rc;
}
