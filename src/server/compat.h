/* compat.h - JSON in the shapes of the prototypes gpumon replaces (GPU Fleet Manager, the /stats
 * system inventory, the /ws/metrics stream), so their clients keep working unchanged.
 * docs/METRICS.md documents every key and unit. Absent metrics are null, never 0. */
#ifndef GM_COMPAT_H
#define GM_COMPAT_H

#include <jansson.h>

#include "gpumon.h"

/* Body of GET /api/v1/monitoring/gpu-metrics (GPU Fleet Manager):
 * {"timestamp", "gpus": [{"id": "gpu-<index>", "name", "uuid", "utilization", "memory":
 * {"total", "used", "free"}, "temperature", "power_usage", "clock_speeds": {"graphics",
 * "memory"}}]}, memory in whole MiB, power in W. A lost GPU keeps its id, name and uuid with
 * every metric null. Returns a new reference, NULL only when out of memory. */
json_t *gm_compat_gpu_metrics(const gm_snapshot *s);

/* Body of GET /stats, the system inventory a benchmark audit records before and after a run:
 * GPUs (model, index, uuid, PCI bus id, memory, power, PCIe link and its bandwidth, persistence
 * mode), the P2P matrix of t, the host (processor, CPUs, memory, kernel, host name) and the
 * driver stack. t may be NULL or not known: then "p2p_known" is false and "p2p" null.
 * Returns a new reference, NULL only when out of memory. */
json_t *gm_compat_stats(const gm_snapshot *s, const gm_topology *t);

/* One frame of WS /ws/metrics: {"timestamp", "gpu_metrics": [{"gpu_index", "name",
 * "gpu_utilization", "memory_used", "memory_total", "memory_utilization", "temperature",
 * "power_draw", "power_limit"}], "system_metrics": {"cpu_percent", "memory_percent",
 * "memory_used", "memory_total", "load_average", "uptime_seconds"}}; memory in whole MiB, power
 * in W. Returns a new reference, NULL only when out of memory. */
json_t *gm_compat_ws_metrics(const gm_snapshot *s);

#endif
