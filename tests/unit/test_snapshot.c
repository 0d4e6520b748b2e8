/* test_snapshot.c - base/snapshot and the sample model in gpumon.h: a new snapshot is empty with
 * room for GM_MAX_PROCS processes, validity bits make a metric present (never a value alone),
 * processes past the cap are counted as dropped, copies are deep, reset empties but keeps the
 * allocation, GPUs are found by driver index, and P2P statuses have nvidia-smi's codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <stdio.h>
#include <string.h>

#include "gpumon.h"

static void test_new_is_empty(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    assert_non_null(s->procs);
    assert_int_equal(s->seq, 0);
    assert_int_equal(s->gpu_count, 0);
    assert_int_equal(s->proc_count, 0);
    assert_int_equal(s->proc_dropped, 0);
    assert_false(s->host_valid);
    assert_int_equal(s->host.valid, 0);
    assert_string_equal(s->provider, "");
    for (unsigned i = 0; i < GM_MAX_GPUS; i++)
        for (int w = 0; w < GM_M_WORDS; w++)
            assert_int_equal(s->gpus[i].valid[w], 0);
    /* The whole process table is there and zeroed. */
    for (size_t i = 0; i < GM_MAX_PROCS; i++)
        assert_int_equal(s->procs[i].pid, 0);
    gm_snapshot_free(s);
    gm_snapshot_free(NULL);
}

static void test_validity_bits(void **state)
{
    (void)state;
    gm_gpu g;
    memset(&g, 0, sizeof g);
    /* A value without its bit is absent, whatever it is. */
    g.v[GM_M_FAN_PCT] = 55;
    assert_false(gm_gpu_has(&g, GM_M_FAN_PCT));
    /* A zero with its bit is present: zero is a reading, not "unknown". */
    gm_gpu_set(&g, GM_M_UTIL_GPU_PCT, 0);
    assert_true(gm_gpu_has(&g, GM_M_UTIL_GPU_PCT));
    check_eq(g.v[GM_M_UTIL_GPU_PCT], 0);
    /* Each metric has its own bit, the last one included. */
    memset(&g, 0, sizeof g);
    for (int m = 0; m < GM_M__COUNT; m++) {
        gm_gpu_set(&g, (gm_metric)m, m + 0.5);
        for (int k = 0; k < GM_M__COUNT; k++)
            assert_int_equal(gm_gpu_has(&g, (gm_metric)k), k <= m);
    }
    for (int w = 0; w < GM_M_WORDS; w++) {
        int bits = GM_M__COUNT - 64 * w >= 64 ? 64 : GM_M__COUNT - 64 * w;
        assert_int_equal(g.valid[w], bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1);
    }
    /* Unset and clear take the bits away again. */
    gm_gpu g2 = g;
    gm_gpu_unset(&g2, (gm_metric)(GM_M__COUNT - 1));
    assert_false(gm_gpu_has(&g2, (gm_metric)(GM_M__COUNT - 1)));
    assert_true(gm_gpu_has(&g2, (gm_metric)(GM_M__COUNT - 2)));
    gm_gpu_clear(&g2);
    for (int m = 0; m < GM_M__COUNT; m++)
        assert_false(gm_gpu_has(&g2, (gm_metric)m));
    for (int m = 0; m < GM_M__COUNT; m++)
        check_eq(g.v[m], m + 0.5);
    /* Setting again replaces the value, the bit stays. */
    gm_gpu_set(&g, GM_M_TEMP_C, 71);
    check_eq(g.v[GM_M_TEMP_C], 71);

    gm_host h;
    memset(&h, 0, sizeof h);
    h.v[GM_H_LOAD1] = 3;
    assert_false(gm_host_has(&h, GM_H_LOAD1));
    for (int m = 0; m < GM_H__COUNT; m++) {
        gm_host_set(&h, (gm_host_metric)m, m);
        for (int k = 0; k < GM_H__COUNT; k++)
            assert_int_equal(gm_host_has(&h, (gm_host_metric)k), k <= m);
    }
}

static gm_process proc(unsigned gpu, uint32_t pid)
{
    gm_process p = {.gpu_index = gpu, .pid = pid, .type = GM_PROC_COMPUTE, .mem_valid = true};
    p.used_mem_bytes = (uint64_t)pid << 20;
    snprintf(p.user, sizeof p.user, "u%u", (unsigned)pid);
    snprintf(p.command, sizeof p.command, "cmd %u", (unsigned)pid);
    return p;
}

