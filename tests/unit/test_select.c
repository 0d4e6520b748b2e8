/* test_select.c - availability scores (hand-computed), best-N selection with its exclusions and
 * CUDA_VISIBLE_DEVICES rules, the JSON form, and gm_wait_for against the fake NVML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/lease.h"
#include "core/select.h"

#define GIB 1073741824.0

static gm_snapshot *snap;
static gm_select_result res;

static int setup(void **state)
{
    snap = gm_snapshot_new();
    return snap ? 0 : -1;
}

static int teardown(void **state)
{
    gm_snapshot_free(snap);
    return 0;
}

/* Adds GPU `index` with total/free in GiB and utilization; a negative value leaves it absent. */
static gm_gpu *add_gpu(unsigned index, double total_gib, double free_gib, double util)
{
    gm_gpu *g = &snap->gpus[snap->gpu_count++];
    memset(g, 0, sizeof *g);
    g->index = index;
    snprintf(g->name, sizeof g->name, "Test GPU %u", index);
    snprintf(g->uuid, sizeof g->uuid, "GPU-7e570000-0000-4000-8000-%012u", index);
    if (total_gib >= 0)
        gm_gpu_set(g, GM_M_MEM_TOTAL_BYTES, total_gib * GIB);
    if (free_gib >= 0)
        gm_gpu_set(g, GM_M_MEM_FREE_BYTES, free_gib * GIB);
    if (util >= 0)
        gm_gpu_set(g, GM_M_UTIL_GPU_PCT, util);
    return g;
}

static void reset(void)
{
    gm_snapshot_reset(snap);
    snprintf(snap->provider, sizeof snap->provider, "test");
}

static const gm_select_gpu *entry(unsigned index)
{
    for (unsigned i = 0; i < res.n_gpus; i++)
        if (res.gpus[i].index == index)
            return &res.gpus[i];
    fail_msg("GPU %u not in the result", index);
    return NULL;
}

static void test_score_hand_computed(void **state)
{
    reset();
    double s = -1;
    /* 60 of 80 GiB free, 25% busy: 0.6 x 0.75 + 0.4 x 0.75 = 0.75. */
    assert_true(gm_select_score(add_gpu(0, 80, 60, 25), &s));
    assert_float_equal(s, 0.75, 1e-12);
    /* Empty and idle: 1. Full and saturated: 0. */
    assert_true(gm_select_score(add_gpu(1, 80, 80, 0), &s));
    assert_float_equal(s, 1.0, 1e-12);
    assert_true(gm_select_score(add_gpu(2, 80, 0, 100), &s));
    assert_float_equal(s, 0.0, 1e-12);
    /* 20 of 80 free, idle: 0.6 x 0.25 + 0.4 = 0.55; all free, 90% busy: 0.6 + 0.04 = 0.64. */
    assert_true(gm_select_score(add_gpu(3, 80, 20, 0), &s));
    assert_float_equal(s, 0.55, 1e-12);
    assert_true(gm_select_score(add_gpu(4, 80, 80, 90), &s));
    assert_float_equal(s, 0.64, 1e-12);
}

static void test_unscorable(void **state)
{
    reset();
    double s = 42;
    assert_false(gm_select_score(add_gpu(0, 80, 60, -1), &s)); /* no utilisation */
    assert_false(gm_select_score(add_gpu(1, 80, -1, 10), &s)); /* no free memory */
    assert_false(gm_select_score(add_gpu(2, -1, 60, 10), &s)); /* no total */
    assert_false(gm_select_score(add_gpu(3, 0, 0, 10), &s));   /* total 0: no fraction */
    gm_gpu *lost = add_gpu(4, 80, 80, 0);
    lost->lost = true;
    assert_false(gm_select_score(lost, &s));
    assert_float_equal(s, 42, 0); /* untouched */

    add_gpu(5, 80, 10, 50);
    gm_select_request req = {.count = 1};
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    assert_true(res.satisfied);
    assert_int_equal(res.n_eligible, 1);
    assert_int_equal(res.selected[0], 5);
    assert_int_equal(entry(0)->status, GM_SEL_UNSCORABLE);
    assert_string_equal(entry(0)->reason, "utilization not reported");
    assert_false(entry(0)->has_util);
    assert_true(entry(0)->has_free);
    assert_string_equal(entry(1)->reason, "memory not reported");
    assert_string_equal(entry(3)->reason, "total memory reported as 0");
    assert_int_equal(entry(4)->status, GM_SEL_LOST);
    assert_false(entry(4)->has_free); /* a lost GPU's readings are never shown */
    /* Excluded GPUs come last, by index. */
    assert_int_equal(res.gpus[0].index, 5);
    for (unsigned i = 1; i < res.n_gpus; i++)
        assert_int_equal(res.gpus[i].index, i - 1);
}

