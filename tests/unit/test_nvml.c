/* test_nvml.c - the NVML provider against the fake libnvidia-ml.so.1 (current and old driver),
 * loaded through the same dlopen path as the real library and driven by scenario fixtures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpumon.h"
#include "collect/provider.h"

/* Test-only hooks the fake exports. */
typedef unsigned long (*calls_fn)(const char *);
typedef unsigned long (*util_calls_fn)(unsigned);
typedef unsigned (*refcount_fn)(void);

/* The fakes stay loaded for the whole run (one reference each, held here) so their call
 * counters survive the provider's dlclose. */
static struct fake {
    const char *env;
    const char *path;
    void *lib;
    calls_fn calls;
    util_calls_fn util_calls;
    refcount_fn refcount;
} fake_current = {.env = "GM_FAKE_NVML"}, fake_old = {.env = "GM_FAKE_NVML_OLD"};

static gm_snapshot *snap;

/* A test's fixture state: the NVML states it opened (open_ok, track) and has not closed. Its
 * teardown closes them, also when an assertion ended the test early, so the fake's global
 * state does not leak into the next test. */
#define HELD_MAX 4
typedef struct held {
    void *st[HELD_MAX];
} held;

static int test_setup(void **state)
{
    *state = calloc(1, sizeof(held));
    return *state ? 0 : -1;
}

static int test_teardown(void **state)
{
    held *h = *state;
    for (size_t i = 0; i < HELD_MAX; i++)
        if (h->st[i])
            gm_provider_nvml.close(h->st[i]);
    free(h);
    return 0;
}

static void track(void **state, void *st)
{
    held *h = *state;
    for (size_t i = 0; i < HELD_MAX; i++)
        if (!h->st[i]) {
            h->st[i] = st;
            return;
        }
    fail_msg("a test holds at most %d open states", HELD_MAX);
}

static void close_st(void **state, void *st)
{
    held *h = *state;
    for (size_t i = 0; i < HELD_MAX; i++)
        if (h->st[i] == st)
            h->st[i] = NULL;
    gm_provider_nvml.close(st);
}

static int load_fake(struct fake *f)
{
    f->path = getenv(f->env);
    if (!f->path) {
        fprintf(stderr, "%s is not set (run through ctest)\n", f->env);
        return -1;
    }
    f->lib = dlopen(f->path, RTLD_NOW | RTLD_LOCAL);
    if (!f->lib) {
        fprintf(stderr, "dlopen %s: %s\n", f->path, dlerror());
        return -1;
    }
    f->calls = (calls_fn)dlsym(f->lib, "fake_nvml_calls");
    f->util_calls = (util_calls_fn)dlsym(f->lib, "fake_nvml_util_calls");
    f->refcount = (refcount_fn)dlsym(f->lib, "fake_nvml_refcount");
    return f->calls && f->util_calls && f->refcount ? 0 : -1;
}

static int group_setup(void **state)
{
    if (!getenv("GM_FIXTURES") || load_fake(&fake_current) || load_fake(&fake_old))
        return -1;
    snap = gm_snapshot_new();
    return snap ? 0 : -1;
}

static int group_teardown(void **state)
{
    gm_snapshot_free(snap);
    dlclose(fake_current.lib);
    dlclose(fake_old.lib);
    return 0;
}

/* Points the fake at tests/fixtures/nvml/<name> (NULL: the fake's built-in default GPU). */
static void use_scenario(const char *name)
{
    if (!name) {
        unsetenv("GM_FAKE_NVML_SCENARIO");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/nvml/%s", getenv("GM_FIXTURES"), name);
    setenv("GM_FAKE_NVML_SCENARIO", path, 1);
}

static void *open_ok(void **state, const struct fake *f, const char *scenario)
{
    use_scenario(scenario);
    gm_collector_options opt = {.nvml_lib = f->path};
    gm_error err = {0};
    void *st = NULL;
    int rc = gm_provider_nvml.open(&opt, &st, &err);
    if (rc != GM_OK)
        fail_msg("open %s with %s: %d %s", f->path, scenario ? scenario : "(default)", rc, err.msg);
    track(state, st);
    return st;
}

static void sample_ok(void *st, bool procs)
{
    gm_error err = {0};
    gm_snapshot_reset(snap);
    int rc = gm_provider_nvml.sample(st, snap, procs, &err);
    if (rc != GM_OK)
        fail_msg("sample: %d %s", rc, err.msg);
}

static void check_metric(const gm_gpu *g, gm_metric m, double want)
{
    if (!gm_gpu_has(g, m))
        fail_msg("GPU %u: %s absent, want %.17g", g->index, gm_metric_get(m)->name, want);
    if (g->v[m] != want)
        fail_msg("GPU %u: %s = %.17g, want %.17g", g->index, gm_metric_get(m)->name, g->v[m], want);
}

static void check_absent(const gm_gpu *g, gm_metric m)
{
    if (gm_gpu_has(g, m))
        fail_msg("GPU %u: %s = %.17g, want absent", g->index, gm_metric_get(m)->name, g->v[m]);
}

/* Scenario key -> metric, for the fields whose raw unit equals NVML's. */
static const struct {
    const char *key;
    gm_metric m;
} key_metrics[] = {
    {"util_gpu", GM_M_UTIL_GPU_PCT},
    {"util_mem", GM_M_UTIL_MEM_PCT},
    {"enc", GM_M_UTIL_ENC_PCT},
    {"dec", GM_M_UTIL_DEC_PCT},
    {"mem_total", GM_M_MEM_TOTAL_BYTES},
    {"mem_free", GM_M_MEM_FREE_BYTES},
    {"temp", GM_M_TEMP_C},
    {"power_mw", GM_M_POWER_MW},
    {"power_limit_mw", GM_M_POWER_LIMIT_MW},
    {"energy_mj", GM_M_ENERGY_MJ},
    {"clock_gr", GM_M_CLOCK_GR_MHZ},
    {"clock_sm", GM_M_CLOCK_SM_MHZ},
    {"clock_mem", GM_M_CLOCK_MEM_MHZ},
    {"clock_max_gr", GM_M_CLOCK_MAX_GR_MHZ},
    {"clock_max_sm", GM_M_CLOCK_MAX_SM_MHZ},
    {"clock_max_mem", GM_M_CLOCK_MAX_MEM_MHZ},
    {"fan", GM_M_FAN_PCT},
    {"pcie_gen", GM_M_PCIE_GEN_CUR},
    {"pcie_gen_max", GM_M_PCIE_GEN_MAX},
    {"pcie_width", GM_M_PCIE_WIDTH_CUR},
    {"pcie_width_max", GM_M_PCIE_WIDTH_MAX},
    {"pcie_tx", GM_M_PCIE_TX_KBPS},
    {"pcie_rx", GM_M_PCIE_RX_KBPS},
    {"pstate", GM_M_PSTATE},
    {"throttle", GM_M_THROTTLE_REASONS},
    {"persistence", GM_M_PERSISTENCE_MODE},
};

static json_t *load_fixture(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/nvml/%s", getenv("GM_FIXTURES"), name);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j)
        fail_msg("%s: %s", path, jerr.text);
    return j;
}

static double jnum(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* Every GPU of two_gpus.json, as either driver reports it. v1 memory: used includes reserved
 * and reserved is absent. */
static void check_two_gpus(bool mem_v1)
{
    json_t *root = load_fixture("two_gpus.json");
    json_t *gpus = json_object_get(root, "gpus");
    assert_int_equal(snap->gpu_count, json_array_size(gpus));
    assert_string_equal(snap->driver_version, "550.54.15");
    assert_string_equal(snap->nvml_version, "12.550.54.15");
    assert_string_equal(snap->cuda_version, "12.4");
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gm_gpu *g = &snap->gpus[i];
        json_t *jg = json_array_get(gpus, i);
        assert_int_equal(g->index, i);
        assert_false(g->lost);
        assert_string_equal(g->name, json_string_value(json_object_get(jg, "name")));
        assert_string_equal(g->uuid, json_string_value(json_object_get(jg, "uuid")));
        assert_string_equal(g->pci_bus_id, json_string_value(json_object_get(jg, "pci_bus_id")));
        for (size_t k = 0; k < sizeof key_metrics / sizeof *key_metrics; k++)
            check_metric(g, key_metrics[k].m, jnum(jg, key_metrics[k].key));
        if (mem_v1) {
            check_metric(g, GM_M_MEM_USED_BYTES, jnum(jg, "mem_used") + jnum(jg, "mem_reserved"));
            check_absent(g, GM_M_MEM_RESERVED_BYTES);
        } else {
            check_metric(g, GM_M_MEM_USED_BYTES, jnum(jg, "mem_used"));
            check_metric(g, GM_M_MEM_RESERVED_BYTES, jnum(jg, "mem_reserved"));
        }
    }
    /* Raw units, spelled out: mW, mJ, bytes, KB/s are not converted by the provider. */
    check_metric(&snap->gpus[0], GM_M_POWER_MW, 512345);
    check_metric(&snap->gpus[0], GM_M_ENERGY_MJ, 123456789012.0);
    check_metric(&snap->gpus[0], GM_M_MEM_TOTAL_BYTES, 85520809984.0);
    check_metric(&snap->gpus[0], GM_M_PCIE_RX_KBPS, 654321);
    check_metric(&snap->gpus[1], GM_M_PSTATE, 8);
    json_decref(root);
}

static void test_current_driver_all_fields(void **state)
{
    void *st = open_ok(state, &fake_current, "two_gpus.json");
    sample_ok(st, false);
    check_two_gpus(false);
    assert_int_equal(snap->proc_count, 0); /* not asked for */
    close_st(state, st);
}

static void test_old_driver_fallbacks(void **state)
{
    void *st = open_ok(state, &fake_old, "two_gpus.json");
    sample_ok(st, true);
    check_two_gpus(true);
    /* v1 process entries (16 bytes) decode to the same PIDs and memory. */
    assert_int_equal(snap->proc_count, 2);
    assert_int_equal(snap->procs[0].pid, 4242);
    assert_int_equal(snap->procs[0].type, GM_PROC_COMPUTE);
    assert_true(snap->procs[0].mem_valid);
    assert_int_equal(snap->procs[0].used_mem_bytes, 40802189312ULL);
    assert_int_equal(snap->procs[1].pid, 5151);
    assert_int_equal(snap->procs[1].type, GM_PROC_GRAPHICS);
    assert_int_equal(snap->procs[1].used_mem_bytes, 1073741824ULL);
    assert_int_equal(fake_old.calls("nvmlDeviceGetCurrentClocksThrottleReasons") > 0, 1);
    close_st(state, st);
}

static void test_memory_v2_version_mismatch_falls_back(void **state)
{
    unsigned long v2_before = fake_current.calls("nvmlDeviceGetMemoryInfo_v2");
    void *st = open_ok(state, &fake_current, "mem_v2_mismatch.json");
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_MEM_TOTAL_BYTES, 85520809984.0);
    check_metric(g, GM_M_MEM_USED_BYTES, 42949672960.0 + 560971776.0);
    check_metric(g, GM_M_MEM_FREE_BYTES, 42010165248.0);
    check_absent(g, GM_M_MEM_RESERVED_BYTES);
    sample_ok(st, false);
    check_metric(&snap->gpus[0], GM_M_MEM_USED_BYTES, 42949672960.0 + 560971776.0);
    /* Refused once, the v2 call is not retried every sample. */
    assert_int_equal(fake_current.calls("nvmlDeviceGetMemoryInfo_v2") - v2_before, 1);
    close_st(state, st);
}

