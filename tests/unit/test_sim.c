/* test_sim.c - collect/sim: simulated GPUs are the same for the same seed (everything but the
 * energy counter, which integrates over real elapsed time), as many as asked up to
 * GM_MAX_GPUS, physically plausible at every sample, labelled as simulated, with processes
 * whose PIDs no real process can have; and the same through the collector. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/provider.h"

/* Linux's largest possible pid_max (PID_MAX_LIMIT on 64-bit kernels, 2^22). */
#define LINUX_PID_MAX_LIMIT 4194304u

#define SAMPLES 200

static void *open_sim_varied(unsigned n, uint64_t seed, uint64_t vary)
{
    gm_collector_options opt = {.simulate = n, .seed = seed, .sim_vary = vary};
    void *st = NULL;
    gm_error err = {0};
    if (gm_provider_sim.open(&opt, &st, &err) != GM_OK)
        fail_msg("sim open: %s", err.msg);
    assert_non_null(st);
    return st;
}

static void *open_sim(unsigned n, uint64_t seed)
{
    return open_sim_varied(n, seed, 0);
}

static void sample(void *st, gm_snapshot *s, bool procs)
{
    gm_error err = {0};
    gm_snapshot_reset(s);
    if (gm_provider_sim.sample(st, s, procs, &err) != GM_OK)
        fail_msg("sim sample: %s", err.msg);
}

static double v(const gm_gpu *g, gm_metric m)
{
    if (!gm_gpu_has(g, m))
        fail_msg("GPU %u: %s absent", g->index, gm_metric_get(m)->name);
    return g->v[m];
}

static void test_gpu_count(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    static const unsigned counts[] = {1, 3, 8, 16, GM_MAX_GPUS};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        void *st = open_sim(counts[i], 1);
        sample(st, s, true);
        assert_int_equal(s->gpu_count, counts[i]);
        for (unsigned k = 0; k < s->gpu_count; k++)
            assert_int_equal(s->gpus[k].index, k);
        gm_provider_sim.close(st);
    }
    /* No count: four, the demo's number. */
    void *st = open_sim(0, 1);
    sample(st, s, false);
    assert_int_equal(s->gpu_count, 4);
    gm_provider_sim.close(st);
    /* More than a snapshot holds: refused, saying the limit. */
    gm_collector_options opt = {.simulate = GM_MAX_GPUS + 1};
    gm_error err = {0};
    st = NULL;
    assert_int_equal(gm_provider_sim.open(&opt, &st, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "at most 64"));
    gm_snapshot_free(s);
}

/* Everything of one sample but the energy counter (which follows the real clock). */
static void assert_same_sample(const gm_snapshot *a, const gm_snapshot *b, int k)
{
    assert_int_equal(a->gpu_count, b->gpu_count);
    for (unsigned i = 0; i < a->gpu_count; i++) {
        const gm_gpu *x = &a->gpus[i], *y = &b->gpus[i];
        assert_string_equal(x->name, y->name);
        assert_string_equal(x->uuid, y->uuid);
        assert_string_equal(x->pci_bus_id, y->pci_bus_id);
        assert_memory_equal(x->valid, y->valid, sizeof x->valid);
        for (int m = 0; m < GM_M__COUNT; m++)
            if (m != GM_M_ENERGY_MJ && gm_gpu_has(x, (gm_metric)m) && x->v[m] != y->v[m])
                fail_msg("sample %d GPU %u %s: %g vs %g", k, i, gm_metric_get((gm_metric)m)->name,
                         x->v[m], y->v[m]);
    }
    assert_int_equal(a->proc_count, b->proc_count);
    for (size_t p = 0; p < a->proc_count; p++) {
        assert_int_equal(a->procs[p].pid, b->procs[p].pid);
        assert_int_equal(a->procs[p].gpu_index, b->procs[p].gpu_index);
        assert_int_equal(a->procs[p].used_mem_bytes, b->procs[p].used_mem_bytes);
        assert_string_equal(a->procs[p].command, b->procs[p].command);
    }
}

static void test_deterministic_for_a_seed(void **state)
{
    (void)state;
    void *a = open_sim(12, 7), *b = open_sim(12, 7), *c = open_sim(12, 8);
    gm_snapshot *sa = gm_snapshot_new(), *sb = gm_snapshot_new(), *sc = gm_snapshot_new();
    bool differs = false;
    for (int k = 0; k < SAMPLES; k++) {
        sample(a, sa, true);
        sample(b, sb, true);
        sample(c, sc, true);
        assert_same_sample(sa, sb, k);
        for (unsigned i = 0; i < sa->gpu_count; i++)
            differs |= sa->gpus[i].v[GM_M_UTIL_GPU_PCT] != sc->gpus[i].v[GM_M_UTIL_GPU_PCT];
    }
    /* Another seed is another run. */
    assert_true(differs);
    assert_string_not_equal(sa->gpus[0].uuid, sc->gpus[0].uuid);
    gm_provider_sim.close(a);
    gm_provider_sim.close(b);
    gm_provider_sim.close(c);
    gm_snapshot_free(sa);
    gm_snapshot_free(sb);
    gm_snapshot_free(sc);
}

