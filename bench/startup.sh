#!/usr/bin/env bash
# startup.sh - time from exec to the first 200 on /api/gpus (bench/startup.py), median of RUNS,
# with --simulate 8 and 64, and with --simulate 8 --no-system-metrics (no host CPU window).
# Usage: bench/startup.sh   (env: RUNS=10 GPUS="8 64")
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
echo "# startup: $(machine)"
for g in ${GPUS:-8 64}; do
    "$PY" "$BENCH_DIR/startup.py" "$GPUMON" "${RUNS:-10}" "$g" 0.002 | sed "s/^/gpus=$g /"
done
# Attribution: the first sample waits for a 100 ms CPU-utilisation window of the host metrics.
"$PY" "$BENCH_DIR/startup.py" "$GPUMON" "${RUNS:-10}" 8 0.002 --no-system-metrics |
    sed "s/^/gpus=8 no-system-metrics /"
