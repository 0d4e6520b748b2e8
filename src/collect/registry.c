/* registry.c - the one place that lists every provider and the automatic order. */
#include "collect/provider.h"
#include "collect/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Auto order: the richest source of each vendor first, NVIDIA's before AMD's (so NVIDIA GPUs keep
 * the indices they had on a machine without AMD GPUs), nvtop last for the GPUs no other reads.
 * sim is never picked automatically. */
const gm_provider *const gm_provider_auto_order[] = {&gm_provider_nvml,
                                                     &gm_provider_smi,
                                                     &gm_provider_amd_smi,
                                                     &gm_provider_rocm_smi,
                                                     &gm_provider_amdgpu,
                                                     &gm_provider_nvtop,
                                                     NULL};

static const gm_provider *const all_providers[] = {
    &gm_provider_nvml,   &gm_provider_smi,   &gm_provider_amd_smi, &gm_provider_rocm_smi,
    &gm_provider_amdgpu, &gm_provider_nvtop, &gm_provider_sim};

const gm_provider *gm_provider_find(const char *name)
{
    for (size_t i = 0; i < sizeof all_providers / sizeof *all_providers; i++)
        if (strcmp(all_providers[i]->name, name) == 0)
            return all_providers[i];
    return NULL;
}

const char *gm_provider_canonical(const char *name)
{
    if (!name)
        return NULL;
    if (strcasecmp(name, "auto") == 0)
        return "auto";
    for (size_t i = 0; i < sizeof all_providers / sizeof *all_providers; i++)
        if (strcasecmp(all_providers[i]->name, name) == 0)
            return all_providers[i]->name;
    return NULL;
}

static char names[128];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_build(void)
{
    size_t used = 0;
    for (size_t i = 0; i < sizeof all_providers / sizeof *all_providers; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s, ", all_providers[i]->name);
    snprintf(names + used, sizeof names - used, "auto");
}

/* Written once from the list above, so no help text or message can name another set. */
const char *gm_provider_names(void)
{
    pthread_once(&names_once, names_build);
    return names;
}
