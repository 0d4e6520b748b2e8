# shellcheck shell=bash
# lib.sh - helpers shared by the bench/ scripts (sourced, not run): which binary, starting and
# stopping a daemon on an ephemeral port, reading a process's CPU time and RSS from /proc.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
# The daemon under test: a RelWithDebInfo build, e.g.
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGM_WEB=OFF -DGM_TESTS=OFF
#   cmake --build build-bench --target gpumon -j2
GPUMON=${GPUMON:-}
if [ -z "$GPUMON" ]; then
    for b in "$ROOT/build-bench/gpumon" "$ROOT/build-h11/gpumon" "$ROOT/build/gpumon"; do
        if [ -x "$b" ]; then GPUMON=$b; break; fi
    done
fi
if [ -z "$GPUMON" ] || [ ! -x "$GPUMON" ]; then
    echo "bench: no gpumon binary; build one or set GPUMON=path" >&2
    exit 1
fi
PY=${PY:-/usr/bin/python3}
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d /tmp/gpumon-bench.XXXXXX)
    WORK_MADE=1
fi
HZ=$(getconf CLK_TCK) # used by the scripts that source this file
export HZ

# start_daemon ARGS... : starts `gpumon serve ARGS` on 127.0.0.1, an ephemeral port; sets
# DAEMON_PID and PORT once it listens (it listens only after the first sample).
start_daemon() {
    rm -f "$WORK/port"
    "$GPUMON" serve --listen 127.0.0.1:0 --port-file "$WORK/port" --log-level warn "$@" \
        2>>"$WORK/daemon.log" &
    DAEMON_PID=$!
    DAEMON_STARTED=1 # stop_daemon kills only a daemon this script started
    for _ in $(seq 1 300); do
        [ -s "$WORK/port" ] && break
        sleep 0.05
    done
    if [ ! -s "$WORK/port" ]; then
        echo "bench: daemon did not start (see $WORK/daemon.log)" >&2
        exit 1
    fi
    PORT=$(cat "$WORK/port")
    BASE="http://127.0.0.1:$PORT" # used by the scripts that source this file
    export BASE
}

stop_daemon() {
    if [ -n "${DAEMON_STARTED:-}" ] && [ -n "${DAEMON_PID:-}" ]; then
        kill "$DAEMON_PID" 2>/dev/null
        wait "$DAEMON_PID" 2>/dev/null
    fi
    DAEMON_PID=
    DAEMON_STARTED=
}
cleanup() {
    stop_daemon
    if [ -n "${WORK_MADE:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# cpu_ticks PID : utime+stime of every thread of PID, in clock ticks (1/HZ s).
cpu_ticks() {
    awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# sched_ns PID : run time of every thread of PID in ns (/proc/PID/task/*/schedstat), finer
# than the 10 ms ticks.
sched_ns() {
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'
}

# rss_kib PID : VmRSS in KiB.
rss_kib() {
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# machine : one line naming the machine and the build.
machine() {
    local model build commit
    model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
    build=$(awk -F= '/^CMAKE_BUILD_TYPE/ { print $2 }' "$(dirname "$GPUMON")/CMakeCache.txt" \
        2>/dev/null)
    commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)
    [ -n "$(git -C "$ROOT" status --porcelain -- src include 2>/dev/null)" ] && commit+="+dirty"
    echo "date=$(date -u +%Y-%m-%dT%H:%MZ) nproc=$(nproc) cpu=\"$model\"" \
        "build=${build:-unknown} commit=${commit:-unknown} binary=$GPUMON" \
        "load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
}

# median N... : the median of the numbers given.
median() {
    printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# NVML call costs on the fake NVML (tests/fakes) with a cost profile, for the scripts that
# measure what one feature adds to a sampling pass (mig-gpm-cost.sh, proc-util-cost.sh).
# nvml_cost_setup : SECS (default 10), FAKE_NVML (the fake beside the binary, or GM_FAKE_NVML),
# COSTS (default the H200/580 profile) and SCENARIO (an H100 in MIG mode with three MIG
# devices, beside an H100 with three processes: tests/fixtures/nvml/h100-mig.json).
nvml_cost_setup() {
    SECS=${SECS:-10}
    SCENARIO=$ROOT/tests/fixtures/nvml/h100-mig.json
    export SCENARIO # used by the scripts that source this file
    FAKE_NVML=${GM_FAKE_NVML:-$(dirname "$GPUMON")/tests/fakes/nvml-current/libnvidia-ml.so.1}
    COSTS=${COSTS:-$ROOT/tests/fixtures/nvml/costs-h200-580.json}
}

# nvml_scenario_variant NAME : BASELINE, the path of a copy of SCENARIO (in WORK, named NAME)
# that the Python code on stdin changed: it edits `d`, the scenario as parsed JSON.
nvml_scenario_variant() {
    BASELINE=$WORK/$1
    "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.stdin.read())
json.dump(d, open(sys.argv[2], "w"))' "$SCENARIO" "$BASELINE"
}

# nvml_call_cost LABEL SCENARIO CALLS : `gpumon serve` at 10 Hz for SECS seconds on the fake NVML
# with the cost profile and SCENARIO, then from its /stats call table: the count and CPU per
# sample of each NVML call whose name matches the Python regular expression CALLS, and the CPU
# per sample of the NVML calls made every sample.
nvml_call_cost() {
    GPU_MONITOR_NVML_LIB="$FAKE_NVML" GM_FAKE_NVML_COSTS="$COSTS" GM_FAKE_NVML_SCENARIO="$2" \
        start_daemon --interval 0.1 --db none --pod-resources none
    sleep "$SECS"
    curl -s "$BASE/stats" >"$WORK/stats.json"
    stop_daemon
    "$PY" - "$1" "$WORK/stats.json" "$3" <<'PY'
import json, re, sys
calls = json.load(open(sys.argv[2]))["sampler_calls"]
n = max(c["count"] for c in calls if c["call"] == "/proc/stat")
nvml = [c for c in calls if c["call"].startswith("nvml") and not c["call"].startswith(("nvmlInit", "nvmlEventSet"))]
steady = sum(c["cpu_seconds"] for c in nvml if c["count"] >= n - 1)
print("== %s: %d samples" % (sys.argv[1], n))
for c in nvml:
    if re.search(sys.argv[3], c["call"]):
        print("  %-40s %5.2f calls/sample  %6.1f us CPU/sample" % (c["call"], c["count"] / n, c["cpu_seconds"] / n * 1e6))
print("  NVML calls made every sample: %.1f us CPU/sample" % (steady / n * 1e6))
PY
}
