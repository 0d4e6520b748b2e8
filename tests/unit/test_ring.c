/* test_ring.c - the in-memory rings: wrap-around, absent values, downsampling, ranges, errors,
 * fixed memory, and a concurrent writer with readers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "server/ring.h"

/* A snapshot at time t_ms with `gpus` GPUs (indexes 0..gpus-1), each with utilization.gpu =
 * util and memory.used = mem_bytes, and host cpu.utilization = cpu. */
static void fill(gm_snapshot *s, int64_t t_ms, unsigned gpus, double util, double mem_bytes,
                 double cpu)
{
    gm_snapshot_reset(s);
    s->time_ms = t_ms;
    s->gpu_count = gpus;
    for (unsigned i = 0; i < gpus; i++) {
        s->gpus[i].index = i;
        gm_gpu_set(&s->gpus[i], GM_M_UTIL_GPU_PCT, util);
        gm_gpu_set(&s->gpus[i], GM_M_MEM_USED_BYTES, mem_bytes);
    }
    s->host_valid = true;
    gm_host_set(&s->host, GM_H_CPU_UTIL_PCT, cpu);
}

static gm_ring *make(unsigned gpus, size_t slots)
{
    gm_ring *h = NULL;
    gm_error err = {0};
    assert_int_equal(gm_ring_new(gpus, slots, &h, &err), GM_OK);
    assert_non_null(h);
    return h;
}

/* Query helper: GPU source unless host. */
static gm_series run_query(gm_ring *h, const gm_ring_request *q)
{
    gm_series out;
    gm_error err = {0};
    int rc = gm_ring_query(h, q, &out, &err);
    if (rc != GM_OK)
        fail_msg("query failed: %s", err.msg);
    return out;
}

static void test_new_rejects_bad_sizes(void **state)
{
    gm_ring *h = (gm_ring *)1;
    gm_error err = {0};
    assert_int_equal(gm_ring_new(1, 0, &h, &err), GM_EINVAL);
    assert_null(h);
    assert_int_equal(err.code, GM_EINVAL);
    assert_int_equal(gm_ring_new(GM_MAX_GPUS + 1, 10, &h, &err), GM_EINVAL);
    assert_int_equal(gm_ring_new(GM_MAX_GPUS, SIZE_MAX / 2, &h, &err), GM_EINVAL);
    assert_null(h);
}

static void test_memory_is_fixed_and_small(void **state)
{
    gm_ring *h = make(8, GM_RING_DEFAULT_SLOTS);
    size_t bytes = gm_ring_memory_bytes(h);
    size_t rings =
        3600 * (sizeof(int64_t) + sizeof(float) * (8 * gm_ring_gpu_columns() + GM_H__COUNT));
    check_ge(bytes, rings);
    check_lt(bytes, 16u * 1024 * 1024);

    /* Appending far more than the slots does not change the footprint. */
    gm_snapshot *s = gm_snapshot_new();
    for (int i = 0; i < 5000; i++) {
        fill(s, 1000 * (int64_t)i, 8, i % 100, 1e9, 10);
        gm_ring_append(h, s);
    }
    assert_int_equal(gm_ring_memory_bytes(h), bytes);
    assert_int_equal(gm_ring_len(h), 3600);
    gm_snapshot_free(s);
    gm_ring_free(h);
}

static void test_wraparound_keeps_newest_in_order(void **state)
{
    gm_ring *h = make(1, 5);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_ring_len(h), 0);
    assert_int_equal(gm_ring_newest_ms(h), 0);
    for (int i = 0; i < 12; i++) {
        fill(s, 1000 * (int64_t)i, 1, i, 0, 0);
        gm_ring_append(h, s);
    }
    assert_int_equal(gm_ring_len(h), 5);
    assert_int_equal(gm_ring_oldest_ms(h), 7000);
    assert_int_equal(gm_ring_newest_ms(h), 11000);

    gm_ring_request q = {.metric = GM_M_UTIL_GPU_PCT};
    gm_series out = run_query(h, &q);
    assert_int_equal(out.count, 5);
    assert_false(out.clamped);
    assert_false(out.truncated);
    assert_int_equal(out.held_from_ms, 7000);
    assert_int_equal(out.held_to_ms, 11000);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(out.points[i].t_ms, 1000 * (7 + i));
        assert_true(out.points[i].present);
        check_eq(out.points[i].value, 7 + i);
    }
    gm_series_free(&out);
    assert_null(out.points);
    gm_snapshot_free(s);
    gm_ring_free(h);
}

