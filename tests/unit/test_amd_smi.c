/* test_amd_smi.c - the amd_smi provider against the fake libamd_smi.so
 * (tests/fakes/fake_amd_smi.c): every reading of an MI300X and a Radeon PRO W7900 from amdsmi
 * 24.6, what a call answers NOT_SUPPORTED for or the library lacks absent, processes with their
 * VRAM per GPU, a GPU that disappears, a library of another version refused (and the collector
 * falling back to ROCm SMI), and one amdsmi_init per process. */
#include "amd_checks.h" /* and cmocka */

static const amd_lib L = {
    .provider = &gm_provider_amd_smi,
    .fake_env = "GM_FAKE_AMDSMI",
    .lib_var = "GPU_MONITOR_AMD_SMI_LIB",
    .scenario_var = "GM_FAKE_AMDSMI_SCENARIO",
    .fixtures = "amd_smi",
    .init_failed =
        "amdsmi_init failed: AMDSMI_STATUS_DRIVER_NOT_LOADED: Processor driver not loaded (34)",
    .lost = "amdsmi_get_gpu_activity: AMDSMI_STATUS_FILE_ERROR: Problem accessing a file (14)",
    .hooks = "amdsmi",
};

/* What both builds read alike. */
static void check_common(const gm_snapshot *s)
{
    amd_check_two_gpus(s);
    const gm_gpu *mi = &s->gpus[0], *w = &s->gpus[1];
    assert_string_equal(mi->uuid, "c1ff74a1-0000-1000-8047-ce01fa2c5b2d");
    assert_metric(mi, GM_M_MEM_TOTAL_BYTES, 196592.0 * 1024 * 1024);
    assert_metric(mi, GM_M_MEM_USED_BYTES, 81920.0 * 1024 * 1024);
    assert_metric(mi, GM_M_MEM_FREE_BYTES, (196592.0 - 81920.0) * 1024 * 1024);
    assert_metric(mi, GM_M_POWER_INSTANT_MW, 321000);
    assert_metric(mi, GM_M_POWER_MW, 321000);
    assert_string_equal(w->pci_bus_id, "0000:8a:00.0");
}

static void test_current(void **state)
{
    (void)state;
    gm_snapshot *s;
    void *st = amd_first_sample(&L, "GM_FAKE_AMDSMI", "two_gpus.json", &s);
    check_common(s);
    assert_metric(&s->gpus[0], GM_M_ECC_CORR_VOL, 5);
    assert_metric(&s->gpus[0], GM_M_ECC_UNCORR_VOL, 1);
    assert_metric(&s->gpus[1], GM_M_FAN_PCT, 40);
    /* Each GPU's processes with their VRAM there. */
    assert_int_equal(s->proc_count, 3);
    const gm_process *p = find_proc(s, 4242, 0);
    assert_non_null(p);
    assert_true(p->mem_valid);
    assert_int_equal(p->used_mem_bytes, 8589934592ull);
    assert_int_equal(p->type, GM_PROC_COMPUTE);
    assert_int_equal(find_proc(s, 4343, 0)->used_mem_bytes, 1073741824ull);
    assert_int_equal(find_proc(s, 4343, 1)->used_mem_bytes, 2147483648ull);
    amd_done(&L, st, s);
}

/* A library without the fan, ECC and process entry points: those are absent, the rest read. */
static void test_lean(void **state)
{
    (void)state;
    gm_snapshot *s;
    void *st = amd_first_sample(&L, "GM_FAKE_AMDSMI_LEAN", "two_gpus.json", &s);
    check_common(s);
    assert_absent(&s->gpus[0], GM_M_ECC_CORR_VOL);
    assert_absent(&s->gpus[0], GM_M_ECC_UNCORR_VOL);
    assert_absent(&s->gpus[1], GM_M_FAN_PCT);
    assert_int_equal(s->proc_count, 0);
    amd_done(&L, st, s);
}

/* The ROCm SMI library in its place is no amdsmi library: GM_ENOSYM. */
static void test_not_amdsmi(void **state)
{
    (void)state;
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    setenv("GPU_MONITOR_AMD_SMI_LIB", getenv("GM_FAKE_RSMI"), 1);
    assert_int_equal(gm_provider_amd_smi.open(&o, &st, &err), GM_ENOSYM);
}

/* A library of another version is refused before any structure of it is read, with its version
 * and the one gpumon reads; it is shut down and unloaded again. */
static void test_other_version(void **state)
{
    (void)state;
    amd_use(&L, "GM_FAKE_AMDSMI_OTHER", "two_gpus.json");
    void *dl = dlopen(getenv("GM_FAKE_AMDSMI_OTHER"), RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    unsigned (*refs)(void) = (unsigned (*)(void))dlsym(dl, "fake_amdsmi_refcount");
    assert_non_null(refs);
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_provider_amd_smi.open(&o, &st, &err), GM_ENOTSUP);
    assert_non_null(strstr(err.msg, "is amdsmi 24.7.1; gpumon reads amdsmi 24.6 (ROCm 6.2) only"));
    assert_null(st);
    assert_int_equal(refs(), 0);
    dlclose(dl);

    /* The collector goes on to the ROCm SMI library, which reads the GPUs. */
    setenv("GPU_MONITOR_ROCM_SMI_LIB", getenv("GM_FAKE_RSMI"), 1);
    char path[512];
    snprintf(path, sizeof path, "%s/rocm_smi/two_gpus.json", getenv("GM_FIXTURES"));
    setenv("GM_FAKE_RSMI_SCENARIO", path, 1);
    setenv("GPU_MONITOR_SYSFS_ROOT", "/nonexistent-gm-sysfs", 1);
    gm_collector_options co = {.vendor = "AMD", .no_host = true};
    gm_collector *c = NULL;
    assert_int_equal(gm_collector_open(&co, &c, &err), GM_OK);
    assert_string_equal(gm_collector_provider(c), "rocm_smi");
    gm_collector_close(c);
    unsetenv("GPU_MONITOR_ROCM_SMI_LIB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current),
        cmocka_unit_test(test_lean),
        cmocka_unit_test(test_not_amdsmi),
        cmocka_unit_test(test_other_version),
        AMD_LIB_TESTS(&L),
    };
    return amd_run(&L, tests, sizeof tests / sizeof *tests);
}
