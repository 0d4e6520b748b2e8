/* smi_format.h - the nvidia-smi --query-gpu fields gpumon knows: parsing nvidia-smi's CSV into a
 * snapshot, and printing a snapshot as the CSV nvidia-smi would print for the same readings. */
#ifndef GM_SMI_FORMAT_H
#define GM_SMI_FORMAT_H

#include "gpumon.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How a field's value is read and written. */
typedef enum gm_smi_kind {
    GM_SMI_K_TIMESTAMP,    /* "YYYY/MM/DD HH:MM:SS.mmm", local time of gm_snapshot.time_ms */
    GM_SMI_K_DRIVER,       /* gm_snapshot.driver_version */
    GM_SMI_K_COUNT,        /* gm_snapshot.gpu_count */
    GM_SMI_K_INDEX,        /* gm_gpu.index */
    GM_SMI_K_NAME,         /* gm_gpu.name */
    GM_SMI_K_UUID,         /* gm_gpu.uuid */
    GM_SMI_K_BUSID,        /* gm_gpu.pci_bus_id */
    GM_SMI_K_SERIAL,       /* gm_gpu.serial */
    GM_SMI_K_VBIOS,        /* gm_gpu.vbios */
    GM_SMI_K_PCI_DOMAIN,   /* from pci_bus_id: "0x0000" */
    GM_SMI_K_PCI_BUS,      /* from pci_bus_id: "0x1B" */
    GM_SMI_K_PCI_DEVICE,   /* from pci_bus_id: "0x00" */
    GM_SMI_K_INT,          /* integer in the metric's own unit: %, MHz, C, link gen/width, counts */
    GM_SMI_K_MIB,          /* bytes in gpumon, integer MiB (rounded up) in nvidia-smi */
    GM_SMI_K_WATT,         /* milliwatts in gpumon, watts with 2 decimals in nvidia-smi */
    GM_SMI_K_US,           /* nanoseconds in gpumon, whole microseconds in nvidia-smi */
    GM_SMI_K_PSTATE,       /* 0..15 in gpumon, "P0".."P15" in nvidia-smi */
    GM_SMI_K_ENABLED,      /* 1/0 in gpumon, "Enabled"/"Disabled" in nvidia-smi */
    GM_SMI_K_YESNO,        /* 1/0 in gpumon, "Yes"/"No" in nvidia-smi */
    GM_SMI_K_ACTIVE_BIT,   /* bit arg of the metric: "Active"/"Not Active" */
    GM_SMI_K_HEX64,        /* bit mask, "0x%016llX" in nvidia-smi */
    GM_SMI_K_HEX32,        /* PCI ids, "0x%08X" */
    GM_SMI_K_HEX,          /* PCI class codes, "0x%X" ("0x3") */
    GM_SMI_K_INFOROM,      /* gm_gpu.inforom[arg] (enum gm_inforom) */
    GM_SMI_K_COMPUTE_MODE, /* 0..3: "Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process"
                            */
    GM_SMI_K_COMPUTE_CAP,  /* major * 10 + minor in gpumon, "9.0" in nvidia-smi */
    GM_SMI_K_ADDRESSING,   /* 0..2: "None", "HMM", "ATS" */
    GM_SMI_K_RECOVERY,     /* 0..5 (nvmlDeviceGpuRecoveryAction_t): "None", ... */
    GM_SMI_K_PCT2,         /* a percentage with 2 decimals: "100.00 %" */
    GM_SMI_K_FABRIC_STATE, /* 1..3 (NVML_GPU_FABRIC_STATE_*): "Not Started", "In Progress",
                            * "Completed" */
    GM_SMI_K_FABRIC_STATUS,   /* gm_gpu.fabric_status */
    GM_SMI_K_FABRIC_UUID,     /* gm_gpu.fabric_cluster_uuid */
    GM_SMI_K_VALID,           /* 1/0: "valid"/"invalid" (infoROM checksum) */
    GM_SMI_K_PEER_TYPE,       /* platform peer type: 0 "Direct Connected" */
    GM_SMI_K_PLATFORM_SERIAL, /* gm_gpu.platform_serial, printed (even empty) once the platform
                               * was read (GM_M_PLATFORM_SLOT valid) */
    GM_SMI_K_PLATFORM_GUID,   /* gm_gpu.platform_guid */
    GM_SMI_K_NA /* no source in gpumon: always gm_smi_field_absent() ("[N/A]" for most),
                 * as nvidia-smi prints it when the driver cannot tell */
} gm_smi_kind;

/* X(id, name, alias, header, kind, metric, unit, arg): every --query-gpu field of nvidia-smi
 * 590 (212), in the order of its --help-query-gpu (tests/fixtures/smi/real-h100-590-*.txt).
 *   name    the spelling gpumon sends to nvidia-smi (the nvidia-smi provider): one old and
 *           current drivers accept; for fields the provider never asks, nvidia-smi 590's name
 *   alias   the other spelling nvidia-smi accepts (NULL when none); both are accepted by
 *           gm_smi_field_find
 *   header  what nvidia-smi prints in the CSV header (before " [unit]"): its 590 name, whichever
 *           spelling was asked for (clocks.gr -> clocks.current.graphics)
 *   kind    how the value is printed (gm_smi_kind)
 *   metric  the gm_metric holding the value (GM_M__COUNT for identity fields and GM_SMI_K_NA)
 *   unit    appended to header as " [unit]" and to values as " unit" unless nounits; ""
 *           for none (temperature.gpu has no unit in nvidia-smi's output)
 *   arg     the bit of GM_SMI_K_ACTIVE_BIT (NVML clocksEventReason bits), the gm_inforom row of
 *           GM_SMI_K_INFOROM, else 0
 * Headers and units are nvidia-smi 590.48.01's on an H100 (real-h100-590-help-query-gpu.txt and
 * the CSV in it); 580.159.04 agreed on the fields it has (tests/fixtures/smi/real-h100-580-*). */
