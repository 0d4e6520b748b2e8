/* test_amd_smi.c - the amd_smi provider against the fake libamd_smi.so
 * (tests/fakes/fake_amd_smi.c): every reading of an MI300X and a Radeon PRO W7900 from amdsmi
 * 24.6, what a call answers NOT_SUPPORTED for or the library lacks absent, processes with their
 * VRAM per GPU, a GPU that disappears, a library of another version refused (and the collector
 * falling back to ROCm SMI), and one amdsmi_init per process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/provider.h"

static void use(const char *lib_env, const char *fixture)
{
    const char *lib = getenv(lib_env);
    assert_non_null(lib);
    setenv("GPU_MONITOR_AMD_SMI_LIB", lib, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/amd_smi/%s", getenv("GM_FIXTURES"), fixture);
    setenv("GM_FAKE_AMDSMI_SCENARIO", path, 1);
}

static void *open_ok(void)
{
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    int rc = gm_provider_amd_smi.open(&o, &st, &err);
    if (rc != GM_OK)
        fail_msg("open: %d %s", rc, err.msg);
    return st;
}

static void assert_metric(const gm_gpu *g, gm_metric m, double want)
{
    if (!gm_gpu_has(g, m))
        fail_msg("GPU %u: %s absent", g->index, gm_metric_get(m)->name);
    if (g->v[m] != want)
        fail_msg("GPU %u: %s = %.17g, want %g", g->index, gm_metric_get(m)->name, g->v[m], want);
}

static void assert_absent(const gm_gpu *g, gm_metric m)
{
    if (gm_gpu_has(g, m))
        fail_msg("GPU %u: %s = %g, want absent", g->index, gm_metric_get(m)->name, g->v[m]);
}

static const gm_process *find_proc(const gm_snapshot *s, uint32_t pid, unsigned gpu)
{
    for (size_t i = 0; i < s->proc_count; i++)
        if (s->procs[i].pid == pid && s->procs[i].gpu_index == gpu)
            return &s->procs[i];
    return NULL;
}

/* What both builds read alike. */
static void check_common(const gm_snapshot *s)
{
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->driver_version, "6.8.5");
    const gm_gpu *mi = &s->gpus[0], *w = &s->gpus[1];
    assert_string_equal(mi->vendor, "AMD");
    assert_string_equal(mi->name, "AMD Instinct MI300X");
    assert_string_equal(mi->uuid, "c1ff74a1-0000-1000-8047-ce01fa2c5b2d");
    assert_string_equal(mi->pci_bus_id, "0000:0c:00.0");
    assert_string_equal(mi->serial, "692251001124");
    assert_false(mi->lost);
    assert_metric(mi, GM_M_PCI_DEVICE_ID, 0x74a1);
    assert_metric(mi, GM_M_UTIL_GPU_PCT, 37);
    assert_absent(mi, GM_M_UTIL_MEM_PCT); /* the library's "not given" (UINT16_MAX) */
    assert_metric(mi, GM_M_MEM_TOTAL_BYTES, 196592.0 * 1024 * 1024);
    assert_metric(mi, GM_M_MEM_USED_BYTES, 81920.0 * 1024 * 1024);
    assert_metric(mi, GM_M_MEM_FREE_BYTES, (196592.0 - 81920.0) * 1024 * 1024);
    assert_absent(mi, GM_M_TEMP_EDGE_C); /* NOT_SUPPORTED: MI300X has no edge sensor */
    assert_metric(mi, GM_M_TEMP_JUNCTION_C, 52);
    assert_metric(mi, GM_M_TEMP_MEM_C, 44);
    assert_metric(mi, GM_M_TEMP_C, 52);
    assert_metric(mi, GM_M_POWER_INSTANT_MW, 321000);
    assert_absent(mi, GM_M_POWER_AVG_MW);
    assert_metric(mi, GM_M_POWER_MW, 321000);
    assert_metric(mi, GM_M_POWER_LIMIT_MW, 750000);
    assert_metric(mi, GM_M_ENERGY_MJ, 15625); /* mJ */
    assert_metric(mi, GM_M_CLOCK_GR_MHZ, 1420);
    assert_metric(mi, GM_M_CLOCK_SM_MHZ, 1420);
    assert_metric(mi, GM_M_CLOCK_MAX_GR_MHZ, 2100);
    assert_metric(mi, GM_M_CLOCK_MEM_MHZ, 1300);
    assert_metric(mi, GM_M_CLOCK_MAX_MEM_MHZ, 1300);
    assert_absent(mi, GM_M_FAN_PCT);
    assert_metric(mi, GM_M_PCIE_GEN_CUR, 5);
    assert_metric(mi, GM_M_PCIE_GEN_MAX, 5);
    assert_metric(mi, GM_M_PCIE_WIDTH_CUR, 16);
    assert_metric(mi, GM_M_PCIE_WIDTH_MAX, 16);

    assert_string_equal(w->name, "AMD Radeon PRO W7900");
    assert_string_equal(w->pci_bus_id, "0000:8a:00.0");
    assert_string_equal(w->serial, "");
    assert_metric(w, GM_M_UTIL_MEM_PCT, 4);
    assert_metric(w, GM_M_TEMP_EDGE_C, 41);
    assert_metric(w, GM_M_TEMP_C, 41);
    assert_metric(w, GM_M_POWER_AVG_MW, 95000);
    assert_metric(w, GM_M_POWER_MW, 95000);
    assert_absent(w, GM_M_ENERGY_MJ); /* NOT_SUPPORTED */
    assert_absent(w, GM_M_ECC_CORR_VOL);
    assert_absent(w, GM_M_CLOCK_MEM_MHZ);
    assert_metric(w, GM_M_PCIE_GEN_CUR, 3);
    assert_metric(w, GM_M_PCIE_GEN_MAX, 4);
    assert_metric(w, GM_M_PCIE_WIDTH_CUR, 8);
    assert_metric(w, GM_M_PCIE_WIDTH_MAX, 16);
}