static void test_rank_ties_and_order(void **state)
{
    reset();
    add_gpu(0, 80, 60, 25); /* 0.75 */
    add_gpu(1, 80, 20, 0);  /* 0.55 */
    add_gpu(2, 80, 80, 90); /* 0.64 */
    add_gpu(3, 40, 30, 25); /* 0.75: tied with GPU 0 */
    gm_select_request req = {.count = 2};
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    assert_true(res.satisfied);
    assert_int_equal(res.n_selected, 2);
    assert_int_equal(res.selected[0], 0);
    assert_int_equal(res.selected[1], 3);
    const unsigned rank[] = {0, 3, 2, 1};
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(res.gpus[i].index, rank[i]);
    assert_int_equal(res.gpus[2].status, GM_SEL_AVAILABLE);
    char list[64];
    gm_select_format_list(&res, list, sizeof list);
    assert_string_equal(list, "0,3");

    /* Three: the set is printed ascending although GPU 2 ranks below 0 and 3. */
    req.count = 3;
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    gm_select_format_list(&res, list, sizeof list);
    assert_string_equal(list, "0,2,3");
    unsigned cand[8];
    assert_int_equal(gm_select_candidates(&res, cand, 8), 4);
    assert_int_equal(cand[0], 0);
    assert_int_equal(cand[1], 3);
    assert_int_equal(cand[2], 2);
    assert_int_equal(cand[3], 1);

    /* Ties go to the lower index whatever the snapshot order. */
    reset();
    add_gpu(7, 80, 40, 50);
    add_gpu(2, 80, 40, 50);
    add_gpu(5, 80, 40, 50);
    req.count = 1;
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    assert_int_equal(res.selected[0], 2);
}

static void test_thresholds_inclusive(void **state)
{
    reset();
    add_gpu(0, 80, 20, 10);  /* exactly 20480 MiB free, exactly 10% */
    add_gpu(1, 80, 19.5, 0); /* too little memory */
    add_gpu(2, 80, 70, 11);  /* too busy */
    add_gpu(3, 80, 1, 99);   /* both */
    gm_select_request req = {
        .count = 2, .min_free_mib = 20480, .has_max_util = true, .max_util_pct = 10};
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    assert_false(res.satisfied);
    assert_int_equal(res.n_selected, 0);
    assert_int_equal(res.n_eligible, 1);
    assert_int_equal(entry(0)->status, GM_SEL_AVAILABLE);
    assert_int_equal(entry(1)->status, GM_SEL_LOW_MEMORY);
    assert_string_equal(entry(1)->reason, "needs >= 20480 MiB free");
    assert_int_equal(entry(2)->status, GM_SEL_BUSY);
    assert_string_equal(entry(2)->reason, "needs <= 10% util");
    assert_int_equal(entry(3)->status, GM_SEL_LOW_MEMORY);
    assert_string_equal(entry(3)->reason, "needs >= 20480 MiB free and <= 10% util");
    char list[16] = "x";
    gm_select_format_list(&res, list, sizeof list);
    assert_string_equal(list, "");

    char why[1024];
    gm_select_explain(&res, why, sizeof why);
    assert_string_equal(why, "need 2 GPUs with >= 20480 MiB free and <= 10% util; 1 qualifies "
                             "(GPU 0); best of the rest: GPU 2 (71680 MiB free, 11% util): needs "
                             "<= 10% util; GPU 1 (19968 MiB free, 0% util): needs >= 20480 MiB "
                             "free; GPU 3 (1024 MiB free, 99% util): needs >= 20480 MiB free and "
                             "<= 10% util");

    gm_select_shortfall(&res, why, sizeof why);
    assert_string_equal(why, "1 of 2 GPUs free (GPU 1: 19968 MiB free < 20480 MiB; GPU 2: 11% "
                             "util > 10%; GPU 3: 1024 MiB free < 20480 MiB, 99% util > 10%)");

    req.count = 1;
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    assert_true(res.satisfied);
    gm_select_explain(&res, why, sizeof why);
    assert_string_equal(why, "selected GPU 0 (score 0.510)");
    gm_select_shortfall(&res, why, sizeof why);
    assert_string_equal(why, "1 of 1 GPU free");
}

