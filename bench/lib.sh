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