#define GM_SMI_FIELD_MAP(X)                                                                        \
    X(TIMESTAMP, "timestamp", NULL, "timestamp", GM_SMI_K_TIMESTAMP, GM_M__COUNT, "", 0)           \
    X(DRIVER_VERSION, "driver_version", NULL, "driver_version", GM_SMI_K_DRIVER, GM_M__COUNT, "",  \
      0)                                                                                           \
    X(VGPU_DRIVER_CAPABILITY_HETEROGENOUS_MULTIVGPU,                                               \
      "vgpu_driver_capability.heterogenous_multivGPU", NULL,                                       \
      "vgpu_driver_capability.heterogenous_multivGPU", GM_SMI_K_NA, GM_M__COUNT, "", 0)            \
    X(COUNT, "count", NULL, "count", GM_SMI_K_COUNT, GM_M__COUNT, "", 0)                           \
    X(NAME, "name", "gpu_name", "name", GM_SMI_K_NAME, GM_M__COUNT, "", 0)                         \
    X(SERIAL, "serial", "gpu_serial", "serial", GM_SMI_K_SERIAL, GM_M__COUNT, "", 0)               \
    X(UUID, "uuid", "gpu_uuid", "uuid", GM_SMI_K_UUID, GM_M__COUNT, "", 0)                         \
    X(PCI_BUS_ID, "pci.bus_id", "gpu_bus_id", "pci.bus_id", GM_SMI_K_BUSID, GM_M__COUNT, "", 0)    \
    X(PCI_DOMAIN, "pci.domain", NULL, "pci.domain", GM_SMI_K_PCI_DOMAIN, GM_M__COUNT, "", 0)       \
    X(PCI_BUS, "pci.bus", NULL, "pci.bus", GM_SMI_K_PCI_BUS, GM_M__COUNT, "", 0)                   \
    X(PCI_DEVICE, "pci.device", NULL, "pci.device", GM_SMI_K_PCI_DEVICE, GM_M__COUNT, "", 0)       \
    X(PCI_BASECLASS, "pci.baseClass", NULL, "pci.baseClass", GM_SMI_K_HEX, GM_M_PCI_BASE_CLASS,    \
      "", 0)                                                                                       \
    X(PCI_SUBCLASS, "pci.subClass", NULL, "pci.subClass", GM_SMI_K_HEX, GM_M_PCI_SUB_CLASS, "", 0) \
    X(PCI_DEVICE_ID, "pci.device_id", NULL, "pci.device_id", GM_SMI_K_HEX32, GM_M_PCI_DEVICE_ID,   \
      "", 0)                                                                                       \
    X(PCI_SUB_DEVICE_ID, "pci.sub_device_id", NULL, "pci.sub_device_id", GM_SMI_K_HEX32,           \
      GM_M_PCI_SUBSYS_ID, "", 0)                                                                   \
    X(VGPU_DEVICE_CAPABILITY_FRACTIONAL_MULTIVGPU, "vgpu_device_capability.fractional_multiVgpu",  \
      NULL, "vgpu_device_capability.fractional_multiVgpu", GM_SMI_K_NA, GM_M__COUNT, "", 0)        \
    X(VGPU_DEVICE_CAPABILITY_HETEROGENEOUS_TIMESLICE_PROFILE,                                      \
      "vgpu_device_capability.heterogeneous_timeSlice_profile", NULL,                              \
      "vgpu_device_capability.heterogeneous_timeSlice_profile", GM_SMI_K_NA, GM_M__COUNT, "", 0)   \
    X(VGPU_DEVICE_CAPABILITY_HETEROGENEOUS_TIMESLICE_SIZES,                                        \
      "vgpu_device_capability.heterogeneous_timeSlice_sizes", NULL,                                \
      "vgpu_device_capability.heterogeneous_timeSlice_sizes", GM_SMI_K_NA, GM_M__COUNT, "", 0)     \
    X(VGPU_DEVICE_CAPABILITY_HOMOGENEOUS_PLACEMENTS,                                               \
      "vgpu_device_capability.homogeneous_placements", NULL,                                       \
      "vgpu_device_capability.homogeneous_placements", GM_SMI_K_NA, GM_M__COUNT, "", 0)            \
    X(VGPU_DEVICE_CAPABILITY_MIG_TIMESLICING, "vgpu_device_capability.mig_timeSlicing", NULL,      \
      "vgpu_device_capability.mig_timeSlicing", GM_SMI_K_NA, GM_M__COUNT, "", 0)                   \
    X(VGPU_DEVICE_CAPABILITY_MIG_TIMESLICING_MODE, "vgpu_device_capability.mig_timeSlicing_mode",  \
      NULL, "vgpu_device_capability.mig_timeSlicing_mode", GM_SMI_K_NA, GM_M__COUNT, "", 0)        \
    X(PCIE_GEN_CUR, "pcie.link.gen.current", NULL, "pcie.link.gen.current", GM_SMI_K_INT,          \
      GM_M_PCIE_GEN_CUR, "", 0)                                                                    \
    X(PCIE_GEN_GPUCUR, "pcie.link.gen.gpucurrent", NULL, "pcie.link.gen.gpucurrent", GM_SMI_K_INT, \
      GM_M_PCIE_GEN_CUR, "", 0)                                                                    \
    X(PCIE_GEN_MAX, "pcie.link.gen.max", NULL, "pcie.link.gen.max", GM_SMI_K_INT,                  \
      GM_M_PCIE_GEN_MAX, "", 0)                                                                    \
    X(PCIE_LINK_GEN_GPUMAX, "pcie.link.gen.gpumax", NULL, "pcie.link.gen.gpumax", GM_SMI_K_INT,    \
      GM_M_PCIE_GEN_GPU_MAX, "", 0)                                                                \
    X(PCIE_LINK_GEN_HOSTMAX, "pcie.link.gen.hostmax", NULL, "pcie.link.gen.hostmax", GM_SMI_K_NA,  \
      GM_M__COUNT, "", 0)                                                                          \
    X(PCIE_WIDTH_CUR, "pcie.link.width.current", NULL, "pcie.link.width.current", GM_SMI_K_INT,    \
      GM_M_PCIE_WIDTH_CUR, "", 0)                                                                  \
    X(PCIE_WIDTH_MAX, "pcie.link.width.max", NULL, "pcie.link.width.max", GM_SMI_K_INT,            \
      GM_M_PCIE_WIDTH_MAX, "", 0)                                                                  \
    X(INDEX, "index", NULL, "index", GM_SMI_K_INDEX, GM_M__COUNT, "", 0)                           \
    X(DISPLAY_MODE, "display_mode", NULL, "display_mode", GM_SMI_K_NA, GM_M__COUNT, "", 0)         \
    X(DISPLAY_ATTACHED, "display_attached", NULL, "display_attached", GM_SMI_K_YESNO,              \
      GM_M_DISPLAY_ATTACHED, "", 0)                                                                \
    X(DISPLAY_ACTIVE, "display_active", NULL, "display_active", GM_SMI_K_ENABLED,                  \
      GM_M_DISPLAY_ACTIVE, "", 0)                                                                  \
    X(PERSISTENCE_MODE, "persistence_mode", NULL, "persistence_mode", GM_SMI_K_ENABLED,            \
      GM_M_PERSISTENCE_MODE, "", 0)                                                                \
    X(ADDRESSING_MODE, "addressing_mode", NULL, "addressing_mode", GM_SMI_K_ADDRESSING,            \
      GM_M_ADDRESSING_MODE, "", 0)                                                                 \
    X(ACCOUNTING_MODE, "accounting.mode", NULL, "accounting.mode", GM_SMI_K_ENABLED,               \
      GM_M_ACCOUNTING_MODE, "", 0)                                                                 \
    X(ACCOUNTING_BUFFER_SIZE, "accounting.buffer_size", NULL, "accounting.buffer_size",            \
      GM_SMI_K_INT, GM_M_ACCOUNTING_BUFFER, "", 0)                                                 \
    X(DRIVER_MODEL_CURRENT, "driver_model.current", NULL, "driver_model.current", GM_SMI_K_NA,     \
      GM_M__COUNT, "", 0)                                                                          \
    X(DRIVER_MODEL_PENDING, "driver_model.pending", NULL, "driver_model.pending", GM_SMI_K_NA,     \
      GM_M__COUNT, "", 0)                                                                          \
    X(VBIOS_VERSION, "vbios_version", NULL, "vbios_version", GM_SMI_K_VBIOS, GM_M__COUNT, "", 0)   \
    X(INFOROM_IMG, "inforom.img", "inforom.image", "inforom.img", GM_SMI_K_INFOROM, GM_M__COUNT,   \
      "", GM_INFOROM_IMG)                                                                          \
    X(INFOROM_OEM, "inforom.oem", NULL, "inforom.oem", GM_SMI_K_INFOROM, GM_M__COUNT, "",          \
      GM_INFOROM_OEM)                                                                              \
    X(INFOROM_ECC, "inforom.ecc", NULL, "inforom.ecc", GM_SMI_K_INFOROM, GM_M__COUNT, "",          \
      GM_INFOROM_ECC)                                                                              \
    X(INFOROM_PWR, "inforom.pwr", "inforom.power", "inforom.pwr", GM_SMI_K_INFOROM, GM_M__COUNT,   \
      "", GM_INFOROM_PWR)                                                                          \
    X(INFOROM_CHECKSUM_VALIDATION, "inforom.checksum_validation", NULL,                            \
      "inforom.checksum_validation", GM_SMI_K_VALID, GM_M_INFOROM_VALID, "", 0)                    \
    X(GPU_RECOVERY_ACTION, "gpu_recovery_action", NULL, "gpu_recovery_action", GM_SMI_K_RECOVERY,  \
      GM_M_RECOVERY_ACTION, "", 0)                                                                 \
    X(GOM_CURRENT, "gom.current", "gpu_operation_mode.current", "gom.current", GM_SMI_K_NA,        \
      GM_M__COUNT, "", 0)                                                                          \
    X(GOM_PENDING, "gom.pending", "gpu_operation_mode.pending", "gom.pending", GM_SMI_K_NA,        \
      GM_M__COUNT, "", 0)                                                                          \
    X(FAN_SPEED, "fan.speed", NULL, "fan.speed", GM_SMI_K_INT, GM_M_FAN_PCT, "%", 0)               \
    X(PSTATE, "pstate", NULL, "pstate", GM_SMI_K_PSTATE, GM_M_PSTATE, "", 0)                       \
    X(CLOCKS_EVENT_REASONS_SUPPORTED, "clocks_event_reasons.supported",                            \
      "clocks_throttle_reasons.supported", "clocks_event_reasons.supported", GM_SMI_K_HEX64,       \
      GM_M_THROTTLE_SUPPORTED, "", 0)                                                              \
    X(THROTTLE_REASONS, "clocks_throttle_reasons.active", "clocks_event_reasons.active",           \
      "clocks_event_reasons.active", GM_SMI_K_HEX64, GM_M_THROTTLE_REASONS, "", 0)                 \
    X(CLOCKS_EVENT_REASONS_GPU_IDLE, "clocks_event_reasons.gpu_idle",                              \
      "clocks_throttle_reasons.gpu_idle", "clocks_event_reasons.gpu_idle", GM_SMI_K_ACTIVE_BIT,    \
      GM_M_THROTTLE_REASONS, "", 0)                                                                \
    X(CLOCKS_EVENT_REASONS_APPLICATIONS_CLOCKS_SETTING,                                            \
      "clocks_event_reasons.applications_clocks_setting",                                          \
      "clocks_throttle_reasons.applications_clocks_setting",                                       \
      "clocks_event_reasons.applications_clocks_setting", GM_SMI_K_ACTIVE_BIT,                     \
      GM_M_THROTTLE_REASONS, "", 1)                                                                \
    X(CLOCKS_EVENT_REASONS_SW_POWER_CAP, "clocks_event_reasons.sw_power_cap",                      \
      "clocks_throttle_reasons.sw_power_cap", "clocks_event_reasons.sw_power_cap",                 \
      GM_SMI_K_ACTIVE_BIT, GM_M_THROTTLE_REASONS, "", 2)                                           \
    X(CLOCKS_EVENT_REASONS_HW_SLOWDOWN, "clocks_event_reasons.hw_slowdown",                        \
      "clocks_throttle_reasons.hw_slowdown", "clocks_event_reasons.hw_slowdown",                   \
      GM_SMI_K_ACTIVE_BIT, GM_M_THROTTLE_REASONS, "", 3)                                           \
    X(CLOCKS_EVENT_REASONS_HW_THERMAL_SLOWDOWN, "clocks_event_reasons.hw_thermal_slowdown",        \
      "clocks_throttle_reasons.hw_thermal_slowdown", "clocks_event_reasons.hw_thermal_slowdown",   \
      GM_SMI_K_ACTIVE_BIT, GM_M_THROTTLE_REASONS, "", 6)                                           \
    X(CLOCKS_EVENT_REASONS_HW_POWER_BRAKE_SLOWDOWN,                                                \
      "clocks_event_reasons.hw_power_brake_slowdown",                                              \
      "clocks_throttle_reasons.hw_power_brake_slowdown",                                           \
      "clocks_event_reasons.hw_power_brake_slowdown", GM_SMI_K_ACTIVE_BIT, GM_M_THROTTLE_REASONS,  \
      "", 7)                                                                                       \
    X(CLOCKS_EVENT_REASONS_SW_THERMAL_SLOWDOWN, "clocks_event_reasons.sw_thermal_slowdown",        \
      "clocks_throttle_reasons.sw_thermal_slowdown", "clocks_event_reasons.sw_thermal_slowdown",   \
      GM_SMI_K_ACTIVE_BIT, GM_M_THROTTLE_REASONS, "", 5)                                           \
    X(CLOCKS_EVENT_REASONS_SYNC_BOOST, "clocks_event_reasons.sync_boost",                          \
      "clocks_throttle_reasons.sync_boost", "clocks_event_reasons.sync_boost",                     \
      GM_SMI_K_ACTIVE_BIT, GM_M_THROTTLE_REASONS, "", 4)                                           \
    X(CLOCKS_EVENT_REASONS_COUNTERS_SW_POWER_CAP, "clocks_event_reasons_counters.sw_power_cap",    \
      NULL, "clocks_event_reasons_counters.sw_power_cap", GM_SMI_K_US, GM_M_VIOL_POWER_NS, "us",   \
      0)                                                                                           \
    X(CLOCKS_EVENT_REASONS_COUNTERS_SYNC_BOOST, "clocks_event_reasons_counters.sync_boost", NULL,  \
      "clocks_event_reasons_counters.sync_boost", GM_SMI_K_US, GM_M_VIOL_SYNC_BOOST_NS, "us", 0)   \
    X(CLOCKS_EVENT_REASONS_COUNTERS_SW_THERMAL_SLOWDOWN,                                           \
      "clocks_event_reasons_counters.sw_thermal_slowdown", NULL,                                   \
      "clocks_event_reasons_counters.sw_thermal_slowdown", GM_SMI_K_US, GM_M_VIOL_SW_THERMAL_NS,   \
      "us", 0)                                                                                     \
    X(CLOCKS_EVENT_REASONS_COUNTERS_HW_THERMAL_SLOWDOWN,                                           \
      "clocks_event_reasons_counters.hw_thermal_slowdown", NULL,                                   \
      "clocks_event_reasons_counters.hw_thermal_slowdown", GM_SMI_K_US, GM_M_VIOL_HW_THERMAL_NS,   \
      "us", 0)                                                                                     \
    X(CLOCKS_EVENT_REASONS_COUNTERS_HW_POWER_BRAKE_SLOWDOWN,                                       \
      "clocks_event_reasons_counters.hw_power_brake_slowdown", NULL,                               \
      "clocks_event_reasons_counters.hw_power_brake_slowdown", GM_SMI_K_US,                        \
      GM_M_VIOL_HW_POWER_BRAKE_NS, "us", 0)                                                        \
    X(MEM_TOTAL, "memory.total", NULL, "memory.total", GM_SMI_K_MIB, GM_M_MEM_TOTAL_BYTES, "MiB",  \
      0)                                                                                           \
    X(MEM_RESERVED, "memory.reserved", NULL, "memory.reserved", GM_SMI_K_MIB,                      \
      GM_M_MEM_RESERVED_BYTES, "MiB", 0)                                                           \
    X(MEM_USED, "memory.used", NULL, "memory.used", GM_SMI_K_MIB, GM_M_MEM_USED_BYTES, "MiB", 0)   \
    X(MEM_FREE, "memory.free", NULL, "memory.free", GM_SMI_K_MIB, GM_M_MEM_FREE_BYTES, "MiB", 0)   \
    X(COMPUTE_MODE, "compute_mode", NULL, "compute_mode", GM_SMI_K_COMPUTE_MODE,                   \
      GM_M_COMPUTE_MODE, "", 0)                                                                    \
    X(COMPUTE_CAP, "compute_cap", NULL, "compute_cap", GM_SMI_K_COMPUTE_CAP, GM_M_COMPUTE_CAP, "", \
      0)                                                                                           \
    X(UTIL_GPU, "utilization.gpu", NULL, "utilization.gpu", GM_SMI_K_INT, GM_M_UTIL_GPU_PCT, "%",  \
      0)                                                                                           \
    X(UTIL_MEM, "utilization.memory", NULL, "utilization.memory", GM_SMI_K_INT, GM_M_UTIL_MEM_PCT, \
      "%", 0)                                                                                      \
    X(UTIL_ENC, "utilization.encoder", NULL, "utilization.encoder", GM_SMI_K_INT,                  \
      GM_M_UTIL_ENC_PCT, "%", 0)                                                                   \
    X(UTIL_DEC, "utilization.decoder", NULL, "utilization.decoder", GM_SMI_K_INT,                  \
      GM_M_UTIL_DEC_PCT, "%", 0)                                                                   \
    X(UTILIZATION_JPEG, "utilization.jpeg", NULL, "utilization.jpeg", GM_SMI_K_INT,                \
      GM_M_UTIL_JPEG_PCT, "%", 0)                                                                  \
    X(UTILIZATION_OFA, "utilization.ofa", NULL, "utilization.ofa", GM_SMI_K_INT,                   \
      GM_M_UTIL_OFA_PCT, "%", 0)                                                                   \
    X(ENCODER_STATS_SESSIONCOUNT, "encoder.stats.sessionCount", NULL,                              \
      "encoder.stats.sessionCount", GM_SMI_K_INT, GM_M_ENC_SESSIONS, "", 0)                        \
    X(ENCODER_STATS_AVERAGEFPS, "encoder.stats.averageFps", NULL, "encoder.stats.averageFps",      \
      GM_SMI_K_INT, GM_M_ENC_FPS, "", 0)                                                           \
    X(ENCODER_STATS_AVERAGELATENCY, "encoder.stats.averageLatency", NULL,                          \
      "encoder.stats.averageLatency", GM_SMI_K_INT, GM_M_ENC_LATENCY_US, "", 0)                    \
    X(DRAMENCRYPTION_MODE_CURRENT, "dramEncryption.mode.current", NULL,                            \
      "dramEncryption.mode.current", GM_SMI_K_NA, GM_M__COUNT, "", 0)                              \
    X(DRAMENCRYPTION_MODE_PENDING, "dramEncryption.mode.pending", NULL,                            \
      "dramEncryption.mode.pending", GM_SMI_K_NA, GM_M__COUNT, "", 0)                              \
    X(ECC_MODE_CURRENT, "ecc.mode.current", NULL, "ecc.mode.current", GM_SMI_K_ENABLED,            \
      GM_M_ECC_MODE_CUR, "", 0)                                                                    \
    X(ECC_MODE_PENDING, "ecc.mode.pending", NULL, "ecc.mode.pending", GM_SMI_K_ENABLED,            \
      GM_M_ECC_MODE_PENDING, "", 0)                                                                \
    X(ECC_ERRORS_CORRECTED_VOLATILE_DEVICE_MEMORY, "ecc.errors.corrected.volatile.device_memory",  \
      NULL, "ecc.errors.corrected.volatile.device_memory", GM_SMI_K_INT, GM_M_ECC_CORR_VOL_DRAM,   \
      "", 0)                                                                                       \
    X(ECC_ERRORS_CORRECTED_VOLATILE_DRAM, "ecc.errors.corrected.volatile.dram", NULL,              \
      "ecc.errors.corrected.volatile.dram", GM_SMI_K_INT, GM_M_ECC_CORR_VOL_DRAM, "", 0)           \
    X(ECC_ERRORS_CORRECTED_VOLATILE_REGISTER_FILE, "ecc.errors.corrected.volatile.register_file",  \
      NULL, "ecc.errors.corrected.volatile.register_file", GM_SMI_K_INT,                           \
      GM_M_ECC_CORR_VOL_REGISTER_FILE, "", 0)                                                      \
    X(ECC_ERRORS_CORRECTED_VOLATILE_L1_CACHE, "ecc.errors.corrected.volatile.l1_cache", NULL,      \
      "ecc.errors.corrected.volatile.l1_cache", GM_SMI_K_INT, GM_M_ECC_CORR_VOL_L1_CACHE, "", 0)   \
    X(ECC_ERRORS_CORRECTED_VOLATILE_L2_CACHE, "ecc.errors.corrected.volatile.l2_cache", NULL,      \
      "ecc.errors.corrected.volatile.l2_cache", GM_SMI_K_INT, GM_M_ECC_CORR_VOL_L2_CACHE, "", 0)   \
    X(ECC_ERRORS_CORRECTED_VOLATILE_TEXTURE_MEMORY,                                                \
      "ecc.errors.corrected.volatile.texture_memory", NULL,                                        \
      "ecc.errors.corrected.volatile.texture_memory", GM_SMI_K_INT,                                \
      GM_M_ECC_CORR_VOL_TEXTURE_MEMORY, "", 0)                                                     \
    X(ECC_ERRORS_CORRECTED_VOLATILE_CBU, "ecc.errors.corrected.volatile.cbu", NULL,                \
      "ecc.errors.corrected.volatile.cbu", GM_SMI_K_INT, GM_M_ECC_CORR_VOL_CBU, "", 0)             \
    X(ECC_ERRORS_CORRECTED_VOLATILE_SRAM, "ecc.errors.corrected.volatile.sram", NULL,              \
      "ecc.errors.corrected.volatile.sram", GM_SMI_K_INT, GM_M_ECC_CORR_VOL_SRAM, "", 0)           \
    X(ECC_ERRORS_CORRECTED_VOLATILE_TOTAL, "ecc.errors.corrected.volatile.total", NULL,            \
      "ecc.errors.corrected.volatile.total", GM_SMI_K_INT, GM_M_ECC_CORR_VOL, "", 0)               \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_DEVICE_MEMORY,                                                \
      "ecc.errors.corrected.aggregate.device_memory", NULL,                                        \
      "ecc.errors.corrected.aggregate.device_memory", GM_SMI_K_INT, GM_M_ECC_CORR_AGG_DRAM, "", 0) \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_DRAM, "ecc.errors.corrected.aggregate.dram", NULL,            \
      "ecc.errors.corrected.aggregate.dram", GM_SMI_K_INT, GM_M_ECC_CORR_AGG_DRAM, "", 0)          \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_REGISTER_FILE,                                                \
      "ecc.errors.corrected.aggregate.register_file", NULL,                                        \
      "ecc.errors.corrected.aggregate.register_file", GM_SMI_K_INT,                                \
      GM_M_ECC_CORR_AGG_REGISTER_FILE, "", 0)                                                      \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_L1_CACHE, "ecc.errors.corrected.aggregate.l1_cache", NULL,    \
      "ecc.errors.corrected.aggregate.l1_cache", GM_SMI_K_INT, GM_M_ECC_CORR_AGG_L1_CACHE, "", 0)  \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_L2_CACHE, "ecc.errors.corrected.aggregate.l2_cache", NULL,    \
      "ecc.errors.corrected.aggregate.l2_cache", GM_SMI_K_INT, GM_M_ECC_CORR_AGG_L2_CACHE, "", 0)  \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_TEXTURE_MEMORY,                                               \
      "ecc.errors.corrected.aggregate.texture_memory", NULL,                                       \
      "ecc.errors.corrected.aggregate.texture_memory", GM_SMI_K_INT,                               \
      GM_M_ECC_CORR_AGG_TEXTURE_MEMORY, "", 0)                                                     \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_CBU, "ecc.errors.corrected.aggregate.cbu", NULL,              \
      "ecc.errors.corrected.aggregate.cbu", GM_SMI_K_INT, GM_M_ECC_CORR_AGG_CBU, "", 0)            \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_SRAM, "ecc.errors.corrected.aggregate.sram", NULL,            \
      "ecc.errors.corrected.aggregate.sram", GM_SMI_K_INT, GM_M_ECC_CORR_AGG_SRAM, "", 0)          \
    X(ECC_ERRORS_CORRECTED_AGGREGATE_TOTAL, "ecc.errors.corrected.aggregate.total", NULL,          \
      "ecc.errors.corrected.aggregate.total", GM_SMI_K_INT, GM_M_ECC_CORR_AGG, "", 0)              \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_DEVICE_MEMORY,                                               \
      "ecc.errors.uncorrected.volatile.device_memory", NULL,                                       \
      "ecc.errors.uncorrected.volatile.device_memory", GM_SMI_K_INT, GM_M_ECC_UNCORR_VOL_DRAM, "", \
      0)                                                                                           \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_DRAM, "ecc.errors.uncorrected.volatile.dram", NULL,          \
      "ecc.errors.uncorrected.volatile.dram", GM_SMI_K_INT, GM_M_ECC_UNCORR_VOL_DRAM, "", 0)       \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_REGISTER_FILE,                                               \
      "ecc.errors.uncorrected.volatile.register_file", NULL,                                       \
      "ecc.errors.uncorrected.volatile.register_file", GM_SMI_K_INT,                               \
      GM_M_ECC_UNCORR_VOL_REGISTER_FILE, "", 0)                                                    \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_L1_CACHE, "ecc.errors.uncorrected.volatile.l1_cache", NULL,  \
      "ecc.errors.uncorrected.volatile.l1_cache", GM_SMI_K_INT, GM_M_ECC_UNCORR_VOL_L1_CACHE, "",  \
      0)                                                                                           \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_L2_CACHE, "ecc.errors.uncorrected.volatile.l2_cache", NULL,  \
      "ecc.errors.uncorrected.volatile.l2_cache", GM_SMI_K_INT, GM_M_ECC_UNCORR_VOL_L2_CACHE, "",  \
      0)                                                                                           \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_TEXTURE_MEMORY,                                              \
      "ecc.errors.uncorrected.volatile.texture_memory", NULL,                                      \
      "ecc.errors.uncorrected.volatile.texture_memory", GM_SMI_K_INT,                              \
      GM_M_ECC_UNCORR_VOL_TEXTURE_MEMORY, "", 0)                                                   \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_CBU, "ecc.errors.uncorrected.volatile.cbu", NULL,            \
      "ecc.errors.uncorrected.volatile.cbu", GM_SMI_K_INT, GM_M_ECC_UNCORR_VOL_CBU, "", 0)         \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_SRAM, "ecc.errors.uncorrected.volatile.sram", NULL,          \
      "ecc.errors.uncorrected.volatile.sram", GM_SMI_K_INT, GM_M_ECC_UNCORR_VOL_SRAM, "", 0)       \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_TOTAL, "ecc.errors.uncorrected.volatile.total", NULL,        \
      "ecc.errors.uncorrected.volatile.total", GM_SMI_K_INT, GM_M_ECC_UNCORR_VOL, "", 0)           \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_DEVICE_MEMORY,                                              \
      "ecc.errors.uncorrected.aggregate.device_memory", NULL,                                      \
      "ecc.errors.uncorrected.aggregate.device_memory", GM_SMI_K_INT, GM_M_ECC_UNCORR_AGG_DRAM,    \
      "", 0)                                                                                       \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_DRAM, "ecc.errors.uncorrected.aggregate.dram", NULL,        \
      "ecc.errors.uncorrected.aggregate.dram", GM_SMI_K_INT, GM_M_ECC_UNCORR_AGG_DRAM, "", 0)      \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_REGISTER_FILE,                                              \
      "ecc.errors.uncorrected.aggregate.register_file", NULL,                                      \
      "ecc.errors.uncorrected.aggregate.register_file", GM_SMI_K_INT,                              \
      GM_M_ECC_UNCORR_AGG_REGISTER_FILE, "", 0)                                                    \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_L1_CACHE, "ecc.errors.uncorrected.aggregate.l1_cache",      \
      NULL, "ecc.errors.uncorrected.aggregate.l1_cache", GM_SMI_K_INT,                             \
      GM_M_ECC_UNCORR_AGG_L1_CACHE, "", 0)                                                         \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_L2_CACHE, "ecc.errors.uncorrected.aggregate.l2_cache",      \
      NULL, "ecc.errors.uncorrected.aggregate.l2_cache", GM_SMI_K_INT,                             \
      GM_M_ECC_UNCORR_AGG_L2_CACHE, "", 0)                                                         \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_TEXTURE_MEMORY,                                             \
      "ecc.errors.uncorrected.aggregate.texture_memory", NULL,                                     \
      "ecc.errors.uncorrected.aggregate.texture_memory", GM_SMI_K_INT,                             \
      GM_M_ECC_UNCORR_AGG_TEXTURE_MEMORY, "", 0)                                                   \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_CBU, "ecc.errors.uncorrected.aggregate.cbu", NULL,          \
      "ecc.errors.uncorrected.aggregate.cbu", GM_SMI_K_INT, GM_M_ECC_UNCORR_AGG_CBU, "", 0)        \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM, "ecc.errors.uncorrected.aggregate.sram", NULL,        \
      "ecc.errors.uncorrected.aggregate.sram", GM_SMI_K_INT, GM_M_ECC_UNCORR_AGG_SRAM, "", 0)      \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_TOTAL, "ecc.errors.uncorrected.aggregate.total", NULL,      \
      "ecc.errors.uncorrected.aggregate.total", GM_SMI_K_INT, GM_M_ECC_UNCORR_AGG, "", 0)          \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_SRAM_PARITY, "ecc.errors.uncorrected.volatile.sram.parity",  \
      NULL, "ecc.errors.uncorrected.volatile.sram.parity", GM_SMI_K_INT,                           \
      GM_M_SRAM_UNCORR_VOL_PARITY, "", 0)                                                          \
    X(ECC_ERRORS_UNCORRECTED_VOLATILE_SRAM_SECDED, "ecc.errors.uncorrected.volatile.sram.secded",  \
      NULL, "ecc.errors.uncorrected.volatile.sram.secded", GM_SMI_K_INT,                           \
      GM_M_SRAM_UNCORR_VOL_SECDED, "", 0)                                                          \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_PARITY,                                                \
      "ecc.errors.uncorrected.aggregate.sram.parity", NULL,                                        \
      "ecc.errors.uncorrected.aggregate.sram.parity", GM_SMI_K_INT, GM_M_SRAM_UNCORR_AGG_PARITY,   \
      "", 0)                                                                                       \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_SECDED,                                                \
      "ecc.errors.uncorrected.aggregate.sram.secded", NULL,                                        \
      "ecc.errors.uncorrected.aggregate.sram.secded", GM_SMI_K_INT, GM_M_SRAM_UNCORR_AGG_SECDED,   \
      "", 0)                                                                                       \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_THRESHOLDEXCEEDED,                                     \
      "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded", NULL,                             \
      "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded", GM_SMI_K_YESNO,                   \
      GM_M_SRAM_THRESHOLD_EXCEEDED, "", 0)                                                         \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_L2, "ecc.errors.uncorrected.aggregate.sram.l2", NULL,  \
      "ecc.errors.uncorrected.aggregate.sram.l2", GM_SMI_K_INT, GM_M_SRAM_UNCORR_AGG_L2, "", 0)    \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_SM, "ecc.errors.uncorrected.aggregate.sram.sm", NULL,  \
      "ecc.errors.uncorrected.aggregate.sram.sm", GM_SMI_K_INT, GM_M_SRAM_UNCORR_AGG_SM, "", 0)    \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_MCU, "ecc.errors.uncorrected.aggregate.sram.mcu",      \
      NULL, "ecc.errors.uncorrected.aggregate.sram.mcu", GM_SMI_K_INT, GM_M_SRAM_UNCORR_AGG_MCU,   \
      "", 0)                                                                                       \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_PCIE, "ecc.errors.uncorrected.aggregate.sram.pcie",    \
      NULL, "ecc.errors.uncorrected.aggregate.sram.pcie", GM_SMI_K_INT, GM_M_SRAM_UNCORR_AGG_PCIE, \
      "", 0)                                                                                       \
    X(ECC_ERRORS_UNCORRECTED_AGGREGATE_SRAM_OTHER, "ecc.errors.uncorrected.aggregate.sram.other",  \
      NULL, "ecc.errors.uncorrected.aggregate.sram.other", GM_SMI_K_INT,                           \
      GM_M_SRAM_UNCORR_AGG_OTHER, "", 0)                                                           \
    X(RETIRED_PAGES_SINGLE_BIT_ECC_COUNT, "retired_pages.single_bit_ecc.count",                    \
      "retired_pages.sbe", "retired_pages.single_bit_ecc.count", GM_SMI_K_INT, GM_M_RETIRED_SBE,   \
      "", 0)                                                                                       \
    X(RETIRED_PAGES_DOUBLE_BIT_COUNT, "retired_pages.double_bit.count", "retired_pages.dbe",       \
      "retired_pages.double_bit.count", GM_SMI_K_INT, GM_M_RETIRED_DBE, "", 0)                     \
    X(RETIRED_PAGES_PENDING, "retired_pages.pending", NULL, "retired_pages.pending",               \
      GM_SMI_K_YESNO, GM_M_RETIRED_PENDING, "", 0)                                                 \
    X(REMAPPED_ROWS_CORRECTABLE, "remapped_rows.correctable", "remapped_rows.sbe",                 \
      "remapped_rows.correctable", GM_SMI_K_INT, GM_M_REMAP_CORR, "", 0)                           \
    X(REMAPPED_ROWS_CORRECTABLE_INACTIVE, "remapped_rows.correctable_inactive", NULL,              \
      "remapped_rows.correctable_inactive", GM_SMI_K_INT, GM_M_REMAP_CORR_INACTIVE, "", 0)         \
    X(REMAPPED_ROWS_UNCORRECTABLE, "remapped_rows.uncorrectable", "remapped_rows.dbe",             \
      "remapped_rows.uncorrectable", GM_SMI_K_INT, GM_M_REMAP_UNCORR, "", 0)                       \
    X(REMAPPED_ROWS_UNCORRECTABLE_INACTIVE, "remapped_rows.uncorrectable_inactive", NULL,          \
      "remapped_rows.uncorrectable_inactive", GM_SMI_K_INT, GM_M_REMAP_UNC_INACTIVE, "", 0)        \
    X(REMAPPED_ROWS_PENDING, "remapped_rows.pending", NULL, "remapped_rows.pending",               \
      GM_SMI_K_YESNO, GM_M_REMAP_PENDING, "", 0)                                                   \
    X(REMAPPED_ROWS_FAILURE, "remapped_rows.failure", NULL, "remapped_rows.failure",               \
      GM_SMI_K_YESNO, GM_M_REMAP_FAILURE, "", 0)                                                   \
    X(REMAPPED_ROWS_HISTOGRAM_MAX, "remapped_rows.histogram.max", NULL,                            \
      "remapped_rows.histogram.max", GM_SMI_K_INT, GM_M_REMAP_HIST_MAX, "", 0)                     \
    X(REMAPPED_ROWS_HISTOGRAM_HIGH, "remapped_rows.histogram.high", NULL,                          \
      "remapped_rows.histogram.high", GM_SMI_K_INT, GM_M_REMAP_HIST_HIGH, "", 0)                   \
    X(REMAPPED_ROWS_HISTOGRAM_PARTIAL, "remapped_rows.histogram.partial", NULL,                    \
      "remapped_rows.histogram.partial", GM_SMI_K_INT, GM_M_REMAP_HIST_PARTIAL, "", 0)             \
    X(REMAPPED_ROWS_HISTOGRAM_LOW, "remapped_rows.histogram.low", NULL,                            \
      "remapped_rows.histogram.low", GM_SMI_K_INT, GM_M_REMAP_HIST_LOW, "", 0)                     \
    X(REMAPPED_ROWS_HISTOGRAM_NONE, "remapped_rows.histogram.none", NULL,                          \
      "remapped_rows.histogram.none", GM_SMI_K_INT, GM_M_REMAP_HIST_NONE, "", 0)                   \
    X(TEMP_GPU, "temperature.gpu", NULL, "temperature.gpu", GM_SMI_K_INT, GM_M_TEMP_C, "", 0)      \
    X(TEMPERATURE_GPU_TLIMIT, "temperature.gpu.tlimit", NULL, "temperature.gpu.tlimit",            \
      GM_SMI_K_INT, GM_M_TEMP_TLIMIT_C, "", 0)                                                     \
    X(TEMPERATURE_MEMORY, "temperature.memory", NULL, "temperature.memory", GM_SMI_K_INT,          \
      GM_M_TEMP_MEM_C, "", 0)                                                                      \
    X(POWER_MANAGEMENT, "power.management", NULL, "power.management", GM_SMI_K_ENABLED,            \
      GM_M_POWER_MGMT_MODE, "", 0)                                                                 \
    X(POWER_DRAW, "power.draw", NULL, "power.draw", GM_SMI_K_WATT, GM_M_POWER_MW, "W", 0)          \
    X(POWER_DRAW_AVERAGE, "power.draw.average", "gpu.power.draw.average", "power.draw.average",    \
      GM_SMI_K_WATT, GM_M_POWER_AVG_MW, "W", 0)                                                    \
    X(POWER_DRAW_INSTANT, "power.draw.instant", "gpu.power.draw.instant", "power.draw.instant",    \
      GM_SMI_K_WATT, GM_M_POWER_INSTANT_MW, "W", 0)                                                \
    X(POWER_LIMIT, "power.limit", "gpu.power.requested_limit", "power.limit", GM_SMI_K_WATT,       \
      GM_M_POWER_REQ_LIMIT_MW, "W", 0)                                                             \
    X(ENFORCED_POWER_LIMIT, "enforced.power.limit", "gpu.power.current_limit",                     \
      "enforced.power.limit", GM_SMI_K_WATT, GM_M_POWER_LIMIT_MW, "W", 0)                          \
    X(POWER_DEFAULT_LIMIT, "power.default_limit", "gpu.power.default_limit",                       \
      "power.default_limit", GM_SMI_K_WATT, GM_M_POWER_DEFAULT_LIMIT_MW, "W", 0)                   \
    X(POWER_MIN_LIMIT, "power.min_limit", "gpu.power.min_limit", "power.min_limit", GM_SMI_K_WATT, \
      GM_M_POWER_MIN_LIMIT_MW, "W", 0)                                                             \
    X(POWER_MAX_LIMIT, "power.max_limit", "gpu.power.max_limit", "power.max_limit", GM_SMI_K_WATT, \
      GM_M_POWER_MAX_LIMIT_MW, "W", 0)                                                             \
    X(MODULE_POWER_DRAW_AVERAGE, "module.power.draw.average", NULL, "module.power.draw.average",   \
      GM_SMI_K_NA, GM_M__COUNT, "W", 0)                                                            \
    X(MODULE_POWER_DRAW_INSTANT, "module.power.draw.instant", NULL, "module.power.draw.instant",   \
      GM_SMI_K_NA, GM_M__COUNT, "W", 0)                                                            \
    X(MODULE_POWER_LIMIT, "module.power.limit", "module.power.requested_limit",                    \
      "module.power.limit", GM_SMI_K_NA, GM_M__COUNT, "W", 0)                                      \
    X(MODULE_ENFORCED_POWER_LIMIT, "module.enforced.power.limit", "module.power.current_limit",    \
      "module.enforced.power.limit", GM_SMI_K_NA, GM_M__COUNT, "W", 0)                             \
    X(MODULE_POWER_DEFAULT_LIMIT, "module.power.default_limit", NULL,                              \
      "module.power.default_limit", GM_SMI_K_NA, GM_M__COUNT, "W", 0)                              \
    X(MODULE_POWER_MIN_LIMIT, "module.power.min_limit", NULL, "module.power.min_limit",            \
      GM_SMI_K_NA, GM_M__COUNT, "W", 0)                                                            \
    X(MODULE_POWER_MAX_LIMIT, "module.power.max_limit", NULL, "module.power.max_limit",            \
      GM_SMI_K_NA, GM_M__COUNT, "W", 0)                                                            \
    X(POWER_SMOOTHING_DELAYED_POWER_SMOOTHING_SUPPORTED,                                           \
      "power_smoothing.delayed_power_smoothing_supported", NULL,                                   \
      "power_smoothing.delayed_power_smoothing_supported", GM_SMI_K_NA, GM_M__COUNT, "", 0)        \
    X(POWER_SMOOTHING_PRIMARY_POWER_FLOOR, "power_smoothing.primary_power_floor", NULL,            \
      "power_smoothing.primary_power_floor", GM_SMI_K_NA, GM_M__COUNT, "W", 0)                     \
    X(POWER_SMOOTHING_SECONDARY_POWER_FLOOR, "power_smoothing.secondary_power_floor", NULL,        \
      "power_smoothing.secondary_power_floor", GM_SMI_K_NA, GM_M__COUNT, "W", 0)                   \
    X(POWER_SMOOTHING_MIN_PRIMARY_FLOOR_ACTIVATION_OFFSET,                                         \
      "power_smoothing.min_primary_floor_activation_offset", NULL,                                 \
      "power_smoothing.min_primary_floor_activation_offset", GM_SMI_K_NA, GM_M__COUNT, "W", 0)     \
    X(POWER_SMOOTHING_MIN_PRIMARY_FLOOR_ACTIVATION_POINT,                                          \
      "power_smoothing.min_primary_floor_activation_point", NULL,                                  \
      "power_smoothing.min_primary_floor_activation_point", GM_SMI_K_NA, GM_M__COUNT, "W", 0)      \
    X(POWER_SMOOTHING_WINDOW_MULTIPLIER, "power_smoothing.window_multiplier", NULL,                \
      "power_smoothing.window_multiplier", GM_SMI_K_NA, GM_M__COUNT, "ms", 0)                      \
    X(POWER_SMOOTHING_CURR_PROFILE_SECONDARY_POWER_FLOOR,                                          \
      "power_smoothing.curr_profile.secondary_power_floor", NULL,                                  \
      "power_smoothing.curr_profile.secondary_power_floor", GM_SMI_K_NA, GM_M__COUNT, "W", 0)      \
    X(POWER_SMOOTHING_CURR_PROFILE_PRIMARY_FLOOR_ACT_WINDOW_MULTIPLIER,                            \
      "power_smoothing.curr_profile.primary_floor_act_window_multiplier", NULL,                    \
      "power_smoothing.curr_profile.primary_floor_act_window_multiplier", GM_SMI_K_NA,             \
      GM_M__COUNT, "", 0)                                                                          \
    X(POWER_SMOOTHING_CURR_PROFILE_PRIMARY_FLOOR_TAR_WINDOW_MULTIPLIER,                            \
      "power_smoothing.curr_profile.primary_floor_tar_window_multiplier", NULL,                    \
      "power_smoothing.curr_profile.primary_floor_tar_window_multiplier", GM_SMI_K_NA,             \
      GM_M__COUNT, "", 0)                                                                          \
    X(POWER_SMOOTHING_CURR_PROFILE_PRIMARY_FLOOR_ACT_OFFSET,                                       \
      "power_smoothing.curr_profile.primary_floor_act_offset", NULL,                               \
      "power_smoothing.curr_profile.primary_floor_act_offset", GM_SMI_K_NA, GM_M__COUNT, "W", 0)   \
    X(POWER_SMOOTHING_ADMIN_OVERRIDE_SECONDARY_POWER_FLOOR,                                        \
      "power_smoothing.admin_override.secondary_power_floor", NULL,                                \
      "power_smoothing.admin_override.secondary_power_floor", GM_SMI_K_NA, GM_M__COUNT, "W", 0)    \
    X(POWER_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_ACT_WINDOW_MULTIPLIER,                          \
      "power_smoothing.admin_override.primary_floor_act_window_multiplier", NULL,                  \
      "power_smoothing.admin_override.primary_floor_act_window_multiplier", GM_SMI_K_NA,           \
      GM_M__COUNT, "", 0)                                                                          \
    X(POWER_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_TAR_WINDOW_MULTIPLIER,                          \
      "power_smoothing.admin_override.primary_floor_tar_window_multiplier", NULL,                  \
      "power_smoothing.admin_override.primary_floor_tar_window_multiplier", GM_SMI_K_NA,           \
      GM_M__COUNT, "", 0)                                                                          \
    X(POWER_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_ACT_OFFSET,                                     \
      "power_smoothing.admin_override.primary_floor_act_offset", NULL,                             \
      "power_smoothing.admin_override.primary_floor_act_offset", GM_SMI_K_NA, GM_M__COUNT, "W", 0) \
    X(EDPP_MULTIPLIER, "edpp_multiplier", NULL, "edpp_multiplier", GM_SMI_K_PCT2,                  \
      GM_M_EDPP_MULTIPLIER_PCT, "%", 0)                                                            \
    X(CLOCK_GR, "clocks.gr", "clocks.current.graphics", "clocks.current.graphics", GM_SMI_K_INT,   \
      GM_M_CLOCK_GR_MHZ, "MHz", 0)                                                                 \
    X(CLOCK_SM, "clocks.sm", "clocks.current.sm", "clocks.current.sm", GM_SMI_K_INT,               \
      GM_M_CLOCK_SM_MHZ, "MHz", 0)                                                                 \
    X(CLOCK_MEM, "clocks.mem", "clocks.current.memory", "clocks.current.memory", GM_SMI_K_INT,     \
      GM_M_CLOCK_MEM_MHZ, "MHz", 0)                                                                \
    X(CLOCKS_CURRENT_VIDEO, "clocks.current.video", "clocks.video", "clocks.current.video",        \
      GM_SMI_K_INT, GM_M_CLOCK_VIDEO_MHZ, "MHz", 0)                                                \
    X(CLOCKS_APPLICATIONS_GRAPHICS, "clocks.applications.graphics", "clocks.applications.gr",      \
      "clocks.applications.graphics", GM_SMI_K_INT, GM_M_CLOCK_APP_GR_MHZ, "MHz", 0)               \
    X(CLOCKS_APPLICATIONS_MEMORY, "clocks.applications.memory", "clocks.applications.mem",         \
      "clocks.applications.memory", GM_SMI_K_INT, GM_M_CLOCK_APP_MEM_MHZ, "MHz", 0)                \
    X(CLOCKS_DEFAULT_APPLICATIONS_GRAPHICS, "clocks.default_applications.graphics",                \
      "clocks.default_applications.gr", "clocks.default_applications.graphics", GM_SMI_K_INT,      \
      GM_M_CLOCK_DEFAULT_APP_GR_MHZ, "MHz", 0)                                                     \
    X(CLOCKS_DEFAULT_APPLICATIONS_MEMORY, "clocks.default_applications.memory",                    \
      "clocks.default_applications.mem", "clocks.default_applications.memory", GM_SMI_K_INT,       \
      GM_M_CLOCK_DEFAULT_APP_MEM_MHZ, "MHz", 0)                                                    \
    X(CLOCK_MAX_GR, "clocks.max.gr", "clocks.max.graphics", "clocks.max.graphics", GM_SMI_K_INT,   \
      GM_M_CLOCK_MAX_GR_MHZ, "MHz", 0)                                                             \
    X(CLOCK_MAX_SM, "clocks.max.sm", NULL, "clocks.max.sm", GM_SMI_K_INT, GM_M_CLOCK_MAX_SM_MHZ,   \
      "MHz", 0)                                                                                    \
    X(CLOCK_MAX_MEM, "clocks.max.mem", "clocks.max.memory", "clocks.max.memory", GM_SMI_K_INT,     \
      GM_M_CLOCK_MAX_MEM_MHZ, "MHz", 0)                                                            \
    X(MIG_MODE_CURRENT, "mig.mode.current", NULL, "mig.mode.current", GM_SMI_K_ENABLED,            \
      GM_M_MIG_MODE_CUR, "", 0)                                                                    \
    X(MIG_MODE_PENDING, "mig.mode.pending", NULL, "mig.mode.pending", GM_SMI_K_ENABLED,            \
      GM_M_MIG_MODE_PENDING, "", 0)                                                                \
    X(GSP_MODE_CURRENT, "gsp.mode.current", NULL, "gsp.mode.current", GM_SMI_K_ENABLED,            \
      GM_M_GSP_MODE_CUR, "", 0)                                                                    \
    X(GSP_MODE_DEFAULT, "gsp.mode.default", NULL, "gsp.mode.default", GM_SMI_K_ENABLED,            \
      GM_M_GSP_MODE_DEFAULT, "", 0)                                                                \
    X(C2C_MODE, "c2c.mode", NULL, "c2c.mode", GM_SMI_K_ENABLED, GM_M_C2C_MODE, "", 0)              \
    X(PROTECTED_MEMORY_TOTAL, "protected_memory.total", NULL, "protected_memory.total",            \
      GM_SMI_K_MIB, GM_M_PROT_MEM_TOTAL_BYTES, "MiB", 0)                                           \
    X(PROTECTED_MEMORY_USED, "protected_memory.used", NULL, "protected_memory.used", GM_SMI_K_MIB, \
      GM_M_PROT_MEM_USED_BYTES, "MiB", 0)                                                          \
    X(PROTECTED_MEMORY_FREE, "protected_memory.free", NULL, "protected_memory.free", GM_SMI_K_MIB, \
      GM_M_PROT_MEM_FREE_BYTES, "MiB", 0)                                                          \
    X(FABRIC_STATE, "fabric.state", NULL, "fabric.state", GM_SMI_K_FABRIC_STATE,                   \
      GM_M_FABRIC_STATE, "", 0)                                                                    \
    X(FABRIC_STATUS, "fabric.status", NULL, "fabric.status", GM_SMI_K_FABRIC_STATUS, GM_M__COUNT,  \
      "", 0)                                                                                       \
    X(FABRIC_CLIQUEID, "fabric.cliqueId", NULL, "fabric.cliqueId", GM_SMI_K_INT,                   \
      GM_M_FABRIC_CLIQUE_ID, "", 0)                                                                \
    X(FABRIC_CLUSTERUUID, "fabric.clusterUuid", NULL, "fabric.clusterUuid", GM_SMI_K_FABRIC_UUID,  \
      GM_M__COUNT, "", 0)                                                                          \
    X(FABRIC_HEALTH_SUMMARY, "fabric.health.summary", NULL, "fabric.health.summary", GM_SMI_K_NA,  \
      GM_M__COUNT, "", 0)                                                                          \
    X(FABRIC_HEALTH_BANDWIDTH, "fabric.health.bandwidth", NULL, "fabric.health.bandwidth",         \
      GM_SMI_K_NA, GM_M__COUNT, "", 0)                                                             \
    X(FABRIC_HEALTH_ROUTE_RECOVERY_IN_PROGRESS, "fabric.health.route_recovery_in_progress", NULL,  \
      "fabric.health.route_recovery_in_progress", GM_SMI_K_NA, GM_M__COUNT, "", 0)                 \
    X(FABRIC_HEALTH_ROUTE_UNHEALTHY, "fabric.health.route_unhealthy", NULL,                        \
      "fabric.health.route_unhealthy", GM_SMI_K_NA, GM_M__COUNT, "", 0)                            \
    X(FABRIC_HEALTH_ACCESS_TIMEOUT_RECOVERY, "fabric.health.access_timeout_recovery", NULL,        \
      "fabric.health.access_timeout_recovery", GM_SMI_K_NA, GM_M__COUNT, "", 0)                    \
    X(FABRIC_HEALTH_INCORRECT_CONFIGURATION, "fabric.health.incorrect_configuration", NULL,        \
      "fabric.health.incorrect_configuration", GM_SMI_K_NA, GM_M__COUNT, "", 0)                    \
    X(FABRIC_HEALTH_PARTITION_ASSIGNED, "fabric.health.partition_assigned", NULL,                  \
      "fabric.health.partition_assigned", GM_SMI_K_NA, GM_M__COUNT, "", 0)                         \
    X(PLATFORM_CHASSIS_SERIAL_NUMBER, "platform.chassis_serial_number", NULL,                      \
      "platform.chassis_serial_number", GM_SMI_K_PLATFORM_SERIAL, GM_M__COUNT, "", 0)              \
    X(PLATFORM_SLOT_NUMBER, "platform.slot_number", NULL, "platform.slot_number", GM_SMI_K_INT,    \
      GM_M_PLATFORM_SLOT, "", 0)                                                                   \
    X(PLATFORM_TRAY_INDEX, "platform.tray_index", NULL, "platform.tray_index", GM_SMI_K_INT,       \
      GM_M_PLATFORM_TRAY, "", 0)                                                                   \
    X(PLATFORM_HOST_ID, "platform.host_id", NULL, "platform.host_id", GM_SMI_K_INT,                \
      GM_M_PLATFORM_HOST_ID, "", 0)                                                                \
    X(PLATFORM_PEER_TYPE, "platform.peer_type", NULL, "platform.peer_type", GM_SMI_K_PEER_TYPE,    \
      GM_M_PLATFORM_PEER_TYPE, "", 0)                                                              \
    X(PLATFORM_MODULE_ID, "platform.module_id", NULL, "platform.module_id", GM_SMI_K_INT,          \
      GM_M_PLATFORM_MODULE_ID, "", 0)                                                              \
    X(PLATFORM_GPU_FABRIC_GUID, "platform.gpu_fabric_guid", NULL, "platform.gpu_fabric_guid",      \
      GM_SMI_K_PLATFORM_GUID, GM_M__COUNT, "", 0)                                                  \
    /* The name set on the GPU with nvidia-smi --set-hostname (nvmlDeviceGetHostname_v1), not      \
     * the machine's: 590 printed [N/A] on the captured H100. Not read by gpumon. */               \
    X(HOSTNAME, "hostname", NULL, "hostname", GM_SMI_K_NA, GM_M__COUNT, "", 0)

