/* upward.c - a base-layer object that calls up into collect/ (gm_collector_provider, defined in
 * src/collect/collector.c). The ctest layers/upward-call builds its layer check, linked against
 * base only as a base library is, and passes only when that link fails on this very call: the
 * proof that the build, not only scripts/check-layers.sh, holds the layers. */
#include "gpumon.h"

const char *gm_layers_upward(void)
{
    return gm_collector_provider(NULL);
}
