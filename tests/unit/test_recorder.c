/* test_recorder.c - core/recorder against a sink that fails on demand: the store gets every
 * sample once it works again, in order, exactly once; backoff doubles; past the pending bound
 * the recorder gives up and removes the partial copy; a row removed behind its back ends the
 * copy; events are said once per streak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/recorder.h"
#include "base/error.h"

typedef struct fake_store {
    bool fail;         /* every write fails */
    bool begun, ended; /* what it holds */
    size_t samples;    /* rows written, in order */
    size_t writes;     /* calls of sample */
    bool removed;      /* remove was called on a begun row */
    bool row_gone;     /* sample answers ENOENT */
    double last_util;  /* of the newest sample written, GPU 0 */
    int events[3];
} fake_store;

static int f_begin(void *ctx, const gm_session *s, gm_error *err)
{
    fake_store *f = ctx;
    if (f->fail)
        return gm_error_set(err, GM_EIO, "disk full");
    if (f->begun)
        return GM_EEXIST;
    f->begun = true;
    f->samples = gm_session_timeline_count(s);
    return GM_OK;
}

static int f_sample(void *ctx, const gm_session *s, size_t seq, double t_s, const double *v,
                    gm_error *err)
{
    (void)s;
    (void)t_s;
    fake_store *f = ctx;
    f->writes++;
    if (f->row_gone)
        return gm_error_set(err, GM_ENOENT, "no such row");
    if (f->fail)
        return gm_error_set(err, GM_EIO, "disk full");
    if (seq != f->samples)
        fail_msg("sample %zu written while the store holds %zu", seq, f->samples);
    f->samples++;
    f->last_util = v ? v[GM_SM_UTIL] : NAN;
    return GM_OK;
}

static int f_end(void *ctx, gm_session *s, gm_error *err)
{
    (void)s;
    fake_store *f = ctx;
    if (f->fail)
        return gm_error_set(err, GM_EIO, "disk full");
    f->ended = true;
    return GM_OK;
}

static int f_remove(void *ctx, const char *id, gm_error *err)
{
    (void)id;
    fake_store *f = ctx;
    if (f->fail)
        return gm_error_set(err, GM_EIO, "disk full");
    if (!f->begun)
        return GM_ENOENT;
    f->begun = false;
    f->removed = true;
    return GM_OK;
}

static void on_event(void *arg, const gm_session *s, gm_record_event ev, const char *detail)
{
    (void)s;
    (void)detail;
    ((fake_store *)arg)->events[ev]++;
}

static gm_recorder *make(fake_store *f, gm_record_sink *sink, size_t limit, size_t pending)
{
    *sink = (gm_record_sink){f, f_begin, f_sample, f_end, f_remove};
    unsigned idx[] = {0};
    gm_session *s = NULL;
    assert_int_equal(gm_session_new("t", idx, 1, 1.0, &s, NULL), GM_OK);
    if (limit)
        gm_session_set_sample_limit(s, limit);
    gm_recorder_options o = {.sink = sink,
                             .pending_max_values = pending,
                             .retry_first_ms = 100,
                             .event = on_event,
                             .event_arg = f};
    gm_recorder *r = NULL;
    assert_int_equal(gm_recorder_new(s, &o, &r, NULL), GM_OK);
    return r;
}

static void add(gm_recorder *r, int k)
{
    gm_snapshot *snap = gm_snapshot_new();
    snap->mono_ms = 1000 + k * 1000;
    snap->gpu_count = 1;
    gm_gpu *g = &snap->gpus[0];
    g->index = 0;
    g->v[GM_M_UTIL_GPU_PCT] = k;
    gm_gpu_clear(g);
    gm_gpu_set(g, GM_M_UTIL_GPU_PCT, g->v[GM_M_UTIL_GPU_PCT]);
    assert_int_equal(gm_recorder_add(r, snap, NULL), GM_OK);
    gm_snapshot_free(snap);
}