static void test_absent_values_stay_absent(void **state)
{
    gm_ring *h = make(3, 8);
    gm_snapshot *s = gm_snapshot_new();

    /* t=1000: GPU 0 util 0 (present zero), GPU 1 has no util, GPU 2 is lost, GPU 7 is beyond
     * what the history records, no host. */
    gm_snapshot_reset(s);
    s->time_ms = 1000;
    s->gpu_count = 4;
    s->gpus[0].index = 0;
    gm_gpu_set(&s->gpus[0], GM_M_UTIL_GPU_PCT, 0);
    s->gpus[1].index = 1;
    gm_gpu_set(&s->gpus[1], GM_M_TEMP_C, 40);
    s->gpus[2].index = 2;
    s->gpus[2].lost = true;
    gm_gpu_set(&s->gpus[2], GM_M_UTIL_GPU_PCT, 55); /* must be ignored: the GPU is lost */
    s->gpus[3].index = 7;
    gm_gpu_set(&s->gpus[3], GM_M_UTIL_GPU_PCT, 99);
    gm_ring_append(h, s);

    /* t=2000: only GPU 1 in the snapshot (0 and 2 vanished), host valid. */
    gm_snapshot_reset(s);
    s->time_ms = 2000;
    s->gpu_count = 1;
    s->gpus[0].index = 1;
    gm_gpu_set(&s->gpus[0], GM_M_UTIL_GPU_PCT, 30);
    s->host_valid = true;
    gm_host_set(&s->host, GM_H_CPU_UTIL_PCT, 12.5);
    gm_ring_append(h, s);

    gm_ring_request q = {.metric = GM_M_UTIL_GPU_PCT};
    q.gpu = 0;
    gm_series out = run_query(h, &q);
    assert_int_equal(out.count, 2);
    assert_true(out.points[0].present);
    check_eq(out.points[0].value, 0.0);
    assert_false(out.points[1].present);
    assert_true(isnan(out.points[1].value));
    gm_series_free(&out);

    q.gpu = 1;
    out = run_query(h, &q);
    assert_false(out.points[0].present);
    assert_true(out.points[1].present);
    check_eq(out.points[1].value, 30);
    gm_series_free(&out);

    q.gpu = 2;
    out = run_query(h, &q);
    assert_false(out.points[0].present);
    assert_false(out.points[1].present);
    gm_series_free(&out);

    /* A metric never reported is absent throughout, not zero. */
    q.gpu = 0;
    q.metric = GM_M_POWER_MW;
    out = run_query(h, &q);
    assert_int_equal(out.count, 2);
    assert_false(out.points[0].present);
    assert_false(out.points[1].present);
    gm_series_free(&out);

    gm_ring_request hq = {.source = GM_RING_HOST, .metric = GM_H_CPU_UTIL_PCT};
    out = run_query(h, &hq);
    assert_int_equal(out.count, 2);
    assert_false(out.points[0].present);
    assert_true(out.points[1].present);
    check_eq(out.points[1].value, 12.5);
    assert_string_equal(out.name, "cpu.utilization");
    assert_string_equal(out.unit, "%");
    gm_series_free(&out);

    gm_snapshot_free(s);
    gm_ring_free(h);
}

