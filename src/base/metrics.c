/* metrics.c - the one table describing every GPU and host metric: names, units, scales. */
#include "gpumon.h"

#include <math.h>
#include <string.h>

/* Indexed by gm_metric; the order must follow GM_GPU_METRIC_MAP (checked in tests). */
static const gm_metric_info metric_table[GM_M__COUNT] = {
    {GM_M_UTIL_GPU_PCT, "utilization.gpu", "%", 1, true,
     "Percent of time one or more kernels ran over the last sample period"},
    {GM_M_UTIL_MEM_PCT, "utilization.memory", "%", 1, true,
     "Percent of time device memory was read or written over the last sample period"},
    {GM_M_UTIL_ENC_PCT, "utilization.encoder", "%", 1, true, "Video encoder utilisation"},
    {GM_M_UTIL_DEC_PCT, "utilization.decoder", "%", 1, true, "Video decoder utilisation"},
    {GM_M_MEM_TOTAL_BYTES, "memory.total", "MiB", 1.0 / GM_BYTES_PER_MIB, false,
     "Total device memory"},
    {GM_M_MEM_USED_BYTES, "memory.used", "MiB", 1.0 / GM_BYTES_PER_MIB, true,
     "Device memory allocated by processes (excludes driver-reserved memory)"},
    {GM_M_MEM_FREE_BYTES, "memory.free", "MiB", 1.0 / GM_BYTES_PER_MIB, true, "Device memory free"},
    {GM_M_MEM_RESERVED_BYTES, "memory.reserved", "MiB", 1.0 / GM_BYTES_PER_MIB, false,
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
    /* ---- health and configuration ---- */
    {GM_M_POWER_REQ_LIMIT_MW, "power.limit", "W", 0.001, false,
     "Power limit requested by software (power management limit)"},
    {GM_M_POWER_DEFAULT_LIMIT_MW, "power.default_limit", "W", 0.001, false,
     "Power limit after a reset"},
    {GM_M_POWER_MIN_LIMIT_MW, "power.min_limit", "W", 0.001, false,
     "Lowest power limit that can be set"},
    {GM_M_POWER_MAX_LIMIT_MW, "power.max_limit", "W", 0.001, false,
     "Highest power limit that can be set"},
    {GM_M_POWER_AVG_MW, "power.draw.average", "W", 0.001, true,
     "Board power draw averaged over one second"},
    {GM_M_POWER_INSTANT_MW, "power.draw.instant", "W", 0.001, false, "Instantaneous board power"},
    {GM_M_TEMP_MEM_C, "temperature.memory", "C", 1, true, "HBM memory temperature"},
    {GM_M_CLOCK_VIDEO_MHZ, "clocks.video", "MHz", 1, false, "Video encoder/decoder clock"},
    {GM_M_UTIL_JPEG_PCT, "utilization.jpeg", "%", 1, false, "JPEG decoder utilisation"},
    {GM_M_UTIL_OFA_PCT, "utilization.ofa", "%", 1, false, "Optical flow accelerator utilisation"},
    {GM_M_PCIE_GEN_GPU_MAX, "pcie.link.gen.gpumax", "", 1, false,
     "Highest PCIe generation the GPU supports"},
    {GM_M_PCI_DEVICE_ID, "pci.device_id", "", 1, false, "PCI vendor and device id"},
    {GM_M_PCI_SUBSYS_ID, "pci.sub_device_id", "", 1, false, "PCI sub system id"},
    {GM_M_THROTTLE_SUPPORTED, "clocks_throttle_reasons.supported", "", 1, false,
     "Bit mask of the clock event reasons the GPU can report"},
    {GM_M_COMPUTE_MODE, "compute_mode", "", 1, false,
     "Compute mode: 0 Default, 1 Exclusive_Thread, 2 Prohibited, 3 Exclusive_Process"},
    {GM_M_COMPUTE_CAP, "compute_cap", "", 1, false,
     "CUDA compute capability as major * 10 + minor (90 is 9.0)"},
    {GM_M_MIG_MODE_CUR, "mig.mode.current", "", 1, false, "1 when MIG mode is enabled"},
    {GM_M_MIG_MODE_PENDING, "mig.mode.pending", "", 1, false, "MIG mode after the next reset"},
    {GM_M_ECC_MODE_CUR, "ecc.mode.current", "", 1, false, "1 when ECC is enabled"},
    {GM_M_ECC_MODE_PENDING, "ecc.mode.pending", "", 1, false, "ECC mode after the next reboot"},
    {GM_M_ENC_SESSIONS, "encoder.stats.sessionCount", "", 1, false, "Active encoder sessions"},
    {GM_M_ENC_FPS, "encoder.stats.averageFps", "", 1, false, "Average encoder frames per second"},
    {GM_M_ENC_LATENCY_US, "encoder.stats.averageLatency", "us", 1, false,
     "Average encoder latency"},
    {GM_M_ECC_CORR_VOL, "ecc.errors.corrected.volatile.total", "", 1, true,
     "Corrected (single bit) ECC errors since the driver loaded"},
    {GM_M_ECC_CORR_AGG, "ecc.errors.corrected.aggregate.total", "", 1, false,
     "Corrected (single bit) ECC errors over the GPU's life"},
    {GM_M_ECC_UNCORR_VOL, "ecc.errors.uncorrected.volatile.total", "", 1, true,
     "Uncorrected (double bit) ECC errors since the driver loaded"},
    {GM_M_ECC_UNCORR_AGG, "ecc.errors.uncorrected.aggregate.total", "", 1, false,
     "Uncorrected (double bit) ECC errors over the GPU's life"},
#define GM__ECC_LOC_ROWS(X, id, name, loc)                              \
    {GM_M_ECC_CORR_VOL_##id,                                            \
     "ecc.errors.corrected.volatile." name,                             \
     "",                                                                \
     1,                                                                 \
     false,                                                             \
     "Corrected ECC errors in " name " since the driver loaded"},       \
        {GM_M_ECC_CORR_AGG_##id,                                        \
         "ecc.errors.corrected.aggregate." name,                        \
         "",                                                            \
         1,                                                             \
         false,                                                         \
         "Corrected ECC errors in " name " over the GPU's life"},       \
        {GM_M_ECC_UNCORR_VOL_##id,                                      \
         "ecc.errors.uncorrected.volatile." name,                       \
         "",                                                            \
         1,                                                             \
         false,                                                         \
         "Uncorrected ECC errors in " name " since the driver loaded"}, \
        {GM_M_ECC_UNCORR_AGG_##id,                                      \
         "ecc.errors.uncorrected.aggregate." name,                      \
         "",                                                            \
         1,                                                             \
         false,                                                         \
         "Uncorrected ECC errors in " name " over the GPU's life"},
    GM_ECC_LOCATION_MAP(GM__ECC_LOC_ROWS, _)
#undef GM__ECC_LOC_ROWS
        {GM_M_RETIRED_SBE, "retired_pages.single_bit_ecc.count", "", 1, false,
         "Pages retired for multiple single bit ECC errors"},
    {GM_M_RETIRED_DBE, "retired_pages.double_bit.count", "", 1, false,
     "Pages retired for a double bit ECC error"},
    {GM_M_RETIRED_PENDING, "retired_pages.pending", "", 1, false,
     "1 when pages wait for a reboot to be retired"},
    {GM_M_REMAP_CORR, "remapped_rows.correctable", "", 1, false,
     "Memory rows remapped for correctable errors"},
    {GM_M_REMAP_UNCORR, "remapped_rows.uncorrectable", "", 1, false,
     "Memory rows remapped for uncorrectable errors"},
    {GM_M_REMAP_PENDING, "remapped_rows.pending", "", 1, false,
     "1 when a row remapping waits for a GPU reset"},
    {GM_M_REMAP_FAILURE, "remapped_rows.failure", "", 1, false,
     "1 when a row remapping failed (the GPU needs service)"},
    {GM_M_REMAP_HIST_MAX, "remapped_rows.histogram.max", "", 1, false,
     "Memory banks with all remapping rows available"},
    {GM_M_REMAP_HIST_HIGH, "remapped_rows.histogram.high", "", 1, false,
     "Memory banks with most remapping rows available"},
    {GM_M_REMAP_HIST_PARTIAL, "remapped_rows.histogram.partial", "", 1, false,
     "Memory banks with some remapping rows available"},
    {GM_M_REMAP_HIST_LOW, "remapped_rows.histogram.low", "", 1, false,
     "Memory banks with few remapping rows available"},
    {GM_M_REMAP_HIST_NONE, "remapped_rows.histogram.none", "", 1, false,
     "Memory banks with no remapping row left"},
    {GM_M_PCIE_REPLAY, "pcie.replay_counter", "", 1, true, "PCIe replays since the GPU reset"},
    {GM_M_VIOL_POWER_NS, "clocks_event_reasons_counters.sw_power_cap", "us", 0.001, true,
     "Time clocks were held down by the power limit (counter)"},
    {GM_M_VIOL_THERMAL_NS, "violation.thermal", "us", 0.001, true,
     "Time clocks were held down by thermal limits (counter)"},
    {GM_M_VIOL_SYNC_BOOST_NS, "clocks_event_reasons_counters.sync_boost", "us", 0.001, false,
     "Time clocks were held down by sync boost (counter)"},
    {GM_M_VIOL_SW_THERMAL_NS, "clocks_event_reasons_counters.sw_thermal_slowdown", "us", 0.001,
     false, "Time clocks were held down by software thermal slowdown (counter)"},
    {GM_M_VIOL_HW_THERMAL_NS, "clocks_event_reasons_counters.hw_thermal_slowdown", "us", 0.001,
     false, "Time clocks were held down by hardware thermal slowdown (counter)"},
    {GM_M_VIOL_HW_POWER_BRAKE_NS, "clocks_event_reasons_counters.hw_power_brake_slowdown", "us",
     0.001, false, "Time clocks were held down by the external power brake (counter)"},
    {GM_M_XID_LAST, "xid.last", "", 1, false, "The last XID error the driver reported"},
    {GM_M_XID_COUNT, "xid.count", "", 1, true, "XID errors seen since gpumon started watching"},
    {GM_M_XID_TIME_MS, "xid.last_time", "ms", 1, false,
     "When the last XID error arrived (Unix milliseconds)"},
    {GM_M_NVLINK_ACTIVE, "nvlink.links_active", "", 1, false, "NVLink links up"},
    {GM_M_NVLINK_TX_KIB, "nvlink.tx", "KiB", 1, false, "NVLink data sent (counter)"},
    {GM_M_NVLINK_RX_KIB, "nvlink.rx", "KiB", 1, false, "NVLink data received (counter)"},
    {GM_M_NVLINK_CRC_FLIT, "nvlink.errors.crc_flit", "", 1, false,
     "NVLink flow control CRC errors, all links (counter)"},
    {GM_M_NVLINK_CRC_DATA, "nvlink.errors.crc_data", "", 1, false,
     "NVLink data CRC errors, all links (counter)"},
    {GM_M_NVLINK_REPLAY, "nvlink.errors.replay", "", 1, false,
     "NVLink replay errors, all links (counter)"},
    {GM_M_NVLINK_RECOVERY, "nvlink.errors.recovery", "", 1, false,
     "NVLink recovery errors, all links (counter)"},
    {GM_M_PROF_GR_ACTIVE_PCT, "prof.gr_engine_active", "%", 1, true,
     "Time the graphics or compute engine was active (GPM)"},
    {GM_M_PROF_SM_ACTIVE_PCT, "prof.sm_active", "%", 1, true, "Share of SMs busy (GPM)"},
    {GM_M_PROF_SM_OCCUPANCY_PCT, "prof.sm_occupancy", "%", 1, false,
     "Warps resident against the maximum (GPM)"},
    {GM_M_PROF_TENSOR_PCT, "prof.pipe_tensor_active", "%", 1, true,
     "Time tensor pipes were active (GPM)"},
    {GM_M_PROF_DRAM_PCT, "prof.dram_active", "%", 1, true,
     "DRAM bandwidth used against the maximum (GPM)"},
    {GM_M_PROF_FP64_PCT, "prof.pipe_fp64_active", "%", 1, false,
     "Time FP64 pipes were active (GPM)"},
    {GM_M_PROF_FP32_PCT, "prof.pipe_fp32_active", "%", 1, false,
     "Time FP32 pipes were active (GPM)"},
    {GM_M_PROF_FP16_PCT, "prof.pipe_fp16_active", "%", 1, false,
     "Time FP16 pipes were active (GPM)"},
    {GM_M_PROF_PCIE_TX_BPS, "prof.pcie_tx_bytes", "B/s", 1, false,
     "PCIe bytes sent per second (GPM)"},
    {GM_M_PROF_PCIE_RX_BPS, "prof.pcie_rx_bytes", "B/s", 1, false,
     "PCIe bytes received per second (GPM)"},
    {GM_M_PROF_NVLINK_TX_BPS, "prof.nvlink_tx_bytes", "B/s", 1, false,
     "NVLink bytes sent per second (GPM)"},
    {GM_M_PROF_NVLINK_RX_BPS, "prof.nvlink_rx_bytes", "B/s", 1, false,
     "NVLink bytes received per second (GPM)"},
    /* ---- identity and configuration nvidia-smi shows (read at open or once a minute) ---- */
    {GM_M_PCI_BASE_CLASS, "pci.baseClass", "", 1, false, "PCI base class code (3: display)"},
    {GM_M_PCI_SUB_CLASS, "pci.subClass", "", 1, false,
     "PCI sub class code (0: VGA, 2: 3D controller)"},
    {GM_M_ACCOUNTING_MODE, "accounting.mode", "", 1, false,
     "1 when per-process accounting is enabled"},
    {GM_M_ACCOUNTING_BUFFER, "accounting.buffer_size", "", 1, false,
     "Processes the accounting buffer holds before the oldest are overwritten"},
    {GM_M_GSP_MODE_CUR, "gsp.mode.current", "", 1, false, "1 when GSP firmware is enabled"},
    {GM_M_GSP_MODE_DEFAULT, "gsp.mode.default", "", 1, false,
     "1 when GSP firmware is enabled by default on this GPU"},
    {GM_M_TEMP_TLIMIT_C, "temperature.gpu.tlimit", "C", 1, false,
     "Degrees below the GPU's nearest slowdown threshold (T.Limit margin; negative past it)"},
    /* ---- modes, fabric and SRAM ECC status (once a minute; fabric and SRAM at the slow period)
     */
    {GM_M_DISPLAY_ATTACHED, "display_attached", "", 1, false,
     "1 when a physical display is connected to one of the GPU's connectors"},
    {GM_M_DISPLAY_ACTIVE, "display_active", "", 1, false,
     "1 when a display is initialised on the GPU (memory allocated for it)"},
    {GM_M_ADDRESSING_MODE, "addressing_mode", "", 1, false,
     "How the GPU addresses system memory: 0 none, 1 HMM, 2 ATS"},
    {GM_M_C2C_MODE, "c2c.mode", "", 1, false, "1 when the GPU is in chip-to-chip (C2C) mode"},
    {GM_M_RECOVERY_ACTION, "gpu_recovery_action", "", 1, false,
     "What the GPU needs to recover: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain "
     "and reset, 5 recover the IMEX domain"},
    {GM_M_EDPP_MULTIPLIER_PCT, "edpp_multiplier", "%", 1, false,
     "The EDPp multiplier, as a percentage"},
    {GM_M_PROT_MEM_TOTAL_BYTES, "protected_memory.total", "MiB", 1.0 / GM_BYTES_PER_MIB, false,
     "Confidential-computing protected memory installed"},
    {GM_M_PROT_MEM_USED_BYTES, "protected_memory.used", "MiB", 1.0 / GM_BYTES_PER_MIB, false,
     "Confidential-computing protected memory allocated by active contexts"},
    {GM_M_PROT_MEM_FREE_BYTES, "protected_memory.free", "MiB", 1.0 / GM_BYTES_PER_MIB, false,
     "Confidential-computing protected memory free"},
    {GM_M_FABRIC_STATE, "fabric.state", "", 1, false,
     "NVLink fabric registration: 1 not started, 2 in progress, 3 completed"},
    {GM_M_FABRIC_STATUS, "fabric.status", "", 1, false,
     "The NVML return code of a completed fabric registration (0: success)"},
    {GM_M_FABRIC_CLIQUE_ID, "fabric.cliqueId", "", 1, false,
     "The NVLink fabric clique this GPU belongs to"},
    {GM_M_SRAM_UNCORR_VOL_PARITY, "ecc.errors.uncorrected.volatile.sram.parity", "", 1, false,
     "Uncorrectable SRAM parity errors since the driver loaded"},
    {GM_M_SRAM_UNCORR_VOL_SECDED, "ecc.errors.uncorrected.volatile.sram.secded", "", 1, false,
     "Uncorrectable SRAM SEC-DED errors since the driver loaded"},
    {GM_M_SRAM_UNCORR_AGG_PARITY, "ecc.errors.uncorrected.aggregate.sram.parity", "", 1, false,
     "Uncorrectable SRAM parity errors over the GPU's life"},
    {GM_M_SRAM_UNCORR_AGG_SECDED, "ecc.errors.uncorrected.aggregate.sram.secded", "", 1, false,
     "Uncorrectable SRAM SEC-DED errors over the GPU's life"},
    {GM_M_SRAM_THRESHOLD_EXCEEDED, "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded", "", 1,
     false, "1 when uncorrectable SRAM errors passed the field diagnostic's threshold"},
    {GM_M_SRAM_UNCORR_AGG_L2, "ecc.errors.uncorrected.aggregate.sram.l2", "", 1, false,
     "Uncorrectable SRAM errors over the GPU's life in the L2 cache"},
    {GM_M_SRAM_UNCORR_AGG_SM, "ecc.errors.uncorrected.aggregate.sram.sm", "", 1, false,
     "Uncorrectable SRAM errors over the GPU's life in the SMs"},
    {GM_M_SRAM_UNCORR_AGG_MCU, "ecc.errors.uncorrected.aggregate.sram.mcu", "", 1, false,
     "Uncorrectable SRAM errors over the GPU's life in microcontrollers"},
    {GM_M_SRAM_UNCORR_AGG_PCIE, "ecc.errors.uncorrected.aggregate.sram.pcie", "", 1, false,
     "Uncorrectable SRAM errors over the GPU's life in the PCIe interface"},
    {GM_M_SRAM_UNCORR_AGG_OTHER, "ecc.errors.uncorrected.aggregate.sram.other", "", 1, false,
     "Uncorrectable SRAM errors over the GPU's life elsewhere"},
    /* ---- what nvidia-smi -q prints besides (read once, BAR1 at the slow period) ---- */
    {GM_M_POWER_MGMT_MODE, "power.management", "", 1, false,
     "1 when power management (a settable power limit) is enabled"},
    {GM_M_CLOCK_APP_GR_MHZ, "clocks.applications.graphics", "MHz", 1, false,
     "Graphics clock applications run at when nothing limits it"},
    {GM_M_CLOCK_APP_MEM_MHZ, "clocks.applications.memory", "MHz", 1, false,
     "Memory clock applications run at"},
    {GM_M_CLOCK_DEFAULT_APP_GR_MHZ, "clocks.default_applications.graphics", "MHz", 1, false,
     "Default applications graphics clock"},
    {GM_M_CLOCK_DEFAULT_APP_MEM_MHZ, "clocks.default_applications.memory", "MHz", 1, false,
     "Default applications memory clock"},
    {GM_M_CLOCK_MAX_VIDEO_MHZ, "clocks.max.video", "MHz", 1, false, "Maximum video clock"},
    {GM_M_REMAP_CORR_INACTIVE, "remapped_rows.correctable_inactive", "", 1, false,
     "Rows remapped for correctable errors that are no longer in use"},
    {GM_M_REMAP_UNC_INACTIVE, "remapped_rows.uncorrectable_inactive", "", 1, false,
     "Rows remapped for uncorrectable errors that are no longer in use"},
    {GM_M_BAR1_TOTAL_BYTES, "bar1.total", "MiB", 1.0 / GM_BYTES_PER_MIB, false,
     "BAR1 aperture size"},
    {GM_M_BAR1_USED_BYTES, "bar1.used", "MiB", 1.0 / GM_BYTES_PER_MIB, false,
     "BAR1 aperture in use"},
    {GM_M_BAR1_FREE_BYTES, "bar1.free", "MiB", 1.0 / GM_BYTES_PER_MIB, false, "BAR1 aperture free"},
    {GM_M_BOARD_ID, "board_id", "", 1, false, "Board id (GPUs on one board share it)"},
    {GM_M_MULTI_GPU_BOARD, "multigpu_board", "", 1, false, "1 when the board carries several GPUs"},
    {GM_M_BRAND, "brand", "", 1, false, "Product brand (nvmlBrandType_t)"},
    {GM_M_ARCHITECTURE, "architecture", "", 1, false, "Architecture (nvmlDeviceArchitecture_t)"},
    {GM_M_TEMP_SHUTDOWN_C, "temperature.shutdown", "C", 1, false,
     "Temperature at which the GPU shuts down"},
    {GM_M_TEMP_SLOWDOWN_C, "temperature.slowdown", "C", 1, false,
     "Temperature at which the GPU slows down"},
    {GM_M_TEMP_MEM_MAX_C, "temperature.memory_max", "C", 1, false,
     "Highest memory temperature before slowdown"},
    {GM_M_TEMP_GPU_MAX_C, "temperature.gpu_max", "C", 1, false,
     "Highest GPU temperature before slowdown"},
    {GM_M_INFOROM_VALID, "inforom.checksum_validation", "", 1, false,
     "1 when the infoROM checksum validated (read once)"},
    {GM_M_PLATFORM_SLOT, "platform.slot_number", "", 1, false, "Chassis slot number"},
    {GM_M_PLATFORM_TRAY, "platform.tray_index", "", 1, false, "Compute tray index"},
    {GM_M_PLATFORM_HOST_ID, "platform.host_id", "", 1, false, "Host id within the tray"},
    {GM_M_PLATFORM_PEER_TYPE, "platform.peer_type", "", 1, false,
     "How the GPU is connected to its peers (0: directly)"},
    {GM_M_PLATFORM_MODULE_ID, "platform.module_id", "", 1, false, "GPU module id on the board"},
    {GM_M_TEMP_SHUTDOWN_TLIMIT_C, "temperature.shutdown_tlimit", "C", 1, false,
     "Shutdown threshold as a T.Limit margin (negative: past the limit)"},
    {GM_M_TEMP_SLOWDOWN_TLIMIT_C, "temperature.slowdown_tlimit", "C", 1, false,
     "Hardware slowdown threshold as a T.Limit margin"},
    {GM_M_TEMP_MEM_MAX_TLIMIT_C, "temperature.memory_max_tlimit", "C", 1, false,
     "Highest memory operating temperature as a T.Limit margin"},
    {GM_M_TEMP_GPU_MAX_TLIMIT_C, "temperature.gpu_max_tlimit", "C", 1, false,
     "Highest GPU operating temperature as a T.Limit margin"},
    {GM_M_TEMP_TARGET_C, "temperature.target", "C", 1, false,
     "Target temperature the fan control holds"},
    {GM_M_TEMP_TARGET_MIN_C, "temperature.target_min", "C", 1, false,
     "Lowest settable target temperature"},
    {GM_M_TEMP_TARGET_MAX_C, "temperature.target_max", "C", 1, false,
     "Highest settable target temperature"},
    {GM_M_CLOCK_MAX_BOOST_GR_MHZ, "clocks.max_customer_boost.graphics", "MHz", 1, false,
     "Highest graphics clock the board's customer boost allows"},
    {GM_M_VIRT_MODE, "virtualization_mode", "", 1, false,
     "Virtualization mode (nvmlGpuVirtualizationMode_t: 1 pass-through)"},
    {GM_M_PCIE_REPLAY_ROLLOVER, "pcie.replay_rollover_counter", "", 1, true,
     "Times the PCIe replay counter wrapped around"},
    {GM_M_BBX_FLUSH_TIME, "inforom.bbx_flush.timestamp", "", 1, false,
     "When the infoROM's black box was last written to flash (as the driver gives it)"},
    {GM_M_BBX_FLUSH_DURATION_US, "inforom.bbx_flush.duration", "us", 1, false,
     "How long the last black-box flush took"},
    {GM_M_HOST_VGPU_MODE, "host_vgpu_mode", "", 1, false,
     "Host vGPU mode (nvmlHostVgpuMode_t: 0 non SR-IOV, 1 SR-IOV)"},
    {GM_M_VGPU_HETERO_MODE, "vgpu_heterogeneous_mode", "", 1, false,
     "1 when vGPUs of different types may share the GPU"},
    {GM_M_BRIDGE_CHIP_TYPE, "pci.bridge_chip.type", "", 1, false,
     "Type of the board's PCIe bridge next to the GPU (nvmlBridgeChipType_t: 0 PLX, 1 BR04)"},
    {GM_M_BRIDGE_CHIP_FW, "pci.bridge_chip.firmware", "", 1, false,
     "Firmware version of that bridge"},
    {GM_M_PCIE_ATOMICS_OUT, "pci.atomic_caps.outbound", "", 1, false,
     "PCIe atomic operations the GPU can issue (NVML_PCIE_ATOMICS_CAP_* mask)"},
    {GM_M_PCIE_ATOMICS_IN, "pci.atomic_caps.inbound", "", 1, false,
     "PCIe atomic operations the GPU accepts (NVML_PCIE_ATOMICS_CAP_* mask)"},
    {GM_M_FBC_SESSIONS, "fbc.session_count", "", 1, false, "Active frame buffer capture sessions"},
    {GM_M_FBC_FPS, "fbc.average_fps", "", 1, false, "Frames captured per second, on average"},
    {GM_M_FBC_LATENCY_US, "fbc.average_latency", "us", 1, false, "Average frame capture latency"},
    {GM_M_DRAM_ENC_CUR, "dramEncryption.mode.current", "", 1, false,
     "1 when DRAM encryption is on"},
    {GM_M_DRAM_ENC_PENDING, "dramEncryption.mode.pending", "", 1, false,
     "DRAM encryption after the next reboot"},
    {GM_M_REPAIR_CHANNEL_PENDING, "repair.channel_pending", "", 1, false,
     "1 when a memory channel repair waits for a reset"},
    {GM_M_REPAIR_TPC_PENDING, "repair.tpc_pending", "", 1, false,
     "1 when a TPC repair waits for a reset"},
    {GM_M_UNREPAIRABLE_MEMORY, "unrepairable_memory", "", 1, false,
     "1 when the GPU has memory errors that cannot be repaired"},
    {GM_M_POWER_MEM_AVG_MW, "memory.power.draw.average", "W", 0.001, false,
     "GPU memory power draw averaged over one second"},
    {GM_M_POWER_MEM_INSTANT_MW, "memory.power.draw.instant", "W", 0.001, false,
     "GPU memory power draw now"},
    {GM_M_POWER_MODULE_AVG_MW, "module.power.draw.average", "W", 0.001, false,
     "Module (GPU, CPU and memory) power draw averaged over one second"},
    {GM_M_POWER_MODULE_INSTANT_MW, "module.power.draw.instant", "W", 0.001, false,
     "Module power draw now"},
    {GM_M_POWER_MODULE_LIMIT_MW, "module.enforced.power.limit", "W", 0.001, false,
     "Module power limit enforced"},
    {GM_M_POWER_MODULE_REQ_LIMIT_MW, "module.power.limit", "W", 0.001, false,
     "Module power limit requested"},
    {GM_M_POWER_MODULE_DEFAULT_LIMIT_MW, "module.power.default_limit", "W", 0.001, false,
     "Module power limit the board starts with"},
    {GM_M_POWER_MODULE_MIN_LIMIT_MW, "module.power.min_limit", "W", 0.001, false,
     "Lowest module power limit that can be set"},
    {GM_M_POWER_MODULE_MAX_LIMIT_MW, "module.power.max_limit", "W", 0.001, false,
     "Highest module power limit that can be set"},
    {GM_M_POWER_SMOOTHING, "power_smoothing", "", 1, false, "1 when power smoothing is on"},
    {GM_M_POWER_PROFILES_REQUESTED, "power_profiles.requested", "", 1, false,
     "Workload power profiles requested (bit N: profile N, the first 32)"},
    {GM_M_POWER_PROFILES_ENFORCED, "power_profiles.enforced", "", 1, false,
     "Workload power profiles enforced (bit N: profile N, the first 32)"},
    {GM_M_AUTO_BOOST, "clocks.auto_boost", "", 1, false, "1 when auto boosted clocks are on"},
    {GM_M_AUTO_BOOST_DEFAULT, "clocks.auto_boost_default", "", 1, false,
     "Auto boosted clocks after a reset"},
    {GM_M_EGM, "capabilities.egm", "", 1, false, "1 when the GPU has extended GPU memory (EGM)"},
    {GM_M_TEMP_JUNCTION_C, "temperature.junction", "C", 1, true,
     "Junction (hotspot) temperature, the hottest point of the die (AMD)"},
    {GM_M_TEMP_EDGE_C, "temperature.edge", "C", 1, true,
     "Edge temperature, the sensor at the die's edge (AMD; MI300-class boards have none)"},
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

const char *gm_clock_reason_name(unsigned bit)
{
    static const char *const names[GM_CLOCK_REASON_COUNT] = {
        "gpu_idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "sync_boost",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "display_clock_setting",
    };
    return bit < GM_CLOCK_REASON_COUNT ? names[bit] : NULL;
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
