/* gpumon.h - the public API of libgpumon: GPU and host telemetry as plain samples. */
#ifndef GPUMON_H
#define GPUMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GM_VERSION "0.1.0"

#define GM_MAX_GPUS     64   /* NVML enumerates at most this many per host in practice */
#define GM_MAX_CPUS     1024 /* per-core utilisation entries kept in a host sample */
#define GM_MAX_PROCS    4096 /* GPU processes kept per snapshot; more are counted, not stored */
#define GM_NAME_LEN     96
#define GM_UUID_LEN     96
#define GM_BUSID_LEN    32
#define GM_VERSION_LEN  32
#define GM_USER_LEN     64
#define GM_CMD_LEN      256
#define GM_HOSTNAME_LEN 256
/* Kubernetes names: a pod's is a DNS subdomain (at most 253 bytes), a namespace's and a
 * container's a DNS label (at most 63); a pod UID is 36 characters, a container ID 64 hex. */
#define GM_K8S_POD_LEN      254
#define GM_K8S_NAME_LEN     64
#define GM_POD_UID_LEN      40
#define GM_CONTAINER_ID_LEN 72

/* ---- errors ------------------------------------------------------------------------------ */

/* Every library function returns GM_OK (0) or one of these negative codes. */
#define GM_ERRNO_MAP(X)                  \
    X(EINVAL, "invalid argument")        \
    X(ENOMEM, "out of memory")           \
    X(EIO, "input/output error")         \
    X(EPARSE, "malformed input")         \
    X(ENOLIB, "library not found")       \
    X(ENOSYM, "required symbol missing") \
    X(EINIT, "initialisation failed")    \
    X(ENODEV, "no GPU found")            \
    X(ELOST, "GPU is lost")              \
    X(EPERM, "permission denied")        \
    X(ENOTSUP, "not supported")          \
    X(ETIMEDOUT, "timed out")            \
    X(ENOENT, "not found")               \
    X(ESPAWN, "could not run program")   \
    X(ESTATE, "invalid state")           \
    X(EBUSY, "resource busy")            \
    X(EEXIST, "already exists")          \
    X(ECANCELED, "cancelled")

enum gm_errno {
    GM_OK = 0,
    GM__ERR_MIN = -64,
#define GM__ERRNO_ENUM(name, msg) GM_##name,
    GM_ERRNO_MAP(GM__ERRNO_ENUM)
#undef GM__ERRNO_ENUM
};

/* Error detail: the code plus a human sentence saying what failed and why. */
typedef struct gm_error {
    int code;
    char msg[512];
} gm_error;

/* Returns a static description of code ("unknown error" for codes outside the table). */
const char *gm_strerror(int code);

/* ---- metrics ----------------------------------------------------------------------------- */

/* GPU metrics. The enum name carries the raw unit stored in gm_gpu.v; the string is the
 * canonical name, the nvidia-smi --query-gpu name where nvidia-smi has one. */
#define GM_GPU_METRIC_MAP(X)                              \
    X(UTIL_GPU_PCT, "utilization.gpu")                    \
    X(UTIL_MEM_PCT, "utilization.memory")                 \
    X(UTIL_ENC_PCT, "utilization.encoder")                \
    X(UTIL_DEC_PCT, "utilization.decoder")                \
    X(MEM_TOTAL_BYTES, "memory.total")                    \
    X(MEM_USED_BYTES, "memory.used")                      \
    X(MEM_FREE_BYTES, "memory.free")                      \
    X(MEM_RESERVED_BYTES, "memory.reserved")              \
    X(TEMP_C, "temperature.gpu")                          \
    X(POWER_MW, "power.draw")                             \
    X(POWER_LIMIT_MW, "enforced.power.limit")             \
    X(ENERGY_MJ, "energy.total")                          \
    X(CLOCK_GR_MHZ, "clocks.gr")                          \
    X(CLOCK_SM_MHZ, "clocks.sm")                          \
    X(CLOCK_MEM_MHZ, "clocks.mem")                        \
    X(CLOCK_MAX_GR_MHZ, "clocks.max.gr")                  \
    X(CLOCK_MAX_SM_MHZ, "clocks.max.sm")                  \
    X(CLOCK_MAX_MEM_MHZ, "clocks.max.mem")                \
    X(FAN_PCT, "fan.speed")                               \
    X(PCIE_GEN_CUR, "pcie.link.gen.current")              \
    X(PCIE_GEN_MAX, "pcie.link.gen.max")                  \
    X(PCIE_WIDTH_CUR, "pcie.link.width.current")          \
    X(PCIE_WIDTH_MAX, "pcie.link.width.max")              \
    X(PCIE_TX_KBPS, "pcie.tx")                            \
    X(PCIE_RX_KBPS, "pcie.rx")                            \
    X(PSTATE, "pstate")                                   \
    X(THROTTLE_REASONS, "clocks_throttle_reasons.active") \
    X(PERSISTENCE_MODE, "persistence_mode")               \
    GM_HEALTH_METRIC_MAP(X)

/* The health and configuration metrics: configuration read once a minute, counters
 * at the slow period, XID from NVML's event set, profiling ratios from GPM (Hopper and newer).
 * The rings keep these only when their table row says numeric_series (ring.c). */