static void test_only_list_and_leases(void **state)
{
    reset();
    add_gpu(0, 80, 80, 0); /* 1.0 but not requested */
    add_gpu(1, 80, 60, 0); /* 0.85, leased by pid 4242 */
    add_gpu(2, 80, 40, 0); /* 0.70 */
    add_gpu(3, 80, 20, 0); /* 0.55 */
    unsigned only[] = {1, 2, 3};
    gm_lease_holder held[4] = {[1] = {.held = true, .pid = 4242}};
    gm_select_request req = {.count = 1, .only = only, .n_only = 3};
    assert_int_equal(gm_select(snap, &req, held, &res, NULL), GM_OK);
    assert_int_equal(res.selected[0], 2);
    assert_int_equal(entry(0)->status, GM_SEL_NOT_WANTED);
    assert_int_equal(entry(1)->status, GM_SEL_LEASED);
    assert_string_equal(entry(1)->reason, "leased by pid 4242");
    assert_true(entry(1)->leased);
    assert_int_equal(entry(1)->lease_pid, 4242);
    req.count = 3; /* GPU 0 is ruled out by the caller: not named */
    assert_int_equal(gm_select(snap, &req, held, &res, NULL), GM_OK);
    char why[256];
    gm_select_shortfall(&res, why, sizeof why);
    assert_string_equal(why, "2 of 3 GPUs free (GPU 1: leased by pid 4242)");
    req.count = 1;

    /* --ignore-leases: the leased GPU competes again but is still reported as leased. */
    req.ignore_leases = true;
    assert_int_equal(gm_select(snap, &req, held, &res, NULL), GM_OK);
    assert_int_equal(res.selected[0], 1);
    assert_true(entry(1)->leased);
    assert_int_equal(entry(1)->status, GM_SEL_SELECTED);

    /* Unknown pid. */
    held[1].pid = 0;
    req.ignore_leases = false;
    assert_int_equal(gm_select(snap, &req, held, &res, NULL), GM_OK);
    assert_string_equal(entry(1)->reason, "leased by another gpumon process");
}

static void test_visible_devices(void **state)
{
    reset();
    for (unsigned i = 0; i < 4; i++)
        add_gpu(i, 80, 80 - 10.0 * i, 0);
    bool vis[4];
    gm_select_visible(NULL, snap, vis);
    assert_true(vis[0] && vis[1] && vis[2] && vis[3]);
    gm_select_visible("3, 1", snap, vis);
    assert_true(!vis[0] && vis[1] && !vis[2] && vis[3]);
    gm_select_visible("", snap, vis);
    assert_true(!vis[0] && !vis[1] && !vis[2] && !vis[3]);
    gm_select_visible("-1", snap, vis);
    assert_true(!vis[0] && !vis[1] && !vis[2] && !vis[3]);
    /* CUDA stops at the first entry it cannot use. */
    gm_select_visible("2,7,0", snap, vis);
    assert_true(!vis[0] && !vis[1] && vis[2] && !vis[3]);
    gm_select_visible("1,MIG-abcd,0", snap, vis);
    assert_true(!vis[0] && vis[1] && !vis[2] && !vis[3]);
    /* UUIDs, whole or as a unique prefix, with or without "GPU-". */
    gm_select_visible("GPU-7e570000-0000-4000-8000-000000000003,7e570000-0000-4000-8000-00000000000"
                      "1",
                      snap, vis);
    assert_true(!vis[0] && vis[1] && !vis[2] && vis[3]);
    gm_select_visible("GPU-7e57,0", snap, vis); /* ambiguous: matches all four */
    assert_true(!vis[0] && !vis[1] && !vis[2] && !vis[3]);

    gm_select_request req = {.count = 1, .visible = "2,3"};
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    assert_int_equal(res.selected[0], 2);
    assert_int_equal(entry(0)->status, GM_SEL_HIDDEN);
    assert_string_equal(entry(0)->reason, "not in CUDA_VISIBLE_DEVICES");
    assert_true(res.visible_set);
    assert_string_equal(res.visible, "2,3");
    req.count = 3;
    assert_int_equal(gm_select(snap, &req, NULL, &res, NULL), GM_OK);
    assert_false(res.satisfied);
    char why[512];
    gm_select_explain(&res, why, sizeof why);
    assert_string_equal(why, "need 3 GPUs; 2 qualify (GPU 2, GPU 3); 2 GPUs not considered (-i "
                             "list or CUDA_VISIBLE_DEVICES)");
}

