/* clock.h - the one clock: monotonic time for durations, deadlines and rates (never the wall
 * clock, which steps), wall time for timestamps people read, and sleeps that a signal handler
 * can cut short. */
#ifndef GM_CLOCK_H
#define GM_CLOCK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds, microseconds, nanoseconds, seconds. */
int64_t gm_clock_mono_ms(void);
int64_t gm_clock_mono_us(void);
int64_t gm_clock_mono_ns(void);
double gm_clock_mono_s(void);

/* CLOCK_REALTIME in milliseconds since the epoch. */
int64_t gm_clock_wall_ms(void);

/* *t moved ms (>= 0) later, normalised: absolute deadlines for pthread_cond_timedwait (on a
 * CLOCK_MONOTONIC condition) and clock_nanosleep(TIMER_ABSTIME). */
void gm_clock_ts_add_ms(struct timespec *t, int64_t ms);

/* CLOCK_MONOTONIC now, plus ms (>= 0). */
struct timespec gm_clock_mono_deadline(int64_t ms);

/* Sleeps ms milliseconds (nothing for ms <= 0); a signal may end it early. */
void gm_clock_sleep_ms(int64_t ms);

/* Sleeps until the monotonic time until_s (gm_clock_mono_s), in slices of at most 50 ms so that
 * *cancel, set by a signal handler or another thread, is seen promptly. False when cancelled
 * (cancel may be NULL). */
bool gm_clock_sleep_until(double until_s, const volatile sig_atomic_t *cancel);

#endif