#define GM_HEALTH_METRIC_MAP(X)                                                        \
    X(POWER_REQ_LIMIT_MW, "power.limit")                                               \
    X(POWER_DEFAULT_LIMIT_MW, "power.default_limit")                                   \
    X(POWER_MIN_LIMIT_MW, "power.min_limit")                                           \
    X(POWER_MAX_LIMIT_MW, "power.max_limit")                                           \
    X(POWER_AVG_MW, "power.draw.average")                                              \
    X(POWER_INSTANT_MW, "power.draw.instant")                                          \
    X(TEMP_MEM_C, "temperature.memory")                                                \
    X(CLOCK_VIDEO_MHZ, "clocks.video")                                                 \
    X(UTIL_JPEG_PCT, "utilization.jpeg")                                               \
    X(UTIL_OFA_PCT, "utilization.ofa")                                                 \
    X(PCIE_GEN_GPU_MAX, "pcie.link.gen.gpumax")                                        \
    X(PCI_DEVICE_ID, "pci.device_id")                                                  \
    X(PCI_SUBSYS_ID, "pci.sub_device_id")                                              \
    X(THROTTLE_SUPPORTED, "clocks_throttle_reasons.supported")                         \
    X(COMPUTE_MODE, "compute_mode")                                                    \
    X(COMPUTE_CAP, "compute_cap")                                                      \
    X(MIG_MODE_CUR, "mig.mode.current")                                                \
    X(MIG_MODE_PENDING, "mig.mode.pending")                                            \
    X(ECC_MODE_CUR, "ecc.mode.current")                                                \
    X(ECC_MODE_PENDING, "ecc.mode.pending")                                            \
    X(ENC_SESSIONS, "encoder.stats.sessionCount")                                      \
    X(ENC_FPS, "encoder.stats.averageFps")                                             \
    X(ENC_LATENCY_US, "encoder.stats.averageLatency")                                  \
    X(ECC_CORR_VOL, "ecc.errors.corrected.volatile.total")                             \
    X(ECC_CORR_AGG, "ecc.errors.corrected.aggregate.total")                            \
    X(ECC_UNCORR_VOL, "ecc.errors.uncorrected.volatile.total")                         \
    X(ECC_UNCORR_AGG, "ecc.errors.uncorrected.aggregate.total")                        \
    GM_ECC_LOCATION_MAP(GM__ECC_LOC_METRICS, X)                                        \
    X(RETIRED_SBE, "retired_pages.single_bit_ecc.count")                               \
    X(RETIRED_DBE, "retired_pages.double_bit.count")                                   \
    X(RETIRED_PENDING, "retired_pages.pending")                                        \
    X(REMAP_CORR, "remapped_rows.correctable")                                         \
    X(REMAP_UNCORR, "remapped_rows.uncorrectable")                                     \
    X(REMAP_PENDING, "remapped_rows.pending")                                          \
    X(REMAP_FAILURE, "remapped_rows.failure")                                          \
    X(REMAP_HIST_MAX, "remapped_rows.histogram.max")                                   \
    X(REMAP_HIST_HIGH, "remapped_rows.histogram.high")                                 \
    X(REMAP_HIST_PARTIAL, "remapped_rows.histogram.partial")                           \
    X(REMAP_HIST_LOW, "remapped_rows.histogram.low")                                   \
    X(REMAP_HIST_NONE, "remapped_rows.histogram.none")                                 \
    X(PCIE_REPLAY, "pcie.replay_counter")                                              \
    X(VIOL_POWER_NS, "clocks_event_reasons_counters.sw_power_cap")                     \
    X(VIOL_THERMAL_NS, "violation.thermal")                                            \
    X(VIOL_SYNC_BOOST_NS, "clocks_event_reasons_counters.sync_boost")                  \
    X(VIOL_SW_THERMAL_NS, "clocks_event_reasons_counters.sw_thermal_slowdown")         \
    X(VIOL_HW_THERMAL_NS, "clocks_event_reasons_counters.hw_thermal_slowdown")         \
    X(VIOL_HW_POWER_BRAKE_NS, "clocks_event_reasons_counters.hw_power_brake_slowdown") \
    X(XID_LAST, "xid.last")                                                            \
    X(XID_COUNT, "xid.count")                                                          \
    X(XID_TIME_MS, "xid.last_time")                                                    \
    X(NVLINK_ACTIVE, "nvlink.links_active")                                            \
    X(NVLINK_TX_KIB, "nvlink.tx")                                                      \
    X(NVLINK_RX_KIB, "nvlink.rx")                                                      \
    X(NVLINK_CRC_FLIT, "nvlink.errors.crc_flit")                                       \
    X(NVLINK_CRC_DATA, "nvlink.errors.crc_data")                                       \
    X(NVLINK_REPLAY, "nvlink.errors.replay")                                           \
    X(NVLINK_RECOVERY, "nvlink.errors.recovery")                                       \
    X(PROF_GR_ACTIVE_PCT, "prof.gr_engine_active")                                     \
    X(PROF_SM_ACTIVE_PCT, "prof.sm_active")                                            \
    X(PROF_SM_OCCUPANCY_PCT, "prof.sm_occupancy")                                      \
    X(PROF_TENSOR_PCT, "prof.pipe_tensor_active")                                      \
    X(PROF_DRAM_PCT, "prof.dram_active")                                               \
    X(PROF_FP64_PCT, "prof.pipe_fp64_active")                                          \
    X(PROF_FP32_PCT, "prof.pipe_fp32_active")                                          \
    X(PROF_FP16_PCT, "prof.pipe_fp16_active")                                          \
    X(PROF_PCIE_TX_BPS, "prof.pcie_tx_bytes")                                          \
    X(PROF_PCIE_RX_BPS, "prof.pcie_rx_bytes")                                          \
    X(PROF_NVLINK_TX_BPS, "prof.nvlink_tx_bytes")                                      \
    X(PROF_NVLINK_RX_BPS, "prof.nvlink_rx_bytes")                                      \
    X(PCI_BASE_CLASS, "pci.baseClass")                                                 \
    X(PCI_SUB_CLASS, "pci.subClass")                                                   \
    X(ACCOUNTING_MODE, "accounting.mode")                                              \
    X(ACCOUNTING_BUFFER, "accounting.buffer_size")                                     \
    X(GSP_MODE_CUR, "gsp.mode.current")                                                \
    X(GSP_MODE_DEFAULT, "gsp.mode.default")                                            \
    X(TEMP_TLIMIT_C, "temperature.gpu.tlimit")                                         \
    GM_MODE_METRIC_MAP(X)

