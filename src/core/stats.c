/* stats.c - Welford accumulators and numpy-compatible linear percentiles for metric series. */
#include "core/stats.h"
#include "base/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void gm_stats_init(gm_stats *s)
{
    memset(s, 0, sizeof *s);
    s->min = NAN;
    s->max = NAN;
    s->mean = NAN;
}

void gm_stats_add(gm_stats *s, double x)
{
    if (!isfinite(x)) {
        s->missing++;
        return;
    }
    if (s->count == 0) {
        s->count = 1;
        s->min = s->max = s->mean = s->sum = x;
        s->m2 = 0;
        return;
    }
    s->count++;
    if (x < s->min)
        s->min = x;
    if (x > s->max)
        s->max = x;
    s->sum += x;
    /* Welford: update the mean by the deviation, never by the raw sum, so 1e9 + x keeps the
     * small digits that sum / count would round away. */
    double delta = x - s->mean;
    s->mean += delta / (double)s->count;
    s->m2 += delta * (x - s->mean);
}

void gm_stats_merge(gm_stats *a, const gm_stats *b)
{
    a->missing += b->missing;
    if (b->count == 0)
        return;
    if (a->count == 0) {
        size_t missing = a->missing;
        *a = *b;
        a->missing = missing;
        return;
    }
    double na = (double)a->count, nb = (double)b->count, n = na + nb;
    double delta = b->mean - a->mean;
    a->mean += delta * nb / n;
    a->m2 += b->m2 + delta * delta * na * nb / n;
    a->sum += b->sum;
    a->count += b->count;
    if (b->min < a->min)
        a->min = b->min;
    if (b->max > a->max)
        a->max = b->max;
}

double gm_stats_variance(const gm_stats *s)
{
    if (s->count == 0)
        return NAN;
    return s->m2 / (double)s->count;
}

double gm_stats_stddev(const gm_stats *s)
{
    return sqrt(gm_stats_variance(s));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

size_t gm_stats_sort(double *v, size_t n)
{
    if (!v)
        return 0;
    /* Compact finite values to the front (stable), then sort only those: a comparator cannot
     * order NaN consistently. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(v[i])) {
            double x = v[i];
            v[i] = v[k];
            v[k++] = x;
        }
    }
    qsort(v, k, sizeof *v, cmp_double);
    return k;
}

double gm_stats_percentile(const double *sorted, size_t n, double p)
{
    if (!sorted || n == 0 || !(p >= 0 && p <= 100))
        return NAN;
    double h = (double)(n - 1) * p / 100.0;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    double frac = h - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

void gm_values_init(gm_values *vs)
{
    memset(vs, 0, sizeof *vs);
}

int gm_values_add(gm_values *vs, double x, gm_error *err)
{
    if (!isfinite(x))
        return GM_OK;
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? vs->cap * 2 : 256;
        double *nv = cap > SIZE_MAX / sizeof *nv ? NULL : realloc(vs->v, cap * sizeof *nv);
        if (!nv)
            return gm_error_set(err, GM_ENOMEM, "stats: cannot keep %zu values", cap);
        vs->v = nv;
        vs->cap = cap;
    }
    vs->v[vs->n++] = x;
    vs->sorted = false;
    return GM_OK;
}

double gm_values_percentile(gm_values *vs, double p)
{
    if (!vs->sorted) {
        gm_stats_sort(vs->v, vs->n);
        vs->sorted = true;
    }
    return gm_stats_percentile(vs->v, vs->n, p);
}

void gm_values_free(gm_values *vs)
{
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}
