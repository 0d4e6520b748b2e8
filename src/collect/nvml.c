/* nvml.c - the NVML provider: libnvidia-ml.so.1 loaded with dlopen, its versioned entry points
 * resolved newest first, every metric read into the sample model with absent meaning unsupported.
 */
#include "provider.h"
#include "base/clock.h"
#include "base/str.h"
#include "collect/calltime.h"
#include "collect/nvml_int.h"
#include "base/error.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- NVML declarations: the rest (return codes, handle, process layouts) in nvml_int.h ---- */

#define NV_MEMORY_V2_VERSION 0x02000028u /* sizeof(nvmlMemory_v2_t) | 2 << 24 */
#define NV_PSTATE_MAX        15          /* NVML_PSTATE_UNKNOWN is 32 */
#define NV_SYS_STRING_LEN    80          /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */
/* What a device name or UUID is asked into: room for either. */
#define NV_ID_BUF_LEN (GM_NAME_LEN > GM_UUID_LEN ? GM_NAME_LEN : GM_UUID_LEN)

typedef struct {
    unsigned gpu, memory; /* percent */
} nv_utilization;

typedef struct {
    unsigned long long total, free, used; /* bytes; used includes reserved */
} nv_memory_v1;

typedef struct {
    unsigned version;
    unsigned long long total, reserved, free, used; /* bytes */
} nv_memory_v2;

typedef struct {
    char busIdLegacy[16]; /* also where the v1 call writes its (short) busId */
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nv_pci_info;

/* Entry points, each typed as nvml.h declares it and named after it (a _v2 or older revision
 * that resolves in its place has the same prototype). Enumerations are int-sized: enable
 * states, modes and counts are read as the unsigned they hold, selectors passed as int. */
typedef nvmlReturn_t (*nvmlInit_fn)(void); /* nvmlInit_v2, nvmlInit */
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned *);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned, nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByUUID_fn)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn)(nvmlDevice_t,
                                                                        nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetSerial_fn)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetVbiosVersion_fn)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetInforomImageVersion_fn)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetInforomVersion_fn)(nvmlDevice_t, int object, char *, unsigned);
typedef nvmlReturn_t (*nvmlDeviceGetBoardPartNumber_fn)(nvmlDevice_t, char *, unsigned);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char *, unsigned);
typedef nvmlReturn_t (*nvmlSystemGetNVMLVersion_fn)(char *, unsigned);
typedef nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_fn)(int *);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t, nv_pci_info *);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nv_utilization *);
typedef nvmlReturn_t (*nvmlDeviceGetEncoderUtilization_fn)(nvmlDevice_t, unsigned *pct,
                                                           unsigned *period_us);
typedef nvmlReturn_t (*nvmlDeviceGetDecoderUtilization_fn)(nvmlDevice_t, unsigned *pct,
                                                           unsigned *period_us);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nv_memory_v1 *);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_v2_fn)(nvmlDevice_t, nv_memory_v2 *);
typedef nvmlReturn_t (*nvmlDeviceGetP2PStatus_fn)(nvmlDevice_t, nvmlDevice_t, int, int *);
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t, unsigned,
                                                               nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceId_fn)(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t (*nvmlDeviceGetComputeInstanceId_fn)(nvmlDevice_t, unsigned *);

/* The getters of each metric table (below) share one prototype: the table's name. */
typedef nvmlReturn_t (*u32_metrics_fn)(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t (*arg_metrics_fn)(nvmlDevice_t, int, unsigned *);
typedef nvmlReturn_t (*u64_metrics_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*pair_metrics_fn)(nvmlDevice_t, unsigned *, unsigned *);
typedef nvmlReturn_t (*codec_metrics_fn)(nvmlDevice_t, unsigned *pct, unsigned *period_us);

/* Health getters. */
typedef nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability_fn)(nvmlDevice_t, int *major, int *minor);
typedef nvmlReturn_t (*nvmlDeviceGetEncoderStats_fn)(nvmlDevice_t, unsigned *sessions,
                                                     unsigned *fps, unsigned *latency_us);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t, unsigned *corr, unsigned *unc,
                                                     unsigned *pending, unsigned *failure);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, int type, int counter,
                                                       unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryErrorCounter_fn)(nvmlDevice_t, int type, int counter,
                                                           int location, unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_fn)(nvmlDevice_t, int cause, unsigned *,
                                                     unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_v2_fn)(nvmlDevice_t, int cause, unsigned *,
                                                        unsigned long long *, unsigned long long *);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus_fn)(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t, unsigned, unsigned *);
typedef nvmlReturn_t (*nvmlDeviceGetConfComputeProtectedMemoryUsage_fn)(nvmlDevice_t,
                                                                        nv_memory_v1 *);
typedef nvmlReturn_t (*nvmlDeviceGetBAR1MemoryInfo_fn)(nvmlDevice_t, nv_memory_v1 *);
typedef nvmlReturn_t (*nvmlDeviceGetHostVgpuMode_fn)(nvmlDevice_t, unsigned *);
/* nvmlUnrepairableMemoryStatus_v1_t: one unsigned, no version word. */
typedef nvmlReturn_t (*nvmlDeviceGetUnrepairableMemoryFlag_v1_fn)(nvmlDevice_t, unsigned *);
typedef nvmlReturn_t (*nvmlDeviceGetAutoBoostedClocksEnabled_fn)(nvmlDevice_t, unsigned *on,
                                                                 unsigned *default_on);

/* nvmlPciInfoExt_v1_t (driver 550 and newer): nvmlPciInfo_t's ids plus the class codes. */
typedef struct {
    unsigned version; /* sizeof | 1 << 24 (NVML_STRUCT_VERSION(PciInfoExt, 1)) */
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
    char busId[32];
} nv_pci_info_ext;
#define NV_PCI_INFO_EXT_V1 ((unsigned)(sizeof(nv_pci_info_ext) | 1u << 24))
typedef nvmlReturn_t (*nvmlDeviceGetPciInfoExt_fn)(nvmlDevice_t, nv_pci_info_ext *);

/* nvmlPlatformInfo_v2_t (44 bytes) and nvmlRemappedRowsInfo_v2_t (no version word). */
typedef struct {
    unsigned version;
    unsigned char ibGuid[16];
    unsigned char chassisSerialNumber[16];
    unsigned char slotNumber, trayIndex, hostId, peerType, moduleId;
} nv_platform_info;
#define NV_PLATFORM_INFO_V2 ((unsigned)(sizeof(nv_platform_info) | 2u << 24))
typedef nvmlReturn_t (*nvmlDeviceGetPlatformInfo_fn)(nvmlDevice_t, nv_platform_info *);
typedef struct {
    unsigned corrActive, corrInactive, uncActive, uncInactive, pending, failure;
} nv_remapped_v2;
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_v2_fn)(nvmlDevice_t, nv_remapped_v2 *);
typedef nvmlReturn_t (*nvmlDeviceValidateInforom_fn)(nvmlDevice_t);
typedef nvmlReturn_t (*nvmlDeviceGetSupportedMemoryClocks_fn)(nvmlDevice_t, unsigned *, unsigned *);
typedef nvmlReturn_t (*nvmlDeviceGetSupportedGraphicsClocks_fn)(nvmlDevice_t, unsigned, unsigned *,
                                                                unsigned *);

/* nvmlMarginTemperature_v1_t: degrees to the nearest slowdown threshold (nvidia-smi's T.Limit). */
typedef struct {
    unsigned version;
    int marginTemperature;
} nv_margin_temp;
#define NV_MARGIN_TEMP_V1 ((unsigned)(sizeof(nv_margin_temp) | 1u << 24))
typedef nvmlReturn_t (*nvmlDeviceGetMarginTemperature_fn)(nvmlDevice_t, nv_margin_temp *);

/* nvmlDeviceAddressingMode_v1_t: value NONE 0, HMM 1, ATS 2. */
typedef struct {
    unsigned version, value;
} nv_addressing_mode;
#define NV_ADDRESSING_MODE_V1 ((unsigned)(sizeof(nv_addressing_mode) | 1u << 24))
typedef nvmlReturn_t (*nvmlDeviceGetAddressingMode_fn)(nvmlDevice_t, nv_addressing_mode *);

/* nvmlC2cModeInfo_v1_t: no version word, despite the V of its getter. */
typedef struct {
    unsigned isC2cEnabled;
} nv_c2c_mode;
typedef nvmlReturn_t (*nvmlDeviceGetC2cModeInfoV_fn)(nvmlDevice_t, nv_c2c_mode *);

/* nvmlGpuFabricInfo_v3_t (v2 is its prefix without healthSummary: 36 bytes, v3 40) and the
 * unversioned nvmlGpuFabricInfo_t of drivers before 550. state: NVML_GPU_FABRIC_STATE_*
 * (0 not supported, 1 not started, 2 in progress, 3 completed); status an nvmlReturn_t, valid
 * once completed. */
#define NV_FABRIC_UUID_LEN 16
typedef struct {
    unsigned version;
    unsigned char clusterUuid[NV_FABRIC_UUID_LEN];
    int status;
    unsigned cliqueId;
    unsigned char state;
    unsigned healthMask;
    unsigned char healthSummary;
} nv_fabric_info;
#define NV_FABRIC_INFO_V3 ((unsigned)(sizeof(nv_fabric_info) | 3u << 24))
#define NV_FABRIC_INFO_V2 ((unsigned)(offsetof(nv_fabric_info, healthSummary) | 2u << 24))
typedef struct {
    unsigned char clusterUuid[NV_FABRIC_UUID_LEN];
    int status;
    unsigned cliqueId;
    unsigned char state;
} nv_fabric_info_v1;
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfoV_fn)(nvmlDevice_t, nv_fabric_info *);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_fn)(nvmlDevice_t, nv_fabric_info_v1 *);
#define NV_FABRIC_COMPLETED 3

/* nvmlEccSramErrorStatus_v1_t (104 bytes): SRAM error counters by kind and by unit. */
typedef struct {
    unsigned version;
    unsigned long long aggregateUncParity, aggregateUncSecDed, aggregateCor;
    unsigned long long volatileUncParity, volatileUncSecDed, volatileCor;
    unsigned long long aggregateUncBucketL2, aggregateUncBucketSm, aggregateUncBucketPcie,
        aggregateUncBucketMcu, aggregateUncBucketOther;
    unsigned bThresholdExceeded;
} nv_sram_status;
#define NV_SRAM_STATUS_V1 ((unsigned)(sizeof(nv_sram_status) | 1u << 24))
_Static_assert(sizeof(nv_sram_status) == 104, "nvmlEccSramErrorStatus_v1_t is 104 bytes");
_Static_assert(sizeof(nv_fabric_info) == 40 && offsetof(nv_fabric_info, healthSummary) == 36,
               "nvmlGpuFabricInfo_v3_t is 40 bytes, v2 36");
typedef nvmlReturn_t (*nvmlDeviceGetSramEccErrorStatus_fn)(nvmlDevice_t, nv_sram_status *);

/* nvmlRowRemapperHistogramValues_t: banks by how many spare rows they have left. */
typedef struct {
    unsigned max, high, partial, low, none;
} nv_remap_histogram;
typedef nvmlReturn_t (*nvmlDeviceGetRowRemapperHistogram_fn)(nvmlDevice_t, nv_remap_histogram *);

/* nvmlFieldValue_t (40 bytes): set fieldId and scopeId, read nvmlReturn, then the value in the
 * member valueType names. */
typedef struct {
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType; /* NVML_VALUE_TYPE_DOUBLE = 0, UNSIGNED_INT, UNSIGNED_LONG, UNSIGNED_LONG_LONG,
                    * SIGNED_LONG_LONG, SIGNED_INT, UNSIGNED_SHORT = 6 */
    int nvmlReturn;
    union {
        double d;
        unsigned ui;
        unsigned long ul;
        unsigned long long ull;
        long long sll;
        int si;
        unsigned short us;
    } value;
} nv_field_value;
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t, int, nv_field_value *);

/* Events (nvmlEventSet*): nvmlEventData_t, v2 layout (v1 lacks the instance ids and is a
 * prefix of it). */
typedef struct nv_event_set *nvmlEventSet_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
} nv_event_data;
#define NV_EVENT_XID 0x8ULL /* nvmlEventTypeXidCriticalError */
typedef nvmlReturn_t (*nvmlEventSetCreate_fn)(nvmlEventSet_t *);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_fn)(nvmlDevice_t, unsigned long long,
                                                    nvmlEventSet_t);
typedef nvmlReturn_t (*nvmlEventSetWait_fn)(nvmlEventSet_t, nv_event_data *, unsigned);
typedef nvmlReturn_t (*nvmlEventSetFree_fn)(nvmlEventSet_t);

/* GPM (Hopper and newer): two samples and the metrics between them. */
typedef struct nv_gpm_sample *nvmlGpmSample_t;
typedef struct {
    unsigned version, isSupportedDevice;
} nv_gpm_support;
typedef struct {
    unsigned metricId;
    int nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} nv_gpm_metric;
#define NV_GPM_METRIC_MAX 333 /* NVML_GPM_METRIC_MAX of API 13; older headers had fewer */
typedef struct {
    unsigned version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nv_gpm_metric metrics[NV_GPM_METRIC_MAX];
} nv_gpm_metrics_get;
typedef nvmlReturn_t (*nvmlGpmSampleAlloc_fn)(nvmlGpmSample_t *);
typedef nvmlReturn_t (*nvmlGpmSampleFree_fn)(nvmlGpmSample_t);
typedef nvmlReturn_t (*nvmlGpmSampleGet_fn)(nvmlDevice_t, nvmlGpmSample_t);
typedef nvmlReturn_t (*nvmlGpmQueryDeviceSupport_fn)(nvmlDevice_t, nv_gpm_support *);
typedef nvmlReturn_t (*nvmlGpmMetricsGet_fn)(nv_gpm_metrics_get *);
typedef nvmlReturn_t (*nvmlGpmMigSampleGet_fn)(nvmlDevice_t, unsigned, nvmlGpmSample_t);
/* One GPU instance's two GPM samples, alternating like nv_gpu's own. */
typedef struct nv_mig_gpm {
    unsigned gi;
    nvmlGpmSample_t s[2];
    int cur;   /* the sample the next pass fills */
    bool prev; /* the other one holds the previous pass's sample */
} nv_mig_gpm;

/* What nvidia-smi -q prints besides (read_smi_extra). Versioned structs carry
 * sizeof | version << 24 in their first word. */
typedef struct {
    unsigned version;
    unsigned long long value;
} nv_pdi; /* nvmlPdi_v1_t */
#define NV_PDI_V1 ((unsigned)(sizeof(nv_pdi) | 1u << 24))
typedef nvmlReturn_t (*nvmlDeviceGetPdi_fn)(nvmlDevice_t, nv_pdi *);
typedef nvmlReturn_t (*nvmlDeviceGetGspFirmwareVersion_fn)(
    nvmlDevice_t, char *); /* NVML_GSP_FIRMWARE_VERSION_BUF_SIZE */
#define NV_GSP_VERSION_LEN 64
typedef nvmlReturn_t (*nvmlDeviceGetLastBBXFlushTime_fn)(nvmlDevice_t, unsigned long long *,
                                                         unsigned long *);
typedef struct {
    unsigned version, mode;
} nv_versioned_u32; /* nvmlVgpuHeterogeneousMode_v1_t, nvmlDramEncryptionInfo_v1_t,
                     * nvmlDeviceCapabilities_v1_t: a version word and one value */
#define NV_VERSIONED_U32_V1 ((unsigned)(sizeof(nv_versioned_u32) | 1u << 24))
typedef nvmlReturn_t (*nvmlDeviceGetVgpuHeterogeneousMode_fn)(nvmlDevice_t, nv_versioned_u32 *);
typedef nvmlReturn_t (*nvmlDeviceGetCapabilities_fn)(nvmlDevice_t, nv_versioned_u32 *);
typedef nvmlReturn_t (*nvmlDeviceGetDramEncryptionMode_fn)(nvmlDevice_t, nv_versioned_u32 *,
                                                           nv_versioned_u32 *);
#define NV_MAX_BRIDGES 128 /* NVML_MAX_PHYSICAL_BRIDGE */
typedef struct {
    unsigned char bridgeCount;
    struct {
        int type; /* nvmlBridgeChipType_t: PLX 0, BRO4 1 */
        unsigned fwVersion;
    } bridgeChipInfo[NV_MAX_BRIDGES];
} nv_bridge_hierarchy;
typedef nvmlReturn_t (*nvmlDeviceGetBridgeChipInfo_fn)(nvmlDevice_t, nv_bridge_hierarchy *);
typedef struct {
    unsigned version, bChannelRepairPending, bTpcRepairPending;
} nv_repair_status; /* nvmlRepairStatus_v1_t */
#define NV_REPAIR_STATUS_V1 ((unsigned)(sizeof(nv_repair_status) | 1u << 24))
typedef nvmlReturn_t (*nvmlDeviceGetRepairStatus_fn)(nvmlDevice_t, nv_repair_status *);
typedef struct {
    unsigned version;
    unsigned perfProfilesMask[8], requestedProfilesMask[8], enforcedProfilesMask[8]; /* 255 bits */
} nv_power_profiles; /* nvmlWorkloadPowerProfileCurrentProfiles_v1_t */
#define NV_POWER_PROFILES_V1 ((unsigned)(sizeof(nv_power_profiles) | 1u << 24))
typedef nvmlReturn_t (*nvmlDeviceWorkloadPowerProfileGetCurrentProfiles_fn)(nvmlDevice_t,
                                                                            nv_power_profiles *);