static void test_unsupported_fields_absent(void **state)
{
    void *st = open_ok(state, &fake_current, "unsupported.json");
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    assert_false(g->lost);
    /* NOT_SUPPORTED */
    check_absent(g, GM_M_FAN_PCT);
    check_absent(g, GM_M_UTIL_ENC_PCT);
    check_absent(g, GM_M_UTIL_DEC_PCT);
    check_absent(g, GM_M_ENERGY_MJ);
    check_absent(g, GM_M_PCIE_TX_KBPS);
    check_absent(g, GM_M_PCIE_RX_KBPS);
    check_absent(g, GM_M_CLOCK_MAX_MEM_MHZ);
    /* NO_PERMISSION */
    check_absent(g, GM_M_POWER_LIMIT_MW);
    check_absent(g, GM_M_THROTTLE_REASONS);
    /* pstate 32 is NVML_PSTATE_UNKNOWN; persistence left out of the scenario */
    check_absent(g, GM_M_PSTATE);
    check_absent(g, GM_M_PERSISTENCE_MODE);
    /* the rest is there */
    check_metric(g, GM_M_UTIL_GPU_PCT, 55);
    check_metric(g, GM_M_POWER_MW, 250000);
    check_metric(g, GM_M_CLOCK_MAX_GR_MHZ, 1410);
    check_metric(g, GM_M_CLOCK_MAX_SM_MHZ, 1410);
    check_metric(g, GM_M_CLOCK_MEM_MHZ, 1215);
    check_metric(g, GM_M_MEM_RESERVED_BYTES, 536870912);
    check_metric(g, GM_M_PCIE_WIDTH_CUR, 16);
    assert_string_equal(snap->cuda_version, "12.2");
    close_st(state, st);
}

static void test_default_scenario_and_env_path(void **state)
{
    /* opt->nvml_lib unset: $GPU_MONITOR_NVML_LIB names the library. */
    use_scenario(NULL);
    setenv("GPU_MONITOR_NVML_LIB", fake_current.path, 1);
    gm_collector_options opt = {0};
    gm_error err = {0};
    void *st = NULL;
    int rc = gm_provider_nvml.open(&opt, &st, &err);
    unsetenv("GPU_MONITOR_NVML_LIB");
    assert_int_equal(rc, GM_OK);
    track(state, st);
    sample_ok(st, true);
    assert_int_equal(snap->gpu_count, 1);
    assert_string_equal(snap->gpus[0].pci_bus_id, "00000000:01:00.0");
    check_metric(&snap->gpus[0], GM_M_UTIL_GPU_PCT, 10);
    assert_int_equal(snap->proc_count, 0);
    close_st(state, st);
}

static void test_one_init_per_open(void **state)
{
    unsigned long init0 = fake_current.calls("nvmlInit_v2");
    unsigned long init_v1 = fake_current.calls("nvmlInit");
    unsigned long shut0 = fake_current.calls("nvmlShutdown");
    void *st = open_ok(state, &fake_current, "two_gpus.json");
    assert_int_equal(fake_current.refcount(), 1);
    for (int i = 0; i < 3; i++)
        sample_ok(st, true);
    assert_int_equal(fake_current.calls("nvmlInit_v2") - init0, 1);
    assert_int_equal(fake_current.calls("nvmlInit") - init_v1, 0);
    close_st(state, st);
    assert_int_equal(fake_current.calls("nvmlShutdown") - shut0, 1);
    assert_int_equal(fake_current.refcount(), 0);

    /* Two opens are independent states over the one library. */
    void *a = open_ok(state, &fake_current, "two_gpus.json");
    void *b = open_ok(state, &fake_current, "two_gpus.json");
    assert_int_equal(fake_current.refcount(), 2);
    close_st(state, a);
    sample_ok(b, false);
    check_two_gpus(false);
    close_st(state, b);
    assert_int_equal(fake_current.refcount(), 0);
}

/* Costly getters follow their cadence: hardware constants once, energy and PCIe throughput at
 * the slow period (their last reading reported in between), the rest every sample. */
static void test_costly_getters_cadence(void **state)
{
    use_scenario("two_gpus.json");
    gm_collector_options opt = {.nvml_lib = fake_current.path}; /* slow period: default 10 s */
    gm_error err = {0};
    void *st = NULL;
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_OK);
    track(state, st);
    unsigned long energy0 = fake_current.calls("nvmlDeviceGetTotalEnergyConsumption");
    unsigned long maxclk0 = fake_current.calls("nvmlDeviceGetMaxClockInfo");
    unsigned long tput0 = fake_current.calls("nvmlDeviceGetPcieThroughput");
    unsigned long temp0 = fake_current.calls("nvmlDeviceGetTemperature");
    for (int i = 0; i < 4; i++) {
        sample_ok(st, false);
        /* Served from the cache, the values stay present and exact. */
        check_two_gpus(false);
    }
    assert_int_equal(fake_current.calls("nvmlDeviceGetTotalEnergyConsumption") - energy0, 2);
    /* Graphics, SM, memory and video, once per GPU. */
    assert_int_equal(fake_current.calls("nvmlDeviceGetMaxClockInfo") - maxclk0, 2 * 4);
    assert_int_equal(fake_current.calls("nvmlDeviceGetPcieThroughput") - tput0, 2 * 2);
    assert_int_equal(fake_current.calls("nvmlDeviceGetTemperature") - temp0, 2 * 4);
    close_st(state, st);

    /* A negative period reads the counters at every sample (exact energy for `record`). */
    opt.slow_period_ms = -1;
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_OK);
    track(state, st);
    energy0 = fake_current.calls("nvmlDeviceGetTotalEnergyConsumption");
    maxclk0 = fake_current.calls("nvmlDeviceGetMaxClockInfo");
    for (int i = 0; i < 3; i++)
        sample_ok(st, false);
    assert_int_equal(fake_current.calls("nvmlDeviceGetTotalEnergyConsumption") - energy0, 2 * 3);
    assert_int_equal(fake_current.calls("nvmlDeviceGetMaxClockInfo") - maxclk0, 2 * 4);
    close_st(state, st);
}

static void test_init_failure_message(void **state)
{
    const struct fake *fakes[] = {&fake_current, &fake_old};
    const char *want[] = {"nvmlInit_v2 failed: Driver Not Loaded (9)",
                          "nvmlInit failed: Driver Not Loaded (9)"};
    for (int i = 0; i < 2; i++) {
        use_scenario("init_error.json");
        gm_collector_options opt = {.nvml_lib = fakes[i]->path};
        gm_error err = {0};
        void *st = NULL;
        assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_EINIT);
        assert_int_equal(err.code, GM_EINIT);
        assert_non_null(strstr(err.msg, want[i]));
        assert_int_equal(fakes[i]->refcount(), 0);
    }
}

static void test_library_not_found(void **state)
{
    gm_collector_options opt = {.nvml_lib = "/nonexistent/gpumon-test/libnvidia-ml.so.1"};
    gm_error err = {0};
    void *st = NULL;
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_ENOLIB);
    assert_null(st);
    assert_non_null(strstr(err.msg, "/nonexistent/gpumon-test/libnvidia-ml.so.1"));
    assert_non_null(strstr(err.msg, "No such file"));

    /* A library without NVML's entry points is refused by name. */
    opt.nvml_lib = "libjansson.so.4";
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_ENOSYM);
    assert_non_null(strstr(err.msg, "nvmlInit"));
}

static void test_no_gpus(void **state)
{
    use_scenario("no_gpus.json");
    gm_collector_options opt = {.nvml_lib = fake_current.path};
    gm_error err = {0};
    void *st = NULL;
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_ENODEV);
    assert_int_equal(fake_current.refcount(), 0);
}

