/* select.c - availability scores, best-N selection with reasons for every GPU left out, and the
 * polling wait (optionally ending with a lease) that `gpumon wait` and `gpumon run` share. */
#include "core/select.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/clock.h"
#include "base/error.h"

bool gm_select_score(const gm_gpu *g, double *score)
{
    if (g->lost || !gm_gpu_has(g, GM_M_MEM_FREE_BYTES) || !gm_gpu_has(g, GM_M_MEM_TOTAL_BYTES) ||
        !gm_gpu_has(g, GM_M_UTIL_GPU_PCT) || !(g->v[GM_M_MEM_TOTAL_BYTES] > 0))
        return false;
    double mem = g->v[GM_M_MEM_FREE_BYTES] / g->v[GM_M_MEM_TOTAL_BYTES];
    double idle = (100.0 - g->v[GM_M_UTIL_GPU_PCT]) / 100.0;
    *score = GM_SCORE_W_MEMORY * mem + GM_SCORE_W_IDLE * idle;
    return true;
}

bool gm_select_score_mig(const gm_mig_device *m, bool busy, double *score)
{
    if (!m->mem_valid || m->mem_total_bytes == 0)
        return false;
    double mem = (double)m->mem_free_bytes / (double)m->mem_total_bytes;
    double idle = busy ? 0 : 1;
    if (m->prof_valid & (1u << GM_MIG_PROF_SM_ACTIVE))
        idle = (100.0 - m->prof_pct[GM_MIG_PROF_SM_ACTIVE]) / 100.0;
    *score = GM_SCORE_W_MEMORY * mem + GM_SCORE_W_IDLE * idle;
    return true;
}

const char *gm_select_status_name(gm_select_status st)
{
    switch (st) {
    case GM_SEL_SELECTED:
        return "selected";
    case GM_SEL_AVAILABLE:
        return "available";
    case GM_SEL_LOST:
        return "lost";
    case GM_SEL_UNSCORABLE:
        return "unscorable";
    case GM_SEL_LOW_MEMORY:
        return "low_memory";
    case GM_SEL_BUSY:
        return "busy";
    case GM_SEL_LEASED:
        return "leased";
    case GM_SEL_HIDDEN:
        return "hidden";
    case GM_SEL_NOT_WANTED:
        return "not_requested";
    }
    return "unknown";
}

/* Does token name g the way CUDA_VISIBLE_DEVICES UUID entries do: a prefix of "GPU-<uuid>",
 * or of the UUID without its "GPU-" part? */
static bool uuid_prefix(const char *tok, size_t len, const char *uuid)
{
    if (!uuid[0] || len == 0)
        return false;
    if (strncmp(uuid, tok, len) == 0 && strlen(uuid) >= len)
        return true;
    return strncmp(uuid, "GPU-", 4) == 0 && strlen(uuid + 4) >= len &&
           strncmp(uuid + 4, tok, len) == 0;
}

/* The entry of a CUDA_VISIBLE_DEVICES list that starts at *p, blanks trimmed: moves *p to its
 * first character and returns its length; *comma is the comma after it, NULL at the end. */
static size_t list_entry(const char **p, const char **comma)
{
    *comma = strchr(*p, ',');
    size_t len = *comma ? (size_t)(*comma - *p) : strlen(*p);
    while (len && (**p == ' ' || **p == '\t'))
        (*p)++, len--;
    while (len && ((*p)[len - 1] == ' ' || (*p)[len - 1] == '\t'))
        len--;
    return len;
}

void gm_select_visible(const char *value, const gm_snapshot *s, bool *visible)
{
    for (unsigned i = 0; i < s->gpu_count; i++)
        visible[i] = value == NULL;
    if (!value)
        return;
    const char *p = value;
    for (;;) {
        const char *comma;
        size_t len = list_entry(&p, &comma);
        if (len == 0)
            return; /* CUDA stops at the first entry it cannot use */
        size_t digits = 0;
        while (digits < len && p[digits] >= '0' && p[digits] <= '9')
            digits++;
        int hit = -1;
        if (digits == len) {
            unsigned long idx = strtoul(p, NULL, 10);
            for (unsigned i = 0; i < s->gpu_count && hit < 0; i++)
                if (s->gpus[i].index == idx)
                    hit = (int)i;
        } else if (strncmp(p, "MIG-", 4) != 0) {
            /* A MIG instance is not a whole GPU: it ends the list like any unknown entry. */
            for (unsigned i = 0; i < s->gpu_count; i++) {
                if (!uuid_prefix(p, len, s->gpus[i].uuid))
                    continue;
                if (hit >= 0) {
                    hit = -1; /* ambiguous prefix: CUDA rejects it */
                    break;
                }
                hit = (int)i;
            }
        }
        if (hit < 0)
            return;
        visible[hit] = true;
        if (!comma)
            return;
        p = comma + 1;
    }
}

