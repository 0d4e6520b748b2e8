/* bench_schedule.h - open-loop arrival times for `gpumon bench --request-rate`: a seeded
 * generator (xoshiro256**, seeded through splitmix64) and inter-arrival gaps drawn from a gamma
 * distribution with shape = burstiness and mean 1 / rate, as vLLM's benchmark draws them:
 * burstiness 1 is a Poisson process (exponential gaps), below 1 burstier, above 1 more regular.
 * A rate of INFINITY sends every request at once.
 *
 * Times are offsets in seconds from the point's start, each the sum of the gaps before it, so a
 * client that sends a request late never delays the ones after it (lateness does not
 * accumulate: it is measured, as schedule lag). The same seed gives the same schedule. */
#ifndef GM_BENCH_SCHEDULE_H
#define GM_BENCH_SCHEDULE_H

#include <stdint.h>

typedef struct gm_bench_rng {
    uint64_t s[4];
} gm_bench_rng;

void gm_bench_rng_seed(gm_bench_rng *r, uint64_t seed);
uint64_t gm_bench_rng_next(gm_bench_rng *r);
/* Uniform in (0, 1): never 0, so a logarithm of it is finite. */
double gm_bench_rng_uniform(gm_bench_rng *r);
/* Standard normal (Marsaglia's polar method). */
double gm_bench_rng_normal(gm_bench_rng *r);
/* Gamma with shape k > 0 and scale theta > 0 (Marsaglia and Tsang; shape < 1 by boosting). */
double gm_bench_rng_gamma(gm_bench_rng *r, double k, double theta);

typedef struct gm_bench_schedule {
    gm_bench_rng rng;
    double rate;       /* requests per second, > 0, or INFINITY */
    double burstiness; /* gamma shape, > 0 */
    double t;          /* offset of the latest arrival */
    uint64_t n;        /* arrivals drawn */
} gm_bench_schedule;

/* rate > 0 (INFINITY allowed), burstiness > 0. */
void gm_bench_schedule_init(gm_bench_schedule *s, double rate, double burstiness, uint64_t seed);
/* The offset (seconds from the start) of the next arrival. The first request goes at 0, like
 * vLLM's benchmark (whose first gap comes after the first request). */
double gm_bench_schedule_next(gm_bench_schedule *s);

#endif