/* sim_vary (what one-shot commands set from the clock): the same GPUs, models and UUIDs,
 * reading otherwise from the first sample on; the same sim_vary, the same readings. */
static void test_varied_start(void **state)
{
    (void)state;
    void *a = open_sim_varied(8, 7, 0), *b = open_sim_varied(8, 7, 1764259200123),
         *c = open_sim_varied(8, 7, 1764259200123);
    gm_snapshot *sa = gm_snapshot_new(), *sb = gm_snapshot_new(), *sc = gm_snapshot_new();
    sample(a, sa, true);
    sample(b, sb, true);
    sample(c, sc, true);
    assert_same_sample(sb, sc, 0);
    assert_int_equal(sa->gpu_count, sb->gpu_count);
    unsigned differ = 0;
    for (unsigned i = 0; i < sa->gpu_count; i++) {
        assert_string_equal(sa->gpus[i].name, sb->gpus[i].name);
        assert_string_equal(sa->gpus[i].uuid, sb->gpus[i].uuid);
        static const gm_metric moving[] = {GM_M_UTIL_GPU_PCT, GM_M_MEM_USED_BYTES, GM_M_TEMP_C,
                                           GM_M_POWER_MW};
        for (size_t m = 0; m < sizeof moving / sizeof *moving; m++)
            differ += v(&sa->gpus[i], moving[m]) != v(&sb->gpus[i], moving[m]);
    }
    check_gt(differ, 0);
    gm_provider_sim.close(a);
    gm_provider_sim.close(b);
    gm_provider_sim.close(c);
    gm_snapshot_free(sa);
    gm_snapshot_free(sb);
    gm_snapshot_free(sc);
}

static void check_physical(const gm_snapshot *s, double *last_energy)
{
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gm_gpu *g = &s->gpus[i];
        assert_false(g->lost);
        double util = v(g, GM_M_UTIL_GPU_PCT);
        check_ge(util, 0);
        check_le(util, 100);
        check_eq(util, round(util));
        check_ge(v(g, GM_M_UTIL_MEM_PCT), 0);
        check_le(v(g, GM_M_UTIL_MEM_PCT), 100);
        check_ge(v(g, GM_M_UTIL_DEC_PCT), 0);
        check_le(v(g, GM_M_UTIL_DEC_PCT), 100);
        double total = v(g, GM_M_MEM_TOTAL_BYTES), used = v(g, GM_M_MEM_USED_BYTES);
        double freeb = v(g, GM_M_MEM_FREE_BYTES), res = v(g, GM_M_MEM_RESERVED_BYTES);
        check_gt(total, 0);
        check_ge(used, 0);
        check_ge(freeb, 0);
        check_ge(res, 0);
        check_lt(fabs(used + freeb + res - total), 1); /* the three parts make the total */
        double temp = v(g, GM_M_TEMP_C);
        check_ge(temp, 20);
        check_le(temp, 95);
        double power = v(g, GM_M_POWER_MW), limit = v(g, GM_M_POWER_LIMIT_MW);
        check_gt(power, 0);
        check_le(power, limit);
        double energy = v(g, GM_M_ENERGY_MJ);
        check_ge(energy, last_energy[i]); /* a counter never goes back */
        last_energy[i] = energy;
        check_le(v(g, GM_M_CLOCK_SM_MHZ), v(g, GM_M_CLOCK_MAX_SM_MHZ));
        check_le(v(g, GM_M_CLOCK_GR_MHZ), v(g, GM_M_CLOCK_MAX_GR_MHZ));
        check_le(v(g, GM_M_CLOCK_MEM_MHZ), v(g, GM_M_CLOCK_MAX_MEM_MHZ));
        check_gt(v(g, GM_M_CLOCK_SM_MHZ), 0);
        check_ge(v(g, GM_M_PCIE_GEN_CUR), 1);
        check_le(v(g, GM_M_PCIE_GEN_CUR), v(g, GM_M_PCIE_GEN_MAX));
        check_le(v(g, GM_M_PCIE_WIDTH_CUR), v(g, GM_M_PCIE_WIDTH_MAX));
        check_ge(v(g, GM_M_PCIE_TX_KBPS), 0);
        check_ge(v(g, GM_M_PCIE_RX_KBPS), 0);
        double pstate = v(g, GM_M_PSTATE);
        check_ge(pstate, 0);
        check_le(pstate, 15);
        assert_true(v(g, GM_M_PERSISTENCE_MODE) == 0 || v(g, GM_M_PERSISTENCE_MODE) == 1);
        /* Data-centre boards have no fan: absent, never a made-up 0. */
        bool geforce = strstr(g->name, "GeForce") != NULL;
        assert_int_equal(gm_gpu_has(g, GM_M_FAN_PCT), geforce);
        if (geforce)
            assert_true(v(g, GM_M_FAN_PCT) >= 0 && v(g, GM_M_FAN_PCT) <= 100);
    }
    for (size_t p = 0; p < s->proc_count; p++) {
        const gm_process *pr = &s->procs[p];
        check_lt(pr->gpu_index, s->gpu_count);
        assert_true(pr->mem_valid);
        check_le((double)pr->used_mem_bytes, s->gpus[pr->gpu_index].v[GM_M_MEM_USED_BYTES]);
    }
}