static void test_process_cap(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    for (uint32_t i = 0; i < GM_MAX_PROCS; i++) {
        gm_process p = proc(i % 8, 1000 + i);
        assert_true(gm_snapshot_add_process(s, &p));
    }
    assert_int_equal(s->proc_count, GM_MAX_PROCS);
    assert_int_equal(s->proc_dropped, 0);
    /* Full: counted, not stored, and nothing stored is overwritten. */
    for (uint32_t i = 0; i < 3; i++) {
        gm_process p = proc(0, 99999);
        assert_false(gm_snapshot_add_process(s, &p));
    }
    assert_int_equal(s->proc_count, GM_MAX_PROCS);
    assert_int_equal(s->proc_dropped, 3);
    assert_int_equal(s->procs[GM_MAX_PROCS - 1].pid, 1000 + GM_MAX_PROCS - 1);
    assert_string_equal(s->procs[5].command, "cmd 1005");
    gm_snapshot_free(s);
}

static gm_snapshot *sample_like(void)
{
    gm_snapshot *s = gm_snapshot_new();
    assert_non_null(s);
    s->seq = 17;
    s->time_ms = 1700000000123;
    s->mono_ms = 42;
    snprintf(s->provider, sizeof s->provider, "nvml");
    snprintf(s->driver_version, sizeof s->driver_version, "580.1");
    s->gpu_count = 2;
    s->gpus[0].index = 0;
    s->gpus[1].index = 3; /* driver indexes may have gaps */
    snprintf(s->gpus[1].name, sizeof s->gpus[1].name, "H200");
    gm_gpu_set(&s->gpus[1], GM_M_POWER_MW, 123456);
    s->gpus[1].lost = true;
    for (uint32_t i = 0; i < 5; i++) {
        gm_process p = proc(i % 2 ? 3 : 0, 4000 + i);
        gm_snapshot_add_process(s, &p);
    }
    s->proc_dropped = 2;
    s->host_valid = true;
    gm_host_set(&s->host, GM_H_CPU_COUNT, 96);
    snprintf(s->host.hostname, sizeof s->host.hostname, "node-1");
    s->host.core_count = 2;
    s->host.core_util_pct[1] = 12.5f;
    return s;
}

static void test_copy_is_deep(void **state)
{
    (void)state;
    gm_snapshot *src = sample_like();
    gm_snapshot *dst = gm_snapshot_new();
    gm_process *own = dst->procs;
    gm_snapshot_copy(dst, src);
    /* dst keeps its own process table, with src's entries in it. */
    assert_ptr_equal(dst->procs, own);
    assert_ptr_not_equal(dst->procs, src->procs);
    assert_int_equal(dst->proc_count, 5);
    assert_int_equal(dst->proc_dropped, 2);
    assert_memory_equal(dst->procs, src->procs, 5 * sizeof *src->procs);
    assert_int_equal(dst->seq, 17);
    assert_string_equal(dst->provider, "nvml");
    assert_int_equal(dst->gpu_count, 2);
    assert_true(dst->gpus[1].lost);
    assert_true(gm_gpu_has(&dst->gpus[1], GM_M_POWER_MW));
    assert_true(dst->host_valid);
    check_eq(dst->host.core_util_pct[1], 12.5f);
    assert_string_equal(dst->host.hostname, "node-1");
    /* Changing the source afterwards leaves the copy alone. */
    src->procs[0].pid = 1;
    snprintf(src->procs[1].command, sizeof src->procs[1].command, "changed");
    src->gpus[1].v[GM_M_POWER_MW] = 0;
    assert_int_equal(dst->procs[0].pid, 4000);
    assert_string_equal(dst->procs[1].command, "cmd 4001");
    check_eq(dst->gpus[1].v[GM_M_POWER_MW], 123456);
    /* A copy of a smaller snapshot over a larger one has the smaller count. */
    gm_snapshot *small = gm_snapshot_new();
    small->gpu_count = 1;
    gm_snapshot_copy(dst, small);
    assert_int_equal(dst->proc_count, 0);
    assert_int_equal(dst->gpu_count, 1);
    assert_ptr_equal(dst->procs, own);
    gm_snapshot_free(small);
    gm_snapshot_free(dst);
    gm_snapshot_free(src);
}