static void test_values_in_display_units(void **state)
{
    gm_ring *h = make(1, 4);
    gm_snapshot *s = gm_snapshot_new();
    fill(s, 5000, 1, 50, 1073741824.0, 1); /* 1 GiB */
    gm_gpu_set(&s->gpus[0], GM_M_POWER_MW, 250000);
    gm_gpu_set(&s->gpus[0], GM_M_MEM_TOTAL_BYTES, 85899345920.0); /* 80 GiB */
    gm_host_set(&s->host, GM_H_MEM_USED_BYTES, 2147483648.0);
    gm_ring_append(h, s);

    gm_ring_request q = {.metric = GM_M_MEM_USED_BYTES};
    gm_series out = run_query(h, &q);
    assert_string_equal(out.name, "memory.used");
    assert_string_equal(out.unit, "MiB");
    check_eq(out.points[0].value, 1024.0);
    gm_series_free(&out);

    q.metric = GM_M_MEM_TOTAL_BYTES; /* recorded although not a numeric_series metric */
    out = run_query(h, &q);
    check_eq(out.points[0].value, 81920.0);
    gm_series_free(&out);

    q.metric = GM_M_POWER_MW;
    out = run_query(h, &q);
    assert_string_equal(out.unit, "W");
    assert_float_equal(out.points[0].value, 250.0, 1e-9);
    gm_series_free(&out);

    /* Of the health metrics, the moving readings have rings (memory temperature)... */
    gm_gpu_set(&s->gpus[0], GM_M_TEMP_MEM_C, 51);
    gm_gpu_set(&s->gpus[0], GM_M_XID_LAST, 79);
    s->time_ms += 1000;
    gm_ring_append(h, s);
    q.metric = GM_M_TEMP_MEM_C;
    out = run_query(h, &q);
    assert_int_equal(out.count, 2);
    assert_false(out.points[0].present);
    check_eq(out.points[1].value, 51.0);
    gm_series_free(&out);
    /* ...and so do the error and violation counters worth seeing over time (an absent counter
     * stays absent, never 0)... */
    static const gm_metric counters[] = {GM_M_XID_COUNT,      GM_M_ECC_CORR_VOL,
                                         GM_M_ECC_UNCORR_VOL, GM_M_PCIE_REPLAY,
                                         GM_M_VIOL_POWER_NS,  GM_M_VIOL_THERMAL_NS};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        assert_true(gm_ring_keeps(counters[i]));
    gm_gpu_set(&s->gpus[0], GM_M_ECC_UNCORR_VOL, 2);
    gm_gpu_set(&s->gpus[0], GM_M_VIOL_POWER_NS, 1500000000.0);
    s->time_ms += 1000;
    gm_ring_append(h, s);
    q.metric = GM_M_ECC_UNCORR_VOL;
    out = run_query(h, &q);
    assert_int_equal(out.count, 3);
    assert_false(out.points[0].present);
    assert_false(out.points[1].present);
    assert_true(out.points[2].present);
    check_eq(out.points[2].value, 2.0);
    gm_series_free(&out);
    q.metric = GM_M_VIOL_POWER_NS;
    out = run_query(h, &q);
    assert_string_equal(out.unit, "us");
    assert_float_equal(out.points[2].value, 1500000.0, 1e-6);
    gm_series_free(&out);
    q.metric = GM_M_XID_COUNT; /* never set: absent at every sample */
    out = run_query(h, &q);
    assert_int_equal(out.count, 3);
    for (size_t i = 0; i < out.count; i++)
        assert_false(out.points[i].present);
    gm_series_free(&out);
    /* ...states, configuration and identifiers are read from the latest sample, not kept. */
    assert_true(gm_ring_keeps(GM_M_MEM_TOTAL_BYTES));
    assert_false(gm_ring_keeps(GM_M_XID_LAST));
    assert_false(gm_ring_keeps(GM_M_REMAP_PENDING));
    assert_false(gm_ring_keeps(GM_M_ECC_CORR_AGG));
    gm_error err = {0};
    q.metric = GM_M_XID_LAST;
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "xid.last is not kept"));

    gm_ring_request hq = {.source = GM_RING_HOST, .metric = GM_H_MEM_USED_BYTES};
    out = run_query(h, &hq);
    assert_string_equal(out.name, "memory.used");
    assert_string_equal(out.unit, "B");
    check_eq(out.points[0].value, 2147483648.0);
    gm_series_free(&out);

    gm_snapshot_free(s);
    gm_ring_free(h);
}