static void test_gpu_lost_others_keep_updating(void **state)
{
    static const double util0[] = {10, 20, 30, 40, 50};
    void *st = open_ok(state, &fake_current, "lost.json");
    unsigned long handles0 = fake_current.calls("nvmlDeviceGetHandleByIndex_v2");
    for (unsigned s = 0; s < 5; s++) {
        sample_ok(st, true);
        const gm_gpu *g0 = &snap->gpus[0], *g1 = &snap->gpus[1];
        assert_int_equal(snap->gpu_count, 2);
        assert_false(g0->lost);
        check_metric(g0, GM_M_UTIL_GPU_PCT, util0[s]);
        check_metric(g0, GM_M_MEM_USED_BYTES, 1048576.0 * (s + 1));
        check_metric(g0, GM_M_POWER_MW, 30000 + 1000 * s);
        /* lost_after 2: samples 0 and 1 read, from sample 2 on the GPU is gone. */
        if (s < 2) {
            assert_false(g1->lost);
            check_metric(g1, GM_M_UTIL_GPU_PCT, 99);
            assert_int_equal(snap->proc_count, 1);
            assert_int_equal(snap->procs[0].gpu_index, 1);
        } else {
            assert_true(g1->lost);
            assert_int_equal(g1->valid[0] | g1->valid[GM_M_WORDS - 1], 0);
            assert_int_equal(g1->index, 1);
            assert_string_equal(g1->uuid, "GPU-10570000-0000-0000-0000-000000000001");
            assert_string_equal(g1->pci_bus_id, "00000000:02:00.0");
            assert_string_equal(g1->name, "NVIDIA L4");
            assert_int_equal(snap->proc_count, 0);
        }
    }
    /* The lost GPU was asked once (the call that found it lost), not on every later sample. */
    assert_int_equal(fake_current.util_calls(1), 3);
    assert_int_equal(fake_current.util_calls(0), 5);
    assert_int_equal(fake_current.calls("nvmlDeviceGetHandleByIndex_v2") - handles0, 0);
    close_st(state, st);
}

static void test_only_gpu_lost_is_not_an_error(void **state)
{
    void *st = open_ok(state, &fake_current, "lost_only.json");
    sample_ok(st, false);
    assert_false(snap->gpus[0].lost);
    check_metric(&snap->gpus[0], GM_M_UTIL_GPU_PCT, 12);
    for (int i = 0; i < 2; i++) {
        sample_ok(st, false); /* GM_OK, not an error */
        assert_int_equal(snap->gpu_count, 1);
        assert_true(snap->gpus[0].lost);
        assert_int_equal(snap->gpus[0].valid[0] | snap->gpus[0].valid[GM_M_WORDS - 1], 0);
        assert_string_equal(snap->gpus[0].uuid, "GPU-7e570000-0000-0000-0000-000000000000");
    }
    close_st(state, st);
}

static void test_gpu_failing_alone_and_all_failing(void **state)
{
    void *st = open_ok(state, &fake_current, "errors.json");
    sample_ok(st, false);
    assert_false(snap->gpus[0].lost);
    check_metric(&snap->gpus[0], GM_M_TEMP_C, 48);
    assert_true(snap->gpus[1].lost); /* every call failed: reported lost for this sample */
    assert_int_equal(snap->gpus[1].valid[0] | snap->gpus[1].valid[GM_M_WORDS - 1], 0);
    assert_string_equal(snap->gpus[1].pci_bus_id, "00000000:18:00.0");
    close_st(state, st);

    st = open_ok(state, &fake_current, "errors_all.json");
    gm_error err = {0};
    gm_snapshot_reset(snap);
    assert_int_equal(gm_provider_nvml.sample(st, snap, true, &err), GM_ETIMEDOUT);
    assert_non_null(strstr(err.msg, "Timeout (10)"));
    assert_non_null(strstr(err.msg, "GPU 0"));
    close_st(state, st);
}

static const gm_process *find_proc(unsigned gpu, uint32_t pid)
{
    for (size_t i = 0; i < snap->proc_count; i++)
        if (snap->procs[i].gpu_index == gpu && snap->procs[i].pid == pid)
            return &snap->procs[i];
    return NULL;
}

static void check_processes(void)
{
    /* 100 is in both lists: one entry, both type bits. */
    const gm_process *p = find_proc(0, 100);
    assert_non_null(p);
    assert_int_equal(p->type, GM_PROC_COMPUTE | GM_PROC_GRAPHICS);
    assert_true(p->mem_valid);
    assert_int_equal(p->used_mem_bytes, 1073741824ULL);
    assert_string_equal(p->user, "");
    assert_string_equal(p->command, "");
    /* NVML_VALUE_NOT_AVAILABLE: memory unknown, not zero. */
    p = find_proc(0, 200);
    assert_non_null(p);
    assert_false(p->mem_valid);
    /* Twice in one list (one entry per MIG instance): memory adds up. */
    p = find_proc(0, 400);
    assert_non_null(p);
    assert_int_equal(p->type, GM_PROC_COMPUTE);
    assert_int_equal(p->used_mem_bytes, 536870912ULL);
    p = find_proc(0, 300);
    assert_non_null(p);
    assert_int_equal(p->type, GM_PROC_GRAPHICS);
    /* The 40 processes that started between the size query and the fill. */
    for (uint32_t pid = 90000; pid < 90040; pid++) {
        p = find_proc(0, pid);
        assert_non_null(p);
        assert_int_equal(p->used_mem_bytes, 1048576);
    }
    /* Same PID on another GPU stays a separate entry. */
    p = find_proc(1, 100);
    assert_non_null(p);
    assert_int_equal(p->used_mem_bytes, 2097152);
    assert_int_equal(snap->proc_count, 4 + 40 + 1);
    assert_int_equal(snap->proc_dropped, 0);
}

static void test_processes_grow_retry_and_dedupe(void **state)
{
    const struct fake *fakes[] = {&fake_current, &fake_old};
    const char *sym[] = {"nvmlDeviceGetComputeRunningProcesses_v3",
                         "nvmlDeviceGetComputeRunningProcesses"};
    for (int i = 0; i < 2; i++) {
        void *st = open_ok(state, fakes[i], "processes.json");
        unsigned long c0 = fakes[i]->calls(sym[i]);
        sample_ok(st, true);
        check_processes();
        /* GPU 0: size query, a fill refused because the list grew, a fill that fits; GPU 1 one
         * call into the buffer GPU 0 grew. */
        assert_int_equal(fakes[i]->calls(sym[i]) - c0, 4);
        /* Steady state: one call per list per GPU, into the reused buffer. */
        c0 = fakes[i]->calls(sym[i]);
        sample_ok(st, true);
        check_processes();
        assert_int_equal(fakes[i]->calls(sym[i]) - c0, 2);
        close_st(state, st);
    }
}

static void test_p2p(void **state)
{
    void *st = open_ok(state, &fake_current, "two_gpus.json");
    gm_p2p_status s = GM_P2P_UNKNOWN;
    gm_error err = {0};
    assert_int_equal(gm_provider_nvml.p2p(st, 0, 1, GM_P2P_READ, &s, &err), GM_OK);
    assert_int_equal(s, GM_P2P_OK);
    assert_int_equal(gm_provider_nvml.p2p(st, 1, 0, GM_P2P_NVLINK, &s, &err), GM_OK);
    assert_int_equal(s, GM_P2P_NOT_SUPPORTED);
    assert_int_equal(gm_provider_nvml.p2p(st, 0, 1, GM_P2P_ATOMICS, &s, &err), GM_OK);
    assert_int_equal(s, GM_P2P_GPU_NOT_SUPPORTED);
    assert_int_equal(gm_provider_nvml.p2p(st, 0, 1, GM_P2P_PCI, &s, &err), GM_OK);
    assert_int_equal(s, GM_P2P_OK);
    assert_int_equal(gm_provider_nvml.p2p(st, 0, 2, GM_P2P_READ, &s, &err), GM_EINVAL);
    assert_int_equal(gm_provider_nvml.p2p(st, 1, 1, GM_P2P_READ, &s, &err), GM_OK);
    assert_int_equal(s, GM_P2P_NOT_SUPPORTED);
    close_st(state, st);

    /* A scenario without a "p2p" section: the driver says NOT_SUPPORTED. */
    st = open_ok(state, &fake_current, "processes.json");
    assert_int_equal(gm_provider_nvml.p2p(st, 0, 1, GM_P2P_READ, &s, &err), GM_ENOTSUP);
    assert_non_null(strstr(err.msg, "Not Supported (3)"));
    close_st(state, st);
}

/* ---- health and board readings, their cadences and the not-supported rule ------------------ */

typedef unsigned long (*xid_delivered_fn)(unsigned);