static void test_bad_requests(void **state)
{
    reset();
    add_gpu(0, 80, 80, 0);
    gm_error err = {0};
    gm_select_request req = {.count = 0};
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "count"));
    req.count = GM_MAX_GPUS + 1;
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_EINVAL);
    req.count = 1;
    req.min_free_mib = -1;
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_EINVAL);
    req.min_free_mib = 0;
    req.has_max_util = true;
    req.max_util_pct = strtod("nan", NULL);
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_EINVAL);

    /* More than exist: not an error, just not satisfied. */
    req = (gm_select_request){.count = 2};
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_OK);
    assert_false(res.satisfied);
    reset();
    req.count = 1;
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_OK);
    char why[256];
    gm_select_explain(&res, why, sizeof why);
    assert_string_equal(why, "need 1 GPU; no GPU was read");
}

static void test_json(void **state)
{
    reset();
    add_gpu(0, 80, 60, 25);
    add_gpu(1, 80, 80, -1);
    gm_gpu *l = add_gpu(2, 80, 80, 0);
    l->lost = true;
    snap->time_ms = 1764115372123;
    gm_lease_holder held[3] = {[1] = {.held = true, .pid = 77}};
    gm_select_request req = {.count = 1, .min_free_mib = 1000, .visible = "0,1,2"};
    assert_int_equal(gm_select(snap, &req, held, &res, NULL), GM_OK);
    json_t *j = gm_select_result_json(&res);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "satisfied")));
    assert_int_equal(json_integer_value(json_object_get(j, "count")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "min_free_mib")), 1000);
    assert_true(json_is_null(json_object_get(j, "max_util_percent")));
    assert_string_equal(json_string_value(json_object_get(j, "cuda_visible_devices")), "0,1,2");
    assert_string_equal(json_string_value(json_object_get(j, "selection")), "0");
    assert_true(json_is_null(json_object_get(j, "reason")));
    assert_string_equal(json_string_value(json_object_get(j, "time")), "2025-11-26T00:02:52.123Z");
    assert_string_equal(json_string_value(json_object_get(j, "provider")), "test");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "indices"), 0)), 0);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "uuids"), 0)),
                        "GPU-7e570000-0000-4000-8000-000000000000");
    json_t *gpus = json_object_get(j, "gpus");
    assert_int_equal(json_array_size(gpus), 3);
    json_t *g0 = json_array_get(gpus, 0);
    assert_string_equal(json_string_value(json_object_get(g0, "status")), "selected");
    assert_float_equal(json_number_value(json_object_get(g0, "availability_score")), 0.75, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(g0, "memory_free_mib")), 61440);
    assert_int_equal(json_integer_value(json_object_get(g0, "memory_total_mib")), 81920);
    assert_int_equal(json_integer_value(json_object_get(g0, "utilization_percent")), 25);
    assert_true(json_is_null(json_object_get(g0, "leased_by_pid")));
    json_t *g1 = json_array_get(gpus, 1);
    assert_string_equal(json_string_value(json_object_get(g1, "status")), "unscorable");
    assert_true(json_is_null(json_object_get(g1, "utilization_percent")));
    assert_true(json_is_null(json_object_get(g1, "availability_score")));
    assert_true(json_is_true(json_object_get(g1, "leased")));
    assert_int_equal(json_integer_value(json_object_get(g1, "leased_by_pid")), 77);
    json_t *g2 = json_array_get(gpus, 2);
    assert_string_equal(json_string_value(json_object_get(g2, "status")), "lost");
    assert_true(json_is_null(json_object_get(g2, "memory_free_mib")));
    json_decref(j);

    req.count = 2;
    assert_int_equal(gm_select(snap, &req, held, &res, NULL), GM_OK);
    j = gm_select_result_json(&res);
    assert_true(json_is_false(json_object_get(j, "satisfied")));
    assert_string_equal(json_string_value(json_object_get(j, "selection")), "");
    assert_int_equal(json_array_size(json_object_get(j, "indices")), 0);
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "need 2 GPUs"));
    json_decref(j);
}