static void test_downsampling_bucket_means(void **state)
{
    gm_ring *h = make(1, 32);
    gm_snapshot *s = gm_snapshot_new();
    /* t (ms) and utilization; NAN marks an absent sample. */
    static const struct {
        int64_t t;
        double v;
    } in[] = {
        {10000, 10},
        {10400, 20},
        {10999, 60}, /* bucket 10000: mean 30 */
        {11000, NAN},
        {11500, NAN}, /* bucket 11000: absent */
        {12200, 7},
        {12300, NAN}, /* bucket 12000: 7 (absent ignored) */
                      /* bucket 13000 and 14000: no sample, not emitted */
        {15000, 1},
        {15001, 2}, /* bucket 15000: 1.5 */
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        fill(s, in[i].t, 1, 0, 0, 0);
        if (isnan(in[i].v))
            gm_gpu_clear(&s->gpus[0]);
        else
            gm_gpu_set(&s->gpus[0], GM_M_UTIL_GPU_PCT, in[i].v);
        gm_ring_append(h, s);
    }

    gm_ring_request q = {.metric = GM_M_UTIL_GPU_PCT, .step_ms = 1000};
    gm_series out = run_query(h, &q);
    assert_int_equal(out.count, 4);
    assert_int_equal(out.points[0].t_ms, 10000);
    assert_true(out.points[0].present);
    assert_float_equal(out.points[0].value, 30.0, 1e-9);
    assert_int_equal(out.points[1].t_ms, 11000);
    assert_false(out.points[1].present);
    assert_true(isnan(out.points[1].value));
    assert_int_equal(out.points[2].t_ms, 12000);
    assert_float_equal(out.points[2].value, 7.0, 1e-9);
    assert_int_equal(out.points[3].t_ms, 15000);
    assert_float_equal(out.points[3].value, 1.5, 1e-9);
    gm_series_free(&out);

    /* Buckets align to multiples of step since the epoch, not to the range start: from 10400
     * with a 2 s step, bucket 10000 holds 10400, 10999 and two absent samples (mean 40), bucket
     * 12000 holds 12200, 12300 (7), bucket 14000 holds 15000 and 15001 (1.5). */
    q.step_ms = 2000;
    q.since_ms = 10400;
    q.until_ms = 15001;
    out = run_query(h, &q);
    assert_int_equal(out.count, 3);
    assert_int_equal(out.points[0].t_ms, 10000);
    assert_float_equal(out.points[0].value, 40.0, 1e-9);
    assert_int_equal(out.points[1].t_ms, 12000);
    assert_float_equal(out.points[1].value, 7.0, 1e-9);
    assert_int_equal(out.points[2].t_ms, 14000);
    assert_float_equal(out.points[2].value, 1.5, 1e-9);
    gm_series_free(&out);

    /* A cap keeps the newest buckets. */
    q = (gm_ring_request){.metric = GM_M_UTIL_GPU_PCT, .step_ms = 1000, .max_points = 2};
    out = run_query(h, &q);
    assert_int_equal(out.count, 2);
    assert_true(out.truncated);
    assert_int_equal(out.points[0].t_ms, 12000);
    assert_int_equal(out.points[1].t_ms, 15000);
    gm_series_free(&out);

    /* Exactly as many buckets as the cap is not truncation. */
    q.max_points = 4;
    out = run_query(h, &q);
    assert_int_equal(out.count, 4);
    assert_false(out.truncated);
    gm_series_free(&out);

    gm_snapshot_free(s);
    gm_ring_free(h);
}

