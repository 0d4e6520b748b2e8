#!/usr/bin/env bash
# query-cost.sh - wall time of one `gpumon query` call against the fake NVML (two GPUs), beside
# the process start alone (`gpumon --version`), with hyperfine. On a GPU machine, set
# REAL=1 to use the real libnvidia-ml and compare with `nvidia-smi --query-gpu`.
# Usage: bench/query-cost.sh   (env: RUNS=40 GPUMON=build-bench/gpumon REAL=)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-40}
FIELDS=index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw
if [ -z "${REAL:-}" ]; then
    FAKE=${GM_FAKE_NVML:-$ROOT/build/tests/fakes/nvml-current/libnvidia-ml.so.1}
    [ -f "$FAKE" ] || { echo "query-cost: build the tests first (no $FAKE)" >&2; exit 1; }
    export GPU_MONITOR_NVML_LIB=$FAKE
    export GM_FAKE_NVML_SCENARIO=$ROOT/tests/fixtures/nvml/two_gpus.json
fi
echo "# query-cost: $(machine)"
cmds=("$GPUMON --version" "$GPUMON query --query-gpu=$FIELDS --format=csv" "$GPUMON query"
      "$GPUMON query --format json")
[ -n "${REAL:-}" ] && command -v nvidia-smi >/dev/null &&
    cmds+=("nvidia-smi --query-gpu=$FIELDS --format=csv")
hyperfine -N -w 3 -r "$RUNS" "${cmds[@]}" 2>&1 | grep -E "Benchmark|Time"
