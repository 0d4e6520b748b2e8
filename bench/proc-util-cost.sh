#!/usr/bin/env bash
# proc-util-cost.sh - what per-process utilization and MIG devices add to a sampling pass,
# against the fake NVML with the H200/580 cost profile (tests/fixtures/nvml/costs-h200-580.json)
# and tests/fixtures/nvml/h100-mig.json (an H100 in MIG mode with three MIG devices, and an
# H100 with three processes): `gpumon serve` at 10 Hz for SECS seconds, then its /stats call
# table: each call's count per sample and CPU per sample, and the NVML total per sample; again
# with nvmlDeviceGetProcessUtilization refused on every GPU (the baseline without it). The
# memory calls are one per GPU and one per MIG device.
# Usage: bench/proc-util-cost.sh   (env: SECS=10 GPUMON=build/gpumon COSTS=...)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
nvml_cost_setup
nvml_scenario_variant no-process-util.json <<'PY'
for g in d["gpus"]:
    g.setdefault("unsupported", []).append("process_util")
PY

nvml_call_cost "with per-process utilization" "$SCENARIO" 'ProcessUtilization|MemoryInfo'
nvml_call_cost "process utilization refused" "$BASELINE" 'ProcessUtilization|MemoryInfo'