static void test_range_clamping(void **state)
{
    gm_ring *h = make(1, 10);
    gm_snapshot *s = gm_snapshot_new();
    for (int i = 1; i <= 10; i++) {
        fill(s, 1000 * (int64_t)i, 1, i, 0, 0);
        gm_ring_append(h, s);
    }

    /* Asking from before the oldest sample held: clamped to what is held, and said so. */
    gm_ring_request q = {.metric = GM_M_UTIL_GPU_PCT, .since_ms = 500};
    gm_series out = run_query(h, &q);
    assert_int_equal(out.count, 10);
    assert_true(out.clamped);
    assert_int_equal(out.points[0].t_ms, 1000);
    gm_series_free(&out);

    /* Last 3 s relative to the newest sample (10000): 7000..10000 inclusive. */
    q = (gm_ring_request){.metric = GM_M_UTIL_GPU_PCT, .last_ms = 3000};
    out = run_query(h, &q);
    assert_int_equal(out.count, 4);
    assert_false(out.clamped);
    assert_int_equal(out.points[0].t_ms, 7000);
    check_eq(out.points[3].value, 10);
    gm_series_free(&out);

    q.last_ms = 3600 * 1000; /* an hour, of which 10 s are held */
    out = run_query(h, &q);
    assert_int_equal(out.count, 10);
    assert_true(out.clamped);
    gm_series_free(&out);

    /* since and last together: the later start wins. */
    q = (gm_ring_request){.metric = GM_M_UTIL_GPU_PCT, .since_ms = 8500, .last_ms = 5000};
    out = run_query(h, &q);
    assert_int_equal(out.count, 2);
    assert_int_equal(out.points[0].t_ms, 9000);
    gm_series_free(&out);

    q = (gm_ring_request){.metric = GM_M_UTIL_GPU_PCT, .since_ms = 2000, .until_ms = 4000};
    out = run_query(h, &q);
    assert_int_equal(out.count, 3);
    assert_int_equal(out.points[0].t_ms, 2000);
    assert_int_equal(out.points[2].t_ms, 4000);
    assert_false(out.clamped);
    gm_series_free(&out);

    /* After the newest sample: empty, not an error. */
    q = (gm_ring_request){.metric = GM_M_UTIL_GPU_PCT, .since_ms = 20000};
    out = run_query(h, &q);
    assert_int_equal(out.count, 0);
    assert_int_equal(out.held_to_ms, 10000);
    gm_series_free(&out);

    /* A point cap keeps the newest points. */
    q = (gm_ring_request){.metric = GM_M_UTIL_GPU_PCT, .max_points = 3};
    out = run_query(h, &q);
    assert_int_equal(out.count, 3);
    assert_true(out.truncated);
    assert_int_equal(out.points[0].t_ms, 8000);
    assert_int_equal(out.points[2].t_ms, 10000);
    gm_series_free(&out);

    gm_snapshot_free(s);
    gm_ring_free(h);
}

static void test_empty_history_query(void **state)
{
    gm_ring *h = make(1, 10);
    gm_ring_request q = {.metric = GM_M_TEMP_C, .last_ms = 60000, .step_ms = 1000};
    gm_series out = run_query(h, &q);
    assert_int_equal(out.count, 0);
    assert_int_equal(out.held_from_ms, 0);
    assert_false(out.clamped);
    gm_series_free(&out);
    gm_ring_free(h);
}

static void test_clock_step_back_keeps_order(void **state)
{
    gm_ring *h = make(1, 10);
    gm_snapshot *s = gm_snapshot_new();
    const int64_t times[] = {1000, 2000, 3000, 2500, 2500};
    for (int i = 0; i < 5; i++) {
        fill(s, times[i], 1, i, 0, 0);
        gm_ring_append(h, s);
    }
    /* 3000 is in the future of 2500 and goes; equal times are kept. */
    assert_int_equal(gm_ring_len(h), 4);
    gm_ring_request q = {.metric = GM_M_UTIL_GPU_PCT};
    gm_series out = run_query(h, &q);
    assert_int_equal(out.count, 4);
    const int64_t want_t[] = {1000, 2000, 2500, 2500};
    const double want_v[] = {0, 1, 3, 4};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(out.points[i].t_ms, want_t[i]);
        check_eq(out.points[i].value, want_v[i]);
    }
    gm_series_free(&out);
    gm_snapshot_free(s);
    gm_ring_free(h);
}

