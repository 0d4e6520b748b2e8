/* clock.c - clock_gettime and nanosleep, once. */
#include "base/clock.h"

#include <time.h>

static struct timespec now(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts;
}

int64_t gm_clock_mono_ms(void)
{
    struct timespec ts = now(CLOCK_MONOTONIC);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gm_clock_mono_us(void)
{
    struct timespec ts = now(CLOCK_MONOTONIC);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t gm_clock_mono_ns(void)
{
    struct timespec ts = now(CLOCK_MONOTONIC);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double gm_clock_mono_s(void)
{
    struct timespec ts = now(CLOCK_MONOTONIC);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t gm_clock_wall_ms(void)
{
    struct timespec ts = now(CLOCK_REALTIME);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gm_clock_ts_add_ms(struct timespec *t, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    t->tv_sec += (time_t)(ms / 1000);
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

struct timespec gm_clock_mono_deadline(int64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    gm_clock_ts_add_ms(&t, ms);
    return t;
}

void gm_clock_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool gm_clock_sleep_until(double until_s, const volatile sig_atomic_t *cancel)
{
    for (;;) {
        if (cancel && *cancel)
            return false;
        double left = until_s - gm_clock_mono_s();
        if (left <= 0)
            return true;
        if (left > 0.05)
            left = 0.05;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}