static void test_full_disk_then_space(void **state)
{
    (void)state;
    fake_store f = {0};
    gm_record_sink sink;
    gm_recorder *r = make(&f, &sink, 0, 0);
    add(r, 0);
    assert_int_equal(gm_recorder_sync(r, 0, false, NULL), GM_OK);
    assert_true(f.begun);
    assert_true(gm_recorder_persisted(r));

    /* The disk fills: samples wait, retries back off (100, 200, 400 ms...), said once. */
    f.fail = true;
    add(r, 1);
    gm_error err = {0};
    assert_int_equal(gm_recorder_sync(r, 0, false, &err), GM_EIO);
    assert_string_equal(err.msg, "disk full");
    assert_true(gm_recorder_failing(r));
    assert_int_equal(gm_recorder_due_ms(r, 0), 100);
    assert_int_equal(gm_recorder_sync(r, 50, false, NULL), GM_OK); /* not due: no write */
    size_t w = f.writes;
    assert_int_equal(gm_recorder_sync(r, 100, false, NULL), GM_EIO);
    assert_int_equal(f.writes, w + 1);
    assert_int_equal(gm_recorder_due_ms(r, 100), 200);
    add(r, 2);
    add(r, 3);
    assert_int_equal(f.events[GM_RECORD_STORE_FAILING], 1);

    /* Space returns: everything lacking goes in, in order, once; said once. */
    f.fail = false;
    gm_recorder_ended(r);
    assert_true(gm_recorder_behind(r));
    assert_int_equal(gm_recorder_sync(r, 1000, true, NULL), GM_OK);
    assert_int_equal(f.samples, 4);
    assert_true(f.ended);
    assert_float_equal(f.last_util, 3, 0);
    assert_false(gm_recorder_behind(r));
    assert_true(gm_recorder_persisted(r));
    assert_int_equal(f.events[GM_RECORD_STORE_RESUMED], 1);
    assert_int_equal(gm_recorder_due_ms(r, 1000), -1);
    gm_recorder_free(r);
}

static void test_past_the_timeline_and_the_bound(void **state)
{
    (void)state;
    /* A session keeping 2 samples in memory: later ones wait for the store in the recorder's
     * own buffer (3 samples of 1 GPU here), and past that it gives up. */
    fake_store f = {0};
    gm_record_sink sink;
    gm_recorder *r = make(&f, &sink, 2, 3);
    add(r, 0);
    gm_recorder_sync(r, 0, false, NULL);
    f.fail = true;
    for (int k = 1; k <= 4; k++) /* samples 1 (timeline) and 2, 3, 4 (pending: full) */
        add(r, k);
    assert_false(gm_recorder_given_up(r));
    f.fail = false;
    assert_int_equal(gm_recorder_sync(r, 10000, true, NULL), GM_OK);
    assert_int_equal(f.samples, 5); /* each one, from the timeline and then the buffer */
    assert_float_equal(f.last_util, 4, 0);

    f.fail = true;
    for (int k = 5; k <= 9; k++) /* one past the bound */
        add(r, k);
    assert_true(gm_recorder_given_up(r));
    assert_int_equal(f.events[GM_RECORD_GAVE_UP], 1);
    /* The partial copy is removed when the store allows it; the session goes on in memory. */
    assert_true(gm_recorder_behind(r));
    f.fail = false;
    assert_int_equal(gm_recorder_sync(r, 20000, true, NULL), GM_OK);
    assert_true(f.removed);
    assert_false(gm_recorder_behind(r));
    assert_false(gm_recorder_persisted(r));
    assert_int_equal(gm_session_sample_count(gm_recorder_session(r)), 10);
    gm_recorder_free(r);
}

static void test_row_removed_behind_its_back(void **state)
{
    (void)state;
    fake_store f = {0};
    gm_record_sink sink;
    gm_recorder *r = make(&f, &sink, 0, 0);
    add(r, 0);
    gm_recorder_sync(r, 0, false, NULL);
    f.row_gone = true;
    add(r, 1);
    assert_int_equal(gm_recorder_sync(r, 0, false, NULL), GM_OK);
    assert_true(gm_recorder_given_up(r));
    assert_false(gm_recorder_begun(r));
    assert_false(gm_recorder_behind(r));
    gm_recorder_free(r);
}

static void test_memory_only(void **state)
{
    (void)state;
    unsigned idx[] = {0};
    gm_session *s = NULL;
    assert_int_equal(gm_session_new(NULL, idx, 1, 1.0, &s, NULL), GM_OK);
    gm_recorder *r = NULL;
    assert_int_equal(gm_recorder_new(s, NULL, &r, NULL), GM_OK);
    add(r, 0);
    gm_recorder_ended(r);
    assert_false(gm_recorder_behind(r));
    assert_false(gm_recorder_persisted(r));
    assert_int_equal(gm_recorder_due_ms(r, 0), -1);
    assert_int_equal(gm_recorder_sync(r, 0, true, NULL), GM_OK);
    gm_recorder_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_disk_then_space),
        cmocka_unit_test(test_past_the_timeline_and_the_bound),
        cmocka_unit_test(test_row_removed_behind_its_back),
        cmocka_unit_test(test_memory_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
