/* test_rocm_smi.c - the rocm_smi provider against the fake librocm_smi64.so.1
 * (tests/fakes/fake_rocm_smi.c) in its ROCm 6 and ROCm 5 builds: every reading of an MI300X
 * and a Radeon PRO W7900, what a call answers NOT_SUPPORTED for absent, processes with their
 * VRAM per GPU, a GPU that disappears, init failures, and one rsmi_init per process. */
#include "amd_checks.h" /* and cmocka */

static const amd_lib L = {
    .provider = &gm_provider_rocm_smi,
    .fake_env = "GM_FAKE_RSMI",
    .lib_var = "GPU_MONITOR_ROCM_SMI_LIB",
    .scenario_var = "GM_FAKE_RSMI_SCENARIO",
    .fixtures = "rocm_smi",
    .init_failed = "rsmi_init failed: RSMI_STATUS_INIT_ERROR",
    .lost = "rsmi_dev_busy_percent_get: RSMI_STATUS_FILE_ERROR: Problem accessing a file (3)",
    .hooks = "rsmi",
};

/* Both builds read the same GPUs: only the process VRAM and socket power differ. */
static void check_gpus(const gm_snapshot *s, bool rocm6)
{
    amd_check_two_gpus(s);
    const gm_gpu *mi = &s->gpus[0], *w = &s->gpus[1];
    assert_string_equal(mi->uuid, "5f2c7a31b4e0d001");
    assert_string_equal(mi->vbios, "113-M3000100-102");
    assert_metric(mi, GM_M_MEM_TOTAL_BYTES, 206141652992.0);
    assert_metric(mi, GM_M_MEM_USED_BYTES, 85899345920.0);
    assert_metric(mi, GM_M_MEM_FREE_BYTES, 206141652992.0 - 85899345920.0);
    if (rocm6) {
        assert_metric(mi, GM_M_POWER_INSTANT_MW, 321000);
        assert_metric(mi, GM_M_POWER_MW, 321000);
    } else { /* ROCm 5 has no socket power call: MI300's power is unknown there */
        assert_absent(mi, GM_M_POWER_INSTANT_MW);
        assert_absent(mi, GM_M_POWER_MW);
    }
    assert_absent(mi, GM_M_PCIE_TX_KBPS);
    assert_metric(mi, GM_M_ECC_CORR_VOL, 5);
    assert_metric(mi, GM_M_ECC_UNCORR_VOL, 1);
    assert_metric(mi, GM_M_ECC_CORR_VOL_DRAM, 2);
    assert_metric(mi, GM_M_ECC_UNCORR_VOL_DRAM, 1);
    assert_absent(mi, GM_M_UTIL_ENC_PCT);
    assert_absent(mi, GM_M_PSTATE);
    assert_metric(w, GM_M_FAN_PCT, 40);
    assert_metric(w, GM_M_CLOCK_GR_MHZ, 800);
    assert_metric(w, GM_M_CLOCK_MAX_GR_MHZ, 2495);
    assert_absent(w, GM_M_ECC_UNCORR_VOL);

    /* A process on one GPU: its VRAM. On two: ROCm 6 tells it per GPU, ROCm 5 only the
     * total, which belongs to no one GPU. */
    assert_int_equal(s->proc_count, 3);
    const gm_process *p = find_proc(s, 4242, 0);
    assert_non_null(p);
    assert_true(p->mem_valid);
    assert_int_equal(p->used_mem_bytes, 8589934592ull);
    assert_int_equal(p->type, GM_PROC_COMPUTE);
    const gm_process *a = find_proc(s, 4343, 0), *b = find_proc(s, 4343, 1);
    assert_non_null(a);
    assert_non_null(b);
    if (rocm6) {
        assert_true(a->mem_valid && b->mem_valid);
        assert_int_equal(a->used_mem_bytes, 1073741824ull);
        assert_int_equal(b->used_mem_bytes, 2147483648ull);
    } else {
        assert_false(a->mem_valid);
        assert_false(b->mem_valid);
    }
}

static void test_current(void **state)
{
    (void)state;
    gm_snapshot *s;
    void *st = amd_first_sample(&L, "GM_FAKE_RSMI", "two_gpus.json", &s);
    check_gpus(s, true);
    amd_done(&L, st, s);
}

/* A ROCm 6 build whose version says 1.0.0 (as distribution builds do): the clocks and links
 * still come out of ROCm 6's layout. */
static void test_rocm6_unversioned(void **state)
{
    (void)state;
    setenv("GM_FAKE_RSMI_VERSION", "1.0.0", 1);
    gm_snapshot *s;
    void *st = amd_first_sample(&L, "GM_FAKE_RSMI", "two_gpus.json", &s);
    unsetenv("GM_FAKE_RSMI_VERSION");
    check_gpus(s, true);
    amd_done(&L, st, s);
}

/* ROCm 5 lays rsmi_frequencies_t out without has_deep_sleep: the same clocks and PCIe links
 * come out of it when its version says 1.0.0, as Debian's 5.2.3 does. */
static void test_rocm5(void **state)
{
    (void)state;
    gm_snapshot *s;
    void *st = amd_first_sample(&L, "GM_FAKE_RSMI_OLD", "two_gpus.json", &s);
    check_gpus(s, false);
    amd_done(&L, st, s);
}

/* The same when it carries its version, 5.2.3. */
static void test_rocm5_versioned(void **state)
{
    (void)state;
    setenv("GM_FAKE_RSMI_VERSION", "5.2.3", 1);
    gm_snapshot *s;
    void *st = amd_first_sample(&L, "GM_FAKE_RSMI_OLD", "two_gpus.json", &s);
    unsetenv("GM_FAKE_RSMI_VERSION");
    check_gpus(s, false);
    amd_done(&L, st, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current),
        cmocka_unit_test(test_rocm6_unversioned),
        cmocka_unit_test(test_rocm5),
        cmocka_unit_test(test_rocm5_versioned),
        AMD_LIB_TESTS(&L),
    };
    return amd_run(&L, tests, sizeof tests / sizeof *tests);
}
