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
trap cleanup EXIT
SECS=${SECS:-10}
BUILD_DIR=$(dirname "$GPUMON")
FAKE=${GM_FAKE_NVML:-$BUILD_DIR/tests/fakes/nvml-current/libnvidia-ml.so.1}
COSTS=${COSTS:-$ROOT/tests/fixtures/nvml/costs-h200-580.json}
SCENARIO=$ROOT/tests/fixtures/nvml/h100-mig.json
TMPD=$(mktemp -d)
BASE=$TMPD/no-instance-gpm.json
python3 - "$SCENARIO" "$BASE" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for g in d["gpus"]:
    for m in g.get("mig_devices", []):
        if isinstance(m, dict):
            m.pop("gpm", None)
json.dump(d, open(sys.argv[2], "w"))
PY

run() { # run LABEL SCENARIO
    local port_file=$TMPD/port
    rm -f "$port_file"
    env GPU_MONITOR_NVML_LIB="$FAKE" GM_FAKE_NVML_COSTS="$COSTS" GM_FAKE_NVML_SCENARIO="$2" \
        "$GPUMON" serve --listen 127.0.0.1:0 --port-file "$port_file" --interval 0.1 --db none \
        --pod-resources none 2>/dev/null &
    local pid=$!
    for _ in $(seq 1 100); do [ -s "$port_file" ] && break; sleep 0.05; done
    sleep "$SECS"
    curl -s "http://127.0.0.1:$(cat "$port_file")/stats" >"$TMPD/stats.json"
    kill "$pid"
    wait "$pid" 2>/dev/null
    python3 - "$1" "$TMPD/stats.json" <<'PY'
import json, sys
calls = json.load(open(sys.argv[2]))["sampler_calls"]
n = max(c["count"] for c in calls if c["call"] == "/proc/stat")
nvml = [c for c in calls if c["call"].startswith("nvml") and not c["call"].startswith(("nvmlInit", "nvmlEventSet"))]
steady = sum(c["cpu_seconds"] for c in nvml if c["count"] >= n - 1)
print("== %s: %d samples" % (sys.argv[1], n))
for c in nvml:
    if c["call"].startswith("nvmlGpm"):
        print("  %-40s %5.2f calls/sample  %6.1f us CPU/sample" % (c["call"], c["count"] / n, c["cpu_seconds"] / n * 1e6))
print("  NVML calls made every sample: %.1f us CPU/sample" % (steady / n * 1e6))
PY
}
run "GPM per MIG device" "$SCENARIO"
run "GPM per instance refused" "$BASE"
rm -rf "$TMPD"
