/* test_amd_sysfs.c - collect/sysfs and the amdgpu provider over the fake tree
 * (tests/fakes/fake_amd_sysfs.py): the root every device path goes under, the parsers of
 * amdgpu's text files, and an MI300X and a Radeon RX 580 read with what each lacks absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/provider.h"
#include "collect/sysfs.h"

static char root[256];

static void test_root(void **state)
{
    (void)state;
    char p[64];
    unsetenv("GPU_MONITOR_SYSFS_ROOT");
    assert_string_equal(gm_sysfs_root(), "/");
    assert_true(gm_sysfs_path(p, sizeof p, "/sys/class/drm"));
    assert_string_equal(p, "/sys/class/drm");
    setenv("GPU_MONITOR_SYSFS_ROOT", "", 1);
    assert_string_equal(gm_sysfs_root(), "/");
    setenv("GPU_MONITOR_SYSFS_ROOT", "/tmp/fake//", 1);
    assert_true(gm_sysfs_path(p, sizeof p, "/sys/class/drm"));
    assert_string_equal(p, "/tmp/fake/sys/class/drm");
    assert_false(gm_sysfs_path(p, 8, "/sys/class/drm"));
}

static void test_parse_dpm(void **state)
{
    (void)state;
    unsigned max, cur;
    assert_true(gm_sysfs_parse_dpm("0: 500Mhz\n1: 1420Mhz *\n2: 2100Mhz\n", &max, &cur));
    assert_int_equal(max, 2100);
    assert_int_equal(cur, 1420);
    /* No level marked: the current clock is unknown, not 0 MHz. */
    assert_true(gm_sysfs_parse_dpm("0: 300Mhz\n1: 2000Mhz", &max, &cur));
    assert_int_equal(max, 2000);
    assert_int_equal(cur, 0);
    /* Deep-sleep "S: 19Mhz" lines and junk are skipped. */
    assert_true(gm_sysfs_parse_dpm("S: 19Mhz *\n0: 800MHz\n", &max, &cur));
    assert_int_equal(max, 800);
    assert_int_equal(cur, 0);
    assert_false(gm_sysfs_parse_dpm("", &max, &cur));
    assert_false(gm_sysfs_parse_dpm("0: fast\n:\n1:", &max, &cur));
    assert_false(gm_sysfs_parse_dpm("0: 99999999999999999999Mhz *", &max, &cur));
    /* A 0 MHz level is no clock (the fuzzer's find): alone it parses to nothing. */
    assert_false(gm_sysfs_parse_dpm("0: 000Mhz\n", &max, &cur));
    assert_true(gm_sysfs_parse_dpm("0: 0Mhz *\n1: 1420Mhz\n", &max, &cur));
    assert_int_equal(max, 1420);
    assert_int_equal(cur, 0);
}

static void test_pcie_gen(void **state)
{
    (void)state;
    assert_int_equal(gm_sysfs_pcie_gen("2.5 GT/s PCIe"), 1);
    assert_int_equal(gm_sysfs_pcie_gen("5.0 GT/s PCIe"), 2);
    assert_int_equal(gm_sysfs_pcie_gen("8.0 GT/s PCIe"), 3);
    assert_int_equal(gm_sysfs_pcie_gen("16.0 GT/s PCIe"), 4);
    assert_int_equal(gm_sysfs_pcie_gen("32.0 GT/s PCIe"), 5);
    assert_int_equal(gm_sysfs_pcie_gen("64.0 GT/s PCIe"), 6);
    assert_int_equal(gm_sysfs_pcie_gen("Unknown"), 0);
    assert_int_equal(gm_sysfs_pcie_gen("12 GT/s"), 0);
}

