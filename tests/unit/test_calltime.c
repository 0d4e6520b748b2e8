/* test_calltime.c - the collector's per-call booking: exact counts and wall times, CPU time
 * read on every call of the first passes and of one pass in GM_CALLTIME_CPU_EVERY, the other
 * calls booked at the mean so far. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "check.h"

#include "collect/calltime.h"

static int64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spends ms of this thread's CPU; returns 0 (a value for GM_TIMED). */
static int burn(int ms)
{
    int64_t until = cpu_now_ns() + (int64_t)ms * 1000000;
    while (cpu_now_ns() < until)
        ;
    return 0;
}

static const gm_call_stat *stat_of(const gm_call_stat *st, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(st[i].name, name) == 0)
            return &st[i];
    return NULL;
}

/* Over 30 passes a call that spends 2 ms of CPU each time is counted 30 times and booked about
 * 60 ms of CPU, the calls of passes that did not read the CPU clock at the mean of those that
 * did; a name first seen in a pass that does not read the clock is read all the same. */
static void test_sampled_cpu(void **state)
{
    (void)state;
    gm_calltime *t = gm_calltime_new();
    assert_non_null(t);
    const int passes = 3 * GM_CALLTIME_EXACT;
    for (int k = 0; k < passes; k++) {
        gm_calltime *prev = gm_calltime_use(t);
        assert_int_equal(GM_TIMED("burn", burn(2)), 0);
        if (k == GM_CALLTIME_EXACT + 1) /* not a pass that reads the CPU clock */
            assert_int_equal(GM_TIMED("late", burn(3)), 0);
        gm_calltime_use(prev);
    }
    gm_calltime_use(NULL);
    assert_int_equal(GM_TIMED("untimed", burn(1)), 0); /* no table in use: not booked */

    gm_call_stat st[8];
    size_t n = gm_calltime_stats(t, st, 8);
    assert_int_equal(n, 2);
    const gm_call_stat *b = stat_of(st, n, "burn"), *l = stat_of(st, n, "late");
    assert_non_null(b);
    assert_non_null(l);
    assert_null(stat_of(st, n, "untimed"));
    assert_int_equal(b->count, (uint64_t)passes);
    /* Every call, read or not, books at least the 2 ms it spends (the estimate is the mean of
     * readings that are each at least 2 ms). */
    check_ge(b->cpu_s, passes * 0.002);
    check_ge(b->wall_s, b->cpu_s * 0.5);
    assert_int_equal(l->count, 1);
    check_ge(l->cpu_s, 0.003);
    gm_calltime_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampled_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