static void test_health_current_driver(void **state)
{
    void *st = open_ok(state, &fake_current, "health.json");
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    assert_string_equal(g->serial, "1652923012345");
    assert_string_equal(g->vbios, "96.00.A5.00.01");
    check_metric(g, GM_M_PCI_DEVICE_ID, 0x233010DE);
    check_metric(g, GM_M_PCI_SUBSYS_ID, 0x16C110DE);
    check_metric(g, GM_M_TEMP_MEM_C, 71);
    check_metric(g, GM_M_POWER_AVG_MW, 511870);
    check_metric(g, GM_M_POWER_INSTANT_MW, 515620);
    check_metric(g, GM_M_POWER_REQ_LIMIT_MW, 700000);
    check_metric(g, GM_M_POWER_DEFAULT_LIMIT_MW, 700000);
    check_metric(g, GM_M_POWER_MIN_LIMIT_MW, 200000);
    check_metric(g, GM_M_POWER_MAX_LIMIT_MW, 700000);
    check_metric(g, GM_M_CLOCK_VIDEO_MHZ, 1545);
    check_metric(g, GM_M_UTIL_JPEG_PCT, 0);
    check_metric(g, GM_M_PCIE_GEN_GPU_MAX, 5);
    check_metric(g, GM_M_PCIE_REPLAY, 9);
    check_metric(g, GM_M_THROTTLE_SUPPORTED, 511);
    check_metric(g, GM_M_COMPUTE_MODE, 0);
    check_metric(g, GM_M_COMPUTE_CAP, 90);
    check_metric(g, GM_M_MIG_MODE_CUR, 0);
    check_metric(g, GM_M_ECC_MODE_CUR, 1);
    check_metric(g, GM_M_ECC_MODE_PENDING, 1);
    check_metric(g, GM_M_ENC_SESSIONS, 0);
    check_metric(g, GM_M_ECC_CORR_VOL, 12);
    check_metric(g, GM_M_ECC_CORR_AGG, 40);
    check_metric(g, GM_M_ECC_UNCORR_VOL, 2);
    check_metric(g, GM_M_ECC_UNCORR_AGG, 3);
    check_metric(g, GM_M_ECC_CORR_VOL_DRAM, 10);
    check_metric(g, GM_M_ECC_UNCORR_AGG_DRAM, 3);
    check_metric(g, GM_M_ECC_CORR_AGG_SRAM, 10);
    check_absent(g, GM_M_ECC_CORR_VOL_L1_CACHE); /* a location the driver does not count */
    check_metric(g, GM_M_RETIRED_SBE, 0);
    check_metric(g, GM_M_RETIRED_DBE, 2);
    check_metric(g, GM_M_RETIRED_PENDING, 0);
    check_metric(g, GM_M_REMAP_CORR, 1);
    check_metric(g, GM_M_REMAP_UNCORR, 2);
    check_metric(g, GM_M_REMAP_PENDING, 0);
    check_metric(g, GM_M_REMAP_FAILURE, 0);
    check_metric(g, GM_M_REMAP_HIST_MAX, 2558);
    check_metric(g, GM_M_REMAP_HIST_HIGH, 2);
    check_metric(g, GM_M_VIOL_POWER_NS, 1500000000);
    check_metric(g, GM_M_VIOL_THERMAL_NS, 250000);
    check_metric(g, GM_M_VIOL_HW_THERMAL_NS, 7000);
    check_metric(g, GM_M_NVLINK_ACTIVE, 17);
    check_metric(g, GM_M_NVLINK_TX_KIB, 1048576);
    check_metric(g, GM_M_NVLINK_RX_KIB, 2097152);
    check_metric(g, GM_M_NVLINK_CRC_FLIT, 1);
    check_metric(g, GM_M_NVLINK_REPLAY, 3);
    /* GPM needs two samples; XID is watched only when asked. */
    check_absent(g, GM_M_PROF_SM_ACTIVE_PCT);
    check_absent(g, GM_M_XID_LAST);
    sample_ok(st, false);
    g = &snap->gpus[0];
    check_metric(g, GM_M_PROF_GR_ACTIVE_PCT, 91.5);
    check_metric(g, GM_M_PROF_SM_ACTIVE_PCT, 80.25);
    check_metric(g, GM_M_PROF_TENSOR_PCT, 55.5);
    check_metric(g, GM_M_PROF_DRAM_PCT, 33);
    check_metric(g, GM_M_PROF_PCIE_TX_BPS, 100 * 1048576.0);
    check_metric(g, GM_M_PROF_NVLINK_RX_BPS, 2000 * 1048576.0);
    /* Counters served from the cache between their reads keep their values. */
    check_metric(g, GM_M_ECC_UNCORR_VOL, 2);
    check_metric(g, GM_M_COMPUTE_CAP, 90);

    /* GPU 1: ECC off (no counter asked), MIG on, exclusive process, no GPM, no serial. */
    const gm_gpu *g1 = &snap->gpus[1];
    assert_string_equal(g1->serial, "");
    check_metric(g1, GM_M_ECC_MODE_CUR, 0);
    check_metric(g1, GM_M_ECC_MODE_PENDING, 1);
    check_absent(g1, GM_M_ECC_CORR_VOL);
    check_metric(g1, GM_M_MIG_MODE_CUR, 1);
    check_metric(g1, GM_M_COMPUTE_MODE, 3);
    check_metric(g1, GM_M_COMPUTE_CAP, 80);
    check_absent(g1, GM_M_PROF_SM_ACTIVE_PCT);
    check_absent(g1, GM_M_TEMP_MEM_C);
    check_absent(g1, GM_M_REMAP_CORR);
    check_absent(g1, GM_M_NVLINK_ACTIVE);

    /* Retired pages with their addresses and times. */
    uint64_t addr[4], when[4];
    size_t n = 0;
    gm_error err = {0};
    assert_int_equal(gm_provider_nvml.retired_pages(st, 0, 1, addr, when, 4, &n, &err), GM_OK);
    assert_int_equal(n, 2);
    assert_int_equal(addr[1], 8192);
    assert_int_equal(when[0], 1764117772);
    assert_int_equal(gm_provider_nvml.retired_pages(st, 0, 0, addr, when, 4, &n, &err), GM_OK);
    assert_int_equal(n, 0);
    assert_int_equal(gm_provider_nvml.retired_pages(st, 1, 0, addr, when, 4, &n, &err), GM_ENOTSUP);
    close_st(state, st);
}

/* An every-sample getter the GPU answered NOT_SUPPORTED (the fan here) is asked again only at
 * the slow period, not every sample; other refusals (NO_PERMISSION) and supported getters are
 * asked every sample. The metric stays absent either way. */
static void test_every_unsupported_asked_rarely(void **state)
{
    const char *fan = "nvmlDeviceGetFanSpeed", *temp = "nvmlDeviceGetTemperature",
               *limit = "nvmlDeviceGetEnforcedPowerLimit";
    unsigned long fan0 = fake_current.calls(fan), temp0 = fake_current.calls(temp),
                  limit0 = fake_current.calls(limit);
    void *st = open_ok(state, &fake_current, "unsupported.json"); /* default slow period: 10 s */
    for (int i = 0; i < 3; i++) {
        sample_ok(st, false);
        check_absent(&snap->gpus[0], GM_M_FAN_PCT);
        check_metric(&snap->gpus[0], GM_M_TEMP_C, 50);
    }
    assert_int_equal(fake_current.calls(fan) - fan0, 1);
    assert_int_equal(fake_current.calls(temp) - temp0, 3);
    assert_int_equal(fake_current.calls(limit) - limit0, 3); /* NO_PERMISSION: asked again */
    close_st(state, st);

    /* At the slow period it is asked again (here every sample). */
    use_scenario("unsupported.json");
    gm_collector_options fast = {.nvml_lib = fake_current.path, .slow_period_ms = -1};
    void *st2 = NULL;
    assert_int_equal(gm_provider_nvml.open(&fast, &st2, NULL), GM_OK);
    track(state, st2);
    fan0 = fake_current.calls(fan);
    sample_ok(st2, false);
    sample_ok(st2, false);
    assert_int_equal(fake_current.calls(fan) - fan0, 2);
    check_absent(&snap->gpus[0], GM_M_FAN_PCT);
    close_st(state, st2);
}

/* A getter of the metric tables read at the slow period that the GPU answered NOT_SUPPORTED
 * (energy, PCIe throughput here) is not asked again, even with the slow getters due every
 * sample, as the health getters; an unknown value (pstate 32) is no refusal: asked each sample. */
static void test_slow_unsupported_not_asked_again(void **state)
{
    const char *energy = "nvmlDeviceGetTotalEnergyConsumption",
               *pcie = "nvmlDeviceGetPcieThroughput", *pstate = "nvmlDeviceGetPerformanceState";
    use_scenario("unsupported.json");
    gm_collector_options fast = {.nvml_lib = fake_current.path, .slow_period_ms = -1};
    unsigned long energy0 = fake_current.calls(energy), pcie0 = fake_current.calls(pcie),
                  pstate0 = fake_current.calls(pstate);
    void *st = NULL;
    assert_int_equal(gm_provider_nvml.open(&fast, &st, NULL), GM_OK);
    track(state, st);
    for (int i = 0; i < 3; i++) {
        sample_ok(st, false);
        check_absent(&snap->gpus[0], GM_M_ENERGY_MJ);
        check_absent(&snap->gpus[0], GM_M_PCIE_TX_KBPS);
        check_absent(&snap->gpus[0], GM_M_PSTATE);
    }
    assert_int_equal(fake_current.calls(energy) - energy0, 1);
    assert_int_equal(fake_current.calls(pcie) - pcie0, 2); /* TX and RX, once each */
    assert_int_equal(fake_current.calls(pstate) - pstate0, 3);
    close_st(state, st);
}

/* Persistence mode is configuration an administrator changes: read once a minute, the last
 * reading served in between (as compute mode). */
static void test_persistence_mode_once_a_minute(void **state)
{
    const char *fn = "nvmlDeviceGetPersistenceMode";
    unsigned long n0 = fake_current.calls(fn);
    void *st = open_ok(state, &fake_current, "two_gpus.json");
    for (int i = 0; i < 3; i++) {
        sample_ok(st, false);
        check_metric(&snap->gpus[0], GM_M_PERSISTENCE_MODE, 1);
        check_metric(&snap->gpus[1], GM_M_PERSISTENCE_MODE, 0);
    }
    assert_int_equal(fake_current.calls(fn) - n0, 2); /* once per GPU */
    close_st(state, st);
}

/* Unsupported health getters are asked once, then no more. */
static void test_health_unsupported_not_asked_again(void **state)
{
    void *st = open_ok(state, &fake_current, "health.json");
    gm_collector_options opt = {0};
    (void)opt;
    unsigned long ecc0 = fake_current.calls("nvmlDeviceGetMemoryErrorCounter");
    sample_ok(st, false);
    unsigned long first = fake_current.calls("nvmlDeviceGetMemoryErrorCounter") - ecc0;
    /* GPU 0 only (ECC is off on GPU 1): 7 locations x 4 counters. */
    assert_int_equal(first, 28);
    close_st(state, st);

    /* With every sample due (slow period < 0), the unsupported locations are skipped. */
    use_scenario("health.json");
    gm_collector_options fast = {.nvml_lib = fake_current.path, .slow_period_ms = -1};
    void *st2 = NULL;
    assert_int_equal(gm_provider_nvml.open(&fast, &st2, NULL), GM_OK);
    track(state, st2);
    sample_ok(st2, false);
    ecc0 = fake_current.calls("nvmlDeviceGetMemoryErrorCounter");
    sample_ok(st2, false);
    /* dram and sram: 2 locations x 4 counters answered; the 5 others said NOT_SUPPORTED. */
    assert_int_equal(fake_current.calls("nvmlDeviceGetMemoryErrorCounter") - ecc0, 8);
    close_st(state, st2);
}