/* A MIG device is visible when the value names its GPU, or names it by its "MIG-..." UUID or a
 * prefix of that longer than "MIG-" (any entry of the list: CUDA's stop at the first invalid
 * one is gm_select_visible's business for GPUs). */
static bool mig_visible(const char *value, const char *uuid, bool gpu_visible)
{
    if (!value || gpu_visible)
        return true;
    for (const char *p = value; *p;) {
        const char *comma;
        size_t len = list_entry(&p, &comma);
        if (len > 4 && strncmp(p, "MIG-", 4) == 0 && strncmp(uuid, p, len) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

static bool wanted(const gm_select_request *req, unsigned index)
{
    if (!req->only)
        return true;
    for (size_t i = 0; i < req->n_only; i++)
        if (req->only[i] == index)
            return true;
    return false;
}

/* Rank order: selected, then available, both by score (ties to the lower index); then the
 * excluded by index. */
static int rank_cmp(const void *a, const void *b)
{
    const gm_select_gpu *x = a, *y = b;
    int gx = x->status == GM_SEL_SELECTED ? 0 : x->status == GM_SEL_AVAILABLE ? 1 : 2;
    int gy = y->status == GM_SEL_SELECTED ? 0 : y->status == GM_SEL_AVAILABLE ? 1 : 2;
    if (gx != gy)
        return gx - gy;
    if (gx < 2 && x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int uint_cmp(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

/* Leaves e out with status st and the reason why. Returns true. */
static bool set_status(gm_select_gpu *e, gm_select_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool set_status(gm_select_gpu *e, gm_select_status st, const char *fmt, ...)
{
    e->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
    return true;
}

/* The reasons checked first, for a GPU and for a MIG device (which speaks of "its GPU"). */
static const struct {
    gm_select_status status;
    const char *gpu, *mig;
} early_reasons[] = {
    {GM_SEL_NOT_WANTED, "not in the requested GPU list",
     "its GPU is not in the requested GPU list"},
    {GM_SEL_HIDDEN, "not in CUDA_VISIBLE_DEVICES", "not in CUDA_VISIBLE_DEVICES"},
    {GM_SEL_LOST, "fell off the bus", "its GPU fell off the bus"},
};

/* Notes e's lease and leaves it out for the first reason of early_reasons that applies: true
 * when one did. g is the GPU (a MIG device's parent when mig). */
static bool classify_early(gm_select_gpu *e, const gm_gpu *g, const gm_select_request *req,
                           bool is_visible, const gm_lease_holder *lh, bool mig)
{
    if (lh && lh->held) {
        e->leased = true;
        e->lease_pid = lh->pid;
    }
    bool applies[] = {!wanted(req, g->index), !is_visible, g->lost};
    for (size_t i = 0; i < sizeof applies / sizeof applies[0]; i++)
        if (applies[i])
            return set_status(e, early_reasons[i].status, "%s",
                              mig ? early_reasons[i].mig : early_reasons[i].gpu);
    return false;
}

/* Leaves e out as leased: who is "leased" or what else holds it. */
static void set_leased(gm_select_gpu *e, const char *who)
{
    if (e->lease_pid)
        set_status(e, GM_SEL_LEASED, "%s by pid %ld", who, (long)e->lease_pid);
    else
        set_status(e, GM_SEL_LEASED, "%s by another gpumon process", who);
}

static void classify(gm_select_gpu *e, const gm_gpu *g, const gm_select_request *req,
                     bool is_visible, const gm_lease_holder *lh)
{
    if (classify_early(e, g, req, is_visible, lh, false))
        return;
    bool low = e->free_mib < req->min_free_mib;
    bool busy = req->has_max_util && e->util_pct > req->max_util_pct;
    bool mem = e->has_free && e->has_total, util = e->has_util;
    if (lh && lh->held && lh->indirect && !req->ignore_leases) {
        /* In MIG mode a GPU is handed out whole only while none of its instances is taken. */
        if (lh->pid)
            set_status(e, GM_SEL_LEASED, "a MIG device of it is leased by pid %ld", (long)lh->pid);
        else
            set_status(e, GM_SEL_LEASED, "a MIG device of it is leased");
    } else if (e->busy_pid)
        set_status(e, GM_SEL_BUSY, "process %u runs in a MIG device of it", (unsigned)e->busy_pid);
    else if (!e->has_score)
        set_status(e, GM_SEL_UNSCORABLE, "%s",
                   !mem && !util ? "memory and utilization not reported"
                   : !mem        ? "memory not reported"
                   : !util       ? "utilization not reported"
                                 : "total memory reported as 0");
    else if (e->leased && !req->ignore_leases)
        set_leased(e, "leased");
    else if (low && busy)
        set_status(e, GM_SEL_LOW_MEMORY, "needs >= %.0f MiB free and <= %g%% util",
                   req->min_free_mib, req->max_util_pct);
    else if (low)
        set_status(e, GM_SEL_LOW_MEMORY, "needs >= %.0f MiB free", req->min_free_mib);
    else if (busy)
        set_status(e, GM_SEL_BUSY, "needs <= %g%% util", req->max_util_pct);
    else
        e->status = GM_SEL_AVAILABLE;
}

/* A process running in MIG device m of g (0: none listed). */
static uint32_t mig_process(const gm_snapshot *s, const gm_gpu *g, const gm_mig_device *m)
{
    for (size_t i = 0; i < s->proc_count; i++) {
        const gm_process *p = &s->procs[i];
        if (p->gpu_index == g->index && gm_gpu_process_mig(g, p) == m)
            return p->pid;
    }
    return 0;
}

/* Any process in a MIG device of g. */
static uint32_t gpu_mig_process(const gm_snapshot *s, const gm_gpu *g)
{
    for (unsigned k = 0; k < g->mig_count && k < GM_MAX_MIG; k++) {
        uint32_t pid = mig_process(s, g, &g->mig[k]);
        if (pid)
            return pid;
    }
    return 0;
}

static void classify_mig(gm_select_gpu *e, const gm_gpu *g, const gm_mig_device *m,
                         const gm_select_request *req, bool is_visible, const gm_lease_holder *lh)
{
    if (classify_early(e, g, req, is_visible, lh, true))
        return;
    double used = m->mem_valid && m->mem_total_bytes
                      ? (double)m->mem_used_bytes / (double)m->mem_total_bytes
                      : 0;
    if (!e->has_score)
        set_status(e, GM_SEL_UNSCORABLE, "%s",
                   m->mem_valid ? "total memory reported as 0" : "memory not reported");
    else if (e->leased && !req->ignore_leases)
        set_leased(e, lh->indirect ? "its GPU is leased whole" : "leased");
    else if (e->busy_pid)
        set_status(e, GM_SEL_BUSY, "process %u runs in it", (unsigned)e->busy_pid);
    else if (used > GM_SELECT_MIG_MAX_USED)
        set_status(e, GM_SEL_BUSY, "%.0f MiB of %.0f MiB used with no process listed",
                   floor((double)m->mem_used_bytes / (double)GM_BYTES_PER_MIB),
                   floor(e->total_mib));
    else if (e->free_mib < req->min_free_mib)
        set_status(e, GM_SEL_LOW_MEMORY, "needs >= %.0f MiB free", req->min_free_mib);
    else if (req->has_max_util && e->has_util && e->util_pct > req->max_util_pct)
        set_status(e, GM_SEL_BUSY, "needs <= %g%% SM activity", req->max_util_pct);
    else
        e->status = GM_SEL_AVAILABLE;
}

/* The MIG devices of s as units, numbered as gm_lease_mig_at() numbers them. */
static unsigned fill_mig(const gm_snapshot *s, const gm_select_request *req,
                         const gm_lease_holder *leases, gm_select_result *out)
{
    bool visible[GM_MAX_GPUS];
    gm_select_visible(req->visible, s, visible);
    unsigned n = gm_lease_mig_count(s);
    for (unsigned k = 0; k < n; k++) {
        const gm_gpu *g = NULL;
        const gm_mig_device *m = gm_lease_mig_at(s, k, &g);
        gm_select_gpu *e = &out->gpus[k];
        e->index = k;
        e->mig = true;
        e->gpu_index = g->index;
        snprintf(e->name, sizeof e->name, "%s", g->name);
        snprintf(e->uuid, sizeof e->uuid, "%s", m->uuid);
        snprintf(e->vendor, sizeof e->vendor, "%s", g->vendor);
        snprintf(e->profile, sizeof e->profile, "%s", m->profile);
        e->gpu_instance_id = m->gpu_instance_id;
        e->compute_instance_id = m->compute_instance_id;
        if (!g->lost && m->mem_valid) {
            e->has_free = e->has_total = true;
            e->free_mib = (double)m->mem_free_bytes / (double)GM_BYTES_PER_MIB;
            e->total_mib = (double)m->mem_total_bytes / (double)GM_BYTES_PER_MIB;
        }
        if (!g->lost && (m->prof_valid & (1u << GM_MIG_PROF_SM_ACTIVE))) {
            e->has_util = true;
            e->util_pct = m->prof_pct[GM_MIG_PROF_SM_ACTIVE];
        }
        e->busy_pid = mig_process(s, g, m);
        e->has_score = !g->lost && gm_select_score_mig(m, e->busy_pid != 0, &e->score);
        size_t gi = (size_t)(g - s->gpus);
        classify_mig(e, g, m, req, mig_visible(req->visible, m->uuid, visible[gi]),
                     leases ? &leases[k] : NULL);
        if (e->status == GM_SEL_AVAILABLE)
            out->n_eligible++;
    }
    return n;
}

int gm_select(const gm_snapshot *s, const gm_select_request *req, const gm_lease_holder *leases,
              gm_select_result *out, gm_error *err)
{
    if (!s || !req || !out)
        return gm_error_set(err, GM_EINVAL, "gm_select: NULL argument");
    if (req->count < 1 || req->count > GM_MAX_GPUS)
        return gm_error_set(err, GM_EINVAL, "GPU count must be from 1 to %d, got %u", GM_MAX_GPUS,
                            req->count);
    if (!(req->min_free_mib >= 0) || !isfinite(req->min_free_mib))
        return gm_error_set(err, GM_EINVAL, "minimum free memory must be >= 0 MiB");
    if (req->has_max_util && (!(req->max_util_pct >= 0) || !isfinite(req->max_util_pct)))
        return gm_error_set(err, GM_EINVAL, "maximum utilization must be >= 0%%");
    if (req->n_only && !req->only)
        return gm_error_set(err, GM_EINVAL, "gm_select: n_only without only");

    memset(out, 0, sizeof *out);
    out->req = *req;
    out->req.only = NULL;
    out->req.visible = NULL;
    out->visible_set = req->visible != NULL;
    if (req->visible)
        snprintf(out->visible, sizeof out->visible, "%s", req->visible);
    out->time_ms = s->time_ms;
    snprintf(out->provider, sizeof out->provider, "%s", s->provider);

    if (req->mig) {
        if (gm_lease_mig_count(s) == 0)
            return gm_error_set(err, GM_ENODEV,
                                "no GPU is in MIG mode (--mig hands out MIG "
                                "devices)");
        out->n_gpus = fill_mig(s, req, leases, out);
        goto rank;
    }
    bool visible[GM_MAX_GPUS];
    unsigned n = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    gm_select_visible(req->visible, s, visible);
    for (unsigned i = 0; i < n; i++) {
        const gm_gpu *g = &s->gpus[i];
        gm_select_gpu *e = &out->gpus[i];
        e->index = g->index;
        snprintf(e->name, sizeof e->name, "%s", g->name);
        snprintf(e->uuid, sizeof e->uuid, "%s", g->uuid);
        snprintf(e->vendor, sizeof e->vendor, "%s", g->vendor);
        for (unsigned k = 0; k < i; k++)
            e->vendor_index += strcmp(s->gpus[k].vendor, g->vendor) == 0;
        if (!g->lost) {
            e->has_free = gm_gpu_has(g, GM_M_MEM_FREE_BYTES);
            e->has_total = gm_gpu_has(g, GM_M_MEM_TOTAL_BYTES);
            e->has_util = gm_gpu_has(g, GM_M_UTIL_GPU_PCT);
            e->free_mib = e->has_free ? g->v[GM_M_MEM_FREE_BYTES] / (double)GM_BYTES_PER_MIB : 0;
            e->total_mib = e->has_total ? g->v[GM_M_MEM_TOTAL_BYTES] / (double)GM_BYTES_PER_MIB : 0;
            e->util_pct = e->has_util ? g->v[GM_M_UTIL_GPU_PCT] : 0;
        }
        e->has_score = gm_select_score(g, &e->score);
        if (!g->lost)
            e->busy_pid = gpu_mig_process(s, g);
        classify(e, g, req, visible[i], leases ? &leases[i] : NULL);
        if (e->status == GM_SEL_AVAILABLE)
            out->n_eligible++;
    }
    out->n_gpus = n;
rank:
    qsort(out->gpus, out->n_gpus, sizeof out->gpus[0], rank_cmp);
    if (out->n_eligible >= req->count) {
        out->satisfied = true;
        out->n_selected = req->count;
        for (unsigned i = 0; i < req->count; i++) {
            out->gpus[i].status = GM_SEL_SELECTED;
            out->selected[i] = out->gpus[i].index;
        }
        qsort(out->selected, out->n_selected, sizeof out->selected[0], uint_cmp);
    }
    return GM_OK;
}

size_t gm_select_candidates(const gm_select_result *r, unsigned *out, size_t cap)
{
    size_t n = 0;
    for (unsigned i = 0; i < r->n_gpus; i++) {
        gm_select_status st = r->gpus[i].status;
        if (st != GM_SEL_SELECTED && st != GM_SEL_AVAILABLE)
            continue;
        if (n < cap)
            out[n] = r->gpus[i].index;
        n++;
    }
    return n;
}

/* The entry of unit index in r (NULL when none). */
static const gm_select_gpu *entry_of(const gm_select_result *r, unsigned index)
{
    for (unsigned k = 0; k < r->n_gpus; k++)
        if (r->gpus[k].index == index)
            return &r->gpus[k];
    return NULL;
}

void gm_select_format_list(const gm_select_result *r, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (unsigned i = 0; i < r->n_selected; i++) {
        const gm_select_gpu *e = entry_of(r, r->selected[i]);
        int n = e && e->mig
                    ? snprintf(buf + used, len - used, "%s%s", i ? "," : "", e->uuid)
                    : snprintf(buf + used, len - used, "%s%u", i ? "," : "", r->selected[i]);
        if (n < 0 || used + (size_t)n >= len)
            return;
        used += (size_t)n;
    }
}

static bool is_amd(const gm_select_gpu *e)
{
    return strcmp(e->vendor, "AMD") == 0;
}

void gm_select_format_env(const gm_select_result *r, gm_select_env *out)
{
    memset(out, 0, sizeof *out);
    size_t cu = 0, am = 0;
    for (unsigned i = 0; i < r->n_selected; i++)
        for (unsigned k = 0; k < r->n_gpus; k++) {
            const gm_select_gpu *e = &r->gpus[k];
            if (e->index != r->selected[i])
                continue;
            char *buf = is_amd(e) ? out->amd : out->cuda;
            size_t *used = is_amd(e) ? &am : &cu, cap = sizeof out->cuda;
            unsigned idx = is_amd(e) ? e->vendor_index : e->index;
            int w = e->mig ? snprintf(buf + *used, cap - *used, "%s%s", *used ? "," : "", e->uuid)
                           : snprintf(buf + *used, cap - *used, "%s%u", *used ? "," : "", idx);
            if (w > 0 && *used + (size_t)w < cap)
                *used += (size_t)w;
            if (is_amd(e))
                out->has_amd = true;
            else
                out->has_cuda = true;
        }
}

/* Appends printf output to buf, silently stopping at its end. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t len, size_t *used,
                                                         const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len;
}

/* What a person calls the unit: "GPU 3", or "MIG device 1g.10gb GI 7 on GPU 0". */
static void label(char *buf, size_t len, size_t *used, const gm_select_gpu *e)
{
    if (e->mig)
        append(buf, len, used, "MIG device %s GI %u on GPU %u", e->profile[0] ? e->profile : "?",
               e->gpu_instance_id, e->gpu_index);
    else
        append(buf, len, used, "GPU %u", e->index);
}

static const char *noun(const gm_select_result *r, unsigned n)
{
    return r->req.mig ? (n == 1 ? "MIG device" : "MIG devices") : (n == 1 ? "GPU" : "GPUs");
}

static void describe(char *buf, size_t len, size_t *used, const gm_select_gpu *e)
{
    label(buf, len, used, e);
    if (e->has_free && e->has_util)
        append(buf, len, used, " (%.0f MiB free, %.0f%% util)", floor(e->free_mib), e->util_pct);
    else if (e->has_free)
        append(buf, len, used, " (%.0f MiB free)", floor(e->free_mib));
    else if (e->has_util)
        append(buf, len, used, " (%.0f%% util)", e->util_pct);
}

void gm_select_shortfall(const gm_select_result *r, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    const gm_select_request *q = &r->req;
    unsigned have = r->satisfied ? r->n_selected : r->n_eligible;
    append(buf, len, &used, "%u of %u %s free", have, q->count, noun(r, q->count));
    if (r->satisfied)
        return;
    if (r->n_gpus == 0) {
        append(buf, len, &used, " (no GPU was read)");
        return;
    }
    unsigned named = 0, more = 0;
    for (unsigned i = 0; i < r->n_gpus; i++) {
        const gm_select_gpu *e = &r->gpus[i];
        if (e->status == GM_SEL_AVAILABLE || e->status == GM_SEL_SELECTED ||
            e->status == GM_SEL_HIDDEN || e->status == GM_SEL_NOT_WANTED)
            continue;
        if (named == 4) {
            more++;
            continue;
        }
        append(buf, len, &used, "%s", named++ ? "; " : " (");
        label(buf, len, &used, e);
        append(buf, len, &used, ": ");
        bool low = e->has_free && e->free_mib < q->min_free_mib;
        bool busy = e->has_util && q->has_max_util && e->util_pct > q->max_util_pct;
        if ((e->status == GM_SEL_LOW_MEMORY || e->status == GM_SEL_BUSY) && (low || busy)) {
            if (low)
                append(buf, len, &used, "%.0f MiB free < %.0f MiB", floor(e->free_mib),
                       q->min_free_mib);
            if (busy)
                append(buf, len, &used, "%s%.0f%% util > %g%%", low ? ", " : "", e->util_pct,
                       q->max_util_pct);
        } else {
            append(buf, len, &used, "%s", e->reason);
        }
    }
    if (more)
        append(buf, len, &used, "; +%u more", more);
    if (named)
        append(buf, len, &used, ")");
}

void gm_select_explain(const gm_select_result *r, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    if (r->satisfied) {
        append(buf, len, &used, "selected");
        for (unsigned i = 0; i < r->n_gpus; i++)
            if (r->gpus[i].status == GM_SEL_SELECTED) {
                append(buf, len, &used, "%s ", i ? "," : "");
                label(buf, len, &used, &r->gpus[i]);
                append(buf, len, &used, " (score %.3f)", r->gpus[i].score);
            }
        return;
    }
    const gm_select_request *q = &r->req;
    append(buf, len, &used, "need %u %s", q->count, noun(r, q->count));
    if (q->min_free_mib > 0)
        append(buf, len, &used, " with >= %.0f MiB free", q->min_free_mib);
    if (q->has_max_util)
        append(buf, len, &used, "%s <= %g%% util", q->min_free_mib > 0 ? " and" : " with",
               q->max_util_pct);
    if (r->n_gpus == 0) {
        append(buf, len, &used, "; no %s was read", noun(r, 1));
        return;
    }
    if (r->n_eligible == 0) {
        append(buf, len, &used, "; none qualifies");
    } else {
        append(buf, len, &used, "; %u qualif%s (", r->n_eligible, r->n_eligible == 1 ? "ies" : "y");
        unsigned k = 0;
        for (unsigned i = 0; i < r->n_gpus; i++)
            if (r->gpus[i].status == GM_SEL_AVAILABLE) {
                append(buf, len, &used, "%s", k++ ? ", " : "");
                label(buf, len, &used, &r->gpus[i]);
            }
        append(buf, len, &used, ")");
    }
    /* The GPUs that could have counted, best first, with why they did not. GPUs the caller
     * ruled out itself (-i, CUDA_VISIBLE_DEVICES) are only counted. */
    const gm_select_gpu *rest[GM_MAX_GPUS];
    unsigned nr = 0, ruled_out = 0;
    for (unsigned i = 0; i < r->n_gpus; i++) {
        gm_select_status st = r->gpus[i].status;
        if (st == GM_SEL_HIDDEN || st == GM_SEL_NOT_WANTED)
            ruled_out++;
        else if (st != GM_SEL_AVAILABLE && st != GM_SEL_SELECTED)
            rest[nr++] = &r->gpus[i];
    }
    for (unsigned i = 1; i < nr; i++) { /* insertion sort: scored first, by score */
        const gm_select_gpu *t = rest[i];
        unsigned j = i;
        while (j > 0 && t->has_score &&
               (!rest[j - 1]->has_score || rest[j - 1]->score < t->score)) {
            rest[j] = rest[j - 1];
            j--;
        }
        rest[j] = t;
    }
    if (nr)
        append(buf, len, &used, "; best of the rest: ");
    for (unsigned i = 0; i < nr; i++) {
        if (i)
            append(buf, len, &used, "; ");
        describe(buf, len, &used, rest[i]);
        append(buf, len, &used, ": %s", rest[i]->reason);
    }
    if (ruled_out)
        append(buf, len, &used, "; %u %s not considered (%s)", ruled_out, noun(r, ruled_out),
               r->visible_set ? "-i list or CUDA_VISIBLE_DEVICES" : "-i list");
}

static json_t *num_or_null(bool has, double v)
{
    if (!has)
        return json_null();
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

json_t *gm_select_result_json(const gm_select_result *r)
{
    char list[GM_MAX_GPUS * 4 + 1], why[2048], when[32];
    gm_select_format_list(r, list, sizeof list);
    gm_select_explain(r, why, sizeof why);
    gm_json_time(r->time_ms, when, sizeof when);
    json_t *indices = json_array(), *uuids = json_array(), *gpus = json_array();
    for (unsigned i = 0; i < r->n_selected; i++) {
        json_array_append_new(indices, json_integer(r->selected[i]));
        for (unsigned k = 0; k < r->n_gpus; k++)
            if (r->gpus[k].index == r->selected[i])
                json_array_append_new(uuids, r->gpus[k].uuid[0] ? json_string(r->gpus[k].uuid)
                                                                : json_null());
    }
    for (unsigned i = 0; i < r->n_gpus; i++) {
        const gm_select_gpu *e = &r->gpus[i];
        json_t *o = json_pack(
            "{s:I, s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:b, s:o}", "index",
            (json_int_t)e->index, "name", e->name, "uuid",
            e->uuid[0] ? json_string(e->uuid) : json_null(), "status",
            gm_select_status_name(e->status), "reason",
            e->reason[0] ? json_string(e->reason) : json_null(), "memory_free_mib",
            num_or_null(e->has_free, e->free_mib), "memory_total_mib",
            num_or_null(e->has_total, e->total_mib), "utilization_percent",
            num_or_null(e->has_util, e->util_pct), "availability_score",
            num_or_null(e->has_score, round(e->score * 1e6) / 1e6), "leased", e->leased,
            "leased_by_pid", e->leased && e->lease_pid ? json_integer(e->lease_pid) : json_null());
        if (o && e->mig) {
            json_object_set_new(o, "gpu_index", json_integer(e->gpu_index));
            json_object_set_new(o, "profile",
                                e->profile[0] ? json_string(e->profile) : json_null());
            json_object_set_new(o, "gpu_instance_id", json_integer(e->gpu_instance_id));
            json_object_set_new(o, "compute_instance_id", json_integer(e->compute_instance_id));
            json_object_set_new(o, "busy_pid",
                                e->busy_pid ? json_integer(e->busy_pid) : json_null());
        }
        json_array_append_new(gpus, o);
    }
    gm_select_env env;
    gm_select_format_env(r, &env);
    json_t *vis = json_object();
    if (env.has_cuda)
        json_object_set_new(vis, "CUDA_VISIBLE_DEVICES", json_string(env.cuda));
    if (env.has_amd) {
        json_object_set_new(vis, "ROCR_VISIBLE_DEVICES", json_string(env.amd));
        json_object_set_new(vis, "HIP_VISIBLE_DEVICES", json_string(env.amd));
    }
    return json_pack("{s:b, s:I, s:o, s:o, s:o, s:I, s:o, s:o, s:s, s:o, s:s, s:s, s:s, s:b, s:o,"
                     " s:o, s:b}",
                     "satisfied", r->satisfied, "count", (json_int_t)r->req.count, "min_free_mib",
                     num_or_null(true, r->req.min_free_mib), "max_util_percent",
                     num_or_null(r->req.has_max_util, r->req.max_util_pct), "cuda_visible_devices",
                     r->visible_set ? gm_json_str(r->visible) : json_null(), "eligible",
                     (json_int_t)r->n_eligible, "indices", indices, "uuids", uuids, "selection",
                     list, "reason", r->satisfied ? json_null() : json_string(why), "time", when,
                     "provider", r->provider, "allocation_method", "availability_score",
                     "ignore_leases", r->req.ignore_leases, "gpus", gpus, "visible_devices", vis,
                     "mig", r->req.mig);
}

/* ---- waiting ----------------------------------------------------------------------------- */

/* Makes the leased GPUs the selected ones (the lease may have skipped a GPU someone took after
 * our check) and re-ranks. */
static void adopt_lease(gm_select_result *r, const gm_lease *l)
{
    unsigned held[GM_MAX_GPUS];
    size_t n = gm_lease_indices(l, held, GM_MAX_GPUS);
    for (unsigned i = 0; i < r->n_gpus; i++) {
        gm_select_gpu *e = &r->gpus[i];
        if (e->status != GM_SEL_SELECTED && e->status != GM_SEL_AVAILABLE)
            continue;
        e->status = GM_SEL_AVAILABLE;
        for (size_t k = 0; k < n; k++)
            if (held[k] == e->index)
                e->status = GM_SEL_SELECTED;
    }
    qsort(r->gpus, r->n_gpus, sizeof r->gpus[0], rank_cmp);
    r->n_selected = (unsigned)n;
    memcpy(r->selected, held, n * sizeof held[0]);
    r->satisfied = true;
}

static void unsatisfy(gm_select_result *r)
{
    for (unsigned i = 0; i < r->n_gpus; i++)
        if (r->gpus[i].status == GM_SEL_SELECTED)
            r->gpus[i].status = GM_SEL_AVAILABLE;
    r->satisfied = false;
    r->n_selected = 0;
}

int gm_wait_for(gm_collector *c, const gm_select_request *req, const gm_wait_options *opt,
                gm_snapshot *snap, gm_select_result *out, gm_lease **lease_out, gm_error *err)
{
    if (!c || !req || !opt || !snap || !out)
        return gm_error_set(err, GM_EINVAL, "gm_wait_for: NULL argument");
    if (!(opt->timeout_s >= 0) || !isfinite(opt->timeout_s))
        return gm_error_set(err, GM_EINVAL, "timeout must be a number of seconds >= 0");
    if (!(opt->interval_s > 0) || !isfinite(opt->interval_s))
        return gm_error_set(err, GM_EINVAL, "interval must be a number of seconds > 0");
    bool leasing = opt->take_lease && opt->lease_dir;
    if (opt->take_lease && !lease_out)
        return gm_error_set(err, GM_EINVAL, "gm_wait_for: take_lease without lease_out");
    if (lease_out)
        *lease_out = NULL;

    double start = gm_clock_mono_s(), deadline = start + opt->timeout_s;
    char sample_err[sizeof err->msg] = "", lease_err[sizeof err->msg] = "";
    gm_lease_holder holders[GM_MAX_GPUS];
    for (unsigned check = 1;; check++) {
        if (opt->cancel && *opt->cancel)
            return gm_error_set(err, GM_ECANCELED, "cancelled");
        gm_error e = {0};
        sample_err[0] = lease_err[0] = '\0';
        if (gm_collector_sample(c, snap, &e) < 0)
            snprintf(sample_err, sizeof sample_err, "%s", e.msg);
        bool have_leases = opt->lease_dir &&
                           (req->mig ? gm_lease_list_mig(opt->lease_dir, snap, holders, NULL)
                                     : gm_lease_list(opt->lease_dir, snap, holders, NULL)) == GM_OK;
        int rc = gm_select(snap, req, have_leases ? holders : NULL, out, err);
        if (rc < 0)
            return rc;
        /* Fewer GPUs than asked for that could ever qualify (hidden, not requested or fallen
         * off the bus stay so): waiting cannot help, so say so now rather than at the timeout. */
        unsigned possible = 0;
        for (unsigned i = 0; i < out->n_gpus; i++) {
            gm_select_status st = out->gpus[i].status;
            possible += st != GM_SEL_HIDDEN && st != GM_SEL_NOT_WANTED && st != GM_SEL_LOST;
        }
        if (!sample_err[0] && possible < req->count && possible == out->n_gpus)
            return gm_error_set(err, GM_ENODEV,
                                "%u %s asked for, but there %s only %u here; waiting cannot "
                                "change that",
                                req->count, noun(out, 2), possible == 1 ? "is" : "are", possible);
        if (!sample_err[0] && possible < req->count)
            return gm_error_set(err, GM_ENODEV,
                                "%u %s asked for, but only %u of the %u here may be chosen "
                                "(the others are outside -i/CUDA_VISIBLE_DEVICES or lost); "
                                "waiting cannot change that",
                                req->count, noun(out, req->count), possible, out->n_gpus);
        if (out->satisfied && leasing) {
            unsigned cand[GM_MAX_GPUS];
            size_t nc = gm_select_candidates(out, cand, GM_MAX_GPUS);
            gm_lease *l = NULL;
            rc = req->mig ? gm_lease_acquire_mig(opt->lease_dir, snap, cand, nc, req->count, &l, &e)
                          : gm_lease_acquire(opt->lease_dir, snap, cand, nc, req->count, &l, &e);
            if (rc == GM_OK) {
                adopt_lease(out, l);
                *lease_out = l;
            } else if (rc == GM_EBUSY) {
                /* Another process leased some between our listing and our lease: go on. */
                unsatisfy(out);
                snprintf(lease_err, sizeof lease_err, "%s", e.msg);
            } else {
                return gm_error_set(err, rc, "%s", e.msg);
            }
        }
        if (opt->progress)
            opt->progress(out, check, opt->progress_ud);
        if (out->satisfied)
            return GM_OK;
        double now = gm_clock_mono_s();
        if (now >= deadline)
            break;
        double next = start + check * opt->interval_s;
        if (next > deadline)
            next = deadline;
        if (!gm_clock_sleep_until(next, opt->cancel))
            return gm_error_set(err, GM_ECANCELED, "cancelled");
    }
    char why[sizeof err->msg];
    gm_select_explain(out, why, sizeof why);
    return gm_error_set(err, GM_ETIMEDOUT, "timed out after %gs: %s%s%s%s%s", opt->timeout_s, why,
                        sample_err[0] ? "; last reading failed: " : "", sample_err,
                        lease_err[0] ? "; " : "", lease_err);
}