typedef struct {
    unsigned sessionsCount, averageFPS, averageLatency; /* latency in us */
} nv_fbc_stats;                                         /* nvmlFBCStats_t */
typedef nvmlReturn_t (*nvmlDeviceGetFBCStats_fn)(nvmlDevice_t, nv_fbc_stats *);
_Static_assert(sizeof(nv_pdi) == 16 && sizeof(nv_bridge_hierarchy) == 1028 &&
                   sizeof(nv_power_profiles) == 100,
               "nvmlPdi_v1_t 16 bytes, nvmlBridgeChipHierarchy_t 1028, current profiles 100");

/* ---- metric tables: one row per simple getter, so reading is one loop per signature ---------- */

/* How often a getter is called. Measured on an H200 with driver 580 (scripts/nvml-call-cost.py):
 * most getters cost 0.01-0.3 ms, but GetMaxClockInfo 1.6 ms of CPU per call,
 * GetTotalEnergyConsumption 4.2 ms of CPU, and GetPcieThroughput blocks 21 ms (it counts bytes
 * over a 20 ms window). Read every sample, those alone made an idle daemon cost 1% of a core per
 * GPU. Values that cannot change are read once in a while; costly counters at the slow period,
 * serving the last reading in between. */
enum nv_cadence {
    NV_EVERY,  /* each sample */
    NV_STATIC, /* fixed by the hardware: every NV_STATIC_MS */
    NV_SLOW,   /* costly: every slow period (gm_collector_options.slow_period_ms) */
};

/* Getters of one unsigned (enums included: they are int-sized). max: values above it mean
 * "unknown" and stay absent (0 = no bound). */
static const struct {
    const char *sym;
    gm_metric m;
    unsigned max;
    enum nv_cadence cadence;
} u32_metrics[] = {
    {"nvmlDeviceGetPowerUsage", GM_M_POWER_MW, 0, NV_EVERY},
    {"nvmlDeviceGetEnforcedPowerLimit", GM_M_POWER_LIMIT_MW, 0, NV_EVERY},
    {"nvmlDeviceGetFanSpeed", GM_M_FAN_PCT, 0, NV_EVERY},
    {"nvmlDeviceGetCurrPcieLinkGeneration", GM_M_PCIE_GEN_CUR, 0, NV_EVERY},
    {"nvmlDeviceGetMaxPcieLinkGeneration", GM_M_PCIE_GEN_MAX, 0, NV_STATIC},
    {"nvmlDeviceGetCurrPcieLinkWidth", GM_M_PCIE_WIDTH_CUR, 0, NV_EVERY},
    {"nvmlDeviceGetMaxPcieLinkWidth", GM_M_PCIE_WIDTH_MAX, 0, NV_STATIC},
    {"nvmlDeviceGetPerformanceState", GM_M_PSTATE, NV_PSTATE_MAX, NV_EVERY},
    /* Configuration an administrator may change: once a minute; the replay counter is a counter
     * of link trouble, read at the slow period. Costs of these are not yet measured on a GPU. */
    {"nvmlDeviceGetPersistenceMode", GM_M_PERSISTENCE_MODE, 1, NV_STATIC},
    {"nvmlDeviceGetPowerManagementLimit", GM_M_POWER_REQ_LIMIT_MW, 0, NV_STATIC},
    {"nvmlDeviceGetPowerManagementDefaultLimit", GM_M_POWER_DEFAULT_LIMIT_MW, 0, NV_STATIC},
    {"nvmlDeviceGetComputeMode", GM_M_COMPUTE_MODE, 3, NV_STATIC},
    {"nvmlDeviceGetGpuMaxPcieLinkGeneration", GM_M_PCIE_GEN_GPU_MAX, 0, NV_STATIC},
    {"nvmlDeviceGetPcieReplayCounter", GM_M_PCIE_REPLAY, 0, NV_SLOW},
    {"nvmlDeviceGetAccountingMode", GM_M_ACCOUNTING_MODE, 1, NV_STATIC},
    {"nvmlDeviceGetAccountingBufferSize", GM_M_ACCOUNTING_BUFFER, 0, NV_STATIC},
    /* nvmlEnableState_t: a monitor plugged in, a display initialised (nvidia-smi's
     * display_attached and display_active). */
    {"nvmlDeviceGetDisplayMode", GM_M_DISPLAY_ATTACHED, 1, NV_STATIC},
    {"nvmlDeviceGetDisplayActive", GM_M_DISPLAY_ACTIVE, 1, NV_STATIC},
    /* What nvidia-smi -q prints besides: power management (nvmlEnableState_t; 580 still prints
     * it), the board's identity (nvmlBrandType_t, nvmlDeviceArchitecture_t). */
    {"nvmlDeviceGetPowerManagementMode", GM_M_POWER_MGMT_MODE, 1, NV_STATIC},
    {"nvmlDeviceGetBoardId", GM_M_BOARD_ID, 0, NV_STATIC},
    {"nvmlDeviceGetMultiGpuBoard", GM_M_MULTI_GPU_BOARD, 1, NV_STATIC},
    {"nvmlDeviceGetBrand", GM_M_BRAND, 0, NV_STATIC},
    {"nvmlDeviceGetArchitecture", GM_M_ARCHITECTURE, 0, NV_STATIC},
    /* nvmlGpuVirtualizationMode_t: NONE 0, PASSTHROUGH 1, VGPU 2, HOST_VGPU 3, HOST_VSGA 4. */
    {"nvmlDeviceGetVirtualizationMode", GM_M_VIRT_MODE, 4, NV_STATIC},
};
#define NV_N_U32 (sizeof u32_metrics / sizeof *u32_metrics)

/* Getters taking a selector: sensor GPU=0; clock GRAPHICS=0, SM=1, MEM=2; PCIe TX=0, RX=1. */
static const struct {
    const char *sym;
    int arg;
    gm_metric m;
    enum nv_cadence cadence;
} arg_metrics[] = {
    {"nvmlDeviceGetTemperature", 0, GM_M_TEMP_C, NV_EVERY},
    {"nvmlDeviceGetClockInfo", 0, GM_M_CLOCK_GR_MHZ, NV_EVERY},
    {"nvmlDeviceGetClockInfo", 1, GM_M_CLOCK_SM_MHZ, NV_EVERY},
    {"nvmlDeviceGetClockInfo", 2, GM_M_CLOCK_MEM_MHZ, NV_EVERY},
    {"nvmlDeviceGetClockInfo", 3, GM_M_CLOCK_VIDEO_MHZ, NV_EVERY},
    {"nvmlDeviceGetMaxClockInfo", 0, GM_M_CLOCK_MAX_GR_MHZ, NV_STATIC},
    {"nvmlDeviceGetMaxClockInfo", 1, GM_M_CLOCK_MAX_SM_MHZ, NV_STATIC},
    {"nvmlDeviceGetMaxClockInfo", 2, GM_M_CLOCK_MAX_MEM_MHZ, NV_STATIC},
    {"nvmlDeviceGetPcieThroughput", 0, GM_M_PCIE_TX_KBPS, NV_SLOW},
    {"nvmlDeviceGetPcieThroughput", 1, GM_M_PCIE_RX_KBPS, NV_SLOW},
    /* Configuration an administrator may change (nvidia-smi -ac): once a minute. */
    {"nvmlDeviceGetApplicationsClock", 0, GM_M_CLOCK_APP_GR_MHZ, NV_STATIC},
    {"nvmlDeviceGetApplicationsClock", 2, GM_M_CLOCK_APP_MEM_MHZ, NV_STATIC},
    {"nvmlDeviceGetDefaultApplicationsClock", 0, GM_M_CLOCK_DEFAULT_APP_GR_MHZ, NV_STATIC},
    {"nvmlDeviceGetDefaultApplicationsClock", 2, GM_M_CLOCK_DEFAULT_APP_MEM_MHZ, NV_STATIC},
    {"nvmlDeviceGetMaxClockInfo", 3, GM_M_CLOCK_MAX_VIDEO_MHZ, NV_STATIC},
    /* nvmlTemperatureThresholds_t: SHUTDOWN 0, SLOWDOWN 1, MEM_MAX 2, GPU_MAX 3. */
    {"nvmlDeviceGetTemperatureThreshold", 0, GM_M_TEMP_SHUTDOWN_C, NV_STATIC},
    {"nvmlDeviceGetTemperatureThreshold", 1, GM_M_TEMP_SLOWDOWN_C, NV_STATIC},
    {"nvmlDeviceGetTemperatureThreshold", 2, GM_M_TEMP_MEM_MAX_C, NV_STATIC},
    {"nvmlDeviceGetTemperatureThreshold", 3, GM_M_TEMP_GPU_MAX_C, NV_STATIC},
    /* ACOUSTIC_MIN 4, ACOUSTIC_CURR 5 (the target temperature), ACOUSTIC_MAX 6. */
    {"nvmlDeviceGetTemperatureThreshold", 4, GM_M_TEMP_TARGET_MIN_C, NV_STATIC},
    {"nvmlDeviceGetTemperatureThreshold", 5, GM_M_TEMP_TARGET_C, NV_STATIC},
    {"nvmlDeviceGetTemperatureThreshold", 6, GM_M_TEMP_TARGET_MAX_C, NV_STATIC},
    {"nvmlDeviceGetMaxCustomerBoostClock", 0, GM_M_CLOCK_MAX_BOOST_GR_MHZ, NV_STATIC},
};
#define NV_N_ARG (sizeof arg_metrics / sizeof *arg_metrics)