static void test_health_old_driver_absent(void **state)
{
    void *st = open_ok(state, &fake_old, "health.json");
    sample_ok(st, false);
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_UTIL_GPU_PCT, 87); /* the core set still works */
    assert_string_equal(g->serial, "");
    assert_string_equal(g->vbios, "");
    static const gm_metric health[] = {
        GM_M_TEMP_MEM_C,         GM_M_POWER_AVG_MW,  GM_M_POWER_REQ_LIMIT_MW, GM_M_ECC_MODE_CUR,
        GM_M_ECC_UNCORR_VOL,     GM_M_RETIRED_DBE,   GM_M_REMAP_CORR,         GM_M_PCIE_REPLAY,
        GM_M_VIOL_POWER_NS,      GM_M_NVLINK_ACTIVE, GM_M_PROF_SM_ACTIVE_PCT, GM_M_COMPUTE_CAP,
        GM_M_THROTTLE_SUPPORTED, GM_M_XID_LAST,
    };
    for (size_t i = 0; i < sizeof health / sizeof *health; i++)
        check_absent(g, health[i]);
    uint64_t addr[1], when[1];
    size_t n;
    gm_error err = {0};
    assert_int_equal(gm_provider_nvml.retired_pages(st, 0, 1, addr, when, 1, &n, &err), GM_ENOTSUP);
    close_st(state, st);
}

/* PCI class codes and infoROM versions are read with the identity, once; accounting and GSP modes
 * at the static cadence; the T.Limit margin each sample. The old driver has none of them. */
static void test_static_identity_fields(void **state)
{
    unsigned long ext0 = fake_current.calls("nvmlDeviceGetPciInfoExt");
    unsigned long rom0 = fake_current.calls("nvmlDeviceGetInforomVersion");
    unsigned long img0 = fake_current.calls("nvmlDeviceGetInforomImageVersion");
    void *st = open_ok(state, &fake_current, "h100-590.json");
    sample_ok(st, false);
    unsigned long acct1 = fake_current.calls("nvmlDeviceGetAccountingMode");
    unsigned long gsp1 = fake_current.calls("nvmlDeviceGetGspFirmwareMode");
    unsigned long margin1 = fake_current.calls("nvmlDeviceGetMarginTemperature");
    sample_ok(st, false);
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_PCI_BASE_CLASS, 3);
    check_metric(g, GM_M_PCI_SUB_CLASS, 2);
    check_metric(g, GM_M_ACCOUNTING_MODE, 0);
    check_metric(g, GM_M_ACCOUNTING_BUFFER, 4000);
    check_metric(g, GM_M_GSP_MODE_CUR, 1);
    check_metric(g, GM_M_GSP_MODE_DEFAULT, 1);
    check_metric(g, GM_M_TEMP_TLIMIT_C, 46);
    assert_string_equal(g->inforom[GM_INFOROM_IMG], "G520.0200.00.05");
    assert_string_equal(g->inforom[GM_INFOROM_OEM], "2.1");
    assert_string_equal(g->inforom[GM_INFOROM_ECC], "7.16");
    assert_string_equal(g->inforom[GM_INFOROM_PWR], ""); /* NOT_SUPPORTED on this board */
    /* Identity: once at open, whatever the samples. */
    assert_int_equal(fake_current.calls("nvmlDeviceGetPciInfoExt") - ext0, 1);
    assert_int_equal(fake_current.calls("nvmlDeviceGetInforomImageVersion") - img0, 1);
    assert_int_equal(fake_current.calls("nvmlDeviceGetInforomVersion") - rom0, 3);
    /* Static cadence: not again within the minute; the margin: every sample. */
    assert_int_equal(fake_current.calls("nvmlDeviceGetAccountingMode"), acct1);
    assert_int_equal(fake_current.calls("nvmlDeviceGetGspFirmwareMode"), gsp1);
    assert_int_equal(fake_current.calls("nvmlDeviceGetMarginTemperature") - margin1, 2);
    close_st(state, st);

    st = open_ok(state, &fake_old, "h100-590.json");
    sample_ok(st, false);
    g = &snap->gpus[0];
    check_metric(g, GM_M_TEMP_C, 41);
    static const gm_metric absent[] = {
        GM_M_PCI_BASE_CLASS, GM_M_PCI_SUB_CLASS,    GM_M_ACCOUNTING_MODE, GM_M_ACCOUNTING_BUFFER,
        GM_M_GSP_MODE_CUR,   GM_M_GSP_MODE_DEFAULT, GM_M_TEMP_TLIMIT_C};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        check_absent(g, absent[i]);
    for (int k = 0; k < GM_INFOROM__COUNT; k++)
        assert_string_equal(g->inforom[k], "");
    close_st(state, st);
}

static const gm_metric mode_metrics[] = {
    GM_M_DISPLAY_ATTACHED,        GM_M_DISPLAY_ACTIVE,
    GM_M_ADDRESSING_MODE,         GM_M_C2C_MODE,
    GM_M_RECOVERY_ACTION,         GM_M_EDPP_MULTIPLIER_PCT,
    GM_M_PROT_MEM_TOTAL_BYTES,    GM_M_PROT_MEM_USED_BYTES,
    GM_M_PROT_MEM_FREE_BYTES,     GM_M_FABRIC_STATE,
    GM_M_FABRIC_STATUS,           GM_M_FABRIC_CLIQUE_ID,
    GM_M_SRAM_UNCORR_VOL_PARITY,  GM_M_SRAM_UNCORR_VOL_SECDED,
    GM_M_SRAM_UNCORR_AGG_PARITY,  GM_M_SRAM_UNCORR_AGG_SECDED,
    GM_M_SRAM_THRESHOLD_EXCEEDED, GM_M_SRAM_UNCORR_AGG_L2,
    GM_M_SRAM_UNCORR_AGG_SM,      GM_M_SRAM_UNCORR_AGG_MCU,
    GM_M_SRAM_UNCORR_AGG_PCIE,    GM_M_SRAM_UNCORR_AGG_OTHER,
};

/* Display, addressing and C2C modes once a minute; fabric, protected memory and SRAM status at the
 * slow period; the recovery action and EDPp multiplier through field values. The old driver has
 * none of them. */
static void test_modes_fabric_sram(void **state)
{
    void *st = open_ok(state, &fake_current, "h100-590.json");
    sample_ok(st, false);
    static const char *const once[] = {
        "nvmlDeviceGetDisplayMode",        "nvmlDeviceGetDisplayActive",
        "nvmlDeviceGetAddressingMode",     "nvmlDeviceGetC2cModeInfoV",
        "nvmlDeviceGetGpuFabricInfoV",     "nvmlDeviceGetConfComputeProtectedMemoryUsage",
        "nvmlDeviceGetSramEccErrorStatus",
    };
    unsigned long first[sizeof once / sizeof *once];
    for (size_t i = 0; i < sizeof once / sizeof *once; i++)
        first[i] = fake_current.calls(once[i]);
    sample_ok(st, false);
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_DISPLAY_ATTACHED, 1);
    check_metric(g, GM_M_DISPLAY_ACTIVE, 0);
    check_metric(g, GM_M_ADDRESSING_MODE, 0);
    check_metric(g, GM_M_C2C_MODE, 0);
    check_metric(g, GM_M_RECOVERY_ACTION, 0);
    check_metric(g, GM_M_EDPP_MULTIPLIER_PCT, 100);
    check_metric(g, GM_M_PROT_MEM_TOTAL_BYTES, 0);
    check_metric(g, GM_M_FABRIC_STATE, 3);
    check_metric(g, GM_M_FABRIC_STATUS, 0);
    check_metric(g, GM_M_FABRIC_CLIQUE_ID, 0);
    check_metric(g, GM_M_SRAM_THRESHOLD_EXCEEDED, 0);
    check_metric(g, GM_M_SRAM_UNCORR_AGG_OTHER, 0);
    assert_string_equal(g->fabric_cluster_uuid, "00000000-0000-0000-0000-000000000000");
    assert_string_equal(g->fabric_status, "Success");
    /* Not read again within the minute / slow period, yet still reported. */
    for (size_t i = 0; i < sizeof once / sizeof *once; i++)
        if (fake_current.calls(once[i]) != first[i] || first[i] == 0)
            fail_msg("%s: %lu calls after the first sample, %lu after three", once[i], first[i],
                     fake_current.calls(once[i]));
    close_st(state, st);

    st = open_ok(state, &fake_old, "h100-590.json");
    sample_ok(st, false);
    g = &snap->gpus[0];
    check_metric(g, GM_M_TEMP_C, 41);
    for (size_t i = 0; i < sizeof mode_metrics / sizeof *mode_metrics; i++)
        check_absent(g, mode_metrics[i]);
    assert_string_equal(g->fabric_cluster_uuid, "");
    assert_string_equal(g->fabric_status, "");
    close_st(state, st);
}

/* A driver that knows only the v2 fabric struct gets v2; a registration still in progress
 * reports its state without status, clique or cluster; calls a GPU lacks leave their metrics
 * absent. */
/* What nvidia-smi -q prints besides (the H200 on driver 580): virtualization mode, customer
 * boost clock, T.Limit thresholds (signed field values), replay rollovers, supported clocks
 * (on demand). Static reads happen once over several samples; the target temperature the
 * board does not support stays absent. */
