/* bench_schedule.c - seeded arrival times (see bench_schedule.h). */
#include "core/bench_schedule.h"

#include <math.h>

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void gm_bench_rng_seed(gm_bench_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t gm_bench_rng_next(gm_bench_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double gm_bench_rng_uniform(gm_bench_rng *r)
{
    /* 53 random bits, shifted by half a step: strictly inside (0, 1). */
    return ((double)(gm_bench_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double gm_bench_rng_normal(gm_bench_rng *r)
{
    for (;;) {
        double u = 2 * gm_bench_rng_uniform(r) - 1, v = 2 * gm_bench_rng_uniform(r) - 1;
        double s = u * u + v * v;
        if (s > 0 && s < 1)
            return u * sqrt(-2 * log(s) / s);
    }
}

double gm_bench_rng_gamma(gm_bench_rng *r, double k, double theta)
{
    if (k < 1) {
        /* Gamma(k) = Gamma(k + 1) * U^(1/k). */
        double u = gm_bench_rng_uniform(r);
        return gm_bench_rng_gamma(r, k + 1, theta) * pow(u, 1 / k);
    }
    double d = k - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = gm_bench_rng_normal(r), v = 1 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = gm_bench_rng_uniform(r);
        if (u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v)))
            return d * v * theta;
    }
}

void gm_bench_schedule_init(gm_bench_schedule *s, double rate, double burstiness, uint64_t seed)
{
    gm_bench_rng_seed(&s->rng, seed);
    s->rate = rate;
    s->burstiness = burstiness > 0 ? burstiness : 1;
    s->t = 0;
    s->n = 0;
}

double gm_bench_schedule_next(gm_bench_schedule *s)
{
    if (s->n++ == 0 || isinf(s->rate))
        return s->t;
    /* Mean gap 1 / rate: shape k, scale 1 / (rate * k). */
    s->t += gm_bench_rng_gamma(&s->rng, s->burstiness, 1.0 / (s->rate * s->burstiness));
    return s->t;
}