typedef enum gm_smi_field {
#define GM__SMI_FIELD_ENUM(id, name, alias, header, kind, metric, unit, arg) GM_SMI_F_##id,
    GM_SMI_FIELD_MAP(GM__SMI_FIELD_ENUM)
#undef GM__SMI_FIELD_ENUM
        GM_SMI_F__COUNT
} gm_smi_field;

/* Most fields one --query-gpu list may name (nvidia-smi allows repeats). */
#define GM_SMI_MAX_FIELDS 256

/* --format modifiers. */
enum { GM_SMI_NOHEADER = 1u << 0, GM_SMI_NOUNITS = 1u << 1 };

/* ---- the table --------------------------------------------------------------------------- */

/* Returns the field (gm_smi_field) named name or its alias, exactly as nvidia-smi matches them
 * (case-sensitive, no trimming), or -1 when gpumon does not know it. */
int gm_smi_field_find(const char *name);
/* nvidia-smi's word for value v of an enumerated kind (GM_SMI_K_COMPUTE_MODE, _ADDRESSING,
 * _RECOVERY, _FABRIC_STATE: "Default", "None", "Reset"...), the one table every printer and
 * parser of these words reads; NULL for a value it has none for. */
const char *gm_smi_enum_word(gm_smi_kind kind, long long v);
/* Returns the spelling sent to nvidia-smi, NULL when id is out of range. */
const char *gm_smi_field_name(int id);
/* Returns the other spelling nvidia-smi accepts, NULL when there is none or id is out of range. */
const char *gm_smi_field_alias(int id);
/* Returns the CSV header nvidia-smi prints: "memory.used [MiB]", "temperature.gpu"; NULL when id is
 * out of range. */
