#!/usr/bin/env bash
# mig-gpm-cost.sh - what GPM per MIG device adds to a sampling pass, against the fake NVML with
# the H200/580 cost profile (tests/fixtures/nvml/costs-h200-580.json) and
# tests/fixtures/nvml/h100-mig.json (an H100 in MIG mode with three GPU instances that give GPM,
# beside an H100 that is not in MIG mode): `gpumon serve` at 10 Hz for SECS seconds, then its
# /stats call table: the GPM calls' count and CPU per sample, and the NVML total per sample;
# again with GPM per instance refused (a driver without it: the baseline, asked once a run).
# Usage: bench/mig-gpm-cost.sh   (env: SECS=10 GPUMON=build/gpumon COSTS=...)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
nvml_cost_setup
nvml_scenario_variant no-instance-gpm.json <<'PY'
for g in d["gpus"]:
    for m in g.get("mig_devices", []):
        if isinstance(m, dict):
            m.pop("gpm", None)
PY

nvml_call_cost "GPM per MIG device" "$SCENARIO" '^nvmlGpm'
nvml_call_cost "GPM per instance refused" "$BASELINE" '^nvmlGpm'