/* Modes, fabric and SRAM ECC status nvidia-smi shows (enum values as NVML gives them). */
#define GM_MODE_METRIC_MAP(X)                                                             \
    X(DISPLAY_ATTACHED, "display_attached")                                               \
    X(DISPLAY_ACTIVE, "display_active")                                                   \
    X(ADDRESSING_MODE, "addressing_mode")                                                 \
    X(C2C_MODE, "c2c.mode")                                                               \
    X(RECOVERY_ACTION, "gpu_recovery_action")                                             \
    X(EDPP_MULTIPLIER_PCT, "edpp_multiplier")                                             \
    X(PROT_MEM_TOTAL_BYTES, "protected_memory.total")                                     \
    X(PROT_MEM_USED_BYTES, "protected_memory.used")                                       \
    X(PROT_MEM_FREE_BYTES, "protected_memory.free")                                       \
    X(FABRIC_STATE, "fabric.state")                                                       \
    X(FABRIC_STATUS, "fabric.status")                                                     \
    X(FABRIC_CLIQUE_ID, "fabric.cliqueId")                                                \
    X(SRAM_UNCORR_VOL_PARITY, "ecc.errors.uncorrected.volatile.sram.parity")              \
    X(SRAM_UNCORR_VOL_SECDED, "ecc.errors.uncorrected.volatile.sram.secded")              \
    X(SRAM_UNCORR_AGG_PARITY, "ecc.errors.uncorrected.aggregate.sram.parity")             \
    X(SRAM_UNCORR_AGG_SECDED, "ecc.errors.uncorrected.aggregate.sram.secded")             \
    X(SRAM_THRESHOLD_EXCEEDED, "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded") \
    X(SRAM_UNCORR_AGG_L2, "ecc.errors.uncorrected.aggregate.sram.l2")                     \
    X(SRAM_UNCORR_AGG_SM, "ecc.errors.uncorrected.aggregate.sram.sm")                     \
    X(SRAM_UNCORR_AGG_MCU, "ecc.errors.uncorrected.aggregate.sram.mcu")                   \
    X(SRAM_UNCORR_AGG_PCIE, "ecc.errors.uncorrected.aggregate.sram.pcie")                 \
    X(SRAM_UNCORR_AGG_OTHER, "ecc.errors.uncorrected.aggregate.sram.other")               \
    GM_DROPIN_METRIC_MAP(X)

/* Readings nvidia-smi prints that drivers before 590 still answer or that only -q shows
 * (application clocks, power management, BAR1, board identity, thresholds, platform). */
#define GM_DROPIN_METRIC_MAP(X)                                         \
    X(POWER_MGMT_MODE, "power.management")                              \
    X(CLOCK_APP_GR_MHZ, "clocks.applications.graphics")                 \
    X(CLOCK_APP_MEM_MHZ, "clocks.applications.memory")                  \
    X(CLOCK_DEFAULT_APP_GR_MHZ, "clocks.default_applications.graphics") \
    X(CLOCK_DEFAULT_APP_MEM_MHZ, "clocks.default_applications.memory")  \
    X(CLOCK_MAX_VIDEO_MHZ, "clocks.max.video")                          \
    X(REMAP_CORR_INACTIVE, "remapped_rows.correctable_inactive")        \
    X(REMAP_UNC_INACTIVE, "remapped_rows.uncorrectable_inactive")       \
    X(BAR1_TOTAL_BYTES, "bar1.total")                                   \
    X(BAR1_USED_BYTES, "bar1.used")                                     \
    X(BAR1_FREE_BYTES, "bar1.free")                                     \
    X(BOARD_ID, "board_id")                                             \
    X(MULTI_GPU_BOARD, "multigpu_board")                                \
    X(BRAND, "brand")                                                   \
    X(ARCHITECTURE, "architecture")                                     \
    X(TEMP_SHUTDOWN_C, "temperature.shutdown")                          \
    X(TEMP_SLOWDOWN_C, "temperature.slowdown")                          \
    X(TEMP_MEM_MAX_C, "temperature.memory_max")                         \
    X(TEMP_GPU_MAX_C, "temperature.gpu_max")                            \
    X(INFOROM_VALID, "inforom.checksum_validation")                     \
    X(PLATFORM_SLOT, "platform.slot_number")                            \
    X(PLATFORM_TRAY, "platform.tray_index")                             \
    X(PLATFORM_HOST_ID, "platform.host_id")                             \
    X(PLATFORM_PEER_TYPE, "platform.peer_type")                         \
    X(PLATFORM_MODULE_ID, "platform.module_id")                         \
    X(TEMP_SHUTDOWN_TLIMIT_C, "temperature.shutdown_tlimit")            \
    X(TEMP_SLOWDOWN_TLIMIT_C, "temperature.slowdown_tlimit")            \
    X(TEMP_MEM_MAX_TLIMIT_C, "temperature.memory_max_tlimit")           \
    X(TEMP_GPU_MAX_TLIMIT_C, "temperature.gpu_max_tlimit")              \
    X(TEMP_TARGET_C, "temperature.target")                              \
    X(TEMP_TARGET_MIN_C, "temperature.target_min")                      \
    X(TEMP_TARGET_MAX_C, "temperature.target_max")                      \
    X(CLOCK_MAX_BOOST_GR_MHZ, "clocks.max_customer_boost.graphics")     \
    X(VIRT_MODE, "virtualization_mode")                                 \
    X(PCIE_REPLAY_ROLLOVER, "pcie.replay_rollover_counter")             \
    GM_SMI_EXTRA_METRIC_MAP(X)

/* The rest of what nvidia-smi -q prints from NVML (enum values and masks as NVML gives them);
 * most are unsupported on the boards measured so far and stay absent there. */
