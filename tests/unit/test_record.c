/* test_record.c - core/record, the record loop: the command's exit status and signal come
 * back, the session has the samples taken around and during it, a signal sent to us reaches
 * the command, and a command that cannot run is GM_ESPAWN with exit 127 and no store row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/record.h"

typedef struct ticks {
    int n;
} ticks;

static void on_tick(void *arg, const gm_session *s)
{
    (void)s;
    ((ticks *)arg)->n++;
}

static int begins;
static int b_begin(void *ctx, const gm_session *s, gm_error *err)
{
    (void)ctx;
    (void)s;
    (void)err;
    begins++;
    return GM_OK;
}
static int b_sample(void *ctx, const gm_session *s, size_t seq, double t, const double *v,
                    gm_error *err)
{
    (void)ctx, (void)s, (void)seq, (void)t, (void)v, (void)err;
    return GM_OK;
}
static int b_end(void *ctx, gm_session *s, gm_error *err)
{
    (void)ctx, (void)s, (void)err;
    return GM_OK;
}
static int b_remove(void *ctx, const char *id, gm_error *err)
{
    (void)ctx, (void)id, (void)err;
    return GM_OK;
}

static gm_record_outcome run(char *const *argv, double interval, int *rc, ticks *t, size_t *samples)
{
    gm_collector_options copt = {.simulate = 2, .seed = 1, .no_host = true, .no_processes = true};
    gm_collector *c = NULL;
    assert_int_equal(gm_collector_open(&copt, &c, NULL), GM_OK);
    gm_snapshot *snap = gm_snapshot_new();
    gm_session *s = NULL;
    assert_int_equal(gm_session_new(NULL, NULL, 0, interval, &s, NULL), GM_OK);
    static const gm_record_sink sink = {NULL, b_begin, b_sample, b_end, b_remove};
    gm_recorder_options ro = {.sink = &sink};
    gm_recorder *rec = NULL;
    assert_int_equal(gm_recorder_new(s, &ro, &rec, NULL), GM_OK);
    gm_record_run_options o = {.command = argv,
                               .collector = c,
                               .snap = snap,
                               .rec = rec,
                               .interval_s = interval,
                               .tick = on_tick,
                               .arg = t};
    gm_record_outcome out;
    gm_error err = {0};
    *rc = gm_record_command(&o, &out, &err);
    *samples = gm_session_sample_count(gm_recorder_session(rec));
    gm_recorder_free(rec);
    gm_snapshot_free(snap);
    gm_collector_close(c);
    return out;
}

static void test_exit_status_and_samples(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "sleep 0.3; exit 3", NULL};
    int rc;
    ticks t = {0};
    size_t samples;
    begins = 0;
    gm_record_outcome out = run(argv, 0.05, &rc, &t, &samples);
    assert_int_equal(rc, GM_OK);
    assert_int_equal(out.exit_code, 3);
    assert_int_equal(out.signal, 0);
    /* One before, some during (every 50 ms over 300 ms), one after. */
    check_ge(samples, 3);
    assert_int_equal(t.n, (int)samples);
    assert_int_equal(begins, 1);
}

static void *send_term(void *arg)
{
    (void)arg;
    gm_clock_sleep_ms(300);
    kill(getpid(), SIGTERM);
    return NULL;
}

static void test_signal_reaches_the_command(void **state)
{
    (void)state;
    /* The thread must not take the signal itself: block it there. */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, &old);
    pthread_t th;
    pthread_create(&th, NULL, send_term, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    char *argv[] = {"sleep", "30", NULL};
    int rc;
    ticks t = {0};
    size_t samples;
    gm_record_outcome out = run(argv, 0.1, &rc, &t, &samples);
    pthread_join(th, NULL);
    assert_int_equal(rc, GM_OK);
    assert_int_equal(out.signal, SIGTERM);
    assert_int_equal(out.exit_code, 128 + SIGTERM);
}

static void test_command_not_found(void **state)
{
    (void)state;
    char *argv[] = {"/nonexistent/gpumon-test-command", NULL};
    int rc;
    ticks t = {0};
    size_t samples;
    begins = 0;
    gm_record_outcome out = run(argv, 0.1, &rc, &t, &samples);
    assert_int_equal(rc, GM_ESPAWN);
    assert_int_equal(out.exit_code, 127);
    assert_int_equal(out.exec_errno, ENOENT);
    assert_int_equal(begins, 0); /* nothing stored for a command that never ran */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status_and_samples),
        cmocka_unit_test(test_signal_reaches_the_command),
        cmocka_unit_test(test_command_not_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
