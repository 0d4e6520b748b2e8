/* amd_checks.h - what the tests of the two AMD library providers (test_amd_smi.c against the fake
 * libamd_smi.so, test_rocm_smi.c against the fake librocm_smi64.so.1) do alike: pick a fake and
 * a scenario, open, assert readings, and the behaviours both libraries share (only the metrics
 * asked for, a GPU that disappears, one init per process). Their fixtures in
 * tests/fixtures/<dir>/ describe the same GPUs. Includes cmocka. */
#ifndef GM_TEST_AMD_CHECKS_H
#define GM_TEST_AMD_CHECKS_H

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

/* One library and its fake. The amd_test_* below are cmocka tests of it, all of them registered by
 * AMD_LIB_TESTS(&the_amd_lib) in a CMUnitTest array. */
typedef struct amd_lib {
    const gm_provider *provider;
    const char *lib_var;      /* GPU_MONITOR_..._LIB */
    const char *fake_env;     /* the variable with the fake's path (ctest sets it) */
    const char *scenario_var; /* GM_FAKE_..._SCENARIO */
    const char *fixtures;     /* under $GM_FIXTURES */
    const char *hooks;        /* fake_<hooks>_init_calls ... */
    const char *init_failed;  /* what opening says of init_error.json */
    const char *lost;         /* what the sample says when its only GPU is gone */
} amd_lib;