#define GM_SMI_EXTRA_METRIC_MAP(X)                                 \
    X(BBX_FLUSH_TIME, "inforom.bbx_flush.timestamp")               \
    X(BBX_FLUSH_DURATION_US, "inforom.bbx_flush.duration")         \
    X(HOST_VGPU_MODE, "host_vgpu_mode")                            \
    X(VGPU_HETERO_MODE, "vgpu_heterogeneous_mode")                 \
    X(BRIDGE_CHIP_TYPE, "pci.bridge_chip.type")                    \
    X(BRIDGE_CHIP_FW, "pci.bridge_chip.firmware")                  \
    X(PCIE_ATOMICS_OUT, "pci.atomic_caps.outbound")                \
    X(PCIE_ATOMICS_IN, "pci.atomic_caps.inbound")                  \
    X(FBC_SESSIONS, "fbc.session_count")                           \
    X(FBC_FPS, "fbc.average_fps")                                  \
    X(FBC_LATENCY_US, "fbc.average_latency")                       \
    X(DRAM_ENC_CUR, "dramEncryption.mode.current")                 \
    X(DRAM_ENC_PENDING, "dramEncryption.mode.pending")             \
    X(REPAIR_CHANNEL_PENDING, "repair.channel_pending")            \
    X(REPAIR_TPC_PENDING, "repair.tpc_pending")                    \
    X(UNREPAIRABLE_MEMORY, "unrepairable_memory")                  \
    X(POWER_MEM_AVG_MW, "memory.power.draw.average")               \
    X(POWER_MEM_INSTANT_MW, "memory.power.draw.instant")           \
    X(POWER_MODULE_AVG_MW, "module.power.draw.average")            \
    X(POWER_MODULE_INSTANT_MW, "module.power.draw.instant")        \
    X(POWER_MODULE_LIMIT_MW, "module.enforced.power.limit")        \
    X(POWER_MODULE_REQ_LIMIT_MW, "module.power.limit")             \
    X(POWER_MODULE_DEFAULT_LIMIT_MW, "module.power.default_limit") \
    X(POWER_MODULE_MIN_LIMIT_MW, "module.power.min_limit")         \
    X(POWER_MODULE_MAX_LIMIT_MW, "module.power.max_limit")         \
    X(POWER_SMOOTHING, "power_smoothing")                          \
    X(POWER_PROFILES_REQUESTED, "power_profiles.requested")        \
    X(POWER_PROFILES_ENFORCED, "power_profiles.enforced")          \
    X(AUTO_BOOST, "clocks.auto_boost")                             \
    X(AUTO_BOOST_DEFAULT, "clocks.auto_boost_default")             \
    X(EGM, "capabilities.egm")                                     \
    GM_VENDOR_METRIC_MAP(X)

/* Readings other vendors' GPUs give that NVIDIA's do not: AMD's junction (hotspot) sensor, and
 * its edge sensor apart (temperature.gpu is the edge's, or the junction's on boards without). */
#define GM_VENDOR_METRIC_MAP(X)                \
    X(TEMP_JUNCTION_C, "temperature.junction") \
    X(TEMP_EDGE_C, "temperature.edge")

/* ECC counter locations as nvidia-smi names them, with NVML's nvmlMemoryLocation_t: L(id, name,
 * location). device_memory and dram are the same counter (location 2), one metric. */
#define GM_ECC_LOCATION_MAP(L, X)             \
    L(X, DRAM, "dram", 2)                     \
    L(X, REGISTER_FILE, "register_file", 3)   \
    L(X, L1_CACHE, "l1_cache", 0)             \
    L(X, L2_CACHE, "l2_cache", 1)             \
    L(X, TEXTURE_MEMORY, "texture_memory", 4) \
    L(X, CBU, "cbu", 6)                       \
    L(X, SRAM, "sram", 7)
