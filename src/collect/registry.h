/* registry.h - the one list of providers and their names, which flags, the environment and the
 * daemon's configuration all ask (collect/registry.c). */
#ifndef GM_COLLECT_REGISTRY_H
#define GM_COLLECT_REGISTRY_H

#include "gpumon.h"

/* The canonical name of a provider as a person wrote it ("NVML" gives "nvml"), "auto" for
 * auto, NULL when it names no provider. The registry is the one list of names: flags, the
 * environment and the daemon's configuration all ask it. */
const char *gm_provider_canonical(const char *name);
/* The accepted names for messages, built from the table: "nvml, nvidia-smi, amd_smi, ..., auto". */
const char *gm_provider_names(void);

#endif