/* ---- gm_wait_for against the fake NVML ---------------------------------------------------- */

/* Adds a MIG device to g: total/used in GiB; sm < 0 leaves its GPM SM activity absent. */
static gm_mig_device *add_mig(gm_gpu *g, const char *profile, unsigned gi, double total_gib,
                              double used_gib, double sm)
{
    gm_mig_device *m = &g->mig[g->mig_count++];
    memset(m, 0, sizeof *m);
    snprintf(m->uuid, sizeof m->uuid, "MIG-7e570000-0000-5000-8000-%06u%06u", g->index, gi);
    snprintf(m->profile, sizeof m->profile, "%s", profile);
    m->gpu_instance_id = gi;
    m->mem_valid = true;
    m->mem_total_bytes = (uint64_t)(total_gib * GIB);
    m->mem_used_bytes = (uint64_t)(used_gib * GIB);
    m->mem_free_bytes = m->mem_total_bytes - m->mem_used_bytes;
    if (sm >= 0) {
        m->prof_valid |= 1u << GM_MIG_PROF_SM_ACTIVE;
        m->prof_pct[GM_MIG_PROF_SM_ACTIVE] = sm;
    }
    return m;
}

static void add_proc(unsigned gpu, uint32_t pid, unsigned gi)
{
    gm_process *p = &snap->procs[snap->proc_count++];
    memset(p, 0, sizeof *p);
    p->gpu_index = gpu;
    p->pid = pid;
    p->instance_known = true;
    p->gpu_instance_id = gi;
}

static void test_mig_score(void **state)
{
    reset();
    gm_gpu *g = add_gpu(0, 80, 40, -1);
    double s = -1;
    /* 8 of 10 GiB free, no GPM, nothing running: 0.6 x 0.8 + 0.4 = 0.88; a process in it
     * makes its idle part 0: 0.48. With GPM's 25% SM activity: 0.48 + 0.4 x 0.75 = 0.78. */
    gm_mig_device *m = add_mig(g, "1g.10gb", 7, 10, 2, -1);
    assert_true(gm_select_score_mig(m, false, &s));
    assert_float_equal(s, 0.88, 1e-9);
    assert_true(gm_select_score_mig(m, true, &s));
    assert_float_equal(s, 0.48, 1e-9);
    m = add_mig(g, "1g.10gb", 8, 10, 2, 25);
    assert_true(gm_select_score_mig(m, false, &s));
    assert_float_equal(s, 0.78, 1e-9);
    m->mem_valid = false;
    s = -1;
    assert_false(gm_select_score_mig(m, false, &s));
    assert_float_equal(s, -1, 0);
}

/* MIG devices as units: free ones ranked by score, busy ones (a process, memory used, SM
 * activity over --max-util) and low-memory ones excluded with reasons naming the device and
 * its GPU; the env names them by UUID; no MIG device at all is an error. */
