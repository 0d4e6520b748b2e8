/* stats.h - exact summary statistics of a metric series for monitoring sessions: streaming
 * count/min/max/mean/variance (Welford) and percentiles from stored values.
 *
 * Missing values: NaN (and +-Inf, which no sensor reports) are not data; they are counted in
 * `missing` and otherwise ignored, so an absent metric never drags a mean toward zero.
 *
 * Percentiles use linear interpolation between closest ranks, numpy's default "linear" method
 * (Hyndman & Fan type 7): for n sorted values and p in [0, 100], h = (n - 1) * p / 100 and the
 * result is v[floor(h)] + (h - floor(h)) * (v[floor(h) + 1] - v[floor(h)]). So p50 of 1..100 is
 * 50.5 and p95 is 95.05, exactly what numpy.percentile returns. */
#ifndef GM_STATS_H
#define GM_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "gpumon.h"

/* Streaming accumulator, constant memory. Fields are read directly; min, max and mean are NaN
 * while count is 0. */
typedef struct gm_stats {
    size_t count;   /* finite values added */
    size_t missing; /* NaN / infinite values seen and ignored */
    double min;
    double max;
    double sum;
    double mean; /* Welford running mean: stable for large offsets (1e9 + small x) */
    double m2;   /* sum of squared deviations from the mean (Welford) */
} gm_stats;

/* Resets s to no values. */
void gm_stats_init(gm_stats *s);
/* Adds x; a non-finite x only increments s->missing. */
void gm_stats_add(gm_stats *s, double x);
/* Folds b into a, as if every value added to b had been added to a (Chan et al.). */
void gm_stats_merge(gm_stats *a, const gm_stats *b);
/* Population variance (divides by count, numpy's default ddof=0); NaN when count is 0. */
double gm_stats_variance(const gm_stats *s);
/* Square root of gm_stats_variance. */
double gm_stats_stddev(const gm_stats *s);

/* Sorts v ascending in place after moving non-finite values out; returns how many finite values
 * now lead v (the part to pass to gm_stats_percentile). */
size_t gm_stats_sort(double *v, size_t n);
/* The p-th percentile (0 <= p <= 100) of n ascending values by linear interpolation (see the
 * top of this file). NaN when n is 0, sorted is NULL or p is outside [0, 100] or NaN. */
double gm_stats_percentile(const double *sorted, size_t n, double p);

/* A growable store of a series' values for exact percentiles. Zero-initialise (or
 * gm_values_init); memory grows with the values kept (8 bytes each). */
typedef struct gm_values {
    double *v;
    size_t n; /* finite values kept */
    size_t cap;
    bool sorted; /* v[0..n) is ascending (set by gm_values_percentile, cleared by adds) */
} gm_values;

void gm_values_init(gm_values *vs);
/* Keeps x; non-finite x is ignored (GM_OK). Returns GM_ENOMEM when it cannot grow. */
int gm_values_add(gm_values *vs, double x, gm_error *err);
/* The p-th percentile of the values kept (sorting them in place on first use after an add);
 * NaN when none are kept or p is outside [0, 100]. */
double gm_values_percentile(gm_values *vs, double p);
/* Releases the values and zeroes vs. */
void gm_values_free(gm_values *vs);

#endif
