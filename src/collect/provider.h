/* provider.h - the interface every GPU data source implements, and the registry of them. */
#ifndef GM_PROVIDER_H
#define GM_PROVIDER_H

#include "gpumon.h"

/* A GPU data source: a const table of functions. State is private to the provider.
 *
 * sample() contract: fill out->gpu_count and out->gpus (index, name, uuid, pci_bus_id, and every
 * metric the device reports, each with gm_gpu_set so its valid bit is set), the version strings
 * it knows, and, when want_procs, the processes (gpu_index, pid, type, memory) through
 * gm_snapshot_add_process. `out` arrives reset. A metric the device does not support stays
 * absent. A GPU that fails alone is reported with lost = true (identity kept) while the others
 * are read; return an error only when nothing at all could be read. */
typedef struct gm_provider {
    const char *name;
    /* Who makes the GPUs it reads ("NVIDIA", "AMD"); NULL when it reads several vendors' and
     * says per GPU (gm_gpu.vendor). The collector runs the best provider of each vendor at once. */
    const char *vendor;
    int (*open)(const gm_collector_options *opt, void **state, gm_error *err);
    void (*close)(void *state);
    int (*sample)(void *state, gm_snapshot *out, bool want_procs, gm_error *err);
    /* Optional (NULL when the source cannot tell). */
    int (*p2p)(void *state, unsigned a, unsigned b, gm_p2p_cap cap, gm_p2p_status *out,
               gm_error *err);
    /* Optional: gm_collector_retired_pages for the GPU at snapshot position gpu. */
    int (*retired_pages)(void *state, unsigned gpu, int cause, uint64_t *addr, uint64_t *when,
                         size_t cap, size_t *n, gm_error *err);
    /* Optional: gm_collector_supported_clocks for the GPU at snapshot position gpu. */
    int (*supported_clocks)(void *state, unsigned gpu, unsigned mem_mhz, unsigned *mhz, size_t cap,
                            size_t *n, gm_error *err);
    /* Optional: the UUID of the GPU that the MIG device with UUID mig_uuid is part of. */
    int (*mig_parent)(void *state, const char *mig_uuid, char *uuid, size_t cap, gm_error *err);
} gm_provider;

extern const gm_provider gm_provider_nvml;
extern const gm_provider gm_provider_smi;
extern const gm_provider gm_provider_sim;
extern const gm_provider gm_provider_amd_smi;
extern const gm_provider gm_provider_rocm_smi;
extern const gm_provider gm_provider_amdgpu;
extern const gm_provider gm_provider_nvtop;

/* Providers tried, in order, when none is forced (NULL-terminated): the first that opens of
 * each vendor is used, all of them at once; a provider of no one vendor (vendor NULL) reads
 * only the GPUs the others did not. */
extern const gm_provider *const gm_provider_auto_order[];

/* Returns the provider named name ("nvml", "nvidia-smi", "amdgpu", "sim"), NULL when unknown. */
const gm_provider *gm_provider_find(const char *name);

#endif