static void test_parse_fdinfo(void **state)
{
    (void)state;
    gm_drm_fdinfo c;
    gm_sysfs_parse_fdinfo("pos:\t0\ndrm-driver:\tamdgpu\ndrm-client-id:\t7\n"
                          "drm-pdev:\t0000:83:00.0\ndrm-memory-vram:\t8192 KiB\n"
                          "drm-resident-vram:\t1 KiB\ndrm-engine-gfx:\t10 ns\n"
                          "drm-engine-compute:\t5 ns\n",
                          &c);
    assert_true(c.amdgpu && c.have_id && c.have_vram && c.have_busy && c.gfx);
    assert_int_equal(c.id, 7);
    assert_string_equal(c.pdev, "0000:83:00.0");
    assert_int_equal(c.vram_bytes, 8192 * 1024); /* drm-memory-vram wins */
    assert_int_equal(c.busy_ns, 15);
    /* Newer kernels' common keys only; bytes without a unit; another driver. */
    gm_sysfs_parse_fdinfo("drm-driver:\ti915\ndrm-resident-vram:\t4096\ndrm-engine-gfx:\t0 ns\n",
                          &c);
    assert_false(c.amdgpu);
    assert_false(c.have_id);
    assert_int_equal(c.vram_bytes, 4096);
    assert_true(c.have_busy);
    assert_false(c.gfx);
    /* Malformed or overflowing values are not read. */
    gm_sysfs_parse_fdinfo("drm-memory-vram:\tlots\ndrm-client-id:\t-\n"
                          "drm-resident-vram:\t99999999999999999999 GiB\n",
                          &c);
    assert_false(c.have_vram);
    assert_false(c.have_id);
}

static void assert_metric(const gm_gpu *g, gm_metric m, double want)
{
    if (!gm_gpu_has(g, m))
        fail_msg("%s absent", gm_metric_get(m)->name);
    if (g->v[m] != want)
        fail_msg("%s = %g, want %g", gm_metric_get(m)->name, g->v[m], want);
}

static void assert_absent(const gm_gpu *g, gm_metric m)
{
    if (gm_gpu_has(g, m))
        fail_msg("%s = %g, want absent", gm_metric_get(m)->name, g->v[m]);
}

static void test_provider(void **state)
{
    (void)state;
    setenv("GPU_MONITOR_SYSFS_ROOT", root, 1);
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_provider_amdgpu.open(&o, &st, &err), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_amdgpu.sample(st, s, true, &err), GM_OK);
    /* The NVIDIA card and the connectors are skipped; bus order, not card number. */
    assert_int_equal(s->gpu_count, 2);

    const gm_gpu *rx = &s->gpus[0];
    assert_int_equal(rx->index, 0);
    assert_string_equal(rx->pci_bus_id, "0000:03:00.0");
    assert_string_equal(rx->vendor, "AMD");
    assert_string_equal(rx->name, ""); /* no FRU: the name is not invented */
    assert_string_equal(rx->uuid, "");
    assert_string_equal(rx->serial, "");
    assert_string_equal(rx->vbios, "113-D0090100-102");
    assert_metric(rx, GM_M_PCI_DEVICE_ID, 0x67df);
    assert_metric(rx, GM_M_UTIL_GPU_PCT, 5);
    assert_metric(rx, GM_M_UTIL_MEM_PCT, 3);
    assert_metric(rx, GM_M_MEM_TOTAL_BYTES, 8589934592.0);
    assert_metric(rx, GM_M_MEM_USED_BYTES, 1073741824.0);
    assert_metric(rx, GM_M_MEM_FREE_BYTES, 7516192768.0);
    assert_metric(rx, GM_M_TEMP_C, 41);
    assert_metric(rx, GM_M_TEMP_EDGE_C, 41);
    assert_absent(rx, GM_M_TEMP_JUNCTION_C);
    assert_absent(rx, GM_M_TEMP_MEM_C);
    assert_metric(rx, GM_M_POWER_MW, 35000);
    assert_metric(rx, GM_M_POWER_AVG_MW, 35000);
    assert_absent(rx, GM_M_POWER_INSTANT_MW);
    assert_metric(rx, GM_M_POWER_LIMIT_MW, 185000);
    assert_absent(rx, GM_M_ENERGY_MJ);
    assert_metric(rx, GM_M_FAN_PCT, 40);
    assert_metric(rx, GM_M_CLOCK_GR_MHZ, 300);
    assert_metric(rx, GM_M_CLOCK_SM_MHZ, 300);
    assert_metric(rx, GM_M_CLOCK_MAX_GR_MHZ, 1340);
    assert_metric(rx, GM_M_CLOCK_MEM_MHZ, 300);
    assert_metric(rx, GM_M_CLOCK_MAX_MEM_MHZ, 2000);
    assert_metric(rx, GM_M_PCIE_GEN_CUR, 1);
    assert_metric(rx, GM_M_PCIE_GEN_MAX, 3);
    assert_metric(rx, GM_M_PCIE_WIDTH_CUR, 16);
    assert_absent(rx, GM_M_ECC_CORR_VOL);
    assert_absent(rx, GM_M_UTIL_ENC_PCT);
    assert_absent(rx, GM_M_PSTATE);

    const gm_gpu *mi = &s->gpus[1];
    assert_int_equal(mi->index, 1);
    assert_string_equal(mi->pci_bus_id, "0000:83:00.0");
    assert_string_equal(mi->name, "AMD Instinct MI300X OAM");
    assert_string_equal(mi->uuid, "5f2c7a31b4e0d001");
    assert_string_equal(mi->serial, "692251001124");
    assert_string_equal(mi->board_part_number, "102-G30211-00");
    assert_metric(mi, GM_M_UTIL_GPU_PCT, 37);
    assert_metric(mi, GM_M_MEM_TOTAL_BYTES, 196592.0 * 1048576);
    /* No edge sensor: the GPU's temperature is the junction's. */
    assert_metric(mi, GM_M_TEMP_JUNCTION_C, 52);
    assert_metric(mi, GM_M_TEMP_C, 52);
    assert_absent(mi, GM_M_TEMP_EDGE_C);
    assert_metric(mi, GM_M_TEMP_MEM_C, 44);
    assert_metric(mi, GM_M_POWER_MW, 321000);
    assert_metric(mi, GM_M_POWER_INSTANT_MW, 321000);
    assert_absent(mi, GM_M_POWER_AVG_MW);
    assert_metric(mi, GM_M_POWER_LIMIT_MW, 750000);
    assert_absent(mi, GM_M_FAN_PCT);
    assert_metric(mi, GM_M_CLOCK_GR_MHZ, 1420);
    assert_metric(mi, GM_M_CLOCK_MAX_GR_MHZ, 2100);
    assert_metric(mi, GM_M_CLOCK_MEM_MHZ, 1300);
    assert_metric(mi, GM_M_PCIE_GEN_CUR, 5);
    assert_metric(mi, GM_M_ECC_UNCORR_VOL, 1);
    assert_metric(mi, GM_M_ECC_CORR_VOL, 2);

    gm_snapshot_free(s);
    gm_provider_amdgpu.close(st);

    /* No tree at all: the provider does not open, and says where it looked. */
    setenv("GPU_MONITOR_SYSFS_ROOT", "/nonexistent-gm", 1);
    assert_int_equal(gm_provider_amdgpu.open(&o, &st, &err), GM_ENODEV);
    assert_non_null(strstr(err.msg, "/nonexistent-gm/sys/class/drm"));
}

