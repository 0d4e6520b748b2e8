/* top_source.c - `gpumon top`'s readings: a local collector or a daemon's /api/gpus (both as a
 * snapshot), made into one frame with per-GPU history, and each local process's CPU rate from two
 * /proc readings. */
#include "cli/top_source.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/commands.h"
#include "cli/remote.h"
#include "collect/host.h"
#include "base/error.h"

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
    /* Remote: the daemon's /api/gpus, read into snap as well. */
    gm_cli_remote *remote;
    char where[1024];
    bool loopback;
    gm_cli_gpu_filter filter; /* -i: the GPUs shown (none given: all) */
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
    s->snap = gm_snapshot_new();
    if (!s->prev || !s->cur || !s->old || !s->snap) {
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
    snprintf(s->where, sizeof s->where, "%s", gm_collector_provider(s->collector));
    s->loopback = true;
    return s;
}

gm_top_source *gm_top_open_remote(const char *url, const char *token, double timeout_s,
                                  gm_error *err)
{
    gm_cli_remote *r = gm_cli_remote_open(url, token, timeout_s, err);
    if (!r)
        return NULL;
    gm_top_source *s = alloc_source();
    if (!s) {
        gm_cli_remote_close(r);
        gm_error_set(err, GM_ENOMEM, "out of memory");
        return NULL;
    }
    s->remote = r;
    snprintf(s->where, sizeof s->where, "%s", gm_cli_remote_where(r));
    s->loopback = gm_cli_remote_loopback(r);
    return s;
}

void gm_top_set_filter(gm_top_source *s, const gm_cli_gpu_filter *f)
{
    s->filter = *f;
}

void gm_top_close(gm_top_source *s)
{
    if (!s)
        return;
    gm_collector_close(s->collector);
    gm_snapshot_free(s->snap);
    gm_cli_remote_close(s->remote);
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

const gm_top_gpu *gm_top_history_of(const gm_top_gpu *old, size_t nold, const gm_top_gpu *g)
{
    for (size_t i = 0; i < nold; i++) {
        const gm_top_gpu *o = &old[i];
        bool same;
        if (g->uuid[0])
            same = strcmp(o->uuid, g->uuid) == 0;
        else if (g->bus_id[0])
            same = !o->uuid[0] && strcmp(o->bus_id, g->bus_id) == 0;
        else
            same = !o->uuid[0] && !o->bus_id[0] && o->index == g->index;
        if (same)
            return o;
    }
    return NULL;
}

/* Appends g's readings to its history, continuing old's (NULL: a GPU new to the frame). */
static void push_history(gm_top_gpu *g, const gm_top_gpu *old)
{
    if (old) {
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
    p->rss_mib = (double)u.rss_bytes / (double)GM_BYTES_PER_MIB;
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

/* The frame from a snapshot (read here or from a daemon): the GPUs filter selects. */
static void from_snapshot(const gm_snapshot *sn, const gm_cli_gpu_filter *filter, gm_top_frame *f)
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
    f->ngpu = 0;
    for (unsigned i = 0; i < sn->gpu_count; i++) {
        const gm_gpu *g = &sn->gpus[i];
        if (!gm_cli_gpu_selected(filter, g))
            continue;
        gm_top_gpu *t = &f->gpus[f->ngpu++];
#define V(m, scale) (gm_gpu_has(g, m) ? g->v[m] * (scale) : NAN)
        t->index = g->index;
        snprintf(t->name, sizeof t->name, "%s", g->name);
        snprintf(t->uuid, sizeof t->uuid, "%s", g->uuid);
        snprintf(t->bus_id, sizeof t->bus_id, "%s", g->pci_bus_id);
        t->lost = g->lost;
        t->util_pct = V(GM_M_UTIL_GPU_PCT, 1);
        t->mem_used_mib = V(GM_M_MEM_USED_BYTES, 1.0 / (double)GM_BYTES_PER_MIB);
        t->mem_total_mib = V(GM_M_MEM_TOTAL_BYTES, 1.0 / (double)GM_BYTES_PER_MIB);
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
        const gm_gpu *pg = gm_snapshot_gpu(sn, p->gpu_index);
        if (pg && !gm_cli_gpu_selected(filter, pg))
            continue;
        if (f->nproc == GM_TOP_MAX_PROCS) {
            f->proc_dropped++;
            continue;
        }
        gm_top_proc *t = &f->procs[f->nproc++];
        memset(t, 0, sizeof *t);
        t->gpu = p->gpu_index;
        t->pid = p->pid;
        t->gpu_mem_mib = p->mem_valid ? (double)p->used_mem_bytes / (double)GM_BYTES_PER_MIB : NAN;
        t->sm_pct = p->util_valid & (1u << GM_PROC_UTIL_SM) ? p->util_pct[GM_PROC_UTIL_SM] : NAN;
        snprintf(t->user, sizeof t->user, "%s", p->user);
        snprintf(t->command, sizeof t->command, "%s", p->command);
    }
}

int gm_top_read(gm_top_source *s, gm_top_frame *f)
{
    gm_top_gpu *old = s->old;
    unsigned nold = f->ngpu;
    memcpy(old, f->gpus, nold * sizeof *old);
    gm_error err = {0};
    int rc = s->collector ? gm_collector_sample(s->collector, s->snap, &err)
                          : gm_cli_remote_read(s->remote, s->snap, &err);
    if (rc < 0) {
        snprintf(f->error, sizeof f->error, "%s (showing the last reading)", err.msg);
        return rc == GM_EPERM ? GM_EPERM : GM_EIO;
    }
    /* A GPU asked for that is not there: said, while the others are shown. */
    rc = gm_cli_gpu_filter_check(&s->filter, s->snap, &err);
    snprintf(f->error, sizeof f->error, "%s", rc < 0 ? err.msg : "");
    from_snapshot(s->snap, &s->filter, f);
    /* By UUID, not position: a filter, a GPU gone from the bus or a daemon listing its GPUs in
     * another order never continues one GPU's graph with another's readings. */
    for (unsigned i = 0; i < f->ngpu; i++)
        push_history(&f->gpus[i], gm_top_history_of(old, nold, &f->gpus[i]));
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
    return rc < 0 ? GM_ENOENT : GM_OK;
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