static void test_current(void **state)
{
    (void)state;
    use("GM_FAKE_AMDSMI", "two_gpus.json");
    void *st = open_ok();
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_provider_amd_smi.sample(st, s, true, &err), GM_OK);
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
    /* Per-read values: the W7900's utilization moves with each sample. */
    assert_metric(&s->gpus[1], GM_M_UTIL_GPU_PCT, 10);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_amd_smi.sample(st, s, false, &err), GM_OK);
    assert_metric(&s->gpus[1], GM_M_UTIL_GPU_PCT, 20);
    assert_int_equal(s->proc_count, 0);
    gm_snapshot_free(s);
    gm_provider_amd_smi.close(st);
}

/* A library without the fan, ECC and process entry points: those are absent, the rest read. */
static void test_lean(void **state)
{
    (void)state;
    use("GM_FAKE_AMDSMI_LEAN", "two_gpus.json");
    void *st = open_ok();
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_provider_amd_smi.sample(st, s, true, &err), GM_OK);
    check_common(s);
    assert_absent(&s->gpus[0], GM_M_ECC_CORR_VOL);
    assert_absent(&s->gpus[0], GM_M_ECC_UNCORR_VOL);
    assert_absent(&s->gpus[1], GM_M_FAN_PCT);
    assert_int_equal(s->proc_count, 0);
    gm_snapshot_free(s);
    gm_provider_amd_smi.close(st);
}

/* Only the metrics asked for are read. */
static void test_want(void **state)
{
    (void)state;
    use("GM_FAKE_AMDSMI", "two_gpus.json");
    gm_metric_set want = {0};
    gm_metric_set_add(&want, GM_M_UTIL_GPU_PCT);
    gm_metric_set_add(&want, GM_M_MEM_USED_BYTES);
    gm_collector_options o = {.want = &want};
    void *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_provider_amd_smi.open(&o, &st, &err), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_amd_smi.sample(st, s, false, &err), GM_OK);
    assert_metric(&s->gpus[0], GM_M_UTIL_GPU_PCT, 37);
    assert_absent(&s->gpus[0], GM_M_TEMP_JUNCTION_C);
    assert_absent(&s->gpus[0], GM_M_ECC_CORR_VOL);
    assert_absent(&s->gpus[0], GM_M_CLOCK_GR_MHZ);
    assert_absent(&s->gpus[0], GM_M_POWER_MW);
    assert_string_equal(s->gpus[0].name, "AMD Instinct MI300X"); /* identity always */
    gm_snapshot_free(s);
    gm_provider_amd_smi.close(st);
}

/* A GPU whose every call fails is lost, identity kept; the other is read. When none is left
 * the sample fails, naming the call and amdsmi_status_code_to_string's words. */