static void test_dropin_reads_present(void **state)
{
    unsigned long virt0 = fake_current.calls("nvmlDeviceGetVirtualizationMode");
    unsigned long boost0 = fake_current.calls("nvmlDeviceGetMaxCustomerBoostClock");
    void *st = open_ok(state, &fake_current, "h200-580.json");
    for (int i = 0; i < 3; i++)
        sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_VIRT_MODE, 1);
    check_metric(g, GM_M_CLOCK_MAX_BOOST_GR_MHZ, 1980);
    check_metric(g, GM_M_TEMP_SHUTDOWN_TLIMIT_C, -8);
    check_metric(g, GM_M_TEMP_SLOWDOWN_TLIMIT_C, -2);
    check_metric(g, GM_M_TEMP_MEM_MAX_TLIMIT_C, 0);
    check_metric(g, GM_M_TEMP_GPU_MAX_TLIMIT_C, 0);
    check_metric(g, GM_M_PCIE_REPLAY_ROLLOVER, 0);
    check_absent(g, GM_M_TEMP_TARGET_C);
    check_absent(g, GM_M_TEMP_TARGET_MIN_C);
    check_absent(g, GM_M_TEMP_TARGET_MAX_C);
    assert_int_equal(fake_current.calls("nvmlDeviceGetVirtualizationMode") - virt0, 1);
    assert_int_equal(fake_current.calls("nvmlDeviceGetMaxCustomerBoostClock") - boost0, 1);

    unsigned mhz[256];
    size_t n = 0;
    gm_error err = {0};
    assert_int_equal(gm_provider_nvml.supported_clocks(st, 0, 0, mhz, 256, &n, &err), GM_OK);
    assert_int_equal(n, 2);
    assert_int_equal(mhz[0], 3201);
    assert_int_equal(mhz[1], 2201);
    assert_int_equal(gm_provider_nvml.supported_clocks(st, 0, 2201, mhz, 256, &n, &err), GM_OK);
    assert_int_equal(n, 110);
    assert_int_equal(mhz[0], 1980);
    assert_int_equal(mhz[109], 345);
    /* A short buffer still tells the count. */
    assert_int_equal(gm_provider_nvml.supported_clocks(st, 0, 3201, mhz, 4, &n, &err), GM_OK);
    assert_int_equal(n, 110);
    close_st(state, st);
}

/* The same scenario on a library without those symbols: each read absent, nothing else lost. */
static void test_dropin_reads_absent(void **state)
{
    void *st = open_ok(state, &fake_old, "h200-580.json");
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_UTIL_GPU_PCT, 0);
    static const gm_metric absent[] = {GM_M_VIRT_MODE,
                                       GM_M_CLOCK_MAX_BOOST_GR_MHZ,
                                       GM_M_TEMP_SHUTDOWN_TLIMIT_C,
                                       GM_M_PCIE_REPLAY_ROLLOVER,
                                       GM_M_BAR1_TOTAL_BYTES,
                                       GM_M_PLATFORM_MODULE_ID};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        check_absent(g, absent[i]);
    unsigned mhz[4];
    size_t n = 7;
    gm_error err = {0};
    assert_int_equal(gm_provider_nvml.supported_clocks(st, 0, 0, mhz, 4, &n, &err), GM_ENOTSUP);
    close_st(state, st);
}

/* Opens the current fake on a scenario given as text (written to a temporary file). */
static void *open_text(void **state, const char *scenario)
{
    char path[] = "/tmp/gm-test-nvml-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(scenario);
    assert_int_equal(write(fd, scenario, n), (ssize_t)n);
    close(fd);
    setenv("GM_FAKE_NVML_SCENARIO", path, 1);
    gm_collector_options opt = {.nvml_lib = fake_current.path};
    void *st = NULL;
    gm_error err = {0};
    int rc = gm_provider_nvml.open(&opt, &st, &err);
    unlink(path);
    if (rc != GM_OK)
        fail_msg("open: %s", err.msg);
    track(state, st);
    return st;
}

/* The rest of nvidia-smi -q on the H200 of the 580 capture: the strings read once with the
 * identity, FBC stats, repair flags, memory power and EGM read; what the board answers
 * NOT_SUPPORTED to stays absent and is not asked again; configuration is read once over
 * several samples. */
static void test_smi_extra_h200(void **state)
{
    static const char *const fns[] = {"nvmlDeviceGetBoardPartNumber",
                                      "nvmlDeviceGetGspFirmwareVersion",
                                      "nvmlDeviceGetPdi",
                                      "nvmlDeviceGetCapabilities",
                                      "nvmlDeviceGetHostVgpuMode",
                                      "nvmlDeviceGetLastBBXFlushTime",
                                      "nvmlDeviceGetDramEncryptionMode",
                                      "nvmlDeviceGetAutoBoostedClocksEnabled",
                                      "nvmlDeviceGetBridgeChipInfo"};
    enum { NF = sizeof fns / sizeof *fns };
    unsigned long before[NF];
    for (size_t i = 0; i < NF; i++)
        before[i] = fake_current.calls(fns[i]);
    void *st = open_ok(state, &fake_current, "h200-580.json");
    for (int i = 0; i < 3; i++)
        sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    assert_string_equal(g->board_part_number, "692-2G520-0282-001");
    assert_string_equal(g->gsp_firmware_version, "580.159.04");
    assert_string_equal(g->pdi, "0x6532c2bae99fea9c");
    check_metric(g, GM_M_FBC_SESSIONS, 0);
    check_metric(g, GM_M_FBC_FPS, 0);
    check_metric(g, GM_M_FBC_LATENCY_US, 0);
    check_metric(g, GM_M_REPAIR_CHANNEL_PENDING, 0);
    check_metric(g, GM_M_REPAIR_TPC_PENDING, 0);
    check_metric(g, GM_M_UNREPAIRABLE_MEMORY, 0);
    check_metric(g, GM_M_POWER_MEM_AVG_MW, 28140);
    check_metric(g, GM_M_EGM, 0);
    /* The memory scope is not the GPU's: its instant power is unsupported, the GPU's is read. */
    check_metric(g, GM_M_POWER_INSTANT_MW, 78910);
    static const gm_metric absent[] = {GM_M_BBX_FLUSH_TIME,
                                       GM_M_BBX_FLUSH_DURATION_US,
                                       GM_M_HOST_VGPU_MODE,
                                       GM_M_VGPU_HETERO_MODE,
                                       GM_M_BRIDGE_CHIP_TYPE,
                                       GM_M_BRIDGE_CHIP_FW,
                                       GM_M_PCIE_ATOMICS_OUT,
                                       GM_M_PCIE_ATOMICS_IN,
                                       GM_M_DRAM_ENC_CUR,
                                       GM_M_DRAM_ENC_PENDING,
                                       GM_M_POWER_MEM_INSTANT_MW,
                                       GM_M_POWER_MODULE_AVG_MW,
                                       GM_M_POWER_MODULE_LIMIT_MW,
                                       GM_M_POWER_MODULE_MAX_LIMIT_MW,
                                       GM_M_POWER_SMOOTHING,
                                       GM_M_POWER_PROFILES_REQUESTED,
                                       GM_M_AUTO_BOOST,
                                       GM_M_AUTO_BOOST_DEFAULT};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        check_absent(g, absent[i]);
    /* Three samples, one call each: identity once, configuration once a minute, and the calls
     * answered NOT_SUPPORTED never again. */
    for (size_t i = 0; i < NF; i++)
        if (fake_current.calls(fns[i]) - before[i] != 1)
            fail_msg("%s called %lu times", fns[i], fake_current.calls(fns[i]) - before[i]);
    close_st(state, st);
}

/* A board that answers them all: each value decoded from its struct (version words checked by
 * the fake), the module power and limits from the module scope, masks as NVML gives them. */