const char *gm_smi_field_header(int id);
/* Returns the unit suffix ("MiB", "W", "%", "MHz" or ""), NULL when id is out of range. */
const char *gm_smi_field_unit(int id);
/* Returns the gm_metric behind id, or -1 for identity fields and ids out of range. */
int gm_smi_field_metric(int id);
/* Returns the kind of id, or -1 when out of range. */
int gm_smi_field_kind(int id);
/* Adds to w what the collector must read to print fields[0..n-1]: each field's metric, the
 * board strings for serial/VBIOS/infoROM fields, and the metric read in the same call for
 * fields that print a string (fabric status, platform serial and GUID). */
void gm_smi_fields_want(const int *fields, size_t n, gm_metric_set *w);
/* Returns what nvidia-smi 590 prints for id when it cannot give the value: "[N/A]" for most
 * fields, "[Requested functionality has been deprecated]" for display_mode, power.management and
 * the application clocks, "N/A" for fabric.health.*; NULL when id is out of range. */
const char *gm_smi_field_absent(int id);

/* ---- driver profiles ---------------------------------------------------------------------- */

/* What the nvidia-smi of one driver branch prints where they differ: which fields its
 * --help-query-gpu lists, which it prints as deprecated whatever the driver answers, its
 * placeholders, how it prints NVML's version and whether it accepts -q -x -d. One table in
 * smi_format.c, from real captures of each branch (tests/fixtures/smi/real-*). */