#define GM__ECC_LOC_METRICS(X, id, name, loc)                       \
    X(ECC_CORR_VOL_##id, "ecc.errors.corrected.volatile." name)     \
    X(ECC_CORR_AGG_##id, "ecc.errors.corrected.aggregate." name)    \
    X(ECC_UNCORR_VOL_##id, "ecc.errors.uncorrected.volatile." name) \
    X(ECC_UNCORR_AGG_##id, "ecc.errors.uncorrected.aggregate." name)

typedef enum gm_metric {
#define GM__METRIC_ENUM(id, name) GM_M_##id,
    GM_GPU_METRIC_MAP(GM__METRIC_ENUM)
#undef GM__METRIC_ENUM
        GM_M__COUNT
} gm_metric;

/* Bytes in a MiB (2^20): memory is kept in bytes and shown in MiB, as nvidia-smi shows it.
 * Whole, so whole byte counts divide exactly; a double beside it converts it exactly. */
#define GM_BYTES_PER_MIB 1048576ULL

/* Static description of a GPU metric. */
typedef struct gm_metric_info {
    gm_metric id;
    const char *name; /* canonical name, e.g. "utilization.gpu" */
    const char *unit; /* unit of the display value: "%", "MiB", "W", "J", "MHz", "C", "KB/s", "" */
    double scale;     /* display value = raw value * scale */
    bool numeric_series;     /* worth keeping as a time series (history, statistics) */
    const char *description; /* one line for --help and docs */
} gm_metric_info;

/* Returns the description of id, or NULL when id is out of range. */
const gm_metric_info *gm_metric_get(gm_metric id);
/* Returns the metric whose canonical name is name, or -1 when there is none. */
int gm_metric_find(const char *name);

/* Host metrics, same conventions. */
#define GM_HOST_METRIC_MAP(X)                  \
    X(CPU_UTIL_PCT, "cpu.utilization")         \
    X(CPU_COUNT, "cpu.count")                  \
    X(MEM_TOTAL_BYTES, "memory.total")         \
    X(MEM_USED_BYTES, "memory.used")           \
    X(MEM_AVAILABLE_BYTES, "memory.available") \
    X(SWAP_TOTAL_BYTES, "swap.total")          \
    X(SWAP_USED_BYTES, "swap.used")            \
    X(LOAD1, "load.1m")                        \
    X(LOAD5, "load.5m")                        \
    X(LOAD15, "load.15m")                      \
    X(UPTIME_S, "uptime")

typedef enum gm_host_metric {
#define GM__HMETRIC_ENUM(id, name) GM_H_##id,
    GM_HOST_METRIC_MAP(GM__HMETRIC_ENUM)
#undef GM__HMETRIC_ENUM
        GM_H__COUNT
} gm_host_metric;

/* One-direction PCIe bandwidth in GB/s for a link generation and lane count (per-lane payload
 * rates after line encoding: gen1 0.25, gen2 0.5, gen3 0.985, gen4 1.969, gen5 3.938, gen6 7.563,
 * gen7 15.125), rounded to the MB/s; -1 when the generation is unknown or width is 0. */
double gm_pcie_gbps(unsigned gen, unsigned width);

/* Returns the canonical name of a host metric ("cpu.utilization"), NULL when out of range. */
const char *gm_host_metric_name(gm_host_metric id);

/* The clock event reasons of GM_M_THROTTLE_REASONS (NVML's nvmlClocksEventReason* bits 0..8). */
#define GM_CLOCK_REASON_COUNT 9
/* Returns gpumon's word for the reason at bit position bit ("sw_power_cap"), as JSON, /metrics
 * and benchmark reports name it; NULL past the last. */
const char *gm_clock_reason_name(unsigned bit);

/* ---- samples ----------------------------------------------------------------------------- */

/* One GPU at one instant. A metric is present only when its bit in `valid` is set; values of
 * absent metrics are meaningless and must never be shown as zero. */
#define GM_M_WORDS         ((GM_M__COUNT + 63) / 64) /* words of gm_gpu.valid */
#define GM_SERIAL_LEN      32
#define GM_INFOROM_LEN     16 /* NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE */
#define GM_FABRIC_UUID_LEN 40
#define GM_PART_LEN        80 /* NVML_DEVICE_PART_NUMBER_BUFFER_SIZE */

/* The infoROM versions nvidia-smi shows (inforom.img, .oem, .ecc, .pwr): gm_gpu.inforom rows. */
enum gm_inforom {
    GM_INFOROM_IMG,
    GM_INFOROM_OEM,
    GM_INFOROM_ECC,
    GM_INFOROM_PWR,
    GM_INFOROM__COUNT
};

/* A container in Kubernetes, by the names the kubelet gives: all empty when unknown. */
typedef struct gm_k8s_ref {
    char pod[GM_K8S_POD_LEN];
    char pod_namespace[GM_K8S_NAME_LEN];
    char container[GM_K8S_NAME_LEN];
} gm_k8s_ref;

/* MIG devices a GPU in MIG mode is split into (NVML makes at most 7 on A100/H100/H200). */
#define GM_MAX_MIG         8
#define GM_MIG_UUID_LEN    64 /* "MIG-" and a UUID; R450's "MIG-GPU-<uuid>/<gi>/<ci>" fits too */
#define GM_MIG_PROFILE_LEN 24

/* What GPM measures per MIG device (gm_mig_device.prof_pct). */
enum gm_mig_prof {
    GM_MIG_PROF_SM_ACTIVE, /* SM activity, as DCGM_FI_PROF_SM_ACTIVE */
    GM_MIG_PROF_DRAM,      /* DRAM bandwidth used, as DCGM_FI_PROF_DRAM_ACTIVE */
    GM_MIG_PROF_TENSOR,    /* tensor pipes active, as DCGM_FI_PROF_PIPE_TENSOR_ACTIVE */
    GM_MIG_PROF__COUNT
};

/* One MIG device: a compute instance of a GPU instance, a unit CUDA sees by its own UUID. */
typedef struct gm_mig_device {
    char uuid[GM_MIG_UUID_LEN];
    char profile[GM_MIG_PROFILE_LEN]; /* "1g.10gb", "1c.3g.40gb"; empty when unknown */
    unsigned gpu_instance_id, compute_instance_id;
    bool mem_valid; /* the memory below was read */
    uint64_t mem_total_bytes, mem_used_bytes, mem_free_bytes;
    /* GPM activity of this instance over the last sampling interval, in %: bit k of prof_valid
     * says prof_pct[k] (gm_mig_prof k) was given (never on the first pass, nor where the driver
     * gives no GPM per GPU instance). */
    uint8_t prof_valid;
    double prof_pct[GM_MIG_PROF__COUNT];
} gm_mig_device;

typedef struct gm_gpu {
    unsigned index; /* the driver's enumeration index, as nvidia-smi -i uses it */
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
    char pci_bus_id[GM_BUSID_LEN];
    char serial[GM_SERIAL_LEN]; /* board serial number, empty when unknown */
    char vbios[GM_SERIAL_LEN];  /* VBIOS version, empty when unknown */
    /* infoROM image and object versions ("G520.0200.00.05", "2.1"), each empty when unknown */
    char inforom[GM_INFOROM__COUNT][GM_INFOROM_LEN];
    /* NVLink fabric (GPUs registered with a fabric manager), each empty when unknown: the
     * cluster's UUID ("8-4-4-4-12" hex) and the registration's status as NVML words it
     * ("Success"), the latter only once registration has completed. */
    char fabric_cluster_uuid[GM_FABRIC_UUID_LEN];
    char fabric_status[GM_SERIAL_LEN];
    /* nvmlDeviceGetPlatformInfo's chassis serial number (may be empty while the platform was
     * read: GM_M_PLATFORM_SLOT says whether it was) and the GPU's fabric GUID ("0x%016X"). */
    char platform_serial[GM_SERIAL_LEN];
    char platform_guid[GM_SERIAL_LEN];
    /* Read once with the identity, each empty when unknown: the board part number, the GSP
     * firmware version and the PDI (nvmlDeviceGetPdi's 64-bit id, "0x%016llx"). */
    char board_part_number[GM_PART_LEN];
    char gsp_firmware_version[GM_SERIAL_LEN];
    char pdi[GM_SERIAL_LEN];
    bool lost; /* fell off the bus (NVML GPU_IS_LOST); no metric is valid */
    /* Who made the GPU ("NVIDIA", "AMD", ...; empty when unknown) and which provider read it. */
    char vendor[16];
    char provider[16];
    /* Kubernetes (the kubelet's pod-resources API, when the collector reads it): k8s_known says
     * it was read; k8s_containers is how many containers hold this GPU or a part of it (a MIG
     * device, a time-slicing replica); k8s names the container when exactly one does. */
    bool k8s_known;
    unsigned k8s_containers;
    gm_k8s_ref k8s;
    uint64_t valid[GM_M_WORDS]; /* bit m % 64 of word m / 64 per gm_metric m */
    double v[GM_M__COUNT];
    /* MIG devices in mig: 0 outside MIG mode, and when the caller's metric set leaves out
     * mig.mode.current (they are read with it). */
    unsigned mig_count;
    gm_mig_device mig[GM_MAX_MIG];
} gm_gpu;

static inline bool gm_gpu_has(const gm_gpu *g, gm_metric m)
{
    return (g->valid[m / 64] >> (m % 64)) & 1u;
}

static inline void gm_gpu_set(gm_gpu *g, gm_metric m, double value)
{
    g->v[m] = value;
    g->valid[m / 64] |= UINT64_C(1) << (m % 64);
}

static inline void gm_gpu_unset(gm_gpu *g, gm_metric m)
{
    g->valid[m / 64] &= ~(UINT64_C(1) << (m % 64));
}

/* Marks every metric of g absent. */
static inline void gm_gpu_clear(gm_gpu *g)
{
    for (int w = 0; w < GM_M_WORDS; w++)
        g->valid[w] = 0;
}

/* An XID this recent (ms) makes its GPU degraded. */
#define GM_XID_FRESH_MS (10 * 60 * 1000)

/* True when GPU g needs attention at wall time now_ms (Unix ms): an XID error within
 * GM_XID_FRESH_MS, uncorrected ECC errors since the driver loaded, a failed row remapping. The
 * reasons, "; "-joined, go to why (cap bytes, may be NULL). A lost GPU is not "degraded" here:
 * lost is its own state. The daemon's /api/health, the JSON and the dashboard share this rule. */
bool gm_gpu_degraded(const gm_gpu *g, int64_t now_ms, char *why, size_t cap);

enum gm_proc_type { GM_PROC_COMPUTE = 1, GM_PROC_GRAPHICS = 2 };

/* The engines a process's utilisation is given for (gm_process.util_pct). */
enum gm_proc_util {
    GM_PROC_UTIL_SM,
    GM_PROC_UTIL_MEM,
    GM_PROC_UTIL_ENC,
    GM_PROC_UTIL_DEC,
    GM_PROC_UTIL__COUNT
};

/* A process using a GPU. */
typedef struct gm_process {
    unsigned gpu_index;
    uint32_t pid;
    unsigned type;  /* gm_proc_type bits */
    bool mem_valid; /* the driver may withhold per-process memory (e.g. no permission) */
    uint64_t used_mem_bytes;
    char user[GM_USER_LEN];   /* empty when /proc did not tell (other PID namespace) */
    char command[GM_CMD_LEN]; /* empty when /proc did not tell */
    /* From <procfs>/<pid>/cgroup: the pod's UID (empty outside a Kubernetes pod) and the
     * container's ID (empty outside a container the collector recognises). */
    char pod_uid[GM_POD_UID_LEN];
    char container_id[GM_CONTAINER_ID_LEN];
    /* The pod's and container's names, only when the kubelet's allocations tie this process's
     * pod UID and container ID to them without doubt (see docs/FLEET.md); never guessed. */
    gm_k8s_ref k8s;
    /* On a GPU in MIG mode, the GPU and compute instance the driver placed it in. */
    bool instance_known;
    unsigned gpu_instance_id, compute_instance_id;
    /* Its share of each engine over the driver's last sample period, in %: bit k of util_valid
     * says util_pct[k] (gm_proc_util k) was given; NVML gives none for a process that did not
     * run in the period, nor on GPUs that lack the call (MIG mode, older boards). */
    uint8_t util_valid;
    uint8_t util_pct[GM_PROC_UTIL__COUNT];
} gm_process;

/* The MIG device of g that process p runs in, NULL when unknown or g is not in MIG mode. */
const gm_mig_device *gm_gpu_process_mig(const gm_gpu *g, const gm_process *p);

/* The host at one instant. */
typedef struct gm_host {
    uint64_t valid; /* bit (1 << gm_host_metric) */
    double v[GM_H__COUNT];
    char hostname[GM_HOSTNAME_LEN];
    char kernel[128];
    char cpu_model[128];
    unsigned core_count; /* entries in core_util_pct (0 until two readings) */
    float core_util_pct[GM_MAX_CPUS];
} gm_host;

static inline bool gm_host_has(const gm_host *h, gm_host_metric m)
{
    return (h->valid >> m) & 1u;
}

static inline void gm_host_set(gm_host *h, gm_host_metric m, double value)
{
    h->v[m] = value;
    h->valid |= UINT64_C(1) << m;
}

/* Everything read in one sampling pass. */
typedef struct gm_snapshot {
    uint64_t seq;    /* increases by one per sample taken by a collector */
    int64_t time_ms; /* wall clock, milliseconds since the Unix epoch */
    int64_t mono_ms; /* CLOCK_MONOTONIC, milliseconds */
    /* "nvml", "nvidia-smi", "amdgpu", "amdsmi", "nvtop", "sim" or "none"; several providers
     * at once are joined by '+' ("nvml+amdgpu"). */
    char provider[32];
    char driver_version[GM_VERSION_LEN];
    char cuda_version[GM_VERSION_LEN]; /* "12.4", empty when unknown */
    char nvml_version[GM_VERSION_LEN];
    unsigned gpu_count;
    gm_gpu gpus[GM_MAX_GPUS];
    size_t proc_count;   /* entries in procs */
    size_t proc_dropped; /* processes seen but not stored (over GM_MAX_PROCS) */
    gm_process *procs;   /* owned, GM_MAX_PROCS entries allocated */
    bool host_valid;
    gm_host host;
} gm_snapshot;

/* Returns a zeroed snapshot with room for GM_MAX_PROCS processes, NULL when out of memory. */
gm_snapshot *gm_snapshot_new(void);
void gm_snapshot_free(gm_snapshot *s);
/* Empties s for reuse (keeps its allocation). */
void gm_snapshot_reset(gm_snapshot *s);
/* Deep copy of src into dst (both from gm_snapshot_new). */
void gm_snapshot_copy(gm_snapshot *dst, const gm_snapshot *src);
/* Appends a process; returns false (and counts it as dropped) when full. */
bool gm_snapshot_add_process(gm_snapshot *s, const gm_process *p);
/* Returns the GPU with driver index `index`, or NULL. */
const gm_gpu *gm_snapshot_gpu(const gm_snapshot *s, unsigned index);

/* ---- collector --------------------------------------------------------------------------- */

/* A set of GPU metrics: what a caller of the collector needs. */
typedef struct gm_metric_set {
    uint64_t bits[GM_M_WORDS]; /* bit m % 64 of word m / 64 per gm_metric m */
    bool board_strings;        /* also the board's serial number, VBIOS and infoROM versions */
} gm_metric_set;

static inline void gm_metric_set_add(gm_metric_set *s, gm_metric m)
{
    if ((unsigned)m < GM_M__COUNT)
        s->bits[m / 64] |= UINT64_C(1) << (m % 64);
}

static inline bool gm_metric_set_has(const gm_metric_set *s, gm_metric m)
{
    return (unsigned)m < GM_M__COUNT && ((s->bits[m / 64] >> (m % 64)) & 1u);
}

/* How to find GPUs. Zero-initialised means: auto provider, real paths, host metrics on. */
typedef struct gm_collector_options {
    const char *provider; /* "nvml", "nvidia-smi", "sim", NULL/"auto": try nvml then nvidia-smi */
    unsigned simulate;    /* > 0 selects the sim provider with this many GPUs (max GM_MAX_GPUS) */
    uint64_t seed;        /* sim: seed of the deterministic dynamics */
    /* sim: mixed into where the dynamics start (the models and UUIDs follow seed alone); 0 =
     * nothing. One-shot commands pass the clock, so that two readings are not the same one. */
    uint64_t sim_vary;
    /* sim: NULL, the simulated GPUs run a workload of their own (phases of idle, training and
     * inference, with their processes); else whoever drives them (gpumon bench) says, read at
     * each sample: *sim_load < 0 no server on them yet (empty, idle), 0 a server that idles,
     * 0..1 the server loaded that much. */
    const double *sim_load;
    const char
        *nvml_lib; /* path of libnvidia-ml.so.1; NULL: $GPU_MONITOR_NVML_LIB or the default */
    const char *smi_path;    /* nvidia-smi program; NULL: "nvidia-smi" on PATH */
    int smi_timeout_ms;      /* 0: 5000 */
    const char *procfs_root; /* NULL: "/proc" */
    bool no_host;            /* skip host metrics */
    bool no_processes;       /* skip GPU process enumeration */
    /* The first sample normally waits until 100 ms have passed since open, so that it can report
     * CPU utilisation (a difference of two /proc/stat readings). A daemon, which samples again
     * soon, sets this to answer at once and report CPU utilisation from its second sample on. */
    bool no_first_cpu_wait;
    /* The first sample's CPU window in ms when it waits: 0 = 100. A one-shot reading for a person
     * takes a shorter one (CPU % is then coarser: /proc/stat counts 10 ms ticks). */
    int first_cpu_window_ms;
    /* The name the snapshot gives this host (host.hostname) instead of its own; NULL: its own. */
    const char *hostname;
    /* Costly counters (NVML energy, PCIe throughput) are read at most this often and their last
     * reading is reported in between: 0 = the default, 10000 ms; < 0 = every sample (exact
     * energy for short recordings). Values fixed by the hardware (max clocks, max PCIe link)
     * are read once a minute whatever this says. */
    int slow_period_ms;
    /* Watch for XID errors (NVML only): a thread of the collector waits on an NVML event set and
     * the samples carry xid.last / xid.count / xid.last_time. For long-lived collectors (the
     * daemon); closing takes up to a quarter of a second more. */
    bool watch_xid;
    /* Kubernetes: the kubelet's pod-resources socket, asked which container holds which GPU by
     * a thread of the collector every pod_resources_period_ms (0: 10000), and sooner when a
     * process of a new pod appears. NULL: not asked (processes still get their pod UID and
     * container ID from their cgroup). */
    const char *pod_resources_socket;
    int pod_resources_period_ms;
    /* The metrics the caller will use; NULL: every one. The GPU's identity (index, name, UUID,
     * PCI bus id) is always read; a metric outside the set is left absent and its driver calls
     * are not made (a one-shot query of a few fields then costs a few calls). The set is copied
     * at open. */
    const gm_metric_set *want;
    /* Auto provider: only providers of this vendor ("NVIDIA", "AMD"); NULL: the best of every
     * vendor at once. gpumon smi, NVIDIA-only as nvidia-smi is, asks for "NVIDIA". */
    const char *vendor;
} gm_collector_options;

typedef struct gm_collector gm_collector;

/* Opens the collector. With an auto provider and no working GPU source this still succeeds with
 * provider "none" (host metrics only) and gm_collector_diagnosis() says what was tried and why
 * each failed. A forced provider that fails returns its error. */
int gm_collector_open(const gm_collector_options *opt, gm_collector **out, gm_error *err);
void gm_collector_close(gm_collector *c);

/* Name of the provider in use: "nvml", "nvidia-smi", "sim" or "none". */
const char *gm_collector_provider(const gm_collector *c);
/* One line per provider tried and why it was not used; "" when the first one worked. */
const char *gm_collector_diagnosis(const gm_collector *c);
/* Takes one sample into out (reset first). A GPU that fails alone is marked lost and the
 * others are still read; an error is returned only when nothing could be read. */
int gm_collector_sample(gm_collector *c, gm_snapshot *out, gm_error *err);

/* Where the collector's time goes: one entry per call it makes below itself, named by what is
 * called (the NVML function, "nvmlDeviceGetFieldValues[every]" per field batch, "/proc/stat"
 * and the other host reads, "nvidia-smi" per run), with how often it ran since open and the
 * wall and CPU time (CLOCK_THREAD_CPUTIME_ID of the calling thread) it took in total. CPU time
 * is read on every call of the first 10 passes and of one pass in 10 after; the calls between
 * are booked at their mean so far. */
typedef struct gm_call_stat {
    const char *name; /* static: valid as long as the process runs */
    uint64_t count;
    double wall_s, cpu_s;
} gm_call_stat;

/* Copies up to cap entries (in the order the calls were first made) into out; returns how many
 * there are (more than cap: the rest were left out). Covers open and every sample so far. Like
 * the other calls on c, not to be made while another thread samples c. */
size_t gm_collector_call_stats(const gm_collector *c, gm_call_stat *out, size_t cap);

/* Where the collector stands with the kubelet's pod-resources API. */
typedef enum gm_k8s_state {
    GM_K8S_OFF = 0,   /* not asked (no socket configured) */
    GM_K8S_STARTING,  /* the first call has not ended yet */
    GM_K8S_NO_SOCKET, /* nothing listens at the path (not a Kubernetes node, or not mounted) */
    GM_K8S_OK,        /* the last call answered */
    GM_K8S_FAILED,    /* the last call failed; message says why */
} gm_k8s_state;

typedef struct gm_k8s_status {
    gm_k8s_state state;
    uint64_t changes; /* counts changes of state or message: a log writes one line per change */
    char socket[256];
    char message[300];  /* why it failed, "" otherwise */
    size_t pods;        /* pods in the last answer */
    size_t gpu_devices; /* GPU devices allocated in it */
} gm_k8s_status;

/* The pod-resources state of c (state GM_K8S_OFF when it does not ask). */
void gm_collector_k8s_status(gm_collector *c, gm_k8s_status *out);

/* PCIe peer-to-peer capability between two GPUs, as NVML reports it. */
typedef enum gm_p2p_cap {
    GM_P2P_READ,
    GM_P2P_WRITE,
    GM_P2P_NVLINK,
    GM_P2P_ATOMICS,
    GM_P2P_PCI,
    GM_P2P__COUNT
} gm_p2p_cap;

typedef enum gm_p2p_status {
    GM_P2P_OK = 0,
    GM_P2P_CHIPSET_NOT_SUPPORTED = 1,
    GM_P2P_GPU_NOT_SUPPORTED = 2,
    GM_P2P_IOH_TOPOLOGY_NOT_SUPPORTED = 3,
    GM_P2P_DISABLED_BY_REGKEY = 4,
    GM_P2P_NOT_SUPPORTED = 5,
    GM_P2P_UNKNOWN = 6
} gm_p2p_status;

/* Reads the P2P status between GPUs a and b for one capability. GM_ENOTSUP when the provider
 * cannot tell (nvidia-smi, none). */
int gm_collector_p2p(gm_collector *c, unsigned a, unsigned b, gm_p2p_cap cap, gm_p2p_status *out,
                     gm_error *err);
/* Retired memory pages of the GPU with driver index `index` for one cause (0: multiple
 * single-bit ECC errors, 1: a double-bit error): up to cap page addresses into addr and their
 * retirement times (Unix seconds; 0 when the driver does not tell) into when, *n the number the
 * GPU has (may exceed cap). GM_ENOTSUP when the provider or the GPU cannot tell. */
int gm_collector_retired_pages(gm_collector *c, unsigned index, int cause, uint64_t *addr,
                               uint64_t *when, size_t cap, size_t *n, gm_error *err);

/* Clocks the GPU with driver index `index` supports (nvidia-smi's supported_clocks), highest
 * first: with mem_mhz 0 its memory clocks, else the graphics clocks at memory clock mem_mhz; up
 * to cap into mhz, *n how many there are (may exceed cap). Fixed by the board: read on demand,
 * never per sample. GM_ENOTSUP when the provider or the GPU cannot tell. */
int gm_collector_supported_clocks(gm_collector *c, unsigned index, unsigned mem_mhz, unsigned *mhz,
                                  size_t cap, size_t *n, gm_error *err);

/* Short code as `nvidia-smi topo -p2p` prints it: "OK", "CNS", "GNS", "TNS", "DR", "NS", "U". */
const char *gm_p2p_status_code(gm_p2p_status s);

/* The P2P matrix of all GPUs (static for a boot: read once, not per sample). */
typedef struct gm_topology {
    bool known;         /* false when the provider cannot tell (then p2p is meaningless) */
    unsigned gpu_count; /* rows and columns used, in snapshot GPU order */
    uint8_t p2p[GM_MAX_GPUS][GM_MAX_GPUS][GM_P2P__COUNT]; /* gm_p2p_status; diagonal unused */
} gm_topology;

/* Fills out for the GPUs the provider enumerates. Succeeds with known = false when the
 * provider has no P2P query (nvidia-smi, none). */
int gm_collector_topology(gm_collector *c, gm_topology *out, gm_error *err);

#ifdef __cplusplus
}
#endif
#endif