static void test_mig_select(void **state)
{
    reset();
    gm_select_request req = {.count = 1, .mig = true};
    gm_error err = {0};
    add_gpu(0, 80, 80, 0);
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_ENODEV);
    assert_non_null(strstr(err.msg, "no GPU is in MIG mode"));

    reset();
    gm_gpu *g0 = add_gpu(0, 80, 40, -1);
    add_mig(g0, "3g.40gb", 2, 40, 12, -1);   /* MIG 0: process 5001 runs in it */
    add_mig(g0, "1g.10gb", 7, 10, 3, -1);    /* MIG 1: 30% used, no process listed */
    add_mig(g0, "1g.10gb", 8, 10, 0.01, -1); /* MIG 2: free, 0.6 x 0.999 + 0.4 */
    gm_gpu *g1 = add_gpu(1, 80, 80, -1);
    add_mig(g1, "2g.20gb", 3, 20, 0.01, 50); /* MIG 3: free, half busy per GPM */
    add_mig(g1, "1g.10gb", 9, 10, 0.001, 0); /* MIG 4: free, idle */
    add_proc(0, 5001, 2);
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_OK);
    assert_int_equal(res.n_gpus, 5);
    assert_true(res.satisfied);
    assert_int_equal(res.n_eligible, 3);
    assert_int_equal(res.selected[0], 4); /* best: empty and idle */
    assert_true(entry(4)->mig);
    assert_int_equal(entry(4)->gpu_index, 1);
    assert_string_equal(entry(4)->profile, "1g.10gb");
    assert_int_equal(entry(0)->status, GM_SEL_BUSY);
    assert_string_equal(entry(0)->reason, "process 5001 runs in it");
    assert_int_equal(entry(1)->status, GM_SEL_BUSY);
    assert_non_null(strstr(entry(1)->reason, "used with no process listed"));
    assert_int_equal(entry(2)->status, GM_SEL_AVAILABLE);
    assert_int_equal(entry(3)->status, GM_SEL_AVAILABLE);
    assert_true(entry(3)->has_util);
    assert_float_equal(entry(3)->util_pct, 50, 0);
    assert_false(entry(2)->has_util); /* no GPM: no utilization, never 0 */

    gm_select_env env;
    gm_select_format_env(&res, &env);
    assert_true(env.has_cuda);
    assert_string_equal(env.cuda, "MIG-7e570000-0000-5000-8000-000001000009");
    char list[4096];
    gm_select_format_list(&res, list, sizeof list);
    assert_string_equal(list, env.cuda);

    /* --max-util applies where GPM gives SM activity; --min-free-mb to the device's memory. */
    req.count = 3;
    req.has_max_util = true;
    req.max_util_pct = 10;
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_OK);
    assert_false(res.satisfied);
    assert_int_equal(entry(3)->status, GM_SEL_BUSY);
    assert_int_equal(entry(2)->status, GM_SEL_AVAILABLE);
    char why[2048];
    gm_select_explain(&res, why, sizeof why);
    assert_non_null(strstr(why, "need 3 MIG devices"));
    assert_non_null(strstr(why, "MIG device 2g.20gb GI 3 on GPU 1"));
    assert_non_null(strstr(why, "MIG device 3g.40gb GI 2 on GPU 0"));
    gm_select_shortfall(&res, why, sizeof why);
    assert_non_null(strstr(why, "2 of 3 MIG devices free"));
    req.has_max_util = false;
    req.count = 1;
    req.min_free_mib = 15 * 1024;
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_OK);
    assert_int_equal(res.selected[0], 3); /* only the 2g.20gb has 15 GiB free */
    assert_int_equal(entry(4)->status, GM_SEL_LOW_MEMORY);

    /* Leases: one on a MIG device, one on its whole GPU (indirect). */
    req.min_free_mib = 0;
    gm_lease_holder lh[5] = {{0}};
    lh[4] = (gm_lease_holder){.held = true, .pid = 4242};
    lh[2] = (gm_lease_holder){.held = true, .pid = 99, .indirect = true};
    assert_int_equal(gm_select(snap, &req, lh, &res, &err), GM_OK);
    assert_int_equal(res.selected[0], 3);
    assert_string_equal(entry(4)->reason, "leased by pid 4242");
    assert_string_equal(entry(2)->reason, "its GPU is leased whole by pid 99");

    /* -i names GPUs: only GPU 0's MIG devices. CUDA_VISIBLE_DEVICES may name a MIG UUID. */
    unsigned only[] = {0};
    gm_select_request r2 = {.count = 1, .mig = true, .only = only, .n_only = 1};
    assert_int_equal(gm_select(snap, &r2, NULL, &res, &err), GM_OK);
    assert_int_equal(res.selected[0], 2);
    assert_int_equal(entry(4)->status, GM_SEL_NOT_WANTED);
    gm_select_request r3 = {
        .count = 1, .mig = true, .visible = "MIG-7e570000-0000-5000-8000-000000000008"};
    assert_int_equal(gm_select(snap, &r3, NULL, &res, &err), GM_OK);
    assert_int_equal(res.selected[0], 2);
    assert_int_equal(entry(3)->status, GM_SEL_HIDDEN);

    json_t *j = gm_select_result_json(&res);
    assert_true(json_is_true(json_object_get(j, "mig")));
    json_t *u = json_array_get(json_object_get(j, "uuids"), 0);
    assert_string_equal(json_string_value(u), "MIG-7e570000-0000-5000-8000-000000000008");
    json_decref(j);
}