typedef struct gm_smi_profile gm_smi_profile;

/* The profile for the driver that reports driver_version ("580.159.04"): the newest profile at or
 * below its major version; a driver older than every profile gets the oldest, and an empty or
 * unparsable version the newest. Never NULL. */
const gm_smi_profile *gm_smi_profile_for(const char *driver_version);
/* The driver branch the profile was captured on ("580"). */
const char *gm_smi_profile_name(const gm_smi_profile *p);
/* True when p's nvidia-smi knows field id (lists it in --help-query-gpu). */
bool gm_smi_profile_has(const gm_smi_profile *p, int id);
/* What p's nvidia-smi prints for id when it cannot give a value, or always for the fields it
 * deprecated; NULL when id is out of range. */
const char *gm_smi_profile_absent(const gm_smi_profile *p, int id);
/* True when p's nvidia-smi prints id as deprecated whatever the driver answers. */
bool gm_smi_profile_deprecated(const gm_smi_profile *p, int id);
/* True when p's nvidia-smi refuses -d with -x (exit 2, gm_smi_profile_xml_display_error()). */
bool gm_smi_profile_refuses_xml_display(const gm_smi_profile *p);
/* True when p's -q -x prints PCI ids and class codes without "0x" (<pci_bus>00</pci_bus>). */
bool gm_smi_profile_xml_bare_hex(const gm_smi_profile *p);
/* nvidia-smi's words when it refuses -q -x -d. */
const char *gm_smi_profile_xml_display_error(void);
/* Writes NVML's version string nvml ("13.580.159.04") as p's nvidia-smi --version prints it
 * ("580.159") into buf; "N/A" when nvml is empty. */