/* A card that goes away between samples is reported lost, its identity kept. */
static void test_card_gone(void **state)
{
    (void)state;
    char tree[300], cmd[1200];
    snprintf(tree, sizeof tree, "%s-gone", root);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && python3 '%s/tests/fakes/fake_amd_sysfs.py' '%s'",
             tree, getenv("GM_SOURCE_DIR"), tree);
    assert_int_equal(system(cmd), 0);
    setenv("GPU_MONITOR_SYSFS_ROOT", tree, 1);
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_provider_amdgpu.open(&o, &st, &err), GM_OK);
    snprintf(cmd, sizeof cmd, "rm -rf '%s/sys/class/drm/card0'", tree);
    assert_int_equal(system(cmd), 0);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_amdgpu.sample(st, s, false, &err), GM_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_false(s->gpus[0].lost);
    assert_true(s->gpus[1].lost); /* card0 was the MI300X, at bus 83 */
    assert_string_equal(s->gpus[1].pci_bus_id, "0000:83:00.0");
    assert_absent(&s->gpus[1], GM_M_UTIL_GPU_PCT);
    gm_snapshot_free(s);
    gm_provider_amdgpu.close(st);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree);
    assert_int_equal(system(cmd), 0);
}

static const gm_process *proc_on(const gm_snapshot *s, uint32_t pid, unsigned gpu)
{
    for (size_t i = 0; i < s->proc_count; i++)
        if (s->procs[i].pid == pid && s->procs[i].gpu_index == gpu)
            return &s->procs[i];
    return NULL;
}

/* Processes from the DRM clients' fdinfo under the same root: each client once however many
 * fds share it, its VRAM, the GPU by drm-pdev; the engines' share over the interval from the
 * second sample on. */
