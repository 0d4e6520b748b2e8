/* test_clock.c - base/clock: the monotonic clock never goes back and its three units agree, the
 * wall clock is the epoch's, sleeps last at least what was asked, and gm_clock_sleep_until
 * reaches its deadline or gives up as soon as its cancel flag is set (by another thread or by
 * a signal handler). Nothing here asserts that anything is fast. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "base/clock.h"

static void test_monotonic_never_goes_back(void **state)
{
    (void)state;
    int64_t ms = gm_clock_mono_ms(), us = gm_clock_mono_us();
    double s = gm_clock_mono_s();
    for (int i = 0; i < 100000; i++) {
        int64_t ms2 = gm_clock_mono_ms(), us2 = gm_clock_mono_us();
        double s2 = gm_clock_mono_s();
        if (ms2 < ms || us2 < us || s2 < s)
            fail_msg("went back at call %d: %lld ms after %lld, %lld us after %lld", i,
                     (long long)ms2, (long long)ms, (long long)us2, (long long)us);
        ms = ms2;
        us = us2;
        s = s2;
    }
}

static void test_units_agree(void **state)
{
    (void)state;
    /* Read in order us, ms, s, us: each later reading is at least the earlier one. */
    for (int i = 0; i < 1000; i++) {
        int64_t us1 = gm_clock_mono_us();
        int64_t ms = gm_clock_mono_ms();
        double s = gm_clock_mono_s();
        int64_t us2 = gm_clock_mono_us();
        int64_t ns = gm_clock_mono_ns();
        check_le(us1 / 1000, ms);
        check_le(ms, us2 / 1000);
        check_le(us2, ns / 1000);
        check_le((double)ms / 1000.0, s + 1e-9);
        check_le(s, (double)us2 / 1e6 + 1e-6);
    }
    /* CLOCK_MONOTONIC itself, not another clock. */
    struct timespec ts;
    assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
    int64_t before = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t ms = gm_clock_mono_ms();
    assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
    int64_t after = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    check_le(before, ms);
    check_le(ms, after);
}

static void test_wall_clock_is_the_epoch(void **state)
{
    (void)state;
    /* Against CLOCK_REALTIME itself: time() reads the coarse clock, which may still be in the
     * previous second when the precise one has moved on (it failed so under load). */
    struct timespec a, b;
    assert_int_equal(clock_gettime(CLOCK_REALTIME, &a), 0);
    int64_t w = gm_clock_wall_ms();
    assert_int_equal(clock_gettime(CLOCK_REALTIME, &b), 0);
    check_ge(w, (int64_t)a.tv_sec * 1000 + a.tv_nsec / 1000000);
    check_le(w, (int64_t)b.tv_sec * 1000 + b.tv_nsec / 1000000);
    check_gt(w, (int64_t)1700000000 * 1000); /* the epoch's milliseconds, not some other base */
}

static void test_sleep_lasts_at_least_what_was_asked(void **state)
{
    (void)state;
    static const int64_t asked[] = {1, 20, 1000 + 5}; /* the last crosses a whole second */
    for (size_t i = 0; i < sizeof asked / sizeof *asked; i++) {
        int64_t t0 = gm_clock_mono_us();
        gm_clock_sleep_ms(asked[i]);
        int64_t slept = gm_clock_mono_us() - t0;
        if (slept < asked[i] * 1000)
            fail_msg("asked %lld ms, slept %lld us", (long long)asked[i], (long long)slept);
    }
    /* Nothing to sleep: returns (no assertion on how soon). */
    gm_clock_sleep_ms(0);
    gm_clock_sleep_ms(-1000);
}

static void test_sleep_until_reaches_the_deadline(void **state)
{
    (void)state;
    volatile sig_atomic_t cancel = 0;
    double until = gm_clock_mono_s() + 0.12; /* more than two 50 ms slices */
    assert_true(gm_clock_sleep_until(until, &cancel));
    check_ge(gm_clock_mono_s(), until);
    until = gm_clock_mono_s() + 0.02;
    assert_true(gm_clock_sleep_until(until, NULL)); /* no flag at all */
    check_ge(gm_clock_mono_s(), until);
    /* A deadline already past: true at once. */
    assert_true(gm_clock_sleep_until(gm_clock_mono_s() - 10, &cancel));
    assert_true(gm_clock_sleep_until(0, NULL));
}

static void test_sleep_until_cancelled_before(void **state)
{
    (void)state;
    volatile sig_atomic_t cancel = 1;
    /* A flag already set wins, even over a deadline that has passed. */
    assert_false(gm_clock_sleep_until(gm_clock_mono_s() + 3600, &cancel));
    assert_false(gm_clock_sleep_until(gm_clock_mono_s() - 1, &cancel));
}

/* Another thread sets the flag while gm_clock_sleep_until waits for an hour: it must return
 * false. Were the flag not seen, the test would hang until ctest's timeout. */
static volatile sig_atomic_t thread_flag;

static void *set_flag_later(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    thread_flag = 1;
    return NULL;
}

static void test_sleep_until_cancelled_by_a_thread(void **state)
{
    (void)state;
    thread_flag = 0;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, set_flag_later, NULL), 0);
    double until = gm_clock_mono_s() + 3600;
    assert_false(gm_clock_sleep_until(until, &thread_flag));
    check_lt(gm_clock_mono_s(), until);
    assert_int_equal(pthread_join(t, NULL), 0);
}

/* The documented use: a signal handler sets the flag (SIGALRM from a one-shot timer). */
static volatile sig_atomic_t signal_flag;

static void on_alarm(int sig)
{
    (void)sig;
    signal_flag = 1;
}

static void test_sleep_until_cancelled_by_a_signal(void **state)
{
    (void)state;
    signal_flag = 0;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
    struct itimerval it = {.it_value = {0, 30000}}; /* 30 ms, once */
    assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
    double until = gm_clock_mono_s() + 3600;
    bool reached = gm_clock_sleep_until(until, &signal_flag);
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    assert_false(reached);
    assert_int_equal(signal_flag, 1);
}

static void test_timespec_deadlines(void **state)
{
    (void)state;
    struct timespec t = {10, 999000000L};
    gm_clock_ts_add_ms(&t, 1);
    assert_int_equal(t.tv_sec, 11); /* carried into the seconds */
    assert_int_equal(t.tv_nsec, 0);
    gm_clock_ts_add_ms(&t, 2500);
    assert_int_equal(t.tv_sec, 13);
    assert_int_equal(t.tv_nsec, 500000000L);
    gm_clock_ts_add_ms(&t, -5); /* never earlier */
    assert_int_equal(t.tv_sec, 13);
    assert_int_equal(t.tv_nsec, 500000000L);
    int64_t before = gm_clock_mono_ms();
    struct timespec d = gm_clock_mono_deadline(1500);
    int64_t d_ms = (int64_t)d.tv_sec * 1000 + d.tv_nsec / 1000000;
    check_ge(d_ms, before + 1500);
    check_ge(d.tv_nsec, 0);
    check_lt(d.tv_nsec, 1000000000L);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic_never_goes_back),
        cmocka_unit_test(test_timespec_deadlines),
        cmocka_unit_test(test_units_agree),
        cmocka_unit_test(test_wall_clock_is_the_epoch),
        cmocka_unit_test(test_sleep_lasts_at_least_what_was_asked),
        cmocka_unit_test(test_sleep_until_reaches_the_deadline),
        cmocka_unit_test(test_sleep_until_cancelled_before),
        cmocka_unit_test(test_sleep_until_cancelled_by_a_thread),
        cmocka_unit_test(test_sleep_until_cancelled_by_a_signal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