/* Points the provider at the fake in $fake_env with the fixture's GPUs. */
static inline void amd_use(const amd_lib *L, const char *fake_env, const char *fixture)
{
    const char *lib = getenv(fake_env);
    assert_non_null(lib);
    setenv(L->lib_var, lib, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", getenv("GM_FIXTURES"), L->fixtures, fixture);
    setenv(L->scenario_var, path, 1);
}

static inline void *amd_open_ok(const amd_lib *L)
{
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    int rc = L->provider->open(&o, &st, &err);
    if (rc != GM_OK)
        fail_msg("open: %d %s", rc, err.msg);
    return st;
}

static inline void assert_metric(const gm_gpu *g, gm_metric m, double want)
{
    if (!gm_gpu_has(g, m))
        fail_msg("GPU %u: %s absent", g->index, gm_metric_get(m)->name);
    if (g->v[m] != want)
        fail_msg("GPU %u: %s = %.17g, want %g", g->index, gm_metric_get(m)->name, g->v[m], want);
}

static inline void assert_absent(const gm_gpu *g, gm_metric m)
{
    if (gm_gpu_has(g, m))
        fail_msg("GPU %u: %s = %g, want absent", g->index, gm_metric_get(m)->name, g->v[m]);
}

static inline const gm_process *find_proc(const gm_snapshot *s, uint32_t pid, unsigned gpu)
{
    for (size_t i = 0; i < s->proc_count; i++)
        if (s->procs[i].pid == pid && s->procs[i].gpu_index == gpu)
            return &s->procs[i];
    return NULL;
}

/* Opens the provider on the fake at $fake_env with the fixture's GPUs and takes a first sample,
 * with processes, into *s (new); returns the open state, for amd_done. */
static inline void *amd_first_sample(const amd_lib *L, const char *fake_env, const char *fixture,
                                     gm_snapshot **s)
{
    amd_use(L, fake_env, fixture);
    void *st = amd_open_ok(L);
    *s = gm_snapshot_new();
    gm_error err = {0};
    int rc = L->provider->sample(st, *s, true, &err);
    if (rc != GM_OK)
        fail_msg("sample: %d %s", rc, err.msg);
    return st;
}

static inline void amd_done(const amd_lib *L, void *st, gm_snapshot *s)
{
    gm_snapshot_free(s);
    L->provider->close(st);
}

/* two_gpus.json, as both libraries read it: an MI300X without edge sensor, fan, average power or
 * memory activity; a Radeon PRO W7900 without ECC or energy counter. */
static inline void amd_check_two_gpus(const gm_snapshot *s)
{
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->driver_version, "6.8.5");
    const gm_gpu *mi = &s->gpus[0], *w = &s->gpus[1];
    assert_string_equal(mi->vendor, "AMD");
    assert_string_equal(mi->name, "AMD Instinct MI300X");
    assert_string_equal(mi->pci_bus_id, "0000:0c:00.0");
    assert_string_equal(mi->serial, "692251001124");
    assert_false(mi->lost);
    assert_metric(mi, GM_M_PCI_DEVICE_ID, 0x74a1);
    assert_metric(mi, GM_M_UTIL_GPU_PCT, 37);
    assert_absent(mi, GM_M_UTIL_MEM_PCT); /* not given, or NOT_SUPPORTED */
    assert_absent(mi, GM_M_TEMP_EDGE_C);  /* MI300X has no edge sensor */
    assert_metric(mi, GM_M_TEMP_JUNCTION_C, 52);
    assert_metric(mi, GM_M_TEMP_MEM_C, 44);
    assert_metric(mi, GM_M_TEMP_C, 52); /* no edge sensor: the junction's */
    assert_absent(mi, GM_M_POWER_AVG_MW);
    assert_metric(mi, GM_M_POWER_LIMIT_MW, 750000);
    assert_metric(mi, GM_M_ENERGY_MJ, 15625); /* 1e6 counts of 15.625 uJ */
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
    assert_string_equal(w->serial, ""); /* not given: not invented */
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

/* Per-read values: the W7900's utilization moves with each sample; a sample without processes
 * has none. */
static inline void amd_test_per_read(void **state)
{
    const amd_lib *L = *state;
    gm_snapshot *s;
    void *st = amd_first_sample(L, L->fake_env, "two_gpus.json", &s);
    assert_metric(&s->gpus[1], GM_M_UTIL_GPU_PCT, 10);
    gm_snapshot_reset(s);
    gm_error err = {0};
    assert_int_equal(L->provider->sample(st, s, false, &err), GM_OK);
    assert_metric(&s->gpus[1], GM_M_UTIL_GPU_PCT, 20);
    assert_int_equal(s->proc_count, 0);
    amd_done(L, st, s);
}

/* With only utilization and used memory asked for, the fixture's first GPU gives those and its
 * identity, none of the rest. */
static inline void amd_test_want(void **state)
{
    const amd_lib *L = *state;
    amd_use(L, L->fake_env, "two_gpus.json");
    gm_metric_set want = {0};
    gm_metric_set_add(&want, GM_M_UTIL_GPU_PCT);
    gm_metric_set_add(&want, GM_M_MEM_USED_BYTES);
    gm_collector_options o = {.want = &want};
    void *st = NULL;
    gm_error err = {0};
    assert_int_equal(L->provider->open(&o, &st, &err), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(L->provider->sample(st, s, false, &err), GM_OK);
    assert_metric(&s->gpus[0], GM_M_UTIL_GPU_PCT, 37);
    assert_absent(&s->gpus[0], GM_M_TEMP_JUNCTION_C);
    assert_absent(&s->gpus[0], GM_M_ECC_CORR_VOL);
    assert_absent(&s->gpus[0], GM_M_CLOCK_GR_MHZ);
    assert_absent(&s->gpus[0], GM_M_POWER_MW);
    assert_string_equal(s->gpus[0].name, "AMD Instinct MI300X"); /* identity always */
    gm_snapshot_free(s);
    L->provider->close(st);
}

/* lost.json: after their first read the second GPU disappears with FILE_ERROR, the third with
 * NOT_SUPPORTED where it answered before; both are lost with their identity kept, the first is
 * read, and the fourth, which never answered anything, is not lost: it supports nothing. */
static inline void amd_test_lost(void **state)
{
    const amd_lib *L = *state;
    amd_use(L, L->fake_env, "lost.json");
    void *st = amd_open_ok(L);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(L->provider->sample(st, s, true, &err), GM_OK);
    assert_false(s->gpus[1].lost);
    assert_metric(&s->gpus[1], GM_M_UTIL_GPU_PCT, 6);
    gm_snapshot_reset(s);
    assert_int_equal(L->provider->sample(st, s, true, &err), GM_OK);
    assert_int_equal(s->gpu_count, 4);
    assert_false(s->gpus[0].lost);
    assert_metric(&s->gpus[0], GM_M_UTIL_GPU_PCT, 5);
    for (unsigned i = 1; i <= 2; i++) {
        assert_true(s->gpus[i].lost);
        assert_absent(&s->gpus[i], GM_M_UTIL_GPU_PCT);
        assert_absent(&s->gpus[i], GM_M_MEM_TOTAL_BYTES);
    }
    assert_string_equal(s->gpus[1].pci_bus_id, "0000:22:00.0");
    assert_string_equal(s->gpus[2].pci_bus_id, "0000:38:00.0");
    assert_string_equal(s->gpus[2].name, "AMD Instinct MI300X");
    assert_false(s->gpus[3].lost);
    assert_absent(&s->gpus[3], GM_M_UTIL_GPU_PCT);
    gm_snapshot_free(s);
    L->provider->close(st);
}

/* The only GPU gone after one read: the next sample fails with GM_ELOST, naming the call and the
 * library's words for its status. */
static inline void amd_test_all_lost(void **state)
{
    const amd_lib *L = *state;
    amd_use(L, L->fake_env, "lost.json");
    char path[] = "/tmp/gm-test-amd-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char one[] = "{\"gpus\": [{\"bus_id\": \"0000:0c:00.0\", \"busy\": 1, "
                              "\"gone_after\": 1}]}";
    assert_int_equal(write(fd, one, sizeof one - 1), (ssize_t)(sizeof one - 1));
    close(fd);
    setenv(L->scenario_var, path, 1);
    void *st = amd_open_ok(L);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(L->provider->sample(st, s, false, &err), GM_OK);
    gm_snapshot_reset(s);
    assert_int_equal(L->provider->sample(st, s, false, &err), GM_ELOST);
    assert_string_equal(err.msg, L->lost);
    gm_snapshot_free(s);
    L->provider->close(st);
    unlink(path);
}

/* A test hook of the fake, opened by dl. */
static inline void *amd_hook(const amd_lib *L, void *dl, const char *name)
{
    char sym[128];
    snprintf(sym, sizeof sym, "fake_%s_%s", L->hooks, name);
    void *f = dlsym(dl, sym);
    if (!f)
        fail_msg("the fake exports no %s", sym);
    return f;
}

/* Two opens in one process: one library init, and its shut down once the last closes. */
static inline void amd_test_init_once(void **state)
{
    const amd_lib *L = *state;
    amd_use(L, L->fake_env, "two_gpus.json");
    void *dl = dlopen(getenv(L->fake_env), RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    unsigned long (*inits)(void) = (unsigned long (*)(void))amd_hook(L, dl, "init_calls");
    unsigned long (*downs)(void) = (unsigned long (*)(void))amd_hook(L, dl, "shutdown_calls");
    unsigned (*refs)(void) = (unsigned (*)(void))amd_hook(L, dl, "refcount");
    unsigned long i0 = inits(), d0 = downs();
    void *a = amd_open_ok(L), *b = amd_open_ok(L);
    assert_int_equal(inits() - i0, 1);
    assert_int_equal(refs(), 1);
    gm_snapshot *s = gm_snapshot_new();
    gm_error err = {0};
    assert_int_equal(L->provider->sample(b, s, false, &err), GM_OK);
    L->provider->close(a);
    assert_int_equal(downs() - d0, 0);
    assert_int_equal(L->provider->sample(b, s, false, &err), GM_OK);
    L->provider->close(b);
    assert_int_equal(downs() - d0, 1);
    assert_int_equal(refs(), 0);
    gm_snapshot_free(s);
    dlclose(dl);
}

/* init_error.json: the library's init fails, and opening says so in its words. */
static inline void amd_test_init_error(void **state)
{
    const amd_lib *L = *state;
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    amd_use(L, L->fake_env, "init_error.json");
    assert_int_equal(L->provider->open(&o, &st, &err), GM_EINIT);
    if (!strstr(err.msg, L->init_failed))
        fail_msg("open said \"%s\", not \"%s\"", err.msg, L->init_failed);
}

/* no_gpus.json: a library that sees no GPU is no provider. */
static inline void amd_test_no_gpus(void **state)
{
    const amd_lib *L = *state;
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    amd_use(L, L->fake_env, "no_gpus.json");
    assert_int_equal(L->provider->open(&o, &st, &err), GM_ENODEV);
}

/* A library that does not load: GM_ENOLIB, naming the path. */
static inline void amd_test_no_library(void **state)
{
    const amd_lib *L = *state;
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    setenv(L->lib_var, "/nonexistent-gm/libamd.so", 1);
    assert_int_equal(L->provider->open(&o, &st, &err), GM_ENOLIB);
    assert_non_null(strstr(err.msg, "/nonexistent-gm/libamd.so"));
}

#define AMD_LIB_TESTS(lib)                                             \
    cmocka_unit_test_prestate(amd_test_per_read, (void *)(lib)),       \
        cmocka_unit_test_prestate(amd_test_want, (void *)(lib)),       \
        cmocka_unit_test_prestate(amd_test_lost, (void *)(lib)),       \
        cmocka_unit_test_prestate(amd_test_all_lost, (void *)(lib)),   \
        cmocka_unit_test_prestate(amd_test_init_error, (void *)(lib)), \
        cmocka_unit_test_prestate(amd_test_no_gpus, (void *)(lib)),    \
        cmocka_unit_test_prestate(amd_test_no_library, (void *)(lib)), \
        cmocka_unit_test_prestate(amd_test_init_once, (void *)(lib))

/* Runs the n tests when ctest has said where the fake and the fixtures are (a main's answer). */
static inline int amd_run(const amd_lib *L, const struct CMUnitTest *tests, size_t n)
{
    if (!getenv(L->fake_env) || !getenv("GM_FIXTURES")) {
        fprintf(stderr, "%s and GM_FIXTURES must be set (ctest sets them)\n", L->fake_env);
        return 1;
    }
    return _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
}

#endif