static void test_unknown_gpu_and_metric(void **state)
{
    gm_ring *h = make(2, 10);
    gm_series out = {0};
    gm_error err = {0};

    gm_ring_request q = {.gpu = 2, .metric = GM_M_UTIL_GPU_PCT};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "GPU 2"));
    assert_null(out.points);

    q = (gm_ring_request){.metric = GM_M__COUNT};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "metric"));

    q = (gm_ring_request){.metric = -1};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);

    q = (gm_ring_request){.source = GM_RING_HOST, .metric = GM_H__COUNT};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "host metric"));

    q = (gm_ring_request){.source = (gm_ring_source)7};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);

    q = (gm_ring_request){.metric = GM_M_UTIL_GPU_PCT, .step_ms = -1};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);
    gm_ring_free(h);

    /* Host only: any GPU is unknown, host series work. */
    h = make(0, 10);
    q = (gm_ring_request){.gpu = 0};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_EINVAL);
    q = (gm_ring_request){.source = GM_RING_HOST, .metric = GM_H_LOAD1};
    assert_int_equal(gm_ring_query(h, &q, &out, &err), GM_OK);
    gm_series_free(&out);
    gm_ring_free(h);
}

/* ---- one writer, several readers ---------------------------------------------------------- */

#define CONC_SAMPLES 20000
#define CONC_READERS 3

struct conc {
    gm_ring *h;
    volatile int done;
    int bad; /* points whose value does not match their time: a torn read */
};

/* Every sample's values derive from its time, so a reader can check each point on its own. */
static double util_of(int64_t t)
{
    return (double)((t / 1000) % 101);
}

static void *writer_main(void *arg)
{
    struct conc *c = arg;
    gm_snapshot *s = gm_snapshot_new();
    for (int i = 1; i <= CONC_SAMPLES; i++) {
        int64_t t = 1000 * (int64_t)i;
        fill(s, t, 2, util_of(t), (double)(t / 1000) * 1048576.0, util_of(t));
        gm_ring_append(c->h, s);
    }
    gm_snapshot_free(s);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *reader_main(void *arg)
{
    struct conc *c = arg;
    int bad = 0;
    size_t seen = 0;
    /* Keep reading until the writer is done and at least one non-empty read was checked. */
    while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) || seen == 0) {
        gm_ring_request q = {.gpu = 1, .metric = GM_M_UTIL_GPU_PCT};
        gm_series out;
        if (gm_ring_query(c->h, &q, &out, NULL) != GM_OK) {
            bad++;
            break;
        }
        seen += out.count;
        for (size_t i = 0; i < out.count; i++) {
            if (!out.points[i].present || out.points[i].value != util_of(out.points[i].t_ms))
                bad++;
            if (i > 0 && out.points[i].t_ms <= out.points[i - 1].t_ms)
                bad++;
        }
        gm_series_free(&out);

        q = (gm_ring_request){.metric = GM_M_MEM_USED_BYTES, .last_ms = 30000, .step_ms = 10000};
        if (gm_ring_query(c->h, &q, &out, NULL) != GM_OK)
            bad++;
        gm_series_free(&out);
        (void)gm_ring_newest_ms(c->h);
    }
    __atomic_add_fetch(&c->bad, bad, __ATOMIC_RELAXED);
    return NULL;
}

static void test_concurrent_writer_and_readers(void **state)
{
    struct conc c = {.h = make(2, 64)};
    pthread_t w, r[CONC_READERS];
    for (int i = 0; i < CONC_READERS; i++)
        assert_int_equal(pthread_create(&r[i], NULL, reader_main, &c), 0);
    assert_int_equal(pthread_create(&w, NULL, writer_main, &c), 0);
    pthread_join(w, NULL);
    for (int i = 0; i < CONC_READERS; i++)
        pthread_join(r[i], NULL);
    assert_int_equal(c.bad, 0);
    assert_int_equal(gm_ring_len(c.h), 64);
    assert_int_equal(gm_ring_newest_ms(c.h), 1000 * (int64_t)CONC_SAMPLES);
    gm_ring_free(c.h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_rejects_bad_sizes),
        cmocka_unit_test(test_memory_is_fixed_and_small),
        cmocka_unit_test(test_wraparound_keeps_newest_in_order),
        cmocka_unit_test(test_absent_values_stay_absent),
        cmocka_unit_test(test_values_in_display_units),
        cmocka_unit_test(test_downsampling_bucket_means),
        cmocka_unit_test(test_range_clamping),
        cmocka_unit_test(test_empty_history_query),
        cmocka_unit_test(test_clock_step_back_keeps_order),
        cmocka_unit_test(test_unknown_gpu_and_metric),
        cmocka_unit_test(test_concurrent_writer_and_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