void gm_smi_profile_nvml_version(const gm_smi_profile *p, const char *nvml, char *buf, size_t cap);

/* ---- printing (gpumon query --query-gpu=... --format=csv...) ------------------------------ */

/* Parses a comma-separated --query-gpu list into ids[0..*n). Returns GM_EINVAL for an unknown or
 * empty name, with nvidia-smi's message: Field "foo" is not a valid field to query.  and for more
 * than max names. */
int gm_smi_parse_fields(const char *list, int *ids, size_t max, size_t *n, gm_error *err);
/* The same, accepting only the fields profile p knows, as that driver's nvidia-smi does. */
int gm_smi_parse_fields_for(const gm_smi_profile *p, const char *list, int *ids, size_t max,
                            size_t *n, gm_error *err);

/* Parses a --format value ("csv", "csv,noheader", "csv,noheader,nounits", any order) into
 * GM_SMI_NOHEADER | GM_SMI_NOUNITS flags. "csv" is required. Returns GM_EINVAL otherwise. */
int gm_smi_parse_format(const char *spec, unsigned *flags, gm_error *err);

/* Writes the value of field id for GPU g of snapshot s as nvidia-smi prints it ("45 %", "69.48 W",
 * gm_smi_field_absent(id) when absent, "[GPU is lost]" for metrics of a lost GPU) into buf (always
 * terminated). Returns the length written or GM_EINVAL for an unknown id. */