static void test_values_within_physical_ranges(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    /* Several seeds, so every model (H100, A100, L4, RTX 4090) and a mixed box are seen. */
    for (uint64_t seed = 0; seed < 5; seed++) {
        void *st = open_sim(17, seed);
        double energy[GM_MAX_GPUS] = {0};
        for (int k = 0; k < SAMPLES; k++) {
            sample(st, s, true);
            check_physical(s, energy);
        }
        gm_provider_sim.close(st);
    }
    gm_snapshot_free(s);
}

static void test_identity_and_labels(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    void *st = open_sim(GM_MAX_GPUS, 3);
    sample(st, s, true);
    /* Never mistaken for real hardware. */
    assert_non_null(strstr(s->driver_version, "sim"));
    assert_non_null(strstr(s->nvml_version, "sim"));
    assert_string_equal(s->cuda_version, "12.4");
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gm_gpu *g = &s->gpus[i];
        assert_non_null(strstr(g->name, "(simulated)"));
        assert_int_equal(strncmp(g->uuid, "GPU-", 4), 0);
        assert_int_equal(strlen(g->pci_bus_id), 16); /* 00000000:18:00.0 */
        /* Each GPU is its own device: no UUID or bus id is shared. */
        for (unsigned k = 0; k < i; k++) {
            if (strcmp(s->gpus[k].uuid, g->uuid) == 0)
                fail_msg("GPUs %u and %u share UUID %s", k, i, g->uuid);
            if (strcmp(s->gpus[k].pci_bus_id, g->pci_bus_id) == 0)
                fail_msg("GPUs %u and %u share bus id %s", k, i, g->pci_bus_id);
        }
    }
    gm_provider_sim.close(st);
    gm_snapshot_free(s);
}

static void test_processes(void **state)
{
    (void)state;
    gm_snapshot *s = gm_snapshot_new();
    void *st = open_sim(GM_MAX_GPUS, 11);
    size_t seen = 0;
    for (int k = 0; k < SAMPLES; k++) {
        sample(st, s, true);
        seen += s->proc_count;
        for (size_t p = 0; p < s->proc_count; p++) {
            const gm_process *pr = &s->procs[p];
            /* Above any pid_max Linux allows: a simulated PID never names a real process. */
            check_gt(pr->pid, LINUX_PID_MAX_LIMIT);
            assert_int_equal(pr->type, GM_PROC_COMPUTE);
            assert_string_equal(pr->user, "sim");
            assert_non_null(strstr(pr->command, "--simulated"));
            for (size_t q = 0; q < p; q++)
                assert_int_not_equal(s->procs[q].pid, pr->pid);
        }
    }
    check_gt(seen, 0); /* some phase runs work */
    /* Without processes: none, the GPUs as before. */
    sample(st, s, false);
    assert_int_equal(s->proc_count, 0);
    assert_int_equal(s->gpu_count, GM_MAX_GPUS);
    gm_provider_sim.close(st);
    gm_snapshot_free(s);
}

/* Driven by a benchmark: idle (idle power, no utilisation) until loaded, the load followed
 * within a few samples, back to idle when it stops; one steady server process per GPU. */
static double mean_of(void *st, gm_snapshot *s, int n, gm_metric m, unsigned gpus)
{
    double sum = 0;
    for (int k = 0; k < n; k++) {
        sample(st, s, true);
        assert_int_equal(s->proc_count, gpus);
        for (unsigned i = 0; i < gpus; i++) {
            sum += v(&s->gpus[i], m);
            assert_string_equal(s->procs[i].command, "python serve.py --simulated");
        }
    }
    return sum / n / gpus;
}