static void test_smi_extra_supported(void **state)
{
    void *st = open_text(
        state,
        "{\"gpus\": [{\"name\": \"NVIDIA GB200\", \"temp\": 40, \"power_avg_mw\": 500000,"
        " \"bbx_flush_time\": 1700000000, \"bbx_flush_duration_us\": 1500,"
        " \"host_vgpu_mode\": 1, \"vgpu_heterogeneous_mode\": 1,"
        " \"bridge_chips\": [{\"type\": 1, \"fw\": 42}, {\"type\": 0, \"fw\": 7}],"
        " \"pcie_atomics_out\": 127, \"pcie_atomics_in\": 3,"
        " \"fbc_sessions\": 2, \"fbc_fps\": 30, \"fbc_latency\": 900,"
        " \"dram_encryption\": 1, \"dram_encryption_pending\": 0,"
        " \"repair_channel_pending\": 1, \"repair_tpc_pending\": 0, \"unrepairable_memory\": 1,"
        " \"memory_power_avg_mw\": 30000, \"memory_power_instant_mw\": 31000,"
        " \"module_power_avg_mw\": 900000, \"module_power_instant_mw\": 910000,"
        " \"module_power_limit_mw\": 2700000, \"module_power_req_limit_mw\": 2600000,"
        " \"module_power_default_limit_mw\": 2700000, \"module_power_min_limit_mw\": 1000000,"
        " \"module_power_max_limit_mw\": 2700000, \"power_smoothing\": 1,"
        " \"power_profiles_requested\": 33, \"power_profiles_enforced\": 1,"
        " \"auto_boost\": 1, \"auto_boost_default\": 0, \"capabilities\": 1}]}");
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_POWER_AVG_MW, 500000);
    const struct {
        gm_metric m;
        double v;
    } want[] = {
        {GM_M_BBX_FLUSH_TIME, 1700000000},
        {GM_M_BBX_FLUSH_DURATION_US, 1500},
        {GM_M_HOST_VGPU_MODE, 1},
        {GM_M_VGPU_HETERO_MODE, 1},
        {GM_M_BRIDGE_CHIP_TYPE, 1},
        {GM_M_BRIDGE_CHIP_FW, 42},
        {GM_M_PCIE_ATOMICS_OUT, 127},
        {GM_M_PCIE_ATOMICS_IN, 3},
        {GM_M_FBC_SESSIONS, 2},
        {GM_M_FBC_FPS, 30},
        {GM_M_FBC_LATENCY_US, 900},
        {GM_M_DRAM_ENC_CUR, 1},
        {GM_M_DRAM_ENC_PENDING, 0},
        {GM_M_REPAIR_CHANNEL_PENDING, 1},
        {GM_M_REPAIR_TPC_PENDING, 0},
        {GM_M_UNREPAIRABLE_MEMORY, 1},
        {GM_M_POWER_MEM_AVG_MW, 30000},
        {GM_M_POWER_MEM_INSTANT_MW, 31000},
        {GM_M_POWER_MODULE_AVG_MW, 900000},
        {GM_M_POWER_MODULE_INSTANT_MW, 910000},
        {GM_M_POWER_MODULE_LIMIT_MW, 2700000},
        {GM_M_POWER_MODULE_REQ_LIMIT_MW, 2600000},
        {GM_M_POWER_MODULE_DEFAULT_LIMIT_MW, 2700000},
        {GM_M_POWER_MODULE_MIN_LIMIT_MW, 1000000},
        {GM_M_POWER_MODULE_MAX_LIMIT_MW, 2700000},
        {GM_M_POWER_SMOOTHING, 1},
        {GM_M_POWER_PROFILES_REQUESTED, 33},
        {GM_M_POWER_PROFILES_ENFORCED, 1},
        {GM_M_AUTO_BOOST, 1},
        {GM_M_AUTO_BOOST_DEFAULT, 0},
        {GM_M_EGM, 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        check_metric(g, want[i].m, want[i].v);
    /* Without the strings in the scenario: NOT_SUPPORTED, left empty. */
    assert_string_equal(g->board_part_number, "");
    assert_string_equal(g->gsp_firmware_version, "");
    assert_string_equal(g->pdi, "");
    close_st(state, st);
}

/* A library without the entry points (the old-driver fake): every one absent, nothing else
 * lost, nothing failed. */
static void test_smi_extra_absent_symbols(void **state)
{
    void *st = open_ok(state, &fake_old, "h200-580.json");
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_UTIL_GPU_PCT, 0);
    assert_string_equal(g->board_part_number, "");
    assert_string_equal(g->gsp_firmware_version, "");
    assert_string_equal(g->pdi, "");
    for (int m = GM_M_BBX_FLUSH_TIME; m <= GM_M_EGM; m++)
        check_absent(g, (gm_metric)m);
    close_st(state, st);
}

static void test_fabric_v2_in_progress(void **state)
{
    char path[] = "/tmp/gm-test-nvml-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char scenario[] =
        "{\"gpus\": [{\"name\": \"NVIDIA H100\", \"temp\": 40, \"fabric_struct_version\": 2,"
        " \"fabric_state\": 2, \"fabric_status\": 0, \"fabric_clique_id\": 7,"
        " \"fabric_cluster_uuid\": \"0123abcd-0000-0000-0000-00000000ffee\","
        " \"recovery_action\": 4, \"addressing_mode\": 2}]}";
    assert_int_equal(write(fd, scenario, sizeof scenario - 1), (ssize_t)(sizeof scenario - 1));
    close(fd);
    setenv("GM_FAKE_NVML_SCENARIO", path, 1);
    gm_collector_options opt = {.nvml_lib = fake_current.path};
    void *st = NULL;
    gm_error err = {0};
    int rc = gm_provider_nvml.open(&opt, &st, &err);
    unlink(path);
    if (rc != GM_OK)
        fail_msg("open: %s", err.msg);
    track(state, st);
    sample_ok(st, false);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_FABRIC_STATE, 2);
    check_absent(g, GM_M_FABRIC_STATUS);
    check_absent(g, GM_M_FABRIC_CLIQUE_ID);
    assert_string_equal(g->fabric_cluster_uuid, "");
    assert_string_equal(g->fabric_status, "");
    check_metric(g, GM_M_RECOVERY_ACTION, 4);
    check_metric(g, GM_M_ADDRESSING_MODE, 2);
    static const gm_metric absent[] = {GM_M_DISPLAY_ATTACHED, GM_M_C2C_MODE,
                                       GM_M_EDPP_MULTIPLIER_PCT, GM_M_PROT_MEM_TOTAL_BYTES,
                                       GM_M_SRAM_UNCORR_VOL_PARITY};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        check_absent(g, absent[i]);
    close_st(state, st);
}

/* XID errors are taken from the event set by the sampling pass, without waiting and at most
 * every 500 ms: nothing calls NVML between samples. A GPU that cannot be registered has none. */
static void test_xid_events(void **state)
{
    xid_delivered_fn delivered =
        (xid_delivered_fn)dlsym(fake_current.lib, "fake_nvml_xid_delivered");
    assert_non_null(delivered);
    use_scenario("health.json");
    gm_collector_options opt = {.nvml_lib = fake_current.path, .watch_xid = true};
    gm_error err = {0};
    void *st = NULL;
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_OK);
    track(state, st);
    sample_ok(st, false); /* read 1: nothing yet */
    check_metric(&snap->gpus[0], GM_M_XID_LAST, 0);
    check_metric(&snap->gpus[0], GM_M_XID_COUNT, 0);
    check_absent(&snap->gpus[0], GM_M_XID_TIME_MS);
    check_absent(&snap->gpus[1], GM_M_XID_LAST); /* registration refused: not watched */
    /* Between samples no thread waits on the event set. */
    unsigned long waits = fake_current.calls("nvmlEventSetWait_v2");
    assert_true(waits >= 1);
    struct timespec pause = {0, 550000000L};
    nanosleep(&pause, NULL);
    assert_int_equal(fake_current.calls("nvmlEventSetWait_v2"), waits);
    sample_ok(st, false); /* read 2: XID 79 becomes due, taken at the end of the pass */
    assert_int_equal(delivered(0), 1);
    nanosleep(&pause, NULL);
    sample_ok(st, false); /* read 3: XID 48 becomes due */
    assert_int_equal(delivered(0), 2);
    /* Within 500 ms of the last drain a pass does not ask. */
    waits = fake_current.calls("nvmlEventSetWait_v2");
    sample_ok(st, false);
    assert_int_equal(fake_current.calls("nvmlEventSetWait_v2"), waits);
    const gm_gpu *g = &snap->gpus[0];
    check_metric(g, GM_M_XID_LAST, 48);
    check_metric(g, GM_M_XID_COUNT, 2);
    assert_true(gm_gpu_has(g, GM_M_XID_TIME_MS));
    assert_true(g->v[GM_M_XID_TIME_MS] > 1.7e12);
    close_st(state, st);
    assert_true(fake_current.calls("nvmlEventSetFree") >= 1);
}

/* The old driver has no event API: XID stays absent, nothing fails. */
static void test_xid_events_old_driver(void **state)
{
    use_scenario("health.json");
    gm_collector_options opt = {.nvml_lib = fake_old.path, .watch_xid = true};
    gm_error err = {0};
    void *st = NULL;
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_OK);
    track(state, st);
    sample_ok(st, false);
    check_absent(&snap->gpus[0], GM_M_XID_LAST);
    close_st(state, st);
}

/* A MIG device's GPU, by the MIG device's own UUID (how Kubernetes allocates it). */
static void test_mig_parent(void **state)
{
    void *st = open_ok(state, &fake_current, "mig.json");
    char uuid[GM_UUID_LEN];
    gm_error err = {0};
    assert_int_equal(gm_provider_nvml.mig_parent(st, "MIG-5a2d0e2c-1c7e-5c4b-9c8e-0a6f8d5c2b11",
                                                 uuid, sizeof uuid, &err),
                     GM_OK);
    assert_string_equal(uuid, "GPU-3b9d0000-0000-4000-8000-000000000000");
    assert_int_equal(gm_provider_nvml.mig_parent(st, "MIG-8f1e6b3a-2d4c-5e7f-8a9b-1c2d3e4f5a6b",
                                                 uuid, sizeof uuid, &err),
                     GM_OK);
    assert_string_equal(uuid, "GPU-3b9d0000-0000-4000-8000-000000000000");
    /* An unknown UUID, and a whole GPU's (not a MIG device): errors, nothing written. */
    uuid[0] = '\0';
    assert_true(gm_provider_nvml.mig_parent(st, "MIG-00000000-0000-0000-0000-000000000000", uuid,
                                            sizeof uuid, &err) < 0);
    assert_non_null(strstr(err.msg, "MigDeviceHandle"));
    assert_true(gm_provider_nvml.mig_parent(st, "GPU-3b9d0000-0000-4000-8000-000000000001", uuid,
                                            sizeof uuid, &err) < 0);
    assert_string_equal(uuid, "");
    close_st(state, st);

    /* A driver before MIG cannot tell. */
    st = open_ok(state, &fake_old, "mig.json");
    assert_int_equal(gm_provider_nvml.mig_parent(st, "MIG-5a2d0e2c-1c7e-5c4b-9c8e-0a6f8d5c2b11",
                                                 uuid, sizeof uuid, &err),
                     GM_ENOTSUP);
    close_st(state, st);
}

static const gm_process *listed(uint32_t pid)
{
    for (size_t i = 0; i < snap->proc_count; i++)
        if (snap->procs[i].pid == pid)
            return &snap->procs[i];
    fail_msg("process %u not listed", (unsigned)pid);
    return NULL;
}

/* Per-process utilisation: one call per GPU per sample for all its processes, matched by PID;
 * a process without a sample stays unknown; a GPU that refuses the call is not asked again. */