/* Without --mig a GPU in MIG mode is not handed out whole while one of its MIG devices is
 * busy or leased. */
static void test_mig_gpu_whole(void **state)
{
    reset();
    gm_gpu *g0 = add_gpu(0, 80, 70, 0);
    add_mig(g0, "1g.10gb", 7, 10, 2, -1);
    add_gpu(1, 80, 60, 0);
    gm_select_request req = {.count = 1};
    gm_error err = {0};
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_OK);
    assert_int_equal(res.selected[0], 0);
    add_proc(0, 777, 7);
    assert_int_equal(gm_select(snap, &req, NULL, &res, &err), GM_OK);
    assert_int_equal(res.selected[0], 1);
    assert_int_equal(entry(0)->status, GM_SEL_BUSY);
    assert_string_equal(entry(0)->reason, "process 777 runs in a MIG device of it");
    snap->proc_count = 0;
    gm_lease_holder lh[2] = {{.held = true, .pid = 31, .indirect = true}, {0}};
    assert_int_equal(gm_select(snap, &req, lh, &res, &err), GM_OK);
    assert_int_equal(res.selected[0], 1);
    assert_string_equal(entry(0)->reason, "a MIG device of it is leased by pid 31");
}

static gm_collector *open_fake(const char *scenario)
{
    const char *lib = getenv("GM_FAKE_NVML"), *fx = getenv("GM_FIXTURES");
    if (!lib || !fx) {
        fail_msg("GM_FAKE_NVML / GM_FIXTURES not set (run through ctest)");
        return NULL;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/select/%s", fx, scenario);
    setenv("GM_FAKE_NVML_SCENARIO", path, 1);
    gm_collector_options o = {
        .provider = "nvml", .nvml_lib = lib, .no_host = true, .no_processes = true};
    gm_collector *c = NULL;
    gm_error err = {0};
    if (gm_collector_open(&o, &c, &err) < 0)
        fail_msg("open: %s", err.msg);
    return c;
}

typedef struct progress_log {
    unsigned checks;
    unsigned cancel_at;
    volatile sig_atomic_t *cancel;
} progress_log;

static void on_progress(const gm_select_result *r, unsigned check, void *ud)
{
    progress_log *p = ud;
    p->checks = check;
    if (p->cancel_at && check >= p->cancel_at)
        *p->cancel = 1;
}

static void test_wait_becomes_free(void **state)
{
    gm_collector *c = open_fake("becomes_free.json");
    /* GPU 0 is full and busy for reads 0-2 and free from read 3: the 4th check succeeds. */
    gm_select_request req = {
        .count = 1, .min_free_mib = 10000, .has_max_util = true, .max_util_pct = 50};
    progress_log log = {0};
    gm_wait_options wo = {
        .timeout_s = 30, .interval_s = 0.01, .progress = on_progress, .progress_ud = &log};
    gm_error err = {0};
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_OK);
    assert_int_equal(log.checks, 4);
    assert_true(res.satisfied);
    assert_int_equal(res.selected[0], 0);
    assert_int_equal(entry(0)->util_pct, 5);
    gm_collector_close(c);
}

static void test_wait_times_out(void **state)
{
    gm_collector *c = open_fake("four_gpus.json");
    gm_select_request req = {.count = 4, .min_free_mib = 30000};
    progress_log log = {0};
    gm_wait_options wo = {
        .timeout_s = 0.2, .interval_s = 0.05, .progress = on_progress, .progress_ud = &log};
    gm_error err = {0};
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_ETIMEDOUT);
    assert_false(res.satisfied);
    /* A check at 0, 0.05, 0.10, 0.15 and the last one at the deadline (fewer on a slow
     * machine, never more). */
    assert_true(log.checks >= 1 && log.checks <= 5);
    assert_string_equal(err.msg,
                        "timed out after 0.2s: need 4 GPUs with >= 30000 MiB free; 3 qualify (GPU "
                        "0, GPU 3, GPU 2); best of the rest: GPU 1 (20480 MiB free, 0% util): "
                        "needs >= 30000 MiB free");

    /* Timeout 0: exactly one check. */
    log.checks = 0;
    wo.timeout_s = 0;
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_ETIMEDOUT);
    assert_int_equal(log.checks, 1);
    gm_collector_close(c);
}

