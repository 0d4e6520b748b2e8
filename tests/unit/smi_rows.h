/* smi_rows.h - what test_smi_format.c (the parser) and test_smi.c (the provider) share: the
 * fixture paths, assertions on one GPU's metrics, and the readings of the two GPUs of
 * tests/fixtures/smi/provider-two.csv. Included by those tests only. */
#ifndef GM_TEST_SMI_ROWS_H
#define GM_TEST_SMI_ROWS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpumon.h"

#define MIB 1048576.0

#define UUID0 "GPU-9d1f3a2b-7c4e-4b8a-a5d6-2e7f8c9b0a1d"
#define UUID1 "GPU-0b9a8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d"

static inline const char *fixture_path(const char *name)
{
    static char path[4096];
    const char *base = getenv("GM_FIXTURES");
    if (!base)
        fail_msg("GM_FIXTURES is not set (ctest sets it to tests/fixtures)");
    snprintf(path, sizeof path, "%s/smi/%s", base, name);
    return path;
}

static inline const gm_gpu *gpu(const gm_snapshot *s, unsigned index)
{
    const gm_gpu *g = gm_snapshot_gpu(s, index);
    if (!g)
        fail_msg("GPU %u missing", index);
    return g;
}

static inline void assert_metric(const gm_gpu *g, gm_metric m, double want)
{
    if (!gm_gpu_has(g, m))
        fail_msg("GPU %u: %s absent, want %g", g->index, gm_metric_get(m)->name, want);
    if (fabs(g->v[m] - want) > 1e-6)
        fail_msg("GPU %u: %s = %.6f, want %.6f", g->index, gm_metric_get(m)->name, g->v[m], want);
}

static inline void assert_absent(const gm_gpu *g, gm_metric m)
{
    if (gm_gpu_has(g, m))
        fail_msg("GPU %u: %s present (%g), want absent", g->index, gm_metric_get(m)->name, g->v[m]);
}

static inline void check_h100_row(const gm_gpu *g)
{
    assert_int_equal(g->index, 0);
    assert_false(g->lost);
    assert_string_equal(g->uuid, UUID0);
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(g->pci_bus_id, "00000000:00:06.0");
    assert_metric(g, GM_M_UTIL_GPU_PCT, 0);
    assert_metric(g, GM_M_UTIL_ENC_PCT, 0);
    assert_metric(g, GM_M_MEM_TOTAL_BYTES, 81559 * MIB);
    assert_metric(g, GM_M_MEM_USED_BYTES, 0);
    assert_metric(g, GM_M_MEM_FREE_BYTES, 81079 * MIB);
    assert_metric(g, GM_M_MEM_RESERVED_BYTES, 480 * MIB);
    assert_metric(g, GM_M_TEMP_C, 33);
    assert_metric(g, GM_M_POWER_MW, 71600);
    assert_metric(g, GM_M_POWER_LIMIT_MW, 700000);
    assert_metric(g, GM_M_CLOCK_GR_MHZ, 345);
    assert_metric(g, GM_M_CLOCK_MEM_MHZ, 2619);
    assert_metric(g, GM_M_CLOCK_MAX_SM_MHZ, 1980);
    assert_absent(g, GM_M_FAN_PCT); /* [N/A] on this passively cooled card */
    assert_metric(g, GM_M_PSTATE, 0);
    assert_metric(g, GM_M_PCIE_GEN_CUR, 5);
    assert_metric(g, GM_M_PCIE_WIDTH_MAX, 16);
    assert_metric(g, GM_M_THROTTLE_REASONS, 1);
    assert_metric(g, GM_M_PERSISTENCE_MODE, 1);
    assert_absent(g, GM_M_ENERGY_MJ);
    assert_absent(g, GM_M_PCIE_TX_KBPS);
}

static inline void check_a6000_row(const gm_gpu *g)
{
    assert_int_equal(g->index, 1);
    assert_false(g->lost);
    assert_string_equal(g->uuid, UUID1);
    assert_string_equal(g->name, "NVIDIA RTX A6000");
    assert_string_equal(g->pci_bus_id, "00000000:3B:00.0");
    assert_metric(g, GM_M_UTIL_GPU_PCT, 97);
    assert_metric(g, GM_M_UTIL_DEC_PCT, 12);
    assert_metric(g, GM_M_MEM_USED_BYTES, 30215 * MIB);
    assert_metric(g, GM_M_TEMP_C, 81);
    assert_metric(g, GM_M_POWER_MW, 287350);
    assert_metric(g, GM_M_POWER_LIMIT_MW, 300000);
    assert_metric(g, GM_M_FAN_PCT, 76);
    assert_metric(g, GM_M_PSTATE, 2);
    assert_metric(g, GM_M_THROTTLE_REASONS, 0x24);
    assert_metric(g, GM_M_PERSISTENCE_MODE, 0);
}

#endif