static void test_process_utilization(void **state)
{
    void *st = open_ok(state, &fake_current, "h100-mig.json");
    unsigned long c0 = fake_current.calls("nvmlDeviceGetProcessUtilization");
    sample_ok(st, true);
    const gm_process *p = listed(6001);
    assert_int_equal(p->util_valid, 0xf);
    assert_int_equal(p->util_pct[GM_PROC_UTIL_SM], 87);
    assert_int_equal(p->util_pct[GM_PROC_UTIL_MEM], 41);
    assert_int_equal(p->util_pct[GM_PROC_UTIL_ENC], 0);
    assert_int_equal(p->util_pct[GM_PROC_UTIL_DEC], 0);
    p = listed(6003);
    assert_int_equal(p->util_valid, 0xf);
    assert_int_equal(p->util_pct[GM_PROC_UTIL_ENC], 12);
    assert_int_equal(p->util_pct[GM_PROC_UTIL_DEC], 30);
    /* No sample for it in the period: unknown, not 0. */
    assert_int_equal(listed(6002)->util_valid, 0);
    /* GPU 0 is in MIG mode, where NVML refuses the call. */
    assert_int_equal(listed(5001)->util_valid, 0);
    /* The second sample reads the newer sample, with one call (GPU 0 is not asked again). */
    sample_ok(st, true);
    assert_int_equal(listed(6001)->util_pct[GM_PROC_UTIL_SM], 89);
    assert_int_equal(fake_current.calls("nvmlDeviceGetProcessUtilization") - c0, 2 + 1);
    /* Without processes, no call. */
    sample_ok(st, false);
    assert_int_equal(fake_current.calls("nvmlDeviceGetProcessUtilization") - c0, 3);
    close_st(state, st);

    /* A driver or board that lacks it: every process's utilisation unknown. */
    st = open_ok(state, &fake_old, "h100-mig.json");
    sample_ok(st, true);
    for (size_t i = 0; i < snap->proc_count; i++)
        assert_int_equal(snap->procs[i].util_valid, 0);
    close_st(state, st);
}

/* GPM per MIG device: one sample per GPU instance per pass and one metrics call for its three
 * readings; nothing on the first pass; a reading the driver does not give stays absent; a
 * driver that gives no GPM per instance is asked once, then never again. */
static void test_mig_gpm(void **state)
{
    void *st = open_ok(state, &fake_current, "h100-mig.json");
    unsigned long s0 = fake_current.calls("nvmlGpmMigSampleGet");
    sample_ok(st, true);
    const gm_gpu *g = &snap->gpus[0];
    assert_int_equal(g->mig_count, 3);
    for (unsigned k = 0; k < 3; k++)
        assert_int_equal(g->mig[k].prof_valid, 0);
    assert_int_equal(fake_current.calls("nvmlGpmMigSampleGet") - s0, 3);
    unsigned long m0 = fake_current.calls("nvmlGpmMetricsGet");
    sample_ok(st, true);
    assert_int_equal(fake_current.calls("nvmlGpmMigSampleGet") - s0, 6);
    /* 3 instances, plus the GPU's own GPM reading */
    assert_int_equal(fake_current.calls("nvmlGpmMetricsGet") - m0, 4);
    const gm_mig_device *m = &g->mig[1];
    assert_int_equal(m->gpu_instance_id, 7);
    assert_int_equal(m->prof_valid, (1u << GM_MIG_PROF_SM_ACTIVE) | (1u << GM_MIG_PROF_DRAM));
    assert_float_equal(m->prof_pct[GM_MIG_PROF_SM_ACTIVE], 88, 0);
    assert_float_equal(m->prof_pct[GM_MIG_PROF_DRAM], 12.5, 0);
    m = &g->mig[0];
    assert_int_equal(m->prof_valid, 7);
    assert_true(m->prof_pct[GM_MIG_PROF_SM_ACTIVE] == 62.5 ||
                m->prof_pct[GM_MIG_PROF_SM_ACTIVE] == 64);
    assert_float_equal(m->prof_pct[GM_MIG_PROF_DRAM], 31.25, 0);
    assert_int_equal(g->mig[2].prof_valid, 7);
    assert_float_equal(g->mig[2].prof_pct[GM_MIG_PROF_TENSOR], 0, 0);
    /* The GPU not in MIG mode has no MIG device to sample. */
    assert_int_equal(snap->gpus[1].mig_count, 0);
    close_st(state, st);

    st = open_ok(state, &fake_current, "h100-mig-no-instance-gpm.json");
    s0 = fake_current.calls("nvmlGpmMigSampleGet");
    for (int i = 0; i < 3; i++) {
        sample_ok(st, true);
        assert_int_equal(snap->gpus[0].mig_count, 2);
        assert_int_equal(snap->gpus[0].mig[0].prof_valid, 0);
        assert_int_equal(snap->gpus[0].mig[1].prof_valid, 0);
    }
    assert_int_equal(fake_current.calls("nvmlGpmMigSampleGet") - s0, 1);
    close_st(state, st);
}

/* MIG: the devices of a GPU in MIG mode with their profile, instance ids and memory; the
 * processes placed in them; the list read once a minute, the memory every sample. */
static void test_mig_devices(void **state)
{
    void *st = open_ok(state, &fake_current, "h100-mig.json");
    sample_ok(st, true);
    const gm_gpu *g = &snap->gpus[0];
    assert_int_equal(g->mig_count, 3);
    assert_string_equal(g->mig[0].uuid, "MIG-0d2c6f9e-4a7b-5c3e-8f1d-2b9a6e4c7d10");
    assert_string_equal(g->mig[0].profile, "3g.40gb");
    assert_int_equal(g->mig[0].gpu_instance_id, 2);
    assert_int_equal(g->mig[0].compute_instance_id, 0);
    assert_true(g->mig[0].mem_valid);
    assert_int_equal(g->mig[0].mem_total_bytes, 42144366592ULL);
    assert_int_equal(g->mig[0].mem_used_bytes, 12884901888ULL);
    assert_int_equal(g->mig[0].mem_free_bytes, 29259464704ULL);
    assert_string_equal(g->mig[1].profile, "1g.10gb");
    assert_int_equal(g->mig[1].gpu_instance_id, 7);
    assert_string_equal(g->mig[2].uuid, "MIG-a1b2c3d4-e5f6-5a7b-8c9d-0e1f2a3b4c5d");
    const gm_mig_device *m = gm_gpu_process_mig(g, listed(5001));
    assert_non_null(m);
    assert_string_equal(m->uuid, g->mig[0].uuid);
    m = gm_gpu_process_mig(g, listed(5002));
    assert_non_null(m);
    assert_string_equal(m->uuid, g->mig[1].uuid);
    /* GPU 1 is not in MIG mode: no MIG device, its processes in none. */
    assert_int_equal(snap->gpus[1].mig_count, 0);
    assert_false(listed(6001)->instance_known);
    assert_null(gm_gpu_process_mig(&snap->gpus[1], listed(6001)));

    unsigned long list0 = fake_current.calls("nvmlDeviceGetMigDeviceHandleByIndex");
    unsigned long mem0 = fake_current.calls("nvmlDeviceGetMemoryInfo_v2");
    sample_ok(st, true);
    assert_int_equal(snap->gpus[0].mig_count, 3);
    assert_int_equal(fake_current.calls("nvmlDeviceGetMigDeviceHandleByIndex") - list0, 0);
    /* Two GPUs and three MIG devices. */
    assert_int_equal(fake_current.calls("nvmlDeviceGetMemoryInfo_v2") - mem0, 2 + 3);
    close_st(state, st);

    /* A MIG device destroyed between listings: its memory call fails, so the devices are
     * listed again at the next sample, without it. */
    json_t *root = load_fixture("h100-mig.json");
    json_object_set_new(
        json_array_get(
            json_object_get(json_array_get(json_object_get(root, "gpus"), 0), "mig_devices"), 2),
        "gone_after", json_integer(1));
    char path[] = "/tmp/gm-test-nvml-mig-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    setenv("GM_FAKE_NVML_SCENARIO", path, 1);
    gm_collector_options opt = {.nvml_lib = fake_current.path};
    gm_error err = {0};
    st = NULL;
    assert_int_equal(gm_provider_nvml.open(&opt, &st, &err), GM_OK);
    track(state, st);
    sample_ok(st, false);
    assert_int_equal(snap->gpus[0].mig_count, 3);
    sample_ok(st, false);
    assert_int_equal(snap->gpus[0].mig_count, 3);
    assert_false(snap->gpus[0].mig[2].mem_valid);
    sample_ok(st, false);
    assert_int_equal(snap->gpus[0].mig_count, 2);
    close_st(state, st);
    unlink(path);

    /* A driver before MIG: none. */
    st = open_ok(state, &fake_old, "h100-mig.json");
    sample_ok(st, true);
    assert_int_equal(snap->gpus[0].mig_count, 0);
    close_st(state, st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_current_driver_all_fields, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_old_driver_fallbacks, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_memory_v2_version_mismatch_falls_back, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_fields_absent, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_default_scenario_and_env_path, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_one_init_per_open, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_costly_getters_cadence, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_init_failure_message, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_library_not_found, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_no_gpus, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_gpu_lost_others_keep_updating, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_only_gpu_lost_is_not_an_error, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_gpu_failing_alone_and_all_failing, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_processes_grow_retry_and_dedupe, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_p2p, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_health_current_driver, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_every_unsupported_asked_rarely, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_persistence_mode_once_a_minute, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_health_unsupported_not_asked_again, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_slow_unsupported_not_asked_again, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_health_old_driver_absent, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_static_identity_fields, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_modes_fabric_sram, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_fabric_v2_in_progress, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_xid_events, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_xid_events_old_driver, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_mig_parent, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_process_utilization, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_mig_devices, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_mig_gpm, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_dropin_reads_present, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_dropin_reads_absent, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_smi_extra_h200, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_smi_extra_supported, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_smi_extra_absent_symbols, test_setup, test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