static void test_wait_cancel_and_bad_options(void **state)
{
    gm_collector *c = open_fake("four_gpus.json");
    gm_select_request req = {.count = 4, .min_free_mib = 30000};
    volatile sig_atomic_t cancel = 0;
    progress_log log = {.cancel_at = 2, .cancel = &cancel};
    /* A long interval: the cancel set during check 2... */
    gm_wait_options wo = {.timeout_s = 600,
                          .interval_s = 0.01,
                          .cancel = &cancel,
                          .progress = on_progress,
                          .progress_ud = &log};
    gm_error err = {0};
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_ECANCELED);
    assert_string_equal(err.msg, "cancelled");
    assert_int_equal(log.checks, 2);
    /* ...and one already set stops before any check. */
    log.checks = 0;
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_ECANCELED);
    assert_int_equal(log.checks, 0);

    cancel = 0;
    wo.interval_s = 0;
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_EINVAL);
    wo.interval_s = 1;
    wo.timeout_s = -1;
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_EINVAL);
    wo.timeout_s = 1;
    wo.take_lease = true; /* without somewhere to put it */
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, NULL, &err), GM_EINVAL);
    gm_collector_close(c);
}

static void test_wait_takes_lease(void **state)
{
    gm_collector *c = open_fake("four_gpus.json");
    char dir[] = "/tmp/gm-test-select-XXXXXX";
    assert_non_null(mkdtemp(dir));
    gm_select_request req = {.count = 2};
    gm_wait_options wo = {.timeout_s = 0, .interval_s = 1, .lease_dir = dir, .take_lease = true};
    gm_lease *first = NULL, *second = NULL;
    gm_error err = {0};
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, &first, &err), GM_OK);
    assert_int_equal(gm_lease_count(first), 2);
    unsigned held[4];
    assert_int_equal(gm_lease_indices(first, held, 4), 2);
    assert_int_equal(held[0], 0);
    assert_int_equal(held[1], 3);
    assert_int_equal(res.selected[0], 0);
    assert_int_equal(res.selected[1], 3);

    /* A second job gets the next best two: our own lease excludes 0 and 3. */
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, &second, &err), GM_OK);
    assert_int_equal(gm_lease_indices(second, held, 4), 2);
    assert_int_equal(held[0], 1);
    assert_int_equal(held[1], 2);
    assert_int_equal(entry(0)->status, GM_SEL_LEASED);
    assert_int_equal(entry(0)->lease_pid, getpid());

    /* A third finds nothing and times out naming the leases; it holds nothing. */
    gm_lease *third = (gm_lease *)&err; /* must be reset to NULL */
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, &third, &err), GM_ETIMEDOUT);
    assert_null(third);
    assert_non_null(strstr(err.msg, "leased by pid"));

    gm_lease_release(first);
    assert_int_equal(gm_wait_for(c, &req, &wo, snap, &res, &third, &err), GM_OK);
    assert_int_equal(gm_lease_indices(third, held, 4), 2);
    assert_int_equal(held[0], 0);
    assert_int_equal(held[1], 3);
    gm_lease_release(second);
    gm_lease_release(third);
    gm_collector_close(c);

    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_score_hand_computed),
        cmocka_unit_test(test_unscorable),
        cmocka_unit_test(test_rank_ties_and_order),
        cmocka_unit_test(test_thresholds_inclusive),
        cmocka_unit_test(test_only_list_and_leases),
        cmocka_unit_test(test_visible_devices),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_wait_becomes_free),
        cmocka_unit_test(test_wait_times_out),
        cmocka_unit_test(test_wait_cancel_and_bad_options),
        cmocka_unit_test(test_wait_takes_lease),
        cmocka_unit_test(test_mig_score),
        cmocka_unit_test(test_mig_select),
        cmocka_unit_test(test_mig_gpu_whole),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