/* Getters of one unsigned long long; each row lists its names newest first. */
static const struct {
    const char *sym[2];
    gm_metric m;
    enum nv_cadence cadence;
} u64_metrics[] = {
    {{"nvmlDeviceGetTotalEnergyConsumption", NULL}, GM_M_ENERGY_MJ, NV_SLOW},
    /* Renamed "event reasons" in driver 535; the throttle name remains as an alias. */
    {{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
     GM_M_THROTTLE_REASONS,
     NV_EVERY},
    {{"nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons"},
     GM_M_THROTTLE_SUPPORTED,
     NV_STATIC},
};
#define NV_N_U64 (sizeof u64_metrics / sizeof *u64_metrics)

/* Getters of two unsigneds (enable states come as 0/1; max bounds both, 0 = none). */
static const struct {
    const char *sym;
    gm_metric a, b;
    unsigned max;
    enum nv_cadence cadence;
} pair_metrics[] = {
    {"nvmlDeviceGetEccMode", GM_M_ECC_MODE_CUR, GM_M_ECC_MODE_PENDING, 1, NV_STATIC},
    {"nvmlDeviceGetMigMode", GM_M_MIG_MODE_CUR, GM_M_MIG_MODE_PENDING, 1, NV_STATIC},
    {"nvmlDeviceGetPowerManagementLimitConstraints", GM_M_POWER_MIN_LIMIT_MW,
     GM_M_POWER_MAX_LIMIT_MW, 0, NV_STATIC},
    /* (unsigned *isEnabled, unsigned *defaultMode): booleans */
    {"nvmlDeviceGetGspFirmwareMode", GM_M_GSP_MODE_CUR, GM_M_GSP_MODE_DEFAULT, 1, NV_STATIC},
};
#define NV_N_PAIR (sizeof pair_metrics / sizeof *pair_metrics)

/* Codec-like utilisations (value and sampling period). */
static const struct {
    const char *sym;
    gm_metric m;
} codec_metrics[] = {
    {"nvmlDeviceGetJpgUtilization", GM_M_UTIL_JPEG_PCT},
    {"nvmlDeviceGetOfaUtilization", GM_M_UTIL_OFA_PCT},
};
#define NV_N_CODEC (sizeof codec_metrics / sizeof *codec_metrics)

/* ECC counters: nvmlMemoryErrorType_t (0 corrected, 1 uncorrected), nvmlEccCounterType_t
 * (0 volatile, 1 aggregate), nvmlMemoryLocation_t (-1: the total, nvmlDeviceGetTotalEccErrors).
 * Counters: the slow period. */
static const struct {
    int type, counter, location;
    gm_metric m;
} ecc_metrics[] = {{0, 0, -1, GM_M_ECC_CORR_VOL},
                   {0, 1, -1, GM_M_ECC_CORR_AGG},
                   {1, 0, -1, GM_M_ECC_UNCORR_VOL},
                   {1, 1, -1, GM_M_ECC_UNCORR_AGG},
#define NV_ECC_LOC_ROWS(X, id, name, loc)                                     \
    {0, 0, loc, GM_M_ECC_CORR_VOL_##id}, {0, 1, loc, GM_M_ECC_CORR_AGG_##id}, \
        {1, 0, loc, GM_M_ECC_UNCORR_VOL_##id}, {1, 1, loc, GM_M_ECC_UNCORR_AGG_##id},
                   GM_ECC_LOCATION_MAP(NV_ECC_LOC_ROWS, _)
#undef NV_ECC_LOC_ROWS
};
#define NV_N_ECC (sizeof ecc_metrics / sizeof *ecc_metrics)

/* Field values (nvmlDeviceGetFieldValues), one batch per cadence. Ids from nvml.h NVML_FI_DEV_*;
 * scope UINT_MAX sums NVLink throughput over all links. */
static const struct {
    unsigned id, scope;
    gm_metric m;
    enum nv_cadence cadence;
} field_metrics[] = {
    {82, 0, GM_M_TEMP_MEM_C, NV_EVERY},        /* MEMORY_TEMP */
    {185, 0, GM_M_POWER_AVG_MW, NV_EVERY},     /* POWER_AVERAGE, mW over 1 s */
    {186, 0, GM_M_POWER_INSTANT_MW, NV_EVERY}, /* POWER_INSTANT, mW */
    /* Time below application clocks, ns: PERF_POLICY_POWER, _THERMAL, _SYNC_BOOST, and the
     * CLOCKS_EVENT_REASON_* counters nvidia-smi prints (drivers 550+). */
    {74, 0, GM_M_VIOL_POWER_NS, NV_SLOW},
    {75, 0, GM_M_VIOL_THERMAL_NS, NV_SLOW},
    {76, 0, GM_M_VIOL_SYNC_BOOST_NS, NV_SLOW},
    {269, 0, GM_M_VIOL_SW_THERMAL_NS, NV_SLOW},
    {270, 0, GM_M_VIOL_HW_THERMAL_NS, NV_SLOW},
    {271, 0, GM_M_VIOL_HW_POWER_BRAKE_NS, NV_SLOW},
    /* NVLink: data throughput counters (KiB) and error totals over all lanes. */
    {138, UINT_MAX, GM_M_NVLINK_TX_KIB, NV_SLOW},
    {139, UINT_MAX, GM_M_NVLINK_RX_KIB, NV_SLOW},
    {38, 0, GM_M_NVLINK_CRC_FLIT, NV_SLOW},
    {45, 0, GM_M_NVLINK_CRC_DATA, NV_SLOW},
    {52, 0, GM_M_NVLINK_REPLAY, NV_SLOW},
    {59, 0, GM_M_NVLINK_RECOVERY, NV_SLOW},
    /* GET_GPU_RECOVERY_ACTION (nvmlDeviceGpuRecoveryAction_t), a health signal; EDPP_MULTIPLIER,
     * percent, configuration. */
    {230, 0, GM_M_RECOVERY_ACTION, NV_SLOW},
    {274, 0, GM_M_EDPP_MULTIPLIER_PCT, NV_STATIC},
    /* TEMPERATURE_{SHUTDOWN,SLOWDOWN,MEM_MAX,GPU_MAX}_TLIMIT: thresholds as signed margins to
     * T.Limit (Ada and later), what nvidia-smi -q prints as "... T.Limit Temp". */
    {193, 0, GM_M_TEMP_SHUTDOWN_TLIMIT_C, NV_STATIC},
    {194, 0, GM_M_TEMP_SLOWDOWN_TLIMIT_C, NV_STATIC},
    {195, 0, GM_M_TEMP_MEM_MAX_TLIMIT_C, NV_STATIC},
    {196, 0, GM_M_TEMP_GPU_MAX_TLIMIT_C, NV_STATIC},
    {95, 0, GM_M_PCIE_REPLAY_ROLLOVER, NV_SLOW}, /* PCIE_REPLAY_ROLLOVER_COUNTER */
    /* What nvidia-smi -q prints besides. Power of the memory (scope 2) and of the whole module
     * (scope 1): POWER_AVERAGE, POWER_INSTANT at the slow period (only -q shows them), and the
     * module's limits (CURRENT, REQUESTED, DEFAULT, MIN, MAX), configuration. */
    {185, 2, GM_M_POWER_MEM_AVG_MW, NV_SLOW},
    {186, 2, GM_M_POWER_MEM_INSTANT_MW, NV_SLOW},
    {185, 1, GM_M_POWER_MODULE_AVG_MW, NV_SLOW},
    {186, 1, GM_M_POWER_MODULE_INSTANT_MW, NV_SLOW},
    {190, 1, GM_M_POWER_MODULE_LIMIT_MW, NV_STATIC},
    {192, 1, GM_M_POWER_MODULE_REQ_LIMIT_MW, NV_STATIC},
    {189, 1, GM_M_POWER_MODULE_DEFAULT_LIMIT_MW, NV_STATIC},
    {187, 1, GM_M_POWER_MODULE_MIN_LIMIT_MW, NV_STATIC},
    {188, 1, GM_M_POWER_MODULE_MAX_LIMIT_MW, NV_STATIC},
    /* PCIE_OUTBOUND/INBOUND_ATOMICS_MASK (fixed by the hardware), PWR_SMOOTHING_ENABLED. */
    {228, 0, GM_M_PCIE_ATOMICS_OUT, NV_STATIC},
    {229, 0, GM_M_PCIE_ATOMICS_IN, NV_STATIC},
    {251, 0, GM_M_POWER_SMOOTHING, NV_STATIC},
};
#define NV_N_FIELDS (sizeof field_metrics / sizeof *field_metrics)

/* GPM metrics (NVML_GPM_METRIC_*) and the factor to the metric's raw unit. */
static const struct {
    unsigned id;
    gm_metric m;
    double scale;
} gpm_metrics[] = {
    {1, GM_M_PROF_GR_ACTIVE_PCT, 1},
    {2, GM_M_PROF_SM_ACTIVE_PCT, 1},
    {3, GM_M_PROF_SM_OCCUPANCY_PCT, 1},
    {5, GM_M_PROF_TENSOR_PCT, 1},
    {10, GM_M_PROF_DRAM_PCT, 1},
    {11, GM_M_PROF_FP64_PCT, 1},
    {12, GM_M_PROF_FP32_PCT, 1},
    {13, GM_M_PROF_FP16_PCT, 1},
    {20, GM_M_PROF_PCIE_TX_BPS, (double)GM_BYTES_PER_MIB}, /* MiB/s */
    {21, GM_M_PROF_PCIE_RX_BPS, (double)GM_BYTES_PER_MIB},
    {61, GM_M_PROF_NVLINK_TX_BPS, (double)GM_BYTES_PER_MIB},
    {60, GM_M_PROF_NVLINK_RX_BPS, (double)GM_BYTES_PER_MIB},
};
#define NV_N_GPM (sizeof gpm_metrics / sizeof *gpm_metrics)

#define NV_NVLINK_MAX 36 /* NVML_NVLINK_MAX_LINKS */

static const char *const sym_init[] = {"nvmlInit_v2", "nvmlInit", NULL};
static const char *const sym_count[] = {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL};
static const char *const sym_handle[] = {"nvmlDeviceGetHandleByIndex_v2",
                                         "nvmlDeviceGetHandleByIndex", NULL};
static const char *const sym_pci[] = {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2",
                                      "nvmlDeviceGetPciInfo", NULL};
static const char *const sym_cuda[] = {"nvmlSystemGetCudaDriverVersion_v2",
                                       "nvmlSystemGetCudaDriverVersion", NULL};
static const char *const sym_procs[2][4] = {
    {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
     "nvmlDeviceGetComputeRunningProcesses", NULL},
    {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
     "nvmlDeviceGetGraphicsRunningProcesses", NULL},
};

#define NV_DEFAULT_LIB     "libnvidia-ml.so.1"
#define NV_REPROBE_MS      30000 /* a lost GPU is asked again at most this often */
#define NV_STATIC_MS       60000 /* NV_STATIC getters: read again this often, in case */
#define NV_SLOW_DEFAULT_MS 10000 /* NV_SLOW getters when the options leave it at 0 */

/* ---- state ----------------------------------------------------------------------------------- */

typedef struct nv_gpu {
    nvmlDevice_t dev; /* NULL while the handle could not be obtained */
    char name[GM_NAME_LEN];
    char uuid[GM_UUID_LEN];
    char bus_id[GM_BUSID_LEN];
    bool lost;       /* GPU_IS_LOST seen: not queried again until lost_ms + NV_REPROBE_MS */
    int64_t lost_ms; /* CLOCK_MONOTONIC */
    /* The metrics the collector's caller wants (nv_state.want), NULL: every one. A getter whose
     * metrics are all unwanted is not called. */
    const gm_metric_set *want;
    /* Last readings of the NV_STATIC and NV_SLOW getters, served between their reads. */
    bool cache_primed;
    int64_t static_ms, slow_ms; /* when each class was last read (CLOCK_MONOTONIC) */
    gm_gpu cache;               /* the readings served between reads (only valid and v used) */
    gm_metric_set nosup;        /* metrics the GPU answered NOT_SUPPORTED (read_due) */
    char serial[GM_SERIAL_LEN];
    char vbios[GM_SERIAL_LEN];
    unsigned pci_device_id, pci_subsys_id; /* 0 when unknown */
    bool pci_class_known;                  /* from nvmlDeviceGetPciInfoExt */
    unsigned pci_base_class, pci_sub_class;
    char inforom[GM_INFOROM__COUNT][GM_INFOROM_LEN]; /* image, OEM, ECC, power; "" unknown */
    char board_part[GM_PART_LEN];                    /* nvmlDeviceGetBoardPartNumber, "" unknown */
    char gsp_version[GM_SERIAL_LEN];                 /* nvmlDeviceGetGspFirmwareVersion */
    char pdi[GM_SERIAL_LEN];                         /* nvmlDeviceGetPdi, "0x%016llx" */
    /* The fabric strings of the last fabric reading ("" unknown), served with the metrics. */
    char fabric_uuid[GM_FABRIC_UUID_LEN];
    char fabric_status[GM_SERIAL_LEN];
    /* Platform and infoROM validation: read once (board_read), served from the cache. */
    bool board_read;
    char platform_serial[GM_SERIAL_LEN];
    char platform_guid[GM_SERIAL_LEN];
    /* GPM: 0 not asked yet, 1 supported (two samples allocated), -1 not supported. */
    int gpm_state;
    nvmlGpmSample_t gpm[2];
    int gpm_cur;   /* the sample the next pass fills */
    bool gpm_prev; /* the other one holds the previous pass's sample */
    /* XID, from the event set (events_drain). */
    bool xid_watched;
    unsigned long long xid_last, xid_count;
    int64_t xid_time_ms;
    nv_gpu_procs procs; /* its per-process utilisation (nvml_proc.c) */
    /* MIG devices as last enumerated (every NV_STATIC_MS while in MIG mode): their handles and
     * identity; memory is read per sample. */
    bool mig_listed;
    int64_t mig_ms;
    unsigned mig_count;
    nvmlDevice_t mig_dev[GM_MAX_MIG];
    gm_mig_device mig[GM_MAX_MIG];
    /* GPM per GPU instance (nvmlGpmMigSampleGet on this GPU with the instance's id): 0 not
     * asked yet, 1 supported, -1 not supported (not asked again). Slot k follows the k-th
     * distinct GPU instance id of the listing; its samples stay allocated until close. */
    int mig_gpm_state;
    unsigned mig_gpm_n;
    nv_mig_gpm mig_gpm[GM_MAX_MIG];
} nv_gpu;

typedef struct nv_state {
    void *lib;
    char path[256];

    nvmlShutdown_fn shutdown;
    nvmlErrorString_fn error_string;
    nvmlDeviceGetCount_fn count;
    const char *count_sym;
    nvmlDeviceGetHandleByIndex_fn handle;
    const char *handle_sym;
    nvmlDeviceGetName_fn name;
    nvmlDeviceGetUUID_fn uuid;
    nvmlDeviceGetPciInfo_fn pci;
    const char *pci_sym;
    bool pci_v1; /* the v1 call writes the short busId into the first 16 bytes */
    nvmlDeviceGetUtilizationRates_fn util;
    nvmlDeviceGetEncoderUtilization_fn enc;
    nvmlDeviceGetDecoderUtilization_fn dec;
    nvmlDeviceGetMemoryInfo_v2_fn mem2;
    nvmlDeviceGetMemoryInfo_fn mem1;
    u32_metrics_fn u32[NV_N_U32];
    arg_metrics_fn arg[NV_N_ARG];
    u64_metrics_fn u64[NV_N_U64];
    nvmlDeviceGetP2PStatus_fn p2p;
    /* A MIG device's GPU (Kubernetes allocates MIG devices by their own UUIDs). */
    nvmlDeviceGetHandleByUUID_fn handle_by_uuid;
    nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn mig_parent;
    /* MIG enumeration and per-process utilisation; each NULL when the library lacks it. */
    nvmlDeviceGetMaxMigDeviceCount_fn mig_max;
    nvmlDeviceGetMigDeviceHandleByIndex_fn mig_by_index;
    nvmlDeviceGetGpuInstanceId_fn gi_id;
    nvmlDeviceGetComputeInstanceId_fn ci_id;
    int64_t slow_period_ms; /* NV_SLOW getters: at most this often; 0 = every sample */
    bool want_some;         /* the caller named the metrics it wants: only those are read */
    gm_metric_set want;     /* those, with what reading them needs (nv_want_closure) */

    /* Health getters; each NULL when the library lacks it. */
    nvmlDeviceGetSerial_fn serial;
    nvmlDeviceGetVbiosVersion_fn vbios;
    nvmlDeviceGetPciInfoExt_fn pci_ext;
    nvmlDeviceGetInforomImageVersion_fn inforom_image;
    nvmlDeviceGetInforomVersion_fn inforom_version;
    nvmlDeviceGetMarginTemperature_fn margin_temp;
    pair_metrics_fn pair[NV_N_PAIR];
    codec_metrics_fn codec[NV_N_CODEC];
    nvmlDeviceGetCudaComputeCapability_fn compute_cap;
    nvmlDeviceGetEncoderStats_fn enc_stats;
    nvmlDeviceGetTotalEccErrors_fn ecc_total;
    nvmlDeviceGetMemoryErrorCounter_fn ecc_loc;
    nvmlDeviceGetRetiredPages_v2_fn retired_v2;
    nvmlDeviceGetRetiredPages_fn retired_v1;
    nvmlDeviceGetRetiredPagesPendingStatus_fn retired_pending;
    nvmlDeviceGetRemappedRows_fn remapped;
    nvmlDeviceGetRowRemapperHistogram_fn histogram;
    nvmlDeviceGetFieldValues_fn fields;
    nvmlDeviceGetNvLinkState_fn link_state;
    nvmlDeviceGetAddressingMode_fn addressing;
    nvmlDeviceGetC2cModeInfoV_fn c2c;
    nvmlDeviceGetGpuFabricInfoV_fn fabric;
    unsigned fabric_version; /* NV_FABRIC_INFO_V3, or V2 once the driver refused v3 */
    nvmlDeviceGetGpuFabricInfo_fn fabric_v1;
    nvmlDeviceGetConfComputeProtectedMemoryUsage_fn protected_mem;
    nvmlDeviceGetSramEccErrorStatus_fn sram;
    /* What nvidia-smi -q prints besides (read_board); each NULL when the library lacks it. */
    nvmlDeviceGetBAR1MemoryInfo_fn bar1;
    nvmlDeviceGetPlatformInfo_fn platform;
    nvmlDeviceValidateInforom_fn validate_inforom;
    nvmlDeviceGetRemappedRows_v2_fn remapped_v2;
    nvmlDeviceGetBoardPartNumber_fn board_part;
    nvmlDeviceGetGspFirmwareVersion_fn gsp_version;
    nvmlDeviceGetPdi_fn pdi;
    nvmlDeviceGetLastBBXFlushTime_fn bbx;
    nvmlDeviceGetHostVgpuMode_fn host_vgpu;
    nvmlDeviceGetVgpuHeterogeneousMode_fn vgpu_hetero;
    nvmlDeviceGetBridgeChipInfo_fn bridge;
    nvmlDeviceGetFBCStats_fn fbc;
    nvmlDeviceGetDramEncryptionMode_fn dram_enc;
    nvmlDeviceGetRepairStatus_fn repair;
    nvmlDeviceGetUnrepairableMemoryFlag_v1_fn unrepairable;
    nvmlDeviceWorkloadPowerProfileGetCurrentProfiles_fn power_profiles;
    nvmlDeviceGetAutoBoostedClocksEnabled_fn auto_boost;
    nvmlDeviceGetCapabilities_fn capabilities;
    nvmlDeviceGetSupportedMemoryClocks_fn mem_clocks;  /* nvmlDeviceGetSupportedMemoryClocks */
    nvmlDeviceGetSupportedGraphicsClocks_fn gr_clocks; /* nvmlDeviceGetSupportedGraphicsClocks */
    nvmlGpmSampleAlloc_fn gpm_alloc;
    nvmlGpmSampleFree_fn gpm_free;
    nvmlGpmSampleGet_fn gpm_get;
    nvmlGpmQueryDeviceSupport_fn gpm_support;
    nvmlGpmMetricsGet_fn gpm_metrics;
    nv_gpm_metrics_get *gpm_buf;        /* one request buffer (13 KB), reused */
    nvmlGpmMigSampleGet_fn gpm_mig_get; /* NULL: no GPM per MIG device */

    /* XID events: an event set drained by each sampling pass (only with watch_xid). */
    nvmlEventSetFree_fn evset_free;
    nvmlEventSetWait_fn evset_wait;
    const char *evset_wait_sym;
    int64_t evset_drained_ms; /* CLOCK_MONOTONIC of the last drain */
    nvmlEventSet_t evset;

    char driver_version[GM_VERSION_LEN];
    char nvml_version[GM_VERSION_LEN];
    char cuda_version[GM_VERSION_LEN];

    unsigned gpu_count;
    nv_gpu gpus[GM_MAX_GPUS];

    nv_proc_reader procs; /* the process getters and buffers (nvml_proc.c) */
} nv_state;

/* ---- helpers --------------------------------------------------------------------------------- */

/* Returns the first of names the library exports, and that name in *found. */
static void *resolve(void *lib, const char *const *names, const char **found)
{
    for (size_t i = 0; names[i]; i++) {
        void *p = dlsym(lib, names[i]);
        if (p) {
            if (found)
                *found = names[i];
            return p;
        }
    }
    return NULL;
}

static const char *nv_strerror(const nv_state *st, int rc)
{
    const char *s = st->error_string ? st->error_string(rc) : NULL;
    return s ? s : "NVML error";
}

/* The library error closest in meaning to an NVML return code. */
static int nv_to_gm(int rc)
{
    switch (rc) {
    case NV_SUCCESS:
        return GM_OK;
    case NV_ERROR_INVALID_ARGUMENT:
    case NV_ERROR_INSUFFICIENT_SIZE:
        return GM_EINVAL;
    case NV_ERROR_NOT_SUPPORTED:
    case NV_ERROR_VGPU_ECC_NOT_SUPPORTED:
    case NV_ERROR_FREQ_NOT_SUPPORTED:
    case NV_ERROR_ARGUMENT_VERSION_MISMATCH:
    case NV_ERROR_DEPRECATED:
        return GM_ENOTSUP;
    case NV_ERROR_NO_PERMISSION:
    case NV_ERROR_OPERATING_SYSTEM:
        return GM_EPERM;
    case NV_ERROR_UNINITIALIZED:
    case NV_ERROR_ALREADY_INITIALIZED:
    case NV_ERROR_RESET_REQUIRED:
    case NV_ERROR_INVALID_STATE:
        return GM_ESTATE;
    case NV_ERROR_NOT_FOUND:
    case NV_ERROR_NO_DATA:
        return GM_ENOENT;
    case NV_ERROR_DRIVER_NOT_LOADED:
    case NV_ERROR_LIB_RM_VERSION_MISMATCH:
        return GM_EINIT;
    case NV_ERROR_TIMEOUT:
        return GM_ETIMEDOUT;
    case NV_ERROR_LIBRARY_NOT_FOUND:
        return GM_ENOLIB;
    case NV_ERROR_FUNCTION_NOT_FOUND:
        return GM_ENOSYM;
    case NV_ERROR_GPU_IS_LOST:
        return GM_ELOST;
    case NV_ERROR_IN_USE:
    case NV_ERROR_NOT_READY:
        return GM_EBUSY;
    case NV_ERROR_MEMORY:
    case NV_ERROR_INSUFFICIENT_RESOURCES:
        return GM_ENOMEM;
    case NV_ERROR_GPU_NOT_FOUND:
        return GM_ENODEV;
    default: /* INSUFFICIENT_POWER, IRQ_ISSUE, CORRUPTED_INFOROM, UNKNOWN, newer codes */
        return GM_EIO;
    }
}

static int nv_fail(const nv_state *st, gm_error *err, int rc, const char *what)
{
    return gm_error_set(err, nv_to_gm(rc), "%s failed: %s (%d)", what, nv_strerror(st, rc), rc);
}

/* True when the caller wants metric m, or one of m..m+n-1. */
static bool nv_wants_n(const nv_gpu *g, gm_metric m, int n)
{
    if (!g->want)
        return true;
    for (int k = 0; k < n; k++)
        if (gm_metric_set_has(g->want, (gm_metric)(m + k)))
            return true;
    return false;
}

static bool nv_wants(const nv_gpu *g, gm_metric m)
{
    return nv_wants_n(g, m, 1);
}

/* Adds to w what reading its metrics needs: the first metric of a call that fills two (the
 * getters are gated on it), and the ECC mode the ECC counters are read only with. */
static void nv_want_closure(gm_metric_set *w)
{
    for (size_t i = 0; i < NV_N_PAIR; i++)
        if (gm_metric_set_has(w, pair_metrics[i].b))
            gm_metric_set_add(w, pair_metrics[i].a);
    bool ecc = false;
    for (size_t i = 0; i < NV_N_ECC; i++)
        ecc |= gm_metric_set_has(w, ecc_metrics[i].m);
    for (int k = 0; k < 10; k++)
        ecc |= gm_metric_set_has(w, (gm_metric)(GM_M_SRAM_UNCORR_VOL_PARITY + k));
    if (ecc)
        gm_metric_set_add(w, GM_M_ECC_MODE_CUR);
}

/* Driver 'DDDD:BB:DD.F' (the v1 call's short form) -> nvidia-smi's 'DDDDDDDD:BB:DD.F', so old
 * and new drivers identify a GPU the same way. */
static void normalise_bus_id(char *dst, size_t cap, const char *src)
{
    unsigned dom, bus, dev, fn;
    if (sscanf(src, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4)
        snprintf(dst, cap, "%08X:%02X:%02X.%X", dom, bus & 0xffu, dev & 0xffu, fn & 0xfu);
    else
        gm_str_copy(dst, cap, src);
}

/* Reads name, UUID and PCI bus id; a field the driver will not tell stays as it was. Returns
 * the NVML code of the name call (GPU_IS_LOST matters to the caller). */
static int read_identity(nv_state *st, nv_gpu *g)
{
    char name[NV_ID_BUF_LEN], uuid[NV_ID_BUF_LEN];
    int rc = NV_T("nvmlDeviceGetName", st->name(g->dev, name, sizeof name));
    if (rc == NV_SUCCESS)
        gm_str_copy(g->name, sizeof g->name, name);
    if (st->uuid && NV_T("nvmlDeviceGetUUID", st->uuid(g->dev, uuid, sizeof uuid)) == NV_SUCCESS)
        gm_str_copy(g->uuid, sizeof g->uuid, uuid);
    nv_pci_info pci;
    memset(&pci, 0, sizeof pci);
    if (st->pci && NV_T(st->pci_sym, st->pci(g->dev, &pci)) == NV_SUCCESS) {
        if (st->pci_v1) {
            char legacy[GM_BUSID_LEN] = {0}; /* the 16 bytes need not hold a NUL */
            memcpy(legacy, pci.busIdLegacy, sizeof pci.busIdLegacy);
            normalise_bus_id(g->bus_id, sizeof g->bus_id, legacy);
        } else {
            pci.busId[sizeof pci.busId - 1] = '\0';
            gm_str_copy(g->bus_id, sizeof g->bus_id, pci.busId);
        }
        g->pci_device_id = pci.pciDeviceId;
        g->pci_subsys_id = pci.pciSubSystemId;
    }
    /* Board serial and VBIOS: fixed for the board's life, read with the identity. */
    char serial[GM_SERIAL_LEN * 2], vbios[GM_SERIAL_LEN * 2];
    bool board = !st->want_some || st->want.board_strings;
    if (board && st->serial &&
        NV_T("nvmlDeviceGetSerial", st->serial(g->dev, serial, sizeof serial)) == NV_SUCCESS) {
        serial[sizeof serial - 1] = '\0';
        gm_str_copy(g->serial, sizeof g->serial, serial);
    }
    if (board && st->vbios &&
        NV_T("nvmlDeviceGetVbiosVersion", st->vbios(g->dev, vbios, sizeof vbios)) == NV_SUCCESS) {
        vbios[sizeof vbios - 1] = '\0';
        gm_str_copy(g->vbios, sizeof g->vbios, vbios);
    }
    /* PCI class codes and infoROM versions: fixed by the board and its firmware, read here
     * once rather than with the samples. */
    nv_pci_info_ext ext;
    memset(&ext, 0, sizeof ext);
    ext.version = NV_PCI_INFO_EXT_V1;
    if ((nv_wants(g, GM_M_PCI_BASE_CLASS) || nv_wants(g, GM_M_PCI_SUB_CLASS)) && st->pci_ext &&
        NV_T("nvmlDeviceGetPciInfoExt", st->pci_ext(g->dev, &ext)) == NV_SUCCESS &&
        ext.baseClass <= 0xff && ext.subClass <= 0xff) {
        g->pci_class_known = true;
        g->pci_base_class = ext.baseClass;
        g->pci_sub_class = ext.subClass;
    }
    char ver[GM_INFOROM_LEN];
    if (board && st->inforom_image &&
        NV_T("nvmlDeviceGetInforomImageVersion", st->inforom_image(g->dev, ver, sizeof ver)) ==
            NV_SUCCESS) {
        ver[sizeof ver - 1] = '\0';
        gm_str_copy(g->inforom[GM_INFOROM_IMG], GM_INFOROM_LEN, ver);
    }
    /* nvmlInforomObject_t: OEM 0, ECC 1, POWER 2. */
    for (int obj = 0; obj < 3 && board && st->inforom_version; obj++)
        if (NV_T("nvmlDeviceGetInforomVersion",
                 st->inforom_version(g->dev, obj, ver, sizeof ver)) == NV_SUCCESS) {
            ver[sizeof ver - 1] = '\0';
            gm_str_copy(g->inforom[GM_INFOROM_OEM + obj], GM_INFOROM_LEN, ver);
        }
    /* The board part number, the GSP firmware's version (the driver's, fixed while it runs) and
     * the PDI: nvidia-smi -q prints them; read with the serial. */
    char part[GM_PART_LEN];
    if (board && st->board_part &&
        NV_T("nvmlDeviceGetBoardPartNumber", st->board_part(g->dev, part, sizeof part)) ==
            NV_SUCCESS) {
        part[sizeof part - 1] = '\0';
        gm_str_copy(g->board_part, sizeof g->board_part, part);
    }
    char gsp[NV_GSP_VERSION_LEN] = {0};
    if (board && st->gsp_version &&
        NV_T("nvmlDeviceGetGspFirmwareVersion", st->gsp_version(g->dev, gsp)) == NV_SUCCESS) {
        gsp[sizeof gsp - 1] = '\0';
        gm_str_copy(g->gsp_version, sizeof g->gsp_version, gsp);
    }
    nv_pdi pdi = {NV_PDI_V1, 0};
    if (board && st->pdi && NV_T("nvmlDeviceGetPdi", st->pdi(g->dev, &pdi)) == NV_SUCCESS)
        snprintf(g->pdi, sizeof g->pdi, "0x%016llx", pdi.value);
    return rc;
}

/* ---- open / close ---------------------------------------------------------------------------- */

static void events_stop(nv_state *st);

static void nvml_close(void *state)
{
    nv_state *st = state;
    if (!st)
        return;
    events_stop(st);
    for (unsigned i = 0; i < st->gpu_count; i++)
        for (int k = 0; k < 2; k++)
            if (st->gpus[i].gpm[k] && st->gpm_free)
                st->gpm_free(st->gpus[i].gpm[k]);
    for (unsigned i = 0; i < st->gpu_count; i++)
        for (unsigned j = 0; j < GM_MAX_MIG; j++)
            for (int k = 0; k < 2; k++)
                if (st->gpus[i].mig_gpm[j].s[k] && st->gpm_free)
                    st->gpm_free(st->gpus[i].mig_gpm[j].s[k]);
    free(st->gpm_buf);
    if (st->shutdown)
        NV_T("nvmlShutdown", st->shutdown());
    if (st->lib)
        dlclose(st->lib);
    gm_nvml_procs_free(&st->procs);
    free(st);
}

/* The optional entry points: the nv_state member and the NVML function it holds, typed as that
 * function's prototype (<function>_fn). A member stays NULL when the library lacks it. */
#define NV_OPTIONAL(X)                                                  \
    X(error_string, nvmlErrorString)                                    \
    X(uuid, nvmlDeviceGetUUID)                                          \
    X(util, nvmlDeviceGetUtilizationRates)                              \
    X(enc, nvmlDeviceGetEncoderUtilization)                             \
    X(dec, nvmlDeviceGetDecoderUtilization)                             \
    X(mem2, nvmlDeviceGetMemoryInfo_v2)                                 \
    X(mem1, nvmlDeviceGetMemoryInfo)                                    \
    X(p2p, nvmlDeviceGetP2PStatus)                                      \
    X(handle_by_uuid, nvmlDeviceGetHandleByUUID)                        \
    X(mig_parent, nvmlDeviceGetDeviceHandleFromMigDeviceHandle)         \
    X(mig_max, nvmlDeviceGetMaxMigDeviceCount)                          \
    X(mig_by_index, nvmlDeviceGetMigDeviceHandleByIndex)                \
    X(gi_id, nvmlDeviceGetGpuInstanceId)                                \
    X(ci_id, nvmlDeviceGetComputeInstanceId)                            \
    X(procs.util, nvmlDeviceGetProcessUtilization)                      \
    X(serial, nvmlDeviceGetSerial)                                      \
    X(vbios, nvmlDeviceGetVbiosVersion)                                 \
    X(pci_ext, nvmlDeviceGetPciInfoExt)                                 \
    X(inforom_image, nvmlDeviceGetInforomImageVersion)                  \
    X(inforom_version, nvmlDeviceGetInforomVersion)                     \
    X(margin_temp, nvmlDeviceGetMarginTemperature)                      \
    X(compute_cap, nvmlDeviceGetCudaComputeCapability)                  \
    X(enc_stats, nvmlDeviceGetEncoderStats)                             \
    X(ecc_total, nvmlDeviceGetTotalEccErrors)                           \
    X(ecc_loc, nvmlDeviceGetMemoryErrorCounter)                         \
    X(retired_v2, nvmlDeviceGetRetiredPages_v2)                         \
    X(retired_v1, nvmlDeviceGetRetiredPages)                            \
    X(retired_pending, nvmlDeviceGetRetiredPagesPendingStatus)          \
    X(remapped, nvmlDeviceGetRemappedRows)                              \
    X(histogram, nvmlDeviceGetRowRemapperHistogram)                     \
    X(fields, nvmlDeviceGetFieldValues)                                 \
    X(link_state, nvmlDeviceGetNvLinkState)                             \
    X(addressing, nvmlDeviceGetAddressingMode)                          \
    X(c2c, nvmlDeviceGetC2cModeInfoV)                                   \
    X(fabric, nvmlDeviceGetGpuFabricInfoV)                              \
    X(fabric_v1, nvmlDeviceGetGpuFabricInfo)                            \
    X(protected_mem, nvmlDeviceGetConfComputeProtectedMemoryUsage)      \
    X(sram, nvmlDeviceGetSramEccErrorStatus)                            \
    X(bar1, nvmlDeviceGetBAR1MemoryInfo)                                \
    X(platform, nvmlDeviceGetPlatformInfo)                              \
    X(validate_inforom, nvmlDeviceValidateInforom)                      \
    X(remapped_v2, nvmlDeviceGetRemappedRows_v2)                        \
    X(board_part, nvmlDeviceGetBoardPartNumber)                         \
    X(gsp_version, nvmlDeviceGetGspFirmwareVersion)                     \
    X(pdi, nvmlDeviceGetPdi)                                            \
    X(bbx, nvmlDeviceGetLastBBXFlushTime)                               \
    X(host_vgpu, nvmlDeviceGetHostVgpuMode)                             \
    X(vgpu_hetero, nvmlDeviceGetVgpuHeterogeneousMode)                  \
    X(bridge, nvmlDeviceGetBridgeChipInfo)                              \
    X(fbc, nvmlDeviceGetFBCStats)                                       \
    X(dram_enc, nvmlDeviceGetDramEncryptionMode)                        \
    X(repair, nvmlDeviceGetRepairStatus)                                \
    X(unrepairable, nvmlDeviceGetUnrepairableMemoryFlag_v1)             \
    X(power_profiles, nvmlDeviceWorkloadPowerProfileGetCurrentProfiles) \
    X(auto_boost, nvmlDeviceGetAutoBoostedClocksEnabled)                \
    X(capabilities, nvmlDeviceGetCapabilities)                          \
    X(mem_clocks, nvmlDeviceGetSupportedMemoryClocks)                   \
    X(gr_clocks, nvmlDeviceGetSupportedGraphicsClocks)                  \
    X(gpm_alloc, nvmlGpmSampleAlloc)                                    \
    X(gpm_free, nvmlGpmSampleFree)                                      \
    X(gpm_get, nvmlGpmSampleGet)                                        \
    X(gpm_support, nvmlGpmQueryDeviceSupport)                           \
    X(gpm_metrics, nvmlGpmMetricsGet)                                   \
    X(gpm_mig_get, nvmlGpmMigSampleGet)

static void resolve_optional(nv_state *st)
{
    void *lib = st->lib;
#define NV_RESOLVE(member, fn) st->member = (fn##_fn)dlsym(lib, #fn);
    NV_OPTIONAL(NV_RESOLVE)
#undef NV_RESOLVE
    st->pci = (nvmlDeviceGetPciInfo_fn)resolve(lib, sym_pci, &st->pci_sym);
    st->pci_v1 = st->pci && strcmp(st->pci_sym, "nvmlDeviceGetPciInfo") == 0;
    for (size_t i = 0; i < NV_N_U32; i++)
        st->u32[i] = (u32_metrics_fn)dlsym(lib, u32_metrics[i].sym);
    for (size_t i = 0; i < NV_N_ARG; i++)
        st->arg[i] = (arg_metrics_fn)dlsym(lib, arg_metrics[i].sym);
    for (size_t i = 0; i < NV_N_U64; i++) {
        const char *names[3] = {u64_metrics[i].sym[0], u64_metrics[i].sym[1], NULL};
        st->u64[i] = (u64_metrics_fn)resolve(lib, names, NULL);
    }
    for (size_t l = 0; l < 2; l++) {
        st->procs.list[l] =
            (nvmlDeviceGetComputeRunningProcesses_fn)resolve(lib, sym_procs[l], &st->procs.sym[l]);
        /* The unversioned name is the v1 ABI with 16-byte entries. */
        st->procs.stride[l] = st->procs.list[l] && strcmp(st->procs.sym[l], sym_procs[l][2]) == 0
                                  ? NV_PROC_V1_SIZE
                                  : NV_PROC_V2_SIZE;
    }
    for (size_t i = 0; i < NV_N_PAIR; i++)
        st->pair[i] = (pair_metrics_fn)dlsym(lib, pair_metrics[i].sym);
    for (size_t i = 0; i < NV_N_CODEC; i++)
        st->codec[i] = (codec_metrics_fn)dlsym(lib, codec_metrics[i].sym);
    st->fabric_version = NV_FABRIC_INFO_V3;
    if (!st->gpm_alloc || !st->gpm_free || !st->gpm_get || !st->gpm_support || !st->gpm_metrics)
        st->gpm_alloc = NULL; /* GPM needs all five */
}

/* ---- XID events ------------------------------------------------------------------------------ */

/* Takes the XIDs the driver queued on the event set since the last drain, without waiting (a
 * timeout of 0), at most every NV_EVENTS_MS. Asked from the sampling pass rather than by a
 * thread blocked in nvmlEventSetWait, so watching costs no wake-up between samples and at most
 * one call per sample; an XID shows in a sample within NV_EVENTS_MS and a period. */
#define NV_EVENTS_PER_PASS 64  /* events taken per drain; the rest wait for the next */
#define NV_EVENTS_MS       500 /* at 10 Hz, one sample in five asks */
static void events_drain(nv_state *st, int64_t now)
{
    if (!st->evset || now - st->evset_drained_ms < NV_EVENTS_MS)
        return;
    st->evset_drained_ms = now;
    for (int k = 0; k < NV_EVENTS_PER_PASS; k++) {
        nv_event_data d;
        memset(&d, 0, sizeof d);
        /* NVML_ERROR_TIMEOUT: none queued; any other error: asked again next pass. */
        if (NV_T(st->evset_wait_sym, st->evset_wait(st->evset, &d, 0)) != NV_SUCCESS)
            return;
        if (!(d.eventType & NV_EVENT_XID))
            continue;
        for (unsigned i = 0; i < st->gpu_count; i++) {
            nv_gpu *g = &st->gpus[i];
            if (g->dev == d.device && g->xid_watched) {
                g->xid_last = d.eventData;
                g->xid_count++;
                g->xid_time_ms = gm_clock_wall_ms();
                break;
            }
        }
    }
}

/* Registers every GPU for XID events; quietly does nothing when the library lacks the event
 * API or no GPU takes the registration (then XID stays absent). */
static void events_start(nv_state *st)
{
    nvmlEventSetCreate_fn create = (nvmlEventSetCreate_fn)dlsym(st->lib, "nvmlEventSetCreate");
    nvmlDeviceRegisterEvents_fn reg =
        (nvmlDeviceRegisterEvents_fn)dlsym(st->lib, "nvmlDeviceRegisterEvents");
    static const char *const wait_syms[] = {"nvmlEventSetWait_v2", "nvmlEventSetWait", NULL};
    st->evset_wait = (nvmlEventSetWait_fn)resolve(st->lib, wait_syms, &st->evset_wait_sym);
    st->evset_free = (nvmlEventSetFree_fn)dlsym(st->lib, "nvmlEventSetFree");
    if (!create || !reg || !st->evset_wait || !st->evset_free)
        return;
    if (create(&st->evset) != NV_SUCCESS) {
        st->evset = NULL;
        return;
    }
    unsigned watched = 0;
    for (unsigned i = 0; i < st->gpu_count; i++) {
        nv_gpu *g = &st->gpus[i];
        if (g->dev && !g->lost && reg(g->dev, NV_EVENT_XID, st->evset) == NV_SUCCESS) {
            g->xid_watched = true;
            watched++;
        }
    }
    if (watched == 0) {
        st->evset_free(st->evset);
        st->evset = NULL;
    }
}

static void events_stop(nv_state *st)
{
    if (st->evset) {
        st->evset_free(st->evset);
        st->evset = NULL;
    }
}

/* Driver, NVML and CUDA versions do not change while the library is loaded: read them once. */
static void read_versions(nv_state *st)
{
    char driver[NV_SYS_STRING_LEN], nvml[NV_SYS_STRING_LEN];
    nvmlSystemGetDriverVersion_fn drv =
        (nvmlSystemGetDriverVersion_fn)dlsym(st->lib, "nvmlSystemGetDriverVersion");
    nvmlSystemGetNVMLVersion_fn nv =
        (nvmlSystemGetNVMLVersion_fn)dlsym(st->lib, "nvmlSystemGetNVMLVersion");
    nvmlSystemGetCudaDriverVersion_fn cuda =
        (nvmlSystemGetCudaDriverVersion_fn)resolve(st->lib, sym_cuda, NULL);
    if (drv && NV_T("nvmlSystemGetDriverVersion", drv(driver, sizeof driver)) == NV_SUCCESS) {
        driver[sizeof driver - 1] = '\0';
        gm_str_copy(st->driver_version, sizeof st->driver_version, driver);
    }
    if (nv && NV_T("nvmlSystemGetNVMLVersion", nv(nvml, sizeof nvml)) == NV_SUCCESS) {
        nvml[sizeof nvml - 1] = '\0';
        gm_str_copy(st->nvml_version, sizeof st->nvml_version, nvml);
    }
    int cuda_v = 0;
    if (cuda && NV_T("nvmlSystemGetCudaDriverVersion", cuda(&cuda_v)) == NV_SUCCESS &&
        cuda_v > 0) /* 12040 -> "12.4" */
        snprintf(st->cuda_version, sizeof st->cuda_version, "%d.%d", cuda_v / 1000,
                 (cuda_v % 1000) / 10);
}

/* A state for the library at path with the caller's options; NULL when out of memory. */
static nv_state *state_new(const gm_collector_options *opt, const char *path)
{
    nv_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    gm_str_copy(st->path, sizeof st->path, path);
    st->slow_period_ms = !opt || opt->slow_period_ms == 0 ? NV_SLOW_DEFAULT_MS
                         : opt->slow_period_ms < 0        ? 0
                                                          : opt->slow_period_ms;
    if (opt && opt->want) {
        st->want_some = true;
        st->want = *opt->want;
        nv_want_closure(&st->want);
    }
    for (unsigned i = 0; i < GM_MAX_GPUS; i++)
        st->gpus[i].want = st->want_some ? &st->want : NULL;
    return st;
}

/* Loads the library (origin: where its path came from, for the message), resolves its entry
 * points and calls nvmlInit. GM_ENOLIB, GM_ENOSYM or GM_EINIT on failure. */
static int load_library(nv_state *st, const char *origin, gm_error *err)
{
    st->lib = dlopen(st->path, RTLD_NOW | RTLD_LOCAL);
    if (!st->lib) {
        const char *why = dlerror();
        return gm_error_set(err, GM_ENOLIB, "cannot load NVML library %s%s: %s", st->path, origin,
                            why ? why : "unknown dlopen error");
    }
    const char *init_sym = NULL;
    nvmlInit_fn init = (nvmlInit_fn)resolve(st->lib, sym_init, &init_sym);
    nvmlShutdown_fn shutdown = (nvmlShutdown_fn)dlsym(st->lib, "nvmlShutdown");
    st->count = (nvmlDeviceGetCount_fn)resolve(st->lib, sym_count, &st->count_sym);
    st->handle = (nvmlDeviceGetHandleByIndex_fn)resolve(st->lib, sym_handle, &st->handle_sym);
    st->name = (nvmlDeviceGetName_fn)dlsym(st->lib, "nvmlDeviceGetName");
    const char *missing = !init         ? "nvmlInit_v2/nvmlInit"
                          : !shutdown   ? "nvmlShutdown"
                          : !st->count  ? "nvmlDeviceGetCount_v2/nvmlDeviceGetCount"
                          : !st->handle ? "nvmlDeviceGetHandleByIndex_v2/nvmlDeviceGetHandleByIndex"
                          : !st->name   ? "nvmlDeviceGetName"
                                        : NULL;
    if (missing)
        return gm_error_set(err, GM_ENOSYM, "%s does not export %s: not an NVML library?", st->path,
                            missing);
    resolve_optional(st);
    int init_rc = NV_T(init_sym, init());
    if (init_rc != NV_SUCCESS)
        return gm_error_set(err, GM_EINIT, "%s failed: %s (%d)", init_sym, nv_strerror(st, init_rc),
                            init_rc);
    st->shutdown = shutdown; /* from here on close() owes nvmlShutdown */
    return GM_OK;
}

/* Counts the GPUs and caches each one's handle and identity. A GPU whose handle or name cannot
 * be read now is kept as lost and probed again later, so one bad board does not hide the
 * others. GM_ENODEV when there is none; an error when no GPU answers, unless they are lost. */
static int open_gpus(nv_state *st, gm_error *err)
{
    unsigned n = 0;
    int count_rc = NV_T(st->count_sym, st->count(&n));
    if (count_rc != NV_SUCCESS)
        return nv_fail(st, err, count_rc, st->count_sym);
    if (n == 0)
        return gm_error_set(err, GM_ENODEV, "NVML (%s) found no GPU", st->path);
    st->gpu_count = n > GM_MAX_GPUS ? GM_MAX_GPUS : n; /* the sample model holds no more */
    int first_rc = NV_SUCCESS;
    unsigned usable = 0;
    int64_t now = gm_clock_mono_ms();
    for (unsigned i = 0; i < st->gpu_count; i++) {
        nv_gpu *g = &st->gpus[i];
        int rc = NV_T(st->handle_sym, st->handle(i, &g->dev));
        if (rc == NV_SUCCESS)
            rc = read_identity(st, g);
        else
            g->dev = NULL;
        if (rc == NV_SUCCESS) {
            usable++;
            continue;
        }
        if (first_rc == NV_SUCCESS)
            first_rc = rc;
        g->lost = true;
        g->lost_ms = now;
    }
    if (usable == 0 && first_rc != NV_ERROR_GPU_IS_LOST)
        return nv_fail(st, err, first_rc, st->handle_sym);
    return GM_OK;
}

/* Opens NVML from opt->nvml_lib, else $GPU_MONITOR_NVML_LIB, else libnvidia-ml.so.1: one
 * nvmlInit per open, identity of every GPU cached. GM_ENOLIB when the library does not load,
 * GM_ENOSYM when a required entry point is missing, GM_EINIT when nvmlInit fails, GM_ENODEV
 * when there is no GPU. */
static int nvml_open(const gm_collector_options *opt, void **state, gm_error *err)
{
    const char *path = opt ? opt->nvml_lib : NULL;
    const char *origin = "";
    if (!path || !*path) {
        path = getenv("GPU_MONITOR_NVML_LIB");
        origin = " (from GPU_MONITOR_NVML_LIB)";
    }
    if (!path || !*path) {
        path = NV_DEFAULT_LIB;
        origin = "";
    }
    nv_state *st = state_new(opt, path);
    if (!st)
        return gm_error_set(err, GM_ENOMEM, "out of memory opening NVML");
    int rc = load_library(st, origin, err);
    if (rc == GM_OK)
        rc = open_gpus(st, err);
    if (rc != GM_OK) {
        nvml_close(st);
        return rc;
    }
    read_versions(st);
    if (opt && opt->watch_xid)
        events_start(st);
    *state = st;
    return GM_OK;
}

/* ---- sampling -------------------------------------------------------------------------------- */

static void read_memory(nv_state *st, nvmlDevice_t dev, gm_gpu *out, nv_pass *p)
{
    if (st->mem2) {
        nv_memory_v2 m;
        memset(&m, 0, sizeof m);
        m.version = NV_MEMORY_V2_VERSION;
        int rc = NV_T("nvmlDeviceGetMemoryInfo_v2", st->mem2(dev, &m));
        if (rc == NV_ERROR_ARGUMENT_VERSION_MISMATCH) {
            st->mem2 = NULL; /* this driver wants another struct revision: use v1 from now on */
        } else {
            if (pass_record_ok(p, rc, "nvmlDeviceGetMemoryInfo_v2")) {
                gm_gpu_set(out, GM_M_MEM_TOTAL_BYTES, (double)m.total);
                gm_gpu_set(out, GM_M_MEM_USED_BYTES, (double)m.used);
                gm_gpu_set(out, GM_M_MEM_FREE_BYTES, (double)m.free);
                gm_gpu_set(out, GM_M_MEM_RESERVED_BYTES, (double)m.reserved);
            }
            return;
        }
    }
    if (st->mem1) {
        /* v1 "used" includes reserved memory and reserved itself is unknown: left absent. */
        nv_memory_v1 m;
        memset(&m, 0, sizeof m);
        if (pass_record_ok(p, NV_T("nvmlDeviceGetMemoryInfo", st->mem1(dev, &m)),
                           "nvmlDeviceGetMemoryInfo")) {
            gm_gpu_set(out, GM_M_MEM_TOTAL_BYTES, (double)m.total);
            gm_gpu_set(out, GM_M_MEM_USED_BYTES, (double)m.used);
            gm_gpu_set(out, GM_M_MEM_FREE_BYTES, (double)m.free);
        }
    }
}

/* ---- the cadence path: how every getter of the tables and of the health reads is read ----
 * 1. cache_serve: a pass starts from the last readings of the NV_STATIC and NV_SLOW getters;
 * 2. read_due: a getter is called only when due at its cadence, wanted, and not refused before;
 * 3. read_put: its answer is recorded in the pass, a refusal remembered (the metric stays absent,
 *    never 0), the reading kept for its cadence and reported, replacing the served one. */

/* Reports the last readings of the cached getters; those called this pass replace them. */
static void cache_serve(const nv_gpu *ng, gm_gpu *out)
{
    for (int w = 0; w < GM_M_WORDS; w++)
        for (uint64_t bits = ng->cache.valid[w]; bits; bits &= bits - 1) {
            gm_metric m = (gm_metric)(w * 64 + __builtin_ctzll(bits));
            gm_gpu_set(out, m, ng->cache.v[m]);
        }
}

/* Keeps the reading of a cached getter and reports it, or forgets it when there is none. */
static void cache_put(nv_gpu *g, gm_gpu *out, gm_metric m, bool ok, double v)
{
    if (ok) {
        gm_gpu_set(&g->cache, m, v);
        gm_gpu_set(out, m, v);
    } else {
        gm_gpu_unset(&g->cache, m);
        gm_gpu_unset(out, m);
    }
}

/* True when the getter of metrics m..m+n-1 (one call; consecutive in the metric table, or
 * n = 1) is to be called now. A getter the GPU answered NOT_SUPPORTED is not called again; one
 * read every sample is asked again when the slow getters are due, as such an answer can change
 * with the GPU's state (the fan of a board that stopped it), but rarely. */
static bool read_due(const nv_gpu *ng, gm_metric m, int n, enum nv_cadence c, const bool *due)
{
    if (!nv_wants_n(ng, m, n))
        return false;
    if (gm_metric_set_has(&ng->nosup, m))
        return c == NV_EVERY && due[NV_SLOW];
    return due[c];
}

/* Books one reading of metric m by the call fn that answered rc: recorded in the pass,
 * NOT_SUPPORTED remembered for read_due, the value (NAN: the call gave none this time) reported
 * and, unless read every sample, cached. */
static void read_put(nv_gpu *ng, gm_gpu *out, nv_pass *p, gm_metric m, enum nv_cadence c, int rc,
                     const char *fn, double v)
{
    bool ok = pass_record_ok(p, rc, fn) && !isnan(v);
    uint64_t bit = UINT64_C(1) << (m % 64);
    if (rc == NV_ERROR_NOT_SUPPORTED || rc == NV_ERROR_FUNCTION_NOT_FOUND)
        ng->nosup.bits[m / 64] |= bit;
    else
        ng->nosup.bits[m / 64] &= ~bit;
    if (c == NV_EVERY) {
        if (ok)
            gm_gpu_set(out, m, v);
    } else {
        cache_put(ng, out, m, ok, v);
    }
}

/* A total/used/free memory reading (nvmlMemory_t) of the call fn that answered rc, into the
 * three metrics from `total` on, in that order: protected memory and BAR1 share the layout and
 * the slow cadence. */
static void put_mem_triple(nv_gpu *ng, gm_gpu *out, nv_pass *p, int rc, const char *fn,
                           const nv_memory_v1 *m, gm_metric total)
{
    read_put(ng, out, p, total, NV_SLOW, rc, fn, (double)m->total);
    read_put(ng, out, p, (gm_metric)(total + 1), NV_SLOW, rc, fn, (double)m->used);
    read_put(ng, out, p, (gm_metric)(total + 2), NV_SLOW, rc, fn, (double)m->free);
}

static double field_double(const nv_field_value *f)
{
    switch (f->valueType) {
    case 0:
        return f->value.d;
    case 1:
        return f->value.ui;
    case 2:
        return (double)f->value.ul;
    case 3:
        return (double)f->value.ull;
    case 4:
        return (double)f->value.sll;
    case 5:
        return f->value.si;
    case 6:
        return f->value.us;
    default:
        return NAN;
    }
}

/* One nvmlDeviceGetFieldValues call for the field metrics of one cadence that are due. */
static void read_fields(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due,
                        bool slow_class)
{
    nv_field_value fv[NV_N_FIELDS];
    gm_metric which[NV_N_FIELDS];
    int n = 0;
    for (size_t i = 0; i < NV_N_FIELDS; i++) {
        enum nv_cadence c = field_metrics[i].cadence;
        if ((c != NV_EVERY) != slow_class || !read_due(ng, field_metrics[i].m, 1, c, due))
            continue;
        memset(&fv[n], 0, sizeof fv[n]);
        fv[n].fieldId = field_metrics[i].id;
        fv[n].scopeId = field_metrics[i].scope;
        which[n++] = field_metrics[i].m;
    }
    if (n == 0)
        return;
    int rc = NV_T(slow_class ? "nvmlDeviceGetFieldValues[slow]" : "nvmlDeviceGetFieldValues[every]",
                  st->fields(ng->dev, n, fv));
    enum nv_cadence c = slow_class ? NV_SLOW : NV_EVERY;
    for (int k = 0; k < n && !p->lost; k++) {
        int frc = rc != NV_SUCCESS ? rc : fv[k].nvmlReturn;
        double v = field_double(&fv[k]);
        if (frc == NV_SUCCESS && !isfinite(v))
            frc = NV_ERROR_NOT_SUPPORTED;
        read_put(ng, out, p, which[k], c, frc, "nvmlDeviceGetFieldValues", v);
    }
}

/* GPM ratios over the interval since the previous pass: a sample now, the metrics between it
 * and the last one. Absent on the first pass and on GPUs without GPM. */
static void read_gpm(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p)
{
    if (!st->gpm_alloc || ng->gpm_state < 0)
        return;
    bool wanted = false;
    for (size_t i = 0; i < NV_N_GPM; i++)
        wanted |= nv_wants(ng, gpm_metrics[i].m);
    if (!wanted)
        return;
    if (ng->gpm_state == 0) {
        nv_gpm_support sup = {.version = 1};
        ng->gpm_state = -1;
        if (NV_T("nvmlGpmQueryDeviceSupport", st->gpm_support(ng->dev, &sup)) != NV_SUCCESS ||
            !sup.isSupportedDevice)
            return;
        if (!st->gpm_buf && !(st->gpm_buf = malloc(sizeof *st->gpm_buf)))
            return;
        if (st->gpm_alloc(&ng->gpm[0]) != NV_SUCCESS || st->gpm_alloc(&ng->gpm[1]) != NV_SUCCESS)
            return; /* whatever was allocated is freed at close */
        ng->gpm_state = 1;
    }
    int cur = ng->gpm_cur;
    if (!pass_record_ok(p, NV_T("nvmlGpmSampleGet", st->gpm_get(ng->dev, ng->gpm[cur])),
                        "nvmlGpmSampleGet")) {
        ng->gpm_prev = false;
        return;
    }
    if (ng->gpm_prev) {
        nv_gpm_metrics_get *q = st->gpm_buf;
        memset(q, 0, offsetof(nv_gpm_metrics_get, metrics) + NV_N_GPM * sizeof q->metrics[0]);
        q->version = 1; /* NVML_GPM_METRICS_GET_VERSION */
        q->numMetrics = NV_N_GPM;
        q->sample1 = ng->gpm[1 - cur];
        q->sample2 = ng->gpm[cur];
        for (size_t i = 0; i < NV_N_GPM; i++)
            q->metrics[i].metricId = gpm_metrics[i].id;
        if (pass_record_ok(p, NV_T("nvmlGpmMetricsGet", st->gpm_metrics(q)), "nvmlGpmMetricsGet"))
            for (size_t i = 0; i < NV_N_GPM; i++)
                if (q->metrics[i].nvmlReturn == NV_SUCCESS && isfinite(q->metrics[i].value))
                    gm_gpu_set(out, gpm_metrics[i].m, q->metrics[i].value * gpm_metrics[i].scale);
    }
    ng->gpm_prev = true;
    ng->gpm_cur = 1 - cur;
}

/* Page counts of one retirement cause: the size query (count 0) answers how many. */
static int retired_count(nv_state *st, nvmlDevice_t dev, int cause, unsigned *n)
{
    *n = 0;
    int rc =
        NV_T("nvmlDeviceGetRetiredPages", st->retired_v2 ? st->retired_v2(dev, cause, n, NULL, NULL)
                                                         : st->retired_v1(dev, cause, n, NULL));
    return rc == NV_ERROR_INSUFFICIENT_SIZE ? NV_SUCCESS : rc;
}

/* Fabric registration, NVML's newest struct first: v3, v2 when the driver refuses v3, else the
 * unversioned call. Copies what it read into f (version word unset). */
static int read_fabric(nv_state *st, nvmlDevice_t dev, nv_fabric_info *f)
{
    int rc = NV_ERROR_FUNCTION_NOT_FOUND;
    if (st->fabric) {
        memset(f, 0, sizeof *f);
        f->version = st->fabric_version;
        rc = NV_T("nvmlDeviceGetGpuFabricInfoV", st->fabric(dev, f));
        if (rc == NV_ERROR_ARGUMENT_VERSION_MISMATCH && st->fabric_version == NV_FABRIC_INFO_V3) {
            st->fabric_version = NV_FABRIC_INFO_V2; /* a driver that knows v2 only */
            memset(f, 0, sizeof *f);
            f->version = st->fabric_version;
            rc = NV_T("nvmlDeviceGetGpuFabricInfoV", st->fabric(dev, f));
        }
        if (rc != NV_ERROR_ARGUMENT_VERSION_MISMATCH || !st->fabric_v1)
            return rc;
    }
    if (st->fabric_v1) {
        nv_fabric_info_v1 o;
        memset(&o, 0, sizeof o);
        rc = NV_T("nvmlDeviceGetGpuFabricInfo", st->fabric_v1(dev, &o));
        memset(f, 0, sizeof *f);
        memcpy(f->clusterUuid, o.clusterUuid, sizeof f->clusterUuid);
        f->status = o.status;
        f->cliqueId = o.cliqueId;
        f->state = o.state;
    }
    return rc;
}

/* Modes nvidia-smi shows (once a minute), the fabric registration, confidential-computing memory
 * and the SRAM error status (the slow period; SRAM not with ECC off, as the other ECC counters).
 * Each getter is optional: a driver without it leaves its metrics absent. */
static void read_modes(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due,
                       bool ecc_off)
{
    nvmlDevice_t dev = ng->dev;
    if (!p->lost && st->addressing && read_due(ng, GM_M_ADDRESSING_MODE, 1, NV_STATIC, due)) {
        nv_addressing_mode am = {NV_ADDRESSING_MODE_V1, 0};
        int rc = NV_T("nvmlDeviceGetAddressingMode", st->addressing(dev, &am));
        if (rc == NV_ERROR_ARGUMENT_VERSION_MISMATCH || (rc == NV_SUCCESS && am.value > 2))
            rc = NV_ERROR_NOT_SUPPORTED; /* a revision or a mode this build does not know */
        read_put(ng, out, p, GM_M_ADDRESSING_MODE, NV_STATIC, rc, "nvmlDeviceGetAddressingMode",
                 am.value);
    }
    if (!p->lost && st->c2c && read_due(ng, GM_M_C2C_MODE, 1, NV_STATIC, due)) {
        nv_c2c_mode cm = {0};
        int rc = NV_T("nvmlDeviceGetC2cModeInfoV", st->c2c(dev, &cm));
        read_put(ng, out, p, GM_M_C2C_MODE, NV_STATIC, rc, "nvmlDeviceGetC2cModeInfoV",
                 cm.isC2cEnabled != 0);
    }
    if (!p->lost && (st->fabric || st->fabric_v1) &&
        read_due(ng, GM_M_FABRIC_STATE, 3, NV_SLOW, due)) {
        nv_fabric_info f;
        int rc = read_fabric(st, dev, &f);
        if (rc == NV_SUCCESS && (f.state == 0 || f.state > NV_FABRIC_COMPLETED))
            rc = NV_ERROR_NOT_SUPPORTED; /* NVML_GPU_FABRIC_STATE_NOT_SUPPORTED */
        const char *fn = "nvmlDeviceGetGpuFabricInfoV";
        read_put(ng, out, p, GM_M_FABRIC_STATE, NV_SLOW, rc, fn, f.state);
        /* Status, clique and cluster belong to a completed registration. */
        bool done = rc == NV_SUCCESS && f.state == NV_FABRIC_COMPLETED;
        cache_put(ng, out, GM_M_FABRIC_STATUS, done, f.status);
        cache_put(ng, out, GM_M_FABRIC_CLIQUE_ID, done, f.cliqueId);
        ng->fabric_uuid[0] = ng->fabric_status[0] = '\0';
        if (done) {
            const unsigned char *u = f.clusterUuid;
            snprintf(ng->fabric_uuid, sizeof ng->fabric_uuid,
                     "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                     u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                     u[13], u[14], u[15]);
            /* nvidia-smi words the status as nvmlErrorString does ("Success"). */
            gm_str_copy(ng->fabric_status, sizeof ng->fabric_status, nv_strerror(st, f.status));
        }
    }
    if (!p->lost && st->protected_mem && read_due(ng, GM_M_PROT_MEM_TOTAL_BYTES, 3, NV_SLOW, due)) {
        const char *fn = "nvmlDeviceGetConfComputeProtectedMemoryUsage";
        nv_memory_v1 prot = {0, 0, 0};
        int rc = NV_T(fn, st->protected_mem(dev, &prot));
        put_mem_triple(ng, out, p, rc, fn, &prot, GM_M_PROT_MEM_TOTAL_BYTES);
    }
    if (!p->lost && st->sram && !ecc_off &&
        read_due(ng, GM_M_SRAM_UNCORR_VOL_PARITY, 10, NV_SLOW, due)) {
        nv_sram_status e;
        memset(&e, 0, sizeof e);
        e.version = NV_SRAM_STATUS_V1;
        int rc = NV_T("nvmlDeviceGetSramEccErrorStatus", st->sram(dev, &e));
        if (rc == NV_ERROR_ARGUMENT_VERSION_MISMATCH)
            rc = NV_ERROR_NOT_SUPPORTED;
        const char *fn = "nvmlDeviceGetSramEccErrorStatus";
        const struct {
            gm_metric m;
            double v;
        } rows[] = {
            {GM_M_SRAM_UNCORR_VOL_PARITY, (double)e.volatileUncParity},
            {GM_M_SRAM_UNCORR_VOL_SECDED, (double)e.volatileUncSecDed},
            {GM_M_SRAM_UNCORR_AGG_PARITY, (double)e.aggregateUncParity},
            {GM_M_SRAM_UNCORR_AGG_SECDED, (double)e.aggregateUncSecDed},
            {GM_M_SRAM_THRESHOLD_EXCEEDED, e.bThresholdExceeded != 0},
            {GM_M_SRAM_UNCORR_AGG_L2, (double)e.aggregateUncBucketL2},
            {GM_M_SRAM_UNCORR_AGG_SM, (double)e.aggregateUncBucketSm},
            {GM_M_SRAM_UNCORR_AGG_MCU, (double)e.aggregateUncBucketMcu},
            {GM_M_SRAM_UNCORR_AGG_PCIE, (double)e.aggregateUncBucketPcie},
            {GM_M_SRAM_UNCORR_AGG_OTHER, (double)e.aggregateUncBucketOther},
        };
        for (size_t k = 0; k < sizeof rows / sizeof *rows; k++)
            read_put(ng, out, p, rows[k].m, NV_SLOW, rc, fn, rows[k].v);
    }
}

/* What nvidia-smi -q prints besides the sampled metrics. The platform and the infoROM checksum
 * cannot change while the driver runs: read once (the validation reads the whole infoROM from
 * flash, so never again); BAR1 use and the inactive remapped rows at the slow period. */
static void read_board(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due)
{
    nvmlDevice_t dev = ng->dev;
    /* Only for a caller that prints them: the validation alone reads the whole infoROM. */
    bool inforom = st->validate_inforom && nv_wants(ng, GM_M_INFOROM_VALID);
    bool platform = st->platform && nv_wants_n(ng, GM_M_PLATFORM_SLOT, 5);
    if (!ng->board_read && !p->lost && (inforom || platform)) {
        ng->board_read = true;
        if (inforom) {
            int rc = NV_T("nvmlDeviceValidateInforom", st->validate_inforom(dev));
            /* CORRUPTED_INFOROM is the answer "invalid", not a failure to answer. */
            bool known = rc == NV_SUCCESS || rc == NV_ERROR_CORRUPTED_INFOROM;
            if (!known)
                pass_record_ok(p, rc, "nvmlDeviceValidateInforom");
            cache_put(ng, out, GM_M_INFOROM_VALID, known, rc == NV_SUCCESS);
        }
        if (platform) {
            nv_platform_info pi;
            memset(&pi, 0, sizeof pi);
            pi.version = NV_PLATFORM_INFO_V2;
            int rc = NV_T("nvmlDeviceGetPlatformInfo", st->platform(dev, &pi));
            bool ok = pass_record_ok(p, rc, "nvmlDeviceGetPlatformInfo");
            cache_put(ng, out, GM_M_PLATFORM_SLOT, ok, pi.slotNumber);
            cache_put(ng, out, GM_M_PLATFORM_TRAY, ok, pi.trayIndex);
            cache_put(ng, out, GM_M_PLATFORM_HOST_ID, ok, pi.hostId);
            cache_put(ng, out, GM_M_PLATFORM_PEER_TYPE, ok, pi.peerType);
            cache_put(ng, out, GM_M_PLATFORM_MODULE_ID, ok, pi.moduleId);
            if (ok) {
                snprintf(ng->platform_serial, sizeof ng->platform_serial, "%.*s",
                         (int)strnlen((const char *)pi.chassisSerialNumber,
                                      sizeof pi.chassisSerialNumber),
                         (const char *)pi.chassisSerialNumber);
                /* nvidia-smi's gpu_fabric_guid: the first 8 bytes of the IB GUID, big-endian. */
                unsigned long long guid = 0;
                for (int k = 0; k < 8; k++)
                    guid = guid << 8 | pi.ibGuid[k];
                snprintf(ng->platform_guid, sizeof ng->platform_guid, "0x%016llX", guid);
            }
        }
    }
    gm_str_copy(out->platform_serial, sizeof out->platform_serial, ng->platform_serial);
    gm_str_copy(out->platform_guid, sizeof out->platform_guid, ng->platform_guid);
    if (!p->lost && st->bar1 && read_due(ng, GM_M_BAR1_TOTAL_BYTES, 3, NV_SLOW, due)) {
        const char *fn = "nvmlDeviceGetBAR1MemoryInfo";
        nv_memory_v1 bar1 = {0, 0, 0};
        int rc = NV_T(fn, st->bar1(dev, &bar1));
        put_mem_triple(ng, out, p, rc, fn, &bar1, GM_M_BAR1_TOTAL_BYTES);
    }
    if (!p->lost && st->remapped_v2 && read_due(ng, GM_M_REMAP_CORR_INACTIVE, 2, NV_SLOW, due)) {
        nv_remapped_v2 r;
        memset(&r, 0, sizeof r);
        int rc = NV_T("nvmlDeviceGetRemappedRows_v2", st->remapped_v2(dev, &r));
        const char *fn = "nvmlDeviceGetRemappedRows_v2";
        read_put(ng, out, p, GM_M_REMAP_CORR_INACTIVE, NV_SLOW, rc, fn, r.corrInactive);
        read_put(ng, out, p, GM_M_REMAP_UNC_INACTIVE, NV_SLOW, rc, fn, r.uncInactive);
    }
}

/* An enable state (0/1) or a small enumeration: other values are not ones this build knows. */
static int nv_bounded(int rc, unsigned v, unsigned max)
{
    return rc == NV_SUCCESS && v > max ? NV_ERROR_NOT_SUPPORTED : rc;
}

/* The rest of what nvidia-smi -q prints. Modes and capabilities are configuration: once a
 * minute; the black-box flush, frame capture statistics and repair flags at the slow period.
 * A version the driver refuses reads as unsupported. */
static void read_smi_extra(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due)
{
    nvmlDevice_t dev = ng->dev;
    if (!p->lost && st->bbx && read_due(ng, GM_M_BBX_FLUSH_TIME, 2, NV_SLOW, due)) {
        unsigned long long ts = 0;
        unsigned long us = 0;
        int rc = NV_T("nvmlDeviceGetLastBBXFlushTime", st->bbx(dev, &ts, &us));
        const char *fn = "nvmlDeviceGetLastBBXFlushTime";
        read_put(ng, out, p, GM_M_BBX_FLUSH_TIME, NV_SLOW, rc, fn, (double)ts);
        read_put(ng, out, p, GM_M_BBX_FLUSH_DURATION_US, NV_SLOW, rc, fn, (double)us);
    }
    if (!p->lost && st->host_vgpu && read_due(ng, GM_M_HOST_VGPU_MODE, 1, NV_STATIC, due)) {
        unsigned v = 0;
        int rc = nv_bounded(NV_T("nvmlDeviceGetHostVgpuMode", st->host_vgpu(dev, &v)), v, 1);
        read_put(ng, out, p, GM_M_HOST_VGPU_MODE, NV_STATIC, rc, "nvmlDeviceGetHostVgpuMode", v);
    }
    if (!p->lost && st->vgpu_hetero && read_due(ng, GM_M_VGPU_HETERO_MODE, 1, NV_STATIC, due)) {
        nv_versioned_u32 m = {NV_VERSIONED_U32_V1, 0};
        int rc = NV_T("nvmlDeviceGetVgpuHeterogeneousMode", st->vgpu_hetero(dev, &m));
        rc = nv_bounded(rc, m.mode, 1);
        read_put(ng, out, p, GM_M_VGPU_HETERO_MODE, NV_STATIC, rc,
                 "nvmlDeviceGetVgpuHeterogeneousMode", m.mode);
    }
    if (!p->lost && st->bridge && read_due(ng, GM_M_BRIDGE_CHIP_TYPE, 2, NV_STATIC, due)) {
        nv_bridge_hierarchy h;
        memset(&h, 0, sizeof h);
        int rc = NV_T("nvmlDeviceGetBridgeChipInfo", st->bridge(dev, &h));
        /* A board without a bridge has none to tell of. */
        if (rc == NV_SUCCESS && h.bridgeCount == 0)
            rc = NV_ERROR_NOT_SUPPORTED;
        const char *fn = "nvmlDeviceGetBridgeChipInfo";
        read_put(ng, out, p, GM_M_BRIDGE_CHIP_TYPE, NV_STATIC, rc, fn, h.bridgeChipInfo[0].type);
        read_put(ng, out, p, GM_M_BRIDGE_CHIP_FW, NV_STATIC, rc, fn, h.bridgeChipInfo[0].fwVersion);
    }
    if (!p->lost && st->fbc && read_due(ng, GM_M_FBC_SESSIONS, 3, NV_SLOW, due)) {
        nv_fbc_stats f = {0, 0, 0};
        int rc = NV_T("nvmlDeviceGetFBCStats", st->fbc(dev, &f));
        const char *fn = "nvmlDeviceGetFBCStats";
        read_put(ng, out, p, GM_M_FBC_SESSIONS, NV_SLOW, rc, fn, f.sessionsCount);
        read_put(ng, out, p, GM_M_FBC_FPS, NV_SLOW, rc, fn, f.averageFPS);
        read_put(ng, out, p, GM_M_FBC_LATENCY_US, NV_SLOW, rc, fn, f.averageLatency);
    }
    if (!p->lost && st->dram_enc && read_due(ng, GM_M_DRAM_ENC_CUR, 2, NV_STATIC, due)) {
        nv_versioned_u32 cur = {NV_VERSIONED_U32_V1, 0}, pend = {NV_VERSIONED_U32_V1, 0};
        int rc = NV_T("nvmlDeviceGetDramEncryptionMode", st->dram_enc(dev, &cur, &pend));
        rc = nv_bounded(nv_bounded(rc, cur.mode, 1), pend.mode, 1);
        const char *fn = "nvmlDeviceGetDramEncryptionMode";
        read_put(ng, out, p, GM_M_DRAM_ENC_CUR, NV_STATIC, rc, fn, cur.mode);
        read_put(ng, out, p, GM_M_DRAM_ENC_PENDING, NV_STATIC, rc, fn, pend.mode);
    }
    if (!p->lost && st->repair && read_due(ng, GM_M_REPAIR_CHANNEL_PENDING, 2, NV_SLOW, due)) {
        nv_repair_status r = {NV_REPAIR_STATUS_V1, 0, 0};
        int rc = NV_T("nvmlDeviceGetRepairStatus", st->repair(dev, &r));
        const char *fn = "nvmlDeviceGetRepairStatus";
        read_put(ng, out, p, GM_M_REPAIR_CHANNEL_PENDING, NV_SLOW, rc, fn,
                 r.bChannelRepairPending != 0);
        read_put(ng, out, p, GM_M_REPAIR_TPC_PENDING, NV_SLOW, rc, fn, r.bTpcRepairPending != 0);
    }
    if (!p->lost && st->unrepairable && read_due(ng, GM_M_UNREPAIRABLE_MEMORY, 1, NV_SLOW, due)) {
        unsigned v = 0;
        int rc = NV_T("nvmlDeviceGetUnrepairableMemoryFlag_v1", st->unrepairable(dev, &v));
        read_put(ng, out, p, GM_M_UNREPAIRABLE_MEMORY, NV_SLOW, rc,
                 "nvmlDeviceGetUnrepairableMemoryFlag_v1", v != 0);
    }
    if (!p->lost && st->power_profiles &&
        read_due(ng, GM_M_POWER_PROFILES_REQUESTED, 2, NV_STATIC, due)) {
        nv_power_profiles pp;
        memset(&pp, 0, sizeof pp);
        pp.version = NV_POWER_PROFILES_V1;
        int rc =
            NV_T("nvmlDeviceWorkloadPowerProfileGetCurrentProfiles", st->power_profiles(dev, &pp));
        const char *fn = "nvmlDeviceWorkloadPowerProfileGetCurrentProfiles";
        read_put(ng, out, p, GM_M_POWER_PROFILES_REQUESTED, NV_STATIC, rc, fn,
                 pp.requestedProfilesMask[0]);
        read_put(ng, out, p, GM_M_POWER_PROFILES_ENFORCED, NV_STATIC, rc, fn,
                 pp.enforcedProfilesMask[0]);
    }
    if (!p->lost && st->auto_boost && read_due(ng, GM_M_AUTO_BOOST, 2, NV_STATIC, due)) {
        unsigned on = 0, def = 0;
        int rc = NV_T("nvmlDeviceGetAutoBoostedClocksEnabled", st->auto_boost(dev, &on, &def));
        rc = nv_bounded(nv_bounded(rc, on, 1), def, 1);
        const char *fn = "nvmlDeviceGetAutoBoostedClocksEnabled";
        read_put(ng, out, p, GM_M_AUTO_BOOST, NV_STATIC, rc, fn, on);
        read_put(ng, out, p, GM_M_AUTO_BOOST_DEFAULT, NV_STATIC, rc, fn, def);
    }
    if (!p->lost && st->capabilities && read_due(ng, GM_M_EGM, 1, NV_STATIC, due)) {
        nv_versioned_u32 caps = {NV_VERSIONED_U32_V1, 0};
        int rc = NV_T("nvmlDeviceGetCapabilities", st->capabilities(dev, &caps));
        /* NVML_DEV_CAP_EGM, bit 0 */
        read_put(ng, out, p, GM_M_EGM, NV_STATIC, rc, "nvmlDeviceGetCapabilities", caps.mode & 1u);
    }
}

/* The ECC error counters (the slow period). They mean nothing with ECC off (nvidia-smi prints
 * [N/A] then): neither asked nor served then. Returns whether ECC is off. */
static bool read_ecc(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due)
{
    nvmlDevice_t dev = ng->dev;
    bool ecc_off = gm_gpu_has(out, GM_M_ECC_MODE_CUR) && out->v[GM_M_ECC_MODE_CUR] == 0;
    for (size_t i = 0; i < NV_N_ECC && ecc_off; i++)
        gm_gpu_unset(out, ecc_metrics[i].m); /* nor served from before it was turned off */
    for (int k = 0; k < 10 && ecc_off; k++)
        gm_gpu_unset(out, (gm_metric)(GM_M_SRAM_UNCORR_VOL_PARITY + k));
    for (size_t i = 0; i < NV_N_ECC && !p->lost && !ecc_off; i++) {
        gm_metric m = ecc_metrics[i].m;
        bool total = ecc_metrics[i].location < 0;
        if ((total ? !st->ecc_total : !st->ecc_loc) || !read_due(ng, m, 1, NV_SLOW, due))
            continue;
        unsigned long long n = 0;
        int rc = total ? NV_T("nvmlDeviceGetTotalEccErrors",
                              st->ecc_total(dev, ecc_metrics[i].type, ecc_metrics[i].counter, &n))
                       : NV_T("nvmlDeviceGetMemoryErrorCounter",
                              st->ecc_loc(dev, ecc_metrics[i].type, ecc_metrics[i].counter,
                                          ecc_metrics[i].location, &n));
        read_put(ng, out, p, m, NV_SLOW, rc,
                 total ? "nvmlDeviceGetTotalEccErrors" : "nvmlDeviceGetMemoryErrorCounter",
                 (double)n);
    }
    return ecc_off;
}

/* Memory retirement: pages retired by cause and pending, rows remapped and the remapper's
 * spare-row histogram (the slow period). */
static void read_retirement(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due)
{
    nvmlDevice_t dev = ng->dev;
    if (!p->lost && (st->retired_v2 || st->retired_v1)) {
        static const gm_metric by_cause[2] = {GM_M_RETIRED_SBE, GM_M_RETIRED_DBE};
        for (int cause = 0; cause < 2 && !p->lost; cause++)
            if (read_due(ng, by_cause[cause], 1, NV_SLOW, due)) {
                unsigned pages = 0;
                int rc = retired_count(st, dev, cause, &pages);
                read_put(ng, out, p, by_cause[cause], NV_SLOW, rc, "nvmlDeviceGetRetiredPages",
                         pages);
            }
    }
    if (!p->lost && st->retired_pending && read_due(ng, GM_M_RETIRED_PENDING, 1, NV_SLOW, due)) {
        unsigned pending = 0;
        int rc = NV_T("nvmlDeviceGetRetiredPagesPendingStatus", st->retired_pending(dev, &pending));
        read_put(ng, out, p, GM_M_RETIRED_PENDING, NV_SLOW, rc,
                 "nvmlDeviceGetRetiredPagesPendingStatus", pending != 0);
    }
    if (!p->lost && st->remapped && read_due(ng, GM_M_REMAP_CORR, 4, NV_SLOW, due)) {
        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        const char *fn = "nvmlDeviceGetRemappedRows";
        int rc = NV_T(fn, st->remapped(dev, &corr, &unc, &pending, &failure));
        read_put(ng, out, p, GM_M_REMAP_CORR, NV_SLOW, rc, fn, corr);
        read_put(ng, out, p, GM_M_REMAP_UNCORR, NV_SLOW, rc, fn, unc);
        read_put(ng, out, p, GM_M_REMAP_PENDING, NV_SLOW, rc, fn, pending != 0);
        read_put(ng, out, p, GM_M_REMAP_FAILURE, NV_SLOW, rc, fn, failure != 0);
    }
    if (!p->lost && st->histogram && read_due(ng, GM_M_REMAP_HIST_MAX, 5, NV_SLOW, due)) {
        nv_remap_histogram h;
        memset(&h, 0, sizeof h);
        int rc = NV_T("nvmlDeviceGetRowRemapperHistogram", st->histogram(dev, &h));
        const char *fn = "nvmlDeviceGetRowRemapperHistogram";
        read_put(ng, out, p, GM_M_REMAP_HIST_MAX, NV_SLOW, rc, fn, h.max);
        read_put(ng, out, p, GM_M_REMAP_HIST_HIGH, NV_SLOW, rc, fn, h.high);
        read_put(ng, out, p, GM_M_REMAP_HIST_PARTIAL, NV_SLOW, rc, fn, h.partial);
        read_put(ng, out, p, GM_M_REMAP_HIST_LOW, NV_SLOW, rc, fn, h.low);
        read_put(ng, out, p, GM_M_REMAP_HIST_NONE, NV_SLOW, rc, fn, h.none);
    }
}

/* How many NVLink links are active (the slow period). */
static void read_nvlink(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due)
{
    nvmlDevice_t dev = ng->dev;
    if (!p->lost && st->link_state && read_due(ng, GM_M_NVLINK_ACTIVE, 1, NV_SLOW, due)) {
        /* Links answer until the index passes the GPU's last one. */
        unsigned links = 0, active = 0;
        int rc = NV_ERROR_NOT_SUPPORTED;
        for (unsigned l = 0; l < NV_NVLINK_MAX; l++) {
            unsigned on = 0;
            int lrc = NV_T("nvmlDeviceGetNvLinkState", st->link_state(dev, l, &on));
            if (lrc == NV_ERROR_GPU_IS_LOST)
                rc = lrc;
            if (lrc != NV_SUCCESS)
                break;
            links++;
            active += on == 1;
        }
        if (links > 0)
            rc = NV_SUCCESS;
        read_put(ng, out, p, GM_M_NVLINK_ACTIVE, NV_SLOW, rc, "nvmlDeviceGetNvLinkState", active);
    }
}

/* The health and configuration metrics (see the tables above for cadences). */
static void read_health(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, const bool *due)
{
    nvmlDevice_t dev = ng->dev;
    for (size_t i = 0; i < NV_N_CODEC && !p->lost; i++)
        if (st->codec[i] && read_due(ng, codec_metrics[i].m, 1, NV_EVERY, due)) {
            unsigned pct = 0, period_us = 0;
            int rc = NV_T(codec_metrics[i].sym, st->codec[i](dev, &pct, &period_us));
            read_put(ng, out, p, codec_metrics[i].m, NV_EVERY, rc, codec_metrics[i].sym, pct);
        }
    for (size_t i = 0; i < NV_N_PAIR && !p->lost; i++) {
        enum nv_cadence cad = pair_metrics[i].cadence;
        if (!st->pair[i] || !read_due(ng, pair_metrics[i].a, 1, cad, due))
            continue;
        unsigned first = 0,
                 second = 0; /* current and pending, min and max, ... (the table's a, b) */
        int rc = NV_T(pair_metrics[i].sym, st->pair[i](dev, &first, &second));
        unsigned max = pair_metrics[i].max;
        if (rc == NV_SUCCESS && max && (first > max || second > max))
            rc = NV_ERROR_NOT_SUPPORTED; /* an enable state NVML does not define */
        read_put(ng, out, p, pair_metrics[i].a, cad, rc, pair_metrics[i].sym, first);
        read_put(ng, out, p, pair_metrics[i].b, cad, rc, pair_metrics[i].sym, second);
    }
    if (!p->lost && st->compute_cap && read_due(ng, GM_M_COMPUTE_CAP, 1, NV_STATIC, due)) {
        int major = 0, minor = 0;
        int rc = NV_T("nvmlDeviceGetCudaComputeCapability", st->compute_cap(dev, &major, &minor));
        if (rc == NV_SUCCESS && (major < 0 || minor < 0 || minor > 9))
            rc = NV_ERROR_NOT_SUPPORTED;
        read_put(ng, out, p, GM_M_COMPUTE_CAP, NV_STATIC, rc, "nvmlDeviceGetCudaComputeCapability",
                 major * 10 + minor);
    }
    if (!p->lost && st->margin_temp && read_due(ng, GM_M_TEMP_TLIMIT_C, 1, NV_EVERY, due)) {
        nv_margin_temp mt = {NV_MARGIN_TEMP_V1, 0};
        int rc = NV_T("nvmlDeviceGetMarginTemperature", st->margin_temp(dev, &mt));
        read_put(ng, out, p, GM_M_TEMP_TLIMIT_C, NV_EVERY, rc, "nvmlDeviceGetMarginTemperature",
                 mt.marginTemperature);
    }
    if (!p->lost && st->enc_stats && read_due(ng, GM_M_ENC_SESSIONS, 3, NV_SLOW, due)) {
        unsigned sessions = 0, fps = 0, latency_us = 0;
        const char *fn = "nvmlDeviceGetEncoderStats";
        int rc = NV_T(fn, st->enc_stats(dev, &sessions, &fps, &latency_us));
        read_put(ng, out, p, GM_M_ENC_SESSIONS, NV_SLOW, rc, fn, sessions);
        read_put(ng, out, p, GM_M_ENC_FPS, NV_SLOW, rc, fn, fps);
        read_put(ng, out, p, GM_M_ENC_LATENCY_US, NV_SLOW, rc, fn, latency_us);
    }
    bool ecc_off = read_ecc(st, ng, out, p, due);
    if (!p->lost)
        read_retirement(st, ng, out, p, due);
    if (!p->lost)
        read_modes(st, ng, out, p, due, ecc_off);
    if (!p->lost)
        read_board(st, ng, out, p, due);
    if (!p->lost)
        read_smi_extra(st, ng, out, p, due);
    if (!p->lost && st->fields) {
        read_fields(st, ng, out, p, due, false);
        if (!p->lost)
            read_fields(st, ng, out, p, due, true);
    }
    if (!p->lost)
        read_nvlink(st, ng, out, p, due);
    if (!p->lost)
        read_gpm(st, ng, out, p);
}

/* Reads every metric of one GPU into out; stops at the first GPU_IS_LOST. Getters of the
 * NV_STATIC and NV_SLOW classes are called only when due and served from the cache otherwise. */
static void read_metrics(nv_state *st, nv_gpu *ng, gm_gpu *out, nv_pass *p, int64_t now)
{
    nvmlDevice_t dev = ng->dev;
    bool due[3] = {true, !ng->cache_primed || now - ng->static_ms >= NV_STATIC_MS,
                   !ng->cache_primed || now - ng->slow_ms >= st->slow_period_ms};
    cache_serve(ng, out);
    /* Utilisation first: it is the call a fallen GPU answers with GPU_IS_LOST soonest. */
    if (st->util && nv_wants_n(ng, GM_M_UTIL_GPU_PCT, 2)) {
        nv_utilization u;
        if (pass_record_ok(p, NV_T("nvmlDeviceGetUtilizationRates", st->util(dev, &u)),
                           "nvmlDeviceGetUtilizationRates")) {
            gm_gpu_set(out, GM_M_UTIL_GPU_PCT, u.gpu);
            gm_gpu_set(out, GM_M_UTIL_MEM_PCT, u.memory);
        }
    }
    unsigned enc_pct, enc_period_us, dec_pct, dec_period_us;
    if (!p->lost && st->enc && nv_wants(ng, GM_M_UTIL_ENC_PCT) &&
        pass_record_ok(
            p, NV_T("nvmlDeviceGetEncoderUtilization", st->enc(dev, &enc_pct, &enc_period_us)),
            "nvmlDeviceGetEncoderUtilization"))
        gm_gpu_set(out, GM_M_UTIL_ENC_PCT, enc_pct);
    if (!p->lost && st->dec && nv_wants(ng, GM_M_UTIL_DEC_PCT) &&
        pass_record_ok(
            p, NV_T("nvmlDeviceGetDecoderUtilization", st->dec(dev, &dec_pct, &dec_period_us)),
            "nvmlDeviceGetDecoderUtilization"))
        gm_gpu_set(out, GM_M_UTIL_DEC_PCT, dec_pct);
    if (!p->lost && nv_wants_n(ng, GM_M_MEM_TOTAL_BYTES, 4))
        read_memory(st, dev, out, p);
    for (size_t i = 0; i < NV_N_ARG && !p->lost; i++) {
        gm_metric m = arg_metrics[i].m;
        const char *fn = arg_metrics[i].sym;
        if (!st->arg[i] || !read_due(ng, m, 1, arg_metrics[i].cadence, due))
            continue;
        unsigned v = 0;
        int rc = NV_T(fn, st->arg[i](dev, arg_metrics[i].arg, &v));
        read_put(ng, out, p, m, arg_metrics[i].cadence, rc, fn, v);
    }
    for (size_t i = 0; i < NV_N_U32 && !p->lost; i++) {
        gm_metric m = u32_metrics[i].m;
        const char *fn = u32_metrics[i].sym;
        if (!st->u32[i] || !read_due(ng, m, 1, u32_metrics[i].cadence, due))
            continue;
        unsigned v = 0;
        int rc = NV_T(fn, st->u32[i](dev, &v));
        unsigned max = u32_metrics[i].max; /* past it: a value this build does not know */
        read_put(ng, out, p, m, u32_metrics[i].cadence, rc, fn, max && v > max ? NAN : v);
    }
    for (size_t i = 0; i < NV_N_U64 && !p->lost; i++) {
        gm_metric m = u64_metrics[i].m;
        const char *fn = u64_metrics[i].sym[0];
        if (!st->u64[i] || !read_due(ng, m, 1, u64_metrics[i].cadence, due))
            continue;
        unsigned long long v = 0;
        int rc = NV_T(fn, st->u64[i](dev, &v));
        read_put(ng, out, p, m, u64_metrics[i].cadence, rc, fn, (double)v);
    }
    if (!p->lost)
        read_health(st, ng, out, p, due);
    if (p->lost) {
        ng->cache_primed = false;
        return;
    }
    if (due[NV_STATIC])
        ng->static_ms = now;
    if (due[NV_SLOW])
        ng->slow_ms = now;
    ng->cache_primed = true;
}

/* The profile of a MIG device from its name: NVML names it "<GPU name> MIG 1g.10gb". */
static void mig_profile(char *dst, size_t cap, const char *name)
{
    const char *p = NULL;
    for (const char *q = strstr(name, "MIG "); q; q = strstr(q + 1, "MIG "))
        if (q == name || q[-1] == ' ')
            p = q + 4;
    gm_str_copy(dst, cap, p ? p : "");
}

/* Lists the MIG devices of a GPU in MIG mode: handle, UUID, profile, instance ids. */
static void list_mig(nv_state *st, nv_gpu *ng, int64_t now)
{
    ng->mig_listed = true;
    ng->mig_ms = now;
    ng->mig_count = 0;
    unsigned max = 0;
    if (!st->mig_max || !st->mig_by_index || !st->gi_id || !st->ci_id ||
        NV_T("nvmlDeviceGetMaxMigDeviceCount", st->mig_max(ng->dev, &max)) != NV_SUCCESS)
        return;
    for (unsigned i = 0; i < max && ng->mig_count < GM_MAX_MIG; i++) {
        nvmlDevice_t md = NULL;
        unsigned gi, ci;
        /* NOT_FOUND: no MIG device at this index. */
        if (NV_T("nvmlDeviceGetMigDeviceHandleByIndex", st->mig_by_index(ng->dev, i, &md)) !=
                NV_SUCCESS ||
            NV_T("nvmlDeviceGetGpuInstanceId", st->gi_id(md, &gi)) != NV_SUCCESS ||
            NV_T("nvmlDeviceGetComputeInstanceId", st->ci_id(md, &ci)) != NV_SUCCESS)
            continue;
        gm_mig_device *m = &ng->mig[ng->mig_count];
        memset(m, 0, sizeof *m);
        m->gpu_instance_id = gi;
        m->compute_instance_id = ci;
        char uuid[NV_ID_BUF_LEN], name[NV_ID_BUF_LEN];
        if (st->uuid && NV_T("nvmlDeviceGetUUID", st->uuid(md, uuid, sizeof uuid)) == NV_SUCCESS)
            gm_str_copy(m->uuid, sizeof m->uuid, uuid);
        if (NV_T("nvmlDeviceGetName", st->name(md, name, sizeof name)) == NV_SUCCESS) {
            name[sizeof name - 1] = '\0';
            mig_profile(m->profile, sizeof m->profile, name);
        }
        ng->mig_dev[ng->mig_count++] = md;
    }
}

/* GPM metrics read per GPU instance, into gm_mig_device.prof_pct. */
static const struct {
    unsigned id; /* NVML_GPM_METRIC_* */
    enum gm_mig_prof k;
} mig_gpm_metrics[] = {
    {2, GM_MIG_PROF_SM_ACTIVE}, /* SM_UTIL */
    {10, GM_MIG_PROF_DRAM},     /* DRAM_BW_UTIL */
    {5, GM_MIG_PROF_TENSOR},    /* ANY_TENSOR_UTIL */
};
#define NV_N_MIG_GPM (sizeof mig_gpm_metrics / sizeof *mig_gpm_metrics)

/* The GPM slot of GPU instance gi, made when new. Instances come and go: when every slot is
 * taken, they are all started afresh (their samples are kept for reuse). */
static int mig_gpm_slot(nv_gpu *ng, unsigned gi)
{
    for (unsigned j = 0; j < ng->mig_gpm_n; j++)
        if (ng->mig_gpm[j].gi == gi)
            return (int)j;
    if (ng->mig_gpm_n >= GM_MAX_MIG)
        ng->mig_gpm_n = 0;
    unsigned j = ng->mig_gpm_n++;
    ng->mig_gpm[j].gi = gi;
    ng->mig_gpm[j].prev = false;
    return (int)j;
}

/* GPM activity of each GPU instance of ng since the previous pass: per instance one sample
 * and one metrics call (3 metrics), whatever the number of its compute instances. The first
 * pass only takes samples; a driver that refuses GPM per instance is not asked again. */
static void read_mig_gpm(nv_state *st, nv_gpu *ng, gm_gpu *out)
{
    if (!st->gpm_alloc || !st->gpm_mig_get || ng->mig_gpm_state < 0 || out->mig_count == 0)
        return;
    if (!nv_wants(ng, GM_M_PROF_SM_ACTIVE_PCT) && !nv_wants(ng, GM_M_PROF_DRAM_PCT) &&
        !nv_wants(ng, GM_M_PROF_TENSOR_PCT))
        return;
    if (ng->mig_gpm_state == 0) {
        nv_gpm_support sup = {.version = 1};
        ng->mig_gpm_state = -1;
        if (NV_T("nvmlGpmQueryDeviceSupport", st->gpm_support(ng->dev, &sup)) != NV_SUCCESS ||
            !sup.isSupportedDevice)
            return;
        if (!st->gpm_buf && !(st->gpm_buf = malloc(sizeof *st->gpm_buf)))
            return;
        ng->mig_gpm_state = 1;
    }
    for (unsigned k = 0; k < out->mig_count; k++) {
        unsigned gi = out->mig[k].gpu_instance_id;
        bool done = false; /* compute instances of one GPU instance share its reading */
        for (unsigned j = 0; j < k && !done; j++)
            if (out->mig[j].gpu_instance_id == gi) {
                out->mig[k].prof_valid = out->mig[j].prof_valid;
                memcpy(out->mig[k].prof_pct, out->mig[j].prof_pct, sizeof out->mig[k].prof_pct);
                done = true;
            }
        int slot = done ? -1 : mig_gpm_slot(ng, gi);
        if (slot < 0)
            continue;
        nv_mig_gpm *g = &ng->mig_gpm[slot];
        if ((!g->s[0] && st->gpm_alloc(&g->s[0]) != NV_SUCCESS) ||
            (!g->s[1] && st->gpm_alloc(&g->s[1]) != NV_SUCCESS))
            continue;
        int rc = NV_T("nvmlGpmMigSampleGet", st->gpm_mig_get(ng->dev, gi, g->s[g->cur]));
        if (rc == NV_ERROR_NOT_SUPPORTED || rc == NV_ERROR_FUNCTION_NOT_FOUND) {
            ng->mig_gpm_state = -1;
            return;
        }
        if (rc != NV_SUCCESS) {
            g->prev = false; /* the instance may be gone; its next sample starts afresh */
            continue;
        }
        if (g->prev) {
            nv_gpm_metrics_get *q = st->gpm_buf;
            memset(q, 0,
                   offsetof(nv_gpm_metrics_get, metrics) + NV_N_MIG_GPM * sizeof q->metrics[0]);
            q->version = 1;
            q->numMetrics = NV_N_MIG_GPM;
            q->sample1 = g->s[1 - g->cur];
            q->sample2 = g->s[g->cur];
            for (size_t i = 0; i < NV_N_MIG_GPM; i++)
                q->metrics[i].metricId = mig_gpm_metrics[i].id;
            if (NV_T("nvmlGpmMetricsGet", st->gpm_metrics(q)) == NV_SUCCESS)
                for (size_t i = 0; i < NV_N_MIG_GPM; i++)
                    if (q->metrics[i].nvmlReturn == NV_SUCCESS && isfinite(q->metrics[i].value)) {
                        out->mig[k].prof_pct[mig_gpm_metrics[i].k] = q->metrics[i].value;
                        out->mig[k].prof_valid |= (uint8_t)(1u << mig_gpm_metrics[i].k);
                    }
        }
        g->prev = true;
        g->cur = 1 - g->cur;
    }
}

/* The MIG devices of a GPU in MIG mode, with their memory read now. */
static void read_mig(nv_state *st, nv_gpu *ng, gm_gpu *out, int64_t now)
{
    bool mig_mode = gm_gpu_has(out, GM_M_MIG_MODE_CUR) && out->v[GM_M_MIG_MODE_CUR] == 1;
    if (!mig_mode) {
        ng->mig_listed = false;
        ng->mig_count = 0;
        return;
    }
    /* Instances are made and destroyed without a driver reload: listed again now and then. */
    if (!ng->mig_listed || now - ng->mig_ms >= NV_STATIC_MS)
        list_mig(st, ng, now);
    out->mig_count = ng->mig_count;
    for (unsigned k = 0; k < ng->mig_count; k++) {
        gm_mig_device *m = &out->mig[k];
        *m = ng->mig[k];
        nvmlDevice_t md = ng->mig_dev[k];
        int rc = NV_ERROR_NOT_SUPPORTED;
        if (st->mem2) {
            nv_memory_v2 mm;
            memset(&mm, 0, sizeof mm);
            mm.version = NV_MEMORY_V2_VERSION;
            rc = NV_T("nvmlDeviceGetMemoryInfo_v2", st->mem2(md, &mm));
            if (rc == NV_SUCCESS) {
                m->mem_valid = true;
                m->mem_total_bytes = mm.total;
                m->mem_used_bytes = mm.used;
                m->mem_free_bytes = mm.free;
                continue;
            }
        }
        nv_memory_v1 m1;
        memset(&m1, 0, sizeof m1);
        if (st->mem1 && rc != NV_ERROR_INVALID_ARGUMENT && rc != NV_ERROR_NOT_FOUND)
            rc = NV_T("nvmlDeviceGetMemoryInfo", st->mem1(md, &m1));
        if (rc == NV_SUCCESS) {
            m->mem_valid = true;
            m->mem_total_bytes = m1.total;
            m->mem_used_bytes = m1.used;
            m->mem_free_bytes = m1.free;
        } else if (rc == NV_ERROR_INVALID_ARGUMENT || rc == NV_ERROR_NOT_FOUND) {
            ng->mig_listed = false; /* the instance is gone: list them again next sample */
        }
    }
    read_mig_gpm(st, ng, out);
}

static void put_identity(gm_gpu *g, const nv_gpu *ng)
{
    gm_str_copy(g->name, sizeof g->name, ng->name);
    gm_str_copy(g->uuid, sizeof g->uuid, ng->uuid);
    gm_str_copy(g->pci_bus_id, sizeof g->pci_bus_id, ng->bus_id);
    gm_str_copy(g->serial, sizeof g->serial, ng->serial);
    gm_str_copy(g->vbios, sizeof g->vbios, ng->vbios);
    for (int k = 0; k < GM_INFOROM__COUNT; k++)
        gm_str_copy(g->inforom[k], GM_INFOROM_LEN, ng->inforom[k]);
    gm_str_copy(g->board_part_number, sizeof g->board_part_number, ng->board_part);
    gm_str_copy(g->gsp_firmware_version, sizeof g->gsp_firmware_version, ng->gsp_version);
    gm_str_copy(g->pdi, sizeof g->pdi, ng->pdi);
}

/* What the driver told at open and the XID watcher since: reported with the readings. */
static void put_static(nv_state *st, gm_gpu *g, nv_gpu *ng)
{
    if (ng->pci_device_id)
        gm_gpu_set(g, GM_M_PCI_DEVICE_ID, ng->pci_device_id);
    if (ng->pci_subsys_id)
        gm_gpu_set(g, GM_M_PCI_SUBSYS_ID, ng->pci_subsys_id);
    if (ng->pci_class_known) {
        gm_gpu_set(g, GM_M_PCI_BASE_CLASS, ng->pci_base_class);
        gm_gpu_set(g, GM_M_PCI_SUB_CLASS, ng->pci_sub_class);
    }
    gm_str_copy(g->fabric_cluster_uuid, sizeof g->fabric_cluster_uuid, ng->fabric_uuid);
    gm_str_copy(g->fabric_status, sizeof g->fabric_status, ng->fabric_status);
    if (!ng->xid_watched)
        return;
    /* Watching and nothing seen is a reading: no XID since gpumon started (0, as DCGM). */
    gm_gpu_set(g, GM_M_XID_LAST, (double)ng->xid_last);
    gm_gpu_set(g, GM_M_XID_COUNT, (double)ng->xid_count);
    if (ng->xid_time_ms)
        gm_gpu_set(g, GM_M_XID_TIME_MS, (double)ng->xid_time_ms);
}

/* Asks a lost GPU again: a fresh handle, then identity. True when it answers. */
static bool reprobe(nv_state *st, unsigned i)
{
    nv_gpu *g = &st->gpus[i];
    nvmlDevice_t dev = NULL;
    if (NV_T(st->handle_sym, st->handle(i, &dev)) != NV_SUCCESS)
        return false;
    g->dev = dev;
    return read_identity(st, g) == NV_SUCCESS;
}

/* Fills out with every GPU (lost ones by identity only), versions and, when want_procs, the
 * processes. GM_OK unless every GPU failed for a reason other than being lost. */
static int nvml_sample(void *state, gm_snapshot *out, bool want_procs, gm_error *err)
{
    nv_state *st = state;
    gm_str_copy(out->driver_version, sizeof out->driver_version, st->driver_version);
    gm_str_copy(out->nvml_version, sizeof out->nvml_version, st->nvml_version);
    gm_str_copy(out->cuda_version, sizeof out->cuda_version, st->cuda_version);
    out->gpu_count = st->gpu_count;

    int64_t now = gm_clock_mono_ms();
    unsigned n_ok = 0, n_lost = 0, n_failed = 0;
    int first_rc = NV_SUCCESS;
    const char *first_fn = NULL;
    unsigned first_gpu = 0;
    for (unsigned i = 0; i < st->gpu_count; i++) {
        nv_gpu *ng = &st->gpus[i];
        gm_gpu *g = &out->gpus[i];
        g->index = i;
        put_identity(g, ng);
        if (ng->lost) {
            bool due = now - ng->lost_ms >= NV_REPROBE_MS;
            if (!due || !reprobe(st, i)) {
                if (due)
                    ng->lost_ms = now;
                g->lost = true;
                n_lost++;
                continue;
            }
            put_identity(g, ng); /* the re-probe may have filled what open could not read */
        }

        nv_pass p = {0};
        size_t proc_start = out->proc_count;
        read_metrics(st, ng, g, &p, now);
        if (!p.lost)
            read_mig(st, ng, g, now);
        if (want_procs && !p.lost)
            gm_nvml_procs_read(&st->procs, &ng->procs, i, ng->dev, out, proc_start, &p);
        if (p.lost) {
            ng->lost = true;
            ng->lost_ms = now;
            g->lost = true;
            gm_gpu_clear(g);
            g->mig_count = 0;
            out->proc_count = proc_start; /* what was listed belongs to a GPU now gone */
            n_lost++;
            continue;
        }
        ng->lost = false;
        if (p.any_ok)
            put_static(st, g, ng);
        if (!p.any_ok && p.hard_rc != NV_SUCCESS) {
            /* Failed alone: reported lost for this sample, tried again next time. */
            g->lost = true;
            n_failed++;
            if (first_rc == NV_SUCCESS) {
                first_rc = p.hard_rc;
                first_fn = p.hard_fn;
                first_gpu = i;
            }
            continue;
        }
        n_ok++;
    }
    events_drain(st, now); /* the XIDs since the last drain, in the next sample */
    if (n_ok == 0 && n_lost == 0 && n_failed > 0)
        return gm_error_set(err, nv_to_gm(first_rc), "%s failed for GPU %u: %s (%d)", first_fn,
                            first_gpu, nv_strerror(st, first_rc), first_rc);
    return GM_OK;
}

/* The UUID of the GPU a MIG device (named by its own UUID, "MIG-...") is part of: NVML
 * finds the device by its UUID and gives its parent (drivers R470 and later). */
static int nvml_mig_parent(void *state, const char *mig_uuid, char *uuid, size_t cap, gm_error *err)
{
    nv_state *st = state;
    if (!st->handle_by_uuid || !st->mig_parent || !st->uuid)
        return gm_error_set(err, GM_ENOTSUP, "%s cannot place MIG devices", st->path);
    nvmlDevice_t mig, parent;
    int rc = st->handle_by_uuid(mig_uuid, &mig);
    if (rc == NV_SUCCESS)
        rc = st->mig_parent(mig, &parent);
    char buf[GM_UUID_LEN];
    if (rc == NV_SUCCESS)
        rc = st->uuid(parent, buf, sizeof buf);
    if (rc != NV_SUCCESS)
        return nv_fail(st, err, rc, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
    gm_str_copy(uuid, cap, buf);
    return GM_OK;
}

/* P2P status of GPUs a and b for one capability. GM_ENOTSUP when the library lacks the query. */
static int nvml_p2p(void *state, unsigned a, unsigned b, gm_p2p_cap cap, gm_p2p_status *out,
                    gm_error *err)
{
    nv_state *st = state;
    if (!st->p2p)
        return gm_error_set(err, GM_ENOTSUP, "%s does not export nvmlDeviceGetP2PStatus", st->path);
    if (a >= st->gpu_count || b >= st->gpu_count || (unsigned)cap >= GM_P2P__COUNT)
        return gm_error_set(err, GM_EINVAL, "no P2P query for GPUs %u and %u (capability %d)", a, b,
                            (int)cap);
    if (!st->gpus[a].dev || !st->gpus[b].dev || st->gpus[a].lost || st->gpus[b].lost)
        return gm_error_set(err, GM_ELOST, "GPU %u is lost", st->gpus[a].lost ? a : b);
    int status = GM_P2P_UNKNOWN;
    int rc = st->p2p(st->gpus[a].dev, st->gpus[b].dev, (int)cap, &status);
    if (rc != NV_SUCCESS)
        return nv_fail(st, err, rc, "nvmlDeviceGetP2PStatus");
    *out = status >= GM_P2P_OK && status <= GM_P2P_UNKNOWN ? (gm_p2p_status)status : GM_P2P_UNKNOWN;
    return GM_OK;
}

static int nvml_retired_pages(void *state, unsigned gpu, int cause, uint64_t *addr, uint64_t *when,
                              size_t cap, size_t *n, gm_error *err)
{
    nv_state *st = state;
    if (!st->retired_v2 && !st->retired_v1)
        return gm_error_set(err, GM_ENOTSUP, "%s does not export nvmlDeviceGetRetiredPages",
                            st->path);
    if (gpu >= st->gpu_count || !st->gpus[gpu].dev || st->gpus[gpu].lost)
        return gm_error_set(err, GM_ELOST, "GPU %u is lost", gpu);
    nvmlDevice_t dev = st->gpus[gpu].dev;
    unsigned count = 0;
    int rc = retired_count(st, dev, cause, &count);
    if (rc != NV_SUCCESS)
        return nv_fail(st, err, rc, "nvmlDeviceGetRetiredPages");
    *n = count;
    if (count == 0 || cap == 0)
        return GM_OK;
    /* The list may grow between the calls: ask for a little more than counted. */
    unsigned want = count + 8;
    unsigned long long *a = calloc(want, sizeof *a), *t = calloc(want, sizeof *t);
    if (!a || !t) {
        free(a);
        free(t);
        return gm_error_set(err, GM_ENOMEM, "out of memory");
    }
    unsigned got = want;
    rc = st->retired_v2 ? st->retired_v2(dev, cause, &got, a, t)
                        : st->retired_v1(dev, cause, &got, a);
    if (rc == NV_SUCCESS) {
        *n = got;
        for (unsigned k = 0; k < got && k < cap; k++) {
            addr[k] = a[k];
            when[k] = st->retired_v2 ? t[k] : 0;
        }
    }
    free(a);
    free(t);
    return rc == NV_SUCCESS ? GM_OK : nv_fail(st, err, rc, "nvmlDeviceGetRetiredPages");
}

/* The board's clock table (static): asked when a client wants it, not per sample. */
static int nvml_supported_clocks(void *state, unsigned gpu, unsigned mem_mhz, unsigned *mhz,
                                 size_t cap, size_t *n, gm_error *err)
{
    nv_state *st = state;
    const char *fn =
        mem_mhz ? "nvmlDeviceGetSupportedGraphicsClocks" : "nvmlDeviceGetSupportedMemoryClocks";
    if (mem_mhz ? !st->gr_clocks : !st->mem_clocks)
        return gm_error_set(err, GM_ENOTSUP, "%s does not export %s", st->path, fn);
    if (gpu >= st->gpu_count || !st->gpus[gpu].dev || st->gpus[gpu].lost)
        return gm_error_set(err, GM_ELOST, "GPU %u is lost", gpu);
    nvmlDevice_t dev = st->gpus[gpu].dev;
    /* Ask with a buffer that fits every board seen; grow once if the driver says it is short. */
    unsigned got = 512;
    for (int attempt = 0; attempt < 2; attempt++) {
        unsigned *buf = calloc(got ? got : 1, sizeof *buf);
        if (!buf)
            return gm_error_set(err, GM_ENOMEM, "out of memory");
        unsigned want = got;
        int rc = NV_T(fn, mem_mhz ? st->gr_clocks(dev, mem_mhz, &got, buf)
                                  : st->mem_clocks(dev, &got, buf));
        if (rc == NV_SUCCESS) {
            *n = got;
            for (unsigned k = 0; k < got && k < cap; k++)
                mhz[k] = buf[k];
        }
        free(buf);
        if (rc == NV_SUCCESS)
            return GM_OK;
        if (rc != NV_ERROR_INSUFFICIENT_SIZE || got <= want)
            return nv_fail(st, err, rc, fn);
    }
    return nv_fail(st, err, NV_ERROR_INSUFFICIENT_SIZE, fn);
}

/* The NVML provider (see provider.h for the contract of each entry). */
const gm_provider gm_provider_nvml = {
    .name = "nvml",
    .vendor = "NVIDIA",
    .open = nvml_open,
    .close = nvml_close,
    .sample = nvml_sample,
    .p2p = nvml_p2p,
    .retired_pages = nvml_retired_pages,
    .supported_clocks = nvml_supported_clocks,
    .mig_parent = nvml_mig_parent,
};
