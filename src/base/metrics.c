/* metrics.c - the one table describing every GPU and host metric: names, units, scales. */
#include "gpumon.h"

#include <math.h>
#include <string.h>

#define MIB (1.0 / 1048576.0)

/* Indexed by gm_metric; the order must follow GM_GPU_METRIC_MAP (checked in tests). */
static const gm_metric_info metric_table[GM_M__COUNT] = {
    {GM_M_UTIL_GPU_PCT, "utilization.gpu", "%", 1, true,
     "Percent of time one or more kernels ran over the last sample period"},
    {GM_M_UTIL_MEM_PCT, "utilization.memory", "%", 1, true,
     "Percent of time device memory was read or written over the last sample period"},
    {GM_M_UTIL_ENC_PCT, "utilization.encoder", "%", 1, true, "Video encoder utilisation"},
    {GM_M_UTIL_DEC_PCT, "utilization.decoder", "%", 1, true, "Video decoder utilisation"},
    {GM_M_MEM_TOTAL_BYTES, "memory.total", "MiB", MIB, false, "Total device memory"},
    {GM_M_MEM_USED_BYTES, "memory.used", "MiB", MIB, true,
     "Device memory allocated by processes (excludes driver-reserved memory)"},
    {GM_M_MEM_FREE_BYTES, "memory.free", "MiB", MIB, true, "Device memory free"},
    {GM_M_MEM_RESERVED_BYTES, "memory.reserved", "MiB", MIB, false,
     "Device memory reserved by the driver and firmware"},
    {GM_M_TEMP_C, "temperature.gpu", "C", 1, true, "GPU core temperature"},
    {GM_M_POWER_MW, "power.draw", "W", 0.001, true, "Power draw of the board"},
    {GM_M_POWER_LIMIT_MW, "enforced.power.limit", "W", 0.001, false,
     "Power limit the driver enforces"},
    {GM_M_ENERGY_MJ, "energy.total", "J", 0.001, false,
     "Energy consumed since the driver was loaded (counter)"},
    {GM_M_CLOCK_GR_MHZ, "clocks.gr", "MHz", 1, true, "Graphics clock"},
    {GM_M_CLOCK_SM_MHZ, "clocks.sm", "MHz", 1, true, "Streaming multiprocessor clock"},
    {GM_M_CLOCK_MEM_MHZ, "clocks.mem", "MHz", 1, true, "Memory clock"},
    {GM_M_CLOCK_MAX_GR_MHZ, "clocks.max.gr", "MHz", 1, false, "Maximum graphics clock"},
    {GM_M_CLOCK_MAX_SM_MHZ, "clocks.max.sm", "MHz", 1, false, "Maximum SM clock"},
    {GM_M_CLOCK_MAX_MEM_MHZ, "clocks.max.mem", "MHz", 1, false, "Maximum memory clock"},
    {GM_M_FAN_PCT, "fan.speed", "%", 1, true,
     "Intended fan speed as a percent of maximum (may exceed 100)"},
    {GM_M_PCIE_GEN_CUR, "pcie.link.gen.current", "", 1, false, "Current PCIe link generation"},
    {GM_M_PCIE_GEN_MAX, "pcie.link.gen.max", "", 1, false, "Maximum PCIe link generation"},
    {GM_M_PCIE_WIDTH_CUR, "pcie.link.width.current", "", 1, false, "Current PCIe link width"},
    {GM_M_PCIE_WIDTH_MAX, "pcie.link.width.max", "", 1, false, "Maximum PCIe link width"},
    {GM_M_PCIE_TX_KBPS, "pcie.tx", "KB/s", 1, true, "PCIe transmit throughput"},
    {GM_M_PCIE_RX_KBPS, "pcie.rx", "KB/s", 1, true, "PCIe receive throughput"},
    {GM_M_PSTATE, "pstate", "", 1, false, "Performance state, 0 (P0, maximum) to 15 (minimum)"},
    {GM_M_THROTTLE_REASONS, "clocks_throttle_reasons.active", "", 1, false,
     "Bit mask of active clock throttle reasons"},
    {GM_M_PERSISTENCE_MODE, "persistence_mode", "", 1, false, "1 when persistence mode is on"},
};

static const char *const host_metric_names[GM_H__COUNT] = {
#define GM__HNAME(id, name) [GM_H_##id] = name,
    GM_HOST_METRIC_MAP(GM__HNAME)
#undef GM__HNAME
};

const gm_metric_info *gm_metric_get(gm_metric id)
{
    if ((int)id < 0 || id >= GM_M__COUNT)
        return NULL;
    return &metric_table[id];
}

int gm_metric_find(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < GM_M__COUNT; i++)
        if (strcmp(metric_table[i].name, name) == 0)
            return i;
    return -1;
}

const char *gm_host_metric_name(gm_host_metric id)
{
    if ((int)id < 0 || id >= GM_H__COUNT)
        return NULL;
    return host_metric_names[id];
}

double gm_pcie_gbps(unsigned gen, unsigned width)
{
    /* Per-lane payload rate in GB/s after line encoding, as commonly quoted: gen1-2 use
     * 8b/10b (2.5, 5 GT/s), gen3-5 128b/130b (8, 16, 32 GT/s), gen6-7 PAM4 with 242/256 FLIT
     * (64, 128 GT/s). */
    static const double lane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563, 15.125};
    if (gen < 1 || gen >= sizeof lane / sizeof lane[0] || width == 0)
        return -1;
    /* Rounded to the MB/s so 0.985 x 16 prints 15.76, not 15.760000000000002. */
    return round(lane[gen] * width * 1000.0) / 1000.0;
}