static void test_processes(void **state)
{
    (void)state;
    char tree[300], cmd[1500];
    snprintf(tree, sizeof tree, "%s-procs", root);
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && python3 '%s/tests/fakes/fake_amd_sysfs.py' '%s' --nvidia --procs",
             tree, getenv("GM_SOURCE_DIR"), tree);
    assert_int_equal(system(cmd), 0);
    setenv("GPU_MONITOR_SYSFS_ROOT", tree, 1);
    gm_collector_options o = {0};
    void *st = NULL;
    gm_error err = {0};
    assert_int_equal(gm_provider_amdgpu.open(&o, &st, &err), GM_OK);
    gm_snapshot *s = gm_snapshot_new();
    assert_int_equal(gm_provider_amdgpu.sample(st, s, true, &err), GM_OK);
    assert_int_equal(s->proc_count, 3);
    /* Grouped by GPU: the RX 580 (GPU 0) first. */
    assert_int_equal(s->procs[0].gpu_index, 0);
    const gm_process *a = proc_on(s, 5001, 0), *b = proc_on(s, 5001, 1), *c = proc_on(s, 5002, 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_true(a->mem_valid);
    assert_int_equal(a->used_mem_bytes, 262144ull * 1024);
    assert_int_equal(b->used_mem_bytes, 8388608ull * 1024); /* two fds, one client */
    assert_int_equal(b->type, GM_PROC_GRAPHICS);
    assert_int_equal(c->used_mem_bytes, 1048576ull * 1024);
    assert_int_equal(c->type, GM_PROC_COMPUTE);
    assert_int_equal(b->util_valid, 0); /* one reading: no interval yet */
    assert_null(proc_on(s, 5003, 0));
    assert_null(proc_on(s, 5003, 1));

    /* 50 ms more of gfx for 5001 and of compute for 5002, read at least 100 ms later: at most
     * half of the interval. */
    snprintf(
        cmd, sizeof cmd,
        "sed -i 's/^drm-engine-gfx:.*/drm-engine-gfx:\t1050000000 ns/' '%s/proc/5001/fdinfo/3' "
        "'%s/proc/5001/fdinfo/4' && sed -i "
        "'s/^drm-engine-compute:.*/drm-engine-compute:\t550000000 ns/' '%s/proc/5002/fdinfo/3'",
        tree, tree, tree);
    assert_int_equal(system(cmd), 0);
    usleep(100000);
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_amdgpu.sample(st, s, true, &err), GM_OK);
    b = proc_on(s, 5001, 1);
    c = proc_on(s, 5002, 1);
    a = proc_on(s, 5001, 0);
    assert_non_null(b);
    assert_true(b->util_valid & (1u << GM_PROC_UTIL_SM));
    assert_in_range(b->util_pct[GM_PROC_UTIL_SM], 0, 50);
    assert_true(c->util_valid & (1u << GM_PROC_UTIL_SM));
    assert_in_range(c->util_pct[GM_PROC_UTIL_SM], 0, 50);
    assert_true(a->util_valid & (1u << GM_PROC_UTIL_SM));
    assert_int_equal(a->util_pct[GM_PROC_UTIL_SM], 0); /* no engine time on the RX 580 */
    assert_false(b->util_valid & (1u << GM_PROC_UTIL_MEM));

    /* Not asked for: not read. */
    gm_snapshot_reset(s);
    assert_int_equal(gm_provider_amdgpu.sample(st, s, false, &err), GM_OK);
    assert_int_equal(s->proc_count, 0);
    gm_snapshot_free(s);
    gm_provider_amdgpu.close(st);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const char *src = getenv("GM_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "GM_SOURCE_DIR must be set (ctest sets it)\n");
        return 1;
    }
    snprintf(root, sizeof root, "/tmp/gm-test-amd-sysfs-%ld", (long)getpid());
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && python3 '%s/tests/fakes/fake_amd_sysfs.py' '%s' --nvidia", root, src,
             root);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot write the fake sysfs tree\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root),         cmocka_unit_test(test_parse_dpm),
        cmocka_unit_test(test_pcie_gen),     cmocka_unit_test(test_provider),
        cmocka_unit_test(test_card_gone),    cmocka_unit_test(test_processes),
        cmocka_unit_test(test_parse_fdinfo),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
