/* nvml_int.h - what the files of the NVML provider share: nvml.c (open, metrics, health, MIG)
 * and nvml_proc.c (the process lists). The NVML return codes and handle, a pass's outcome over
 * one GPU, and the process reader's state. Internal to src/collect. */
#ifndef GM_NVML_INT_H
#define GM_NVML_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "collect/calltime.h"
#include "gpumon.h"

/* ---- NVML declarations (no header is packaged in Debian main; layouts from nvml.h, x86_64) ----
 */

enum {
    NV_SUCCESS = 0,
    NV_ERROR_UNINITIALIZED = 1,
    NV_ERROR_INVALID_ARGUMENT = 2,
    NV_ERROR_NOT_SUPPORTED = 3,
    NV_ERROR_NO_PERMISSION = 4,
    NV_ERROR_ALREADY_INITIALIZED = 5,
    NV_ERROR_NOT_FOUND = 6,
    NV_ERROR_INSUFFICIENT_SIZE = 7,
    NV_ERROR_INSUFFICIENT_POWER = 8,
    NV_ERROR_DRIVER_NOT_LOADED = 9,
    NV_ERROR_TIMEOUT = 10,
    NV_ERROR_IRQ_ISSUE = 11,
    NV_ERROR_LIBRARY_NOT_FOUND = 12,
    NV_ERROR_FUNCTION_NOT_FOUND = 13,
    NV_ERROR_CORRUPTED_INFOROM = 14,
    NV_ERROR_GPU_IS_LOST = 15,
    NV_ERROR_RESET_REQUIRED = 16,
    NV_ERROR_OPERATING_SYSTEM = 17,
    NV_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NV_ERROR_IN_USE = 19,
    NV_ERROR_MEMORY = 20,
    NV_ERROR_NO_DATA = 21,
    NV_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NV_ERROR_INSUFFICIENT_RESOURCES = 23,
    NV_ERROR_FREQ_NOT_SUPPORTED = 24,
    NV_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NV_ERROR_DEPRECATED = 26,
    NV_ERROR_NOT_READY = 27,
    NV_ERROR_GPU_NOT_FOUND = 28,
    NV_ERROR_INVALID_STATE = 29,
};
typedef int nvmlReturn_t;

#define NV_VALUE_NOT_AVAILABLE ((unsigned long long)-1)

typedef struct nv_device *nvmlDevice_t;

/* nvmlProcessInfo_t: v1 is {pid, usedGpuMemory} (16 bytes); v2/v3 append two instance ids
 * (24 bytes). pid and usedGpuMemory sit at the same offsets in both. */
#define NV_PROC_PID_OFF 0
#define NV_PROC_MEM_OFF 8
#define NV_PROC_V1_SIZE 16
#define NV_PROC_V2_SIZE 24
#define NV_PROC_GI_OFF  16 /* v2/v3: gpuInstanceId, then computeInstanceId */
#define NV_PROC_CI_OFF  20

/* nvmlProcessUtilizationSample_t: one process's share of each engine at one driver sample
 * (timeStamp in microseconds of the CPU clock), 32 bytes. */
typedef struct {
    unsigned pid;
    unsigned long long timeStamp;
    unsigned smUtil, memUtil, encUtil, decUtil;
} nv_proc_util;

typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned *,
                                                                void *); /* and Graphics */
typedef nvmlReturn_t (*nvmlDeviceGetProcessUtilization_fn)(nvmlDevice_t, nv_proc_util *, unsigned *,
                                                           unsigned long long);

/* ---- one pass over a GPU ------------------------------------------------------------------- */

/* What one pass over a GPU learned about it. */
typedef struct nv_pass {
    bool any_ok;         /* at least one call succeeded */
    bool lost;           /* GPU_IS_LOST seen */
    int hard_rc;         /* first failure that is not "this GPU lacks the feature" */
    const char *hard_fn; /* and the call that gave it */
} nv_pass;

/* Times one NVML call under its NVML name (see calltime.h): every call site goes through it. */
#define NV_T(name, call) GM_TIMED(name, call)

/* Codes meaning the GPU lacks a feature or withholds it: the metric is absent, nothing failed. */
static inline bool nv_is_soft(int rc)
{
    switch (rc) {
    case NV_ERROR_NOT_SUPPORTED:
    case NV_ERROR_NO_PERMISSION:
    case NV_ERROR_NOT_FOUND:
    case NV_ERROR_NO_DATA:
    case NV_ERROR_FUNCTION_NOT_FOUND:
    case NV_ERROR_VGPU_ECC_NOT_SUPPORTED:
    case NV_ERROR_FREQ_NOT_SUPPORTED:
    case NV_ERROR_ARGUMENT_VERSION_MISMATCH:
    case NV_ERROR_DEPRECATED:
        return true;
    default:
        return false;
    }
}

/* Records the outcome rc of the call fn in the pass (success, GPU lost, or the first hard
 * failure) and answers whether the call succeeded. */
static inline bool pass_record_ok(nv_pass *p, int rc, const char *fn)
{
    if (rc == NV_SUCCESS) {
        p->any_ok = true;
        return true;
    }
    if (rc == NV_ERROR_GPU_IS_LOST)
        p->lost = true;
    else if (!nv_is_soft(rc) && p->hard_rc == NV_SUCCESS) {
        p->hard_rc = rc;
        p->hard_fn = fn;
    }
    return false;
}

/* ---- process lists (nvml_proc.c) ----------------------------------------------------------- */

/* The process getters and the buffers every GPU's lists are read into, so steady-state
 * sampling does not allocate. list[0] lists compute processes, list[1] graphics ones; each
 * NULL when the library lacks it. */
typedef struct nv_proc_reader {
    nvmlDeviceGetComputeRunningProcesses_fn list[2];
    const char *sym[2]; /* the revision each resolved to */
    size_t stride[2];   /* its entry size: NV_PROC_V1_SIZE or NV_PROC_V2_SIZE */
    unsigned char *buf;
    size_t buf_bytes;
    nvmlDeviceGetProcessUtilization_fn util;
    nv_proc_util *util_buf;
    unsigned util_cap;
} nv_proc_reader;

/* One GPU's per-process utilisation: the newest sample time seen (only newer ones are asked
 * for) and whether the GPU refused the call (not asked again: MIG mode, older boards). */
typedef struct nv_gpu_procs {
    unsigned long long util_last_ts;
    bool util_nosup;
} nv_gpu_procs;

/* Adds GPU gpu_index's processes (device dev) to out: both lists, then their utilisation
 * (processes already in out for this GPU start at index start). Stops at GPU_IS_LOST, which
 * it records in p. */
void gm_nvml_procs_read(nv_proc_reader *r, nv_gpu_procs *g, unsigned gpu_index, nvmlDevice_t dev,
                        gm_snapshot *out, size_t start, nv_pass *p);

/* Frees the reader's buffers. */
void gm_nvml_procs_free(nv_proc_reader *r);

#endif