static void test_lost(void **state)
{
    (void)state;
    use("GM_FAKE_AMDSMI", "lost.json");
    void *st = open_ok();
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_provider_amd_smi.sample(st, s, true, &err), GM_OK);
    assert_false(s->gpus[1].lost);
    assert_metric(&s->gpus[1], GM_M_UTIL_GPU_PCT, 6);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_amd_smi.sample(st, s, true, &err), GM_OK);
    assert_int_equal(s->gpu_count, 4);
    assert_false(s->gpus[0].lost);
    assert_metric(&s->gpus[0], GM_M_UTIL_GPU_PCT, 5);
    /* Gone with FILE_ERROR everywhere, and gone with NOT_SUPPORTED where it answered before. */
    for (unsigned i = 1; i <= 2; i++) {
        assert_true(s->gpus[i].lost);
        assert_absent(&s->gpus[i], GM_M_UTIL_GPU_PCT);
        assert_absent(&s->gpus[i], GM_M_MEM_TOTAL_BYTES);
    }
    assert_string_equal(s->gpus[1].pci_bus_id, "0000:22:00.0");
    assert_string_equal(s->gpus[2].pci_bus_id, "0000:38:00.0");
    assert_string_equal(s->gpus[2].name, "AMD Instinct MI300X");
    /* One that never answered anything is not lost: it supports nothing. */
    assert_false(s->gpus[3].lost);
    assert_absent(&s->gpus[3], GM_M_UTIL_GPU_PCT);
    gm_snapshot_free(s);
    gm_provider_amd_smi.close(st);

    char path[] = "/tmp/gm-test-amdsmi-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char one[] = "{\"gpus\": [{\"bus_id\": \"0000:0c:00.0\", \"busy\": 1, "
                              "\"gone_after\": 1}]}";
    assert_int_equal(write(fd, one, sizeof one - 1), (ssize_t)(sizeof one - 1));
    close(fd);
    setenv("GM_FAKE_AMDSMI_SCENARIO", path, 1);
    st = open_ok();
    s = gm_snapshot_new();
    assert_int_equal(gm_provider_amd_smi.sample(st, s, false, &err), GM_OK);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_amd_smi.sample(st, s, false, &err), GM_ELOST);
    assert_string_equal(err.msg, "amdsmi_get_gpu_activity: AMDSMI_STATUS_FILE_ERROR: Problem "
                                 "accessing a file (14)");
    gm_snapshot_free(s);
    gm_provider_amd_smi.close(st);
    unlink(path);
}

static void test_open_errors(void **state)
{
    (void)state;
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    use("GM_FAKE_AMDSMI", "init_error.json");
    assert_int_equal(gm_provider_amd_smi.open(&o, &st, &err), GM_EINIT);
    assert_non_null(strstr(
        err.msg,
        "amdsmi_init failed: AMDSMI_STATUS_DRIVER_NOT_LOADED: Processor driver not loaded (34)"));
    use("GM_FAKE_AMDSMI", "no_gpus.json");
    assert_int_equal(gm_provider_amd_smi.open(&o, &st, &err), GM_ENODEV);
    setenv("GPU_MONITOR_AMD_SMI_LIB", "/nonexistent-gm/libamd_smi.so", 1);
    assert_int_equal(gm_provider_amd_smi.open(&o, &st, &err), GM_ENOLIB);
    assert_non_null(strstr(err.msg, "/nonexistent-gm/libamd_smi.so"));
    /* Not an amdsmi library at all. */
    setenv("GPU_MONITOR_AMD_SMI_LIB", getenv("GM_FAKE_RSMI"), 1);
    assert_int_equal(gm_provider_amd_smi.open(&o, &st, &err), GM_ENOSYM);
}

/* A library of another version is refused before any structure of it is read, with its version
 * and the one gpumon reads; it is shut down and unloaded again. */
static void test_other_version(void **state)
{
    (void)state;
    use("GM_FAKE_AMDSMI_OTHER", "two_gpus.json");
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

/* Two opens in one process: one amdsmi_init, and amdsmi_shut_down once the last closes. */
static void test_init_once(void **state)
{
    (void)state;
    use("GM_FAKE_AMDSMI", "two_gpus.json");
    void *dl = dlopen(getenv("GM_FAKE_AMDSMI"), RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    unsigned long (*inits)(void) = (unsigned long (*)(void))dlsym(dl, "fake_amdsmi_init_calls");
    unsigned long (*downs)(void) = (unsigned long (*)(void))dlsym(dl, "fake_amdsmi_shutdown_calls");
    unsigned (*refs)(void) = (unsigned (*)(void))dlsym(dl, "fake_amdsmi_refcount");
    assert_non_null(inits);
    unsigned long i0 = inits(), d0 = downs();
    void *a = open_ok(), *b = open_ok();
    assert_int_equal(inits() - i0, 1);
    assert_int_equal(refs(), 1);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(gm_provider_amd_smi.sample(b, s, false, &err), GM_OK);
    gm_provider_amd_smi.close(a);
    assert_int_equal(downs() - d0, 0);
    assert_int_equal(gm_provider_amd_smi.sample(b, s, false, &err), GM_OK);
    gm_provider_amd_smi.close(b);
    assert_int_equal(downs() - d0, 1);
    assert_int_equal(refs(), 0);
    gm_snapshot_free(s);
    dlclose(dl);
}

int main(void)
{
    if (!getenv("GM_FAKE_AMDSMI") || !getenv("GM_FIXTURES")) {
        fprintf(stderr, "GM_FAKE_AMDSMI and GM_FIXTURES must be set (ctest sets them)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current),     cmocka_unit_test(test_lean),
        cmocka_unit_test(test_want),        cmocka_unit_test(test_lost),
        cmocka_unit_test(test_open_errors), cmocka_unit_test(test_other_version),
        cmocka_unit_test(test_init_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