static void test_reset_keeps_the_allocation(void **state)
{
    (void)state;
    gm_snapshot *s = sample_like();
    gm_process *procs = s->procs;
    gm_snapshot_reset(s);
    assert_ptr_equal(s->procs, procs);
    assert_int_equal(s->seq, 0);
    assert_int_equal(s->gpu_count, 0);
    assert_int_equal(s->proc_count, 0);
    assert_int_equal(s->proc_dropped, 0);
    assert_false(s->host_valid);
    assert_int_equal(s->host.valid, 0);
    assert_string_equal(s->provider, "");
    assert_int_equal(s->gpus[1].valid[0], 0);
    assert_false(s->gpus[1].lost);
    /* The used entries are cleared: no stale process shows through a later, shorter list. */
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(s->procs[i].pid, 0);
        assert_string_equal(s->procs[i].command, "");
    }
    /* Reusable as new. */
    gm_process p = proc(0, 7);
    assert_true(gm_snapshot_add_process(s, &p));
    assert_int_equal(s->proc_count, 1);
    gm_snapshot_free(s);
}

static void test_gpu_by_driver_index(void **state)
{
    (void)state;
    gm_snapshot *s = sample_like();
    const gm_gpu *g = gm_snapshot_gpu(s, 3);
    assert_ptr_equal(g, &s->gpus[1]);
    assert_string_equal(g->name, "H200");
    assert_ptr_equal(gm_snapshot_gpu(s, 0), &s->gpus[0]);
    assert_null(gm_snapshot_gpu(s, 1)); /* a position is not an index */
    assert_null(gm_snapshot_gpu(s, 2));
    assert_null(gm_snapshot_gpu(s, GM_MAX_GPUS));
    /* Only the first gpu_count entries count, whatever lies beyond. */
    s->gpus[2].index = 9;
    assert_null(gm_snapshot_gpu(s, 9));
    s->gpu_count = 0;
    assert_null(gm_snapshot_gpu(s, 0));
    gm_snapshot_free(s);
}

/* gm_gpu_degraded: the rule /api/health, the JSON and the dashboard share. */
#define NOW_MS INT64_C(1764117800000)

static void test_degraded_xid_age(void **state)
{
    (void)state;
    gm_gpu g;
    memset(&g, 0, sizeof g);
    char why[128];
    assert_false(gm_gpu_degraded(&g, NOW_MS, why, sizeof why)); /* nothing known: healthy */
    assert_string_equal(why, "");

    gm_gpu_set(&g, GM_M_XID_LAST, 79);
    gm_gpu_set(&g, GM_M_XID_COUNT, 1);
    gm_gpu_set(&g, GM_M_XID_TIME_MS, (double)(NOW_MS - 9 * 60 * 1000));
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "XID 79 540 s ago");
    /* Just inside and just past the window. */
    gm_gpu_set(&g, GM_M_XID_TIME_MS, (double)(NOW_MS - GM_XID_FRESH_MS + 1));
    assert_true(gm_gpu_degraded(&g, NOW_MS, NULL, 0));
    gm_gpu_set(&g, GM_M_XID_TIME_MS, (double)(NOW_MS - GM_XID_FRESH_MS));
    assert_false(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    gm_gpu_set(&g, GM_M_XID_TIME_MS, (double)(NOW_MS - 11 * 60 * 1000));
    assert_false(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "");
    /* A clock that stepped back: the XID counts as new, never a negative age. */
    gm_gpu_set(&g, GM_M_XID_TIME_MS, (double)(NOW_MS + 5000));
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "XID 79 0 s ago");
    /* Watching with nothing seen (xid.last 0), or no time known: not degraded. */
    gm_gpu_set(&g, GM_M_XID_LAST, 0);
    assert_false(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    gm_gpu_set(&g, GM_M_XID_LAST, 48);
    gm_gpu_unset(&g, GM_M_XID_TIME_MS);
    assert_false(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
}

static void test_degraded_ecc_and_remap(void **state)
{
    (void)state;
    gm_gpu g;
    memset(&g, 0, sizeof g);
    char why[128];
    gm_gpu_set(&g, GM_M_ECC_UNCORR_VOL, 0);
    gm_gpu_set(&g, GM_M_ECC_UNCORR_AGG, 7); /* from before the driver loaded: not now */
    gm_gpu_set(&g, GM_M_ECC_CORR_VOL, 100); /* corrected: the hardware coped */
    gm_gpu_set(&g, GM_M_REMAP_FAILURE, 0);
    gm_gpu_set(&g, GM_M_REMAP_PENDING, 1); /* pending remap alone: not degraded */
    assert_false(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));

    gm_gpu_set(&g, GM_M_ECC_UNCORR_VOL, 2);
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "2 uncorrected ECC errors since the driver loaded");

    gm_gpu_set(&g, GM_M_ECC_UNCORR_VOL, 0);
    gm_gpu_set(&g, GM_M_REMAP_FAILURE, 1);
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "a memory row remapping failed");

    /* Every reason, joined in order. */
    gm_gpu_set(&g, GM_M_ECC_UNCORR_VOL, 1);
    gm_gpu_set(&g, GM_M_XID_LAST, 48);
    gm_gpu_set(&g, GM_M_XID_TIME_MS, (double)(NOW_MS - 2000));
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "XID 48 2 s ago; 1 uncorrected ECC errors since the driver loaded; "
                             "a memory row remapping failed");
}

