/* ring.c - fixed-memory ring buffers of every GPU and host metric, one writer, many readers. */
#include "server/ring.h"
#include "base/error.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Values live series-major (one contiguous ring per series) so a query reads one run of memory;
 * series g * kept + column(m) is GPU g's metric m, series gpu_count * kept + h is host metric h,
 * kept being the number of GPU metrics the rings keep (see kept_column). */
struct gm_ring {
    pthread_rwlock_t lock;
    unsigned gpu_count;
    size_t slots;
    size_t series; /* value rings */
    size_t head;   /* physical slot the next sample goes to */
    size_t len;    /* samples held */
    int64_t *t;    /* slots sample times, ms since the epoch */
    float *v;      /* series * slots values, NaN when absent */
    size_t bytes;
};

/* gm_host_metric has no info table of its own; host values are returned raw in the unit their
 * enum name carries. A metric added later without an entry here gets "". */
static const char *const host_units[GM_H__COUNT] = {
    [GM_H_CPU_UTIL_PCT] = "%",
    [GM_H_CPU_COUNT] = "",
    [GM_H_MEM_TOTAL_BYTES] = "B",
    [GM_H_MEM_USED_BYTES] = "B",
    [GM_H_MEM_AVAILABLE_BYTES] = "B",
    [GM_H_SWAP_TOTAL_BYTES] = "B",
    [GM_H_SWAP_USED_BYTES] = "B",
    [GM_H_LOAD1] = "",
    [GM_H_LOAD5] = "",
    [GM_H_LOAD15] = "",
    [GM_H_UPTIME_S] = "s",
};

/* Largest number of value rings: the per-sample column is built on the stack. */
#define COLUMN_MAX (GM_MAX_GPUS * GM_M__COUNT + GM_H__COUNT)

/* Which GPU metrics have rings: every metric up to persistence_mode (the dashboard reads
 * memory.total for memory %, and a float per slot is cheap), and of the health metrics after it
 * (modes, identifiers, counters that rarely move: a person reads those from the latest sample)
 * only those whose table row says numeric_series. column[m] is m's position among the kept
 * ones, -1 if none. */
static int column[GM_M__COUNT];
static size_t kept;
static pthread_once_t columns_once = PTHREAD_ONCE_INIT;

static void build_columns(void)
{
    for (int m = 0; m < GM_M__COUNT; m++)
        column[m] = m <= GM_M_PERSISTENCE_MODE || gm_metric_get((gm_metric)m)->numeric_series
                        ? (int)kept++
                        : -1;
}

size_t gm_ring_gpu_columns(void)
{
    pthread_once(&columns_once, build_columns);
    return kept;
}

bool gm_ring_keeps(int metric)
{
    pthread_once(&columns_once, build_columns);
    return metric >= 0 && metric < GM_M__COUNT && column[metric] >= 0;
}