static void test_driven_by_a_load(void **state)
{
    (void)state;
    double load = 0;
    gm_collector_options opt = {.simulate = 2, .seed = 0, .sim_load = &load};
    void *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_provider_sim.open(&opt, &st, &err), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    /* Seed 0: H100s, 70 W idle, 700 W limit. Idle for a long while: no phase of its own. */
    for (int k = 0; k < SAMPLES; k++) {
        sample(st, s, true);
        for (unsigned i = 0; i < 2; i++) {
            check_eq(v(&s->gpus[i], GM_M_UTIL_GPU_PCT), 0);
            check_eq(v(&s->gpus[i], GM_M_POWER_MW), 70000);
        }
    }
    uint32_t pid0 = s->procs[0].pid;
    load = 0.9;
    sample(st, s, true);
    sample(st, s, true);
    sample(st, s, true);
    double util = mean_of(st, s, 50, GM_M_UTIL_GPU_PCT, 2);
    check_gt(util, 80);
    check_lt(util, 100);
    sample(st, s, true);
    check_gt(v(&s->gpus[0], GM_M_POWER_MW), 400000);
    assert_int_equal(s->procs[0].pid, pid0); /* the same server throughout */
    load = 0;
    for (int k = 0; k < 20; k++)
        sample(st, s, true);
    check_eq(mean_of(st, s, 10, GM_M_POWER_MW, 2), 70000);
    gm_provider_sim.close(st);
    gm_snapshot_free(s);
}

static void test_p2p_islands(void **state)
{
    (void)state;
    void *st = open_sim(16, 0);
    gm_p2p_status out;
    gm_error err = {0};
    /* NVLink islands of eight, as on HGX boards; PCIe reads and writes work everywhere. */
    assert_int_equal(gm_provider_sim.p2p(st, 0, 7, GM_P2P_NVLINK, &out, &err), GM_OK);
    assert_int_equal(out, GM_P2P_OK);
    assert_int_equal(gm_provider_sim.p2p(st, 0, 8, GM_P2P_NVLINK, &out, &err), GM_OK);
    assert_int_equal(out, GM_P2P_NOT_SUPPORTED);
    assert_int_equal(gm_provider_sim.p2p(st, 9, 15, GM_P2P_ATOMICS, &out, &err), GM_OK);
    assert_int_equal(out, GM_P2P_OK);
    assert_int_equal(gm_provider_sim.p2p(st, 15, 1, GM_P2P_ATOMICS, &out, &err), GM_OK);
    assert_int_equal(out, GM_P2P_CHIPSET_NOT_SUPPORTED);
    assert_int_equal(gm_provider_sim.p2p(st, 3, 12, GM_P2P_READ, &out, &err), GM_OK);
    assert_int_equal(out, GM_P2P_OK);
    /* No such GPU. */
    assert_int_equal(gm_provider_sim.p2p(st, 0, 16, GM_P2P_READ, &out, &err), GM_EINVAL);
    assert_non_null(strstr(err.msg, "0,16"));
    gm_provider_sim.close(st);
}

static void test_through_the_collector(void **state)
{
    (void)state;
    /* --simulate wins over a forced provider. */
    gm_collector_options opt = {
        .provider = "nvml", .simulate = 3, .seed = 5, .no_host = true, .no_first_cpu_wait = true};
    gm_collector *c = NULL;
    gm_error err = {0};
    assert_int_equal(gm_collector_open(&opt, &c, &err), GM_OK);
    assert_string_equal(gm_collector_provider(c), "sim");
    assert_string_equal(gm_collector_diagnosis(c), "");
    gm_snapshot *s = gm_snapshot_new();
    for (uint64_t k = 1; k <= 3; k++) {
        assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
        assert_int_equal(s->seq, k);
        assert_string_equal(s->provider, "sim");
        assert_int_equal(s->gpu_count, 3);
    }
    /* The collector leaves the simulator's own process details alone. */
    for (size_t p = 0; p < s->proc_count; p++)
        assert_string_equal(s->procs[p].user, "sim");
    gm_topology *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_int_equal(gm_collector_topology(c, t, &err), GM_OK);
    assert_true(t->known);
    assert_int_equal(t->gpu_count, 3);
    assert_int_equal(t->p2p[0][2][GM_P2P_NVLINK], GM_P2P_OK);
    free(t);
    gm_collector_close(c);

    /* The provider by name, with the default count. */
    gm_collector_options named = {.provider = "sim", .no_host = true};
    assert_int_equal(gm_collector_open(&named, &c, &err), GM_OK);
    assert_int_equal(gm_collector_sample(c, s, &err), GM_OK);
    assert_int_equal(s->gpu_count, 4);
    gm_collector_close(c);
    gm_snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_count),
        cmocka_unit_test(test_deterministic_for_a_seed),
        cmocka_unit_test(test_varied_start),
        cmocka_unit_test(test_values_within_physical_ranges),
        cmocka_unit_test(test_identity_and_labels),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_driven_by_a_load),
        cmocka_unit_test(test_p2p_islands),
        cmocka_unit_test(test_through_the_collector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