int gm_smi_format_value(const gm_snapshot *s, const gm_gpu *g, int id, unsigned flags, char *buf,
                        size_t cap);

/* Writes the header line (unless GM_SMI_NOHEADER) and one line per GPU of s, fields joined by ", ",
 * lines ended by "\n", in snapshot order. gpus/ngpus restrict output to those driver indices (NULL
 * or 0: every GPU); an index s lacks gives GM_ENOENT before anything is written. Returns GM_OK,
 * GM_EINVAL (bad id, n == 0) or GM_EIO when writing fails. The CLI needs only:
 *     int ids[GM_SMI_MAX_FIELDS]; size_t n; unsigned flags;
 *     if (gm_smi_parse_fields(q, ids, GM_SMI_MAX_FIELDS, &n, &e) ||
 *         gm_smi_parse_format(f, &flags, &e) ||
 *         gm_smi_format_csv(stdout, snap, ids, n, flags, NULL, 0, &e)) -> print e.msg, exit 2 */
int gm_smi_format_csv(FILE *out, const gm_snapshot *s, const int *ids, size_t n, unsigned flags,
                      const unsigned *gpus, size_t ngpus, gm_error *err);

/* ---- parsing (the nvidia-smi provider) ----------------------------------------------------- */

/* Parses the output of `nvidia-smi --query-gpu=<ids> --format=csv,noheader[,nounits]` into
 * out->gpus[0..out->gpu_count) (replacing what was there) and out->driver_version (first row's).
 * Tolerates CRLF, odd spacing, values with or without units, a header line, missing trailing
 * fields (absent) and extra ones (ignored). "[N/A]", "[Not Supported]", "[Unknown Error]" and
 * any other bracketed or "N/A" value leave the metric absent; "[GPU is lost]" or "[GPU requires
 * reset]" mark the GPU lost (identity kept, no metric valid). A row whose index does not parse or
 * is GM_MAX_GPUS or more, a repeated index or a row past GM_MAX_GPUS is skipped and described in
 * warn (cap bytes, may be NULL), as is a single value that does not parse (that metric stays
 * absent).
 * Returns GM_OK when at least one row parsed; GM_ENODEV when text holds no row at all (or says
 * "No devices were found"); GM_EPARSE, quoting the first bad line (truncated), when no row parsed.
 */
int gm_smi_parse_gpu_csv(const char *text, const int *ids, size_t n, gm_snapshot *out, char *warn,
                         size_t cap, gm_error *err);

/* Parses `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits`
 * and appends one GM_PROC_COMPUTE process per row through gm_snapshot_add_process, gpu_index found
 * by uuid among out->gpus (so parse the GPUs first). Memory is MiB -> bytes; "[N/A]", or a
 * figure past what 64 bits of bytes hold (described in warn), leaves mem_valid false. Rows
 * naming an unknown uuid or a bad pid are skipped and described in warn.
 * Returns GM_OK (empty text is no process, not an error). */
int gm_smi_parse_apps_csv(const char *text, gm_snapshot *out, char *warn, size_t cap,
                          gm_error *err);

#endif