int gm_ring_new(unsigned gpu_count, size_t slots, gm_ring **out, gm_error *err)
{
    if (!out)
        return gm_error_set(err, GM_EINVAL, "history: no output pointer");
    *out = NULL;
    if (slots == 0)
        return gm_error_set(err, GM_EINVAL, "history: slots must be at least 1");
    if (gpu_count > GM_MAX_GPUS)
        return gm_error_set(err, GM_EINVAL, "history: %u GPUs requested, at most %d are supported",
                            gpu_count, GM_MAX_GPUS);

    size_t series = (size_t)gpu_count * gm_ring_gpu_columns() + GM_H__COUNT;
    size_t nvalues, vbytes, tbytes, total;
    if (__builtin_mul_overflow(series, slots, &nvalues) ||
        __builtin_mul_overflow(nvalues, sizeof(float), &vbytes) ||
        __builtin_mul_overflow(slots, sizeof(int64_t), &tbytes) ||
        __builtin_add_overflow(vbytes, tbytes, &total) ||
        __builtin_add_overflow(total, sizeof(gm_ring), &total))
        return gm_error_set(err, GM_EINVAL, "history: %zu slots for %u GPUs is too large", slots,
                            gpu_count);

    gm_ring *h = calloc(1, sizeof *h);
    if (!h)
        goto nomem;
    h->t = malloc(tbytes);
    h->v = malloc(vbytes);
    if (!h->t || !h->v)
        goto nomem;

    /* Prefer the writer: a burst of dashboard readers must not delay the sampler. */
    pthread_rwlockattr_t attr;
    if (pthread_rwlockattr_init(&attr) != 0)
        goto nomem;
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int rc = pthread_rwlock_init(&h->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (rc != 0)
        goto nomem;

    h->gpu_count = gpu_count;
    h->slots = slots;
    h->series = series;
    h->bytes = total;
    *out = h;
    return GM_OK;

nomem:
    if (h) {
        free(h->t);
        free(h->v);
        free(h);
    }
    return gm_error_set(err, GM_ENOMEM, "history: cannot allocate %zu bytes for %zu slots", total,
                        slots);
}

void gm_ring_free(gm_ring *h)
{
    if (!h)
        return;
    pthread_rwlock_destroy(&h->lock);
    free(h->t);
    free(h->v);
    free(h);
}

/* Float of a present value; NaN for values a float cannot hold (no sensor reports those, and
 * converting them would be undefined behaviour). */
static float to_float(double x)
{
    if (!isfinite(x) || fabs(x) > FLT_MAX)
        return NAN;
    return (float)x;
}

/* Physical slot of logical position i (0 = oldest held). Caller holds the lock. */
static size_t phys(const gm_ring *h, size_t i)
{
    return (h->head + h->slots - h->len + i) % h->slots;
}

void gm_ring_append(gm_ring *h, const gm_snapshot *s)
{
    if (!h || !s)
        return;

    /* Build the sample's column before locking so the critical section is only the stores. */
    float col[COLUMN_MAX];
    size_t ngpu = (size_t)h->gpu_count * kept;
    for (size_t k = 0; k < h->series; k++)
        col[k] = NAN;
    unsigned gcount = s->gpu_count < GM_MAX_GPUS ? s->gpu_count : GM_MAX_GPUS;
    for (unsigned i = 0; i < gcount; i++) {
        const gm_gpu *g = &s->gpus[i];
        if (g->index >= h->gpu_count || g->lost)
            continue;
        float *dst = &col[(size_t)g->index * kept];
        for (int m = 0; m < GM_M__COUNT; m++)
            if (column[m] >= 0 && gm_gpu_has(g, (gm_metric)m))
                dst[column[m]] = to_float(g->v[m]);
    }
    if (s->host_valid)
        for (int m = 0; m < GM_H__COUNT; m++)
            if (gm_host_has(&s->host, (gm_host_metric)m))
                col[ngpu + m] = to_float(s->host.v[m]);

    pthread_rwlock_wrlock(&h->lock);
    /* The wall clock stepped back: samples now in the future would break time ordering. */
    while (h->len > 0 && h->t[phys(h, h->len - 1)] > s->time_ms) {
        h->len--;
        h->head = (h->head + h->slots - 1) % h->slots;
    }
    size_t slot = h->head;
    h->t[slot] = s->time_ms;
    for (size_t k = 0; k < h->series; k++)
        h->v[k * h->slots + slot] = col[k];
    h->head = (h->head + 1) % h->slots;
    if (h->len < h->slots)
        h->len++;
    pthread_rwlock_unlock(&h->lock);
}

/* First logical index whose time is >= t (len when none). Caller holds the lock. */
static size_t lower_bound(const gm_ring *h, int64_t t)
{
    size_t lo = 0, hi = h->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->t[phys(h, mid)] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First logical index whose time is > t (len when none). Caller holds the lock. */
static size_t upper_bound(const gm_ring *h, int64_t t)
{
    size_t lo = 0, hi = h->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->t[phys(h, mid)] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Start of the step-aligned bucket holding t (floor division, so negative times work too). */
static int64_t bucket_of(int64_t t, int64_t step)
{
    int64_t q = t / step;
    if (t % step != 0 && t < 0)
        q--;
    return q * step;
}

/* Validates q and fills the series' name, unit and scale. Returns the ring index or < 0. */
static int resolve(const gm_ring *h, const gm_ring_request *q, gm_series *out, size_t *ring,
                   gm_error *err)
{
    if (q->since_ms < 0 || q->until_ms < 0 || q->last_ms < 0 || q->step_ms < 0)
        return gm_error_set(err, GM_EINVAL,
                            "history: since, until, last and step must not be negative");
    if (q->source == GM_RING_GPU) {
        if (q->gpu >= h->gpu_count) {
            if (h->gpu_count == 0)
                return gm_error_set(err, GM_EINVAL, "history: GPU %u is not recorded (no GPUs)",
                                    q->gpu);
            return gm_error_set(err, GM_EINVAL, "history: GPU %u is not recorded (GPUs 0..%u are)",
                                q->gpu, h->gpu_count - 1);
        }
        const gm_metric_info *mi = gm_metric_get((gm_metric)q->metric);
        if (!mi)
            return gm_error_set(err, GM_EINVAL, "history: unknown GPU metric id %d", q->metric);
        if (!gm_ring_keeps(q->metric))
            return gm_error_set(err, GM_EINVAL,
                                "history: %s is not kept in history (read it from the latest "
                                "sample)",
                                mi->name);
        out->name = mi->name;
        out->unit = mi->unit;
        out->scale = mi->scale;
        *ring = (size_t)q->gpu * kept + (size_t)column[q->metric];
        return GM_OK;
    }
    if (q->source == GM_RING_HOST) {
        const char *name = gm_host_metric_name((gm_host_metric)q->metric);
        if (!name)
            return gm_error_set(err, GM_EINVAL, "history: unknown host metric id %d", q->metric);
        out->name = name;
        out->unit = host_units[q->metric] ? host_units[q->metric] : "";
        out->scale = 1;
        *ring = (size_t)h->gpu_count * kept + (size_t)q->metric;
        return GM_OK;
    }
    return gm_error_set(err, GM_EINVAL, "history: unknown source %d", (int)q->source);
}

int gm_ring_query(gm_ring *h, const gm_ring_request *q, gm_series *out, gm_error *err)
{
    if (!h || !q || !out)
        return gm_error_set(err, GM_EINVAL, "history: missing history, query or output");
    memset(out, 0, sizeof *out);
    size_t ring = 0;
    int rc = resolve(h, q, out, &ring, err);
    if (rc < 0)
        return rc;

    /* Every point comes from a distinct held sample, so slots bounds the output: allocate before
     * locking so readers never hold the lock across malloc. */
    size_t cap = h->slots;
    if (q->max_points > 0 && q->max_points < cap)
        cap = q->max_points;
    gm_point *pts = malloc(cap * sizeof *pts);
    if (!pts)
        return gm_error_set(err, GM_ENOMEM, "history: cannot allocate %zu points", cap);

    size_t pos = cap; /* filled backwards, newest first, so a cap keeps the newest points */
    pthread_rwlock_rdlock(&h->lock);
    if (h->len > 0) {
        int64_t oldest = h->t[phys(h, 0)], newest = h->t[phys(h, h->len - 1)];
        out->held_from_ms = oldest;
        out->held_to_ms = newest;

        bool bounded = false;
        int64_t lo = INT64_MIN;
        if (q->since_ms > 0) {
            lo = q->since_ms;
            bounded = true;
        }
        if (q->last_ms > 0) {
            int64_t from = newest < INT64_MIN + q->last_ms ? INT64_MIN : newest - q->last_ms;
            if (!bounded || from > lo)
                lo = from;
            bounded = true;
        }
        int64_t hi = q->until_ms > 0 ? q->until_ms : INT64_MAX;
        out->clamped = bounded && lo < oldest;

        size_t first = lower_bound(h, lo), end = upper_bound(h, hi);
        const float *vals = &h->v[ring * h->slots];
        if (q->step_ms == 0) {
            for (size_t i = end; i > first; i--) {
                if (pos == 0) {
                    out->truncated = true;
                    break;
                }
                size_t p = phys(h, i - 1);
                float f = vals[p];
                pts[--pos] =
                    (gm_point){h->t[p], isnan(f) ? NAN : (double)f * out->scale, !isnan(f)};
            }
        } else {
            int64_t key = 0;
            double sum = 0;
            size_t n = 0;
            bool open = false;
            for (size_t i = end; i > first; i--) {
                size_t p = phys(h, i - 1);
                int64_t k = bucket_of(h->t[p], q->step_ms);
                if (open && k != key) {
                    if (pos == 0) {
                        out->truncated = true;
                        open = false;
                        break;
                    }
                    pts[--pos] = (gm_point){key, n ? sum / (double)n * out->scale : NAN, n > 0};
                    open = false;
                }
                if (!open) {
                    key = k;
                    sum = 0;
                    n = 0;
                    open = true;
                }
                float f = vals[p];
                if (!isnan(f)) {
                    sum += f;
                    n++;
                }
            }
            if (open) {
                if (pos == 0)
                    out->truncated = true;
                else
                    pts[--pos] = (gm_point){key, n ? sum / (double)n * out->scale : NAN, n > 0};
            }
        }
    }
    pthread_rwlock_unlock(&h->lock);

    out->count = cap - pos;
    memmove(pts, pts + pos, out->count * sizeof *pts);
    out->points = pts;
    return GM_OK;
}

void gm_series_free(gm_series *out)
{
    if (!out)
        return;
    free(out->points);
    memset(out, 0, sizeof *out);
}

size_t gm_ring_len(gm_ring *h)
{
    pthread_rwlock_rdlock(&h->lock);
    size_t n = h->len;
    pthread_rwlock_unlock(&h->lock);
    return n;
}

size_t gm_ring_slots(const gm_ring *h)
{
    return h->slots;
}

unsigned gm_ring_gpu_count(const gm_ring *h)
{
    return h->gpu_count;
}

int64_t gm_ring_newest_ms(gm_ring *h)
{
    pthread_rwlock_rdlock(&h->lock);
    int64_t t = h->len ? h->t[phys(h, h->len - 1)] : 0;
    pthread_rwlock_unlock(&h->lock);
    return t;
}

int64_t gm_ring_oldest_ms(gm_ring *h)
{
    pthread_rwlock_rdlock(&h->lock);
    int64_t t = h->len ? h->t[phys(h, 0)] : 0;
    pthread_rwlock_unlock(&h->lock);
    return t;
}

size_t gm_ring_memory_bytes(const gm_ring *h)
{
    return h->bytes;
}
