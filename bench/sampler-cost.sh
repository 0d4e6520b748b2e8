#!/usr/bin/env bash
# sampler-cost.sh - what gpumon's sampling costs, side by side with the floor under it, against
# the fake NVML with a cost profile (tests/fixtures/nvml/costs-h200-580.json: an H200 on driver
# 580) and, when one is present, against the real libnvidia-ml.so.1:
#   - nvidia-smi --query-gpu of the 7 fields (real only), and `gpumon query` of the same 7
#     fields: mean wall ms per process over RUNS runs;
#   - bench/nvml_floor: a bare loop of the 13 NVML calls the live cards need, CPU per sample;
#   - `gpumon serve` at 10 Hz and at 1 Hz: CPU per sample (all threads, from schedstat, over
#     SECS seconds after a 2 s warm-up) and its RSS with the NVML library's and the /dev/nvidia*
#     mappings separated (from /proc/PID/smaps).
# The library is given to gpumon alone (GPU_MONITOR_NVML_LIB), never exported to other programs.
# Usage: bench/sampler-cost.sh   (env: RUNS=20 SECS=10 GPUMON=build/gpumon NVML_FLOOR=...
#        COSTS=... REAL_NVML=libnvidia-ml.so.1 to force a path, REAL_NVML=none to skip the real one)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
trap cleanup EXIT
RUNS=${RUNS:-20}
SECS=${SECS:-10}
FIELDS=index,name,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm
BUILD_DIR=$(dirname "$GPUMON")
FAKE=${GM_FAKE_NVML:-$BUILD_DIR/tests/fakes/nvml-current/libnvidia-ml.so.1}
COSTS=${COSTS:-$ROOT/tests/fixtures/nvml/costs-h200-580.json}
# The fake's GPU: an H100 on driver 590 with its health counters, the nearest fixture to an H200.
SCENARIO=${SCENARIO:-$ROOT/tests/fixtures/nvml/h100-590.json}
FLOOR=${NVML_FLOOR:-$BUILD_DIR/nvml_floor}
if [ ! -x "$FLOOR" ]; then
    cc -O2 -o "$FLOOR" "$ROOT/bench/nvml_floor.c" -ldl || { echo "sampler-cost: cannot build $FLOOR" >&2; exit 1; }
fi

# mean_ms RUNS CMD...: mean wall milliseconds of CMD over RUNS runs (output discarded).
mean_ms() {
    local runs=$1 t0 t1
    shift
    t0=$EPOCHREALTIME
    for _ in $(seq 1 "$runs"); do "$@" >/dev/null 2>&1; done
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" -v n="$runs" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }'
}

# cpu_ns PID: CPU time of every thread of PID so far, in ns (schedstat's first field).
cpu_ns() {
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}

# samples: gpumon_sampler_samples_total of the running daemon, and the CPU seconds its
# collector's calls took (the sum of gpumon_sampler_call_cpu_seconds_total).
samples() {
    curl -s "$BASE/metrics" | awk '$1 == "gpumon_sampler_samples_total" { n = $2 }
        $1 ~ /^gpumon_sampler_call_cpu_seconds_total/ { c += $2 } END { print n, c }'
}

# rss PID: "total KiB, NVML library KiB, /dev/nvidia* KiB" from smaps.
rss() {
    awk '/^[0-9a-f]+-[0-9a-f]+ / { f = $6 }
         /^Rss:/ { t += $2; if (f ~ /libnvidia-ml/) l += $2; else if (f ~ /^\/dev\/nvidia/) d += $2 }
         END { printf "rss %d KiB (NVML library %d KiB, /dev/nvidia* %d KiB, the rest %d KiB)", t, l, d, t - l - d }' \
        /proc/"$1"/smaps
}

# daemon_cost LABEL INTERVAL_S: CPU per sample of `gpumon serve` at that period, and its RSS.
daemon_cost() {
    start_daemon --interval "$2" --db none --pod-resources none --provider nvml
    sleep 2
    local c0 s0 c1 s1
    c0=$(cpu_ns "$DAEMON_PID")
    read -r s0 k0 < <(samples)
    sleep "$SECS"
    c1=$(cpu_ns "$DAEMON_PID")
    read -r s1 k1 < <(samples)
    echo "  daemon at $1: $(awk -v a="$c0" -v b="$c1" -v x="$s0" -v y="$s1" -v k="$k0" -v l="$k1" \
        'BEGIN { if (y > x) printf "%.3f ms CPU per sample, of which its collector calls %.3f ms (%d samples)", (b - a) / 1e6 / (y - x), (l - k) * 1e3 / (y - x), y - x; else print "no samples" }'); $(rss "$DAEMON_PID")"
    stop_daemon
}

# run_side LABEL LIB [COSTS]: every figure against one library.
run_side() {
    local label=$1 lib=$2 costs=${3:-}
    echo "== $label ($lib${costs:+, costs $(basename "$costs"), GPU $(basename "$SCENARIO")})"
    local -a envs=(GPU_MONITOR_NVML_LIB="$lib")
    [ -n "$costs" ] && envs+=(GM_FAKE_NVML_COSTS="$costs" GM_FAKE_NVML_SCENARIO="$SCENARIO")
    if [ "$label" = real ] && command -v nvidia-smi >/dev/null; then
        echo "  nvidia-smi --query-gpu (7 fields): $(mean_ms "$RUNS" nvidia-smi --query-gpu=$FIELDS --format=csv,noheader) ms per process"
    fi
    echo "  gpumon query --query-gpu (7 fields): $(mean_ms "$RUNS" env "${envs[@]}" "$GPUMON" query --provider nvml --query-gpu=$FIELDS --format=csv,noheader) ms per process"
    echo "  gpumon query (table): $(mean_ms "$RUNS" env "${envs[@]}" "$GPUMON" query --provider nvml) ms per process"
    echo "  $(env "${envs[@]}" "$FLOOR" -l "$lib" -n 50 -r 10)"
    # The daemon gets the library in its own environment: a subshell's exports, not this
    # script's.
    (
        export "${envs[@]}"
        daemon_cost "10 Hz" 0.1
        daemon_cost "1 Hz" 1
    )
}

echo "# sampler-cost: $(machine) $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
[ -f "$FAKE" ] || { echo "sampler-cost: build the tests first (no $FAKE)" >&2; exit 1; }
run_side fake "$FAKE" "$COSTS"
REAL=${REAL_NVML:-}
if [ -z "$REAL" ] && ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then
    REAL=libnvidia-ml.so.1
fi
if [ -n "$REAL" ] && [ "$REAL" != none ]; then
    run_side real "$REAL"
else
    echo "== real: no libnvidia-ml.so.1 on this machine"
fi