static void test_degraded_recovery_and_sram(void **state)
{
    (void)state;
    gm_gpu g;
    memset(&g, 0, sizeof g);
    char why[128];
    gm_gpu_set(&g, GM_M_RECOVERY_ACTION, 0); /* "None" */
    gm_gpu_set(&g, GM_M_SRAM_THRESHOLD_EXCEEDED, 0);
    assert_false(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    gm_gpu_set(&g, GM_M_RECOVERY_ACTION, 1);
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "the driver asks for a recovery action: Reset");
    gm_gpu_set(&g, GM_M_RECOVERY_ACTION, 99); /* a value of a newer driver: its number */
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "the driver asks for recovery action 99");
    gm_gpu_set(&g, GM_M_RECOVERY_ACTION, 0);
    gm_gpu_set(&g, GM_M_SRAM_THRESHOLD_EXCEEDED, 1);
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_string_equal(why, "uncorrectable SRAM errors over the driver's threshold");
}

static void test_degraded_lost_and_truncation(void **state)
{
    (void)state;
    gm_gpu g;
    memset(&g, 0, sizeof g);
    gm_gpu_set(&g, GM_M_ECC_UNCORR_VOL, 3);
    gm_gpu_set(&g, GM_M_REMAP_FAILURE, 1);
    char why[16];
    memset(why, 'x', sizeof why);
    /* A short buffer: still degraded, the text cut and terminated. */
    assert_true(gm_gpu_degraded(&g, NOW_MS, why, sizeof why));
    assert_int_equal(strlen(why), sizeof why - 1);
    assert_memory_equal(why, "3 uncorrected E", sizeof why);
    char one[1] = {'x'};
    assert_true(gm_gpu_degraded(&g, NOW_MS, one, sizeof one));
    assert_int_equal(one[0], '\0');
    /* A lost GPU is its own state, not degraded, whatever it said before falling off. */
    g.lost = true;
    char why2[64];
    assert_false(gm_gpu_degraded(&g, NOW_MS, why2, sizeof why2));
    assert_string_equal(why2, "");
}

static void test_p2p_codes(void **state)
{
    (void)state;
    static const char *const want[] = {"OK", "CNS", "GNS", "TNS", "DR", "NS", "U"};
    for (int i = 0; i <= GM_P2P_UNKNOWN; i++)
        assert_string_equal(gm_p2p_status_code((gm_p2p_status)i), want[i]);
    assert_string_equal(gm_p2p_status_code((gm_p2p_status)7), "U");
    assert_string_equal(gm_p2p_status_code((gm_p2p_status)-1), "U");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_is_empty),
        cmocka_unit_test(test_validity_bits),
        cmocka_unit_test(test_process_cap),
        cmocka_unit_test(test_copy_is_deep),
        cmocka_unit_test(test_reset_keeps_the_allocation),
        cmocka_unit_test(test_gpu_by_driver_index),
        cmocka_unit_test(test_degraded_xid_age),
        cmocka_unit_test(test_degraded_ecc_and_remap),
        cmocka_unit_test(test_degraded_recovery_and_sram),
        cmocka_unit_test(test_degraded_lost_and_truncation),
        cmocka_unit_test(test_p2p_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
